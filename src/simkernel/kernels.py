"""The native cosine kernel: normalisation, cosine matrices, paired cosines, fused reductions and
BERTScore's greedy matching (:func:`greedy_match`).

Every function takes float32 ``(rows, dim)`` arrays and returns float32. float64 input is converted; any
other dtype raises ``TypeError``. Read-only, strided and Fortran-ordered arrays are accepted (copied to C
order when needed, never modified). Every bad argument raises ``ValueError``/``TypeError`` naming the value
and the expected form before any native code runs.

Numerics (same contract on every backend; see ``csrc/simkernel.h``):

- SIMD backends multiply and accumulate in float32 with many independent partial sums; the serial backend
  accumulates in float64; the final division by the norms is done in float64. The absolute error of a
  cosine against a float64 reference is about ``1e-7 * sqrt(dim)`` (tested: ``<= 2e-6 + 3e-7 * sqrt(dim)``).
- A zero row has cosine 0.0 with anything, and ``normalize`` leaves it zero.
- NaN (or infinity) in a row gives NaN for every cosine involving it (never a crash, never a silent number);
  NaN stays NaN through ``clamp``, max and mean.
- Nothing is clamped unless ``clamp`` is given: a cosine may be a few ulp outside [-1, 1].

The GIL is released during every native computation, so Python threads run these functions in parallel.

Backends: ``serial`` (portable C), ``haswell`` (AVX2+FMA), ``skylake`` (AVX-512F) on x86-64, ``neon`` on
AArch64. The best one this CPU supports is chosen at import; ``SIMKERNEL_BACKEND=<name>`` in the
environment, :func:`set_backend` or the :func:`use_backend` context manager force one (process-wide).
Large memory-bound calls are split over up to :func:`get_num_threads` threads (``SIMKERNEL_NUM_THREADS``).

Greedy matching: :func:`greedy_match` scores (candidate, reference) pairs of ragged token sequences the way
BERTScore's ``greedy_cos_idf`` does (best match of each token, idf-weighted means, F1), pair by pair without
padding and without materialising a similarity matrix; pairs are split over threads by their work.

Large products: :func:`cosine_matrix` and :func:`cosine_reduce` without ``offsets`` hand the matrix product
to BLAS (``numpy.matmul`` on rows normalised natively) once ``min(n, m) >= 16`` and ``n * m * dim >= 1.5e5``
(the crossover measured by ``benchmarks/studies/route_crossover.py``); the reductions stay native and run
block by block, so at most 2**22 similarities (16 MiB) exist at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from simkernel import _cosine
from simkernel._cosine import cosine_matrix, cosine_reduce, greedy_match, normalize, paired_cosine
from simkernel.cpu_budget import available_cpus

__all__ = [
    "normalize",
    "cosine_matrix",
    "paired_cosine",
    "cosine_reduce",
    "greedy_match",
    "capabilities",
    "available_backends",
    "set_backend",
    "use_backend",
    "get_num_threads",
    "set_num_threads",
]

BACKEND_ENV = "SIMKERNEL_BACKEND"
THREADS_ENV = "SIMKERNEL_NUM_THREADS"

normalize.__doc__ = """normalize(x) -> (n, d) float32 array

Rows of ``x`` (n, d) scaled to unit L2 norm (norm computed as described in the module numerics). A zero row
stays all zeros; a row with a NaN or an infinity becomes all NaN. Returns a new array; ``x`` is untouched.
"""

paired_cosine.__doc__ = """paired_cosine(a, b) -> (n,) float32 array

Row-wise cosine: ``out[i] = cos(a[i], b[i])`` for ``a`` and ``b`` of the same shape (n, d). 0.0 when
either row is zero, NaN when either row holds a NaN. One pass over both arrays (dot product and both norms
fused).
"""

cosine_matrix.__doc__ = """cosine_matrix(a, b) -> (n, m) float32 array

Every pair: ``out[i, j] = cos(a[i], b[j])`` for ``a`` (n, d) and ``b`` (m, d). Small shapes run natively;
large ones normalise both sides natively and let BLAS do the product (see the module docstring).
"""

cosine_reduce.__doc__ = """cosine_reduce(queries, refs, offsets=None, reduce="max", clamp=None)

One number per query, from its cosines with a group of reference rows, without materialising the
similarity matrix:

- ``offsets`` (int64, length ``len(queries) + 1``, starting at 0, non-decreasing, ending at ``len(refs)``):
  query ``i`` is compared with ``refs[offsets[i]:offsets[i + 1]]`` (ragged groups; an empty group gives 0.0).
  ``offsets=None``: every query is compared with every row of ``refs``.
- ``reduce``: ``"max"`` or ``"mean"`` returns a (q,) float32 array; a sequence such as ``("max", "mean")``
  returns a tuple of such arrays in that order, computed in the same single pass.
- ``clamp``: ``None`` or ``(lo, hi)`` with ``lo <= hi``: each similarity is clamped to [lo, hi] BEFORE the
  reduction (eval_lib's ReferenceMatchMetric clamps each to [0, 1], then takes the max or the mean).

The mean is the sum over the group (float64, or float32 lanes then float64 on the BLAS route) divided by
the group size. NaN in a query or a reference of a group makes that group's max and mean NaN.
"""

greedy_match.__doc__ = """greedy_match(cand, cand_offsets, ref, ref_offsets, pairs=None, cand_weights=None, ref_weights=None)
-> (P, R, F), three (n_pairs,) float32 arrays

BERTScore's greedy matching (``bert_score.utils.greedy_cos_idf``) of token embeddings, per pair of texts:

- ``cand`` (rows, d) and ``ref`` (rows, d): the token vectors of all candidate texts, concatenated, and of
  all reference texts. Similarities are plain dot products of these rows: pass L2-normalised rows (as
  BERTScore does), and they are cosines.
- ``cand_offsets`` / ``ref_offsets``: int64, one more value than there are texts, starting at 0,
  non-decreasing, ending at the number of rows: text ``i`` is the rows ``offsets[i]:offsets[i + 1]``.
- ``pairs``: ``None`` pairs candidate text ``i`` with reference text ``i`` (the text counts must match),
  or an int64 (n_pairs, 2) array of (candidate text, reference text) indices; an index may repeat, so
  deduplicated texts and several references per candidate are scored without copying any row.
- ``cand_weights`` / ``ref_weights``: ``None`` (every weight 1) or one float32 weight per row (idf, 0 for
  [CLS] and [SEP]).

With ``s[i, j]`` the similarity of the pair's candidate token ``i`` and reference token ``j``:
``P = sum_i w_c[i] * max_j s[i, j] / sum_i w_c[i]``, ``R = sum_j w_r[j] * max_i s[i, j] / sum_j w_r[j]`` and
``F = 2 P R / (P + R)``. Every token takes part in the maxima, those of weight 0 too; weights only weight
the means. Units: P, R and F are in the units of the similarities (cosines for unit rows, in [-1, 1]).

Numerics: dot products accumulate as in the module numerics (float32 lanes, float64 on ``serial``, error
about ``1e-7 * sqrt(d)``; no norm and no float64 rescue of extreme rows); maxima are exact over the
float32 similarities; weight sums and weighted sums are float64, rounded once to float32; ``F`` is computed
in float64 from the float32 ``P`` and ``R``. Edge cases: a pair with a text of 0 tokens on either side gives
P = R = F = 0; a side whose weights sum to exactly 0 scores 0; NaN in a token row makes both P and R NaN (it
meets every token of the other side) and a NaN weight makes its side NaN; a NaN F is 0 (as BERTScore's
``F.masked_fill(torch.isnan(F), 0.)``); P + R = 0 with P != 0 gives an infinite F, as in BERTScore. A pair's result
never depends on the other pairs of the call (no padding). Large calls are split over
:func:`get_num_threads` threads in parts of about equal ``n_c * n_r * d`` work; results do not depend on it.
"""


def available_backends() -> list[str]:
    """Backends this CPU can run, best first (``serial`` is always last and always there)."""
    return [name for name in _cosine.backend_names() if _cosine.backend_supported(name)]


def set_backend(name: str | None) -> str:
    """Makes ``name`` the active backend for the whole process (``None`` or ``"auto"``: the best one).

    Returns the previously active backend's name. Raises ValueError naming the backends this CPU can run
    if ``name`` is unknown or unsupported here.
    """
    previous = _cosine.active_backend()
    wanted = "auto" if name is None else name
    if not isinstance(wanted, str):
        raise TypeError(f"backend name must be a str or None; got {type(name).__name__} {name!r}")
    status = _cosine.select_backend(wanted)
    if status == -1:
        raise ValueError(
            f"unknown kernel backend {name!r}; this build has {_cosine.backend_names()} (this CPU runs {available_backends()}), or 'auto'"
        )
    if status == -2:
        raise ValueError(
            f"kernel backend {name!r} is not supported by this CPU; it runs {available_backends()}"
        )
    return previous


@contextmanager
def use_backend(name: str | None = None, *, blas: bool | None = None) -> Iterator[str]:
    """Context manager forcing a backend (and optionally the BLAS route) inside its block; yields its name.

    ``blas=None`` keeps the choice by shape, ``True`` sends every ``cosine_matrix`` and dense
    ``cosine_reduce`` to BLAS, ``False`` keeps them native. The setting is process-wide (it affects other
    threads too), which is what tests and benchmarks need; restore happens on exit.
    """
    previous = set_backend(name)
    previous_mode = _cosine.blas_route()[0]
    if blas is not None:
        _cosine.set_blas_route(1 if blas else 0)
    try:
        yield _cosine.active_backend()
    finally:
        _cosine.set_blas_route(previous_mode)
        _cosine.select_backend(previous)


def get_num_threads() -> int:
    """Most threads one large memory-bound call (``paired_cosine``, ragged ``cosine_reduce``, ``normalize``)
    or large ``greedy_match`` may use. A call is split only when each part reads at least 2**18 floats
    (1 MiB), or for ``greedy_match`` computes at least 2**21 multiply-adds, so calls smaller than that
    always run on the calling thread. Default: the CPUs this process may use (affinity mask
    and cgroup quota, :func:`simkernel.cpu_budget.available_cpus`), at most 8."""
    return _cosine.num_threads()


def set_num_threads(n: int) -> int:
    """Sets :func:`get_num_threads` for the whole process (1 disables splitting); returns the old value.
    Results do not depend on it. The BLAS route's matrix product follows numpy's BLAS threads instead."""
    previous = _cosine.num_threads()
    _cosine.set_num_threads(int(n))
    return previous


def capabilities() -> dict:
    """What the CPU offers and what runs: ``{"cpu": {...}, "compiled": [...], "available": [...],
    "backend": name, "forced_by_env": name or None, "blas_route": {...}}``. ``cpu`` holds the cpuid flags
    (usable only where the OS saves the registers they need): avx2, fma, avx512f, neon for the kernels;
    avx512_bf16 and amx_bf16 for the runtime's ``precision="bf16"`` (whether it runs, and why not:
    :func:`simkernel.runtime.capabilities`)."""
    mode, min_work, min_rows = _cosine.blas_route()
    return {
        "cpu": _cosine.cpu_features(),
        "compiled": _cosine.backend_names(),
        "available": available_backends(),
        "backend": _cosine.active_backend(),
        "forced_by_env": os.environ.get(BACKEND_ENV) or None,
        "num_threads": _cosine.num_threads(),
        "blas_route": {
            "mode": {-1: "by shape", 0: "never", 1: "always"}[mode],
            "min_work": min_work,
            "min_rows": min_rows,
        },
    }


def _apply_environment() -> None:
    name = os.environ.get(BACKEND_ENV)
    if name:
        try:
            set_backend(name)
        except ValueError as exc:
            raise ValueError(f"{BACKEND_ENV}={name!r}: {exc}") from None
    threads = os.environ.get(THREADS_ENV)
    if not threads:
        # the native default counts the affinity mask only; a cgroup CPU quota may allow fewer
        set_num_threads(min(_cosine.num_threads(), available_cpus()))
    else:
        try:
            set_num_threads(int(threads))
        except ValueError as exc:
            raise ValueError(f"{THREADS_ENV}={threads!r}: expected an integer from 1 to 64 ({exc})") from None


_apply_environment()
