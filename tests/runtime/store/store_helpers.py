"""Putting a ready bundle folder into a temporary store, for the store's tests (the package itself only ever
builds bundles inside the store: :func:`simkernel.runtime.store.bundles.staged_bundle`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from simkernel.errors import ModelError
from simkernel.runtime.store import bundles as store


def install_bundle(
    src_dir: str | Path, model_id: str, replace: bool = True, check_hashes: bool = True
) -> Path:
    """Copy the bundle in ``src_dir`` into the store as ``model_id``; returns the bundle folder.

    The copy goes to a staging folder inside the store, is verified (:func:`store.verify_bundle`), then
    renamed into place under the model's lock. ``src_dir`` is left untouched. With ``replace=False`` an
    existing bundle is kept (another process got there first). Nothing half-written is ever visible in the
    store.
    """
    src = Path(src_dir)
    if not src.is_dir():
        raise ModelError(f"{src} is not a directory; give the folder of an exported bundle")
    with store.staged_bundle(model_id, replace, check_hashes) as staging:
        shutil.copytree(src, staging, dirs_exist_ok=True)
    return store.model_dir(model_id)
