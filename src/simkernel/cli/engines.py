"""Where ``simkernel score`` runs the model: in this process (``--engine local``) or on a Ray cluster
(``--engine ray``, :mod:`simkernel.cli.ray_engine`).

An engine has a ``description`` and ``notes`` for the summary, ``load()`` (timed as the model load) and
``scores(inputs, rows)``, which takes the checked inputs of the chunks in input order (``rows`` of them in
all) and yields each chunk's scores, in the same order, one list per chunk; ``close()`` ends it. Scores do
not depend on the engine: both run the same scoring code, and a row's score does not depend on its batch.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from simkernel.cli.modes import Scorer, make_scorer
from simkernel.cli.rows import ChunkInputs


class LocalEngine:
    """Each chunk scored by one call of the mode's scorer in this process."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer

    @property
    def description(self) -> str:
        return self.scorer.description

    @property
    def notes(self) -> list[str]:
        return self.scorer.notes

    def load(self) -> None:
        self.scorer.load()

    def scores(self, inputs: Iterator[ChunkInputs], rows: int) -> Iterator[list[float]]:
        for chunk in inputs:
            yield self.scorer.score(chunk.predicted, chunk.targets)

    def close(self) -> None:
        """Nothing to stop (the model stays shared in this process)."""


def make_engine(args: argparse.Namespace):
    """The engine ``args.engine`` names, configured from the command line (nothing loaded yet)."""
    if args.engine == "ray":
        from simkernel.cli.ray_engine import RayEngine

        return RayEngine(args)
    return LocalEngine(make_scorer(args))


def score_in_chunks(scorer: Scorer, inputs: ChunkInputs, enabled: bool, chunk_rows: int = 256) -> list[float]:
    """Every row of ``inputs`` scored in this process, ``chunk_rows`` per call, with a progress bar on a
    terminal when ``enabled`` (for commands that hold their rows in memory, such as ``calibrate``)."""
    from simkernel.cli.progress import ProgressBar

    total = len(inputs.predicted)
    scores: list[float] = []
    with ProgressBar(total, "scoring", enabled=None if enabled else False) as bar:
        for start in range(0, total, chunk_rows):
            stop = min(total, start + chunk_rows)
            scores.extend(scorer.score(inputs.predicted[start:stop], inputs.targets[start:stop]))
            bar.update(stop - start)
    return scores
