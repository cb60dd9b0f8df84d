"""Hugging Face text-embeddings-inference's ``POST /similarity`` and ``POST /rerank``.

``/similarity``: ``{"inputs": {"source_sentence": str, "sentences": [str, ...]}}`` -> the cosine of the
source's embedding with each sentence's, a JSON array of floats (a bi-encoder). ``/rerank``: ``{"query",
"texts", "raw_scores"?, "return_text"?, "truncate"?}`` -> ``[{"index", "score", "text"?}, ...]`` sorted by
score, highest first (a 1-label cross-encoder: the sigmoid of its logit, or the logit with
``raw_scores``). Texts are always truncated at the model's longest input, so ``truncate`` is accepted
and changes nothing. Both take an optional ``model`` (default: the first served model of the kind).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import simkernel.serve.bodies as bodies
from simkernel.serve.errors import invalid, model_call


async def similarity(app_state, body: dict[str, Any]) -> list[float]:
    inputs = bodies.required(body, "inputs", "POST /similarity")
    if not isinstance(inputs, dict):
        raise invalid(
            '\'inputs\' must be an object {"source_sentence": str, "sentences": [str, ...]}', "invalid_type"
        )
    source = bodies.text(
        bodies.required(inputs, "source_sentence", "POST /similarity"), "inputs.source_sentence"
    )
    sentences = bodies.texts(
        bodies.required(inputs, "sentences", "POST /similarity"),
        "inputs.sentences",
        app_state.settings.max_inputs - 1,
    )
    model = app_state.models.get(body.get("model"), "bi-encoder", "POST /similarity")
    vectors = await model_call(model.runtime.aencode([source, *sentences]))
    return cosines(vectors[0], vectors[1:]).tolist()


def cosines(source: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Cosine of ``source`` with each row of ``others`` (float32 math on the unit vectors; 0 for a zero
    vector), as float64 values for JSON."""
    norms = np.linalg.norm(others, axis=1) * np.linalg.norm(source)
    dots = others @ source
    safe = np.where(norms > 0, norms, 1.0)
    return np.where(norms > 0, dots / safe, 0.0).astype(np.float64)


async def rerank(app_state, body: dict[str, Any]) -> list[dict[str, Any]]:
    query = bodies.text(bodies.required(body, "query", "POST /rerank"), "query")
    texts = bodies.texts(
        bodies.required(body, "texts", "POST /rerank"), "texts", app_state.settings.max_inputs
    )
    raw_scores = bodies.flag(body, "raw_scores", False)
    return_text = bodies.flag(body, "return_text", False)
    bodies.flag(body, "truncate", True)
    model = app_state.models.get(body.get("model"), "cross-encoder", "POST /rerank")
    if model.runtime.num_labels != 1:
        raise invalid(
            f"/rerank needs a cross-encoder with one output label; {model.id!r} has {model.runtime.num_labels}; use POST /v1/sas with it",
            "invalid_model",
        )
    pairs = [(query, t) for t in texts]
    scores = await model_call(model.runtime.apredict(pairs, apply_activation=not raw_scores))
    order = sorted(range(len(texts)), key=lambda i: (-float(scores[i]), i))
    ranked = []
    for i in order:
        item: dict[str, Any] = {"index": i, "score": float(scores[i])}
        if return_text:
            item["text"] = texts[i]
        ranked.append(item)
    return ranked
