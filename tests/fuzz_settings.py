"""Hypothesis settings of the fuzz tests (tests/*/test_fuzz_*.py): a fixed number of cases each, no
per-case deadline (a 1 MiB field takes longer than hypothesis' default 200 ms on a busy machine), the
failing case's reproduction blob printed. The numbers of cases add up to more than 10,000 per run
(RELIABILITY.md lists them)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


def fuzz(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        print_blob=True,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
