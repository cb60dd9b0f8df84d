"""A bundle's manifest (``simkernel.json``): reading it, writing it (the package's one writer), and checking
the bundle's files against it.

The manifest lists every file of the bundle with its size in bytes and SHA-256. :func:`check_bundle`
runs at every load: the first time a bundle is loaded after it was written or changed, every listed file
is hashed and compared with its checksum (a mismatch is a :class:`ModelError` naming the file, both
checksums and the fix: a corrupt model never scores silently); then a stamp of what was verified (size,
mtime and inode of each file and of the manifest) is written, and later loads compare only those
(a few ``stat`` calls: microseconds, where hashing the default model's 150 MB takes ~0.3 s).

Where the stamp lives: ``.simkernel-verified.json`` beside the manifest for a bundle in the store; for
a bundle folder anywhere else, ``<store>/verified/<sha256 of the folder's real path>.json`` (nothing is
written into the user's folder). A stamp that cannot be written (read-only store or folder) only means
the next load hashes again. Bundles without a manifest (hand-made folders) have nothing to check.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata as md
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from simkernel._version import __version__
from simkernel.errors import ModelError
from simkernel.runtime.store.home import store_root
from simkernel.runtime.store.layout import read_json

MANIFEST = "simkernel.json"  # the bundle's manifest: what each file is, where it came from, its checks
STAMP = ".simkernel-verified.json"  # beside the manifest: what was verified, by size, mtime and inode
# the manifest's record of a bundle that keeps some precisions only (``simkernel models prepare --precision
# int8``): {"precisions": [kept], "left_out": [file names]}
PROFILE = "profile"
MANIFEST_FORMAT = 1
_STAMP_FORMAT = 1
_CHECKSUM_SHOWN = 16  # hex digits of a checksum an error shows


def read_manifest(folder: Path) -> dict:
    """The bundle's ``simkernel.json`` (empty dict when absent)."""
    path = folder / MANIFEST
    data = read_json(path) if path.is_file() else {}
    return data if isinstance(data, dict) else {}


def write_manifest(folder: Path, manifest: dict) -> dict:
    """Write ``manifest`` as the manifest of the bundle ``folder``; returns what was written.

    Every file in ``folder`` (but the manifest and its verification stamp) gets an entry in ``files`` with its ``bytes`` and ``sha256`` (measured here),
    next to the facts ``manifest["files"]`` gives for it (how it was made); ``format`` defaults to
    :data:`MANIFEST_FORMAT`. Written as sorted, indented JSON.
    """
    given = manifest.get("files") or {}
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in (MANIFEST, STAMP)):
        name = path.relative_to(folder).as_posix()
        files[name] = {**given.get(name, {}), "bytes": path.stat().st_size, "sha256": file_sha256(path)}
    written = {"format": MANIFEST_FORMAT, **manifest, "files": files}
    (folder / MANIFEST).write_text(json.dumps(written, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return written


def package_versions(*distributions: str) -> dict[str, str]:
    """simkernel's version and those of the installed ``distributions`` (absent ones left out), for the
    manifest's ``versions``."""
    found = {"simkernel": __version__}
    for dist in distributions:
        with contextlib.suppress(md.PackageNotFoundError):
            found[dist] = md.version(dist)
    return found


def kept_precisions(manifest: dict) -> list[str] | None:
    """The precisions a bundle prepared with ``--precision`` keeps (its ``profile``), None for a full one."""
    profile = manifest.get(PROFILE)
    kept = profile.get("precisions") if isinstance(profile, dict) else None
    return [str(p) for p in kept] if isinstance(kept, list) else None


def manifest_entries(manifest: dict) -> dict[str, dict]:
    """File name -> its entry (``bytes``, ``sha256``, ...), from either manifest layout (a mapping, or a
    list of entries with ``path``/``name``)."""
    files = manifest.get("files") or {}
    if isinstance(files, list):
        return {str(f.get("path") or f.get("name")): f for f in files if isinstance(f, dict)}
    return {str(k): v for k, v in files.items() if isinstance(v, dict)} if isinstance(files, dict) else {}


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _fix(folder: Path, manifest: dict) -> str:
    model_id = manifest.get("id")
    rebuild = f"`simkernel models prepare {model_id} --force`" if model_id else "`simkernel models prepare`"
    return (
        f"rebuild it with {rebuild} (a model in the store) or delete the folder {folder} so that it is "
        "downloaded or exported again"
    )


def verify_files(folder: Path, check_hashes: bool = True) -> dict[str, list[int]]:
    """Compare every file the manifest of ``folder`` lists with its size (and SHA-256 when
    ``check_hashes``); returns the stamp of what was verified. Raises :class:`ModelError` naming the
    file, what was expected and found, and the fix."""
    manifest_path = folder / MANIFEST
    manifest = read_manifest(folder)
    stamp: dict[str, list[int]] = {}
    for name, entry in sorted(manifest_entries(manifest).items()):
        path = folder / name
        if not path.is_file():
            raise ModelError(
                f"{path} is listed in {manifest_path} but missing: the bundle is incomplete; "
                + _fix(folder, manifest)
            )
        before = _stat(path)
        size = entry.get("bytes", entry.get("size"))
        if size is not None and before[0] != int(size):
            raise ModelError(
                f"{path} has {before[0]} bytes where {manifest_path} says {size}: the file is truncated or corrupt; "
                + _fix(folder, manifest)
            )
        expected = entry.get("sha256")
        if check_hashes and isinstance(expected, str):
            found = file_sha256(path)
            if found != expected:
                raise ModelError(
                    f"{path} does not match its checksum in {manifest_path}: expected sha256 {expected[:_CHECKSUM_SHOWN]}..., found {found[:_CHECKSUM_SHOWN]}...: the file is corrupt or was changed after it was written; "
                    + _fix(folder, manifest)
                )
        if _stat(path) != before:  # changed while it was read: do not vouch for it
            raise ModelError(f"{path} changed while it was being verified; load the model again")
        stamp[name] = before
    return stamp


def _stat(path: Path) -> list[int]:
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def stamp_path(folder: Path) -> Path:
    """Where the stamp of ``folder`` is kept (see the module docstring)."""
    real = Path(os.path.realpath(folder))
    models = Path(os.path.realpath(store_root() / "models"))
    if real.parent == models:
        return real / STAMP
    key = hashlib.sha256(str(real).encode("utf-8", "surrogateescape")).hexdigest()
    return store_root() / "verified" / f"{key}.json"


def _read_stamp(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == _STAMP_FORMAT else None


def _current(folder: Path, names) -> dict[str, list[int]] | None:
    try:
        return {name: _stat(folder / name) for name in names}
    except OSError:
        return None


def check_bundle(folder: Path, force: bool = False) -> bool:
    """Verify ``folder`` against its manifest unless its stamp shows nothing changed since the last
    verification (``force``: always hash). Returns True when files were hashed. Raises
    :class:`ModelError` on any mismatch (the stamp is then removed)."""
    folder = Path(folder)
    manifest_file = folder / MANIFEST
    if not manifest_file.is_file():
        return False
    where = stamp_path(folder)
    stamp = None if force else _read_stamp(where)
    if stamp is not None and stamp.get("path") == os.path.realpath(folder):
        recorded = stamp.get("files") or {}
        current = _current(folder, [MANIFEST, *recorded])
        if current is not None and current == {MANIFEST: stamp.get("manifest"), **recorded}:
            return False
    manifest_stat = _stat(manifest_file)
    try:
        files = verify_files(folder)
    except ModelError:
        with contextlib.suppress(OSError):
            where.unlink(missing_ok=True)
        raise
    if _stat(manifest_file) == manifest_stat:
        record = {"format": _STAMP_FORMAT, "path": os.path.realpath(folder), "manifest": manifest_stat}
        _write_quietly(where, {**record, "files": files})
    return True


def _write_quietly(path: Path, data: dict) -> None:
    """Write ``path`` atomically; a folder that cannot be written (read-only store) is no error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".stamp-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass
