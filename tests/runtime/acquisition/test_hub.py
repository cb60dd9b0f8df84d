"""Hub downloads through huggingface_hub against a real HTTP server on 127.0.0.1 (tests/runtime/fake_hub.py)
speaking the hub's protocol; nothing of huggingface_hub is mocked."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from fake_hub import COMMIT, FakeHub
from runtime_helpers import SPECIAL_TEXTS, make_tiny_bi_encoder

from simkernel.errors import ModelNotFoundError
from simkernel.runtime import TextEncoder
from simkernel.runtime.store import bundles as store

pytestmark = [
    pytest.mark.filterwarnings("ignore:Converting a tensor to a Python boolean"),
    pytest.mark.filterwarnings("ignore:Exporting aten::index"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

REPO = "org/tiny-embedder"
CONFIGS = [
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
]


@pytest.fixture(scope="module")
def tiny_repo(tiny_models_root, reference_checkpoint) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder = make_tiny_bi_encoder(tiny_models_root, reference_checkpoint, "mean", True)
    if not (folder / "model_int8.onnx").exists():
        quantize_dynamic(
            str(folder / "model.onnx"), str(folder / "model_int8.onnx"), weight_type=QuantType.QInt8
        )
    return folder


def _layout(with_onnx=True):
    layout = {name: name for name in CONFIGS}
    if with_onnx:
        layout["onnx/model.onnx"] = "model.onnx"
        layout["onnx/model_qint8_avx512_vnni.onnx"] = "model_int8.onnx"
    return layout


@pytest.fixture()
def env(tmp_path, clean_hf_env):
    """Fresh store and HF cache; no token, online, whatever the caller's shell holds."""
    return tmp_path


@pytest.fixture()
def hub(tiny_repo, env, monkeypatch):
    with FakeHub(FakeHub.from_folder(REPO, tiny_repo, _layout())) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        yield server


def test_download_then_embed_like_the_local_model(hub, tiny_repo):
    enc = TextEncoder(REPO, threads=1)
    assert enc.model_path == store.model_dir(REPO)
    local = TextEncoder(tiny_repo, threads=1)
    np.testing.assert_array_equal(enc.encode(SPECIAL_TEXTS), local.encode(SPECIAL_TEXTS))
    manifest = json.loads((enc.model_path / "simkernel.json").read_text())
    assert manifest["id"] == REPO and manifest["kind"] == "bi-encoder"
    assert manifest["source"]["commit"] == COMMIT and manifest["source"]["endpoint"] == hub.endpoint
    assert manifest["files"]["model.onnx"]["sha256"] == store.file_sha256(tiny_repo / "model.onnx")
    assert manifest["files"]["model.onnx"]["source"] == "onnx/model.onnx"
    assert "model_int8.onnx" not in manifest["files"]  # fp32 asked: the int8 file is not fetched
    heads = [r[1] for r in hub.requests if r[0] == "HEAD"]
    assert f"/{REPO}/resolve/main/onnx/model.onnx" in heads
    assert f"/{REPO}/resolve/{COMMIT}/tokenizer.json" in heads  # the rest at the same commit
    assert all(r[2] is None for r in hub.requests)  # no token configured, none sent


def test_int8_is_made_locally_per_row_and_batch_independent(hub, tiny_repo):
    """With onnx installed, int8 is simkernel's per-row quantisation of the downloaded fp32 graph, checked
    against it; the repo's (batch-dependent) int8 file is not even downloaded."""
    enc = TextEncoder(REPO, precision="int8", threads=1, cache_size=0)
    entry = json.loads((enc.model_path / "simkernel.json").read_text())["files"]["model_int8.onnx"]
    assert entry["source"] == "made locally from onnx/model.onnx"
    assert entry["quantization"]["method"] == "per-row" and entry["quantization"]["batch_independent"]
    assert entry["parity_vs_fp32"]["min_cosine_vs_fp32"] >= 0.97
    assert not any("qint8" in r[1] for r in hub.requests)
    texts = [*SPECIAL_TEXTS, "hello", "a much longer sentence about the capital of Germany, Berlin"]
    batched = enc.encode(texts)
    alone = np.stack([enc.encode([t])[0] for t in texts])
    assert np.abs(alone - batched).max() <= 1e-6
    fp32 = TextEncoder(tiny_repo, threads=1).encode(texts)
    assert (fp32.astype(np.float64) * batched).sum(1).min() >= 0.97


def test_int8_without_onnx_uses_the_published_file_with_a_warning(hub, tiny_repo, monkeypatch):
    from simkernel.runtime.acquisition import hub as hub_module

    monkeypatch.setattr(hub_module, "_can_quantize_locally", lambda: False)
    with pytest.warns(UserWarning, match="batch"):
        enc = TextEncoder(REPO, precision="int8", threads=1)
    assert (enc.model_path / "model_int8.onnx").read_bytes() == (tiny_repo / "model_int8.onnx").read_bytes()
    assert enc.encode(["hello"]).shape == (1, 32)


def test_token_sent_as_bearer_and_private_repo_explained(hub, monkeypatch):
    hub.private[REPO] = "s3cret"
    with pytest.raises(ModelNotFoundError, match="HF_TOKEN"):
        TextEncoder(REPO)
    assert not store.model_dir(REPO).exists()
    monkeypatch.setenv("HF_TOKEN", "s3cret")
    TextEncoder(REPO, threads=1)
    resolve_requests = [r for r in hub.requests if "/resolve/" in r[1]]
    assert resolve_requests and resolve_requests[-1][2] == "Bearer s3cret"


def test_token_argument_reaches_a_private_repo(hub):
    """``token=`` takes precedence over (here: the absence of) ``HF_TOKEN``."""
    hub.private[REPO] = "s3cret"
    with pytest.raises(ModelNotFoundError, match="HF_TOKEN"):
        TextEncoder(REPO, token="wrong")
    TextEncoder(REPO, threads=1, token="s3cret")
    resolve_requests = [r for r in hub.requests if "/resolve/" in r[1]]
    assert resolve_requests[-1][2] == "Bearer s3cret"


@pytest.mark.parametrize("how", ["from_token", "HF_API_TOKEN"])
def test_sas_evaluator_token_reaches_the_hub(hub, monkeypatch, how):
    """Haystack's ``token`` Secret (an explicit token, or its default ``HF_API_TOKEN`` variable, which
    huggingface_hub itself does not read) downloads a private repo: config.json and the bundle."""
    from simkernel.components import Secret
    from simkernel.components.evaluators import SASEvaluator
    from simkernel.runtime import clear_shared_instances

    hub.private[REPO] = "s3cret"
    clear_shared_instances()
    if how == "from_token":
        evaluator = SASEvaluator(model=REPO, token=Secret.from_token("s3cret"))
    else:
        monkeypatch.setenv("HF_API_TOKEN", "s3cret")
        evaluator = SASEvaluator(model=REPO)
    evaluator.warm_up()
    result = evaluator.run(ground_truth_answers=["Berlin"], predicted_answers=["Berlin"])
    assert result["individual_scores"][0] == pytest.approx(1.0, abs=1e-6)
    resolve_requests = [r for r in hub.requests if "/resolve/" in r[1]]
    assert {r[2] for r in resolve_requests} == {"Bearer s3cret"}
    assert any(r[1].endswith("/config.json") for r in resolve_requests)
    clear_shared_instances()


def test_offline_uses_the_hf_cache_only(hub, env, monkeypatch):
    first = TextEncoder(REPO, threads=1).encode(["offline"])
    shutil.rmtree(store.model_dir(REPO))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    seen = len(hub.requests)
    again = TextEncoder(REPO, threads=1).encode(["offline"])  # rebuilt from the HF cache
    assert len(hub.requests) == seen  # no network at all
    np.testing.assert_array_equal(first, again)
    shutil.rmtree(store.model_dir(REPO))
    monkeypatch.setenv("HF_HOME", str(env / "empty-hf"))
    with pytest.raises(ModelNotFoundError, match="HF_HUB_OFFLINE"):
        TextEncoder(REPO)
    assert len(hub.requests) == seen


@pytest.mark.parametrize("way_in", ["TextEncoder", "architectures", "bert_score", "cli"])
def test_offline_with_a_model_never_fetched_says_how_to_get_it(env, monkeypatch, capsys, way_in):
    """HF_HUB_OFFLINE=1 and a model in neither the store nor the HF cache: every way in raises
    ModelNotFoundError (an OSError, as transformers raises for a missing model) naming what is missing and
    both fixes, not "has no config.json" or "publishes neither ...", which read as a broken repository."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = "org/never-fetched"
    fixes = ["not in the HF cache", "HF_HUB_OFFLINE=1 is set", "simkernel models export CHECKPOINT DIR"]
    if way_in == "cli":
        from simkernel.cli import main

        table = env / "pairs.csv"
        table.write_text("predicted,ground_truth\nBerlin,Berlin\n", encoding="utf-8")
        assert main(["score", str(table), "--model", model, "-o", str(env / "out.csv"), "-q"]) == 1
        message = capsys.readouterr().err
        assert not (env / "out.csv").exists()
    else:
        with pytest.raises(OSError) as caught:
            if way_in == "TextEncoder":
                TextEncoder(model)
            elif way_in == "architectures":
                from simkernel.runtime.acquisition.resolve import model_architectures

                model_architectures(model)
            else:
                import simkernel.bert_score as bert_score

                bert_score.score(["a"], ["b"], model_type=model, num_layers=1)
        assert isinstance(caught.value, ModelNotFoundError)
        message = str(caught.value)
    assert f"cannot find model '{model}'" in message
    for fix in fixes:
        assert fix in message, (fix, message)


def test_a_hub_that_cannot_be_reached_fails_at_once_and_the_hf_cache_still_serves(
    tiny_repo, env, monkeypatch
):
    """A real hub on 127.0.0.1, then a port that refuses connections: huggingface_hub alone retries a refused connection
    for about 23 s; here the error comes within a few seconds, and a model in the HF cache still loads."""
    with FakeHub(FakeHub.from_folder(REPO, tiny_repo, _layout())) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        first = TextEncoder(REPO, threads=1).encode(["reachable"])
    shutil.rmtree(store.model_dir(REPO))
    with socket.socket() as closed:  # a port on 127.0.0.1 that nothing listens on: connections are refused
        closed.bind(("127.0.0.1", 0))
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed.getsockname()[1]}")
    started = time.monotonic()
    again = TextEncoder(REPO, threads=1).encode(["reachable"])  # rebuilt from the HF cache
    np.testing.assert_array_equal(first, again)
    shutil.rmtree(store.model_dir(REPO))
    monkeypatch.setenv("HF_HOME", str(env / "empty-hf"))
    with pytest.raises(
        ModelNotFoundError, match="the hub could not be reached and the files are not in the HF cache"
    ):
        TextEncoder("org/never-downloaded")
    assert time.monotonic() - started < 8  # huggingface_hub's own retries: 1 + 2 + 4 + 8 + 8 s per file


def test_failed_download_leaves_no_model(hub):
    hub.fail_path = "onnx/model.onnx"
    with pytest.raises(ModelNotFoundError, match="hub"):
        TextEncoder(REPO)
    assert not store.model_dir(REPO).exists()
    assert not list((store.store_root() / "tmp").glob("stage-*"))
    hub.fail_path = None
    TextEncoder(REPO, threads=1)  # a retry completes
    assert store.is_installed(REPO)


def _spawn(code: str) -> subprocess.Popen:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_killed_download_leaves_no_model(hub):
    hub.stall_path = "onnx/model.onnx"
    proc = _spawn(f"from simkernel.runtime import TextEncoder; TextEncoder({REPO!r})")
    try:
        assert hub.stalled.wait(120), proc.stderr.read().decode() if proc.poll() is not None else "no stall"
        proc.kill()  # the process dies mid-download
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not store.model_dir(REPO).exists()
    hub.release.set()
    TextEncoder(REPO, threads=1)  # the lock died with the process; the next download completes
    assert store.is_installed(REPO)


def test_two_processes_prepare_the_same_model_once(hub, tiny_repo):
    code = f"from simkernel.runtime import TextEncoder; print(TextEncoder({REPO!r}).model_path)"
    procs = [_spawn(code) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1].decode()[-2000:] for o in outs]
    assert {o[0].decode().strip() for o in outs} == {str(store.model_dir(REPO))}
    size = (tiny_repo / "model.onnx").stat().st_size
    onnx_downloads = [r for r in hub.requests if r[0] == "GET" and r[1].startswith("/cdn/")]
    assert len(onnx_downloads) == 1, (size, onnx_downloads)  # the second process reused the first's bundle
    store.verify_bundle(store.model_dir(REPO))


def test_repo_without_onnx_and_unknown_repo(tiny_repo, env, monkeypatch):
    fp32_only = {**_layout(with_onnx=False), "onnx/model.onnx": "model.onnx"}
    repos = {
        **FakeHub.from_folder("org/no-onnx", tiny_repo, _layout(with_onnx=False)),
        **FakeHub.from_folder("org/fp32-only", tiny_repo, fp32_only),
    }
    with FakeHub(repos) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        with pytest.raises(  # no ONNX graph, and no checkpoint to export either (test_hub_checkpoint.py)
            ModelNotFoundError,
            match=r"(?s)publishes no onnx/model\.onnx.*publishes neither an ONNX graph nor checkpoint weights"
            r".*simkernel models export",
        ):
            TextEncoder("org/no-onnx")
        with pytest.raises(ModelNotFoundError, match="no such repo"):
            TextEncoder("org/does-not-exist")
        from simkernel.runtime.acquisition import hub as hub_module

        with monkeypatch.context() as patched:  # no onnx: only a published int8 file could serve
            patched.setattr(hub_module, "_can_quantize_locally", lambda: False)
            with pytest.warns(UserWarning), pytest.raises(ModelNotFoundError, match="publishes no int8"):
                TextEncoder("org/fp32-only", precision="int8")
        assert not store.model_dir("org/fp32-only").exists()
        # with onnx, a repo publishing only fp32 still gets (simkernel's own) int8
        assert TextEncoder("org/fp32-only", precision="int8", threads=1).encode(["x"]).shape == (1, 32)


def test_unreachable_hub_is_explained(env, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: connection refused
    start = time.monotonic()
    with pytest.raises(ModelNotFoundError) as info:
        TextEncoder("org/anything")
    message = str(info.value)
    assert "store" in message and "hub" in message and "could not be reached" in message
    assert "HF_HUB_OFFLINE=1" in message and "simkernel models export" in message  # the two ways out
    assert time.monotonic() - start < 60


def test_int8_failing_its_check_falls_back_to_the_published_file(hub, tiny_repo, monkeypatch):
    """A per-row int8 that misses the check against fp32 is not kept: the repo's file is, with a warning."""
    from simkernel.runtime.acquisition import graph_passes

    monkeypatch.setattr(graph_passes, "LOCAL_INT8_MIN_COSINE", 1.01)  # nothing can pass
    with pytest.warns(UserWarning, match="misses its check"):
        enc = TextEncoder(REPO, precision="int8", threads=1)
    assert (enc.model_path / "model_int8.onnx").read_bytes() == (tiny_repo / "model_int8.onnx").read_bytes()
    assert not (enc.model_path / "model_int8.onnx_data").exists()
    entry = json.loads((enc.model_path / "simkernel.json").read_text())["files"]["model_int8.onnx"]
    assert entry["source"] == "onnx/model_qint8_avx512_vnni.onnx"
