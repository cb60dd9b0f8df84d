"""``bertscore``: BERTScore (Zhang et al. 2020) of the predicted text against its ground truth, as bert_score
0.3.13 computes it: columns P, R and F (float32), F the primary one.

The model's token vectors at one layer (:class:`~simkernel.runtime.TokenEncoder`), greedy matching in the
native kernel (:mod:`simkernel.scoring.bertscore.matching`), idf off (in a batch run, idf from the rows of a
batch would make a row's score depend on its batch-mates), several ground truths: each of P, R, F its best
over them (bert_score's rule). Its own settings (``ScoringSettings.options``):

- ``layer``: the layer (0 = the embedding output); default: bert_score's tuned layer for a model its
  ``model2layers`` table lists, else the model's last layer (the summary says which);
- ``baseline``: a baseline file (bert_score's format; ``simkernel bertscore-baseline`` writes one for any
  model): the scores are rescaled with the layer's row.

Empty texts score 0; texts past the model's limit are truncated as bert_score truncates them; the summary's
notes count both. :mod:`simkernel.bert_score` is the drop-in for bert_score's own API.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simkernel.scoring.metric import Metric
from simkernel.scoring.settings import ScoringSettings

__all__ = ["METRIC", "BertScoreScorer", "OPTIONS", "TextCounts"]

OPTIONS = ("layer", "baseline")


def check_options(options: dict[str, Any]) -> tuple[int | None, str | None]:
    """(layer, baseline path) from a run's metric options; ValueError naming an unknown or bad one."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"bertscore takes the options {list(OPTIONS)}, not {unknown}")
    layer = options.get("layer")
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int) or layer < 0):
        raise ValueError(
            f"bertscore's layer must be an integer >= 0 (0 is the embedding output), got {layer!r}"
        )
    baseline = options.get("baseline")
    if baseline is not None:
        baseline = os.fspath(baseline)
        if not os.path.isfile(baseline):
            raise ValueError(
                f"bertscore's baseline {baseline!r} is not a file: give a baseline file (bert_score's LAYER,P,R,F format), e.g. one written by `simkernel bertscore-baseline`"
            )
    return layer, baseline


class BertScoreScorer:
    """The ``bertscore`` metric for batches of rows: ``targets[i]`` a ground truth or a list of them; each
    row's value is the tuple (P, R, F)."""

    def __init__(self, settings: ScoringSettings) -> None:
        self.settings = settings
        self.layer, self.baseline_path = check_options(settings.options)
        self.encoder: Any = None
        self.baseline: np.ndarray | None = None
        self.counts = TextCounts()
        self.description = f"mode bertscore, model {settings.model}, precision {settings.precision}"
        self.setting_notes: list[str] = []
        self.notes: list[str] = []

    def load(self) -> None:
        from simkernel import runtime
        from simkernel.scoring.bertscore.baselines import layer_baseline
        from simkernel.scoring.bertscore.layers import model2layers
        from simkernel.scoring.bertscore.model import check_num_layers

        self.encoder = runtime.get_token_encoder(
            self.settings.model, precision=self.settings.precision, threads=self.settings.threads
        )
        depth = self.encoder.num_layers
        if self.layer is None:
            tuned = model2layers.get(self.settings.model)
            self.layer = tuned if tuned is not None else depth
            why = (
                "bert_score's tuned layer" if tuned is not None else "the model's last: set the option layer"
            )
            self.setting_notes.append(f"BERTScore layer {self.layer} of {depth} ({why})")
        check_num_layers(self.layer, depth, self.settings.model)
        self.description = f"mode bertscore, model {self.settings.model}, layer {self.layer}, precision {self.settings.precision}"
        if self.baseline_path is not None:
            self.baseline = layer_baseline(self.baseline_path, self.layer)
            self.setting_notes.append(f"rescaled with the baseline {self.baseline_path}")
        self.notes = list(self.setting_notes)

    def score(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[tuple[float, float, float]]:
        from simkernel.scoring.bertscore.baselines import rescale
        from simkernel.scoring.bertscore.matching import best_over_groups, score_pairs

        if self.encoder is None:
            self.load()
        groups = [[t] if isinstance(t, str) else list(t) for t in targets]
        cands = [p for p, group in zip(predicted, groups, strict=True) for _ in group]
        refs = [t for group in groups for t in group]
        if not cands:
            return []
        result = score_pairs(self.encoder, cands, refs, layer=self.layer)
        self.counts.add(TextCounts(result.empty_pairs, set(result.truncated)))
        self.notes = self.setting_notes + self.counts.notes()
        scores = best_over_groups(result.scores, [len(group) for group in groups])
        if self.baseline is not None:
            scores = rescale(scores, self.baseline)
        return [tuple(row) for row in scores.tolist()]

    def take_counts(self) -> TextCounts:
        """The counts since the last call, and new ones started: an engine's workers send them back with
        each block they score, and the engine adds them up (:meth:`TextCounts.add`) for its summary."""
        counts, self.counts = self.counts, TextCounts()
        return counts


@dataclass
class TextCounts:
    """What the summary counts: pairs scored 0 for an empty text, and the distinct truncated texts (their
    :func:`~simkernel.runtime.inference.disk_cache.text_digest`, the same in every process, so that a text
    truncated in several chunks, passes or workers counts once)."""

    empty_pairs: int = 0
    truncated: set[bytes] = field(default_factory=set)

    def add(self, other: TextCounts) -> TextCounts:
        """These counts with ``other``'s added (in place; returns self)."""
        self.empty_pairs += other.empty_pairs
        self.truncated |= other.truncated
        return self

    def notes(self) -> list[str]:
        """The summary's lines for these counts (none for a zero count)."""
        notes = []
        if self.empty_pairs:
            notes.append(f"{self.empty_pairs} pair(s) with an empty text scored 0 (bert_score's rule)")
        if self.truncated:
            notes.append(
                f"{len(self.truncated)} text(s) past the model's limit truncated (as bert_score does)"
            )
        return notes


METRIC = Metric(
    name="bertscore",
    target="ground_truth",
    settings=frozenset({"model", "precision", "threads", "batch_size"}),
    score_type="float32",
    make_scorer=BertScoreScorer,
    summary="BERTScore (bert_score 0.3.13's P, R, F) of the predicted text and its ground truth",
    several_targets=True,
    columns=(("P", "float32"), ("R", "float32"), ("F", "float32")),
    primary="F",
    options=frozenset(OPTIONS),
    token_layers=True,
)
