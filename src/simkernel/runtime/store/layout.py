"""What a bundle folder is made of: the ONNX file that holds each precision's graph, and how its JSON files
(the manifest, the checkpoint's configuration) are read.

A bundle keeps ``model.onnx`` (fp32; ``precision="bf16"`` runs the same file on OpenVINO) and optionally
``model_int8.onnx`` next to the checkpoint's configuration files and the ``simkernel.json`` manifest
(:mod:`simkernel.runtime.store.manifest`). Whether a precision runs on this CPU is the inference layer's
question (:func:`simkernel.runtime.inference.bundle.check_precision`); here a precision is only a name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simkernel.errors import ModelError

PRECISIONS = {"fp32": "model.onnx", "int8": "model_int8.onnx", "bf16": "model.onnx"}


def known_precision(precision: str) -> str:
    """``precision`` if it is one of :data:`PRECISIONS`, else ValueError (whether it runs here is not
    checked)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
    return precision


def read_json(path: Path) -> Any:
    """Parse one JSON file; a corrupt file raises :class:`ModelError` naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(
            f"cannot read {path}: {exc}. The file is corrupt or unreadable; re-export or re-download the model (`simkernel models export SRC DST` or delete the folder and load the model again)."
        ) from exc


# Token layers (the hidden states per token of each layer, for BERTScore): a bundle of their own beside the
# model's, stored under the id ``<model id>@token-layers`` (``@`` cannot occur in a hub id, so it never
# names another model; the model's own bundle, its digest and its manifest stay as they are). It keeps the
# same precision files as a model bundle (``model.onnx``: every layer, ``model_int8.onnx``), each of
# which outputs ``hidden_states`` (layers + 1, batch, seq, hidden), plus one graph per layer
# (:func:`layer_graph_name`) that computes only the layers up to it; all of a precision's graphs read the
# weights of one external-data file (``model.onnx_data`` / ``model_int8.onnx_data``).
TOKEN_LAYERS_SUFFIX = "@token-layers"
TOKEN_LAYERS_KIND = "token-layers"  # the manifest's ``kind`` of such a bundle
ALL_LAYERS_OUTPUT = "hidden_states"  # the output of model.onnx / model_int8.onnx in a token-layers bundle
LAYER_OUTPUT = "hidden_state"  # the output of a one-layer graph: (batch, seq, hidden)


def token_layers_id(model_id: str) -> str:
    """The store id of ``model_id``'s token-layers bundle: ``"<model id>@token-layers"``."""
    return model_id if model_id.endswith(TOKEN_LAYERS_SUFFIX) else model_id + TOKEN_LAYERS_SUFFIX


def layer_graph_name(precision: str, layer: int) -> str:
    """The file of the graph that outputs layer ``layer`` (0: the embedding output) alone, in a token-layers
    bundle: ``model_layer_3.onnx`` (fp32, also run by bf16), ``model_int8_layer_3.onnx``."""
    return PRECISIONS[known_precision(precision)].removesuffix(".onnx") + f"_layer_{int(layer)}.onnx"
