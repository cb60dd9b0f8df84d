"""Parquet: input and output of ``simkernel score`` through pyarrow (the ``parquet`` extra, imported here).

Input is read in record batches and cut into chunks of exactly ``chunk_rows`` rows; each chunk keeps its
rows as a pyarrow Table, so Parquet output keeps every input column with its type. Output is written one
row group per chunk. The score column is ``float32`` in ``sas`` mode (the evaluators' float32 scores),
``float64`` in ``reference`` mode (the metric's Python floats) and ``int64`` in ``exact`` mode (0 or 1);
``success`` is ``bool``. From CSV/TSV input every input column is a string; from JSONL each column gets
the type its values share (integers and floats become float64; text and numbers mixed in one column are
an error before the model loads, since a Parquet column has one type).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from simkernel._optional import import_optional
from simkernel.errors import DataError
from simkernel.tables.chunk import Chunk
from simkernel.tables.table_format import OutputParts, TableFormat, duplicate_names


def pyarrow(feature: str = "reading and writing Parquet files") -> Any:
    """The pyarrow module, or an error naming ``pip install 'simkernel[parquet]'``."""
    return import_optional("pyarrow", "parquet", feature)


def _pq() -> Any:
    pyarrow()
    import pyarrow.parquet as pq

    return pq


def parquet_columns(path: str, source: str) -> list[str]:
    """Column names of the Parquet file ``path`` (an error naming ``source`` if it is not one; checked)."""
    return _checked_names(_open(path, source).schema_arrow.names, source)


def _checked_names(names: Sequence[str], source: str) -> list[str]:
    """A file's column names, none twice (a row of Python values would keep only the last one's)."""
    duplicates = duplicate_names(names)
    if duplicates:
        raise DataError(f"{source}: duplicate column names {duplicates}; give each column its own name")
    return list(names)


def arrow_rows(table: Any) -> list[dict[str, Any]]:
    """The rows of the Arrow ``table`` as Python values, each value as the file holds it: a float32 (or
    a float32 inside a list or a struct) becomes the float64 of its shortest float32 text (0.1, not
    0.10000000149011612, which CSV and JSONL output would write and a text column would score)."""
    pa = pyarrow()
    widened = [_float32_as(pa, field.type, pa.float64()) for field in table.schema]
    if all(kind is None for kind in widened):
        return table.to_pylist()
    columns = []
    for column, field, kind in zip(table.columns, table.schema, widened, strict=True):
        if kind is not None:  # Arrow's cast to text gives each float32's shortest spelling
            column = column.cast(_float32_as(pa, field.type, pa.string())).cast(kind)
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names).to_pylist()


def _float32_as(pa: Any, kind: Any, target: Any) -> Any:
    """``kind`` with each float32 in it replaced by ``target``, or None where it holds no float32."""
    types = pa.types
    if types.is_float32(kind):
        return target
    if types.is_list(kind) or types.is_large_list(kind):
        inner = _float32_as(pa, kind.value_type, target)
        if inner is None:
            return None
        return pa.list_(inner) if types.is_list(kind) else pa.large_list(inner)
    if types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        inner_types = [_float32_as(pa, f.type, target) for f in fields]
        if all(t is None for t in inner_types):
            return None
        return pa.struct(
            [f.with_type(t) if t is not None else f for f, t in zip(fields, inner_types, strict=True)]
        )
    return None


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
        rows = arrow_rows(table)
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


def input_schema(columns: Sequence[str], source: TableFormat, inferred: Any = None) -> Any:
    """The pyarrow schema of text input's ``columns``, in their order: every column a string for CSV/TSV,
    for JSONL (keyed rows) the types :func:`unify` inferred from the values (None when there were no rows)."""
    pa = pyarrow()
    if not source.keyed_rows:
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


def output_table(chunk: Any, schema: Any, added: Sequence[tuple[str, str, Sequence[Any]]]) -> Any:
    """The chunk's rows as a pyarrow Table (input types kept) with the ``added`` columns ((name, Arrow
    type, values) each: the scores, and ``bool`` success) after them."""
    pa = pyarrow()
    if chunk.arrow is not None:
        table = chunk.arrow
    else:
        table = pa.Table.from_pylist(chunk.rows, schema=schema)
    for name, kind, values in added:
        table = table.append_column(name, pa.array(values, type=_arrow_type(pa, kind)))
    return table


def empty_table(schema: Any, added: Sequence[tuple[str, str]]) -> Any:
    """A table with no rows and the output's columns (for an input with no rows)."""
    pa = pyarrow()
    fields = list(schema) if schema is not None else []
    fields.extend(pa.field(name, _arrow_type(pa, kind)) for name, kind in added)
    return pa.schema(fields).empty_table()


def _arrow_type(pa: Any, kind: str) -> Any:
    return pa.bool_() if kind == "bool" else getattr(pa, kind)()


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


class ParquetFormat(TableFormat):
    """Parquet: typed columns kept from input to output, a cell may hold a list; positions count rows."""

    name = "parquet"
    title = "Parquet"
    extensions = (".parquet", ".pq")
    typed = True
    lists_in_cells = True
    read_on_nodes = True
    unit = "row"

    def require_support(self) -> None:
        pyarrow()

    def sniffs(self, head: bytes, text: str) -> bool:
        return head.startswith(b"PAR1")

    def columns(self, reader: Any) -> list[str]:
        return parquet_columns(reader.path, reader.source)

    def chunks(self, reader: Any, chunk_rows: int, skip_rows: int) -> Iterator[Chunk]:
        return parquet_chunks(reader.path, chunk_rows, skip_rows)

    def rows_at_most(self, path: str) -> int:
        return parquet_rows(path, path)

    def known_rows(self, path: str) -> int | None:
        return parquet_rows(path, path)

    def header_columns(self, path: str) -> tuple[list[str], Any]:
        try:
            schema = _pq().read_schema(path).remove_metadata()
        except (OSError, ValueError) as exc:
            raise DataError(f"{path} is not a readable Parquet file ({exc}); check the file") from None
        return _checked_names(schema.names, path), schema

    def render_chunk(
        self, chunk: Chunk, columns: Sequence[str], added: list[tuple[str, str, list[Any]]], schema: Any
    ) -> Any:
        return output_table(chunk, schema, added)

    def empty_output(self, added: list[tuple[str, str]], schema: Any) -> Any:
        return empty_table(schema, added)

    def output_schema(self, source: TableFormat, columns: Sequence[str], inferred: Any) -> Any:
        # typed input: its own schema (``inferred``), which an input without rows writes too
        return inferred if source.typed else input_schema(columns, source, inferred)

    def widen_schema(
        self, schema: Any, rows: list[dict[str, Any]], columns: Sequence[str], source: str
    ) -> Any:
        return unify(schema, rows, columns, source)

    def parts(self, folder: Path) -> OutputParts:
        return ParquetParts(folder)

    def stdout_writer(self, stream: Any) -> Any:
        return ParquetStdout(stream)

    def ray_dataset(self, ray: Any, files: list[str], columns: list[str]) -> Any:
        return ray.data.read_parquet(files, include_paths=True, partitioning=None, num_cpus=0)

    def exact_rows(self, path: str, columns: list[str]) -> int:
        return parquet_rows(path, path)


class ParquetParts(OutputParts):
    """One Parquet file per committed chunk (``chunk-000000.parquet``...), merged into one at the end."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.chunks = 0

    def _part(self, index: int) -> Path:
        return self.folder / f"chunk-{index:06d}.parquet"

    def resume(self, state: dict[str, Any]) -> None:
        self.chunks = int(state["chunks"])
        for part in self.folder.glob("chunk-*.parquet*"):
            if not part.name.endswith(".parquet") or int(part.stem.split("-")[1]) >= self.chunks:
                part.unlink()

    def commit(self, payload: Any, index: int) -> None:
        name = self._part(index)
        write_part(payload, str(name) + ".tmp")
        with open(str(name) + ".tmp", "rb") as part:
            os.fsync(part.fileno())
        os.replace(str(name) + ".tmp", name)
        self.chunks = index + 1

    def written_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.folder.glob("chunk-*.parquet"))

    def finish(self, empty: Any) -> Path:
        final = self.folder / "output.parquet"
        with open(final, "wb") as sink:
            writer = StreamWriter(sink)
            for index in range(self.chunks):
                writer.write(read_part(str(self._part(index))))
            if self.chunks == 0:
                writer.write(empty)
            writer.close()
            sink.flush()
            os.fsync(sink.fileno())
        return final


class ParquetStdout:
    """Parquet written to a binary stream one row group per chunk."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.writer = StreamWriter(stream)

    def write(self, payload: Any) -> None:
        self.writer.write(payload)

    def close(self, empty: Any) -> None:
        if self.writer.writer is None:
            self.writer.write(empty)
        self.writer.close()
        self.stream.flush()


PARQUET = ParquetFormat()
