"""CPU detection, backend dispatch and the portable (serial) path."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import simkernel
from simkernel import kernels

SNIPPET = """
import json, numpy as np
from simkernel import kernels
rng = np.random.default_rng(0)
a = rng.standard_normal((3, 17)).astype(np.float32)
print(json.dumps({"caps": kernels.capabilities(), "matrix": kernels.cosine_matrix(a, a).tolist()}))
"""


def _run(env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra}
    return subprocess.run(
        [sys.executable, "-c", SNIPPET], capture_output=True, text=True, env=env, timeout=120
    )


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def test_capabilities_shape():
    caps = kernels.capabilities()
    assert caps["backend"] in caps["available"]
    assert caps["available"][-1] == "serial"
    assert set(caps["available"]) <= set(caps["compiled"])
    assert caps["cpu"].keys() == {"avx2", "fma", "avx512f", "neon", "avx512_bf16", "amx_bf16"}
    assert caps["num_threads"] >= 1
    assert caps["blas_route"]["mode"] == "by shape"


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="/proc/cpuinfo exists only on Linux")
def test_detection_matches_proc_cpuinfo():
    """An independent reference: the kernel's cpuid/xgetbv detection agrees with the Linux kernel's."""
    flags = _cpu_flags()
    cpu = kernels.capabilities()["cpu"]
    available = kernels.available_backends()
    if platform.machine() in ("x86_64", "AMD64"):
        assert cpu["avx2"] == ("avx2" in flags)
        assert cpu["fma"] == ("fma" in flags)
        assert cpu["avx512f"] == ("avx512f" in flags)
        assert cpu["avx512_bf16"] == ("avx512_bf16" in flags)
        assert cpu["amx_bf16"] == ("amx_bf16" in flags)
        assert ("haswell" in available) == ({"avx2", "fma"} <= flags)
        assert ("skylake" in available) == ({"avx512f", "avx2", "fma"} <= flags)
        best = "skylake" if "avx512f" in flags else "haswell" if {"avx2", "fma"} <= flags else "serial"
    elif platform.machine() in ("aarch64", "arm64"):
        assert "neon" in available
        best = "neon"
    else:
        best = "serial"
    with kernels.use_backend(None):
        assert kernels.capabilities()["backend"] == best


def test_use_backend_restores_the_previous_one():
    before = kernels.capabilities()["backend"]
    with kernels.use_backend("serial", blas=True) as name:
        assert name == "serial"
        assert kernels.capabilities()["blas_route"]["mode"] == "always"
    assert kernels.capabilities()["backend"] == before
    assert kernels.capabilities()["blas_route"]["mode"] == "by shape"
    with pytest.raises(RuntimeError):
        with kernels.use_backend("serial"):
            raise RuntimeError("boom")
    assert kernels.capabilities()["backend"] == before


def test_portable_serial_path_via_environment():
    """SIMKERNEL_BACKEND=serial runs the portable C code from import on, with the same results."""
    proc = _run({"SIMKERNEL_BACKEND": "serial"})
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["caps"]["backend"] == "serial"
    assert out["caps"]["forced_by_env"] == "serial"
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 17)).astype(np.float32)
    np.testing.assert_allclose(np.array(out["matrix"], np.float32), kernels.cosine_matrix(a, a), atol=2e-6)


def test_bad_environment_backend_fails_loudly():
    proc = _run({"SIMKERNEL_BACKEND": "avx9000"})
    assert proc.returncode != 0
    assert "SIMKERNEL_BACKEND='avx9000': unknown kernel backend" in proc.stderr
    proc = _run({"SIMKERNEL_NUM_THREADS": "lots"})
    assert proc.returncode != 0
    assert "SIMKERNEL_NUM_THREADS='lots'" in proc.stderr


def test_threads_from_environment():
    proc = _run({"SIMKERNEL_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["caps"]["num_threads"] == 1


def test_import_simkernel_kernels_loads_no_heavy_dependency():
    code = (
        "import sys, simkernel.kernels; "
        "print(sorted(m for m in ('torch','transformers','sentence_transformers','onnxruntime','haystack') "
        "if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_typed_package_ships_stubs():
    root = Path(simkernel.__file__).parent
    assert (root / "py.typed").exists()
    assert (root / "_cosine.pyi").exists()
