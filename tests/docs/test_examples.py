"""Every Python and shell example of README.md and the documentation site runs as written.

Python blocks run through pytest-examples in a fresh folder that has the repository's examples/ and tests/
(the files the examples use); where a block shows what it prints (``#>`` lines under a ``print``),
pytest-examples checks the printed output against them. Shell blocks run in bash (-e, stopping at the first command that fails) with this venv's
``simkernel`` and ``python`` first on PATH; a ``pip install`` line is not run (this venv has every extra);
a block followed by a ``text`` block marked ``output="..."`` must print each of its lines (a line ending in
``...`` is a prefix; time lines vary and are left out). Blocks that need the hub, an OpenAI key or a second
machine are marked ``test="skip"`` and show the reader why; the server's examples talk to the server that
the server page's own command starts, on a free loopback port. The ragas example runs in ragas' tool venv.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_examples import CodeExample, EvalExample, find_examples
from tests.docs.conftest import shell_env
from tests.docs.pages import REPO, Block, fenced_blocks, pages, shell_blocks, skip_reason

PY_EXAMPLES = list(find_examples(*pages()))
SH_EXAMPLES = shell_blocks()
TIMEOUT_S = 600


def _id(example: CodeExample | Block) -> str:
    if isinstance(example, Block):
        return example.id
    return f"{example.path.relative_to(REPO)}:{example.start_line}"


def _skip_marked(source: str, settings: dict[str, str]) -> None:
    if settings.get("test") == "skip":
        reason = skip_reason(source)
        assert reason, (
            'a block marked test="skip" must show its reader why: a line "# not run by the tests: ..."'
        )
        pytest.skip(reason)


def _expected_prints(source: str) -> list[str]:
    return [line.split("#>", 1)[1].strip() for line in source.splitlines() if line.lstrip().startswith("#>")]


def test_examples_found():
    """The tests see the pages' examples (a changed fence syntax would otherwise leave them all out)."""
    assert len(PY_EXAMPLES) >= 20 and len(SH_EXAMPLES) >= 15, (len(PY_EXAMPLES), len(SH_EXAMPLES))
    readme = [e for e in PY_EXAMPLES if e.path.name == "README.md"]
    assert len(readme) >= 3


@pytest.mark.parametrize("example", PY_EXAMPLES, ids=_id)
def test_python_example(example: CodeExample, eval_example: EvalExample, workdir: Path, request):
    settings = example.prefix_settings()
    _skip_marked(example.source, settings)
    if settings.get("test") == "pytest":
        (workdir / "test_example.py").write_text(example.source, encoding="utf-8")
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_example.py"],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        return
    if settings.get("server") == "use":
        server = request.getfixturevalue("docs_server")
        example = CodeExample.create(example.source.replace("127.0.0.1:8080", f"127.0.0.1:{server.port}"))
    if "venv" in settings:
        python = (
            # a relative SIMKERNEL_TOOL_VENVS (the Makefile exports ".tool-venvs") is the repository's
            REPO / os.environ.get("SIMKERNEL_TOOL_VENVS", ".tool-venvs") / settings["venv"] / "bin" / "python"
        )
        if not python.exists():
            pytest.fail(f"{python} is missing: make tool-venvs builds it")
        run = subprocess.run(
            [str(python), "-c", example.source],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.split("\n")[:-1][-len(_expected_prints(example.source)) :] == _expected_prints(
            example.source
        )
        return
    eval_example.set_config(line_length=120)
    failure = None
    try:
        if _expected_prints(example.source):
            eval_example.run_print_check(example)
        else:
            eval_example.run(example)
    except (Exception, pytest.fail.Exception) as exc:
        failure = _describe(exc)
    if failure is not None:  # reported without the traceback: pytest cannot render a Markdown file's frames
        pytest.fail(f"the example at {_id(example)} failed: {failure}", pytrace=False)


def _describe(exc: BaseException) -> str:
    """The exception and the file:line of its last frames, read without the frames' column positions
    (which Python's traceback module cannot read for code compiled from a Markdown file)."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}")
        tb = tb.tb_next
    return f"{type(exc).__name__}: {exc}\n  at " + "\n  at ".join(frames[-6:])


def _runnable(source: str) -> str:
    """The block's commands, less the install lines (this venv has every extra)."""
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("pip install"))


def _output_block(block: Block) -> Block | None:
    """The ``text`` block marked output="..." right after ``block`` on its page, if any."""
    blocks = fenced_blocks(block.path)
    index = blocks.index(block)
    if index + 1 < len(blocks):
        after = blocks[index + 1]
        if after.lang == "text" and "output" in after.settings:
            return after
    return None


def _check_output(expected: Block, printed: str) -> None:
    lines = [p.rstrip() for p in printed.splitlines()]
    for line in expected.source.splitlines():
        line = line.rstrip()
        if not line.strip() or re.match(r"\s*time\s", line):
            continue
        if line.endswith("..."):
            assert any(p.startswith(line[:-3]) for p in lines), (line, printed)
        else:
            assert line in lines, (line, printed)


@pytest.mark.parametrize("block", SH_EXAMPLES, ids=_id)
def test_shell_example(block: Block, workdir: Path, request):
    settings = block.settings
    _skip_marked(block.source, settings)
    commands = [
        line for line in block.source.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    if all(line.startswith("make ") for line in commands):
        pytest.skip("make targets: `make test` itself runs them")
    if settings.get("server") == "start":  # the block's own command, on a free port, then stopped (SIGTERM)
        from tests.serve.serve_support import ServerProcess

        line = next(x for x in block.source.splitlines() if x.startswith("simkernel serve"))
        import httpx

        server = ServerProcess(*shlex.split(line)[2:])
        try:
            with httpx.Client(base_url=server.url, trust_env=False) as http:
                served = [m["id"] for m in http.get("/v1/models").json()["data"]]
        finally:
            status, stderr = server.stop()
        assert status == 0, stderr
        assert served == [a for a in shlex.split(line) if "/" in a], served  # the models the command names
        return
    script = _runnable(block.source)
    if settings.get("server") == "use":
        server = request.getfixturevalue("docs_server")
        script = script.replace("127.0.0.1:8080", f"127.0.0.1:{server.port}")
    run = subprocess.run(
        ["bash", "-eu", "-c", script],  # as a shell runs it: no pipefail
        cwd=workdir,
        env=shell_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert run.returncode == 0, f"exit status {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    expected = _output_block(block)
    if expected is not None:
        _check_output(expected, run.stdout + run.stderr)
