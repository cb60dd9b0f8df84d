"""Tracing a checkpoint into an ONNX graph with torch (the ``export`` extra, imported lazily), and the
tokenizer and configuration files the bundle keeps from it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from simkernel._optional import import_optional
from simkernel.errors import ModelError
from simkernel.runtime.acquisition.graph_passes import warnings_silenced
from simkernel.runtime.acquisition.registry import CONFIG_FILES
from simkernel.runtime.inference.config import read_model_config

OPSET = 17
_FEATURE = "exporting a checkpoint to ONNX"


def export_raw_graph(src: str | Path, path: str | Path) -> dict:
    """Trace the checkpoint into an unoptimised fp32 ONNX graph at ``path``; returns export facts.

    Bi-encoders output ``token_embeddings``, cross-encoders ``logits`` (see
    :mod:`simkernel.runtime.acquisition.export`).
    """
    torch = import_optional("torch", "export", _FEATURE)
    transformers = import_optional("transformers", "export", _FEATURE)
    import_optional("onnx", "export", _FEATURE)
    src = Path(src)
    config = read_model_config(src)
    cross = config.kind == "cross-encoder"
    auto = transformers.AutoModelForSequenceClassification if cross else transformers.AutoModel
    try:
        model = auto.from_pretrained(str(src), attn_implementation="eager").eval()
    except (OSError, ValueError) as exc:
        raise ModelError(f"transformers cannot load the checkpoint {src}: {exc}") from exc
    input_names = ["input_ids", "attention_mask"] + (["token_type_ids"] if config.uses_token_type_ids else [])
    output_name = "logits" if cross else "token_embeddings"

    module_base: Any = torch.nn.Module

    class Graph(module_base):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            out = self.inner(**dict(zip(input_names, inputs, strict=False)))
            return out.logits if cross else out.last_hidden_state

    axes = {name: {0: "batch", 1: "sequence"} for name in input_names}
    axes[output_name] = {0: "batch"} if cross else {0: "batch", 1: "sequence"}
    return _trace(torch, Graph(model), path, input_names, [output_name], axes, {"output": output_name})


def _example_inputs(torch: Any, input_names: list[str]) -> tuple:
    """The traced example: two rows of 16 tokens, the second padded, so no all-ones mask shortcut can be
    traced into the graph."""
    ids = torch.full((2, 16), 1000, dtype=torch.long)
    mask = torch.ones((2, 16), dtype=torch.long)
    mask[1, 9:] = 0
    return (ids, mask, torch.zeros_like(ids))[: len(input_names)]


def _trace(
    torch: Any,
    module: Any,
    path: str | Path,
    input_names: list[str],
    output_names: list[str],
    axes: dict,
    facts: dict,
) -> dict:
    """``module`` traced on :func:`_example_inputs` into the ONNX graph at ``path`` with torch's TorchScript
    exporter (opset :data:`OPSET`); returns the export facts the bundle's manifest records, ``facts`` (the
    graph's own) among them."""
    start = time.perf_counter()
    with torch.no_grad(), warnings_silenced():
        torch.onnx.export(
            module,
            _example_inputs(torch, input_names),
            str(path),
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=axes,
            opset_version=OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    return {
        "exporter": "torch.onnx.export (TorchScript, dynamo=False)",
        "opset": OPSET,
        "attn_implementation": "eager",
        "inputs": input_names,
        **facts,
        "export_s": round(time.perf_counter() - start, 2),
    }


def copy_tokenizer_and_configs(src: Path, bundle: Path) -> None:
    """Copy the checkpoint's tokenizer and configuration files into ``bundle``; a checkpoint with only a
    slow tokenizer gets its ``tokenizer.json`` converted by transformers."""
    for name in CONFIG_FILES:
        if (src / name).is_file():
            (bundle / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / name, bundle / name)
    if not (bundle / "tokenizer.json").is_file():  # only the slow tokenizer's files: convert them
        transformers = import_optional("transformers", "export", _FEATURE)
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(src), use_fast=True)
        if not getattr(tokenizer, "is_fast", False):
            raise ModelError(
                f"{src} has no tokenizer.json and transformers cannot build a fast tokenizer for it"
            )
        tokenizer.backend_tokenizer.save(str(bundle / "tokenizer.json"))


def hidden_state_name(layer: int) -> str:
    """The raw token-layers graph's output of layer ``layer`` (0: the embedding output)."""
    return f"hidden_state_{layer}"


def export_hidden_states_graph(src: str | Path, path: str | Path) -> dict:
    """Trace the checkpoint's encoder into an unoptimised fp32 ONNX graph at ``path`` whose outputs are the
    hidden states per token: ``hidden_states`` (layers + 1, batch, seq, hidden; index 0 is the embedding
    output, index L the output of layer L, as transformers' ``output_hidden_states``) and each of them alone
    as ``hidden_state_0`` ... ``hidden_state_<layers>`` (batch, seq, hidden). Returns export facts
    (``num_layers`` among them).

    ``AutoModel`` (the encoder without a head, what BERTScore runs) with the ``eager`` attention, traced
    like :func:`export_raw_graph`; the token-layers exporter cuts one graph per output out of it
    (:func:`simkernel.runtime.acquisition.graph_passes.keep_output`).
    """
    torch = import_optional("torch", "export", _FEATURE)
    transformers = import_optional("transformers", "export", _FEATURE)
    import_optional("onnx", "export", _FEATURE)
    src = Path(src)
    config = read_model_config(src)
    try:
        model = transformers.AutoModel.from_pretrained(str(src), attn_implementation="eager").eval()
    except (OSError, ValueError) as exc:
        raise ModelError(f"transformers cannot load the checkpoint {src}: {exc}") from exc
    if hasattr(model, "decoder") and hasattr(model, "encoder"):  # as BERTScore: the encoder of an enc-dec
        model = model.encoder
    input_names = ["input_ids", "attention_mask"] + (["token_type_ids"] if config.uses_token_type_ids else [])
    module_base: Any = torch.nn.Module

    class Graph(module_base):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            out = self.inner(**dict(zip(input_names, inputs, strict=False)), output_hidden_states=True)
            states = tuple(out.hidden_states)
            return (torch.stack(states, dim=0), *states)

    with torch.no_grad():
        num_layers = len(Graph(model)(*_example_inputs(torch, input_names))) - 2
    output_names = ["hidden_states", *(hidden_state_name(i) for i in range(num_layers + 1))]
    axes: dict[str, dict[int, str]] = {name: {0: "batch", 1: "sequence"} for name in input_names}
    axes.update({name: {0: "batch", 1: "sequence"} for name in output_names[1:]})
    axes["hidden_states"] = {1: "batch", 2: "sequence"}
    return _trace(torch, Graph(model), path, input_names, output_names, axes, {"num_layers": num_layers})
