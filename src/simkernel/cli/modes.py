"""The three scoring modes of ``simkernel score``, each a thin adapter over the package's public API.

No scoring formula lives here: ``sas`` calls :class:`simkernel.components.evaluators.SASEvaluator`,
``exact`` calls :class:`~simkernel.components.evaluators.AnswerExactMatchEvaluator` and ``reference``
calls the batch path of :mod:`simkernel.metrics` (the same code as ``ReferenceMatchMetric``), so the
command line scores exactly what the Python APIs score.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, Protocol

from simkernel.cli.errors import DataError
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL, known_model

DEFAULT_BATCH_SIZE = 32
DEFAULT_PRECISION = "fp32"


class Scorer(Protocol):
    """Scores rows: ``load()`` once (timed apart), then ``score(predicted, targets)`` per chunk of rows."""

    description: str
    notes: list[str]

    def load(self) -> None: ...

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]: ...


def make_scorer(args: argparse.Namespace) -> Scorer:
    """The scorer of ``args.mode`` configured from the command-line options."""
    if args.mode == "exact":
        return ExactScorer()
    model = args.model or DEFAULT_MODEL
    precision = args.precision or DEFAULT_PRECISION
    batch_size = args.batch_size or DEFAULT_BATCH_SIZE
    if args.mode == "sas":
        return SasScorer(model, precision, batch_size, args.threads, args.cache_dir)
    return ReferenceScorer(
        model, precision, batch_size, args.threads, args.aggregation or "max", args.cache_dir
    )


def _non_latin(text: str) -> bool:
    """Whether ``text`` has a letter outside the Latin script (Cyrillic, CJK, Greek, Arabic, ...)."""
    return any(ch.isalpha() and ord(ch) > 0x24F for ch in text)


def non_latin_rows(predicted: Sequence[str], targets: Sequence[Any]) -> int:
    """How many rows hold non-Latin text in the predicted text or any of its targets (None: no target)."""
    return sum(
        1
        for text, target in zip(predicted, targets, strict=True)
        if _non_latin(text)
        or any(_non_latin(t) for t in ([target] if isinstance(target, str) else target or ()))
    )


def english_only_note(model: str, rows: int) -> str | None:
    """A warning when an English-only model of the registry scores ``rows`` (> 0) rows of non-Latin text.

    Such a model (all-MiniLM-L6-v2) splits Russian or Chinese into single characters, so those scores
    say little about meaning (unrelated Russian answers still score 0.5 to 0.7).
    """
    known = known_model(model)
    if not rows or known is None or known.languages != "en":
        return None
    return (
        f"{rows} row(s) hold non-Latin text (e.g. Russian, Chinese) but {known.id} is English-only: "
        "it splits "
        "such text into characters and those scores are not meaningful; use a multilingual model such as "
        "--model sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
    )


def no_references_note(rows: int) -> str | None:
    """The reference mode's note on rows with an empty list of references (they score 0.0)."""
    return f"{rows} row(s) had no references and scored 0.0, as eval_lib does" if rows else None


class SasScorer:
    """Semantic answer similarity through ``SASEvaluator`` (bi-encoder cosine, or a cross-encoder's score)."""

    def __init__(
        self, model: str, precision: str, batch_size: int, threads: int | None, cache_dir: str | None = None
    ) -> None:
        from simkernel.components.evaluators import SASEvaluator

        options: dict[str, Any] = {"precision": precision, "cache_dir": cache_dir}
        if threads is not None:
            options["threads"] = threads
        self.evaluator = SASEvaluator(model=model, batch_size=batch_size, **options)
        self.description = f"mode sas, model {model} ({precision})"
        self.notes: list[str] = []

    def load(self) -> None:
        self.evaluator.warm_up()

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]:
        result = self.evaluator.run(ground_truth_answers=list(targets), predicted_answers=list(predicted))
        scores = result["individual_scores"]
        if scores and isinstance(scores[0], (list, tuple)):
            raise DataError(
                f"the model gives {len(scores[0])} scores per pair (a classifier with several labels), not one similarity; use a bi-encoder or a one-label cross-encoder with --model"
            )
        return [float(s) for s in scores]


class ExactScorer:
    """Exact match through ``AnswerExactMatchEvaluator``: 1 if the two texts are identical, else 0."""

    def __init__(self) -> None:
        from simkernel.components.evaluators import AnswerExactMatchEvaluator

        self.evaluator = AnswerExactMatchEvaluator()
        self.description = "mode exact (case- and whitespace-sensitive)"
        self.notes: list[str] = []

    def load(self) -> None:
        return None

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]:
        result = self.evaluator.run(ground_truth_answers=list(targets), predicted_answers=list(predicted))
        return [int(s) for s in result["individual_scores"]]


class ReferenceScorer:
    """eval_lib's reference match on the metrics' own code: the predicted text against each of its
    references, cosine clamped to [0, 1], then max or mean (``simkernel.metrics.scoring.score_groups``, the
    function ``ReferenceMatchMetric`` and ``evaluate`` score with), embeddings from the metrics' "local"
    provider; a row without references scores 0.0, as the metric's no-references result (the command
    counts such rows for its note, :func:`no_references_note`)."""

    def __init__(
        self,
        model: str,
        precision: str,
        batch_size: int,
        threads: int | None,
        aggregation: str,
        cache_dir: str | None = None,
    ) -> None:
        from simkernel.metrics.embedding_providers import LocalEmbeddingProvider

        self.provider = LocalEmbeddingProvider(
            model, precision=precision, threads=threads, batch_size=batch_size, cache_dir=cache_dir
        )
        self.aggregation = aggregation
        self.description = f"mode reference ({aggregation}), model {self.provider.model_id} ({precision})"
        self.notes: list[str] = []

    def load(self) -> None:
        self.provider.encoder  # noqa: B018 - loads the shared model now, so its time is reported apart

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]:
        from simkernel.metrics.scoring import reference_match_scores

        scores = reference_match_scores(self.provider.embed_sync, predicted, targets, self.aggregation)
        return [float(s) for s in scores]
