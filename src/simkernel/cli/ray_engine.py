"""``simkernel score --engine ray``: the scoring spread over the workers of a Ray cluster, through Ray Data.

The driver (this process) reads and checks the input as the local engine does, then puts the rows' texts
into Ray's object store as blocks (pyarrow tables with the row's number, the predicted text and its
ground truth or references), cut so that there are several blocks per worker (Ray Data hands work out by
blocks: one block would run on one worker) and no block spans two chunks. ``map_batches`` runs
:class:`simkernel.ray.SASScorer` or :class:`simkernel.ray.ReferenceMatchScorer` on ``--workers`` actors
of ``--threads`` CPUs each (default 1), with ``preserve_order`` on, and the driver regroups the scored
blocks into the chunks it writes, checking that every row comes back once and in input order. A worker
process that dies is restarted by Ray and its blocks are retried, so the output is complete either way.

The scorers run the code the local engine runs (``SASEvaluator``, the metrics' reference match), and a
row's score does not depend on its batch-mates: the output equals the local engine's, byte for byte.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import sys
from collections.abc import Iterator
from typing import Any

from simkernel.cli.errors import DataError
from simkernel.cli.modes import DEFAULT_BATCH_SIZE, DEFAULT_PRECISION
from simkernel.cli.rows import ChunkInputs
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL

BLOCKS_PER_WORKER = 4  # enough blocks that a slow or restarted worker does not hold up the others
MIN_BLOCK_ROWS = 16
ACTOR_START_TIMEOUT_S = 900  # a worker's start: Ray's worker process, the model fetched and loaded


class RayEngine:
    """Scores chunks on a Ray cluster (see the module docstring); ``load()`` connects to it."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.mode = args.mode
        self.model = args.model or DEFAULT_MODEL
        self.precision = args.precision or DEFAULT_PRECISION
        self.batch_size = args.batch_size or DEFAULT_BATCH_SIZE
        self.aggregation = args.aggregation or "max"
        self.address = args.address
        self.cpus = args.threads or 1
        self.workers = args.workers
        self.chunk_rows = args.chunk_rows
        self.notes: list[str] = []
        self._ray: Any = None
        self._native_log: NativeStderr | None = None

    @property
    def description(self) -> str:
        mode = f"mode reference ({self.aggregation})" if self.mode == "reference" else "mode sas"
        where = f"Ray cluster {self.address}" if self.address else "Ray on this machine"
        workers = f"{self.workers} worker{'s' if self.workers != 1 else ''}" if self.workers else "workers"
        return f"{mode}, model {self.model} ({self.precision}), {where}: {workers} x {self.cpus} CPU"

    def load(self) -> None:
        """Find the model here (the workers get it from this node if theirs lack it), connect to Ray."""
        from simkernel.runtime import resolve_model

        resolve_model(self.model, self.precision)  # a missing model fails now, with the usual message
        self._native_log = NativeStderr()
        self._ray = _connect(self.address)
        cluster_cpus = int(self._ray.cluster_resources().get("CPU", 0))
        if cluster_cpus < self.cpus:
            raise DataError(
                f"the Ray cluster has {cluster_cpus} CPU(s), fewer than the {self.cpus} each worker needs (--threads); lower --threads or add nodes"
            )
        if self.workers is None:
            self.workers = max(1, cluster_cpus // self.cpus)
        if self.workers * self.cpus > cluster_cpus:
            raise DataError(
                f"--workers {self.workers} x --threads {self.cpus} needs {self.workers * self.cpus} CPUs; the Ray cluster has {cluster_cpus}: lower --workers or add nodes"
            )

    def scores(self, inputs: Iterator[ChunkInputs], rows: int) -> Iterator[list[float]]:
        """Each chunk's scores, in order: every block is put into the object store first (memory here
        holds one chunk at a time), then the results stream back block by block."""
        ray = self._ray
        import pyarrow as pa

        size = block_rows(rows, self.workers, self.chunk_rows)
        refs, sizes, first = [], [], 0
        for chunk in inputs:
            sizes.append(len(chunk))
            for start in range(0, len(chunk), size):
                stop = min(len(chunk), start + size)
                refs.append(ray.put(self._block(pa, chunk, start, stop, first + start)))
            first += len(chunk)
        if not refs:
            return
        from ray.data import DataContext

        context = DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        # every worker loaded (and its model fetched) before the first block is handed out: the blocks are
        # spread over all of them, and a worker that cannot start fails the run here
        context.wait_for_min_actors_s = ACTOR_START_TIMEOUT_S
        scored = ray.data.from_arrow_refs(refs).map_batches(
            self._scorer_class(),
            fn_constructor_kwargs=self._scorer_kwargs(),
            compute=ray.data.ActorPoolStrategy(size=self.workers),
            num_cpus=self.cpus,
            batch_size=None,
            batch_format="pyarrow",
        )
        try:
            yield from _regroup(scored.iter_batches(batch_size=None, batch_format="pyarrow"), sizes)
        except Exception as exc:
            if not type(exc).__module__.startswith("ray"):
                raise
            log = self._native_log.keep() if self._native_log else None
            where = f" (Ray's own log lines: {log})" if log else ""
            raise DataError(f"the Ray workers failed: {_cause(exc)}{where}") from None
        del refs

    def _block(self, pa: Any, chunk: ChunkInputs, start: int, stop: int, first_row: int) -> Any:
        targets = chunk.targets[start:stop]
        if self.mode == "sas" and any(not isinstance(t, str) for t in targets):
            # a column holds one type: single answers as lists of one (scored the same, bit for bit)
            targets = [[t] if isinstance(t, str) else t for t in targets]
        name = "references" if self.mode == "reference" else "ground_truth"
        return pa.table(
            {
                "row": pa.array(range(first_row, first_row + stop - start), pa.int64()),
                "predicted": pa.array(chunk.predicted[start:stop], pa.string()),
                name: pa.array(targets),
            }
        )

    def _scorer_class(self) -> type:
        from simkernel.ray import ReferenceMatchScorer, SASScorer

        return ReferenceMatchScorer if self.mode == "reference" else SASScorer

    def _scorer_kwargs(self) -> dict[str, Any]:
        kwargs = {
            "model": self.model,
            "precision": self.precision,
            "batch_size": self.batch_size,
            "threads": self.cpus,
        }
        if self.mode == "reference":
            kwargs["aggregation"] = self.aggregation
        return kwargs

    def close(self) -> None:
        """Disconnect (a Ray instance started here stops; a cluster keeps running)."""
        try:
            if self._ray is not None and self._ray.is_initialized():
                self._ray.shutdown()
        finally:
            if self._native_log is not None:
                self._native_log.stop()
                self._native_log = None


class NativeStderr:
    """While a Ray job runs, Ray's native (C++) parts write log lines straight to file descriptor 2
    (the level set from an environment variable, arguments held in the object store, ...), which would
    mix with the command's own output. This sends descriptor 2 to a log file in the temporary folder
    and gives Python's ``sys.stderr`` (the progress bar, the summary, errors) a copy of the original, so
    the terminal sees only the command. :meth:`stop` restores both and removes the log unless
    :meth:`keep` was called (after a failure, to point at it)."""

    def __init__(self) -> None:
        import tempfile

        sys.stderr.flush()
        handle, self.path = tempfile.mkstemp(prefix="simkernel-ray-", suffix=".log")
        self._saved = os.dup(2)
        os.dup2(handle, 2)
        os.close(handle)
        self._python_stderr = sys.stderr
        try:
            uses_fd2 = sys.stderr.fileno() == 2
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            uses_fd2 = False  # captured or replaced: it does not write to descriptor 2
        if uses_fd2:
            sys.stderr = open(os.dup(self._saved), "w", encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
        self._kept = False

    def keep(self) -> str:
        self._kept = True
        return self.path

    def stop(self) -> None:
        if sys.stderr is not self._python_stderr:
            sys.stderr.flush()
            sys.stderr.close()
            sys.stderr = self._python_stderr
        os.dup2(self._saved, 2)
        os.close(self._saved)
        if not self._kept:
            with contextlib.suppress(OSError):
                os.unlink(self.path)


def block_rows(rows: int, workers: int, chunk_rows: int) -> int:
    """Rows per block: ``BLOCKS_PER_WORKER`` blocks per worker over ``rows`` rows, at least
    ``MIN_BLOCK_ROWS`` (tiny blocks cost more in Ray's overhead than they save), at most a chunk."""
    return min(chunk_rows, max(MIN_BLOCK_ROWS, math.ceil(rows / (workers * BLOCKS_PER_WORKER))))


def _connect(address: str | None) -> Any:
    """ray, initialised: connected to ``address`` (``auto``: the cluster this machine belongs to), or a new
    single-node instance on this machine's CPUs bound to the loopback interface."""
    import logging

    if address is None:
        # a single-node instance: Ray then keeps every address on 127.0.0.1 instead of the outward one
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    # the summary and one-line errors are the command's output: Ray Data's progress lines and the core's
    # log lines stay in the session's log files (a worker's failure still comes back as an exception)
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "ERROR")
    from simkernel.ray.resources import ray_module

    ray = ray_module("--engine ray")
    if ray.is_initialized():
        return ray
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    try:
        if address is None:
            ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, **options)
        else:
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or "this machine"
        raise DataError(
            f"cannot start or reach Ray at {where} ({' '.join(str(exc).split())[:300]}); check --address (auto, or HOST:PORT of the head node) and that the cluster is running (ray status)"
        ) from None
    return ray


def _cause(exc: BaseException) -> str:
    """The last line of a Ray error that names an exception (the worker's own error), else the first."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    named = [line for line in lines if ("Error: " in line or "Exception: " in line) and len(line) < 2000]
    text = named[-1] if named else (lines[0] if lines else type(exc).__name__)
    return " ".join(text.split())[:1000]


def _regroup(batches: Any, sizes: list[int]) -> Iterator[list[float]]:
    """The scores of the blocks, cut back into chunks of ``sizes`` rows; the rows must come in order."""
    pending: list[float] = []
    expected_row = 0
    chunks = iter(sizes)
    want = next(chunks, None)
    for batch in batches:
        rows = batch.column("row").to_pylist()
        if rows != list(range(expected_row, expected_row + len(rows))):  # pragma: no cover - Ray's promise
            raise DataError(
                f"Ray returned rows out of order (row {rows[0] if rows else '?'} where {expected_row} was due); nothing was written to OUT, run again"
            )
        expected_row += len(rows)
        pending.extend(batch.column("score").to_pylist())
        while want is not None and len(pending) >= want:
            yield pending[:want]
            pending = pending[want:]
            want = next(chunks, None)
    if want is not None or pending:  # pragma: no cover - Ray's promise
        raise DataError(
            f"Ray returned {expected_row} rows of {sum(sizes)}; nothing was written to OUT, run again"
        )
