"""Where ``simkernel score`` runs the model: in this process (``--engine local``) or on a Ray cluster
(``--engine ray``, :mod:`simkernel.ray.engine`, found by name in :data:`ENGINES` so that this layer does
not import the one above it).

An engine has a ``description`` and ``notes`` for the summary, ``load()`` (timed as the model load) and
``scores(inputs, rows)``, which takes the checked inputs of the chunks in input order (``rows`` of them in
all) and yields each chunk's scores, in the same order, one list per chunk; ``close()`` ends it. Scores do
not depend on the engine: both run the same scoring code, and a row's score does not depend on its batch.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

from simkernel.batch.job import ScoreJob
from simkernel.batch.rows import ChunkInputs
from simkernel.errors import UsageError
from simkernel.scoring.metric import Scorer

# engine name -> "module:class" of an engine built from a ScoreJob (imported only when chosen)
ENGINES = {"local": "simkernel.batch.engines:LocalEngine", "ray": "simkernel.ray.engine:RayEngine"}
# engine name -> "module:function" that scores a folder or glob of files on the cluster's nodes
FILE_SET_RUNNERS = {"ray": "simkernel.ray.score_files:run_score_files"}


class LocalEngine:
    """Each chunk scored by one call of the mode's scorer in this process."""

    def __init__(self, job: ScoreJob) -> None:
        self.scorer: Scorer = job.metric.scorer(job.settings)

    @property
    def description(self) -> str:
        return self.scorer.description

    @property
    def notes(self) -> list[str]:
        return self.scorer.notes

    def load(self) -> None:
        self.scorer.load()

    def scores(self, inputs: Iterator[ChunkInputs], rows: int) -> Iterator[list[Any]]:
        for chunk in inputs:
            yield self.scorer.score(chunk.predicted, chunk.targets)

    def close(self) -> None:
        """Nothing to stop (the model stays shared in this process)."""


def _named(target: str) -> Any:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def make_engine(job: ScoreJob):
    """The engine ``job.engine`` names, configured from the job (nothing loaded yet)."""
    if job.engine not in ENGINES:
        raise UsageError(f"unknown engine {job.engine!r}; choose one of: {', '.join(ENGINES)}")
    return _named(ENGINES[job.engine])(job)


def file_set_runner(job: ScoreJob) -> Any:
    """The function that scores a folder or glob of files for ``job.engine``, or None where the engine
    reads a single file only (the local engine)."""
    target = FILE_SET_RUNNERS.get(job.engine)
    return _named(target) if target else None


def score_in_chunks(scorer: Scorer, inputs: ChunkInputs, enabled: bool, chunk_rows: int = 256) -> list[Any]:
    """Every row of ``inputs`` scored in this process, ``chunk_rows`` per call, with a progress bar on a
    terminal when ``enabled`` (for commands that hold their rows in memory, such as ``calibrate``)."""
    from simkernel.batch.progress import ProgressBar

    total = len(inputs.predicted)
    scores: list[Any] = []
    with ProgressBar(total, "scoring", enabled=None if enabled else False) as bar:
        for start in range(0, total, chunk_rows):
            stop = min(total, start + chunk_rows)
            scores.extend(scorer.score(inputs.predicted[start:stop], inputs.targets[start:stop]))
            bar.update(stop - start)
    return scores
