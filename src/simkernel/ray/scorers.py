"""The callable classes for ``ray.data.Dataset.map_batches`` (see :mod:`simkernel.ray`).

Each loads its model once, in ``__init__`` (so once per actor), on ``threads`` onnxruntime threads
(default: the CPUs Ray assigned to the actor), and scores a whole batch with one call of the same code
the Python APIs and the command line use (the scoring core's metric): a row's score does not depend on the batch it is in, so any
partitioning of a dataset gives the same scores, bit for bit.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from simkernel.ray import batches
from simkernel.ray.resources import actor_threads
from simkernel.ray.shipping import ensure_model
from simkernel.scoring.registry import get_metric
from simkernel.scoring.settings import DEFAULT_MODEL, ScoringSettings


class MetricScorer:
    """Any metric of the scoring core's registry (:func:`simkernel.scoring.metric_names`): ``output`` = the
    score of ``predicted`` against the metric's target column (``ground_truth``: a text, or a list where
    the metric takes several; ``references``: a list, or a JSON list in a string), in the metric's type.
    A metric that adds several columns adds ``{output}_{suffix}`` each
    (:meth:`simkernel.scoring.Metric.output_columns`), each in its own type.

    ``settings`` are :class:`~simkernel.scoring.ScoringSettings` fields (``model``, ``precision``,
    ``batch_size``, ``threads``, ``aggregation``, ...); ``threads`` defaults to the CPUs Ray gave the actor.
    """

    def __init__(
        self,
        metric: str = "sas",
        predicted: str = "predicted",
        target: str | None = None,
        output: str = "score",
        ship_model: bool = True,
        **settings: Any,
    ) -> None:
        self.metric = get_metric(metric)
        self.columns = {"predicted": predicted, self.metric.target: target or self.metric.target}
        self.output = output
        self.outputs = [(name, np.dtype(kind)) for name, kind in self.metric.output_columns(output)]
        checked = ScoringSettings.from_options(**settings)
        if self.metric.loads_model:
            threads = checked.threads or actor_threads()
            model = ensure_model(checked.model, checked.precision, ship_model)
            checked = replace(checked, model=model, threads=threads)
        self.threads = checked.threads
        self.model = checked.model
        self.scorer = self.metric.scorer(checked)
        self.scorer.load()  # once per actor

    @property
    def notes(self) -> list[str]:
        """The metric's lines for a summary (its settings; counts of what it scored, for metrics that
        count)."""
        return list(getattr(self.scorer, "notes", []))

    def take_counts(self) -> Any:
        """What the metric counted since the last call (e.g. BERTScore's empty and truncated texts, a
        :class:`~simkernel.scoring.metrics.bertscore.TextCounts`), or None for a metric that counts nothing."""
        take = getattr(self.scorer, "take_counts", None)
        return take() if take is not None else None

    def __call__(self, batch: Any) -> Any:
        predicted = batches.texts(
            batches.column(batch, self.columns["predicted"], "predicted texts"), "predicted"
        )
        name = self.columns[self.metric.target]
        if self.metric.target == "references":
            targets = batches.text_lists(batches.column(batch, name, "references"), name)
        else:
            targets = batches.column(batch, name, "ground truth texts")
        scores = self.scorer.score(predicted, targets) if predicted else []
        columns = self.metric.score_columns(scores) if predicted else [[] for _ in self.outputs]
        for (name, dtype), values in zip(self.outputs, columns, strict=True):
            batch = batches.with_column(batch, name, np.asarray(values, dtype=dtype))
        return batch


class SASScorer(MetricScorer):
    """Semantic answer similarity (Haystack's ``SASEvaluator``): ``output`` = the float32 score of
    ``predicted`` against ``ground_truth`` (a text, or a list of correct answers: the best one counts)."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str = "fp32",
        ground_truth: str = "ground_truth",
        predicted: str = "predicted",
        output: str = "score",
        batch_size: int = 32,
        threads: int | None = None,
        ship_model: bool = True,
    ) -> None:
        super().__init__(
            "sas",
            predicted,
            ground_truth,
            output,
            ship_model,
            model=model,
            precision=precision,
            batch_size=batch_size,
            threads=threads,
        )


class ReferenceMatchScorer(MetricScorer):
    """eval_lib's reference match (``ReferenceMatchMetric``): ``output`` = the float64 score of ``predicted``
    against every text of its ``references`` (a list, or a JSON list in a string), each cosine clamped to
    [0, 1], then ``aggregation`` ``"max"`` or ``"mean"``; a row without references scores 0.0."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str = "fp32",
        predicted: str = "predicted",
        references: str = "references",
        output: str = "score",
        aggregation: str = "max",
        batch_size: int = 32,
        threads: int | None = None,
        ship_model: bool = True,
    ) -> None:
        super().__init__(
            "reference",
            predicted,
            references,
            output,
            ship_model,
            model=model,
            precision=precision,
            aggregation=aggregation,
            batch_size=batch_size,
            threads=threads,
        )


class Embedder:
    """``output`` = the float32 embedding of ``text`` (pooled as sentence-transformers pools it; not
    normalised unless ``normalize=True``)."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str = "fp32",
        text: str = "text",
        output: str = "embedding",
        batch_size: int = 32,
        normalize: bool = False,
        threads: int | None = None,
        ship_model: bool = True,
    ) -> None:
        from simkernel.runtime import get_text_encoder

        self.column = text
        self.output = output
        self.batch_size = batch_size
        self.normalize = normalize
        self.threads = threads or actor_threads()
        self.model = ensure_model(model, precision, ship_model)
        self.encoder = get_text_encoder(self.model, precision=precision, threads=self.threads)

    def __call__(self, batch: Any) -> Any:
        texts = batches.texts(batches.column(batch, self.column, "texts"), self.column)
        if not texts:
            return batches.with_column(batch, self.output, np.zeros((0, self.encoder.dim), dtype=np.float32))
        vectors = self.encoder.encode(texts, batch_size=self.batch_size, normalize=self.normalize)
        return batches.with_column(batch, self.output, np.asarray(vectors, dtype=np.float32))


class BlockScorer:
    """A Ray actor around one of the scorers above, for ``simkernel score --engine ray``: built once per actor
    (its model loaded then), ``score(block)`` returns (the pyarrow block with its score column(s), what the
    metric counted in it or None). ``ready()`` answers, with the scorer's summary lines, once the
    constructor is done (the engine waits for every actor before handing out blocks)."""

    def __init__(self, scorer_class: type, kwargs: dict[str, Any]) -> None:
        self.scorer = scorer_class(**kwargs)

    def ready(self) -> list[str]:
        return list(getattr(self.scorer, "notes", []))

    def score(self, block: Any) -> tuple[Any, Any]:
        scored = self.scorer(block)
        take = getattr(self.scorer, "take_counts", None)
        return scored, take() if take is not None else None
