"""Argument checks and conversions of the cosine kernel (the slow path; pure Python).

``_cosine`` accepts float32, C-contiguous, aligned, native-endian arrays directly; anything else (float64,
lists, strided, Fortran-ordered, read-only copies, subclasses) comes here once to be checked and converted,
and every bad argument raises here, before any native code runs, with a message naming the value and the
expected form. Keeping the checks in one place means the fast path and the slow path cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

_FLOAT32 = np.dtype(np.float32)
REDUCTIONS = ("max", "mean")


def as_matrix(x: Any, name: str) -> np.ndarray:
    """``x`` as a C-contiguous float32 ``(rows, dim)`` array; float64 and lists of floats are converted.

    Raises TypeError for another dtype and ValueError for another number of dimensions. Read-only,
    strided and Fortran-ordered arrays are accepted (copied when needed, never modified).
    """
    if x is None:
        raise TypeError(f"{name} must be a 2-D float32 array of shape (rows, dim), got None")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:  # ragged nested lists and the like
        raise ValueError(
            f"{name} must be a 2-D float32 array of shape (rows, dim); could not read it as an array: {exc}"
        ) from exc
    if arr.dtype.kind != "f" or arr.dtype.itemsize not in (4, 8):  # float32/float64 of either byte order
        raise TypeError(
            f"{name} has dtype {arr.dtype}; expected float32 (float64 is converted). Convert it with np.asarray({name}, dtype=np.float32)."
        )
    if arr.ndim != 2:
        hint = f" (a single vector: {name}[None, :])" if arr.ndim == 1 else ""
        raise ValueError(f"{name} must be 2-D (rows, dim); got {arr.ndim}-D shape {arr.shape}{hint}")
    return np.ascontiguousarray(arr, dtype=_FLOAT32)


def check_same_dim(a: np.ndarray, b: np.ndarray, a_name: str, b_name: str) -> None:
    if a.shape[1] != b.shape[1]:
        raise ValueError(
            f"{a_name} and {b_name} must have the same number of columns (vector dimension); got {a_name} {a.shape} and {b_name} {b.shape}"
        )


def check_same_rows(a: np.ndarray, b: np.ndarray, a_name: str, b_name: str) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"paired_cosine needs as many rows in {a_name} as in {b_name}; got {a_name} {a.shape} and {b_name} {b.shape} (for every pair use cosine_matrix)"
        )


def as_offsets(offsets: Any, n_queries: int) -> np.ndarray:
    """``offsets`` as a C-contiguous int64 vector of length ``n_queries + 1`` (values checked natively)."""
    try:
        arr = np.asarray(offsets)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"offsets must be a 1-D int64 array of length {n_queries + 1}: {exc}") from exc
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"offsets has dtype {arr.dtype}; expected int64 (group boundaries into refs). Convert it with np.asarray(offsets, dtype=np.int64)."
        )
    if arr.ndim != 1 or arr.shape[0] != n_queries + 1:
        raise ValueError(
            f"offsets must be 1-D of length len(queries) + 1 = {n_queries + 1}; got shape {arr.shape}"
        )
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"offsets value {int(arr.max())} does not fit in int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _offsets_problem(offsets: np.ndarray, index: int, n_rows: int, name: str, rows_name: str) -> str:
    """What is wrong with ``offsets`` (called ``name``, bounds into ``rows_name`` of ``n_rows`` rows) at the
    ``index`` that ``sk_check_offsets`` returned."""
    n = offsets.shape[0] - 1
    value = int(offsets[index])
    if index == 0 and value != 0:
        return f"{name}[0] is {value}; expected 0"
    if value > n_rows:
        return f"{name}[{index}] is {value}, beyond len({rows_name}) = {n_rows}"
    if index > 0 and value < int(offsets[index - 1]):
        previous = int(offsets[index - 1])
        return f"{name}[{index}] is {value}, less than {name}[{index - 1}] = {previous} (must not decrease)"
    return f"{name}[{n}] (the last) is {value}; expected len({rows_name}) = {n_rows}"


def offsets_error(offsets: np.ndarray, index: int, n_refs: int) -> ValueError:
    """The ValueError for offsets that ``sk_check_offsets`` rejected at ``index``."""
    why = _offsets_problem(offsets, index, n_refs, "offsets", "refs")
    return ValueError(
        f"invalid offsets: {why}. Query i is scored against refs[offsets[i]:offsets[i + 1]], so offsets must start at 0, never decrease and end at len(refs)."
    )


def parse_reduce(reduce: Any) -> tuple[tuple[str, ...], bool]:
    """``(names, single)``: ``"max"``/``"mean"`` gives one name; a sequence of them, a tuple of results."""
    if isinstance(reduce, str):
        names: tuple[Any, ...] = (reduce,)
        single = True
    elif isinstance(reduce, Sequence) and len(reduce) > 0:
        names = tuple(reduce)
        single = False
    else:
        raise ValueError(f"reduce must be 'max', 'mean' or a sequence of them; got {reduce!r}")
    for name in names:
        if name not in REDUCTIONS:
            raise ValueError(f"reduce must be 'max', 'mean' or a sequence of them; got {reduce!r}")
    return names, single


def parse_clamp(clamp: Any) -> tuple[bool, float, float]:
    """``(enabled, lo, hi)`` from ``None`` or a pair ``(lo, hi)`` of real numbers with ``lo <= hi``."""
    if clamp is None:
        return False, 0.0, 0.0
    if isinstance(clamp, np.ndarray) and clamp.ndim == 1:
        clamp = clamp.tolist()
    if isinstance(clamp, (str, bytes)) or not isinstance(clamp, Sequence) or len(clamp) != 2:
        raise ValueError(f"clamp must be None or a pair (lo, hi), e.g. (0.0, 1.0); got {clamp!r}")
    try:
        lo, hi = float(clamp[0]), float(clamp[1])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"clamp must be a pair of real numbers (lo, hi); got {clamp!r}") from exc
    if math.isnan(lo) or math.isnan(hi) or lo > hi:
        raise ValueError(f"clamp must satisfy lo <= hi (and neither is NaN); got {clamp!r}")
    return True, lo, hi


# ---- greedy_match (BERTScore greedy matching) ----

_SIDES = {"cand": "candidate", "ref": "reference"}


def as_segment_offsets(offsets: Any, name: str, rows_name: str) -> np.ndarray:
    """``offsets`` as a C-contiguous int64 vector of at least one value: segment i of ``rows_name`` is rows
    ``offsets[i]:offsets[i + 1]`` (values checked natively, then by :func:`segment_offsets_error`)."""
    side = _SIDES[rows_name]
    if offsets is None:
        raise TypeError(
            f"{name} must be a 1-D int64 array of segment boundaries into {rows_name} (one more than the number of {side} texts, starting at 0 and ending at len({rows_name})), got None"
        )
    try:
        arr = np.asarray(offsets)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be a 1-D int64 array of segment boundaries into {rows_name}; could not read it as an array: {exc}"
        ) from exc
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"{name} has dtype {arr.dtype}; expected int64 (segment boundaries into {rows_name}). Convert it with np.asarray({name}, dtype=np.int64)."
        )
    if arr.ndim != 1 or arr.shape[0] < 1:
        raise ValueError(
            f"{name} must be 1-D with one more value than there are {side} texts (at least [0] for none); got shape {arr.shape}"
        )
    if arr.dtype.kind == "u" and int(arr.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"{name} value {int(arr.max())} does not fit in int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


def segment_offsets_error(
    offsets: np.ndarray, index: int, n_rows: int, name: str, rows_name: str
) -> ValueError:
    """The ValueError for segment offsets that ``sk_check_offsets`` rejected at ``index``."""
    why = _offsets_problem(offsets, index, n_rows, name, rows_name)
    return ValueError(
        f"invalid {name}: {why}. {_SIDES[rows_name].capitalize()} text i is the rows {rows_name}[{name}[i]:{name}[i + 1]], so {name} must start at 0, never decrease and end at len({rows_name})."
    )


def as_pairs(pairs: Any) -> np.ndarray:
    """``pairs`` as a C-contiguous int64 ``(n_pairs, 2)`` array (indices checked natively)."""
    try:
        arr = np.asarray(pairs)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"pairs must be None or an int64 array of shape (n_pairs, 2) holding (candidate text, reference text) indices; could not read it as an array: {exc}"
        ) from exc
    if arr.size == 0 and arr.ndim == 1:
        arr = arr.reshape(0, 2).astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"pairs has dtype {arr.dtype}; expected int64 (candidate text, reference text) indices. Convert it with np.asarray(pairs, dtype=np.int64)."
        )
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"pairs must have shape (n_pairs, 2), one row (candidate text index, reference text index) per pair; got shape {arr.shape}"
        )
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"pairs value {int(arr.max())} does not fit in int64")
    return np.ascontiguousarray(arr, dtype=np.int64)


def pairs_error(pairs: np.ndarray, flat_index: int, n_cand: int, n_ref: int) -> ValueError:
    """The ValueError for the pair index ``sk_check_pairs`` rejected (flat index 2k or 2k + 1)."""
    k, column = divmod(flat_index, 2)
    value = int(pairs[k, column])
    side, count, offsets = (
        ("candidate", n_cand, "cand_offsets") if column == 0 else ("reference", n_ref, "ref_offsets")
    )
    return ValueError(
        f"pairs[{k}, {column}] is {value}, not a {side} text index: {offsets} defines {count} {side} texts, so it must be in 0..{count - 1} (negative indices are not accepted)"
    )


def check_pairs_none(n_cand: int, n_ref: int) -> None:
    if n_cand != n_ref:
        raise ValueError(
            f"pairs=None scores candidate text i against reference text i, so cand_offsets and ref_offsets must define as many texts; got {n_cand} candidate and {n_ref} reference texts. Pass pairs (an (n_pairs, 2) int64 array of (candidate, reference) indices) to choose the pairs."
        )


def as_weights(weights: Any, name: str, n_rows: int, rows_name: str) -> np.ndarray:
    """``weights`` as a C-contiguous float32 vector of one weight per row of ``rows_name``."""
    try:
        arr = np.asarray(weights)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be None or a 1-D float32 array with one weight per row of {rows_name}; could not read it as an array: {exc}"
        ) from exc
    if arr.dtype.kind != "f" or arr.dtype.itemsize not in (4, 8):  # float32/float64 of either byte order
        raise TypeError(
            f"{name} has dtype {arr.dtype}; expected float32 (float64 is converted). Convert it with np.asarray({name}, dtype=np.float32)."
        )
    if arr.ndim != 1 or arr.shape[0] != n_rows:
        raise ValueError(
            f"{name} must be 1-D with one weight per row of {rows_name}, length len({rows_name}) = {n_rows}; got shape {arr.shape}"
        )
    return np.ascontiguousarray(arr, dtype=_FLOAT32)
