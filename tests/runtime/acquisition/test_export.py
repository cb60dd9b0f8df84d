"""End-to-end export tests (export extra, offline): checkpoint -> ONNX bundle -> simkernel encoders,
compared with sentence-transformers run on the same checkpoint in this session.

Exports are session-scoped and done once: the real all-MiniLM-L6-v2 (fp32 + int8) and a 6-layer
MiniLM cross-encoder with a principal-component head (a real ``BertForSequenceClassification``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from export_checkpoints import (
    block_imports_dir,
    build_truncated_bi_encoder,
    prepare_test_models_script,
    subprocess_env,
)
from runtime_helpers import SPECIAL_TEXTS

pytestmark = pytest.mark.export

RUSSIAN = ["Москва — столица России.", "Кошка сидит на ковре.", "Сколько стоит билет до Санкт-Петербурга?"]
CHINESE = ["北京是中国的首都。", "猫坐在垫子上。", "今天天气很好，我们去公园散步吧。"]
LONG = " ".join(["a very long answer with many many words"] * 120)  # > 256 tokens


@pytest.fixture(scope="session")
def minilm_export(tmp_path_factory, reference_checkpoint) -> Path:
    from simkernel.runtime.acquisition.export import export_model

    dst = tmp_path_factory.mktemp("export") / "minilm"
    return export_model(reference_checkpoint, dst, ("fp32", "int8"), model_id="test/minilm")


@pytest.fixture(scope="session")
def cross_checkpoint(tmp_path_factory, reference_checkpoint) -> Path:
    script = prepare_test_models_script()
    dst = tmp_path_factory.mktemp("cross-ckpt") / "minilm-cross"
    return script.build_test_cross_encoder(reference_checkpoint, dst, num_labels=1)


@pytest.fixture(scope="session")
def cross_export(tmp_path_factory, cross_checkpoint) -> Path:
    """fp32 and int8 under the export's default parity tolerances (int8: max score difference 0.05): a
    graph that missed them would raise ParityError here."""
    from simkernel.runtime.acquisition.export import export_model

    return export_model(cross_checkpoint, tmp_path_factory.mktemp("export") / "cross", ("fp32", "int8"))


@pytest.fixture(scope="session")
def st_cross(cross_checkpoint):
    from sentence_transformers import CrossEncoder

    return CrossEncoder(str(cross_checkpoint), device="cpu")


@pytest.fixture(scope="session")
def check_texts(sas_texts) -> list[str]:
    return SPECIAL_TEXTS + RUSSIAN + CHINESE + [LONG, ""] + sas_texts[:300]


def test_bi_encoder_export_matches_sentence_transformers(minilm_export, st_model, check_texts):
    from simkernel.runtime import TextEncoder

    got = TextEncoder(minilm_export, threads=2, cache_size=0).encode(check_texts)
    want = st_model.encode(check_texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    cosine = (got.astype(np.float64) * want).sum(1)
    assert got.shape == (len(check_texts), 384) and got.dtype == np.float32
    assert cosine.min() >= 0.99999, (cosine.min(), check_texts[int(cosine.argmin())])
    np.testing.assert_allclose(got, want, atol=2e-5)


def test_bi_encoder_manifest_records_sources_files_and_parity(
    minilm_export, reference_checkpoint, haystack_fixture
):
    from simkernel.runtime.store.bundles import file_sha256, verify_bundle

    manifest = json.loads((minilm_export / "simkernel.json").read_text(encoding="utf-8"))
    assert manifest["format"] == 1 and manifest["id"] == "test/minilm" and manifest["kind"] == "bi-encoder"
    weights = manifest["source"]["weights"]["model.safetensors"]
    assert weights["sha256"] == haystack_fixture["model_safetensors_sha256"]
    assert weights["bytes"] == (reference_checkpoint / "model.safetensors").stat().st_size
    on_disk = {p.relative_to(minilm_export).as_posix() for p in minilm_export.rglob("*") if p.is_file()}
    assert set(manifest["files"]) == on_disk - {"simkernel.json"}
    for name, entry in manifest["files"].items():
        assert entry["sha256"] == file_sha256(minilm_export / name)
        assert entry["bytes"] == (minilm_export / name).stat().st_size
    for name in (
        "config.json",
        "tokenizer.json",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ):
        assert (minilm_export / name).read_bytes() == (reference_checkpoint / name).read_bytes()
    assert manifest["files"]["model.onnx"]["precision"] == "fp32"
    assert manifest["files"]["model.onnx"]["graph_optimization"] == "extended"
    assert manifest["files"]["model_int8.onnx"]["quantization"]["batch_independent"] is True
    assert manifest["parity"]["fp32"]["min_cosine"] >= 0.99999
    assert manifest["parity"]["int8"]["min_cosine"] >= manifest["parity"]["int8"]["tolerance"]["min_cosine"]
    assert manifest["export"]["opset"] == 17 and manifest["export"]["output"] == "token_embeddings"
    assert {"torch", "transformers", "onnxruntime", "simkernel"} <= set(manifest["versions"])
    verify_bundle(minilm_export, check_hashes=True)


@pytest.mark.parametrize("name", ["model.onnx", "model_int8.onnx"])
def test_graph_interface_int64_inputs_dynamic_axes(minilm_export, name):
    import onnx

    graph = onnx.load(str(minilm_export / name), load_external_data=False).graph
    inputs = {i.name: i.type.tensor_type for i in graph.input}
    assert set(inputs) == {"input_ids", "attention_mask", "token_type_ids"}
    for tensor in inputs.values():
        assert tensor.elem_type == onnx.TensorProto.INT64
        assert [d.dim_param for d in tensor.shape.dim] == ["batch", "sequence"]
    (output,) = graph.output
    assert output.name == "token_embeddings"
    dims = output.type.tensor_type.shape.dim
    assert [d.dim_param for d in dims[:2]] == ["batch", "sequence"] and dims[2].dim_value == 384


def test_fp32_graph_is_pre_optimised_and_loads_with_basic_level(minilm_export):
    import onnx

    from simkernel.runtime.inference.bundle import session_optimization

    ops = {n.op_type for n in onnx.load(str(minilm_export / "model.onnx")).graph.node}
    assert "LayerNormalization" in ops  # onnxruntime's extended passes ran at export time
    assert session_optimization(minilm_export, "model.onnx") == "basic"
    assert session_optimization(minilm_export, "model_int8.onnx") == "basic"


def test_cross_encoder_export_matches_sentence_transformers(cross_export, st_cross):
    from simkernel.runtime import CrossEncoder

    pairs = [
        ("The cat sat on the mat.", "A cat was sitting on the mat."),
        ("Berlin", "Paris"),
        ("Москва — столица России.", "Столица России — Москва."),
        ("北京是中国的首都。", "中国的首都是北京。"),
        ("", ""),
        (LONG, "short"),
        ("short", LONG),
    ]
    got = CrossEncoder(cross_export, threads=2).predict(pairs)
    want = np.asarray(st_cross.predict(pairs), dtype=np.float64)
    assert got.shape == (len(pairs),)
    assert np.ptp(want) > 0.1  # the head separates the pairs, so the comparison means something
    np.testing.assert_allclose(got, want, atol=1e-4)  # the export's fp32 tolerance
    manifest = json.loads((cross_export / "simkernel.json").read_text(encoding="utf-8"))
    assert manifest["kind"] == "cross-encoder" and manifest["export"]["output"] == "logits"
    assert manifest["parity"]["fp32"]["max_abs_diff"] <= 1e-4


def test_cross_encoder_int8_is_accurate_and_batch_independent(cross_export, st_cross):
    """int8 of a cross-encoder against sentence-transformers' CrossEncoder in torch, at the export's default
    tolerance (max score difference 0.05; measured 0.019 on the probe pairs, x86 without VNNI), and each
    pair's score the same alone as in a batch."""
    from simkernel.runtime import CrossEncoder

    pairs = [
        ("Berlin is the capital of Germany.", "Germany's capital is Berlin."),
        ("a", "b"),
        ("Кошка сидит на ковре.", "猫坐在垫子上。"),
        ("1945", "in 1945"),
        ("The weather is nice today.", "Photosynthesis converts light energy into chemical energy."),
        (LONG, "x"),
    ]
    scorer = CrossEncoder(cross_export, precision="int8", threads=2)
    batch = scorer.predict(pairs)
    want = np.asarray(st_cross.predict(pairs), dtype=np.float64)
    assert np.ptp(want) > 0.1
    assert not np.array_equal(batch, CrossEncoder(cross_export, threads=2).predict(pairs))  # int8 ran
    np.testing.assert_allclose(batch, want, atol=0.05)
    alone = np.array([scorer.predict([p])[0] for p in pairs])
    np.testing.assert_allclose(alone, batch, atol=1e-6)
    parity = json.loads((cross_export / "simkernel.json").read_text(encoding="utf-8"))["parity"]["int8"]
    assert parity["tolerance"] == {"max_abs_diff": 0.05} and parity["max_abs_diff"] <= 0.05
    assert parity["max_abs_diff_alone_vs_batch"] <= 1e-6


def test_parity_failure_writes_nothing(tmp_path, cross_checkpoint):
    from simkernel.runtime.acquisition.export import ParityError, export_model

    dst = tmp_path / "out" / "bundle"
    impossible = {("cross-encoder", "fp32"): {"max_abs_diff": -1.0}}
    with pytest.raises(ParityError, match=r"max_abs_diff.*nothing was written"):
        export_model(cross_checkpoint, dst, "fp32", tolerance=impossible)
    assert not dst.exists()
    assert list((tmp_path / "out").iterdir()) == []  # no temporary folder left behind


def test_existing_destination_is_not_overwritten(tmp_path, cross_checkpoint):
    from simkernel.errors import ModelError
    from simkernel.runtime.acquisition.export import export_model

    dst = tmp_path / "taken"
    dst.mkdir()
    (dst / "keep.txt").write_text("user data")
    with pytest.raises(ModelError, match="not empty"):
        export_model(cross_checkpoint, dst)
    assert (dst / "keep.txt").read_text() == "user data"


def test_not_a_checkpoint_is_a_clear_error(tmp_path):
    from simkernel.errors import ModelError
    from simkernel.runtime.acquisition.export import export_model

    with pytest.raises(ModelError, match="config.json is missing"):
        export_model(tmp_path, tmp_path / "out")
    with pytest.raises(ValueError, match="precision"):
        export_model(tmp_path, tmp_path / "out", precision="fp16")


def test_truncated_bi_encoder_export_to_store(tmp_path, monkeypatch, reference_checkpoint):
    """export_to_store: atomic install under the id; the result loads by id like any stored model."""
    from sentence_transformers import SentenceTransformer

    from simkernel.runtime import TextEncoder
    from simkernel.runtime.acquisition.export import export_to_store
    from simkernel.runtime.store import bundles as store

    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "home"))
    checkpoint = build_truncated_bi_encoder(reference_checkpoint, tmp_path / "ckpt", num_layers=1)
    folder = export_to_store(checkpoint, "test-org/tiny-minilm", "fp32")
    assert folder == store.model_dir("test-org/tiny-minilm") and (folder / "model.onnx").is_file()
    assert not any((store.store_root() / "tmp").iterdir())
    texts = ["hello world", "Привет, мир", "你好，世界", ""]
    got = TextEncoder("test-org/tiny-minilm", cache_size=0).encode(texts)
    want = SentenceTransformer(str(checkpoint), device="cpu").encode(texts, normalize_embeddings=True)
    assert (got * want).sum(1).min() >= 0.99999


def test_missing_export_extra_names_the_install_command(tmp_path, reference_checkpoint):
    blocker = block_imports_dir(tmp_path / "block", ("torch",))
    code = (
        "from simkernel.runtime.acquisition.export import export_model\n"
        "from simkernel.errors import MissingDependencyError\n"
        f"try:\n    export_model({str(reference_checkpoint)!r}, {str(tmp_path / 'out')!r})\n"
        "except MissingDependencyError as exc:\n    print('MISSING:', exc)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=subprocess_env(tmp_path / "home", blocker),
    )
    assert run.returncode == 0, run.stderr
    assert "MISSING:" in run.stdout and "'torch'" in run.stdout
    assert "pip install torch==2.13.0 'simkernel[export]'" in run.stdout
    assert not (tmp_path / "out").exists()


FUSED_OPS = {"Attention", "EmbedLayerNormalization", "SkipLayerNormalization", "BiasGelu"}


def test_fuse_writes_onnxruntimes_transformer_fusions_with_the_same_embeddings(
    tmp_path, tiny_models_root, reference_checkpoint
):
    """fuse=True: the fp32 graph holds onnxruntime's fused transformer operators (the manifest counts
    them), unlike the default export of the same checkpoint, and embeds as sentence-transformers does.
    A fused graph missing its parity check would fall back to the unfused one: the operators say which."""
    import onnx
    from runtime_helpers import cosine_rows, make_tiny_bi_encoder
    from sentence_transformers import SentenceTransformer

    from simkernel.runtime import TextEncoder
    from simkernel.runtime.acquisition.export import export_model

    checkpoint = make_tiny_bi_encoder(tiny_models_root, reference_checkpoint, "mean", True)
    fused = export_model(checkpoint, tmp_path / "fused", "fp32", fuse=True)
    plain = export_model(checkpoint, tmp_path / "plain", "fp32")

    def op_types(bundle: Path) -> set[str]:
        graph = onnx.load(str(bundle / "model.onnx"), load_external_data=False).graph
        return {node.op_type for node in graph.node}

    assert FUSED_OPS <= op_types(fused)
    assert not op_types(plain) & (FUSED_OPS - {"BiasGelu"})  # the default graph keeps attention unfused
    fusions = json.loads((fused / "simkernel.json").read_text())["files"]["model.onnx"]["fusions"]
    assert set(fusions) == FUSED_OPS and all(count > 0 for count in fusions.values())
    assert "fusions" not in json.loads((plain / "simkernel.json").read_text())["files"]["model.onnx"]
    texts = [*SPECIAL_TEXTS, "Москва — столица России.", "北京是中国的首都。"]
    reference = SentenceTransformer(str(checkpoint), device="cpu").encode(texts)
    assert cosine_rows(TextEncoder(fused, threads=1).encode(texts), reference).min() >= 0.99999
