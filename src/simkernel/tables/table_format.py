"""What every file format of :mod:`simkernel.tables` provides, and what they share.

A format is one module (:mod:`~simkernel.tables.delimited` for CSV and TSV, :mod:`~simkernel.tables.jsonl`,
:mod:`~simkernel.tables.parquet`) holding a :class:`TableFormat`: its reader, its writer, its resumable
output (:class:`OutputParts`, what :class:`simkernel.tables.partial.PartialOutput` keeps beside OUT) and
the checks of its columns; :mod:`simkernel.tables.formats` lists them. The batch engine asks a format
object, never a format's name.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from simkernel.errors import DataError, UsageError
from simkernel.tables.chunk import Chunk

STDIO = "-"


class OutputParts:
    """A format's output while it is written beside OUT (in ``folder``), committed chunk by chunk, as
    :class:`simkernel.tables.partial.PartialOutput` drives it."""

    def start(self, header: bytes) -> None:
        """Begin a new output (the folder is empty)."""

    def resume(self, state: dict[str, Any]) -> None:
        """Go on from what ``state`` (state.json) names, dropping anything written after it."""

    def commit(self, payload: Any, index: int) -> None:
        """Add chunk number ``index`` (its rendered output), on disk when this returns."""

    def sync(self) -> None:
        """Flush what was written to disk."""

    def state(self) -> dict[str, Any]:
        """What state.json records of the output (``bytes``: the committed size)."""
        return {"bytes": 0}

    def written_bytes(self) -> int:
        """Bytes of output committed so far."""
        return 0

    def finish(self, empty: Any) -> Path:
        """The complete output file (in the folder), to be renamed onto OUT; ``empty``: the format's
        table of an input without rows."""
        raise NotImplementedError

    def close(self) -> None:
        """Close any open file."""


class TableFormat:
    """One file format (see the module docstring). Traits:

    - ``keyed_rows``: the columns are the rows' keys (JSONL): known only once every row is read, and a
      cell holds a JSON value (a text stays a text; a list is a list);
    - ``typed``: the file carries a schema with the columns' types (Parquet), which the output keeps;
    - ``lists_in_cells``: a cell may hold a list (several ground truths, the references);
    - ``read_on_nodes``: a folder of such files can be read by Ray Data on a cluster's nodes;
    - ``unit``: what a position in the file counts, ``"line"`` or ``"row"``.
    """

    name: str = ""
    extensions: tuple[str, ...] = ()
    title = ""  # as help texts and messages write it ("CSV", "Parquet"); default: the name in capitals
    keyed_rows = False
    typed = False
    lists_in_cells = False
    read_on_nodes = False
    unit = "line"

    def require_support(self) -> None:
        """Raise :class:`~simkernel.errors.MissingDependencyError` naming the install command when the
        format needs an optional extra that is missing."""

    # -- reading ------------------------------------------------------------------------------------

    def sniffs(self, head: bytes, text: str) -> bool:
        """Whether stdin starting with ``head`` (``text``: decoded, leading blanks and BOM stripped) is
        in this format."""
        return False

    def columns(self, reader: Any) -> list[str]:
        """The columns of the opened ``reader`` (its header; checked)."""
        raise NotImplementedError

    def header_hint(self, columns: Sequence[str]) -> str | None:
        """Why a column the run needs is missing from ``columns``, where the header itself says (a
        delimited file read with the wrong delimiter comes out as one column), with the fix; else None."""
        return None

    def chunks(self, reader: Any, chunk_rows: int, skip_rows: int) -> Iterator[Chunk]:
        """The rows of ``reader`` in :class:`Chunk` s of exactly ``chunk_rows`` (the last fewer), the first
        ``skip_rows`` rows left out."""
        raise NotImplementedError

    def rows_at_most(self, path: str) -> int:
        """An upper bound of the rows of ``path`` (exact where the file says), read fast."""
        raise NotImplementedError

    def known_rows(self, path: str) -> int | None:
        """The exact rows of ``path`` where its metadata say (no reading of the rows), else None."""
        return None

    def header_columns(self, path: str) -> tuple[list[str], Any]:
        """(columns, arrow schema or None) of one file of a folder or glob (checked as a single file is)."""
        check_readable(path)
        reader = SimpleNamespace(path=path, source=path, columns=[])
        return list(self.columns(reader)), None

    # -- writing ------------------------------------------------------------------------------------

    def header(self, columns: Sequence[str]) -> bytes:
        """What a file of ``columns`` starts with before any row."""
        return b""

    def render_rows(self, rows: Iterable[dict[str, Any]], columns: Sequence[str], header: bool) -> bytes:
        """The bytes of ``rows`` (with the header when ``header``); a format without bytes per row raises."""
        raise UsageError(f"{self.name} output cannot be written as text rows; write CSV, TSV or JSONL")

    def render_chunk(
        self, chunk: Chunk, columns: Sequence[str], added: list[tuple[str, str, list[Any]]], schema: Any
    ) -> Any:
        """One scored chunk's output: its rows with the ``added`` columns ((name, Arrow type, values)
        each), ``columns`` every output column in order, ``schema`` a typed output's input columns."""
        rows = []
        for index, row in enumerate(chunk.rows):
            out = dict(row)
            for name, _, values in added:
                out[name] = values[index]
            rows.append(out)
        return self.render_rows(rows, columns, header=False)

    def empty_output(self, added: list[tuple[str, str]], schema: Any) -> Any:
        """The output of an input with no rows (``added``: the added columns, (name, Arrow type) each)."""
        return b""

    def output_schema(self, source: TableFormat, columns: Sequence[str], inferred: Any) -> Any:
        """The schema of the input columns in an output of this format from ``source`` input (None where
        the output has no schema); ``inferred``: the schema :meth:`widen_schema` inferred from keyed rows,
        or a typed input's own (:meth:`header_columns`), which the output keeps."""
        return None

    def widen_schema(
        self, schema: Any, rows: list[dict[str, Any]], columns: Sequence[str], source: str
    ) -> Any:
        """A typed output's schema widened to hold ``rows`` of a keyed-rows input (None: no schema)."""
        return None

    def parts(self, folder: Path) -> OutputParts:
        """Its resumable output in ``folder``."""
        raise NotImplementedError

    def stdout_writer(self, stream: Any) -> Any:
        """A writer of rendered chunks to the binary ``stream``: ``write(payload)``, ``close(empty)``."""
        return BytesWriter(stream)

    # -- Ray Data -----------------------------------------------------------------------------------

    def ray_dataset(self, ray: Any, files: list[str], columns: list[str]) -> Any:
        """A Ray Data dataset of ``files`` read on the nodes (with ``include_paths``)."""
        raise UsageError(f"Ray Data does not read {self.name} files on the nodes")

    def exact_rows(self, path: str, columns: list[str]) -> int:
        """The rows of ``path`` as :meth:`ray_dataset` reads them (run on a node)."""
        raise NotImplementedError


class BytesWriter:
    """Rendered chunks (bytes) written to a binary stream as they come."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, payload: bytes) -> None:
        self.stream.write(payload)
        self.stream.flush()

    def close(self, empty: Any) -> None:
        self.stream.flush()


@dataclass
class Table:
    """Rows of a file in input order.

    ``columns`` lists the column names in file order (for JSONL, the keys in the order first seen);
    ``rows[i]`` maps column name to value (strings for CSV/TSV, any JSON value for JSONL; a key a
    JSONL row lacks is absent); ``line_numbers[i]`` is the 1-based line on which row ``i`` starts.
    """

    columns: list[str]
    rows: list[dict[str, Any]]
    line_numbers: list[int]
    format: str
    source: str

    def __len__(self) -> int:
        return len(self.rows)


def check_readable(path: str) -> None:
    """DataError naming the fix for an input file that is missing, a folder, or cannot be read."""
    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise DataError(f"input file {path!r} does not exist; check the path (use - to read stdin)") from None
    except IsADirectoryError:
        raise DataError(f"input {path!r} is a directory; give a CSV, TSV, JSONL or Parquet file") from None
    except OSError as exc:
        raise DataError(f"cannot read input file {path!r}: {exc.strerror or exc}") from None


def duplicate_names(names: Iterable[str]) -> list[str]:
    """The names that occur more than once in ``names``, sorted (a table's columns must be unique)."""
    seen: set[str] = set()
    twice: set[str] = set()
    for name in names:
        (twice if name in seen else seen).add(name)
    return sorted(twice)


def check_output_paths(outputs: Mapping[str, str | os.PathLike[str] | None], inputs: Sequence[str]) -> None:
    """An error naming the fix for an output that could only fail, or do harm, once the work is done:
    ``outputs`` maps each option (``--output``, ``--summary-json``...) to its path (None: not given;
    ``-``: stdout). Checked before anything is read or scored:

    - DataError (the file system): the path is a directory, its folder does not exist or cannot be
      written, or the file exists and is read-only;
    - UsageError: the path is one of the ``inputs`` (or a link to one), or two options name one file.
    """
    given = [(option, os.fspath(path)) for option, path in outputs.items() if path is not None]
    given = [(option, path) for option, path in given if path != STDIO]
    for option, path in given:
        if os.path.isdir(path):
            raise DataError(
                f"{option} {path!r} is a directory; give the path of a file to write (a new name, or a file inside that directory)"
            )
        folder = os.path.dirname(path) or "."
        if not os.path.exists(folder):
            raise DataError(
                f"{option} {path!r}: its folder {folder!r} does not exist; create it first (mkdir -p {folder}) or write somewhere else"
            )
        if not os.path.isdir(folder):
            raise DataError(
                f"{option} {path!r}: {folder!r} is not a folder; give a path inside an existing folder"
            )
        if not os.access(folder, os.W_OK | os.X_OK):
            raise DataError(
                f"{option} {path!r}: its folder {folder!r} is not writable ({_why_not_writable(folder)}); choose a folder you can write to"
            )
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise DataError(
                f"{option} {path!r} exists and is not writable ({_why_not_writable(path)}); make it writable, or write somewhere else"
            )
        for source in inputs:
            if source != STDIO and _same_file(path, os.fspath(source)):
                raise UsageError(
                    f"{option} {path!r} is the input file {os.fspath(source)!r} (or a link to it), which writing it would replace; give {option} another path"
                )
    for index, (option, path) in enumerate(given):
        for other, other_path in given[:index]:
            if _same_file(path, other_path):
                raise UsageError(
                    f"{other} and {option} both name the file {path!r}, which would hold only the last one written; give each its own path"
                )


def _why_not_writable(path: str) -> str:
    try:
        read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        read_only = False
    return "a read-only file system" if read_only else "permission denied"


def _same_file(a: str, b: str) -> bool:
    """Whether the paths ``a`` and ``b`` name one file: the same path once links are resolved, or (both
    existing) the same file on disk (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def umask() -> int:
    """The process's file-creation mask."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it onto ``path``."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise DataError(
            f"cannot write output {str(path)!r}: {exc.strerror or exc}; check the folder exists"
        ) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise DataError(f"cannot write output {str(path)!r}: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def human_size(n: float) -> str:
    """``n`` bytes for people: "512 B", "3.4 KB", "1.2 GB" (powers of 1024)."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"
