"""Export a sentence-transformers / transformers checkpoint to a simkernel ONNX bundle, with a parity check.

Needs the ``export`` extra (torch, transformers, onnx; sentence-transformers for the parity reference),
imported lazily: the run-time package never imports any of them.

What :func:`export_model` does, in a temporary folder next to the destination:

1. reads the checkpoint's configs (:func:`simkernel.runtime.inference.config.read_model_config`): a bi-encoder
   graph outputs ``token_embeddings`` (batch, seq, hidden), a cross-encoder graph ``logits``
   (batch, num_labels); inputs ``input_ids``, ``attention_mask`` and ``token_type_ids`` (when the model
   uses them), int64, dynamic ``batch`` and ``sequence`` axes;
2. traces the model with torch's TorchScript-based exporter (``dynamo=False``, opset 17) and the
   ``eager`` attention implementation. The dynamo exporter of torch 2.13 + transformers 5 produced a
   graph whose outputs were wrong for any shape other than the example's (max |diff| 2.6 on a
   (1, 5) input), so it is not used;
3. fp32: saves the graph optimised by onnxruntime at the ``extended`` level (LayerNormalization,
   Gelu, FusedMatMul fusions), so loading it needs only the ``basic`` passes (the manifest says so;
   :func:`simkernel.runtime.inference.bundle.session_optimization` reads it). ``fuse=True`` also applies
   onnxruntime's transformer optimizer first (Attention, EmbedLayerNormalization,
   SkipLayerNormalization, BiasGelu); it is off by default because the fused graph measured no faster
   (slower in 2 of 3 runs) and loaded no faster here (benchmarks/studies/README.md);
4. int8: the unfused graph after the same offline ``extended`` optimisation, then
   :mod:`simkernel.runtime.acquisition.quantize` (per-row activations, batch-independent; not
   re-optimised after, see :func:`per_row_int8`);
5. moves each graph's weights into ``<graph>_data`` (ONNX external data, memory-mapped by onnxruntime:
   faster load, less memory; :func:`externalize_weights`), copies the tokenizer and configuration
   files, writes the ``simkernel.json`` manifest;
6. checks parity of the finished bundle, loaded by simkernel's own :class:`BundleTextEncoder` /
   :class:`BundleCrossEncoder`, against sentence-transformers run on the same checkpoint in torch, on
   :data:`~simkernel.runtime.acquisition.export_probes.PROBE_TEXTS` (English, Russian, Chinese, German, empty,
   longer than the max length). A graph that misses the tolerance is not written: :class:`ParityError`
   gives the figures. If only the fused fp32 graph fails, the unfused one is tried before giving up.

The destination appears complete or not at all (a rename of the finished temporary folder).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from simkernel._optional import import_optional
from simkernel.cpu_budget import available_cpus
from simkernel.errors import ModelError
from simkernel.runtime.acquisition import parity, store
from simkernel.runtime.acquisition.export_probes import CALIBRATION_TEXTS, PROBE_PAIRS, PROBE_TEXTS
from simkernel.runtime.acquisition.quantize import DEFAULT_QUANTIZATION, quantize_model, weight_matmuls
from simkernel.runtime.acquisition.registry import CONFIG_FILES
from simkernel.runtime.acquisition.store import file_sha256
from simkernel.runtime.inference.bundle import PRECISIONS
from simkernel.runtime.inference.config import read_model_config
from simkernel.runtime.inference.manifest import MANIFEST, STAMP
from simkernel.runtime.inference.tokenizer import TextTokenizer

OPSET = 17
MANIFEST_FORMAT = 1
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
# Parity tolerances of an export (checked on the finished bundle vs sentence-transformers in torch):
# bi-encoders: minimum cosine between simkernel's and sentence-transformers' embeddings;
# cross-encoders: maximum |difference| of the activated scores.
PARITY_TOLERANCE = {
    ("bi-encoder", "fp32"): {"min_cosine": 0.99999},
    ("bi-encoder", "int8"): {"min_cosine": 0.97},
    ("cross-encoder", "fp32"): {"max_abs_diff": 1e-4},
    ("cross-encoder", "int8"): {"max_abs_diff": 0.05},
}
_FEATURE = "exporting a checkpoint to ONNX"


EXPORTED_PRECISIONS = ("fp32", "int8")  # bf16 runs the fp32 file


class ParityError(ModelError):
    """An exported graph does not reproduce sentence-transformers within tolerance; nothing was written."""


def _precisions(precision: str | Iterable[str]) -> tuple[str, ...]:
    chosen = (precision,) if isinstance(precision, str) else tuple(precision)
    bad = [p for p in chosen if p not in EXPORTED_PRECISIONS]
    if "bf16" in bad:
        raise ValueError(
            "precision='bf16' needs no export: it runs the fp32 model.onnx on OpenVINO; export 'fp32'"
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
    int8_keep_fp32: Iterable[str] = (),
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
            its 72 dense layers is kept in fp32 (0.982). Recorded in the manifest.

    Raises:
        ParityError: a graph misses the parity tolerance (the message has the figures); ``dst`` untouched.
        MissingDependencyError: the export extra is not installed (names the ``pip install``).
        ModelError: ``src`` is not a usable checkpoint, or ``dst`` exists and is not empty.
    """
    src, dst = Path(src).expanduser().resolve(), Path(dst).expanduser()
    precisions = _precisions(precision)
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
            f"{src} has sentence-transformers modules {list(config.unsupported_modules)} that simkernel "
            "does not "
            "run (only Transformer, Pooling, Normalize); its exported embeddings would be wrong"
        )
    dst.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dst.name}-export-", dir=dst.parent))
    try:
        bundle = work / "bundle"
        bundle.mkdir()
        _copy_tokenizer_and_configs(src, bundle)
        raw = work / "raw.onnx"
        export_info = export_raw_graph(src, raw)
        reference = _Reference(src, config.kind)
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
                {**PARITY_TOLERANCE[(config.kind, prec)], **((tolerance or {}).get((config.kind, prec), {}))},
                tuple(int8_keep_fp32),
            )
            files[PRECISIONS[prec]] = entry
            parity[prec] = figures
        _write_manifest(
            bundle, src, config, model_id or dst.name, files, parity, export_info, source, revision
        )
        _install(bundle, dst, overwrite)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dst


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
            _provisional_manifest(bundle, target.name, info)
            figures = reference.compare(bundle, prec)
            attempts.append((label, figures))
            if _passes(figures, tol):
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
        _provisional_manifest(bundle, target.name, info)
        figures = reference.compare(bundle, prec)
        attempts.append((quantization, figures))
        if _passes(figures, tol):
            return _file_entry(target, prec, {**info, "quantization": qinfo}), {**figures, "tolerance": tol}
    target.unlink(missing_ok=True)
    detail = "; ".join(f"{label}: {json.dumps(_rounded(f))}" for label, f in attempts)
    raise ParityError(
        f"the {prec} export of {src} does not match sentence-transformers within {tol} ({detail}); "
        "nothing was "
        f"written. Check that the checkpoint loads in sentence-transformers, or report the figures."
        + (
            " For int8, keep the most sensitive dense layers in fp32: "
            "int8_keep_fp32=('layer.N/intermediate',)"
            " / `simkernel models export ... --int8-keep-fp32 layer.N/intermediate` (try the last layers' N)."
            if prec == "int8"
            else ""
        )
    )


def _provisional_manifest(bundle: Path, name: str, info: dict) -> None:
    """Record how ``name`` was optimised before the parity check, so it is loaded as users will load it."""
    path = bundle / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"files": {}}
    manifest["files"][name] = info
    path.write_text(json.dumps(manifest), encoding="utf-8")


def _passes(figures: dict, tol: dict) -> bool:
    if "min_cosine" in tol and not figures["min_cosine"] >= tol["min_cosine"]:
        return False
    return not ("max_abs_diff" in tol and not figures["max_abs_diff"] <= tol["max_abs_diff"])


def _rounded(figures: dict) -> dict:
    return {k: (float(f"{v:.7g}") if isinstance(v, float) else v) for k, v in figures.items()}


def _file_entry(path: Path, precision: str, info: dict) -> dict:
    return {"precision": precision, **info}


class _Reference:
    """sentence-transformers on the checkpoint (torch, fp32), run once per export on the probe set."""

    def __init__(self, src: Path, kind: str) -> None:
        st = import_optional("sentence_transformers", "export", "checking an export's parity")
        import_optional("torch", "export", _FEATURE).set_num_threads(min(4, available_cpus()))
        self.kind = kind
        if kind == "bi-encoder":
            model = st.SentenceTransformer(str(src), device="cpu")
            self.expected = model.encode(
                list(PROBE_TEXTS), batch_size=8, normalize_embeddings=True, convert_to_numpy=True
            ).astype(np.float64)
        else:
            model = st.CrossEncoder(str(src), device="cpu")
            self.expected = np.asarray(model.predict(list(PROBE_PAIRS), batch_size=8), dtype=np.float64)

    def compare(self, bundle: Path, precision: str) -> dict:
        """Parity figures of the bundle's ``precision`` graph, loaded the way users load it."""
        return parity.compare(bundle, precision, self.kind, self.expected)


def export_raw_graph(src: str | Path, path: str | Path) -> dict:
    """Trace the checkpoint into an unoptimised fp32 ONNX graph at ``path``; returns export facts.

    Bi-encoders output ``token_embeddings``, cross-encoders ``logits`` (see the module docstring).
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

    class Graph(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *inputs):
            out = self.inner(**dict(zip(input_names, inputs, strict=False)))
            return out.logits if cross else out.last_hidden_state

    # an example with padding, so no all-ones mask shortcut can be traced into the graph
    ids = torch.full((2, 16), 1000, dtype=torch.long)
    mask = torch.ones((2, 16), dtype=torch.long)
    mask[1, 9:] = 0
    example = (ids, mask, torch.zeros_like(ids))[: len(input_names)]
    axes = {name: {0: "batch", 1: "sequence"} for name in input_names}
    axes[output_name] = {0: "batch"} if cross else {0: "batch", 1: "sequence"}
    start = time.perf_counter()
    with torch.no_grad(), warnings_silenced():
        torch.onnx.export(
            Graph(model),
            example,
            str(path),
            input_names=input_names,
            output_names=[output_name],
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
        "output": output_name,
        "export_s": round(time.perf_counter() - start, 2),
    }


@contextlib.contextmanager
def warnings_silenced():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _transformer_shape(src_config: dict) -> tuple[int, int]:
    heads = int(src_config.get("num_attention_heads") or src_config.get("n_heads") or 0)
    hidden = int(src_config.get("hidden_size") or src_config.get("dim") or 0)
    return heads, hidden


def optimize_graph(src: Path, dst: Path, config, fuse: bool = True) -> dict:
    """Write ``src`` optimised to ``dst``: transformer fusions (when ``fuse``), then onnxruntime's offline
    ``extended`` level for the CPU provider. Returns the manifest facts."""
    import onnxruntime as ort

    info: dict[str, Any] = {}
    source = src
    if fuse:
        from onnxruntime.transformers.optimizer import optimize_model

        heads, hidden = _transformer_shape(
            json.loads((config.path / "config.json").read_text(encoding="utf-8"))
        )
        with warnings_silenced():
            fused = optimize_model(
                str(src), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0
            )
        stats = {k: v for k, v in fused.get_fused_operator_statistics().items() if v}
        source = dst.with_suffix(".fused.onnx")
        fused.save_model_to_file(str(source))
        info["fusions"] = stats
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(dst)
    options.log_severity_level = 3
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    if source != src:
        source.unlink()
    info["graph_optimization"] = "extended"
    info["optimized_for"] = "CPUExecutionProvider"
    return info


def per_row_int8(
    fp32_graph: Path, target: Path, work: Path, config, keep_fp32: Iterable[str] = ()
) -> tuple[dict, dict]:
    """Write simkernel's per-row int8 graph of ``fp32_graph`` to ``target``; returns (the optimisation's
    manifest facts, the quantisation's, with ``kept_fp32`` when ``keep_fp32`` matched dense layers).

    The one recipe for the export and for hub models: the fp32 graph is optimised offline at onnxruntime's
    ``extended`` level (into ``work``), then quantised, and not optimised again: optimising after
    quantisation fuses Add + LayerNormalization into SkipLayerNormalization, which measured ~10% slower
    here (benchmarks/studies/README.md). ``config``: the model's config, or None.
    """
    optimized = work / "fp32_extended.onnx"
    info = optimize_graph(fp32_graph, optimized, config, fuse=False)
    kept = matching_dense_layers(optimized, keep_fp32)
    qinfo = quantize_model(optimized, target, method=DEFAULT_QUANTIZATION, exclude_nodes=kept)
    if kept:
        qinfo["kept_fp32"] = kept
    return info, qinfo


def matching_dense_layers(path: Path, patterns: Iterable[str]) -> list[str]:
    """Names of the dense-layer ``MatMul`` nodes of the graph ``path`` that contain one of ``patterns``;
    a pattern that matches none is an error naming the layers there are."""
    patterns = [p for p in patterns if p]
    if not patterns:
        return []
    names = weight_matmuls(path)
    unmatched = [p for p in patterns if not any(p in n for n in names)]
    if unmatched:
        raise ValueError(
            f"int8_keep_fp32 {unmatched} matches no dense layer of the graph; its dense layers are named "
            f"like {names[:3]} ... {names[-1:]}"
        )
    return [n for n in names if any(p in n for p in patterns)]


def externalize_weights(path: Path) -> dict:
    """Move the weights of the ONNX file ``path`` into ``<name>_data`` beside it (ONNX external data);
    returns the manifest facts.

    onnxruntime memory-maps external data instead of parsing it out of the protobuf: loading the default
    model measured 0.26 s -> 0.07 s in a fresh process and RSS after loading 186 -> 117 MB, at the same
    speed (benchmarks/studies/README.md). Tensors under 1 KiB stay in the graph file.
    """
    onnx = import_optional("onnx", "export", "writing ONNX external data")
    model = onnx.load(str(path))
    data = path.with_name(path.name + "_data")
    data.unlink(missing_ok=True)  # onnx appends to an existing data file
    onnx.save_model(
        model, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location=data.name
    )
    return {"external_data": data.name}


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


def _copy_tokenizer_and_configs(src: Path, bundle: Path) -> None:
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


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    import simkernel

    found = {"simkernel": simkernel.__version__}
    for dist in ("torch", "transformers", "sentence-transformers", "onnx", "onnxruntime", "tokenizers"):
        with contextlib.suppress(md.PackageNotFoundError):
            found[dist] = md.version(dist)
    return found


def _write_manifest(bundle, src, config, model_id, files, parity, export_info, source, revision) -> None:
    entries = {}
    for path in sorted(p for p in bundle.rglob("*") if p.is_file() and p.name not in (MANIFEST, STAMP)):
        name = path.relative_to(bundle).as_posix()
        entries[name] = {"bytes": path.stat().st_size, "sha256": file_sha256(path), **files.get(name, {})}
    weights = {
        name: {"bytes": (src / name).stat().st_size, "sha256": file_sha256(src / name)}
        for name in WEIGHT_FILES
        if (src / name).is_file()
    }
    manifest = {
        "format": MANIFEST_FORMAT,
        "id": model_id,
        "kind": config.kind,
        "source": {"type": "export", "path": str(src), "weights": weights, **(source or {})},
        "revision": revision,
        "files": entries,
        "parity": {"reference": "sentence-transformers (torch fp32) on the same checkpoint", **parity},
        "export": export_info,
        "versions": _versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (bundle / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _install(bundle: Path, dst: Path, overwrite: bool) -> None:
    """Rename the finished ``bundle`` to ``dst`` (same filesystem), replacing an empty or allowed ``dst``."""
    if dst.is_dir() and not any(dst.iterdir()):
        dst.rmdir()
    if dst.exists():
        if not overwrite:
            raise ModelError(f"{dst} appeared while exporting; not replaced (pass overwrite=True)")
        aside = dst.with_name(f".{dst.name}-old-{os.getpid()}")
        os.rename(dst, aside)
        os.rename(bundle, dst)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.rename(bundle, dst)
