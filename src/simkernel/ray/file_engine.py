"""The Ray engine on a file set (:mod:`simkernel.tables.file_sets`): the nodes read the files, not the driver.

One Ray Data pipeline: ``ray.data.read_parquet`` / ``ray.data.read_csv`` read the files on the nodes (with
``include_paths``, so each row keeps its file), ``map_batches`` checks and scores each block on
``--workers`` actors of ``--threads`` CPUs (:class:`simkernel.ray.file_blocks.FileBlockScorer`; restarted
and retried if their process dies), and the driver iterates over the scored blocks in input order
(``preserve_order``) and writes them. Ray Data's streaming executor keeps a bounded amount of data in the
object store (it reads ahead only as far as the actors keep up: its backpressure), so the driver never
holds or puts the whole input. The read tasks reserve no CPU (``num_cpus=0``): reading is light next to
the scoring, and with ``--workers`` taking every CPU of the cluster a read that waited for one would wait
for ever.

CSV and TSV are read by Arrow's CSV reader, every column as text (no type inference), quoted line breaks
allowed, the header's names taken from the first line (stripped, as the driver's reader does).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from simkernel.batch.job import ScoreJob
from simkernel.ray.engine import RayEngine, block_rows
from simkernel.ray.file_blocks import FileBlockScorer
from simkernel.ray.scorers import MetricScorer
from simkernel.tables.file_sets import FileSet
from simkernel.tables.formats import DELIMITERS, table_format


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
        """The rows of every file (Parquet: from the footers here; CSV/TSV: counted on the nodes)."""
        fs = self.file_set
        if table_format(fs.format).typed:
            from simkernel.tables.parquet import parquet_rows

            return [parquet_rows(name, name) for name in fs.files]
        ray = self._ray
        count = ray.remote(num_cpus=1)(_csv_rows)
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
        if table_format(fs.format).typed:
            dataset = ray.data.read_parquet(fs.files, include_paths=True, partitioning=None, num_cpus=0)
        else:
            dataset = ray.data.read_csv(
                fs.files, include_paths=True, partitioning=None, num_cpus=0, **_csv_args(fs)
            )
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


def _csv_args(fs: FileSet) -> dict[str, Any]:
    import pyarrow as pa
    from pyarrow import csv

    return {
        "read_options": csv.ReadOptions(column_names=fs.columns, skip_rows=1),
        "parse_options": csv.ParseOptions(delimiter=DELIMITERS[fs.format], newlines_in_values=True),
        "convert_options": csv.ConvertOptions(
            column_types={name: pa.string() for name in fs.columns},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    }


def _csv_rows(name: str, fmt: str, columns: list[str]) -> int:
    """The data rows of one CSV/TSV file, read as the pipeline reads it (run on a node)."""
    from pyarrow import csv

    args = _csv_args(FileSet(name, [name], fmt, columns))
    return int(csv.read_csv(name, **args).num_rows)
