"""OpenAI's embeddings API: ``POST /v1/embeddings`` and ``GET /v1/models``.

The body is OpenAI's: ``input`` (a string or an array of strings; token-id arrays are refused with 422,
this server embeds text), ``model`` (a served id), ``encoding_format`` (``"float"``, the default, or
``"base64"``: the little-endian float32 bytes, as OpenAI sends them), ``dimensions`` (only the model's
own) and ``user`` (ignored). An empty string or array is a 400, as OpenAI answers it. The response is OpenAI's, with ``usage.prompt_tokens`` and
``usage.total_tokens`` counted by the model's tokenizer. Float embeddings are the float32 values
written as JSON numbers that parse back to the same float32 bits.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

import simkernel.serve.bodies as bodies
from simkernel.serve.errors import ApiError, empty_input, invalid, model_call
from simkernel.serve.offload import INLINE_ITEMS, to_json


def _is_token_ids(value: Any) -> bool:
    if isinstance(value, list) and value:
        first = value[0]
        return (isinstance(first, int) and not isinstance(first, bool)) or isinstance(first, list)
    return False


def embedding_inputs(body: dict[str, Any], max_inputs: int) -> list[str]:
    """The texts of ``input``: 400 for an empty string or array, as OpenAI answers them."""
    raw = bodies.required(body, "input", "POST /v1/embeddings")
    if isinstance(raw, str):
        texts = [bodies.text(raw, "input")]
    elif _is_token_ids(raw):
        raise invalid(
            "'input' holds token ids (an array of integers); this server embeds text only: send the text itself as a string or an array of strings",
            "token_ids_not_supported",
        )
    elif isinstance(raw, list) and not raw:
        raise empty_input("'input' is an empty array; send at least one non-empty string")
    else:
        texts = bodies.texts(raw, "input", max_inputs)
    for i, text in enumerate(texts):
        if not text:
            raise empty_input(
                f"'input' holds an empty string (item {i}); OpenAI's API refuses empty inputs: send text, or leave the item out"
            )
    return texts


def encoding_format(body: dict[str, Any]) -> str:
    value = body.get("encoding_format", "float")
    if value is None:
        return "float"
    if value not in ("float", "base64"):
        raise invalid(
            f'\'encoding_format\' must be "float" or "base64", got {str(value)[:60]!r}', "invalid_value"
        )
    return value


def check_dimensions(body: dict[str, Any], dim: int) -> None:
    value = body.get("dimensions")
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"'dimensions' must be an integer, got {str(value)[:60]}", "invalid_type")
    if value != dim:
        raise invalid(
            f"'dimensions' is {value}, but this model's embeddings have {dim} dimensions and are not shortened; leave 'dimensions' out or pass {dim}",
            "invalid_value",
        )


def embeddings_payload(vectors: np.ndarray, model: str, fmt: str, tokens: int) -> bytes:
    """OpenAI's response body for float32 ``vectors``."""
    if fmt == "base64":
        rows = vectors.astype("<f4", copy=False)
        data = [base64.b64encode(row.tobytes()).decode("ascii") for row in rows]
    else:
        data = vectors.astype(np.float64).tolist()  # each float32 value exactly, as a JSON number
    # json.dumps of the whole payload, written an embedding at a time (json's encoder holds the GIL for
    # the whole of one call: see simkernel.serve.offload)
    items = (to_json({"object": "embedding", "index": i, "embedding": row}) for i, row in enumerate(data))
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return b"".join(
        (
            b'{"object":"list","data":[',
            b",".join(items),
            b'],"model":',
            to_json(model),
            b',"usage":',
            to_json(usage),
            b"}",
        )
    )


async def embeddings(app_state, body: dict[str, Any]) -> bytes:
    """The response body of one embeddings request (its prompt tokens counted in the metrics)."""
    from simkernel.runtime.inference.threads import run_blocking

    settings = app_state.settings
    texts = embedding_inputs(body, settings.max_inputs)
    fmt = encoding_format(body)
    model = app_state.models.get(
        bodies.required(body, "model", "POST /v1/embeddings"), "bi-encoder", "POST /v1/embeddings"
    )
    if "user" in body and not isinstance(body["user"], str):
        raise invalid("'user' must be a string (it is ignored here)", "invalid_type")
    check_dimensions(body, model.runtime.dim)
    vectors = await model_call(model.runtime.aencode(texts), model.id)
    tokens = await model.input_tokens(texts)
    app_state.metrics.count_input(model.id, tokens)
    if len(texts) > INLINE_ITEMS:  # a large answer is written in a worker
        return await run_blocking(embeddings_payload, vectors, model.id, fmt, tokens)
    return embeddings_payload(vectors, model.id, fmt, tokens)


def models_payload(app_state) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {
                "id": m.id,
                "object": "model",
                "created": app_state.started,
                "owned_by": "simkernel",
                "kind": m.kind,
            }
            for m in app_state.models
        ],
    }


def not_served_path(path: str) -> ApiError:
    return ApiError(
        404,
        f"there is no endpoint {path[:200]!r}; this server has POST /v1/embeddings, /v1/sas, /v1/reference-match, /v1/score/METRIC, TEI's /embed, /predict, /rerank, /similarity, /tokenize, /decode and /, and GET /v1/models, /info, /health, /ready, /metrics",
        "not_found",
    )
