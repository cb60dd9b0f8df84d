"""Export a sentence-transformers / transformers checkpoint to a simkernel ONNX bundle, with a parity check.

Needs the ``export`` extra (torch, transformers, onnx; sentence-transformers for the parity reference),
imported lazily: the run-time package never imports any of them.

What :func:`export_model` does, in a temporary folder next to the destination (each step lives in the
module named):

1. reads the checkpoint's configs (:func:`simkernel.runtime.inference.config.read_model_config`): a
   bi-encoder graph outputs ``token_embeddings`` (batch, seq, hidden), a cross-encoder graph ``logits``
   (batch, num_labels); inputs ``input_ids``, ``attention_mask`` and ``token_type_ids`` (when the model
   uses them), int64, dynamic ``batch`` and ``sequence`` axes;
2. traces the model (:mod:`~simkernel.runtime.acquisition.trace`) with torch's TorchScript-based exporter
   (``dynamo=False``, opset 17) and the ``eager`` attention implementation. The dynamo exporter of torch
   2.13 + transformers 5 produced a graph whose outputs were wrong for any shape other than the example's
   (max |diff| 2.6 on a (1, 5) input), so it is not used;
3. fp32 (:mod:`~simkernel.runtime.acquisition.graph_passes`): saves the graph optimised by onnxruntime at
   the ``extended`` level (LayerNormalization, Gelu, FusedMatMul fusions), so loading it needs only the
   ``basic`` passes (the manifest says so; :func:`simkernel.runtime.inference.bundle.session_optimization`
   reads it). ``fuse=True`` also applies onnxruntime's transformer optimizer first (Attention,
   EmbedLayerNormalization, SkipLayerNormalization, BiasGelu); it is off by default because the fused
   graph measured no faster (slower in 2 of 3 runs) and loaded no faster here (docs/design-notes.md);
4. int8: the unfused graph after the same offline ``extended`` optimisation, then
   :mod:`simkernel.runtime.acquisition.quantize` (per-row activations, batch-independent; not
   re-optimised after, see :func:`~simkernel.runtime.acquisition.graph_passes.per_row_int8`);
5. moves each graph's weights into ``<graph>_data`` (ONNX external data, memory-mapped by onnxruntime:
   faster load, less memory; :func:`~simkernel.runtime.acquisition.graph_passes.externalize_weights`),
   copies the tokenizer and configuration files, writes the ``simkernel.json`` manifest
   (:mod:`~simkernel.runtime.store.manifest`);
6. checks parity (:mod:`~simkernel.runtime.acquisition.parity`) of the finished bundle, loaded by
   simkernel's own :class:`BundleTextEncoder` / :class:`BundleCrossEncoder`, against sentence-transformers
   run on the same checkpoint in torch, on
   :data:`~simkernel.runtime.acquisition.export_probes.PROBE_TEXTS` (English, Russian, Chinese, German,
   empty, longer than the max length). A graph that misses the tolerance is not written:
   :class:`ParityError` gives the figures. If only the fused fp32 graph fails, the unfused one is tried
   before giving up.

The destination appears complete or not at all (a rename of the finished temporary folder).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from simkernel.errors import ModelError
from simkernel.runtime.acquisition.export_probes import CALIBRATION_TEXTS
from simkernel.runtime.acquisition.graph_passes import (
    externalize_weights,
    matching_dense_layers,
    optimize_graph,
    per_row_int8,
)
from simkernel.runtime.acquisition.parity import PARITY_TOLERANCE, ParityError, Reference, passes, rounded
from simkernel.runtime.acquisition.quantize import DEFAULT_QUANTIZATION, quantize_model
from simkernel.runtime.acquisition.registry import WEIGHT_FILES, known_model
from simkernel.runtime.acquisition.trace import copy_tokenizer_and_configs, export_raw_graph
from simkernel.runtime.inference.config import read_model_config
from simkernel.runtime.inference.tokenizer import TextTokenizer
from simkernel.runtime.store import bundles as store
from simkernel.runtime.store import workdirs
from simkernel.runtime.store.layout import PRECISIONS
from simkernel.runtime.store.manifest import file_sha256, package_versions, write_manifest

__all__ = [
    "EXPORTED_PRECISIONS",
    "ParityError",
    "calibration_feeds",
    "export_model",
    "export_to_store",
    "exported_precisions",
]

EXPORTED_PRECISIONS = ("fp32", "int8")  # bf16 runs the fp32 file


def exported_precisions(precision: str | Iterable[str], fp32_graph: str = "model.onnx") -> tuple[str, ...]:
    """The distinct precisions to export, from one name or several; ValueError for any but fp32 and int8
    (bf16 runs the fp32 graph, ``fp32_graph`` in the message)."""
    chosen = (precision,) if isinstance(precision, str) else tuple(precision)
    bad = [p for p in chosen if p not in EXPORTED_PRECISIONS]
    if "bf16" in bad:
        raise ValueError(
            f"precision='bf16' needs no export: it runs the fp32 {fp32_graph} on OpenVINO; export 'fp32'"
        )
    if not chosen or bad:
        raise ValueError(f"precision must be 'fp32', 'int8' or a tuple of them, got {precision!r}")
    return tuple(dict.fromkeys(chosen))


def export_model(
    src: str | Path,
    dst: str | Path,
    precision: str | Iterable[str] = "fp32",
    *,
    model_id: str | None = None,
    source: dict | None = None,
    revision: str | None = None,
    quantization: str = DEFAULT_QUANTIZATION,
    fuse: bool = False,
    overwrite: bool = False,
    tolerance: dict | None = None,
    int8_keep_fp32: Iterable[str] | None = None,
) -> Path:
    """Export the checkpoint folder ``src`` into the bundle folder ``dst``; returns ``dst``.

    Args:
        src: a sentence-transformers or transformers checkpoint folder (``config.json`` plus
            ``model.safetensors`` or ``pytorch_model.bin``, tokenizer files).
        dst: the bundle folder to create. It must not exist, or be empty, unless ``overwrite``.
        precision: ``"fp32"`` (``model.onnx``), ``"int8"`` (``model_int8.onnx``) or both as a tuple.
        model_id: the id written into the manifest (default: the folder name of ``dst``).
        source: extra facts about where ``src`` came from (package, repo, ...) for the manifest.
        revision: the source revision (commit or package version) for the manifest.
        quantization: the int8 method, see :mod:`simkernel.runtime.acquisition.quantize`.
        fuse: apply onnxruntime's transformer fusions to the fp32 graph (see the module docstring).
        overwrite: replace an existing non-empty ``dst``.
        tolerance: overrides of :data:`PARITY_TOLERANCE` entries, keyed like it.
        int8_keep_fp32: parts of dense-layer (``MatMul``) node names whose layers stay fp32 in the int8
            graph, e.g. ``("layer.10/intermediate",)``: per-row int8 of all-mpnet-base-v2 misses the
            parity tolerance on very short texts (min cosine 0.950 on the empty string) until that one of
            its 72 dense layers is kept in fp32 (0.982). Recorded in the manifest. None (the default):
            the layers the registry names for ``model_id`` (:func:`int8_fp32_layers`).

    Raises:
        ParityError: a graph misses the parity tolerance (the message has the figures); ``dst`` untouched.
        MissingDependencyError: the export extra is not installed (names the ``pip install``).
        ModelError: ``src`` is not a usable checkpoint, or ``dst`` exists and is not empty.
    """
    src, dst = Path(src).expanduser().resolve(), Path(dst).expanduser()
    precisions = exported_precisions(precision)
    if not (src / "config.json").is_file():
        raise ModelError(f"{src / 'config.json'} is missing: {src} is not a transformers checkpoint folder")
    if not any((src / name).is_file() for name in WEIGHT_FILES):
        raise ModelError(f"{src} has no weights ({' or '.join(WEIGHT_FILES)}): nothing to export")
    if dst.exists() and not overwrite and (not dst.is_dir() or any(dst.iterdir())):
        raise ModelError(
            f"{dst} already exists and is not empty; choose another folder or pass overwrite=True"
        )
    config = read_model_config(src)
    if config.unsupported_modules:
        raise ModelError(
            f"{src} has sentence-transformers modules {list(config.unsupported_modules)} that simkernel does not run (only Transformer, Pooling, Normalize); its exported embeddings would be wrong"
        )
    weights = sum((src / name).stat().st_size for name in WEIGHT_FILES if (src / name).is_file())
    need = weights * (3 if "int8" in precisions else 2)  # the raw graph, the bundle's graphs, the work files
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        workdirs.remove_orphans(dst.parent, f".{dst.name}-export-")  # left by killed exports to this place
        work = workdirs.make(dst.parent, f".{dst.name}-export-")
        try:
            bundle = work / "bundle"
            bundle.mkdir()
            copy_tokenizer_and_configs(src, bundle)
            raw = work / "raw.onnx"
            export_info = export_raw_graph(src, raw)
            reference = Reference(src, config.kind)
            files: dict[str, dict] = {}
            parity: dict[str, dict] = {}
            for prec in precisions:
                entry, figures = _build_precision(
                    prec,
                    raw,
                    bundle,
                    work,
                    src,
                    config,
                    reference,
                    quantization,
                    fuse,
                    {
                        **PARITY_TOLERANCE[(config.kind, prec)],
                        **((tolerance or {}).get((config.kind, prec), {})),
                    },
                    int8_fp32_layers(model_id, int8_keep_fp32),
                )
                files[PRECISIONS[prec]] = entry
                parity[prec] = figures
            _write_manifest(
                bundle, src, config, model_id or dst.name, files, parity, export_info, source, revision
            )
            _install(bundle, dst, overwrite)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    except OSError as exc:  # a full disk, a file size limit, a read-only folder: one clear line
        failure = workdirs.write_failure(exc, dst.parent, f"the export of {src}", need)
        if failure is None:
            raise
        raise failure from exc
    return dst


def int8_fp32_layers(model_id: str | None, int8_keep_fp32: Iterable[str] | None) -> tuple[str, ...]:
    """The dense layers an int8 export keeps in fp32: ``int8_keep_fp32`` when given, else those the registry
    names for ``model_id`` (:attr:`~simkernel.runtime.acquisition.registry.KnownModel.int8_keep_fp32`), else
    none."""
    if int8_keep_fp32 is not None:
        return tuple(int8_keep_fp32)
    known = known_model(model_id) if model_id else None
    return known.int8_keep_fp32 if known else ()


def export_to_store(
    src: str | Path, model_id: str, precision: str | Iterable[str] = ("fp32", "int8"), **kwargs: Any
) -> Path:
    """Export ``src`` and install it in the model store as ``model_id`` (atomic, under the store's lock)."""
    with store.staged_bundle(model_id) as staging:
        export_model(src, staging, precision, model_id=model_id, **kwargs)
    return store.model_dir(model_id)


def _build_precision(prec, raw, bundle, work, src, config, reference, quantization, fuse, tol, keep_fp32=()):
    """Write one precision's graph into ``bundle`` and check it; returns (manifest entry, parity figures)."""
    target = bundle / PRECISIONS[prec]
    attempts = []
    if prec == "fp32":
        for label in ("fused", "unfused") if fuse else ("unfused",):
            info = optimize_graph(raw, target, config, fuse=label == "fused")
            info.update(externalize_weights(target))
            write_manifest(bundle, {"files": {target.name: info}})  # loaded as users will load it
            figures = reference.compare(bundle, prec)
            attempts.append((label, figures))
            if passes(figures, tol):
                return _file_entry(target, prec, info), {**figures, "tolerance": tol}
    else:
        if quantization == DEFAULT_QUANTIZATION:
            info, qinfo = per_row_int8(raw, target, work, config, keep_fp32)
        else:  # onnxruntime's quantisers need the plain graph (their shape inference rejects contrib ops)
            quantized = work / "int8.onnx"
            kept = matching_dense_layers(raw, keep_fp32)
            qinfo = quantize_model(
                raw,
                quantized,
                method=quantization,
                calibration_feeds=calibration_feeds(src) if quantization == "static" else None,
                exclude_nodes=kept,
            )
            if kept:
                qinfo["kept_fp32"] = kept
            info = optimize_graph(quantized, target, config, fuse=False)
        info.update(externalize_weights(target))
        write_manifest(bundle, {"files": {target.name: info}})  # loaded as users will load it
        figures = reference.compare(bundle, prec)
        attempts.append((quantization, figures))
        if passes(figures, tol):
            return _file_entry(target, prec, {**info, "quantization": qinfo}), {**figures, "tolerance": tol}
    target.unlink(missing_ok=True)
    detail = "; ".join(f"{label}: {json.dumps(rounded(f))}" for label, f in attempts)
    hint = (
        " For int8, keep the most sensitive dense layers in fp32: int8_keep_fp32=('layer.N/intermediate',) / `simkernel models export ... --int8-keep-fp32 layer.N/intermediate` (try the last layers' N)."
        if prec == "int8"
        else ""
    )
    raise ParityError(
        f"the {prec} export of {src} does not match sentence-transformers within {tol} ({detail}); nothing was written. Check that the checkpoint loads in sentence-transformers, or report the figures.{hint}"
    )


def _file_entry(path: Path, precision: str, info: dict) -> dict:
    return {"precision": precision, **info}


def calibration_feeds(src: str | Path, batch_size: int = 8) -> list[dict[str, np.ndarray]]:
    """Tokenized :data:`CALIBRATION_TEXTS` batches (int64 feeds) for static int8 calibration."""
    config = read_model_config(src)
    tokenizer_path = Path(src) / "tokenizer.json"
    tok = TextTokenizer(
        tokenizer_path,
        max_length=config.max_seq_length,
        pad_token=config.pad_token,
        pad_token_id=config.pad_token_id,
        lowercase=config.do_lower_case,
        padding_side=config.padding_side,
    )
    feeds = []
    texts = list(CALIBRATION_TEXTS)
    for start in range(0, len(texts), batch_size):
        batch = tok.pad_batch(tok.encode(texts[start : start + batch_size]))
        feed = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}
        if config.uses_token_type_ids:
            feed["token_type_ids"] = batch.token_type_ids
        feeds.append(feed)
    return feeds


def _write_manifest(bundle, src, config, model_id, files, parity, export_info, source, revision) -> None:
    weights = {
        name: {"bytes": (src / name).stat().st_size, "sha256": file_sha256(src / name)}
        for name in WEIGHT_FILES
        if (src / name).is_file()
    }
    write_manifest(
        bundle,
        {
            "id": model_id,
            "kind": config.kind,
            "source": {"type": "export", "path": str(src), "weights": weights, **(source or {})},
            "revision": revision,
            "files": files,
            "parity": {"reference": "sentence-transformers (torch fp32) on the same checkpoint", **parity},
            "export": export_info,
            "versions": package_versions(
                "torch", "transformers", "sentence-transformers", "onnx", "onnxruntime", "tokenizers"
            ),
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        },
    )


def _install(bundle: Path, dst: Path, overwrite: bool) -> None:
    """Rename the finished ``bundle`` to ``dst`` (same filesystem), replacing an empty or allowed ``dst``
    (swapped in one step on Linux: a crash leaves the old bundle or the new one)."""
    if dst.is_dir() and not any(dst.iterdir()):
        dst.rmdir()
    if dst.exists() and not overwrite:
        raise ModelError(f"{dst} appeared while exporting; not replaced (pass overwrite=True)")
    workdirs.replace_dir(bundle, dst)
