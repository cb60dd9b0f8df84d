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
