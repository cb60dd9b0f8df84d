"""Hub repositories that publish a checkpoint but no ONNX graph: download the checkpoint, export it here.

Most sentence-transformers and transformers repositories on the hub publish only torch weights, no
``onnx/model.onnx`` (Haystack's own test models among them). For those, with the ``export`` extra
installed, simkernel downloads the checkpoint - its configuration and tokenizer files
(:data:`CHECKPOINT_FILES`) and ``model.safetensors`` (sharded or not), else ``pytorch_model.bin`` - all at
one commit through huggingface_hub's cache (the settings of
:func:`~simkernel.runtime.acquisition.hub.hub_settings`), and exports it with
:func:`~simkernel.runtime.acquisition.export.export_model` and its parity check against
sentence-transformers: into the store under the repository's id (:func:`export_from_hub`, used when a model
is resolved or prepared), or into a folder of the user's (``simkernel models export ORG/NAME DST``,
:func:`downloaded_checkpoint`). The bundle's manifest names the repository, revision, commit and endpoint.

Without the export extra the error names the install command (``pip install 'simkernel[export]'``).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from simkernel._optional import import_optional
from simkernel.errors import ModelError
from simkernel.runtime.acquisition.export import export_model
from simkernel.runtime.acquisition.hub import (
    commit_of,
    explain_failure,
    fetch_file,
    hub_settings,
    not_cached_offline,
    place_file,
    repo_cached,
)
from simkernel.runtime.acquisition.registry import CONFIG_FILES, WEIGHT_FILES, known_model
from simkernel.runtime.inference.bundle import check_precision
from simkernel.runtime.store import bundles as store
from simkernel.runtime.store.layout import PRECISIONS

# beside CONFIG_FILES: what transformers needs to build a fast tokenizer when tokenizer.json is missing
TOKENIZER_SOURCES = (
    "sentencepiece.bpe.model",
    "spiece.model",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
)
CHECKPOINT_FILES = (*CONFIG_FILES, *TOKENIZER_SOURCES)
SAFETENSORS_INDEX = "model.safetensors.index.json"
WEIGHTS = tuple(name for name in WEIGHT_FILES if not name.endswith(".index.json"))  # whole checkpoints


def download_checkpoint(repo: str, revision: str, settings: dict, dest: Path) -> str:
    """Place ``repo``'s checkpoint at ``revision`` in the folder ``dest``; returns the commit it came from.

    Raises :class:`ModelError` when the repository publishes no weights, or explaining a failed download.
    """
    try:
        index = fetch_file(repo, SAFETENSORS_INDEX, revision, settings)
        found = [(index, SAFETENSORS_INDEX)] if index is not None else []
        for name in () if index is not None else WEIGHTS:
            weights = fetch_file(repo, name, revision, settings)
            if weights is not None:
                found = [(weights, name)]
                break
        if not found and settings["offline"] and not repo_cached(repo, settings):
            raise not_cached_offline(repo, repo, settings)
        if not found:
            where = " in the HF cache (HF_HUB_OFFLINE=1)" if settings["offline"] else ""
            raise ModelError(
                f"{settings['endpoint']}/{repo} (revision {revision}) publishes neither an ONNX graph nor checkpoint weights ({SAFETENSORS_INDEX}, {' or '.join(WEIGHTS)}){where}"
            )
        commit = commit_of(found[0][0], revision)  # everything else at exactly the same commit
        if index is not None:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
            found += [(_required(repo, shard, commit, settings), shard) for shard in shards]
        for name in CHECKPOINT_FILES:
            cached = fetch_file(repo, name, commit, settings)
            if cached is not None:
                found.append((cached, name))
    except ModelError:
        raise
    except Exception as exc:  # huggingface_hub / httpx errors, OSError: explained, never swallowed
        raise explain_failure(repo, revision, settings, exc) from exc
    if not any(name == "config.json" for _, name in found):
        raise ModelError(f"{repo} (commit {commit}) has no config.json: it is not a transformers checkpoint")
    for cached, name in found:
        place_file(cached, dest / name)
    return commit


def _required(repo: str, name: str, commit: str, settings: dict) -> Path:
    path = fetch_file(repo, name, commit, settings)
    if path is None:
        raise ModelError(f"{repo} (commit {commit}) lists {name} in {SAFETENSORS_INDEX} but does not have it")
    return path


def _hub_source(model_id: str, revision: str | None) -> tuple[str, str]:
    known = known_model(model_id)
    repo = known.hub_repo if known else model_id
    return repo, revision or (known.revision if known else "main")


@contextlib.contextmanager
def downloaded_checkpoint(
    model_id: str, revision: str | None = None, token: str | None = None
) -> Iterator[tuple[Path, dict]]:
    """A temporary folder holding ``model_id``'s checkpoint from the hub, and its ``source`` facts for a
    manifest (type, path = the repository's address, repo, revision, commit, endpoint); the folder is
    deleted on leaving the block."""
    repo, revision = _hub_source(model_id, revision)
    settings = hub_settings(token)
    tmp_root = store.store_root() / "tmp"
    tmp_root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="checkpoint-", dir=tmp_root))
    try:
        commit = download_checkpoint(repo, revision, settings, folder)
        source = {
            "type": "hub checkpoint",
            "path": f"{settings['endpoint']}/{repo}",  # not the temporary folder, gone after the export
            "repo": repo,
            "revision": revision,
            "commit": commit,
            "endpoint": settings["endpoint"],
        }
        yield folder, source
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def export_from_hub(
    model_id: str, precision: str = "fp32", token: str | None = None, force: bool = False
) -> Path:
    """Export ``model_id``'s hub checkpoint into the store as ``model_id``; returns the bundle folder.

    ``precision="int8"`` exports fp32 and int8. Returns at once when the store already has that precision
    (unless ``force``). Raises ``MissingDependencyError`` without the export extra (before any download),
    :class:`ModelError` when there is nothing to export or the export misses its parity check.
    """
    check_precision(precision)
    for module in ("torch", "transformers", "sentence_transformers"):  # before downloading anything
        import_optional(module, "export", f"exporting {model_id}'s checkpoint (it publishes no ONNX graph)")
    folder = store.model_dir(model_id)
    with store.model_lock(model_id):
        if not force and (folder / PRECISIONS[precision]).is_file() and store.is_installed(model_id):
            return folder  # another process (or an earlier call) got there first
        with (
            downloaded_checkpoint(model_id, token=token) as (checkpoint, source),
            store.staged_bundle(model_id, locked=True) as staging,
        ):
            export_model(
                checkpoint,
                staging,
                ("fp32", "int8") if precision == "int8" else "fp32",
                model_id=model_id,
                source=source,
                revision=source["commit"],
            )
    return folder
