"""The Ray engine on a file set (:mod:`simkernel.tables.file_sets`): the nodes read the files, not the driver.

One Ray Data pipeline: the format's reader (its module's ``ray_dataset``: ``ray.data.read_parquet``,
``ray.data.read_csv``) reads the files on the nodes (with ``include_paths``, so each row keeps its file), ``map_batches`` checks and scores each block on
``--workers`` actors of ``--threads`` CPUs (:class:`simkernel.ray.file_blocks.FileBlockScorer`; restarted
and retried if their process dies), and the driver iterates over the scored blocks in input order
(``preserve_order``) and writes them. Ray Data's streaming executor keeps a bounded amount of data in the
object store (it reads ahead only as far as the actors keep up: its backpressure), so the driver never
holds or puts the whole input. The read tasks reserve no CPU (``num_cpus=0``): reading is light next to
the scoring, and with ``--workers`` taking every CPU of the cluster a read that waited for one would wait
for ever.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from simkernel.batch.job import ScoreJob
from simkernel.ray.engine import RayEngine, block_rows
from simkernel.ray.file_blocks import FileBlockScorer
from simkernel.ray.scorers import MetricScorer
from simkernel.tables.file_sets import FileSet
from simkernel.tables.formats import table_format


class FileSetEngine(RayEngine):
    """:class:`RayEngine`'s connection, workers and scorers, fed by Ray Data's readers on the nodes."""

    def __init__(self, args: ScoreJob, file_set: FileSet, columns: dict[str, str]) -> None:
        super().__init__(args)
        self.file_set = file_set
        self.columns = columns
        self.row_options = {
            "mode": args.mode,
            "label": args.label,
            "allow_empty": args.allow_empty,
        }

    def row_counts(self) -> list[int]:
        """The rows of every file (from their metadata here where they say, Parquet's footers; else
        counted on the nodes)."""
        fs = self.file_set
        known = [table_format(fs.format).known_rows(name) for name in fs.files]
        if None not in known:
            return [int(n or 0) for n in known]
        ray = self._ray
        count = ray.remote(num_cpus=1)(_exact_rows)
        return list(ray.get([count.remote(name, fs.format, fs.columns) for name in fs.files]))

    def blocks(self, check_only: frozenset[str], rows_hint: int) -> Iterator[Any]:
        """The checked and scored blocks (pyarrow Tables, see :mod:`simkernel.ray.file_blocks`), in input
        order; the files in ``check_only`` are checked, not scored."""
        ray = self._ray
        from ray.data import DataContext

        context = DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        fs = self.file_set
        dataset = table_format(fs.format).ray_dataset(ray, fs.files, fs.columns)
        size = block_rows(max(rows_hint, 1), self.placed_workers, self.chunk_rows)
        scored = dataset.map_batches(
            FileBlockScorer,
            fn_constructor_kwargs={
                "options": self.row_options,
                "columns": self.columns,
                "fmt": fs.format,
                "scorer_class": MetricScorer,
                "kwargs": self._scorer_kwargs(),
                "check_only": check_only,
            },
            batch_size=size,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=self.workers),
            num_cpus=self.cpus,
        )
        self.notes.append(
            f"Ray Data: {len(fs.files)} {fs.format} files read on the nodes, blocks of up to {size} rows"
        )
        try:
            yield from scored.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=1)
        except Exception as exc:
            if not type(exc).__module__.startswith("ray"):
                raise
            from simkernel.errors import DataError
            from simkernel.ray.engine import _cause

            raise DataError(f"the Ray workers failed: {_cause(exc)}") from None


def _exact_rows(name: str, fmt: str, columns: list[str]) -> int:
    """The data rows of one file, read as the pipeline reads it (run on a node)."""
    return table_format(fmt).exact_rows(name, columns)
