"""An input already split into many files: a folder or a glob of Parquet, CSV or TSV files that
``simkernel score --engine ray`` reads on the cluster's nodes (:mod:`simkernel.ray.score_files`).

The files are taken in sorted order (of their paths), and each one's rows in file order; together they are
one table, as if concatenated. Every file must have the same columns (Parquet: the same schema), checked
here from the headers (Parquet: the footers) before any work. In a folder, files with another extension
(``_SUCCESS``, ``.crc``) and hidden files are left out; a glob must match only tables of one format.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

from simkernel.errors import DataError, UsageError
from simkernel.tables.formats import STDIO, format_of, table_format


@dataclass
class FileSet:
    """The files (absolute paths, sorted), their format, the columns they share and, for Parquet, the
    arrow schema they share (without metadata)."""

    source: str
    files: list[str]
    format: str
    columns: list[str]
    schema: Any = None

    def fingerprint(self) -> dict[str, Any]:
        """What identifies the input for ``--resume``: every file's name, size and modification time."""
        stats = [(os.path.relpath(f, os.path.dirname(self.files[0])), *_stat(f)) for f in self.files]
        digest = hashlib.sha256(json.dumps(stats).encode("utf-8")).hexdigest()
        return {
            "input": os.path.abspath(self.source),
            "input_bytes": sum(s[1] for s in stats),
            "input_mtime_ns": max(s[2] for s in stats),
            "input_files": digest,
            "input_format": self.format,
        }


def is_file_set(path: str) -> bool:
    """Whether ``path`` names a folder, or is a glob pattern (not an existing file)."""
    if path == STDIO or os.path.isfile(path):
        return False
    return os.path.isdir(path) or any(c in path for c in "*?[")


def open_file_set(path: str, fmt: str | None) -> FileSet:
    """The files ``path`` names, checked to be tables of one format with the same columns."""
    files = _listed(path, fmt)
    formats = {format_of(f, fmt) for f in files}
    if len(formats) > 1:
        raise DataError(
            f"{path} holds files of several formats ({', '.join(sorted(str(f) for f in formats))}); give a folder or glob of one format"
        )
    found = formats.pop()
    if found is None or not table_format(found).read_on_nodes:
        raise UsageError(
            f"--engine ray reads a folder or glob of Parquet, CSV or TSV files, not {found}; convert them, or score each file on its own"
        )
    kind = table_format(found)
    columns, schema = kind.header_columns(files[0])
    for name in files[1:]:
        other, other_schema = kind.header_columns(name)
        if other != columns or (schema is not None and not other_schema.equals(schema)):
            raise DataError(
                f"{name} has other columns than {files[0]} ({', '.join(other)} against {', '.join(columns)}); every file of {path} needs the same columns"
            )
    return FileSet(path, files, found, columns, schema)


def _listed(path: str, fmt: str | None) -> list[str]:
    if os.path.isdir(path):
        names = [os.path.join(path, n) for n in os.listdir(path) if not n.startswith((".", "_"))]
        files = [n for n in names if os.path.isfile(n) and (fmt or _known(n))]
    else:
        files = [n for n in glob.glob(path) if os.path.isfile(n)]
        for name in files:
            format_of(name, fmt)  # an unknown extension is a usage error naming it
    if not files:
        raise DataError(
            f"{path} names no CSV, TSV or Parquet file; check the folder or the glob (quote it, so that the shell does not expand it)"
        )
    return sorted(os.path.abspath(f) for f in files)


def _known(name: str) -> bool:
    try:
        return format_of(name) is not None
    except UsageError:
        return False


def _stat(name: str) -> tuple[int, int]:
    stat = os.stat(name)
    return stat.st_size, stat.st_mtime_ns
