"""The keyword arguments of sentence-transformers' ``SentenceTransformer.encode`` on
:meth:`~simkernel.runtime.inference.text_encoder.BundleTextEncoder.encode`, and ``similarity``.

What sentence-transformers code passes works unchanged: ``batch_size``, ``show_progress_bar`` (a one-line
bar on stderr once the call is done), ``convert_to_numpy`` (``False``: a list of 1-D arrays, as
sentence-transformers gives a list of 1-D tensors), ``normalize_embeddings`` and a single string (one 1-D
vector). ``convert_to_tensor=True`` is refused: there is no torch at run time.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from simkernel.runtime.inference.pooling import l2_normalize


def resolve_normalize(normalize: bool | None, normalize_embeddings: bool | None) -> bool:
    """simkernel's ``normalize`` (default True) or sentence-transformers' ``normalize_embeddings``."""
    if normalize is not None and normalize_embeddings is not None and normalize != normalize_embeddings:
        raise ValueError(
            f"normalize={normalize!r} and normalize_embeddings={normalize_embeddings!r} disagree; pass only one of them (normalize_embeddings is sentence-transformers' name for normalize)"
        )
    chosen = normalize_embeddings if normalize_embeddings is not None else normalize
    return True if chosen is None else bool(chosen)


def check_output(convert_to_numpy: bool, convert_to_tensor: bool) -> None:
    if convert_to_tensor:
        raise ValueError(
            "convert_to_tensor=True is not supported: simkernel runs without torch and returns numpy arrays; use convert_to_numpy=True (one ndarray, the default) or convert_to_numpy=False (a list of 1-D arrays)"
        )


def as_text_list(texts: str | Iterable[str]) -> tuple[Iterable[str], bool]:
    """The texts of a call, and whether a single string was given (then one 1-D vector is returned)."""
    if isinstance(texts, str):
        return [texts], True
    return texts, False


def shape_output(matrix: np.ndarray, single: bool, convert_to_numpy: bool) -> Any:
    """sentence-transformers' output forms: (n, dim), a list of n (dim,) rows, or one (dim,) vector."""
    if single:
        return matrix[0]
    return matrix if convert_to_numpy else list(matrix)


def progress_line(count: int, batch_size: int, started: float) -> None:
    """The ``show_progress_bar=True`` bar: one line on stderr when the call is done."""
    batches = -(-count // batch_size)
    print(
        f"Batches: 100%|{'#' * 20}| {batches}/{batches} [{time.perf_counter() - started:.2f}s, {count} texts]",
        file=sys.stderr,
        flush=True,
    )


def prepare(
    texts: str | Iterable[str],
    normalize: bool | None,
    normalize_embeddings: bool | None,
    convert_to_numpy: bool,
    convert_to_tensor: bool,
) -> tuple[Iterable[str], bool, bool]:
    """(the texts, whether one string was given, whether to normalise) of a call, its options checked."""
    check_output(convert_to_numpy, convert_to_tensor)
    unit = resolve_normalize(normalize, normalize_embeddings)
    items, single = as_text_list(texts)
    return items, single, unit


def finish(
    matrix: np.ndarray,
    single: bool,
    convert_to_numpy: bool,
    progress: bool | None,
    batch_size: int,
    started: float,
) -> Any:
    """The call's output in the form asked for, after the progress line when asked."""
    if progress:
        progress_line(len(matrix), batch_size, started)
    return shape_output(matrix, single, convert_to_numpy)


def cosine_matrix(a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> np.ndarray:
    """Cosine similarity of every row of ``a`` with every row of ``b``: float32 (len(a), len(b)), as
    sentence-transformers' default ``similarity`` (rows scaled to unit length, eps 1e-12, then a @ b.T).
    1-D inputs count as one row; a list of 1-D arrays is stacked."""
    left, right = _rows(a, "a"), _rows(b, "b")
    if left.shape[1] != right.shape[1]:
        raise ValueError(
            f"similarity needs embeddings of one dimension, got {left.shape[1]} (a) and {right.shape[1]} (b)"
        )
    return l2_normalize(left) @ l2_normalize(right).T


def _rows(x: Sequence | np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(np.stack(x) if isinstance(x, list) and x else x, dtype=np.float32)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ValueError(f"similarity takes 1-D or 2-D embeddings, got {name} of shape {array.shape}")
    return array
