"""Turn ``model=`` into a bundle folder on disk.

Tried in this order; if all fail, :class:`ModelNotFoundError` lists every attempt and why it failed:

1. a local folder holding an exported bundle (``model.onnx`` or ``model_int8.onnx``, ``tokenizer.json``,
   ``config.json``): used as is;
2. a local sentence-transformers / transformers checkpoint folder (``config.json`` and weights): exported
   to ONNX on first use into the store (id ``local/<folder name>-<hash of path and weights>``), which
   needs the ``export`` extra (``pip install 'simkernel[export]'``); without it the error names that
   command and ``simkernel models export SRC DST``;
3. a model id already in the store (``simkernel.runtime.store.bundles.model_dir(id)``);
4. the Hugging Face hub (:mod:`simkernel.runtime.acquisition.hub`): the repo's published ONNX files;
   for a repo that publishes none, its checkpoint, downloaded and exported into the store under the repo's
   id (:mod:`simkernel.runtime.acquisition.hub_checkpoint`; needs the ``export`` extra).

Short sentence-transformers names (``"all-MiniLM-L6-v2"``) and renamed repos resolve through the
registry's aliases.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from simkernel._optional import TORCH_PIN
from simkernel.errors import MissingDependencyError, ModelError, ModelNotFoundError
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL, WEIGHT_FILES, canonical_id, known_model
from simkernel.runtime.inference.bundle import check_precision, is_bundle, left_out
from simkernel.runtime.inference.config import read_model_config
from simkernel.runtime.store import bundles as store
from simkernel.runtime.store.layout import PRECISIONS, read_json


def _is_checkpoint(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any((folder / w).is_file() for w in WEIGHT_FILES)


def looks_like_path(model: str) -> bool:
    """Whether ``model`` reads as a file system path rather than a model id (``org/name``, ``name``)."""
    return model.startswith((".", "/", "~")) or os.sep in model.replace("/", "") or model.count("/") > 1


def local_export_id(folder: Path) -> str:
    """Store id of a local checkpoint's export: the folder name plus a hash of its path and weights."""
    folder = folder.resolve()
    digest = hashlib.sha256(str(folder).encode())
    for name in WEIGHT_FILES:
        weights = folder / name
        if weights.is_file():
            stat = weights.stat()
            digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in folder.name).strip("._") or "model"
    return f"local/{safe.replace('--', '-')}-{digest.hexdigest()[:12]}"


def _export_checkpoint(folder: Path, precision: str) -> Path:
    """Export a local checkpoint into the store once (reused while its weights are unchanged)."""
    model_id = local_export_id(folder)
    dest = store.model_dir(model_id)
    if (dest / PRECISIONS[precision]).is_file():
        return dest
    with store.model_lock(model_id):
        if (dest / PRECISIONS[precision]).is_file():
            return dest
        precisions = ("fp32", "int8") if precision == "int8" else "fp32"
        # the exporter (graph passes, parity, quantisation) is imported only when a checkpoint is exported:
        # loading a bundle from the store, the usual case, does not pay for it
        from simkernel.runtime.acquisition.export import export_model

        try:
            with store.staged_bundle(model_id, locked=True) as staging:
                export_model(
                    folder,
                    staging,
                    precisions,
                    model_id=model_id,
                    source={"type": "local", "path": str(folder)},
                )
        except MissingDependencyError as exc:
            reason = exc.__cause__ or exc
            raise MissingDependencyError(
                f"{folder} is a checkpoint, not an ONNX bundle, and exporting it needs the export extra ({reason}). Install it with `pip install {TORCH_PIN} 'simkernel[export]'`, or export it elsewhere with `simkernel models export {folder} DST` and pass DST as model="
            ) from exc
    return dest


def resolve_model(
    model: str | Path = DEFAULT_MODEL,
    precision: str = "fp32",
    token: str | None = None,
    *,
    download: bool = True,
) -> Path:
    """The bundle folder for ``model`` (see the module docstring for the order); may export or download.

    ``token``: Hugging Face token for the hub download (private or gated repos); default ``HF_TOKEN``.
    ``download=False``: only what is on this machine (a local folder, the store), never the hub.
    """
    check_precision(precision)
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"model must be a model id or a folder path, got {type(model).__name__}")
    attempts: list[str] = []
    text = os.fspath(model)
    path = Path(text).expanduser()

    if path.is_dir():
        if is_bundle(path):
            return path
        attempts.append(f"local folder {path}: no bundle (needs model.onnx, tokenizer.json, config.json)")
        if _is_checkpoint(path):
            return _export_checkpoint(path, precision)
        attempts.append(
            f"local folder {path}: no checkpoint either (needs config.json and {WEIGHT_FILES[0]})"
        )
        raise ModelNotFoundError(_message(text, attempts))
    if isinstance(model, os.PathLike) or looks_like_path(text):
        attempts.append(f"local folder {path}: does not exist")
        raise ModelNotFoundError(_message(text, attempts))
    attempts.append(f"local folder {path}: does not exist")

    model_id = canonical_id(text)
    try:
        folder = store.model_dir(model_id)
    except ModelError as exc:
        attempts.append(f"store: {exc}")
        raise ModelNotFoundError(_message(text, attempts)) from None
    if store.is_installed(model_id):
        if (folder / PRECISIONS[precision]).is_file():
            return folder
        reduced = left_out(folder, precision)
        if (
            reduced is not None
        ):  # prepared without this precision on purpose: never fetched behind the user's back
            raise reduced
        stored = stored_precisions(folder)
        attempts.append(
            f"store {folder}: has no {PRECISIONS[precision]} (it holds this model in {' and '.join(stored) or 'no precision'})"
        )
    else:
        stored = []
        attempts.append(f"store {folder}: not there (SIMKERNEL_HOME={store.store_root()})")

    if not download:
        attempts.append("hub: not asked (download=False)")
        raise ModelNotFoundError(_message(text, attempts))
    # the hub's and the exporter's modules are imported only past a store miss: a model already in the
    # store, the usual case, loads without them
    from simkernel.runtime.acquisition.hub import NoOnnxPublishedError, download_bundle
    from simkernel.runtime.acquisition.hub_checkpoint import export_from_hub

    try:
        return download_bundle(model_id, precision=precision, token=token)
    except NoOnnxPublishedError as exc:
        attempts.append(f"hub: {exc}")
    except ModelError as exc:
        attempts.append(f"hub: {exc}")
        raise ModelNotFoundError(_message(text, attempts, stored)) from None
    try:
        return export_from_hub(model_id, precision=precision, token=token)
    except (ModelError, MissingDependencyError) as exc:
        attempts.append(f"hub checkpoint: {exc}")
    raise ModelNotFoundError(_message(text, attempts, stored))


def stored_precisions(folder: Path) -> list[str]:
    """The precisions whose ONNX file the store's bundle ``folder`` holds (bf16 runs the fp32 file)."""
    return [name for name, file in PRECISIONS.items() if (folder / file).is_file()]


def _message(model: str, attempts: list[str], stored: list[str] | None = None) -> str:
    lines = "\n".join(f"  - {a}" for a in attempts)
    if stored:
        fix = (
            f"The store holds {model!r} in {' and '.join(stored)} only: pass precision={stored[0]!r} "
            f"(--precision {stored[0]}), or prepare the precision asked for with `simkernel models export`"
        )
    elif canonical_id(model) == DEFAULT_MODEL:
        fix = "Run `simkernel models prepare` to build the default model offline"
    else:
        fix = f"Export a checkpoint with `simkernel models export SRC DST` and pass DST, or check the id {model!r}"
    return f"cannot find model {model!r}; tried:\n{lines}\n{fix}."


def model_architectures(model: str | Path = DEFAULT_MODEL, token: str | None = None) -> list[str]:
    """``config.json`` ``architectures`` of the model ``model`` names, without loading it.

    A local folder (bundle or checkpoint) or a store entry is read directly; otherwise only
    ``config.json`` is fetched from the hub (with ``token``, default ``HF_TOKEN``). Used to choose bi- vs
    cross-encoder as Haystack does.
    """
    text = os.fspath(model)
    path = Path(text).expanduser()
    if path.is_dir():
        return list(read_model_config(path).architectures)
    if isinstance(model, os.PathLike) or looks_like_path(text):
        raise ModelNotFoundError(f"cannot find model {text!r}: local folder {path} does not exist")
    model_id = canonical_id(text)
    folder = store.model_dir(model_id)
    if (folder / "config.json").is_file():
        return list(read_model_config(folder).architectures)
    return _hub_architectures(model_id, token)


def _hub_architectures(model_id: str, token: str | None = None) -> list[str]:
    known = known_model(model_id)
    repo = known.hub_repo if known else model_id
    revision = known.revision if known else "main"
    from simkernel.runtime.acquisition.hub import (
        explain_failure,
        fetch_file,
        hub_settings,
        not_cached_offline,
        repo_cached,
    )

    settings = hub_settings(token)
    try:
        cached = fetch_file(repo, "config.json", revision, settings)
    except Exception as exc:
        raise ModelNotFoundError(
            f"cannot find model {model_id!r}: not in the store ({folder_hint(model_id)}) and {explain_failure(repo, revision, settings, exc)}"
        ) from exc
    if cached is None and settings["offline"] and not repo_cached(repo, settings):
        raise not_cached_offline(model_id, repo, settings)
    if cached is None:
        raise ModelNotFoundError(f"cannot find model {model_id!r}: {repo} has no config.json")
    return list(read_json(cached).get("architectures") or [])


def folder_hint(model_id: str) -> str:
    return str(store.model_dir(model_id))
