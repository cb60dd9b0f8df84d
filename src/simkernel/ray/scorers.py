"""The callable classes for ``ray.data.Dataset.map_batches`` (see :mod:`simkernel.ray`).

Each loads its model once, in ``__init__`` (so once per actor), on ``threads`` onnxruntime threads
(default: the CPUs Ray assigned to the actor), and scores a whole batch with one call of the same code
the Python APIs and the command line use: a row's score does not depend on the batch it is in, so any
partitioning of a dataset gives the same scores, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simkernel.ray import batches
from simkernel.ray.resources import actor_threads
from simkernel.ray.shipping import ensure_model

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class SASScorer:
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
        from simkernel.components.evaluators import SASEvaluator

        self.columns = {"ground_truth": ground_truth, "predicted": predicted}
        self.output = output
        self.threads = threads or actor_threads()
        self.model = ensure_model(model, precision, ship_model)
        self.evaluator = SASEvaluator(
            model=self.model, batch_size=batch_size, precision=precision, threads=self.threads
        )
        self.evaluator.warm_up()

    def __call__(self, batch: Any) -> Any:
        predicted = batches.texts(
            batches.column(batch, self.columns["predicted"], "predicted texts"), "predicted"
        )
        truths = batches.column(batch, self.columns["ground_truth"], "ground truth texts")
        if not predicted:
            return batches.with_column(batch, self.output, np.zeros(0, dtype=np.float32))
        result = self.evaluator.run(ground_truth_answers=truths, predicted_answers=predicted)
        return batches.with_column(batch, self.output, np.asarray(result["individual_scores"], np.float32))


class ReferenceMatchScorer:
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
        from simkernel.metrics.embedding_providers import LocalEmbeddingProvider

        if aggregation not in ("max", "mean"):
            raise ValueError(f"aggregation must be 'max' or 'mean', got {aggregation!r}")
        self.columns = {"predicted": predicted, "references": references}
        self.output = output
        self.aggregation = aggregation
        self.threads = threads or actor_threads()
        self.model = ensure_model(model, precision, ship_model)
        self.provider = LocalEmbeddingProvider(
            self.model, precision=precision, threads=self.threads, batch_size=batch_size
        )
        self.provider.encoder  # noqa: B018 - loads the model now, once per actor

    def __call__(self, batch: Any) -> Any:
        from simkernel.metrics.scoring import reference_match_scores

        predicted = batches.texts(
            batches.column(batch, self.columns["predicted"], "predicted texts"), "predicted"
        )
        name = self.columns["references"]
        references = batches.text_lists(batches.column(batch, name, "references"), name)
        if not predicted:
            return batches.with_column(batch, self.output, np.zeros(0, dtype=np.float64))
        scores = reference_match_scores(self.provider.embed_sync, predicted, references, self.aggregation)
        return batches.with_column(batch, self.output, np.asarray(scores, dtype=np.float64))


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
    (its model loaded then), ``score(block)`` returns the pyarrow block with its ``score`` column.
    ``ready()`` answers once the constructor is done (the engine waits for every actor before handing out
    blocks)."""

    def __init__(self, scorer_class: type, kwargs: dict[str, Any]) -> None:
        self.scorer = scorer_class(**kwargs)

    def ready(self) -> bool:
        return True

    def score(self, block: Any) -> Any:
        return self.scorer(block)
