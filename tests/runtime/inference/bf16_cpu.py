"""A CPU without native bf16, on any CPU: for the tests of the refusal.

On a CPU without avx512_bf16 and amx_bf16 nothing is changed and the refusal is the real one. On a CPU that
has them, the kernel's cpuid probe is read as reporting neither (what it reports on such a CPU), and every
check above it (``cpu_bf16_reason``, ``bf16_status``, ``require_bf16``, ``simkernel.runtime.capabilities``)
computes its refusal and reason from that, as it would there.
"""

from __future__ import annotations


def simulate_cpu_without_bf16(monkeypatch) -> str:
    """Make this process see a CPU without native bf16 (where it has it); returns the refusal's reason."""
    from simkernel.runtime.inference import bf16

    if any(bf16.cpu_bf16_flags().values()):
        monkeypatch.setattr(bf16, "cpu_bf16_flags", lambda: dict.fromkeys(bf16.BF16_CPU_FLAGS, False))
    reason = bf16.cpu_bf16_reason()
    assert reason is not None
    return reason
