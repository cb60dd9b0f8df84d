"""The served models: loaded once at start from the ``--model`` ids, never by a request.

Each id is resolved (store, local folder, or the hub) and loaded when the server starts; a request names
one of these ids (or none: the first served model of the kind the endpoint needs) and is answered by
the instance loaded then. A bi-encoder serves embeddings, similarity, SAS and reference match; a
cross-encoder serves rerank and SAS. The evaluators and the metric's provider share the loaded model
(``get_text_encoder`` / ``get_cross_encoder``), so every endpoint's requests share its forward passes.
The SASEvaluator and the metric's provider serve ``/v1/sas`` and ``/v1/reference-match``, which answer
the drop-ins' exact contracts (see :mod:`simkernel.serve.routes_eval`); ``/v1/score/{metric}`` uses the
registry's scorers.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simkernel.serve.errors import ApiError
from simkernel.serve.settings import ServeSettings


@dataclass
class ServedModel:
    """One ``--model``: its id, kind (``"bi-encoder"`` or ``"cross-encoder"``), loaded runtime model
    (TextEncoder / CrossEncoder), its SASEvaluator and (bi-encoders) its local embedding provider."""

    id: str
    kind: str
    runtime: Any
    sas: Any
    provider: Any = None

    @property
    def batcher(self) -> Any:
        return getattr(self.runtime, "_batcher", None)

    def count_tokens(self, inputs: Sequence[str | tuple[str, str]]) -> int:
        """Tokens of ``inputs`` as the model reads them (special tokens included, truncated): texts, and
        for a cross-encoder (a, b) pairs too (one sequence of two segments each)."""
        if self.kind == "cross-encoder":
            encodings = self.runtime._encode_keys(list(inputs))
        else:
            encodings = self.tokenizer.encode(list(inputs))
        return sum(len(encoding.ids) for encoding in encodings)

    async def input_tokens(self, inputs: Sequence[str | tuple[str, str]]) -> int:
        """:meth:`count_tokens`, off the event loop for many or long inputs: a request's input tokens, as
        ``simkernel_input_tokens_total`` counts them (every input the request gave the model, repeats
        included, whether or not a cache answered it)."""
        from simkernel.serve.offload import unless_small

        return await unless_small(inputs, lambda: self.count_tokens(inputs))

    def row_inputs(self, predicted: Sequence[str], targets: Sequence[Any]) -> list[str | tuple[str, str]]:
        """The inputs that a row metric (SAS's, ``/v1/score/{metric}``) gives this model for rows of
        ``predicted`` texts and their ``targets`` (a text, or a list of texts, each): for a cross-encoder
        each prediction paired with each of its targets, for a bi-encoder the predictions then every
        target (:func:`~simkernel.scoring.metrics.sas.cross_pairs`, ``bi_encoder_texts``)."""
        from simkernel.scoring.metrics.sas import bi_encoder_texts, cross_pairs

        groups = [[target] if isinstance(target, str) else list(target) for target in targets]
        if self.kind == "cross-encoder":
            return list(cross_pairs(predicted, groups))
        return list(bi_encoder_texts(predicted, groups))

    @property
    def tokenizer(self) -> Any:
        """The model's :class:`~simkernel.runtime.inference.tokenizer.TextTokenizer` (truncating at
        ``max_seq_length``, lower-casing where the model does)."""
        return self.runtime._tokenizer

    @functools.cached_property
    def untruncated(self) -> Any:
        """A copy of the model's ``tokenizers.Tokenizer`` that does not truncate (TEI's /tokenize and
        /decode show whole texts)."""
        from tokenizers import Tokenizer

        copy = Tokenizer.from_str(self.tokenizer._tokenizer.to_str())
        copy.no_truncation()
        return copy

    @functools.cached_property
    def prompts(self) -> dict[str, str]:
        """The ``prompts`` of the model's ``config_sentence_transformers.json`` (empty when it has none)."""
        path = Path(self.runtime.model_path) / "config_sentence_transformers.json"
        try:
            prompts = json.loads(path.read_text(encoding="utf-8")).get("prompts") or {}
        except (OSError, ValueError, AttributeError):
            return {}
        if not isinstance(prompts, dict):
            return {}
        return {str(k): v for k, v in prompts.items() if isinstance(v, str)}


class ServedModels:
    """The models of this server, by id, in the order given."""

    def __init__(self, models: list[ServedModel]) -> None:
        self._models = {model.id: model for model in models}

    def __iter__(self):
        return iter(self._models.values())

    def __len__(self) -> int:
        return len(self._models)

    def ids(self) -> list[str]:
        return list(self._models)

    def get(self, name: Any, kind: str | None, endpoint: str) -> ServedModel:
        """The served model ``name`` (None: the first of ``kind``); 404 naming the served ones."""
        kinds = (kind,) if kind else ("bi-encoder", "cross-encoder")
        if name is None:
            for model in self._models.values():
                if model.kind in kinds:
                    return model
            raise ApiError(
                404,
                f"{endpoint} needs a {' or '.join(kinds)} model and this server serves none; served models: {self._described()}; start the server with --model ID of such a model",
                "no_model_of_kind",
            )
        if not isinstance(name, str):
            raise ApiError(
                422,
                f"'model' must be a string naming a served model, got {type(name).__name__}; served models: {self._described()}",
                "invalid_type",
            )
        found = self._models.get(name)
        if found is None:
            raise ApiError(
                404,
                f"the model {name[:200]!r} is not served here; served models: {self._described()}; pass one of them as 'model' (a request never loads a model: the operator starts the server with --model ID)",
                "model_not_found",
            )
        if found.kind not in kinds:
            raise ApiError(
                404,
                f"{endpoint} needs a {' or '.join(kinds)} model, and {name!r} is a {found.kind}; served models: {self._described()}",
                "model_not_found",
            )
        return found

    def _described(self) -> str:
        return ", ".join(f"{m.id} ({m.kind})" for m in self._models.values())


def load_models(settings: ServeSettings) -> ServedModels:
    """Load every ``--model`` (the batching settings go to the environment first, so the evaluators'
    and the metric provider's shared instances are the very models loaded here)."""
    from simkernel.components.evaluators import SASEvaluator
    from simkernel.metrics.embedding_providers import LocalEmbeddingProvider
    from simkernel.runtime import get_cross_encoder, get_text_encoder
    from simkernel.runtime.acquisition.resolve import resolve_model
    from simkernel.runtime.inference.config import read_model_config

    if settings.max_batch_tokens is not None:
        os.environ["SIMKERNEL_MAX_BATCH_TOKENS"] = str(settings.max_batch_tokens)
    if settings.max_queue is not None:
        os.environ["SIMKERNEL_MAX_QUEUE"] = str(settings.max_queue)
    loaded = []
    for model_id in settings.models:
        kind = read_model_config(resolve_model(model_id, precision=settings.precision)).kind
        sas = SASEvaluator(model=model_id, precision=settings.precision, token=None)
        sas.warm_up()
        provider = None
        if kind == "cross-encoder":
            runtime = get_cross_encoder(model_id, precision=settings.precision)
        else:
            runtime = get_text_encoder(model_id, precision=settings.precision)
            provider = LocalEmbeddingProvider(model_id, precision=settings.precision)
            provider._encoder = runtime  # the metric's provider embeds with the very model loaded here
        loaded.append(ServedModel(model_id, kind, runtime, sas, provider))
    return ServedModels(loaded)
