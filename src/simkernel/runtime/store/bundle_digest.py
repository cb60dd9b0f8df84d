"""The identity of a bundle for one precision: a SHA-256 over the checksums of the files that decide its
embeddings.

:func:`bundle_digest` covers every file of the bundle folder (recursively, by relative path) except the
ONNX graphs of the other precisions (and their external-data files) and hidden files (names starting with
a dot: stamps and locks that tools write beside a model), so rebuilding the int8 graph leaves the fp32 key
alone while any change to the fp32 graph, its weights, the tokenizer, the pooling or the manifest (which
decides the session's optimisation level) gives a new key. A file's checksum is the one the bundle's
manifest records, once :func:`~simkernel.runtime.store.manifest.check_bundle` has verified the files
against it (hashed at the first load after a change, then a stamp of size, mtime and inode); a file the
manifest does not list (a hand-made bundle) is hashed by ``file_hash`` (the disk cache memoises it the same
way), so a warm process only stats the files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from simkernel.runtime.store.layout import PRECISIONS, known_precision
from simkernel.runtime.store.manifest import check_bundle, file_sha256, manifest_entries, read_manifest

__all__ = ["bundle_digest", "file_sha256"]


def bundle_digest(folder: Path, precision: str, file_hash: Callable[[Path], str] = file_sha256) -> str:
    """``"<sha256 hex>/<precision>"`` of the bundle ``folder``; ``file_hash`` hashes one file (memoised or
    not)."""
    known_precision(precision)  # a name only: the digest does not depend on the CPU
    check_bundle(folder)  # the manifest's checksums are the files' own (ModelError naming a corrupt file)
    listed = {
        name: entry["sha256"]
        for name, entry in manifest_entries(read_manifest(folder)).items()
        if isinstance(entry.get("sha256"), str)
    }
    own = PRECISIONS[precision]
    others = tuple(name for name in set(PRECISIONS.values()) if name != own)
    entries = []
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        parts = path.relative_to(folder).parts
        if parts[0].startswith(others) or any(part.startswith(".") for part in parts):
            continue  # another precision's graph, or a hidden file (a stamp or lock, not the model)
        relative = "/".join(parts)
        entries.append(f"{relative}\t{listed.get(relative) or file_hash(path)}\n")
    return hashlib.sha256("".join(entries).encode("utf-8")).hexdigest() + "/" + precision
