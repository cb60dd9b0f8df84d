"""The bootstrap's native sums (csrc/bootstrap.c through simkernel._bootstrap) against exact arithmetic on
each resample written out row by row: the rows drawn, the moment sums (math.fsum: the exactly rounded sum)
and Spearman's rank sums (scipy's average ranks of the expanded resample, summed in fractions: the kernel
claims them exact); the same bits from builds for every vector width this CPU runs; bad arrays refused."""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from simkernel import _bootstrap
from simkernel.stats.intervals import _POISSON_EDGES, _run_starts

CSRC = Path(__file__).resolve().parents[2] / "csrc"


def sample_arrays(x: np.ndarray, y: np.ndarray):
    """What simkernel.stats.intervals gives the kernel: the rows sorted by x, the 6 moment columns, the runs
    of equal x, y's order and its groups."""
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    xc, yc = x - x.mean(), y - y.mean()
    columns = np.stack([x, xc, yc, xc * xc, yc * yc, xc * yc])
    y_order = np.argsort(y, kind="stable")
    groups = _run_starts(y[y_order])
    if groups is None:
        groups = np.arange(x.size + 1, dtype=np.intp)
    return x, y, columns, _run_starts(x), y_order, groups


def exact_sums(x: np.ndarray, y: np.ndarray, columns: np.ndarray, counts: np.ndarray) -> list:
    """One resample's sums, written out: N, the fsum of each moment column times the counts, and Spearman's
    three sums over the drawn rows (each row repeated as often as drawn), in fractions."""
    rows = np.repeat(np.arange(x.size), counts)
    drawn = rows.size
    moments = [
        math.fsum(float(c) * float(v) for c, v in zip(counts, column, strict=True)) for column in columns
    ]
    middle = Fraction(drawn + 1, 2)
    rx = [Fraction(r).limit_denominator(2) - middle for r in scipy.stats.rankdata(x[rows])]
    ry = [Fraction(r).limit_denominator(2) - middle for r in scipy.stats.rankdata(y[rows])]
    rank_sums = [
        sum(a * b for a, b in zip(rx, ry, strict=True)),
        sum(a * a for a in rx),
        sum(b * b for b in ry),
    ]
    return [drawn, *moments, *(float(value) for value in rank_sums)]


CASES = {
    # x distinct or tied, y with 2 or 3 groups (the masked passes) or many (the walk in y's order)
    "distinct x, 2 groups of y": (lambda rng, n: (rng.standard_normal(n), rng.integers(0, 2, n) * 1.0)),
    "distinct x, 3 groups of y": (lambda rng, n: (rng.standard_normal(n), rng.integers(0, 3, n) / 2.0)),
    "tied x, 7 groups of y": (lambda rng, n: (rng.integers(0, 9, n) * 0.5, rng.integers(0, 7, n) * 1.0)),
    "tied x, distinct y": (lambda rng, n: (np.round(rng.random(n), 1), rng.standard_normal(n))),
    "one x, one y": (lambda rng, n: (np.full(n, 0.25), np.ones(n))),
}
COUNTS = {
    "poisson": lambda rng, n: rng.poisson(1.0, (6, n)),
    "large": lambda rng, n: rng.integers(0, 400, (3, n)),  # a multinomial bootstrap of small n draws such
    "jackknife": lambda rng, n: (np.arange(n)[None, :] != np.arange(3)[:, None]).astype(int),
}


@pytest.mark.parametrize("counts_kind", COUNTS)
@pytest.mark.parametrize("case", CASES)
def test_sums_equal_exact_arithmetic(case, counts_kind):
    rng = np.random.default_rng(11)
    n = 53
    x, y, columns, runs, y_order, groups = sample_arrays(*CASES[case](rng, n))
    counts = COUNTS[counts_kind](rng, n).astype(np.uint16)
    sums = np.full((counts.shape[0], _bootstrap.SUMS), np.nan)
    _bootstrap.Sample(columns, runs, y_order, groups).sums(counts, sums)
    for got, row in zip(sums, counts, strict=True):
        want = exact_sums(x, y, columns, row)
        assert got[0] == want[0]
        # a float64 sum of 53 products in a fixed order: within 53 roundings of the exact one
        scale = [
            math.fsum(abs(float(c) * float(v)) for c, v in zip(row, column, strict=True))
            for column in columns
        ]
        for found, exact, size in zip(got[1:7], want[1:7], scale, strict=True):
            assert abs(found - exact) <= 64 * np.finfo(float).eps * size
        assert list(got[7:]) == want[7:], (case, counts_kind)  # the rank sums: exact


def test_moments_only_and_no_ranks_leave_the_rest():
    rng = np.random.default_rng(2)
    x = rng.random(40)
    counts = rng.poisson(1.0, (4, 40)).astype(np.uint16)
    sums = np.full((4, _bootstrap.SUMS), -7.0)
    _bootstrap.Sample(x[None, :]).sums(counts, sums)
    assert list(sums[:, 0]) == [float(row.sum()) for row in counts]
    for got, row in zip(sums[:, 1], counts, strict=True):
        assert got == pytest.approx(math.fsum(float(c) * v for c, v in zip(row, x, strict=True)), rel=1e-14)
    assert (sums[:, 2:] == -7.0).all()


def test_poisson_counts_are_the_edges_reached():
    uniform = np.random.default_rng(4).integers(0, 1 << 16, 100_003).astype(np.uint16)
    uniform[:3] = (0, 65535, _POISSON_EDGES[0])
    counts = np.empty_like(uniform)
    _bootstrap.poisson_counts(uniform, _POISSON_EDGES, counts)
    assert (counts == sum((uniform >= edge).astype(np.uint16) for edge in _POISSON_EDGES)).all()
    assert counts[:3].tolist() == [0, _bootstrap.POISSON_EDGES, 1]


class _CSample(ctypes.Structure):
    _fields_ = [
        ("n", ctypes.c_size_t),
        ("columns", ctypes.c_void_p),
        ("n_columns", ctypes.c_size_t),
        ("x_run_starts", ctypes.c_void_p),
        ("x_runs", ctypes.c_size_t),
        ("y_order", ctypes.c_void_p),
        ("y_group_starts", ctypes.c_void_p),
        ("y_groups", ctypes.c_size_t),
    ]


def _vector_widths() -> list[str]:
    """The -march levels this CPU runs: x86-64 (SSE2), x86-64-v3 (AVX2), x86-64-v4 (AVX-512)."""
    flags = set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    levels = ["x86-64"]
    if {"avx2", "fma", "bmi2"} <= flags:
        levels.append("x86-64-v3")
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        levels.append("x86-64-v4")
    return levels


@pytest.mark.skipif(
    shutil.which("gcc") is None or not Path("/proc/cpuinfo").exists(), reason="needs gcc on x86"
)
def test_same_bits_whatever_the_vector_width(tmp_path):
    """csrc/bootstrap.c built for each vector width this CPU runs (one target each, no load-time clones, the
    extension's flags) gives the extension's bits: the sums do not depend on the CPU."""
    if "x86" not in subprocess.run(["gcc", "-dumpmachine"], capture_output=True, text=True).stdout:
        pytest.skip("the vector widths compared here are x86's")
    rng = np.random.default_rng(8)
    n = 1001  # not a multiple of the 8 lanes: the tail too
    x, y, columns, runs, y_order, groups = sample_arrays(rng.standard_normal(n), rng.integers(0, 5, n) * 0.25)
    counts = rng.poisson(1.0, (20, n)).astype(np.uint16)
    want = np.empty((20, _bootstrap.SUMS))
    _bootstrap.Sample(columns, runs, y_order, groups).sums(counts, want)
    assert runs is None
    sample = _CSample(
        n, columns.ctypes.data, 6, None, 0, y_order.ctypes.data, groups.ctypes.data, groups.size - 1
    )
    for level in _vector_widths():
        library = tmp_path / f"bootstrap-{level}.so"
        subprocess.run(
            ["gcc", "-O3", "-std=c11", "-ffp-contract=off", "-fPIC", "-shared", f"-march={level}",
             "-DSK_BOOTSTRAP_NO_CLONES", f"-I{CSRC}", str(CSRC / "bootstrap.c"), "-o", str(library)],
            check=True,
        )  # fmt: skip
        found = np.empty_like(want)
        status = ctypes.CDLL(str(library)).sk_bootstrap_sums(
            ctypes.byref(sample), ctypes.c_void_p(counts.ctypes.data), ctypes.c_size_t(20),
            ctypes.c_void_p(found.ctypes.data),
        )  # fmt: skip
        assert status == 0
        assert found.tobytes() == want.tobytes(), level


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: _bootstrap.Sample(np.zeros((2, 5))), "1 or 6 columns"),
        (lambda: _bootstrap.Sample(np.zeros((1, 5), dtype=np.float32)), "columns must be a C-contiguous float64"),
        (lambda: _bootstrap.Sample(np.zeros((1, 5)), np.array([0, 3, 2, 5])), "x_run_starts must ascend from 0 to 5"),
        (lambda: _bootstrap.Sample(np.zeros((1, 5)), np.array([0, 3])), "x_run_starts must ascend from 0 to 5"),
        (lambda: _bootstrap.Sample(np.zeros((6, 3)), None, np.array([0, 1, 3]), np.array([0, 3])), r"in \[0, 3\)"),
        (lambda: _bootstrap.Sample(np.zeros((6, 3)), None, np.array([0, 1, 2])), "give both or neither"),
        (lambda: _bootstrap.Sample(np.zeros((1, 3))).sums(np.zeros((2, 4), np.uint16), np.zeros((2, 10))), r"\(resamples, 3\)"),
        (lambda: _bootstrap.Sample(np.zeros((1, 3))).sums(np.zeros((2, 3)), np.zeros((2, 10))), "counts must be a C-contiguous uint16"),
        (lambda: _bootstrap.poisson_counts(np.zeros(4, np.uint16), np.zeros(3, np.uint16), np.zeros(4, np.uint16)), "edges must hold 8"),
    ],
)  # fmt: skip
def test_bad_arrays_are_refused(build, message):
    with pytest.raises(ValueError, match=message):
        build()
