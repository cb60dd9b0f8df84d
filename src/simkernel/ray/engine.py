"""``simkernel score --engine ray``: the scoring spread over the workers of a Ray cluster, streaming.

The driver (this process) checks the input as the local engine does, then reads it again chunk by chunk and
streams it to the workers: each chunk is cut into blocks (pyarrow tables with the row's number, the
predicted text and its ground truth or references; several blocks per worker, so that a slow or restarted
worker does not hold up the others; no block spans two chunks), and at most ``in_flight`` blocks
(``--ray-in-flight``, default ``IN_FLIGHT_PER_WORKER`` per worker) are in Ray's object store at a time: the
next block is read and put only when a scored one has come back. So reading, scoring and writing overlap, and
the object store holds a bounded number of blocks whatever the input's size (before, every block of the input
was put first, then scored).

``--workers`` actors of ``--threads`` CPUs each (default 1) run the job's metric
(:class:`simkernel.ray.MetricScorer`) through :class:`simkernel.ray.BlockScorer`; a
``ray.util.ActorPool`` hands each block to an idle actor and returns the results in submission order, and
the driver regroups them into the chunks it writes, checking that every row comes back once and in input
order. An actor whose process dies is restarted by Ray and its block retried (``max_restarts`` and
``max_task_retries`` unbounded), so the output is complete either way.

The scorers run the code the local engine runs (the scoring core's metric), and a
row's score does not depend on its batch-mates: the output equals the local engine's, byte for byte.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import sys
from collections import deque
from collections.abc import Iterator
from typing import Any

from simkernel.batch.job import ScoreJob
from simkernel.batch.rows import ChunkInputs
from simkernel.errors import DataError

BLOCKS_PER_WORKER = 4  # enough blocks that a slow or restarted worker does not hold up the others
IN_FLIGHT_PER_WORKER = 2  # blocks in the object store per worker: one scoring, one waiting its turn
MIN_BLOCK_ROWS = 16
ACTOR_START_TIMEOUT_S = 900  # a worker's start: Ray's worker process, the model fetched and loaded


class RayEngine:
    """Scores chunks on a Ray cluster (see the module docstring); ``load()`` connects to it."""

    def __init__(self, args: ScoreJob) -> None:
        self.metric = args.metric
        self.settings = args.settings
        self.model = self.settings.model
        self.precision = self.settings.precision
        self.address = args.address
        self.cpus = args.threads or 1
        self.workers = args.workers
        self.chunk_rows = args.chunk_rows
        self.in_flight: int | None = getattr(args, "ray_in_flight", None)
        self.max_in_flight_seen = 0  # the most blocks that were in the object store at once (measured)
        self.blocks_scored = 0
        self.notes: list[str] = []
        self.counts: Any = (
            None  # what the workers' metric counted (None: nothing, or a metric that does not count)
        )
        self._ray: Any = None
        self._native_log: NativeStderr | None = None

    @property
    def description(self) -> str:
        where = f"Ray cluster {self.address}" if self.address else "Ray on this machine"
        workers = f"{self.workers} worker{'s' if self.workers != 1 else ''}" if self.workers else "workers"
        return f"{self.metric.scorer(self.settings).description}, {where}: {workers} x {self.cpus} CPU"

    def load(self) -> None:
        """Find the model here (the workers get it from this node if theirs lack it), connect to Ray."""
        from simkernel.runtime import resolve_model

        if self.metric.loads_model:  # a missing model fails now, with the usual message
            resolve_model(self.model, self.precision)
        self._native_log = NativeStderr()
        self._ray, found = _connect(self.address)
        cluster_cpus = int(self._ray.cluster_resources().get("CPU", 0))
        if found is not None:
            self.address = found
            self.notes.append(
                f"Ray: connected to the cluster already running on this machine at {found} ({cluster_cpus} CPUs; `ray stop` it, or set RAY_ADDRESS=local, to start one of its own instead)"
            )
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

    @property
    def placed_workers(self) -> int:
        """The number of workers, known once :meth:`load` has seen the cluster."""
        if self.workers is None:  # pragma: no cover - a contract of the batch engine: load() comes first
            raise RuntimeError("RayEngine.load() must run before the workers are counted")
        return self.workers

    def scores(self, inputs: Iterator[ChunkInputs], rows: int) -> Iterator[list[Any]]:
        """Each chunk's scores, in order, streaming (see the module docstring): at most ``in_flight``
        blocks are in the object store at a time, and memory here holds one chunk at a time."""
        import pyarrow as pa

        size = block_rows(rows, self.placed_workers, self.chunk_rows)
        window = self.in_flight or self.placed_workers * IN_FLIGHT_PER_WORKER
        blocks = self._blocks(pa, inputs, size)
        try:
            pool = self._start_pool()
            yield from _regroup(self._scored(pool, blocks, window, size), self._score_names())
        except Exception as exc:
            if not type(exc).__module__.startswith("ray"):
                raise
            log = self._native_log.keep() if self._native_log else None
            where = f" (Ray's own log lines: {log})" if log else ""
            raise DataError(f"the Ray workers failed: {_cause(exc)}{where}") from None

    def _blocks(self, pa: Any, inputs: Iterator[ChunkInputs], size: int) -> Iterator[tuple[Any, bool]]:
        """(block, whether it is its chunk's last), reading the chunks only as the blocks are asked for."""
        first = 0
        for chunk in inputs:
            for start in range(0, len(chunk), size):
                stop = min(len(chunk), start + size)
                yield self._block(pa, chunk, start, stop, first + start), stop == len(chunk)
            first += len(chunk)

    def _start_pool(self) -> Any:
        """The scoring actors, every one started (and its model fetched and loaded) before the first block
        is handed out, in a ``ray.util.ActorPool``; an actor that cannot start fails the run here."""
        ray = self._ray
        from ray.util import ActorPool

        from simkernel.ray.scorers import BlockScorer, MetricScorer

        actor_class = ray.remote(num_cpus=self.cpus, max_restarts=-1, max_task_retries=-1)(BlockScorer)
        actors = [actor_class.remote(MetricScorer, self._scorer_kwargs()) for _ in range(self.placed_workers)]
        notes = ray.get([actor.ready.remote() for actor in actors], timeout=ACTOR_START_TIMEOUT_S)
        self.notes.extend(
            notes[0]
        )  # the metric's settings (e.g. BERTScore's layer), the same on every worker
        return ActorPool(actors)

    def _counted(self, result: tuple[Any, Any]) -> Any:
        """A scored block, its worker's counts (BERTScore's empty and truncated texts) added to the run's."""
        block, counts = result
        if counts is not None:
            self.counts = counts if self.counts is None else self.counts.add(counts)
        return block

    def _scored(
        self, pool: Any, blocks: Iterator[tuple[Any, bool]], window: int, size: int
    ) -> Iterator[tuple[Any, bool]]:
        """The scored blocks in input order, with at most ``window`` blocks submitted and not yet back; the
        summary's note on them is added before the last one is handed on (a consumer that stops at the
        last chunk never resumes this generator after it)."""
        lasts: deque[bool] = deque()
        for block, last in blocks:
            if len(lasts) >= window:
                yield self._counted(pool.get_next()), lasts.popleft()
            pool.submit(lambda actor, value: actor.score.remote(value), block)
            self.blocks_scored += 1
            lasts.append(last)
            self.max_in_flight_seen = max(self.max_in_flight_seen, len(lasts))
        while lasts:
            scored = self._counted(pool.get_next())
            if len(lasts) == 1:
                self.notes.append(
                    f"Ray: {self.blocks_scored} blocks of up to {size} rows, at most {self.max_in_flight_seen} in the object store at once (--ray-in-flight {window})"
                )
                self.notes.extend(self.counts.notes() if self.counts is not None else [])
            yield scored, lasts.popleft()

    def _block(self, pa: Any, chunk: ChunkInputs, start: int, stop: int, first_row: int) -> Any:
        targets = chunk.targets[start:stop]
        if self.metric.several_targets and any(not isinstance(t, str) for t in targets):
            # a column holds one type: single answers as lists of one (scored the same, bit for bit)
            targets = [[t] if isinstance(t, str) else t for t in targets]
        name = self.metric.target
        return pa.table(
            {
                "row": pa.array(range(first_row, first_row + stop - start), pa.int64()),
                "predicted": pa.array(chunk.predicted[start:stop], pa.string()),
                name: pa.array(targets),
            }
        )

    def _score_names(self) -> list[str]:
        """The score columns the workers add to a block (``score``, or ``score_{suffix}`` each)."""
        return [name for name, _ in self.metric.output_columns("score")]

    def _scorer_kwargs(self) -> dict[str, Any]:
        """:class:`~simkernel.ray.MetricScorer`'s arguments: the metric, its settings on ``cpus`` threads."""
        return {"metric": self.metric.name, **scorer_settings(self.metric, self.settings, self.cpus)}

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


def scorer_settings(metric: Any, settings: Any, threads: int) -> dict[str, Any]:
    """The settings ``metric`` takes (its own ``options`` included), as keyword arguments for a worker's
    scorer, on ``threads`` threads."""
    taken = (metric.settings - {"cache_dir"}) | {"options"}  # workers keep no embedding cache
    kwargs = {name: value for name, value in settings.as_dict().items() if name in taken}
    if "threads" in taken:
        kwargs["threads"] = threads
    return kwargs


def block_rows(rows: int, workers: int, chunk_rows: int) -> int:
    """Rows per block: ``BLOCKS_PER_WORKER`` blocks per worker over ``rows`` rows, at least
    ``MIN_BLOCK_ROWS`` (tiny blocks cost more in Ray's overhead than they save), at most a chunk."""
    return min(chunk_rows, max(MIN_BLOCK_ROWS, math.ceil(rows / (workers * BLOCKS_PER_WORKER))))


def _connect(address: str | None) -> tuple[Any, str | None]:
    """(ray, initialised; the address of the running cluster it found, or None). Connected to ``address``
    (``auto``: the cluster this machine belongs to); without one, to the cluster running on this machine
    (:func:`running_cluster`) if there is one, else a new single-node instance on this machine's CPUs bound
    to the loopback interface (stopped again by :meth:`RayEngine.close`)."""
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
        return ray, None
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    running = running_cluster() if address is None else None
    try:
        if running is not None:  # Ray itself would connect to it, and refuse num_cpus
            ray.init(address=running, **options)
        elif address is None:
            ray.init(address="local", num_cpus=os.cpu_count() or 1, include_dashboard=False, **options)
        else:
            ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = address or (
            f"{running} (the cluster this machine last started or joined)" if running else "this machine"
        )
        raise DataError(
            f"cannot start or reach Ray at {where} ({' '.join(str(exc).split())[:300]}); check --address (auto, or HOST:PORT of the head node) and that the cluster is running (ray status)"
        ) from None
    return ray, running


def running_cluster() -> str | None:
    """The address of the Ray cluster that ``ray.init()`` without an address would connect to: the one in
    ``RAY_ADDRESS``, else the one this machine last started or joined with ``ray start`` (recorded in Ray's
    temporary folder, ``RAY_TMPDIR`` or /tmp); None when there is none (then a new instance is started).
    ``RAY_ADDRESS=local`` means none."""
    try:  # Ray's own lookup, the one ray.init() runs (private: a Ray without it gets Ray's own rule)
        from ray._private.services import canonicalize_bootstrap_address
    except ImportError:  # pragma: no cover
        return None
    try:  # Ray annotates the address as str; its docstring and ray.init() pass None for "not given"
        return canonicalize_bootstrap_address(None)  # type: ignore[arg-type]
    except (ConnectionError, ValueError):  # pragma: no cover - an unreadable RAY_ADDRESS: ray.init names it
        return None


def _cause(exc: BaseException) -> str:
    """The last line of a Ray error that names an exception (the worker's own error), else the first."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    named = [line for line in lines if ("Error: " in line or "Exception: " in line) and len(line) < 2000]
    text = named[-1] if named else (lines[0] if lines else type(exc).__name__)
    return " ".join(text.split())[:1000]


def _regroup(scored: Iterator[tuple[Any, bool]], names: list[str]) -> Iterator[list[Any]]:
    """The scores of the scored blocks, (block, whether it ends its chunk), gathered back into chunks; the
    rows must come in order. ``names``: the blocks' score columns (several: a tuple of them a row)."""
    pending: list[Any] = []
    expected_row = 0
    for batch, last in scored:
        rows = batch.column("row").to_pylist()
        if rows != list(
            range(expected_row, expected_row + len(rows))
        ):  # pragma: no cover - the pool's promise
            raise DataError(
                f"Ray returned rows out of order (row {rows[0] if rows else '?'} where {expected_row} was due); nothing was written to OUT, run again"
            )
        expected_row += len(rows)
        columns = [batch.column(name).to_pylist() for name in names]
        pending.extend(columns[0] if len(columns) == 1 else zip(*columns, strict=True))
        if last:
            yield pending
            pending = []
