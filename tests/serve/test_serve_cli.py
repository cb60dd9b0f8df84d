"""The ``simkernel serve`` command itself: the extra imported by it only, a missing extra named with its
install command, unusable settings refused in one line, the key from the environment, ``--precision``, the
warning for a host beyond loopback without a key."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest
from serve_support import DEFAULT_MODEL, ServerProcess, loopback_env, served_client


def run_python(code: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env or loopback_env(), timeout=120
    )


def test_the_serve_extra_is_imported_by_the_command_only():
    code = (
        "import sys, simkernel, simkernel.cli, simkernel.cli.parser, simkernel.serve\n"
        "simkernel.cli.parser.build_parser().parse_args(['serve', '--model', 'm'])\n"
        "print(sorted(m for m in ('starlette', 'uvicorn', 'prometheus_client') if m in sys.modules))"
    )
    run = run_python(code)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_a_missing_extra_names_the_install_command():
    code = (
        "import sys; sys.modules['starlette'] = None\n"
        "from simkernel.cli import main\n"
        f"sys.exit(main(['serve', '--model', {DEFAULT_MODEL!r}]))"
    )
    run = run_python(code)
    assert run.returncode == 1, run.stderr
    assert "pip install 'simkernel[serve]'" in run.stderr
    assert run.stderr.count("\n") == 1  # one line, no traceback


def test_unusable_settings_are_one_line_errors(tmp_path):
    for args, named in (
        (["--drain-timeout", "0"], "--drain-timeout"),
        (["--api-key-file", str(tmp_path / "missing")], "missing"),
        (["--port", "-1"], "negative"),
    ):
        run = run_python(
            f"import sys; from simkernel.cli import main; sys.exit(main({['serve', '--model', DEFAULT_MODEL, *args]!r}))"
        )
        assert run.returncode in (1, 2), run.stderr
        assert named in run.stderr and "Traceback" not in run.stderr, run.stderr
    empty = tmp_path / "empty"
    empty.write_text("\n")
    run = run_python(
        f"import sys; from simkernel.cli import main; sys.exit(main(['serve', '--model', 'x', '--api-key-file', {str(empty)!r}]))"
    )
    assert run.returncode == 1 and "empty" in run.stderr


def test_the_key_can_come_from_the_environment():
    process = ServerProcess("--model", DEFAULT_MODEL, env=loopback_env(SIMKERNEL_API_KEY="from-the-env"))
    try:
        with httpx.Client(base_url=process.url, trust_env=False) as http:
            body = {"model": DEFAULT_MODEL, "input": "x"}
            assert http.post("/v1/embeddings", json=body).status_code == 401
            ok = http.post("/v1/embeddings", json=body, headers={"Authorization": "Bearer from-the-env"})
            assert ok.status_code == 200
    finally:
        status, stderr = process.stop()
    assert status == 0 and "from-the-env" not in stderr
    assert process.banner.startswith("simkernel serve: listening on http://127.0.0.1:")


def test_precision_int8_serves_the_int8_model():
    """``--precision int8``: the vectors are the int8 encoder's in this process, bit for bit (base64 float32),
    and differ from the fp32 model's."""
    import base64

    import numpy as np

    from simkernel.runtime import TextEncoder

    texts = ["The capital of France is Paris.", "Лев Толстой написал «Войну и мир».", "北京是中国的首都。"]
    with served_client("--model", DEFAULT_MODEL, "--precision", "int8") as http:
        response = http.post(
            "/v1/embeddings", json={"model": DEFAULT_MODEL, "input": texts, "encoding_format": "base64"}
        )
        assert response.status_code == 200, response.text
        served = np.stack(
            [np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4") for d in response.json()["data"]]
        )
    int8 = TextEncoder(DEFAULT_MODEL, precision="int8").encode(texts)
    fp32 = TextEncoder(DEFAULT_MODEL, precision="fp32").encode(texts)
    assert np.array_equal(served, int8)
    assert not np.array_equal(int8, fp32)


def test_a_host_beyond_loopback_without_a_key_is_warned_about(monkeypatch, capsys):
    """``--host`` an outward address and no key: one warning line on stderr naming the host and both ways to
    set a key, before anything loads; a loopback host, or a key, gives none."""
    import simkernel.serve.models as models
    from simkernel.serve.server import serve
    from simkernel.serve.settings import ServeSettings

    class Stop(Exception):
        pass

    def stop(settings):
        raise Stop

    monkeypatch.setattr(models, "load_models", stop)
    cases = [
        ("0.0.0.0", None, True),
        ("192.0.2.10", None, True),
        ("::", None, True),
        ("127.0.0.1", None, False),
        ("::1", None, False),
        ("localhost", None, False),
        ("0.0.0.0", "a-key", False),
    ]
    for host, key, warned in cases:
        with pytest.raises(Stop):
            serve(ServeSettings(models=(DEFAULT_MODEL,), host=host, api_key=key), uvicorn=None)
        err = capsys.readouterr().err
        if warned:
            assert err == (
                f"simkernel serve: warning: listening on {host}, beyond this machine, with no API key; set SIMKERNEL_API_KEY or --api-key-file\n"
            ), (host, err)
        else:
            assert err == "", (host, key, err)
