"""Hugging Face text-embeddings-inference's HTTP API (TEI 1.x's router): ``POST /embed``, ``/predict``,
``/rerank``, ``/similarity``, ``/tokenize``, ``/decode``, ``/`` (dispatched by the body's shape) and
``GET /info``, with TEI's error shape ``{"error", "error_type"}`` and statuses
(:func:`simkernel.serve.errors.tei_error`).

Every route runs the served models' shared passes (``aencode`` / ``apredict`` / ``apredict_texts``), so
its numbers are the library's, bit for bit. Bodies as TEI reads them:

- ``/embed``: ``inputs`` a string or an array of strings; ``normalize`` (default true: unit vectors;
  false: what the model's pipeline gives), ``truncate`` (default true, TEI's ``auto_truncate``; false:
  an input past the model's ``max_input_length`` is a 422), ``truncation_direction`` (``"right"``;
  ``"left"`` is a 422 for an input that would be cut, since the models here are cut at the end, as
  sentence-transformers cuts them), ``prompt_name`` (a key of the model's sentence-transformers
  ``prompts``: its text is put before each input; a 422 naming the prompts, or saying there are none),
  ``dimensions`` (only the model's own). Answer: an array of vectors.
- ``/predict`` (a cross-encoder): ``inputs`` a string, a pair ``[a, b]``, or an array of strings and
  pairs (``[[a], [a, b], ...]``); ``raw_scores`` (default false: the model's activation, sigmoid for one
  label; true: the logits). Answer: for each input, ``[{"score", "label"}, ...]`` over the model's
  labels, highest first (one list for a single input, a list of them for an array).
- ``/similarity``: ``{"inputs": {"source_sentence", "sentences"}, "parameters"?}`` -> the cosine of the
  source's embedding with each sentence's; ``parameters`` (TEI's ``SimilarityParameters``: ``truncate``,
  ``truncation_direction``, ``prompt_name``) read and checked as ``/embed`` reads them. ``/rerank``: ``{"query", "texts", "raw_scores"?, "return_text"?,
  "truncate"?}`` -> ``[{"index", "score", "text"?}, ...]``, highest score first (a 1-label cross-encoder).
- ``/tokenize``: ``inputs`` (string or strings), ``add_special_tokens`` (default true), ``prompt_name``
  -> for each input ``[{"id", "text", "special", "start", "stop"}, ...]`` (byte offsets into the text as
  the model reads it, not truncated). ``/decode``: ``ids`` (ids or arrays of ids),
  ``skip_special_tokens`` (default true) -> the texts.
- ``/``: ``inputs.source_sentence`` -> similarity; ``query`` and ``texts`` -> rerank; ``inputs`` holding
  a pair -> predict; ``inputs`` strings -> embed when the model is a bi-encoder, predict when it is a
  cross-encoder (TEI serves one model, whose kind picks the route: here the body's ``model``, else the
  first served model; a body with ``parameters``, the Inference API's text-classification shape, goes to
  a served cross-encoder).
- ``GET /info``: TEI's ``Info`` of the first served model (``?model=ID`` for another).

Each body may name a served model in ``model`` (TEI has one model per server; default: the first served
model of the kind the route needs). Fields TEI does not know are ignored, as TEI ignores them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np

import simkernel.serve.bodies as bodies
from simkernel.serve.errors import ApiError, empty_input, invalid, model_call
from simkernel.serve.models import ServedModel
from simkernel.serve.offload import INLINE_IDS, INLINE_ITEMS, to_json, to_json_in_parts, unless_small

DTYPES = {"fp32": "float32", "int8": "int8", "bf16": "bfloat16"}


def tei_texts(value: Any, where: str, max_inputs: int) -> list[str]:
    """``value`` (a string or an array of strings) as texts: TEI's 400 for an empty array or an empty
    string, 422 past ``max_inputs`` (TEI's ``max_client_batch_size``)."""
    if isinstance(value, str):
        items = [bodies.text(value, where)]
    else:
        if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            raise invalid(
                f"{where} holds token ids; this server embeds text only: send the text itself as a string or an array of strings",
                "token_ids_not_supported",
            )
        if isinstance(value, list) and not value:
            raise empty_input(f"Input validation error: {where} cannot be empty; send at least one text")
        if not isinstance(value, list):
            raise invalid(f"{where} must be a string or an array of strings", "invalid_type")
        items = bodies.texts(value, where, max_inputs)
    for i, item in enumerate(items):
        if not item:
            raise empty_input(
                f"Input validation error: {where} holds an empty string (item {i}); send text to embed"
            )
    return items


PARAMETERS = "parameters."  # where /similarity's embedding options are (TEI's SimilarityParameters)


def _truncation_direction(options: dict[str, Any], prefix: str = "") -> str:
    value = options.get("truncation_direction", "right")
    if value is None:
        return "right"
    if value not in ("right", "Right", "left", "Left"):
        raise invalid(f'\'{prefix}truncation_direction\' must be "right" or "left", got {str(value)[:60]!r}')
    return value.lower()


async def check_truncation(
    options: dict[str, Any],
    inputs: list,
    encode: Callable[[], list],
    max_length: int,
    prefix: str = "",
) -> None:
    """TEI's ``truncate`` and ``truncation_direction`` of ``options`` (the body, or /similarity's
    ``parameters``: ``prefix`` names it) against the tokenizations of ``inputs``, ``encode()`` (by the
    model's truncating tokenizer: an input it cut has overflowing tokens), which runs only when the
    settings can refuse an input, and off the event loop for many or long inputs."""
    truncate = bodies.flag(options, "truncate", True, prefix)
    direction = _truncation_direction(options, prefix)
    if truncate and direction == "right":
        return
    cut = [i for i, encoding in enumerate(await unless_small(inputs, encode)) if encoding.overflowing]
    if not cut:
        return
    if not truncate:
        raise invalid(
            f"Input validation error: input {cut[0]} is longer than the model's max_input_length of {max_length} tokens and '{prefix}truncate' is false; send shorter texts, or set '{prefix}truncate': true to cut them at the end",
            "input_too_long",
        )
    raise invalid(
        f'\'{prefix}truncation_direction\' "left" is not served: this server cuts an input at its end, as sentence-transformers does, and input {cut[0]} is longer than max_input_length ({max_length} tokens); send "right" or shorter texts',
        "invalid_value",
    )


def with_prompt(model: ServedModel, options: dict[str, Any], texts: list[str], prefix: str = "") -> list[str]:
    """``texts`` with the text of ``options``' ``prompt_name`` (a key of the model's prompts) before each."""
    name = options.get("prompt_name")
    if name is None:
        return texts
    field = f"'{prefix}prompt_name'"
    if not isinstance(name, str):
        raise invalid(f"{field} must be a string naming one of the model's prompts", "invalid_type")
    prompts = model.prompts
    if not prompts:
        raise invalid(
            f"Input validation error: {field} is {name[:100]!r}, but {model.id!r} has no prompts in its sentence-transformers configuration; leave {field} out (or put the prompt's text before each input yourself)",
            "no_prompts",
        )
    if name not in prompts:
        raise invalid(
            f"Input validation error: {field} is {name[:100]!r}, which is not one of {model.id!r}'s prompts: {sorted(prompts)}",
            "unknown_prompt",
        )
    return [prompts[name] + text for text in texts]


def _check_dimensions(body: dict[str, Any], dim: int) -> None:
    value = body.get("dimensions")
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value == dim):
        return
    raise invalid(
        f"'dimensions' is {str(value)[:60]}, but this model's embeddings have {dim} dimensions and are not shortened; leave 'dimensions' out or pass {dim}",
        "invalid_value",
    )


async def _rows_json(matrix: np.ndarray) -> bytes:
    """float32 rows as a JSON array of arrays (each float32 value exactly), written in a worker for a
    large answer."""
    from simkernel.runtime.inference.threads import run_blocking

    if len(matrix) > INLINE_ITEMS:
        return await run_blocking(lambda: to_json_in_parts(matrix.astype(np.float64).tolist()))
    return to_json(matrix.astype(np.float64).tolist())


async def embed(app_state, body: dict[str, Any]) -> bytes:
    model = app_state.models.get(body.get("model"), "bi-encoder", "POST /embed")
    texts = tei_texts(bodies.required(body, "inputs", "POST /embed"), "inputs", app_state.settings.max_inputs)
    normalize = bodies.flag(body, "normalize", True)
    texts = with_prompt(model, body, texts)
    _check_dimensions(body, model.runtime.dim)
    await check_truncation(body, texts, lambda: model.tokenizer.encode(texts), model.runtime.max_seq_length)
    vectors = await model_call(model.runtime.aencode(texts, normalize=normalize), model.id)
    app_state.metrics.count_input(model.id, await model.input_tokens(texts))
    return await _rows_json(vectors)


def predict_inputs(value: Any, max_inputs: int) -> tuple[list[str | tuple[str, str]], bool]:
    """TEI's ``PredictInput``: (the sequences, each a text or a pair; whether it was a single input)."""

    def sequence(item: Any, where: str) -> str | tuple[str, str]:
        if isinstance(item, str):
            return bodies.text(item, where)
        if not isinstance(item, list) or len(item) not in (1, 2):
            raise invalid(
                f"{where} must be a string or an array of one or two strings (a text, or a pair [text_a, text_b])",
                "invalid_type",
            )
        texts = [bodies.text(t, f"{where}[{i}]") for i, t in enumerate(item)]
        return texts[0] if len(texts) == 1 else (texts[0], texts[1])

    if isinstance(value, str) or (isinstance(value, list) and value and isinstance(value[0], str)):
        if isinstance(value, list) and len(value) > 2:
            raise invalid(
                "'inputs' holds more than two strings: send one text, a pair [text_a, text_b], or an array of texts and pairs [[text], [text_a, text_b], ...]",
                "invalid_type",
            )
        sequences, single = [sequence(value, "inputs")], True
    elif isinstance(value, list):
        if not value:
            raise empty_input(
                "Input validation error: 'inputs' cannot be empty; send at least one text or pair"
            )
        if len(value) > max_inputs:
            raise ApiError(
                413,
                f"'inputs' holds {len(value):,} items, over this server's limit of {max_inputs:,} per request (max_client_batch_size); split it into several requests (the operator can raise --max-inputs)",
                "too_many_inputs",
            )
        sequences, single = [sequence(item, f"inputs[{i}]") for i, item in enumerate(value)], False
    else:
        raise invalid(
            "'inputs' must be a string, a pair [text_a, text_b], or an array of texts and pairs",
            "invalid_type",
        )
    for i, item in enumerate(sequences):
        if item == "" or item == ("", ""):
            raise empty_input(f"Input validation error: input {i} is empty; send text to score")
    return sequences, single


def _labels(model: ServedModel) -> list[str]:
    id2label = model.runtime.config.id2label
    return [id2label.get(i, f"LABEL_{i}") for i in range(model.runtime.num_labels)]


async def predict(app_state, body: dict[str, Any]) -> list:
    model = app_state.models.get(body.get("model"), "cross-encoder", "POST /predict")
    sequences, single = predict_inputs(
        bodies.required(body, "inputs", "POST /predict"), app_state.settings.max_inputs
    )
    activation = not bodies.flag(body, "raw_scores", False)
    runtime = model.runtime
    await check_truncation(body, sequences, lambda: runtime._encode_keys(sequences), runtime.max_seq_length)
    texts = [i for i, s in enumerate(sequences) if isinstance(s, str)]
    pairs = [i for i, s in enumerate(sequences) if not isinstance(s, str)]
    runs = []
    if texts:
        runs.append(model.runtime.apredict_texts([sequences[i] for i in texts], apply_activation=activation))
    if pairs:
        runs.append(model.runtime.apredict([sequences[i] for i in pairs], apply_activation=activation))
    results = await model_call(asyncio.gather(*runs), model.id)
    app_state.metrics.count_input(model.id, await model.input_tokens(sequences))
    scores = np.empty((len(sequences), model.runtime.num_labels), dtype=np.float32)
    for rows, got in zip([r for r in (texts, pairs) if r], results, strict=True):
        scores[rows] = got.reshape(len(rows), -1)
    labels = _labels(model)
    answer = []
    for row in scores:
        order = sorted(range(len(labels)), key=lambda j: (-float(row[j]), j))
        answer.append([{"score": float(row[j]), "label": labels[j]} for j in order])
    return answer[0] if single else answer


async def similarity(app_state, body: dict[str, Any]) -> list[float]:
    inputs = bodies.required(body, "inputs", "POST /similarity")
    if not isinstance(inputs, dict):
        raise invalid(
            '\'inputs\' must be an object {"source_sentence": str, "sentences": [str, ...]}', "invalid_type"
        )
    source = bodies.text(
        bodies.required(inputs, "source_sentence", "POST /similarity"), "inputs.source_sentence"
    )
    sentences = bodies.required(inputs, "sentences", "POST /similarity")
    if isinstance(sentences, list) and not sentences:
        raise empty_input(
            "Input validation error: 'inputs.sentences' cannot be empty; send at least one sentence"
        )
    sentences = bodies.texts(sentences, "inputs.sentences", app_state.settings.max_inputs - 1)
    for where, item in (
        ("inputs.source_sentence", source),
        *((f"inputs.sentences[{i}]", t) for i, t in enumerate(sentences)),
    ):
        if not item:
            raise empty_input(f"Input validation error: {where} is an empty string; send text to embed")
    options = similarity_parameters(body)
    model = app_state.models.get(body.get("model"), "bi-encoder", "POST /similarity")
    texts = with_prompt(model, options, [source, *sentences], PARAMETERS)
    await check_truncation(
        options, texts, lambda: model.tokenizer.encode(texts), model.runtime.max_seq_length, PARAMETERS
    )
    vectors = await model_call(model.runtime.aencode(texts), model.id)
    app_state.metrics.count_input(model.id, await model.input_tokens(texts))
    return cosines(vectors[0], vectors[1:]).tolist()


def similarity_parameters(body: dict[str, Any]) -> dict[str, Any]:
    """TEI's ``SimilarityParameters`` (``truncate``, ``truncation_direction``, ``prompt_name``), which TEI
    passes on to its embed: ``parameters``, an object or null (fields TEI does not know are ignored)."""
    value = body.get("parameters")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid(
            f'\'parameters\' must be an object {{"truncate", "truncation_direction", "prompt_name"}} or null, got a JSON {bodies.json_type(value)}',
            "invalid_type",
        )
    return value


def cosines(source: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Cosine of ``source`` with each row of ``others`` (float32 math on the unit vectors; 0 for a zero
    vector), as float64 values for JSON."""
    norms = np.linalg.norm(others, axis=1) * np.linalg.norm(source)
    dots = others @ source
    safe = np.where(norms > 0, norms, 1.0)
    return np.where(norms > 0, dots / safe, 0.0).astype(np.float64)


async def rerank(app_state, body: dict[str, Any]) -> list[dict[str, Any]]:
    query = bodies.text(bodies.required(body, "query", "POST /rerank"), "query")
    texts = bodies.required(body, "texts", "POST /rerank")
    if isinstance(texts, list) and not texts:
        raise empty_input("Input validation error: 'texts' cannot be empty; send at least one text to rank")
    texts = bodies.texts(texts, "texts", app_state.settings.max_inputs)
    if not query:
        for i, text in enumerate(texts):
            if not text:  # TEI's rule: a pair is empty when both its texts are
                raise empty_input(
                    f"Input validation error: 'query' and texts[{i}] are both empty strings; send text to rank"
                )
    raw_scores = bodies.flag(body, "raw_scores", False)
    return_text = bodies.flag(body, "return_text", False)
    model = app_state.models.get(body.get("model"), "cross-encoder", "POST /rerank")
    if model.runtime.num_labels != 1:
        raise invalid(
            f"/rerank needs a cross-encoder with one output label; {model.id!r} has {model.runtime.num_labels}; use POST /predict or POST /v1/sas with it",
            "invalid_model",
        )
    pairs = [(query, t) for t in texts]
    await check_truncation(
        body, pairs, lambda: model.runtime._encode_keys(pairs), model.runtime.max_seq_length
    )
    scores = await model_call(model.runtime.apredict(pairs, apply_activation=not raw_scores), model.id)
    app_state.metrics.count_input(model.id, await model.input_tokens(pairs))
    order = sorted(range(len(texts)), key=lambda i: (-float(scores[i]), i))
    ranked = []
    for i in order:
        item: dict[str, Any] = {"index": i, "score": float(scores[i])}
        if return_text:
            item["text"] = texts[i]
        ranked.append(item)
    return ranked


async def tokenize(app_state, body: dict[str, Any]) -> bytes:
    model = app_state.models.get(body.get("model"), None, "POST /tokenize")
    texts = tei_texts(
        bodies.required(body, "inputs", "POST /tokenize"), "inputs", app_state.settings.max_inputs
    )
    special = bodies.flag(body, "add_special_tokens", True)
    texts = with_prompt(model, body, texts)

    def answer() -> bytes:  # a row per token: a 4 MiB body gives an answer of some 80 MB
        prepared = [model.tokenizer._prepare(t) for t in texts]
        encodings = model.untruncated.encode_batch(prepared, add_special_tokens=special)
        return to_json_in_parts([_tokens(e, text) for e, text in zip(encodings, prepared, strict=True)])

    return await unless_small(texts, answer)


def _tokens(encoding: Any, text: str) -> list[dict[str, Any]]:
    """TEI's ``SimpleToken`` s: a special token by its name with no offsets; the others with the text they
    cover and its UTF-8 byte offsets (``tokenizers`` gives character offsets in Python)."""
    out = []
    for token_id, token, (start, stop), special in zip(
        encoding.ids, encoding.tokens, encoding.offsets, encoding.special_tokens_mask, strict=True
    ):
        if special:
            out.append({"id": token_id, "text": token, "special": True, "start": None, "stop": None})
        else:
            first = len(text[:start].encode("utf-8"))
            out.append(
                {
                    "id": token_id,
                    "text": text[start:stop],
                    "special": False,
                    "start": first,
                    "stop": first + len(text[start:stop].encode("utf-8")),
                }
            )
    return out


async def decode(app_state, body: dict[str, Any]) -> list[str]:
    from simkernel.runtime.inference.threads import run_blocking

    model = app_state.models.get(body.get("model"), None, "POST /decode")
    ids = bodies.required(body, "ids", "POST /decode")
    skip = bodies.flag(body, "skip_special_tokens", True)
    if isinstance(ids, list) and ids and all(isinstance(row, list) for row in ids):
        rows, where = ids, "ids[{}]"
        if len(rows) > app_state.settings.max_inputs:
            raise ApiError(
                413,
                f"'ids' holds {len(rows):,} arrays, over this server's limit of {app_state.settings.max_inputs:,} per request (max_client_batch_size); split it into several requests",
                "too_many_inputs",
            )
    else:
        rows, where = [ids], "ids"
    vocab = model.untruncated.get_vocab_size(with_added_tokens=True)

    def texts() -> list[str]:
        for i, row in enumerate(rows):
            name = where.format(i)
            if not isinstance(row, list):
                raise invalid(f"{name} must be an array of token ids (integers)", "invalid_type")
            if not row:
                raise empty_input(
                    f"Input validation error: {name} cannot be empty; send at least one token id"
                )
            for token in row:
                if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab:
                    raise invalid(
                        f"{name} holds {str(token)[:40]}, which is not a token id of {model.id!r} (integers 0 to {vocab - 1})",
                        "invalid_value",
                    )
        return [model.untruncated.decode(row, skip_special_tokens=skip) for row in rows]

    ids = sum(len(row) if isinstance(row, list) else 1 for row in rows)
    if len(rows) > INLINE_ITEMS or ids > INLINE_IDS:
        return await run_blocking(texts)  # a 4 MiB body holds a million ids
    return texts()


def _model_type(model: ServedModel) -> dict[str, Any]:
    if model.kind == "bi-encoder":
        return {"embedding": {"pooling": model.runtime.config.pooling}}
    labels = _labels(model)
    described = {
        "id2label": {str(i): label for i, label in enumerate(labels)},
        "label2id": {label: i for i, label in enumerate(labels)},
    }
    return {"reranker" if len(labels) == 1 else "classifier": described}


def info(app_state, name: str | None) -> dict[str, Any]:
    """TEI's ``Info`` of the served model ``name`` (None: the first served)."""
    from simkernel import __version__
    from simkernel.runtime.inference.batch_settings import batch_settings

    model = app_state.models.get(name, None, "GET /info")
    batcher = model.batcher
    tokens, queue = (
        (batcher.max_batch_tokens, batcher.max_queue)
        if batcher is not None
        else batch_settings(app_state.settings.max_batch_tokens, app_state.settings.max_queue)
    )
    return {
        "model_id": model.id,
        "model_sha": None,
        "model_dtype": DTYPES.get(model.runtime.precision, model.runtime.precision),
        "served_model_name": model.id,
        "model_type": _model_type(model),
        "max_concurrent_requests": queue,
        "max_input_length": model.runtime.max_seq_length,
        "max_batch_tokens": tokens,
        "max_batch_requests": None,
        "max_client_batch_size": app_state.settings.max_inputs,
        "auto_truncate": True,
        "tokenization_workers": 1,
        "version": __version__,
        "sha": None,
        "docker_label": None,
    }


async def root(app_state, body: dict[str, Any]) -> Any:
    """TEI's ``POST /``: the route the body's shape and the model's kind pick (see the module docstring)."""
    inputs = body.get("inputs")
    if isinstance(inputs, dict):
        return await similarity(app_state, body)
    if "query" in body and "texts" in body:
        return await rerank(app_state, body)
    if _holds_pair(inputs):
        return await predict(app_state, body)
    model = app_state.models.get(body.get("model"), None, "POST /")
    if model.kind == "bi-encoder" and "parameters" in body and body.get("model") is None:
        # the Inference API's text-classification body ({"inputs", "parameters"}; feature-extraction
        # bodies carry their parameters at the root): a served cross-encoder classifies it
        model = next((m for m in app_state.models if m.kind == "cross-encoder"), model)
    if model.kind == "cross-encoder":
        return await predict(app_state, {**body, "model": model.id})
    return await embed(app_state, {**body, "model": model.id})


def _holds_pair(inputs: Any) -> bool:
    """An ``inputs`` that only a cross-encoder takes: a pair ``[a, b]`` or an array holding arrays."""
    if not isinstance(inputs, list) or not inputs:
        return False
    if all(isinstance(item, str) for item in inputs):
        return False
    return all(isinstance(item, list) for item in inputs)
