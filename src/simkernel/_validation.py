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


def offsets_error(offsets: np.ndarray, index: int, n_refs: int) -> ValueError:
    """The ValueError for offsets that ``sk_check_offsets`` rejected at ``index``."""
    n = offsets.shape[0] - 1
    value = int(offsets[index])
    if index == 0 and value != 0:
        why = f"offsets[0] is {value}; expected 0"
    elif value > n_refs:
        why = f"offsets[{index}] is {value}, beyond len(refs) = {n_refs}"
    elif index > 0 and value < int(offsets[index - 1]):
        previous = int(offsets[index - 1])
        why = f"offsets[{index}] is {value}, less than offsets[{index - 1}] = {previous} (must not decrease)"
    else:
        why = f"offsets[{n}] (the last) is {value}; expected len(refs) = {n_refs}"
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
