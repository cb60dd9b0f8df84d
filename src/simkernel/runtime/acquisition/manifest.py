"""Writing the bundle manifest ``simkernel.json``: the package's one writer (the reader, and what the
manifest holds, are in :mod:`simkernel.runtime.inference.manifest`)."""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import json
from pathlib import Path

from simkernel._version import __version__
from simkernel.runtime.inference.manifest import MANIFEST, STAMP, file_sha256

MANIFEST_FORMAT = 1


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
