"""The output file of ``simkernel score``: written chunk by chunk beside OUT, renamed onto it when complete.

While a run scores, its output grows in a folder beside OUT, ``.<OUT's name>.simkernel-partial/``::

    output.part          CSV, TSV, JSONL: the header and the rows committed so far
    chunk-000000.parquet Parquet: one file per committed chunk (merged into one file at the end)

(what the output format keeps is its module's :class:`~simkernel.tables.table_format.OutputParts`)
    scores.f64           the committed rows' scores, float64 little-endian, row after row (each row's
                         score columns in turn; for the summary on resume)
    state.json           what the run is (input and options) and how much of it is committed
    lock                 held (flock) by the run writing the folder

A chunk is committed by appending its rows and scores, flushing them to disk, then replacing
``state.json`` (write to a temporary name, fsync, rename): a run killed at any moment, SIGKILL included,
leaves a state that names only rows that are completely on disk. ``--resume`` truncates the files to that
state and goes on from the next chunk; chunks are cut the same way every time, so the finished OUT is
byte for byte what an uninterrupted run writes. Only when every row is in does the output replace OUT
(``os.replace``, atomic on one filesystem); until then OUT is untouched, absent or the old file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sys
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from simkernel.errors import DataError, UsageError
from simkernel.tables.table_format import human_size
from simkernel.tables.writers import OutputLayout

STATE_VERSION = 1
SUFFIX = ".simkernel-partial"
_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def partial_dir(out: str | Path) -> Path:
    """The folder that holds OUT's output while it is written."""
    path = Path(out)
    return path.parent / f".{path.name}{SUFFIX}"


class PartialOutput:
    """OUT written chunk by chunk (see the module docstring). ``fingerprint`` identifies the run (input
    file and every option that changes the output); ``resume`` continues a matching earlier run;
    ``total_rows`` (the input's rows) sizes the space a full disk's error asks for."""

    def __init__(
        self,
        out: str,
        layout: OutputLayout,
        fingerprint: dict[str, Any],
        resume: bool,
        notice: Callable[[str], None],
        total_rows: int | None = None,
    ) -> None:
        self.out = Path(out)
        self.layout = layout
        self.fingerprint = fingerprint
        self.folder = partial_dir(out)
        self.rows_done = 0
        self.resumed_rows = 0
        self.chunks_done = 0
        self.total_rows = total_rows  # the input's rows, when known: sizes what a full disk needs
        self.scores = array("d")
        self._lock: Any = None
        self._parts = layout.table_format.parts(self.folder)
        self._scores_file: Any = None
        self._committed_bytes = self._committed_rows = 0  # as the last state.json says
        try:
            self._open(resume, notice)
        except OSError as exc:
            self._close_files()
            raise DataError(
                f"cannot write output {str(self.out)!r}: {exc.strerror or exc} ({self.folder}); check the folder exists and is writable"
            ) from None

    # -- starting -----------------------------------------------------------------------------------

    def _open(self, resume: bool, notice: Callable[[str], None]) -> None:
        self.folder.mkdir(exist_ok=True)
        self._take_lock()
        state = self._read_state()
        if resume and state is not None:
            self._check_same_run(state)
            self._continue(state)
            return
        if state is not None or any(p.name != "lock" for p in self.folder.iterdir()):
            rows = state.get("rows", 0) if state else 0
            notice(
                f"replacing the unfinished output of an earlier run of {self.out} ({rows} rows) in "
                f"{self.folder}; pass --resume to continue such a run instead"
            )
        elif resume:
            notice(f"nothing to resume for {self.out}: scoring from the first row")
        self._start()

    def _take_lock(self) -> None:
        self._lock = open(self.folder / "lock", "a+b")  # noqa: SIM115 - held for the whole run
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory lock
            return
        try:
            fcntl.flock(self._lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            self._lock = None
            raise DataError(
                f"another simkernel score is writing {self.out} now (it holds {self.folder / 'lock'}); wait for it to finish, or write to another --output"
            ) from None

    def _read_state(self) -> dict[str, Any] | None:
        try:
            state = json.loads((self.folder / "state.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) and state.get("version") == STATE_VERSION else None

    def _check_same_run(self, state: dict[str, Any]) -> None:
        before = state.get("fingerprint") or {}
        differ = sorted(
            k for k in set(before) | set(self.fingerprint) if before.get(k) != self.fingerprint.get(k)
        )
        if differ:
            raise UsageError(
                f"--resume: the unfinished output in {self.folder} was made with another input or other options (differing: {', '.join(differ)}); run the same command as before, or drop --resume to start over"
            )

    def _start(self) -> None:
        for entry in self.folder.iterdir():
            if entry.name == "lock":
                continue
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        self._scores_file = open(self.folder / "scores.f64", "w+b")  # noqa: SIM115
        self._parts.start(self.layout.header())
        self._sync()
        self._write_state()

    def _continue(self, state: dict[str, Any]) -> None:
        self.rows_done = self._committed_rows = int(state["rows"])
        self._committed_bytes = int(state["bytes"])
        self.chunks_done = int(state["chunks"])
        self._scores_file = open(self.folder / "scores.f64", "r+b")  # noqa: SIM115
        size = 8 * self.layout.width * self.rows_done
        self._scores_file.truncate(size)
        self._scores_file.seek(0)
        data = self._scores_file.read()
        if len(data) != size:
            raise DataError(
                f"--resume: {self.folder / 'scores.f64'} is shorter than its state says; drop --resume to start over"
            )
        self.scores = array("d", np.frombuffer(data, dtype="<f8"))
        self.resumed_rows = self.rows_done
        self._scores_file.seek(0, os.SEEK_END)
        self._parts.resume(state)

    # -- committing ---------------------------------------------------------------------------------

    def commit(self, payload: Any, scores: list[Any]) -> None:
        """Add one scored chunk: its output (bytes, or a pyarrow Table for Parquet) and its scores (one
        number a row, or one tuple a row for several score columns)."""
        try:
            self._parts.commit(payload, self.chunks_done)
            flat = self.layout.flat(scores)
            self._scores_file.write(np.asarray(flat, dtype="<f8").tobytes())
            self._sync()
            self.rows_done += len(scores)
            self.chunks_done += 1
            self.scores.extend(flat)
            self._write_state()
        except OSError as exc:
            pending = len(payload) if isinstance(payload, bytes) else int(getattr(payload, "nbytes", 0))
            raise self._write_failure(exc, pending, len(scores)) from None

    def _sync(self) -> None:
        self._parts.sync()
        if self._scores_file is not None:
            self._scores_file.flush()
            os.fsync(self._scores_file.fileno())

    def _write_state(self) -> None:
        size = self._parts.state()["bytes"]
        state = {
            "version": STATE_VERSION,
            "fingerprint": self.fingerprint,
            "rows": self.rows_done,
            "chunks": self.chunks_done,
            "bytes": size,
        }
        tmp = self.folder / "state.json.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.folder / "state.json")
        self._committed_bytes, self._committed_rows = size, self.rows_done

    # -- finishing ----------------------------------------------------------------------------------

    def finish(self) -> None:
        """Put the complete output onto OUT (atomically) and remove the folder."""
        try:
            final = self._parts.finish(self.layout.empty())
            os.replace(final, self.out)
        except OSError as exc:
            raise self._write_failure(exc, 0, 0, finishing=True) from None
        self._close_files()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _written_bytes(self) -> int:
        """Bytes of output committed so far (the text file, or the Parquet parts)."""
        return self._parts.written_bytes()

    def _write_failure(
        self, exc: OSError, pending_bytes: int, pending_rows: int, finishing: bool = False
    ) -> DataError:
        """The one-line error of a failed write. For a full disk or the file size limit it says how much the
        output needs, estimated from the bytes per row written so far (or of the chunk that failed), and
        whether ``--resume`` can continue (committed rows are kept)."""
        if exc.errno not in _NO_SPACE and exc.errno != errno.EFBIG:
            return DataError(f"cannot write output {str(self.out)!r}: {exc.strerror or exc}")
        written, committed = self._written_bytes(), self._committed_rows
        rows = committed + pending_rows
        per_row = (written + pending_bytes) / rows if rows else 0.0
        total = max(self.total_rows or 0, committed)
        # the text file grows to its full size; Parquet's parts are merged into one more file at the end
        whole = per_row * total
        more = whole if finishing else whole - written
        done = f"{committed:,} of {total:,} rows written"
        resume = (
            f"; then rerun the same command with --resume to continue after row {committed:,}"
            if committed
            else ""
        )
        if exc.errno == errno.EFBIG:
            return DataError(
                f"writing the output {str(self.out)!r} exceeds this process's file size limit (`ulimit -f`): it needs about {human_size(whole)} in one file ({done}); raise the limit{resume}"
            )
        return DataError(
            f"no space left on the disk of {str(self.folder.parent)!r} for the output {str(self.out)!r}: it needs about {human_size(more)} more ({done}, {human_size(written)} so far); free some space or write --output to a larger disk{resume}"
        )

    def keep_for_resume(self) -> None:
        """Stop writing, keeping what is committed for ``--resume`` (after an interruption)."""
        self._close_files()

    def discard(self) -> None:
        """Stop writing and remove the folder (after an error that a rerun would meet again)."""
        self._close_files()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _close_files(self) -> None:
        self._parts.close()
        for name in ("_scores_file", "_lock"):
            handle = getattr(self, name)
            if handle is not None:
                with contextlib.suppress(OSError):
                    handle.close()
                setattr(self, name, None)


def print_notice(message: str) -> None:
    """A one-line notice on stderr."""
    print(f"simkernel: note: {message}", file=sys.stderr, flush=True)
