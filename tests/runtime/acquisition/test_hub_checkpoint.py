"""Hub repositories that publish a checkpoint and no ONNX graph (as most do, Haystack's test models among
them): downloaded and exported into the store, through huggingface_hub against the loopback hub
(tests/runtime/fake_hub.py; nothing of huggingface_hub is mocked); results checked against
sentence-transformers on the same checkpoint. Also ``models prepare ID --force`` from the hub, and
``models export ORG/NAME DST``."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from fake_hub import COMMIT, FakeHub
from runtime_helpers import SPECIAL_TEXTS, cosine_rows, make_tiny_bi_encoder, make_tiny_cross_encoder

from simkernel.errors import MissingDependencyError, ModelNotFoundError
from simkernel.runtime import TextEncoder
from simkernel.runtime.store import bundles as store

pytestmark = [
    pytest.mark.export,
    pytest.mark.filterwarnings("ignore:Converting a tensor to a Python boolean"),
    pytest.mark.filterwarnings("ignore:Exporting aten::index"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

BI, CROSS = "org/tiny-checkpoint", "org/tiny-cross-checkpoint"
CHECKPOINT_FILES = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
]
ST_FILES = ["modules.json", "sentence_bert_config.json", "1_Pooling/config.json"]


@pytest.fixture(scope="module")
def bi_checkpoint(tiny_models_root, reference_checkpoint):
    return make_tiny_bi_encoder(tiny_models_root, reference_checkpoint, "mean", True)


@pytest.fixture(scope="module")
def cross_checkpoint(tiny_models_root, reference_checkpoint):
    return make_tiny_cross_encoder(tiny_models_root, reference_checkpoint, 1)


@pytest.fixture()
def hub(bi_checkpoint, cross_checkpoint, clean_hf_env, monkeypatch):
    """A hub with the two checkpoints (no onnx/ folder) and a repo with configs but no weights."""
    repos = {
        **FakeHub.from_folder(BI, bi_checkpoint, {n: n for n in CHECKPOINT_FILES + ST_FILES}),
        **FakeHub.from_folder(CROSS, cross_checkpoint, {n: n for n in CHECKPOINT_FILES}),
        **FakeHub.from_folder("org/configs-only", bi_checkpoint, {n: n for n in ST_FILES + ["config.json"]}),
    }
    with FakeHub(repos) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        yield server


def test_a_checkpoint_repo_is_exported_into_the_store(hub, bi_checkpoint):
    from sentence_transformers import SentenceTransformer

    encoder = TextEncoder(BI, threads=1)
    assert encoder.model_path == store.model_dir(BI)
    reference = SentenceTransformer(str(bi_checkpoint), device="cpu").encode(SPECIAL_TEXTS)
    assert cosine_rows(encoder.encode(SPECIAL_TEXTS), reference).min() >= 0.99999
    manifest = json.loads((encoder.model_path / "simkernel.json").read_text())
    assert manifest["id"] == BI and manifest["kind"] == "bi-encoder"
    weights = bi_checkpoint / "model.safetensors"
    assert manifest["source"] == {
        "type": "hub checkpoint",
        "path": f"{hub.endpoint}/{BI}",
        "repo": BI,
        "revision": "main",
        "commit": COMMIT,
        "endpoint": hub.endpoint,
        "weights": {
            "model.safetensors": {"bytes": weights.stat().st_size, "sha256": store.file_sha256(weights)}
        },
    }
    assert "model.onnx" in manifest["files"] and "model_int8.onnx" not in manifest["files"]
    gets = [r[1] for r in hub.requests if r[0] == "GET"]
    assert f"/{BI}/resolve/{COMMIT}/tokenizer.json" in gets  # the rest at the weights' commit
    # the next load is from the store: the hub is not asked again
    before = len(hub.requests)
    TextEncoder(BI, threads=1)
    assert len(hub.requests) == before
    assert not list((store.store_root() / "tmp").glob("checkpoint-*"))  # the download folder is gone


def test_int8_of_a_checkpoint_repo(hub):
    encoder = TextEncoder(BI, precision="int8", threads=1)
    manifest = json.loads((encoder.model_path / "simkernel.json").read_text())
    assert {"model.onnx", "model_int8.onnx"} <= set(manifest["files"])
    assert manifest["parity"]["int8"]["min_cosine"] >= 0.97
    batched = encoder.encode(SPECIAL_TEXTS)
    alone = np.stack([encoder.encode([t])[0] for t in SPECIAL_TEXTS])
    assert np.abs(batched - alone).max() <= 1e-6  # simkernel's per-row int8


def test_sas_evaluator_on_a_cross_encoder_checkpoint_repo(hub, cross_checkpoint):
    """Haystack's path: the architecture is read from the hub's config.json, then the checkpoint is
    exported; the scores are sentence-transformers' CrossEncoder's (with Haystack's sigmoid rule)."""
    from sentence_transformers import CrossEncoder

    from simkernel.components.evaluators import SASEvaluator

    ground_truths = ["A construction budget of US $2.3 billion", "Лев Толстой", "北京"]
    predictions = ["US $2.3 billion", "Толстой", "北京市"]
    result = SASEvaluator(model=CROSS, threads=1).run(
        ground_truth_answers=ground_truths, predicted_answers=predictions
    )
    expected = CrossEncoder(str(cross_checkpoint), device="cpu").predict(
        list(zip(predictions, ground_truths, strict=True))
    )
    expected = np.asarray(expected, dtype=np.float64)
    if (expected > 1).any():
        expected = 1 / (1 + np.exp(-expected))
    np.testing.assert_allclose(result["individual_scores"], expected, atol=1e-5)
    assert json.loads((store.model_dir(CROSS) / "simkernel.json").read_text())["kind"] == "cross-encoder"


def test_no_weights_and_no_export_extra_are_explained(hub, monkeypatch):
    with pytest.raises(ModelNotFoundError) as error:
        TextEncoder("org/configs-only")
    message = str(error.value)
    assert "publishes no onnx/model.onnx" in message
    assert "publishes neither an ONNX graph nor checkpoint weights" in message
    assert not store.model_dir("org/configs-only").exists()

    from simkernel.runtime.acquisition.hub_checkpoint import export_from_hub

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if the export extra were missing
    before = len(hub.requests)
    with pytest.raises(MissingDependencyError, match=r"pip install torch==2\.13\.0 'simkernel\[export\]'"):
        export_from_hub(BI)
    assert len(hub.requests) == before  # refused before downloading anything
    with pytest.raises(ModelNotFoundError, match="simkernel\\[export\\]"):
        TextEncoder(BI)


def test_prepare_force_builds_a_hub_model_again(hub, cli_main, capsys):
    assert cli_main("models", "prepare", BI) == 0
    folder = store.model_dir(BI)
    inodes = {p.name: p.stat().st_ino for p in folder.iterdir() if p.is_file()}
    requests = len(hub.requests)
    assert cli_main("models", "prepare", BI) == 0  # current: kept, the hub not asked
    assert len(hub.requests) == requests
    assert {p.name: p.stat().st_ino for p in folder.iterdir() if p.is_file()} == inodes
    assert cli_main("models", "prepare", BI, "--force") == 0
    assert len(hub.requests) > requests
    rebuilt = {p.name: p.stat().st_ino for p in folder.iterdir() if p.is_file()}
    assert {"model.onnx", "model_int8.onnx"} <= set(rebuilt)
    assert all(rebuilt[name] != inodes.get(name) for name in rebuilt)
    assert f"{BI}: ready in {folder}" in capsys.readouterr().out


def test_models_export_of_a_hub_repo(hub, cli_main, capsys, tmp_path, bi_checkpoint):
    from sentence_transformers import SentenceTransformer

    bundle = tmp_path / "bundle"
    assert cli_main("models", "export", BI, bundle) == 0, capsys.readouterr().err
    manifest = json.loads((bundle / "simkernel.json").read_text())
    assert manifest["source"]["type"] == "hub checkpoint" and manifest["source"]["commit"] == COMMIT
    reference = SentenceTransformer(str(bi_checkpoint), device="cpu").encode(SPECIAL_TEXTS)
    assert cosine_rows(TextEncoder(bundle, threads=1).encode(SPECIAL_TEXTS), reference).min() >= 0.99999
    assert not store.model_dir(BI).exists()  # into DST only
    assert cli_main("models", "export", "org/configs-only", tmp_path / "other") == 1
    assert "publishes neither an ONNX graph nor checkpoint weights" in capsys.readouterr().err
    assert cli_main("models", "export", "a/b/c", tmp_path / "other") == 1
    assert "is not a folder (nor a hub id, ORG/NAME)" in capsys.readouterr().err


@pytest.fixture
def cli_main():
    from simkernel.cli import main

    return lambda *argv: main([str(a) for a in argv])
