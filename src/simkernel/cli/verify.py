"""``simkernel models verify [ID|FOLDER ...] [--all]``: re-hash bundles against their manifest checksums.

Every file each bundle's manifest lists is hashed again (the verification stamp that lets loads skip
hashing is ignored, then renewed), and one line per bundle says ``OK``, ``FAILED`` with the file, both
checksums and the fix, or ``UNCHECKED`` for a folder without a manifest. Exit status 1 when any bundle
failed or was not found, else 0. Without arguments: the default model.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simkernel.errors import EXIT_DATA, EXIT_OK, UsageError


def run_verify(args: argparse.Namespace) -> int:
    from simkernel.errors import ModelError
    from simkernel.runtime.acquisition.registry import DEFAULT_MODEL
    from simkernel.runtime.store import bundles as store
    from simkernel.runtime.store.manifest import check_bundle, manifest_entries, read_manifest

    if args.all and args.models:
        raise UsageError("give model ids or folders, or --all, not both")
    targets: list[tuple[str, Path | None]] = [(m.id, m.path) for m in store.list_models()] if args.all else []
    if not args.all:
        targets = [_folder(name) for name in (args.models or [DEFAULT_MODEL])]
    if args.all and not targets:
        print(f"no bundles in the store ({store.store_root() / 'models'})")
    failed = 0
    for name, folder in targets:
        if folder is None or not folder.is_dir():
            failed += 1
            print(f"FAILED     {name}: not in the store ({store.store_root() / 'models'}) nor a folder")
            continue
        try:
            store.verify_bundle(folder, check_hashes=False)  # complete: config.json, an ONNX file, sizes
            entries = manifest_entries(read_manifest(folder))
            if not entries:
                print(f"UNCHECKED  {name}: {folder} has no manifest with checksums")
                continue
            check_bundle(folder, force=True)
        except ModelError as exc:
            failed += 1
            print(f"FAILED     {name}: {' '.join(str(exc).split())}")
            continue
        size = sum((folder / entry).stat().st_size for entry in entries)
        print(
            f"OK         {name}: {len(entries)} files, {size / 1e6:.1f} MB, every checksum matches ({folder})"
        )
    return EXIT_DATA if failed else EXIT_OK


def _folder(name: str) -> tuple[str, Path | None]:
    from simkernel.errors import ModelError
    from simkernel.runtime.acquisition.registry import canonical_id
    from simkernel.runtime.store import bundles as store

    path = Path(name)
    if path.is_dir():
        return name, path
    try:
        model_id = canonical_id(name)
        return model_id, store.model_dir(model_id)
    except ModelError:
        return name, None
