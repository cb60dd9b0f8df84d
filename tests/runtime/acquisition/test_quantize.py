"""int8 quantisation: the per-row scheme against a numpy reference, batch independence of the shipped int8
model (a text alone vs inside a batch), accuracy vs sentence-transformers, and why onnxruntime's dynamic
quantisation is not used (its output depends on the batch-mates)."""

from __future__ import annotations

import platform

import numpy as np
import pytest
from runtime_helpers import SPECIAL_TEXTS

pytestmark = pytest.mark.export


def _one_matmul_graph(path, weight: np.ndarray, opset: int) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    k, n = weight.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="dense")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", n])],
        [numpy_helper.from_array(weight, "w")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))


def _u8s8_saturates() -> bool:
    """True where onnxruntime's u8 x s8 kernel adds pairs of products in 16 bits: x86 without AVX-VNNI,
    AVX512-VNNI or AMX (elsewhere the products are accumulated in 32 bits)."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i686", "x86"):
        return False
    flags = set()
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                flags.update(line.split(":", 1)[1].split())
                break
    return not flags & {"avx512_vnni", "avx_vnni", "amx_int8"}


def _u8s8_dot(x_u8: np.ndarray, w_q: np.ndarray, saturating: bool) -> np.ndarray:
    """x_u8 (zero point 128) times w_q as exact integers, minus the zero point's share.

    saturating: the AVX2 / AVX512BW path without VNNI (VPMADDUBSW) adds the products of adjacent pairs along
    k in 16 bits with saturation before the 32-bit sum; onnxruntime documents this for u8 x s8 models. Both
    paths are modelled exactly, so the reference matches the hardware bit for bit up to float rounding."""
    if not saturating:
        return (x_u8 - 128) @ w_q
    products = x_u8[..., :, None] * w_q  # (..., k, n)
    pairs = np.clip(products[..., 0::2, :] + products[..., 1::2, :], -32768, 32767)
    return pairs.sum(axis=-2) - 128 * w_q.sum(axis=0)


@pytest.mark.parametrize("opset", [17, 18])
def test_per_row_matmul_matches_numpy_reference(tmp_path, opset):
    import onnxruntime as ort

    from simkernel.runtime.acquisition.quantize import quantize_model

    rng = np.random.default_rng(0)
    w = rng.normal(size=(64, 48)).astype(np.float32)
    x = rng.normal(size=(3, 5, 64)).astype(np.float32)
    x[1, 2] *= 100.0  # one outlier token must not coarsen the other tokens' quantisation
    x[2, 4] = 0.0  # an all-zero row stays zero
    _one_matmul_graph(tmp_path / "fp32.onnx", w, opset)
    info = quantize_model(tmp_path / "fp32.onnx", tmp_path / "int8.onnx", method="per-row")
    assert info["quantized_matmuls"] == 1 and info["batch_independent"] is True
    session = ort.InferenceSession(str(tmp_path / "int8.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {"x": x})[0]

    # reference in float64: symmetric int8 per row of x, per column of w, the integer products as the CPU's
    # u8 x s8 kernel forms them (see _u8s8_dot)
    w_scale = np.abs(w).max(axis=0).astype(np.float64) / 127
    w_q = np.clip(np.round(w / w_scale), -127, 127)
    x_scale = np.maximum(np.abs(x).max(axis=-1, keepdims=True), 1e-12).astype(np.float64) / 127
    x_q = np.round(x / x_scale)
    want = _u8s8_dot(x_q + 128, w_q, saturating=_u8s8_saturates()) * x_scale * w_scale
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.all(got[2, 4] == 0)
    # the scheme's own error, free of the kernel's saturation: the exact integer products against float64
    exact = x.astype(np.float64) @ w
    scheme = _u8s8_dot(x_q + 128, w_q, saturating=False) * x_scale * w_scale
    rel = np.abs(scheme - exact).max(axis=-1) / np.abs(exact).max(axis=-1).clip(1e-9)
    assert rel[np.abs(exact).max(axis=-1) > 0].max() < 0.03
    # each row depends on that row only: the same token alone gives the same numbers
    alone = session.run(None, {"x": x[:1, :1]})[0]
    np.testing.assert_array_equal(alone[0, 0], got[0, 0])


def test_unknown_method_and_static_without_calibration_are_errors(tmp_path):
    from simkernel.runtime.acquisition.quantize import quantize_model

    _one_matmul_graph(tmp_path / "fp32.onnx", np.ones((4, 4), np.float32), 17)
    with pytest.raises(ValueError, match="method must be one of"):
        quantize_model(tmp_path / "fp32.onnx", tmp_path / "q.onnx", method="int4")
    # onnxruntime's batch-dependent dynamic quantisation is not offered (only the studies measure it)
    for method in ("dynamic", "dynamic-per-channel"):
        with pytest.raises(ValueError, match="method must be one of"):
            quantize_model(tmp_path / "fp32.onnx", tmp_path / "q.onnx", method=method)
    assert not (tmp_path / "q.onnx").exists()
    with pytest.raises(ValueError, match="calibration_feeds"):
        quantize_model(tmp_path / "fp32.onnx", tmp_path / "q.onnx", method="static")


@pytest.fixture(scope="session")
def int8_encoder(default_bundle):
    from simkernel.runtime import TextEncoder

    return TextEncoder(default_bundle, precision="int8", threads=2, cache_size=0)


def test_default_int8_is_per_row_quantised(default_bundle):
    from simkernel.runtime.store.manifest import read_manifest

    entry = read_manifest(default_bundle)["files"]["model_int8.onnx"]
    assert entry["quantization"]["method"] == "per-row" and entry["quantization"]["batch_independent"]


def test_int8_text_alone_equals_text_in_batch(int8_encoder, sas_texts):
    """The same text gets the same embedding whatever else is in its batch (to float rounding noise)."""
    texts = SPECIAL_TEXTS + sas_texts[:120]
    batched = int8_encoder.encode(texts, batch_size=32)
    alone = np.stack([int8_encoder.encode([t])[0] for t in texts])
    assert np.abs(alone - batched).max() <= 1e-6


def test_int8_accuracy_vs_sentence_transformers(int8_encoder, st_model, probe_texts):
    got = int8_encoder.encode(probe_texts)
    want = st_model.encode(probe_texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    cosine = (got.astype(np.float64) * want).sum(1)
    assert cosine.min() >= 0.97, probe_texts[int(cosine.argmin())]
    assert cosine.mean() >= 0.99


@pytest.fixture(scope="session")
def raw_minilm_graph(tmp_path_factory, reference_checkpoint):
    from simkernel.runtime.acquisition.trace import export_raw_graph

    path = tmp_path_factory.mktemp("raw") / "raw.onnx"
    export_raw_graph(reference_checkpoint, path)
    return path


def _embed(session, tokenizer, texts):
    enc = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    tokens = session.run(
        None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    )[0]
    return (tokens * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)


@pytest.mark.parametrize(("method", "independent"), [("dynamic", False), ("per-row", True)])
def test_batch_dependence_of_dynamic_vs_per_row(
    tmp_path, raw_minilm_graph, reference_checkpoint, method, independent
):
    """onnxruntime's dynamic quantisation (run here straight from onnxruntime: the package does not offer it)
    scales activations over the whole batch: a text's vector moves when a batch-mate has larger
    activations. Per-row quantisation does not move."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from tokenizers import Tokenizer

    from simkernel.runtime.acquisition.quantize import quantize_model

    if method == "dynamic":
        quantize_dynamic(
            str(raw_minilm_graph),
            str(tmp_path / "q.onnx"),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
        )
    else:
        quantize_model(raw_minilm_graph, tmp_path / "q.onnx", method=method)
    session = ort.InferenceSession(str(tmp_path / "q.onnx"), providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(reference_checkpoint / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    tokenizer.enable_truncation(256)
    text = "Berlin is the capital of Germany."
    mates = ["Москва — столица России. " * 10, "!!!???" * 20, "北京是中国的首都。" * 8]
    alone = _embed(session, tokenizer, [text])[0]
    in_batch = _embed(session, tokenizer, [text, *mates])[0]
    diff = np.abs(alone - in_batch).max()
    if independent:
        assert diff <= 1e-5
    else:
        assert diff > 1e-3


def test_int8_keep_fp32_patterns_select_dense_layers(tmp_path, raw_minilm_graph):
    """``int8_keep_fp32`` patterns name dense layers by part of their node name; those stay fp32 MatMuls,
    the others are quantised; a pattern matching nothing is an error listing how layers are named."""
    import onnx

    from simkernel.runtime.acquisition.graph_passes import matching_dense_layers
    from simkernel.runtime.acquisition.quantize import quantize_model, weight_matmuls

    every = weight_matmuls(raw_minilm_graph)
    assert len(every) == 36  # 6 layers x (q, k, v, attention output, FFN in, FFN out)
    kept = matching_dense_layers(raw_minilm_graph, ["layer.5/intermediate"])
    assert kept == [n for n in every if "layer.5/intermediate" in n] and len(kept) == 1
    with pytest.raises(ValueError, match="matches no dense layer"):
        matching_dense_layers(raw_minilm_graph, ["layer.99/"])
    assert matching_dense_layers(raw_minilm_graph, []) == []

    info = quantize_model(raw_minilm_graph, tmp_path / "q.onnx", exclude_nodes=kept)
    assert info["quantized_matmuls"] == 35
    graph = onnx.load(str(tmp_path / "q.onnx"), load_external_data=False).graph
    assert [n.name for n in graph.node if n.op_type == "MatMul" and n.name in kept] == kept
