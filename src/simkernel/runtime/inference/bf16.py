"""Whether this machine can run ``precision="bf16"``, and why not: native bfloat16 arithmetic plus OpenVINO.

bf16 runs the bundle's fp32 ``model.onnx`` on OpenVINO's CPU plugin with bf16 inference precision
(:class:`simkernel.runtime.inference.openvino_session.OpenVinoEncoderSession`). It is offered only where it is
real: on a CPU without native bf16 (the x86 ``avx512_bf16`` or ``amx_bf16`` instructions, detected by the
kernel's cpuid probe, :func:`simkernel.kernels.capabilities`) OpenVINO would silently compute in fp32,
so asking for bf16 there raises :class:`~simkernel.errors.PrecisionUnavailableError` instead.

Nothing here imports OpenVINO; the package's presence is looked up only.
"""

from __future__ import annotations

import importlib.util
import platform

from simkernel.errors import MissingDependencyError, PrecisionUnavailableError

BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")  # either is enough; /proc/cpuinfo spells them the same
OPENVINO_INSTALL = "pip install 'simkernel[openvino]'"
CHECK_COMMAND = "grep -o 'avx512_bf16\\|amx_bf16' /proc/cpuinfo"


def cpu_bf16_flags() -> dict[str, bool]:
    """``{"avx512_bf16": bool, "amx_bf16": bool}`` as the kernel's cpuid/xgetbv probe sees them (a flag
    counts only when the operating system also saves the register state it needs)."""
    from simkernel import kernels

    cpu = kernels.capabilities()["cpu"]
    return {flag: bool(cpu.get(flag, False)) for flag in BF16_CPU_FLAGS}


def cpu_bf16_reason() -> str | None:
    """None when the CPU computes bf16 natively, else why not (a sentence naming what the CPU lacks)."""
    flags = cpu_bf16_flags()
    if any(flags.values()):
        return None
    machine = platform.machine() or "unknown"
    if machine.lower() not in ("x86_64", "amd64", "x86", "i686"):
        return (
            f"this {machine} CPU is not x86-64: OpenVINO's CPU plugin computes bf16 only with the x86 "
            "avx512_bf16 or amx_bf16 instructions"
        )
    return (
        f"this CPU ({_cpu_name()}) has neither avx512_bf16 nor amx_bf16, the instructions for native "
        "bfloat16 arithmetic (AMD Zen 4 and later, Intel Cooper Lake, Sapphire Rapids and later have them)"
    )


def openvino_reason() -> str | None:
    """None when the ``openvino`` package is installed, else why bf16 cannot run (names the install)."""
    if importlib.util.find_spec("openvino") is None:
        return f"the openvino package is not installed ({OPENVINO_INSTALL})"
    return None


def bf16_status() -> dict:
    """``{"available": bool, "reason": str | None, "cpu": {flag: bool}, "openvino": bool}``: whether
    ``precision="bf16"`` can run here; ``reason`` says why not (the CPU first: installing OpenVINO does
    not help a CPU without bf16)."""
    reason = cpu_bf16_reason() or openvino_reason()
    return {
        "available": reason is None,
        "reason": reason,
        "cpu": cpu_bf16_flags(),
        "openvino": importlib.util.find_spec("openvino") is not None,
    }


def require_bf16() -> None:
    """Raise unless ``precision="bf16"`` can run here: :class:`PrecisionUnavailableError` for a CPU
    without native bf16 (suggesting int8 or fp32), :class:`MissingDependencyError` without OpenVINO."""
    reason = cpu_bf16_reason()
    if reason is not None:
        raise PrecisionUnavailableError(
            f"precision='bf16' is not available: {reason}. OpenVINO would silently compute in fp32 instead, so simkernel refuses. Use precision='int8' (faster, slightly less exact) or precision='fp32' (the reference numbers). Check a machine with: {CHECK_COMMAND}"
        )
    if openvino_reason() is not None:
        raise MissingDependencyError(
            f"precision='bf16' runs the model on OpenVINO, and the Python package 'openvino' is not installed. Install it with: {OPENVINO_INSTALL}"
        )


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"
