"""The work a Ray Data actor does on one block of a file set (:mod:`simkernel.tables.file_sets`), on its node.

A block is a pyarrow Table of consecutive rows of one input file, with Ray Data's ``path`` column. The
actor checks every row as the driver checks a single file (:class:`simkernel.batch.rows.RowChecker`) and
scores the block with the scorer the Ray engine uses; it returns the block with these columns added:

- ``__score``: the row's score (NaN where the block was not scored); for a metric that adds several
  columns, a list of them a row (in the metric's order);
- ``__problem``: what is wrong with the row (null for a good row); a block with a bad row is not scored;
- ``__label``: the row's label as a float (NaN where none, or no ``--label``);
- ``__non_latin`` and ``__no_references``: the row counts behind the summary's notes.

The driver reads them back in input order, names a bad row by its file and row, and writes the rest.
"""

from __future__ import annotations

import math
from typing import Any

from simkernel.batch.job import ScoreJob
from simkernel.batch.rows import RowChecker, RowProblems
from simkernel.scoring.notes import non_latin_rows

ADDED = ("__score", "__problem", "__label", "__non_latin", "__no_references")
PATH = "path"  # the column Ray Data's readers add with include_paths=True


class _ByRow(RowProblems):
    """Each bad row's first message, by its position in the block."""

    def __init__(self) -> None:
        super().__init__("", "row")
        self.messages: dict[int, str] = {}

    def add(self, line: int, message: str) -> None:
        self.messages.setdefault(line, message)


class FileBlockScorer:
    """``__call__(block)`` checks and scores one block (see the module docstring). ``options`` are the
    command line's row options (mode, columns, label, allow_empty); ``scorer_class(**kwargs)`` is built
    once per actor, its model loaded then; ``check_only`` paths are checked, not scored (rows an earlier,
    interrupted run scored)."""

    def __init__(
        self,
        options: dict[str, Any],
        columns: dict[str, str],
        fmt: str,
        scorer_class: type,
        kwargs: dict[str, Any],
        check_only: frozenset[str] = frozenset(),
    ) -> None:
        self.args = ScoreJob(file="", **options)
        self.metric = self.args.metric
        self.checker = RowChecker(self.args, columns, fmt)
        self.check_only = check_only
        self.scorer = scorer_class(**kwargs)

    def __call__(self, block: Any) -> Any:
        import pyarrow as pa

        rows = block.drop_columns([PATH]).to_pylist() if PATH in block.column_names else block.to_pylist()
        problems = _ByRow()
        inputs = self.checker.check(rows, list(range(len(rows))), problems)
        width = len(self.metric.columns)
        scores: list[Any] = [math.nan if width == 1 else [math.nan] * width] * len(rows)
        paths = set(block.column(PATH).to_pylist()) if PATH in block.column_names else set()
        if rows and not problems.messages and not paths <= self.check_only:
            scores = self._scores(pa, inputs)
        score_type = pa.float64() if width == 1 else pa.list_(pa.float64())
        labels = [math.nan if v is None else v for v in inputs.labels] if inputs.labels is not None else None
        targets = inputs.targets
        added = {
            "__score": pa.array(scores, score_type),
            "__problem": pa.array([problems.messages.get(i) for i in range(len(rows))], pa.string()),
            "__label": pa.array(labels if labels is not None else [math.nan] * len(rows), pa.float64()),
            "__non_latin": pa.array(
                [non_latin_rows([p], [t]) > 0 for p, t in zip(inputs.predicted, targets, strict=True)],
                pa.bool_(),
            ),
            "__no_references": pa.array(
                [self.metric.target == "references" and not t for t in targets], pa.bool_()
            ),
        }
        for name, values in added.items():
            block = block.append_column(name, values)
        return block

    def _scores(self, pa: Any, inputs: Any) -> list[Any]:
        targets = inputs.targets
        if self.metric.several_targets and any(not isinstance(t, str) for t in targets):
            targets = [[t] if isinstance(t, str) else t for t in targets]  # one type per column
        name = self.metric.target
        table = pa.table({"predicted": pa.array(inputs.predicted, pa.string()), name: pa.array(targets)})
        scored = self.scorer(table)
        columns = [scored.column(name).to_pylist() for name, _ in self.metric.output_columns("score")]
        return columns[0] if len(columns) == 1 else [list(row) for row in zip(*columns, strict=True)]
