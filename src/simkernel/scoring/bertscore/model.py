"""Which model and layer a BERTScore call uses, checked as bert_score checks them, with clearer errors.

bert_score 0.3.13 raises ``AssertionError`` for its argument checks and a bare ``KeyError`` for a model
missing from ``model2layers``. The errors here keep those types (each also is a ``ValueError``) and bert_score's
messages, followed by what to do.
"""

from __future__ import annotations

import operator
from typing import Any

from simkernel.scoring.bertscore.layers import lang2model, model2layers

__all__ = [
    "BERTScoreArgumentError",
    "UnknownLayerError",
    "baseline_lang",
    "check_device",
    "check_num_layers",
    "resolve_model",
]


class BERTScoreArgumentError(ValueError, AssertionError):
    """A bad argument, where bert_score raises ``AssertionError`` (so both ``except`` clauses catch it)."""


class UnknownLayerError(ValueError, KeyError):
    """No ``num_layers`` given for a model that bert_score's ``model2layers`` does not list (bert_score:
    ``KeyError: model``)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def resolve_model(
    model_type: str | None, num_layers: int | None, lang: str | None, rescale_with_baseline: bool
) -> tuple[str, int]:
    """(model, layer) as bert_score picks them: ``model_type``, else ``lang2model[lang.lower()]``; ``num_layers``,
    else ``model2layers[model]``. Whether the layer exists in the model is checked when it loads."""
    if lang is None and model_type is None:
        raise BERTScoreArgumentError(
            "Either lang or model_type should be specified: lang='en' picks bert_score's model for English (roberta-large), model_type takes a model id of the hub or a local checkpoint folder"
        )
    if lang is not None and not isinstance(lang, str):
        raise BERTScoreArgumentError(f"lang must be a language code such as 'en' or 'zh', got {lang!r}")
    if rescale_with_baseline and lang is None:
        raise BERTScoreArgumentError(
            "Need to specify Language when rescaling with baseline: pass lang='en' (or the texts' language); the baseline file is looked up by language and model"
        )
    if model_type is None:
        assert lang is not None
        model_type = lang2model[lang.lower()]
    if not isinstance(model_type, str) or not model_type:
        raise BERTScoreArgumentError(f"model_type must be a model id or a folder, got {model_type!r}")
    if num_layers is None:
        if model_type not in model2layers:
            raise UnknownLayerError(
                f"{model_type!r} has no tuned layer in bert_score's model2layers table: pass num_layers (0 is the embedding output, the model's depth its last layer)"
            )
        num_layers = model2layers[model_type]
    try:
        # an int or any integer type (numpy's included, as bert_score takes them); a bool is refused
        layer = None if isinstance(num_layers, bool) else operator.index(num_layers)
    except TypeError:
        layer = None
    if layer is None:
        raise BERTScoreArgumentError(
            f"num_layers must be an integer, got {num_layers!r}: pass the layer's number (0 is the embedding output, the model's depth its last layer), or None for bert_score's tuned layer"
        )
    return model_type, layer


def baseline_lang(lang: str | None, model_type: str | None) -> str | None:
    """The ``lang`` whose folder holds bert_score's baseline file in ``score()`` and ``plot_example()``:
    lowercased when it picked the model (``model_type`` None), as given otherwise; bert_score lowercases it
    only then (``lang = lang.lower()`` beside ``lang2model[lang]``). ``BERTScorer`` keeps the ``lang`` it was
    given for its baseline file, as bert_score's does."""
    return lang.lower() if model_type is None and lang is not None else lang


def check_num_layers(num_layers: int, depth: int, model_type: str) -> None:
    """bert_score's check of a layer against the model's depth (its message, then the fix)."""
    if not 0 <= num_layers <= depth:
        raise BERTScoreArgumentError(
            f"Invalid num_layers: num_layers should be between 0 and {depth} for {model_type} (got {num_layers})"
        )


def check_device(device: Any) -> None:
    """``device`` None or a CPU device: simkernel runs its models with onnxruntime on the CPU, so a CUDA
    device is refused rather than silently ignored."""
    if device is None:
        return
    name = str(device)
    if name != "cpu" and not name.startswith("cpu:"):
        raise BERTScoreArgumentError(
            f"device={name!r}: simkernel's BERTScore runs on the CPU (onnxruntime, no torch); pass device=None or device='cpu', and precision='int8' or 'bf16' for more speed"
        )
