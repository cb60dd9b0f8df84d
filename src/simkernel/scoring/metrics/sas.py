"""``sas``: semantic answer similarity, as Haystack's ``SASEvaluator`` computes it.

- bi-encoder (the model's ``config.json`` ``architectures`` has no entry ending in
  ``ForSequenceClassification``): a row's score is the float32 cosine of the embeddings of the predicted
  text and its ground truth, not clamped; every text of a call is embedded in ONE pass of the shared
  :class:`~simkernel.runtime.TextEncoder`, the cosines come from :func:`simkernel.kernels.paired_cosine`.
- cross-encoder: the pairs ``(predicted, ground_truth)`` scored by the
  :class:`~simkernel.runtime.CrossEncoder`; then, exactly as Haystack, the logistic function on the WHOLE
  array when ANY score is > 1 (all or nothing).
- several ground truths for a row (a list): the MAX over them.

:class:`simkernel.components.evaluators.SASEvaluator` (the drop-in) checks Haystack's contract and calls
the functions here; the batch entry points call :data:`METRIC`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from simkernel.errors import DataError
from simkernel.scoring.metric import MODEL_SETTINGS, Metric
from simkernel.scoring.settings import ScoringSettings

__all__ = [
    "METRIC",
    "SasScorer",
    "NORMALIZE_EMBEDDINGS",
    "bi_encoder_scores",
    "bi_encoder_texts",
    "mean_score",
    "cross_encoder_scores",
    "cross_pairs",
    "group_offsets",
    "load_similarity_model",
]


def load_similarity_model(
    model: str,
    precision: str,
    threads: int | None,
    cache_dir: str | None = None,
    token: str | None = None,
    providers: list[Any] | None = None,
) -> tuple[Any, bool]:
    """(the runtime model, whether it is a cross-encoder) for ``model``: a cross-encoder if any entry of its
    ``architectures`` ends with ``ForSequenceClassification`` (Haystack's rule), else a bi-encoder. On the
    CPU (``providers`` None) the process-wide shared instance; on another device a private one."""
    from simkernel import runtime
    from simkernel.runtime.inference.config import is_cross_encoder_architecture

    is_cross_encoder = is_cross_encoder_architecture(runtime.model_architectures(model, token=token))
    options: dict[str, Any] = {"precision": precision, "threads": threads, "token": token}
    if not is_cross_encoder:  # a cross-encoder scores pairs: it has no embeddings to cache
        options["cache_dir"] = cache_dir
    if providers is None:
        get = runtime.get_cross_encoder if is_cross_encoder else runtime.get_text_encoder
        return get(model, **options), is_cross_encoder
    model_class = runtime.CrossEncoder if is_cross_encoder else runtime.TextEncoder
    return model_class(model, providers=providers, **options), is_cross_encoder


def group_offsets(groups: Sequence[Sequence[str]]) -> np.ndarray:
    """int64 offsets (length q+1) of each row's ground truths in the flattened list."""
    return np.concatenate(([0], np.cumsum([len(group) for group in groups]))).astype(np.int64)


def cross_pairs(predictions: Sequence[str], groups: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """(predicted, ground_truth) pairs in Haystack's order (the CrossEncoder scores identical pairs once)."""
    return [(p, g) for p, group in zip(predictions, groups, strict=True) for g in group]


# ``normalize`` of SAS's encoder call: the model's own vectors, as Haystack's encode gives them. The cosine
# kernel divides by the norms, so scaling the rows to unit length first (the encoder's default) would only
# cost each call its time, under the GIL that a service's concurrent callers share.
NORMALIZE_EMBEDDINGS = False


def bi_encoder_texts(predictions: Sequence[str], groups: Sequence[Sequence[str]]) -> list[str]:
    """The texts of the ONE encoder call that :func:`bi_encoder_scores` reads: the predictions, then every
    ground truth in order."""
    return [*predictions, *(text for group in groups for text in group)]


def bi_encoder_scores(embeddings: np.ndarray, groups: Sequence[Sequence[str]], several: bool) -> list[float]:
    """The score of each row from ONE encoder call's rows: its prediction (the first ``len(groups)``
    rows), then every ground truth in order."""
    from simkernel.kernels import cosine_reduce, paired_cosine

    n = len(groups)
    if not several:
        return paired_cosine(embeddings[:n], embeddings[n:]).tolist()
    # A row with one ground truth is scored as when no row has several (the paired kernel's rounding
    # differs from the max kernel's by up to 6e-8): a score never depends on what else is in the call,
    # so any split of the rows into calls gives the same scores.
    offsets = group_offsets(groups)
    sizes = np.diff(offsets)
    scores = np.empty(n, dtype=np.float32)
    single = np.flatnonzero(sizes == 1)
    scores[single] = paired_cosine(embeddings[single], embeddings[n + offsets[single]])
    multi = np.flatnonzero(sizes != 1)
    if multi.size:
        rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in multi])
        multi_offsets = np.concatenate(([0], np.cumsum(sizes[multi]))).astype(np.int64)
        truths = embeddings[n + rows]
        scores[multi] = cosine_reduce(embeddings[multi], truths, multi_offsets, reduce="max")
    return scores.tolist()


def mean_score(individual: Sequence[float]) -> np.float64:
    """Haystack's ``score``: ``np.mean`` of the individual scores (a numpy.float64). One score is returned as
    it is, the same value (x / 1 is x) without np.mean's 10 us of list conversion: one pair per call is
    what a service sends, and its callers share the GIL."""
    if len(individual) == 1 and isinstance(individual[0], float):
        return np.float64(individual[0])
    return np.float64(np.mean(individual))


def cross_encoder_scores(
    scores: Any, groups: Sequence[Sequence[str]], several: bool, model: str
) -> list[Any]:
    """Haystack's rule on a cross-encoder's scores of :func:`cross_pairs`, then the max per row."""
    scores = np.asarray(scores)
    # All or nothing, as Haystack: the logistic function is applied only when some score is above 1.
    if (scores > 1).any():
        with np.errstate(over="ignore"):
            scores = 1 / (1 + np.exp(-scores))
    if not several:
        return scores.tolist()
    if scores.ndim != 1:
        raise ValueError(
            f"several ground truths per question need a cross-encoder with one output label; {model!r} has {scores.shape[1]} labels"
        )
    return np.maximum.reduceat(scores, group_offsets(groups)[:-1]).tolist()


class SasScorer:
    """The ``sas`` metric for batches of rows: ``targets[i]`` a ground truth or a list of them."""

    def __init__(self, settings: ScoringSettings) -> None:
        self.settings = settings
        self.description = f"mode sas, model {settings.model} ({settings.precision})"
        self.notes: list[str] = []
        self._model: Any = None
        self._is_cross_encoder = False

    @property
    def runtime_model(self) -> Any:
        """The loaded :class:`~simkernel.runtime.TextEncoder` or ``CrossEncoder`` (None before :meth:`load`)."""
        return self._model

    def load(self) -> None:
        if self._model is None:
            from simkernel.runtime.inference.bundle import check_precision

            check_precision(self.settings.precision)
            s = self.settings
            self._model, self._is_cross_encoder = load_similarity_model(
                s.model, s.precision, s.threads, s.cache_dir
            )

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]:
        if not predicted:
            return []
        self.load()
        groups = [[t] if isinstance(t, str) else list(t) for t in targets]
        several = any(not isinstance(t, str) for t in targets)
        batch_size = self.settings.batch_size
        if self._is_cross_encoder:
            raw = self._model.predict(cross_pairs(predicted, groups), batch_size=batch_size)
            scores = cross_encoder_scores(raw, groups, several, self.settings.model)
        else:
            texts = bi_encoder_texts(predicted, groups)
            embeddings = self._model.encode(texts, batch_size=batch_size, normalize=NORMALIZE_EMBEDDINGS)
            scores = bi_encoder_scores(embeddings, groups, several)
        if scores and isinstance(scores[0], (list, tuple)):
            raise DataError(
                f"the model gives {len(scores[0])} scores per pair (a classifier with several labels), not one similarity; use a bi-encoder or a one-label cross-encoder with --model"
            )
        return [float(s) for s in scores]


METRIC = Metric(
    name="sas",
    target="ground_truth",
    several_targets=True,
    settings=MODEL_SETTINGS,
    score_type="float32",
    make_scorer=SasScorer,
    summary="semantic answer similarity (Haystack's SASEvaluator): bi-encoder cosine or a cross-encoder's score",
)
