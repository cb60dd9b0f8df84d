"""The local model store: one bundle directory per model id, written atomically.

Layout (``store_root()`` is ``$SIMKERNEL_HOME``, else ``$XDG_CACHE_HOME/simkernel``, else
``~/.cache/simkernel``; ``%LOCALAPPDATA%\\simkernel`` on Windows)::

    <root>/models/<org>--<name>/     one bundle per model id (model.onnx, configs, simkernel.json)
    <root>/locks/<org>--<name>.lock  advisory lock held while a bundle is installed or downloaded
    <root>/tmp/                      staging folders (named after their process); renamed into models/

A model id maps to a folder name by replacing ``/`` with ``--`` (the hub forbids ``--`` in ids, so the
mapping is reversible). A bundle only ever appears in ``models/`` complete: it is written into a
staging folder on the same filesystem, checked against its manifest, and moved in with ``os.rename``
while holding the model's lock, so two processes preparing the same model never interleave and an
interrupted write leaves at most a staging folder, which the next install deletes once its process is
gone (:mod:`simkernel.runtime.store.workdirs`). The lock is ``flock``, released by the kernel when
its holder dies, so a killed install never blocks the next; ``<lock>.owner`` names the holder's pid.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from simkernel.errors import ModelError
from simkernel.runtime.store import file_lock, workdirs
from simkernel.runtime.store.home import store_root
from simkernel.runtime.store.layout import PRECISIONS
from simkernel.runtime.store.manifest import (
    MANIFEST,
    PROFILE,
    STAMP,
    file_sha256,
    manifest_entries,
    read_manifest,
    verify_files,
    write_manifest,
)

__all__ = ["MANIFEST", "file_sha256", "store_root", "verify_bundle"]  # and the functions below

_STALE_STAGING_S = 24 * 3600


def _folder_name(model_id: str) -> str:
    model_id = model_id.strip()
    parts = model_id.split("/")
    bad = (
        not model_id
        or len(parts) > 2
        or any(p in ("", ".", "..") or "--" in p or "\\" in p or ":" in p for p in parts)
    )
    if bad:
        raise ModelError(
            f"{model_id!r} is not a valid model id: use 'name' or 'org/name' as on the Hugging Face hub (no '--', '..', backslashes or empty parts), or give the path of a local folder"
        )
    return "--".join(parts)


def model_dir(model_id: str) -> Path:
    """The bundle folder of ``model_id`` in the store (it may not exist)."""
    return store_root() / "models" / _folder_name(model_id)


def is_installed(model_id: str) -> bool:
    """Whether ``model_id`` has a bundle in the store (a folder with a manifest or an ONNX file)."""
    folder = model_dir(model_id)
    return folder.is_dir() and ((folder / MANIFEST).is_file() or any(folder.glob("*.onnx")))


@contextlib.contextmanager
def model_lock(model_id: str, timeout_s: float = 3600.0) -> Iterator[None]:
    """Hold the store's advisory lock of ``model_id`` (blocks up to ``timeout_s`` seconds).

    Re-entrant within a process is NOT supported; use it around one install or download.
    """
    lock_dir = store_root() / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    path = lock_dir / (_folder_name(model_id) + ".lock")
    owner = path.with_name(path.name + ".owner")
    try:
        with file_lock.hold(path, timeout_s):
            # the lock itself dies with its holder (flock); the owner file says who holds it now
            with contextlib.suppress(OSError):
                owner.write_text(f"{os.getpid()}\n", encoding="ascii")
            yield
    except file_lock.LockTimeout as exc:
        if exc.path == path:
            raise ModelError(
                f"timed out after {timeout_s:.0f} s waiting for {path}: {_holder(owner)} is installing {model_id!r}; wait for it to finish, or stop it"
            ) from exc
        raise


def _holder(owner: Path) -> str:
    """Who holds a lock, from its owner file: "process 123 (running)" or "another process"."""
    try:
        pid = int(owner.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return "another process"
    return f"process {pid} ({'running' if workdirs.pid_alive(pid) else 'gone'})"


STAGING_PREFIX = "stage-"


def new_staging_dir(model_id: str) -> Path:
    """A fresh empty folder inside the store (same filesystem as ``models/``) to build a bundle in, named
    after this process; the staging folders of processes that died are deleted first."""
    tmp_root = store_root() / "tmp"
    workdirs.remove_orphans(tmp_root, STAGING_PREFIX)
    workdirs.remove_orphans(tmp_root, "." + STAGING_PREFIX)  # an export's work folder beside its staging
    return workdirs.make(tmp_root, STAGING_PREFIX, _folder_name(model_id))


def verify_bundle(folder: Path, check_hashes: bool = True) -> None:
    """Check that ``folder`` is a complete bundle: ``config.json``, an ONNX file, and every file the
    manifest lists with its byte count (and SHA-256 when ``check_hashes``). Raises :class:`ModelError`."""
    if not (folder / "config.json").is_file():
        raise ModelError(f"{folder / 'config.json'} is missing: the bundle is incomplete")
    if not any(folder.glob("*.onnx")):
        raise ModelError(f"{folder} holds no .onnx file: the bundle is incomplete")
    verify_files(folder, check_hashes=check_hashes)


def publish_staging(staging: Path, model_id: str, replace: bool = True) -> Path:
    """Move a complete staging folder to ``model_dir(model_id)``; the caller holds the model's lock."""
    dest = model_dir(model_id)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists() and not replace:
        shutil.rmtree(staging, ignore_errors=True)
        return dest
    workdirs.replace_dir(staging, dest)
    return dest


@contextlib.contextmanager
def staged_bundle(
    model_id: str, replace: bool = True, check_hashes: bool = True, *, locked: bool = False
) -> Iterator[Path]:
    """The one way a bundle enters the store: stage -> verify -> publish, or clean up.

    Yields an empty staging folder inside the store; on normal exit it is verified
    (:func:`verify_bundle`, SHA-256 too when ``check_hashes``) and published as ``model_id``
    (:func:`publish_staging`; ``model_dir(model_id)`` is then the bundle), on an exception it is
    deleted and nothing is published. The model's lock is taken for the publication, unless ``locked``
    says the caller already holds it (callers that check the store and build under one lock)::

        with model_lock("org/name"):
            if not ready():
                with staged_bundle("org/name", locked=True) as folder:
                    write_files(folder)
    """
    staging = new_staging_dir(model_id)
    try:
        yield staging
        verify_bundle(staging, check_hashes=check_hashes)
        with contextlib.nullcontext() if locked else model_lock(model_id):
            publish_staging(staging, model_id, replace)
    except OSError as exc:  # a full disk, a file size limit, a read-only store: one clear line
        shutil.rmtree(staging, ignore_errors=True)
        failure = workdirs.write_failure(exc, store_root(), f"the bundle of {model_id}")
        if failure is None:
            raise
        raise failure from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def graph_files(folder: Path, precision: str) -> list[str]:
    """The files of ``folder`` that hold the graph of ``precision``: its ONNX file and that file's
    external weights (``<name>_data``, or the name its manifest entry gives)."""
    name = PRECISIONS[precision]
    entry = manifest_entries(read_manifest(folder)).get(name, {})
    names = dict.fromkeys([name, f"{name}_data", str(entry.get("external_data") or f"{name}_data")])
    return [n for n in names if (folder / n).is_file()]


def keep_only(model_id: str, precisions: tuple[str, ...]) -> Path:
    """Make the store's bundle of ``model_id`` hold the graphs of ``precisions`` and nothing else (the
    tokenizer and configuration files stay); returns the bundle folder.

    The edge profile (``simkernel models prepare --precision int8``): the int8 graph is made from the fp32
    one, then the fp32 graph (``model.onnx`` and its weights, ~90 MB of the default model's ~150 MB) is left
    out. The manifest then lists exactly the files kept and records the profile under ``profile``
    (``precisions`` kept, ``left_out`` files), so that ``simkernel models verify`` checks what is there and
    loading a left-out precision fails naming the fix. Atomic like every write to the store: the kept files
    are linked (copied across file systems) into a staging folder with the new manifest, verified and
    swapped in under the model's lock; a bundle already in that state is left untouched.
    """
    kept = tuple(dict.fromkeys(precisions))
    with model_lock(model_id):
        folder = model_dir(model_id)
        missing = [p for p in kept if not graph_files(folder, p)]
        if missing:
            raise ModelError(
                f"{folder} holds no {PRECISIONS[missing[0]]} to keep: prepare the model first with `simkernel models prepare {model_id}`"
            )
        graphs = {PRECISIONS[p] for p in kept}  # bf16 runs the fp32 file
        dropped = [p for p, g in PRECISIONS.items() if g not in graphs and graph_files(folder, p)]
        drop = sorted({n for p in dropped for n in graph_files(folder, p)})
        manifest = read_manifest(folder)
        profile = manifest.get(PROFILE) or {}
        if not drop and profile.get("precisions") == list(kept):
            return folder
        verify_bundle(folder, check_hashes=True)  # never carry a corrupt file into the new bundle
        left_out = sorted({*profile.get("left_out", []), *drop})
        with staged_bundle(model_id, locked=True) as staging:
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                name = path.relative_to(folder).as_posix()
                if name in drop or name in (MANIFEST, STAMP):
                    continue
                target = staging / name
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    os.link(path, target)  # the same file, not a copy: its checksum still holds
                except OSError:
                    shutil.copy2(path, target)
            entries = {n: e for n, e in manifest_entries(manifest).items() if n not in drop}
            parity = {k: v for k, v in (manifest.get("parity") or {}).items() if k not in dropped}
            written = {
                **manifest,
                "files": entries,
                PROFILE: {"precisions": list(kept), "left_out": left_out},
            }
            if "parity" in manifest:
                written["parity"] = parity
            write_manifest(staging, written)
    return model_dir(model_id)


@dataclass(frozen=True)
class StoredModel:
    """One bundle in the store: its id, folder, ONNX files and total size in bytes."""

    id: str
    path: Path
    onnx_files: tuple[str, ...]
    bytes: int


def list_models() -> list[StoredModel]:
    """Every bundle in the store, sorted by id (the id is the manifest's ``id``, else the folder name)."""
    models_root = store_root() / "models"
    if not models_root.is_dir():
        return []
    found = []
    for folder in sorted(p for p in models_root.iterdir() if p.is_dir()):
        onnx = tuple(sorted(p.name for p in folder.glob("*.onnx")))
        model_id = folder.name.replace("--", "/")
        with contextlib.suppress(ModelError):
            model_id = str(read_manifest(folder).get("id") or model_id)
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        found.append(StoredModel(id=model_id, path=folder, onnx_files=onnx, bytes=size))
    return sorted(found, key=lambda m: m.id)
