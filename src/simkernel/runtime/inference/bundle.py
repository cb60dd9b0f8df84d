"""What a bundle folder holds: which ONNX file serves a precision, and how it was optimised.

A bundle (written by :mod:`simkernel.runtime.acquisition`) keeps ``model.onnx`` (fp32) and optionally
``model_int8.onnx`` next to the checkpoint's configuration files and the ``simkernel.json`` manifest; a
bundle prepared with ``simkernel models prepare --precision int8`` keeps ``model_int8.onnx`` alone (its
manifest's ``profile`` says so, and :func:`left_out` names the fix when fp32 is asked of it).
``precision="bf16"`` runs ``model.onnx`` on OpenVINO in bf16 (CPUs with native bf16 only, see
:mod:`simkernel.runtime.inference.bf16`); fp32 and int8 run on onnxruntime.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from simkernel.errors import ModelError
from simkernel.runtime.inference.bf16 import bf16_status, require_bf16
from simkernel.runtime.inference.session import OnnxEncoderSession
from simkernel.runtime.inference.tokenizer import TextTokenizer
from simkernel.runtime.store.layout import PRECISIONS, TOKEN_LAYERS_KIND, known_precision
from simkernel.runtime.store.manifest import (
    check_bundle,
    kept_precisions,
    manifest_entries,
    read_manifest,
)

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.runtime.inference.openvino_session import OpenVinoEncoderSession

# OpenVINO's inference precision for precision="bf16". Tests set "f32" (with the CPU check passed) to run
# the whole bf16 path on a CPU without bf16; nothing else changes it.
BF16_INFERENCE = "bf16"
_PRE_OPTIMISED_LEVELS = {
    "basic",
    "extended",
    "all",
    "ORT_ENABLE_BASIC",
    "ORT_ENABLE_EXTENDED",
    "ORT_ENABLE_ALL",
}


def is_bundle(folder: Path) -> bool:
    """A folder simkernel can load directly: ``tokenizer.json``, ``config.json`` and an ONNX file."""
    return (
        folder.is_dir()
        and (folder / "tokenizer.json").is_file()
        and (folder / "config.json").is_file()
        and any(folder.glob("*.onnx"))
    )


def check_precision(precision: str) -> str:
    """``precision`` if it is known and runs here; ValueError for an unknown one, and for ``"bf16"``
    :class:`~simkernel.errors.PrecisionUnavailableError` on a CPU without native bf16 (or
    :class:`~simkernel.errors.MissingDependencyError` without OpenVINO): before anything is resolved,
    downloaded or loaded."""
    known_precision(precision)
    if precision == "bf16":
        require_bf16()
    return precision


def left_out(folder: Path, precision: str) -> ModelError | None:
    """The error for ``precision`` in a bundle that was prepared to keep other precisions only
    (``simkernel models prepare --precision int8``: no fp32 graph, so neither fp32 nor bf16), else None."""
    manifest = read_manifest(folder)
    kept = kept_precisions(manifest)
    if kept is None or PRECISIONS[precision] in {PRECISIONS.get(p) for p in kept}:
        return None
    shown = " and ".join(kept)
    model_id = manifest.get("id")
    prepare = "simkernel models prepare" + (f" {model_id}" if model_id else "")
    return ModelError(
        f"{folder} holds only the {shown} model (prepared with `simkernel models prepare --precision {shown}`), so precision={precision!r} cannot load from it: run `{prepare}` (without --precision {shown}) to add the fp32 model, or use precision={kept[0]!r} (simkernel score --precision {kept[0]})"
    )


def onnx_file(folder: Path, precision: str) -> Path:
    """The ONNX file of ``precision`` in the bundle; if missing, :class:`ModelError` names the fix."""
    path = folder / PRECISIONS[check_precision(precision)]
    if not path.is_file():
        reduced = left_out(folder, precision)
        if reduced is not None:
            raise reduced
        if precision == "int8":
            raise ModelError(
                f"{path} is missing: this bundle has no int8 model. Build it with `simkernel models prepare` (the default model) or `simkernel models export SRC {folder} --precision int8`, or use precision='fp32'."
            )
        raise ModelError(
            f"{path} is missing: the bundle is incomplete. Rebuild it with `simkernel models prepare` (the default model) or `simkernel models export SRC DST`, or delete the folder so it is downloaded again."
        )
    return path


def session_optimization(folder: Path, onnx_name: str) -> str:
    """``"basic"`` for a graph the exporter saved already optimised (per the manifest), else ``"all"``."""
    entry = manifest_entries(read_manifest(folder)).get(onnx_name, {})
    level = entry.get("graph_optimization", entry.get("optimization"))
    if entry.get("optimized") is True or (isinstance(level, str) and level in _PRE_OPTIMISED_LEVELS):
        return "basic"
    return "all"


def refuse_token_layers(folder: Path) -> None:
    """:class:`ModelError` when ``folder`` is a token-layers bundle (hidden states per layer, for
    BERTScore): it holds no sentence embeddings nor scores, and its first output is the embedding layer's."""
    if read_manifest(folder).get("kind") == TOKEN_LAYERS_KIND:
        raise ModelError(
            f"{folder} holds a model's token layers (hidden states per token, for BERTScore), not sentence embeddings or scores: load it with simkernel.runtime.TokenEncoder, or give TextEncoder / CrossEncoder the model's own id or bundle"
        )


def open_bundle(
    folder: Path, config, precision: str, outputs, *, threads, providers, lowercase: bool = False
):
    """The session of ``precision`` (onnxruntime; OpenVINO for bf16) and the tokenizer of the bundle
    ``folder``.

    The bundle is first checked against its manifest (:func:`~simkernel.runtime.store.manifest.
    check_bundle`: hashed at the first load after a change, a stat of each file later). ``config`` is its
    :class:`~simkernel.runtime.inference.config.ModelConfig`; ``outputs`` the output
    names the caller accepts; ``lowercase`` whether texts are lower-cased before tokenization
    (bi-encoders whose config says so).
    """
    refuse_token_layers(folder)
    path = onnx_file(folder, precision)
    check_bundle(folder)  # every file against its checksum, unless verified unchanged before
    session = open_graph(folder, path.name, precision, outputs, threads=threads, providers=providers)
    tokenizer = TextTokenizer(
        folder / "tokenizer.json",
        max_length=config.max_seq_length,
        pad_token=config.pad_token,
        pad_token_id=config.pad_token_id,
        lowercase=lowercase,
        padding_side=config.padding_side,
    )
    return session, tokenizer


def open_graph(
    folder: Path, graph_name: str, precision: str, outputs, *, threads, providers
) -> OnnxEncoderSession | OpenVinoEncoderSession:
    """The session of the ONNX file ``graph_name`` of the bundle ``folder`` for ``precision``: onnxruntime
    (at the level :func:`session_optimization` reads from the manifest) for fp32 and int8, OpenVINO's CPU
    plugin computing in :data:`BF16_INFERENCE` for bf16 (which runs fp32 graphs). The caller has checked the
    bundle (:func:`~simkernel.runtime.store.manifest.check_bundle`)."""
    path = folder / graph_name
    if precision == "bf16":
        if providers not in (None, [], (), ["CPUExecutionProvider"], ("CPUExecutionProvider",)):
            raise ValueError(
                f"providers={providers!r} applies to onnxruntime (fp32, int8); precision='bf16' runs on OpenVINO's CPU plugin: drop providers, or use precision='fp32' with them"
            )
        from simkernel.runtime.inference.openvino_session import OpenVinoEncoderSession

        return OpenVinoEncoderSession(path, outputs, threads=threads, inference_precision=BF16_INFERENCE)
    optimization = session_optimization(folder, path.name)
    return OnnxEncoderSession(path, outputs, threads=threads, providers=providers, optimization=optimization)


ENGINES = {"fp32": "onnxruntime", "int8": "onnxruntime", "bf16": "openvino"}


def capabilities() -> dict:
    """Which precisions run on this machine: ``{"cpu": {"avx512_bf16": bool, "amx_bf16": bool},
    "precisions": {name: {"available": bool, "reason": str | None, "engine": str, "file": str}}}``;
    ``reason`` says why an unavailable one cannot run (e.g. what the CPU lacks), ``file`` is the bundle's
    ONNX file it runs (bf16 runs the fp32 ``model.onnx``). ``simkernel.kernels.capabilities()`` has the
    kernel's side (SIMD backends, threads)."""
    status = bf16_status()
    precisions = {}
    for name, file in PRECISIONS.items():
        available, reason = (status["available"], status["reason"]) if name == "bf16" else (True, None)
        precisions[name] = {"available": available, "reason": reason, "engine": ENGINES[name], "file": file}
    return {"cpu": status["cpu"], "precisions": precisions}
