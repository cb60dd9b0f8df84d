"""``simkernel models list | prepare [ID] | export SRC DST | info ID | verify [ID ...|--all]``: the model
store from the shell.

Each action is a thin wrapper over :mod:`simkernel.runtime.acquisition`: the registry (``registry``), the
store (``store``), the offline preparation (``prepare``) and the exporter (``export``). Results go to
stdout; errors are one line (exit 1).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from simkernel.errors import DataError
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL, KNOWN_MODELS, canonical_id, known_model
from simkernel.runtime.inference.config import read_model_config
from simkernel.runtime.store import bundles as store
from simkernel.runtime.store.layout import TOKEN_LAYERS_SUFFIX
from simkernel.runtime.store.manifest import STAMP, manifest_entries, read_manifest
from simkernel.tables.formats import human_size


def run_models(args: argparse.Namespace) -> int:
    if args.models_command == "verify":
        from simkernel.cli.verify import run_verify

        return run_verify(args)
    action = {"list": _list, "prepare": _prepare, "export": _export, "info": _info}[args.models_command]
    action(args)
    return 0


def _list(args: argparse.Namespace) -> None:
    stored: dict[str, Any] = {}
    token_layers: dict[str, Any] = {}  # model id -> its token-layers bundle (ID@token-layers)
    for m in store.list_models():
        if m.id.endswith(TOKEN_LAYERS_SUFFIX):
            token_layers[canonical_id(m.id.removesuffix(TOKEN_LAYERS_SUFFIX))] = m
        else:
            stored[canonical_id(m.id)] = m
    rows: list[tuple[str, ...]] = [("model", "kind", "dim", "languages", "in store", "notes")]
    for known in KNOWN_MODELS:
        entry = stored.pop(known.id, None)
        note = ("default; " if known.id == DEFAULT_MODEL else "") + known.description.removeprefix(
            "default; "
        )
        held = _precisions(entry) + _token_layers(token_layers.pop(known.id, None))
        rows.append((known.id, known.kind, str(known.dim), known.languages, held, note))
    for model_id in sorted({*stored, *token_layers}):
        held = _precisions(stored.get(model_id)) + _token_layers(token_layers.get(model_id))
        rows.append((model_id, "?", "", "", held, "in the store, not in the registry"))
    _print_table(rows)
    print(f"\nstore: {store.store_root() / 'models'}   (set SIMKERNEL_HOME to move it)")
    print(
        "prepare the default offline: simkernel models prepare; others: simkernel models prepare ID "
        "(needs the hub) or simkernel models export CHECKPOINT DIR"
    )


def _precisions(entry: Any) -> str:
    if entry is None:
        return "-"
    names = set(entry.onnx_files)
    found = [p for p, f in (("fp32", "model.onnx"), ("int8", "model_int8.onnx")) if f in names]
    return "+".join(found) or ", ".join(sorted(names)) or "incomplete"


def _token_layers(entry: Any) -> str:
    return "" if entry is None else f"; token layers {_precisions(entry)}"


def _print_table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]).rstrip())


def _prepare(args: argparse.Namespace) -> None:
    from simkernel.runtime.acquisition.prepare import prepare_model

    model = canonical_id(args.model) if args.model else DEFAULT_MODEL
    if getattr(args, "token_layers", False):
        _prepare_token_layers(args, model)
        return
    if args.precision == "int8":  # the edge profile: int8 is made from fp32, then only int8 is kept
        print(f"preparing {model} (int8 only; fp32 is left out) ...", file=sys.stderr, flush=True)
        folder = Path(prepare_model(model, ("int8",), force=args.force, only=True))
    else:
        print(f"preparing {model} (fp32 and int8) ...", file=sys.stderr, flush=True)
        folder = Path(prepare_model(model, force=args.force))
    print(f"{model}: ready in {folder}")
    _print_files(folder)
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and p.name != STAMP)
    print(f"  {'in all':<36} {human_size(size):>9}")


def _prepare_token_layers(args: argparse.Namespace, model: str) -> None:
    from simkernel.runtime.acquisition.token_layers import prepare_token_layers

    if args.precision == "int8":
        raise DataError(
            "--precision int8 (keep the int8 model alone) does not apply to --token-layers, which keeps fp32 and int8: drop --precision"
        )
    print(f"preparing the token layers of {model} (fp32 and int8) ...", file=sys.stderr, flush=True)
    folder = Path(prepare_token_layers(args.model or model, force=args.force))
    print(f"{model}: token layers ready in {folder}")
    _print_files(folder)


def _export(args: argparse.Namespace) -> None:
    from simkernel.runtime.acquisition.resolve import looks_like_path

    src = Path(args.src)
    hub_id = None if src.is_dir() else args.src
    if hub_id is not None and (looks_like_path(hub_id) or hub_id.count("/") != 1):
        raise DataError(
            f"SRC {args.src!r} is not a folder (nor a hub id, ORG/NAME); give a sentence-transformers or transformers checkpoint folder, or the hub repository that publishes one"
        )
    dst = Path(args.dst)
    if not args.overwrite and dst.exists() and (not dst.is_dir() or any(dst.iterdir())):
        raise DataError(
            f"DST {args.dst!r} already exists and is not empty; choose another folder, or pass --overwrite to replace it"
        )
    from simkernel.runtime.acquisition.export import export_model
    from simkernel.runtime.acquisition.hub_checkpoint import downloaded_checkpoint

    precisions = ("fp32", "int8") if args.precision == "int8" else ("fp32",)
    keep = tuple(args.int8_keep_fp32) if args.int8_keep_fp32 else None  # None: the registry's for the model
    token_layers = getattr(args, "token_layers", False)
    if keep and args.precision != "int8":
        raise DataError("--int8-keep-fp32 applies to the int8 graph: add --precision int8")
    if hub_id is not None:
        print(f"downloading the checkpoint of {hub_id} from the hub ...", file=sys.stderr, flush=True)
    checkpoint = downloaded_checkpoint(hub_id) if hub_id else contextlib.nullcontext((src, None))
    try:
        with checkpoint as (folder_src, source):
            print(
                f"exporting {args.src} ({' and '.join(precisions)}, with a parity check) ...",
                file=sys.stderr,
                flush=True,
            )
            if token_layers:
                from simkernel.runtime.acquisition.token_layers import export_token_layers

                folder = Path(
                    export_token_layers(
                        folder_src,
                        dst,
                        precisions,
                        model_id=hub_id,
                        source=source,
                        revision=source["commit"] if source else None,
                        overwrite=args.overwrite,
                        int8_keep_fp32=keep,
                    )
                )
            else:
                folder = Path(
                    export_model(
                        folder_src,
                        dst,
                        precisions,
                        model_id=hub_id,
                        source=source,
                        revision=source["commit"] if source else None,
                        overwrite=args.overwrite,
                        int8_keep_fp32=keep,
                    )
                )
    except ValueError as exc:  # an --int8-keep-fp32 pattern matching no layer; a hub repo without weights
        raise DataError(str(exc)) from None
    print(f"exported {args.src} to {folder}")
    _print_files(folder)
    if token_layers:
        print(f"use it with TokenEncoder.load({str(folder)!r})")
    else:
        print(f"use it with --model {folder}, or TextEncoder({str(folder)!r})")


def _info(args: argparse.Namespace) -> None:
    folder = Path(args.model)
    model_id = args.model
    if not folder.is_dir():
        model_id = canonical_id(args.model)
        folder = store.model_dir(model_id)
    known = known_model(model_id)
    if not folder.is_dir():
        if known is None:
            raise DataError(
                f"{args.model!r} is neither a folder nor a model in the store ({store.store_root() / 'models'}); see simkernel models list"
            )
        print(f"id           {known.id}")
        print(
            f"kind         {known.kind}, dim {known.dim}, pooling {known.pooling}, "
            f"max length {known.max_seq_length}"
        )
        print(f"languages    {known.languages}")
        print(f"hub          {known.hub_repo} @ {known.revision}")
        print(f"in store     no: simkernel models prepare {known.id}")
        return
    config = read_model_config(folder)
    manifest = read_manifest(folder)
    print(f"id           {manifest.get('id', model_id)}")
    print(f"folder       {folder}")
    if config.is_cross_encoder:
        print(f"kind         cross-encoder, {config.num_labels} label(s), activation {config.activation}")
    else:
        print(
            f"kind         bi-encoder, dim {config.dim}, pooling {config.pooling}, "
            f"normalize {'yes' if config.normalize else 'no'}"
        )
    print(f"max length   {config.max_seq_length} tokens")
    if known is not None:
        print(f"languages    {known.languages}")
    source = manifest.get("source")
    if source:
        print(f"source       {_compact(source)}")
    _print_files(folder, manifest)
    parity = manifest.get("parity")
    if isinstance(parity, dict):
        for key, figures in parity.items():
            label = "parity" if key == "reference" else f"parity {key}"
            print(f"{label:<12} {figures if isinstance(figures, str) else _compact(figures)}")
    if manifest.get("export"):
        print(f"{'export':<12} {_compact(manifest['export'])}")
    print(f"{'parity bf16':<12} {_bf16_parity(folder, config)}")


def _bf16_parity(folder: Path, config: Any) -> str:
    """bf16 against the bundle's fp32 on the probe set, measured now on this machine, or why it cannot run."""
    from simkernel.errors import SimkernelError
    from simkernel.runtime import capabilities
    from simkernel.runtime.acquisition.parity import bf16_parity

    status = capabilities()["precisions"]["bf16"]
    if not status["available"]:
        return f"not available here: {status['reason']}"
    if not (folder / "model.onnx").is_file():
        return "no model.onnx in this bundle"
    kind = "cross-encoder" if config.is_cross_encoder else "bi-encoder"
    try:
        figures = bf16_parity(folder, kind)
    except SimkernelError as exc:
        return f"refused here: {exc}"
    rounded = {k: float(f"{v:.7g}") if isinstance(v, float) else v for k, v in figures.items()}
    return f"{_compact(rounded)} (vs fp32, measured now on this CPU)"


def _print_files(folder: Path, manifest: dict[str, Any] | None = None) -> None:
    if manifest is None:
        manifest = read_manifest(folder)
    listed = manifest_entries(manifest)
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != STAMP):
        name = path.relative_to(folder).as_posix()
        meta = listed.get(name, {})
        extra = f"  {meta['precision']}" if meta.get("precision") else ""
        print(f"  {name:<36} {human_size(path.stat().st_size):>9}{extra}")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
