"""``reference``: eval_lib's reference match, clamped cosine similarities of answers against their references.

eval_lib, per reference: 0.0 if either vector has zero norm, else ``dot(a, r) / (|a| |r|)`` in float64,
clamped to [0, 1]; the score is the max (``aggregation == "max"``) or the mean (any other string) of those.

Here the score of every group comes from ONE call of the native kernel
``simkernel.kernels.cosine_reduce(..., clamp=(0.0, 1.0))`` (float32 output, zero norm -> 0.0), and the
per-reference similarities that go into ``evaluation_log`` (rounded to 4 decimals) are computed in float64
from the same embeddings, exactly as eval_lib does. Why both: the log's rounded values must match eval_lib
exactly, and a float32 similarity can land on the other side of a 4th-decimal rounding boundary
(|float32 - float64| is up to ~1e-7); the score only has to match within 1e-5 and the kernel's float32
result is well inside that (it is what makes scoring 500 cases a single native call). So ``score`` and
``max(similarities)`` can differ by about 1e-7.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from simkernel.scoring.metric import MODEL_SETTINGS, Metric
from simkernel.scoring.settings import ScoringSettings

CLAMP = (0.0, 1.0)


@dataclass(frozen=True)
class GroupScores:
    """Scores of ``q`` groups and the similarities of their ``R`` references.

    ``scores``: (q,) float64 holding the kernel's float32 results; ``similarities``: (R,) float64, clamped
    to [0, 1], references of group i at ``similarities[offsets[i]:offsets[i + 1]]``.
    """

    scores: np.ndarray
    similarities: np.ndarray
    offsets: np.ndarray


def reduce_kind(aggregation: str) -> Literal["max", "mean"]:
    """The kernel reduction for an eval_lib aggregation: "max" only for exactly "max", else "mean"."""
    return "max" if aggregation == "max" else "mean"


def clamped_cosines_f64(queries: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two (n, d) arrays in float64, 0.0 where a row has zero norm, clamped to [0, 1]."""
    a = np.asarray(queries, dtype=np.float64)
    b = np.asarray(refs, dtype=np.float64)
    dots = np.einsum("ij,ij->i", a, b)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        sims = np.where(norms == 0.0, 0.0, dots / np.where(norms == 0.0, 1.0, norms))
    return np.clip(sims, *CLAMP)


def score_groups(
    embeddings: np.ndarray,
    query_rows: np.ndarray,
    ref_rows: np.ndarray,
    offsets: np.ndarray,
    aggregation: str,
) -> GroupScores:
    """Score query ``i`` (row ``query_rows[i]`` of ``embeddings``) against the rows
    ``ref_rows[offsets[i]:offsets[i + 1]]``: one kernel call for all scores, float64 similarities.

    ``embeddings`` is (n, dim) float32 or float64; row indices are int64; ``offsets`` has q + 1 entries.
    """
    from simkernel.kernels import cosine_reduce

    embeddings = np.asarray(embeddings)
    if embeddings.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array (texts, dim), got shape {embeddings.shape}")
    query_rows = np.asarray(query_rows, dtype=np.int64)
    ref_rows = np.asarray(ref_rows, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    emb32 = np.ascontiguousarray(embeddings, dtype=np.float32)
    scores = cosine_reduce(
        emb32[query_rows], emb32[ref_rows], offsets, reduce=reduce_kind(aggregation), clamp=CLAMP
    ).astype(np.float64)
    query_of_ref = np.repeat(query_rows, np.diff(offsets))
    similarities = clamped_cosines_f64(embeddings[query_of_ref], embeddings[ref_rows])
    return GroupScores(scores=scores, similarities=similarities, offsets=offsets)


def reference_match_scores(
    embed: Callable[[list[str]], np.ndarray],
    predicted: Sequence[str],
    references: Sequence[Sequence[str]],
    aggregation: str,
) -> np.ndarray:
    """eval_lib's reference-match score of each ``predicted[i]`` against its own ``references[i]``.

    ``embed(texts)`` gives the (n, d) embeddings of all the call's texts at once (the encoder embeds each
    distinct text once); the scores come from one :func:`score_groups` kernel call: (q,) float64 holding
    the kernel's float32 results, 0.0 for a row with no references (the metric's no-references result).
    A row's score depends on its own texts only, not on the other rows of the call.
    """
    n = len(predicted)
    flat = [text for refs in references for text in refs]
    offsets = np.concatenate(([0], np.cumsum([len(refs) for refs in references]))).astype(np.int64)
    embeddings = embed([*predicted, *flat])
    return score_groups(embeddings, np.arange(n), n + np.arange(len(flat)), offsets, aggregation).scores


def resolve_local_model_id(model_name: str | None) -> str:
    """The runtime model id or path for an eval_lib ``model_name``, read as sentence-transformers reads it
    (eval_lib hands ``model_name`` to ``SentenceTransformer``): ``None`` means eval_lib's default
    ``"all-MiniLM-L6-v2"``, a bare name without ``/`` that is not an existing folder is a
    sentence-transformers model (``"all-MiniLM-L6-v2"`` -> ``"sentence-transformers/all-MiniLM-L6-v2"``);
    anything else is passed to the runtime as given."""
    import os

    name = DEFAULT_LOCAL_MODEL if model_name is None else model_name
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"model_name must be a non-empty string (a model id or a folder), got {name!r}")
    if "/" not in name and "\\" not in name and not os.path.exists(name):
        return f"sentence-transformers/{name}"
    return name


DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"  # eval_lib's default model_name


class ReferenceScorer:
    """The ``reference`` metric for batches of rows: ``targets[i]`` is row ``i``'s list of references; the
    embeddings from the shared :class:`~simkernel.runtime.TextEncoder` (no normalisation; the cosine
    normalises), one :func:`score_groups` kernel call a batch; a row without references scores 0.0."""

    def __init__(self, settings: ScoringSettings) -> None:
        self.settings = settings
        self.model_id = resolve_local_model_id(settings.model)
        self.description = (
            f"mode reference ({settings.aggregation}), model {self.model_id} ({settings.precision})"
        )
        self.notes: list[str] = []
        self._encoder: Any = None

    @property
    def runtime_model(self) -> Any:
        """The loaded :class:`~simkernel.runtime.TextEncoder` (None before :meth:`load`)."""
        return self._encoder

    def load(self) -> None:
        if self._encoder is None:
            from simkernel.runtime import get_text_encoder
            from simkernel.runtime.inference.bundle import check_precision

            s = self.settings
            check_precision(s.precision)
            self._encoder = get_text_encoder(
                self.model_id, precision=s.precision, threads=s.threads, cache_dir=s.cache_dir
            )

    def embed(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 embeddings in the order of ``texts`` (loads the model first)."""
        self.load()
        return self._encoder.encode(list(texts), batch_size=self.settings.batch_size, normalize=False)

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[float]:
        if not predicted:
            return []
        scores = reference_match_scores(self.embed, predicted, targets, self.settings.aggregation)
        return [float(s) for s in scores]


METRIC = Metric(
    name="reference",
    target="references",
    settings=MODEL_SETTINGS | {"aggregation"},
    score_type="float64",
    make_scorer=ReferenceScorer,
    default_threshold=0.7,  # eval_lib's ReferenceMatchMetric default
    summary="eval_lib's reference match: the predicted text against its references, cosine clamped to [0, 1], then max or mean",
)
