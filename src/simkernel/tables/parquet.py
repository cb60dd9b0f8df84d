"""Parquet input and output of ``simkernel score`` through pyarrow (the ``parquet`` extra, imported here).

Input is read in record batches and cut into chunks of exactly ``chunk_rows`` rows; each chunk keeps its
rows as a pyarrow Table, so Parquet output keeps every input column with its type. Output is written one
row group per chunk. The score column is ``float32`` in ``sas`` mode (the evaluators' float32 scores),
``float64`` in ``reference`` mode (the metric's Python floats) and ``int64`` in ``exact`` mode (0 or 1);
``success`` is ``bool``. From CSV/TSV input every input column is a string; from JSONL each column gets
the type its values share (integers and floats become float64; text and numbers mixed in one column are
an error before the model loads, since a Parquet column has one type).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from simkernel._optional import import_optional
from simkernel.errors import DataError
from simkernel.tables.chunk import Chunk


def pyarrow(feature: str = "reading and writing Parquet files") -> Any:
    """The pyarrow module, or an error naming ``pip install 'simkernel[parquet]'``."""
    return import_optional("pyarrow", "parquet", feature)


def _pq() -> Any:
    pyarrow()
    import pyarrow.parquet as pq

    return pq


def parquet_columns(path: str, source: str) -> list[str]:
    """Column names of the Parquet file ``path`` (an error naming ``source`` if it is not one)."""
    return list(_open(path, source).schema_arrow.names)


def parquet_rows(path: str, source: str) -> int:
    """The rows of the Parquet file ``path`` (from its metadata)."""
    return int(_open(path, source).metadata.num_rows)


def _open(path: str, source: str) -> Any:
    pa, pq = pyarrow(), _pq()
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{source} is not a readable Parquet file ({exc}); check the file") from None


def parquet_chunks(path: str, chunk_rows: int, skip_rows: int = 0) -> Iterator[Any]:
    """:class:`~simkernel.tables.chunk.Chunk` s of exactly ``chunk_rows`` rows (the last fewer), each with its
    rows as Python values and as a pyarrow Table; row numbers are 1-based."""

    pa = pyarrow()
    handle = _open(path, path)
    pending: list[Any] = []
    pending_rows = 0
    index = 0  # rows of the input before the first pending one

    def chunk_of(table: Any, first: int) -> Chunk:
        rows = table.to_pylist()
        return Chunk(rows, list(range(first + 1, first + 1 + len(rows))), first, table)

    for batch in handle.iter_batches(batch_size=max(1, min(chunk_rows, 65536))):
        if index + pending_rows + batch.num_rows <= skip_rows:
            index += batch.num_rows
            continue
        if index < skip_rows:  # a batch that straddles the resume point
            batch = batch.slice(skip_rows - index)
            index = skip_rows
        pending.append(batch)
        pending_rows += batch.num_rows
        while pending_rows >= chunk_rows:
            table = pa.Table.from_batches(pending).combine_chunks()
            head, rest = table.slice(0, chunk_rows), table.slice(chunk_rows)
            yield chunk_of(head, index)
            index += chunk_rows
            pending = rest.to_batches() if rest.num_rows else []
            pending_rows = rest.num_rows
    if pending_rows:
        yield chunk_of(pa.Table.from_batches(pending).combine_chunks(), index)


def input_schema(columns: Sequence[str], fmt: str, inferred: Any = None) -> Any:
    """The pyarrow schema of text input's ``columns``, in their order: every column a string for CSV/TSV,
    for JSONL the types :func:`unify` inferred from the values (None when there were no rows)."""
    pa = pyarrow()
    if fmt in ("csv", "tsv"):
        return pa.schema([(name, pa.string()) for name in columns])
    if inferred is None:
        return None
    return pa.schema([inferred.field(name) for name in columns])


def unify(schema: Any, rows: list[dict[str, Any]], columns: Sequence[str], source: str) -> Any:
    """``schema`` widened to hold ``rows`` (JSONL values): integers and floats become float64, a column
    with only nulls so far takes the type of its first values; other mixes are an error."""
    pa = pyarrow()
    try:
        table = pa.Table.from_pylist([{name: row.get(name) for name in columns} for row in rows])
        if schema is None:
            return table.schema
        widened = pa.unify_schemas([schema, table.schema], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise DataError(
            f"{source}: a column holds values of different kinds ({exc}); a Parquet column has one type: write CSV or JSONL output instead, or give the column one kind of value"
        ) from None
    return widened


def output_table(
    chunk: Any,
    schema: Any,
    score_columns: Sequence[tuple[str, str]],
    scores: Sequence[Sequence[Any]],
    successes: Sequence[bool] | None,
) -> Any:
    """The chunk's rows as a pyarrow Table (input types kept) with the score columns ((name, Arrow type)
    each, ``scores`` one list per column) and the success column added."""
    pa = pyarrow()
    if chunk.arrow is not None:
        table = chunk.arrow
    else:
        table = pa.Table.from_pylist(chunk.rows, schema=schema)
    for (name, kind), values in zip(score_columns, scores, strict=True):
        table = table.append_column(name, pa.array(values, type=getattr(pa, kind)()))
    if successes is not None:
        table = table.append_column("success", pa.array(successes, type=pa.bool_()))
    return table


def empty_table(schema: Any, score_columns: Sequence[tuple[str, str]], with_success: bool) -> Any:
    """A table with no rows and the output's columns (for an input with no rows)."""
    pa = pyarrow()
    fields = list(schema) if schema is not None else []
    fields.extend(pa.field(name, getattr(pa, kind)()) for name, kind in score_columns)
    if with_success:
        fields.append(pa.field("success", pa.bool_()))
    return pa.schema(fields).empty_table()


def write_part(table: Any, path: str) -> None:
    """One chunk as a Parquet file (one row group)."""
    _pq().write_table(table, path, row_group_size=max(1, table.num_rows))


def read_part(path: str) -> Any:
    return _pq().read_table(path)


class StreamWriter:
    """Parquet written to a file object one row group per :meth:`write` (the schema of the first table)."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self.writer: Any = None

    def write(self, table: Any) -> None:
        if self.writer is None:
            self.writer = _pq().ParquetWriter(self.sink, table.schema)
        self.writer.write_table(table, row_group_size=max(1, table.num_rows))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
