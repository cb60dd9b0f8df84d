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
import math
import os
from collections.abc import Iterator
from typing import Any

from simkernel.cli.errors import DataError
from simkernel.cli.modes import DEFAULT_BATCH_SIZE, DEFAULT_PRECISION
from simkernel.cli.rows import ChunkInputs
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL

BLOCKS_PER_WORKER = 4  # enough blocks that a slow or restarted worker does not hold up the others
MIN_BLOCK_ROWS = 16


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
        self._started_here = False

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
        self._ray = _connect(self.address)
        self._started_here = self.address is None
        cluster_cpus = int(self._ray.cluster_resources().get("CPU", 0))
        if cluster_cpus < self.cpus:
            raise DataError(
                f"the Ray cluster has {cluster_cpus} CPU(s), fewer than the {self.cpus} each worker needs (--threads); lower --threads or add nodes"
            )
        if self.workers is None:
            self.workers = max(1, cluster_cpus // self.cpus)

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
            raise DataError(f"the Ray workers failed: {_cause(exc)}") from None
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
        """Stop the Ray instance this engine started (a cluster it connected to keeps running)."""
        if self._ray is not None and self._ray.is_initialized():
            self._ray.shutdown()


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
    os.environ.setdefault("RAY_DATA_LOG_LEVEL", "WARNING")
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
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
