"""TokenEncoder: token vectors of a layer (or of every layer) against BERTScore's own torch path, and its
tokenization against BERTScore's ``sent_encode``.

References (independent of simkernel): ``bert_score.utils.get_model(checkpoint, num_layers)`` +
``bert_encode`` (transformers' ``AutoModel`` in torch, truncated at the layer as BERTScore truncates it,
or ``all_layers=True``), and ``bert_score.utils.sent_encode`` with ``get_tokenizer(use_fast=False)`` and
``use_fast=True``. The default model's token layers come from the store (``make models``).

Bounds measured (all-MiniLM-L6-v2, x86-64 AVX2, onnxruntime 1.2x, torch 2.13): fp32 max |diff| 8.9e-6 over
every layer and token of the texts below (hidden states up to ~10.5 in absolute value): asserted within
1e-5 absolute; int8 (per-row) min cosine per token 0.975 against torch: asserted >= 0.95. bf16: the path
is checked with OpenVINO computing in f32 (``simulated_bf16``, fp32's numbers within 1e-4) anywhere, and
against fp32 with real bf16 (min cosine >= 0.99) only on a CPU with native bf16 (skipped elsewhere).

transformers 5 has no slow BERT tokenizer: ``use_fast=False`` gives the same tokenizers-backed class as
``use_fast=True``, and BERTScore 0.3.13's ``sent_encode("")`` fails there
(``build_inputs_with_special_tokens`` is gone); for the empty text the reference is therefore the
tokenizer's own ``encode("", add_special_tokens=True)`` ([CLS] [SEP], what ``sent_encode`` gives with
transformers 4).
"""

from __future__ import annotations

import numpy as np
import pytest

from simkernel.runtime import TokenEncoder
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL
from simkernel.runtime.inference import bf16

bert_score_utils = pytest.importorskip("bert_score.utils", reason="bert-score is the reference")
torch = pytest.importorskip("torch", reason="the reference runs transformers in torch")

LONG = " ".join(
    f"sentence {i} of a very long answer that goes on and on," for i in range(120)
)  # > 512 tokens
TEXTS = [
    "The cat sat on the mat.",
    "Berlin is the capital of Germany.",
    "  Who wrote the novel War and Peace?  ",
    "Москва — столица России.",
    "北京是中国的首都。",
    "Café, naïve, résumé — accents and punctuation!",
    "",
    "1945",
    LONG,
]
TOKENIZER_TEXTS = [
    *TEXTS,
    "   ",
    "\t\n",
    "👍🏽 great job 🎉🎉",
    "zero\u200bwidth\u200djoiner\u2060here",
    "\u200b",
    "\ufeffbyte order mark",
    "control\x00chars\x07and\x1bescape",
    "\x1f\x1e",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ",
    "e\u0301 combining",
    "a" * 2000,
    "word " * 600,
]
STATUS = bf16.bf16_status()


@pytest.fixture(scope="module")
def checkpoint(reference_checkpoint):
    return str(reference_checkpoint)


@pytest.fixture(scope="module")
def token_bundle():
    from simkernel.runtime.store import bundles as store
    from simkernel.runtime.store.layout import token_layers_id

    folder = store.model_dir(token_layers_id(DEFAULT_MODEL))
    if not (folder / "model_int8_layer_6.onnx").is_file():
        pytest.fail(f"the default model's token layers are not in the store ({folder}); run `make models`")
    return folder


@pytest.fixture(scope="module")
def fp32(token_bundle):
    return TokenEncoder.load(DEFAULT_MODEL, threads=2, export=False)


@pytest.fixture(scope="module")
def int8(token_bundle):
    return TokenEncoder.load(DEFAULT_MODEL, precision="int8", threads=2, export=False)


@pytest.fixture(scope="module")
def tokenizers(checkpoint):
    return {fast: bert_score_utils.get_tokenizer(checkpoint, use_fast=fast) for fast in (False, True)}


def sent_encode(tokenizer, text: str) -> list[int]:
    """bert_score's sent_encode; on transformers 5 the empty text falls back (see the module docstring)."""
    try:
        return bert_score_utils.sent_encode(tokenizer, text)
    except AttributeError:
        assert text.strip() == "", "sent_encode failed on a non-empty text"
        return tokenizer.encode("", add_special_tokens=True)


def bert_score_states(checkpoint: str, tokenizer, texts: list[str], layer: int | None) -> list[np.ndarray]:
    """Per text, float64 (tokens, dim) at ``layer`` or (layers + 1, tokens, dim) for every layer: BERTScore's
    get_model + bert_encode on a padded batch, the padding cut off."""
    model = bert_score_utils.get_model(checkpoint, 6 if layer is None else layer, all_layers=layer is None)
    ids = [sent_encode(tokenizer, t) for t in texts]
    padded, lengths, mask = bert_score_utils.padding(ids, tokenizer.pad_token_id)
    emb = bert_score_utils.bert_encode(model, padded, attention_mask=mask, all_layers=layer is None)
    out = []
    for row, length in enumerate(lengths.tolist()):
        states = emb[row, :length].double().numpy()  # (tokens, dim) or (tokens, layers + 1, dim)
        out.append(states if layer is not None else np.moveaxis(states, 1, 0))
    return out


def per_text(batch) -> list[np.ndarray]:
    return [batch.text_vectors(i).astype(np.float64) for i in range(len(batch))]


# ------------------------------------------------------------------------------ parity with BERTScore
@pytest.mark.parametrize("layer", [0, 1, 2, 3, 4, 5, 6, None])
def test_fp32_and_int8_match_bert_score(fp32, int8, checkpoint, tokenizers, layer):
    expected = bert_score_states(checkpoint, tokenizers[False], TEXTS, layer)
    got = fp32.encode(TEXTS, layer=layer)
    assert got.layer == layer and got.vectors.dtype == np.float32
    for text, want, have in zip(TEXTS, expected, per_text(got), strict=True):
        assert have.shape == want.shape, text[:40]
        np.testing.assert_allclose(have, want, rtol=0, atol=1e-5, err_msg=text[:40])
    for want, have in zip(expected, per_text(int8.encode(TEXTS, layer=layer)), strict=True):
        cosine = (want * have).sum(-1) / (np.linalg.norm(want, axis=-1) * np.linalg.norm(have, axis=-1))
        assert cosine.min() >= 0.95


def test_batch_layout(fp32):
    batch = fp32.encode(TEXTS, layer=3)
    expected_ids = fp32.tokenize(TEXTS)
    assert batch.offsets.dtype == np.int64 and batch.token_ids.dtype == np.int64
    assert batch.offsets.tolist() == [0, *np.cumsum([len(i) for i in expected_ids]).tolist()]
    assert np.array_equal(batch.token_ids, np.concatenate(expected_ids))
    assert batch.vectors.shape == (batch.offsets[-1], fp32.dim) == (batch.offsets[-1], 384)
    assert batch.truncated.tolist() == [t is LONG for t in TEXTS]
    every = fp32.encode(TEXTS, layer=None)
    assert every.vectors.shape == (fp32.num_layers + 1, batch.offsets[-1], 384)
    assert np.abs(every.vectors[3] - batch.vectors).max() <= 1e-5  # another graph, the same layer
    empty = fp32.encode([], layer=2)
    assert empty.vectors.shape == (0, 384) and empty.offsets.tolist() == [0] and len(empty) == 0


def test_properties(fp32, tokenizers):
    tok = tokenizers[False]
    assert fp32.num_layers == 6 and fp32.dim == 384
    assert fp32.max_length == tok.model_max_length == 512  # bert_score's, not sentence-transformers' 256
    assert (fp32.cls_id, fp32.sep_id) == (tok.cls_token_id, tok.sep_token_id)
    assert fp32.special_ids == set(tok.all_special_ids)


# ------------------------------------------------------------------------------ tokenization
@pytest.mark.parametrize("fast", [False, True])
def test_tokenize_matches_sent_encode(fp32, tokenizers, fast):
    got, truncated = fp32.tokenize(TOKENIZER_TEXTS, with_truncation=True)
    for text, ids in zip(TOKENIZER_TEXTS, got, strict=True):
        assert ids.dtype == np.int64
        assert ids.tolist() == sent_encode(tokenizers[fast], text), repr(text[:40])
    untruncated = [len(tokenizers[fast].encode(t.strip(), add_special_tokens=True)) for t in TOKENIZER_TEXTS]
    assert truncated.tolist() == [n > 512 for n in untruncated]
    assert max(len(i) for i in got) == 512 and truncated.sum() == 2  # "a" * 2000 is one [UNK]


def test_whitespace_and_empty_texts_give_the_special_tokens(fp32):
    for ids in fp32.tokenize(["", "   ", "\n\t", "\u3000"]):
        assert ids.tolist() == [fp32.cls_id, fp32.sep_id]


# ------------------------------------------------------------------------------ batch independence
@pytest.mark.parametrize("precision", ["fp32", "int8"])
@pytest.mark.parametrize("layer", [2, None])
def test_vectors_do_not_depend_on_batch_mates(token_bundle, precision, layer):
    encoder = TokenEncoder.load(DEFAULT_MODEL, precision=precision, threads=2, export=False)
    together = encoder.encode(TEXTS * 2, layer=layer, batch_size=4)
    for i, text in enumerate(TEXTS):
        alone = encoder.encode([text], layer=layer)
        assert np.array_equal(alone.vectors, together.text_vectors(i)), text[:40]
        assert np.array_equal(alone.vectors, together.text_vectors(i + len(TEXTS)))
    other = encoder.encode(list(reversed(TEXTS)), layer=layer, batch_size=1)
    for i in range(len(TEXTS)):
        assert np.array_equal(other.text_vectors(len(TEXTS) - 1 - i), together.text_vectors(i))


def test_threads_are_honoured(token_bundle):
    one = TokenEncoder.load(DEFAULT_MODEL, threads=1, export=False)
    one.encode(TEXTS, layer=4)
    session = one._session(4)
    assert session.threads == 1 and session.workers == 1
    two = TokenEncoder.load(DEFAULT_MODEL, threads=2, export=False)
    two.encode(TEXTS, layer=4)
    assert two._session(4).workers == 2


# ------------------------------------------------------------------------------ bad arguments
def test_layer_past_depth_names_the_depth_as_bert_score_does(fp32, checkpoint):
    with pytest.raises(AssertionError) as reference:
        bert_score_utils.get_model(checkpoint, 7)
    bert_score_message = str(reference.value).replace(checkpoint, DEFAULT_MODEL)
    for bad in (7, -1, 100):
        with pytest.raises(ValueError) as got:
            fp32.encode(["a"], layer=bad)
        assert bert_score_message in str(got.value)
        assert "0..6" in str(got.value)
    for wrong in (True, "3", 2.0):
        with pytest.raises(TypeError, match="layer must be an int"):
            fp32.encode(["a"], layer=wrong)
    with pytest.raises(TypeError, match="single str"):
        fp32.encode("a text", layer=1)
    with pytest.raises(ValueError, match="batch_size"):
        fp32.encode(["a"], layer=1, batch_size=0)


def test_text_encoder_refuses_a_token_layers_bundle(token_bundle):
    from simkernel.errors import ModelError
    from simkernel.runtime import TextEncoder

    with pytest.raises(ModelError, match="TokenEncoder"):
        TextEncoder(token_bundle)


# ------------------------------------------------------------------------------ bf16
def test_bf16_path_gives_fp32_numbers(token_bundle, simulated_bf16, fp32):
    from simkernel.runtime.inference.openvino_session import OpenVinoEncoderSession

    encoder = TokenEncoder.load(DEFAULT_MODEL, precision="bf16", threads=2, export=False)
    for layer in (3, None):
        got = encoder.encode(TEXTS[:7], layer=layer)
        assert isinstance(encoder._session(layer), OpenVinoEncoderSession)
        np.testing.assert_allclose(got.vectors, fp32.encode(TEXTS[:7], layer=layer).vectors, atol=1e-4)


@pytest.mark.skipif(not STATUS["available"], reason=f"bf16 needs a CPU with native bf16: {STATUS['reason']}")
def test_real_bf16_close_to_fp32(token_bundle, fp32):
    encoder = TokenEncoder.load(DEFAULT_MODEL, precision="bf16", threads=2, export=False)
    for layer in (1, 6):
        a = encoder.encode(TEXTS, layer=layer).vectors.astype(np.float64)
        b = fp32.encode(TEXTS, layer=layer).vectors.astype(np.float64)
        cosine = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
        assert cosine.min() >= 0.99
