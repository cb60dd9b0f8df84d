"""Pooling modes, missing Normalize, and cross-encoders end to end: tiny random checkpoints exported to
ONNX with torch here, loaded by sentence-transformers (reference) and by simkernel (no torch)."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_helpers import LONG_TEXT, SPECIAL_TEXTS, make_tiny_bi_encoder, make_tiny_cross_encoder

from simkernel.errors import ModelError
from simkernel.runtime import CrossEncoder, TextEncoder

pytestmark = [
    pytest.mark.filterwarnings("ignore:Converting a tensor to a Python boolean"),
    pytest.mark.filterwarnings("ignore:Exporting aten::index"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

TEXTS = SPECIAL_TEXTS + [
    "short",
    "a slightly longer sentence about tokenization",
    "Ещё одна фраза",
    "中文句子",
]
PAIRS = [
    ("What is the capital of France?", "Paris is the capital of France."),
    ("", "empty first"),
    ("Как сбросить пароль?", "Нажмите «Забыли пароль?»"),
    ("北京是首都", "北京是中国的首都"),
    (LONG_TEXT, "short second"),
    ("What is the capital of France?", "Paris is the capital of France."),  # repeat
]


@pytest.mark.parametrize(
    ("pooling", "normalize"),
    [
        ("cls", False),
        ("max", True),
        ("mean", False),
        ("lasttoken", False),
        ("weightedmean", False),
        ("mean_sqrt_len_tokens", False),
        ("cls+mean", True),
    ],
)
def test_bi_encoder_variants_match_sentence_transformers(
    tiny_models_root, reference_checkpoint, pooling, normalize
):
    from sentence_transformers import SentenceTransformer

    folder = make_tiny_bi_encoder(
        tiny_models_root, reference_checkpoint, pooling, normalize, max_seq_length=64
    )
    reference = SentenceTransformer(str(folder), device="cpu").encode(TEXTS, convert_to_numpy=True)
    enc = TextEncoder(folder, threads=1)
    assert enc.max_seq_length == 64 and enc.dim == reference.shape[1]
    np.testing.assert_allclose(enc.encode(TEXTS, normalize=False), reference, rtol=1e-4, atol=1e-5)
    # several batches on two threads: the data-parallel path (single-threaded twin session)
    parallel = TextEncoder(folder, threads=2, cache_size=0)
    np.testing.assert_allclose(
        parallel.encode(TEXTS, batch_size=3, normalize=False), reference, rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize("threads", [1, 2])  # 2: the batches run data-parallel
@pytest.mark.parametrize("num_labels", [1, 3])
def test_cross_encoder_matches_sentence_transformers(
    tiny_models_root, reference_checkpoint, num_labels, threads
):
    from sentence_transformers import CrossEncoder as STCrossEncoder

    folder = make_tiny_cross_encoder(tiny_models_root, reference_checkpoint, num_labels)
    reference = STCrossEncoder(str(folder), device="cpu").predict(PAIRS, batch_size=4, convert_to_numpy=True)
    ce = CrossEncoder(folder, threads=threads)
    assert ce.num_labels == num_labels
    assert ce.activation == ("sigmoid" if num_labels == 1 else "identity")
    scores = ce.predict(PAIRS, batch_size=4)
    assert scores.dtype == np.float32
    assert scores.shape == ((len(PAIRS),) if num_labels == 1 else (len(PAIRS), num_labels))
    np.testing.assert_allclose(scores, reference, rtol=1e-4, atol=1e-5)
    assert ce.predict([]).shape == ((0,) if num_labels == 1 else (0, num_labels))


def test_cross_encoder_bad_input_and_kind(tiny_models_root, reference_checkpoint, default_bundle):
    folder = make_tiny_cross_encoder(tiny_models_root, reference_checkpoint, 1)
    ce = CrossEncoder(folder, threads=1)
    with pytest.raises(TypeError, match=r"pairs\[1\]\[0\] is NoneType"):
        ce.predict([("a", "b"), (None, "b")])
    with pytest.raises(TypeError, match=r"pairs\[0\] must be a \(text_a, text_b\) pair"):
        ce.predict([("a", "b", "c")])
    with pytest.raises(TypeError, match="pairs must be"):
        ce.predict("ab")
    with pytest.raises(ModelError, match="use simkernel.TextEncoder"):
        CrossEncoder(default_bundle)
    with pytest.raises(ModelError, match="use simkernel.CrossEncoder"):
        TextEncoder(folder)


def test_raw_logits_and_sigmoid(tiny_models_root, reference_checkpoint):
    folder = make_tiny_cross_encoder(tiny_models_root, reference_checkpoint, 1)
    ce = CrossEncoder(folder, threads=1)
    logits = ce.predict(PAIRS, apply_activation=False)
    np.testing.assert_allclose(ce.predict(PAIRS), 1.0 / (1.0 + np.exp(-logits.astype(np.float64))), rtol=1e-6)


def test_shared_cross_encoder_instance(tiny_models_root, reference_checkpoint):
    from simkernel.runtime import get_cross_encoder

    folder = make_tiny_cross_encoder(tiny_models_root, reference_checkpoint, 1)
    a = get_cross_encoder(folder)
    assert get_cross_encoder(str(folder)) is a
    assert get_cross_encoder(folder, threads=1) is not a
