"""Reading text columns from a Ray Data batch and adding an output column, whatever the batch format.

A batch is a pandas DataFrame (``batch_format="pandas"``), a pyarrow Table (``"pyarrow"``) or a dict of
numpy arrays (``"numpy"``, Ray's default). Cells come out as Python values: strings, and lists of
strings for list columns (pandas and numpy hold those as arrays, pyarrow as list arrays).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np


def _kind(batch: Any) -> str:
    if isinstance(batch, dict):
        return "numpy"
    module = type(batch).__module__
    if module.startswith("pandas"):
        return "pandas"
    if module.startswith("pyarrow"):
        return "pyarrow"
    raise TypeError(
        f"a batch must be a pandas DataFrame, a pyarrow Table or a dict of numpy arrays, got {type(batch).__name__}; pass batch_format='pandas', 'pyarrow' or 'numpy' to map_batches"
    )


def _names(batch: Any) -> list[str]:
    kind = _kind(batch)
    if kind == "numpy":
        return list(batch)
    if kind == "pandas":
        return [str(c) for c in batch.columns]
    return list(batch.column_names)


def column(batch: Any, name: str, role: str) -> list[Any]:
    """The values of column ``name`` as Python values (lists for list cells); a clear error if missing."""
    if name not in _names(batch):
        raise KeyError(
            f"the batch has no column {name!r} (columns: {', '.join(_names(batch)) or 'none'}); name the column of the {role} with {role.replace(' ', '_')}=..."
        )
    kind = _kind(batch)
    if kind == "pyarrow":
        return batch.column(name).to_pylist()
    values = batch[name].tolist() if kind == "pandas" else np.asarray(batch[name], dtype=object).tolist()
    return [_plain(v) for v in values]


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def texts(values: list[Any], name: str) -> list[str]:
    """``values`` checked to be strings (the error names the column and row)."""
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(f"column {name!r} row {i} holds {type(value).__name__} ({value!r}), not a text")
    return values


def text_lists(values: list[Any], name: str) -> list[list[str]]:
    """Lists of strings (a string holding a JSON list is read as one, as the command line reads CSV)."""
    out = []
    for i, value in enumerate(values):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise ValueError(
                    f"column {name!r} row {i} is a string but not a JSON list of texts: {value[:60]!r}"
                ) from None
        if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
            raise ValueError(f"column {name!r} row {i} must be a list of texts, got {value!r}")
        out.append(value)
    return out


def with_column(batch: Any, name: str, values: np.ndarray) -> Any:
    """``batch`` with the column ``name`` added (or replaced) holding ``values``: a 1-d array gives a
    scalar column of its dtype, a 2-d (rows, dim) array a column of fixed-size lists (pyarrow) / arrays."""
    kind = _kind(batch)
    if kind == "numpy":
        return {**batch, name: values}
    if kind == "pandas":
        out = batch.copy(deep=False)
        out[name] = list(values) if values.ndim == 2 else values
        return out
    import pyarrow as pa

    if values.ndim == 2:
        flat = pa.array(np.ascontiguousarray(values).reshape(-1))
        array = pa.FixedSizeListArray.from_arrays(flat, values.shape[1])
    else:
        array = pa.array(values)
    if name in batch.column_names:
        return batch.set_column(batch.column_names.index(name), name, array)
    return batch.append_column(name, array)


def rows(batch: Any) -> int:
    kind = _kind(batch)
    if kind == "numpy":
        return len(next(iter(batch.values()))) if batch else 0
    return len(batch) if kind == "pandas" else batch.num_rows
