"""TextTokenizer vs transformers' tokenizer, and the padding/truncation trap of the shipped tokenizer.json."""

from __future__ import annotations

import json

import numpy as np
import pytest
from runtime_helpers import LONG_TEXT, SPECIAL_TEXTS

from simkernel.errors import ModelError
from simkernel.runtime.inference.tokenizer import TextTokenizer, length_sorted_batches, pad_batch


@pytest.fixture(scope="module")
def hf_tokenizer(reference_checkpoint):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(reference_checkpoint))


@pytest.fixture(scope="module")
def tok(reference_checkpoint):
    return TextTokenizer(reference_checkpoint / "tokenizer.json", max_length=256, pad_token="[PAD]")


def test_shipped_tokenizer_json_has_the_trap(reference_checkpoint):
    data = json.loads((reference_checkpoint / "tokenizer.json").read_text())
    # the reason this module exists: fixed padding and truncation at 128 in the file
    assert data["truncation"]["max_length"] == 128
    assert data["padding"]["strategy"] == {"Fixed": 128}


def test_ids_match_transformers(tok, hf_tokenizer, sas_texts):
    texts = SPECIAL_TEXTS + sas_texts[:200]
    batch = tok.pad_batch(tok.encode(texts))
    ref = hf_tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="np")
    np.testing.assert_array_equal(batch.input_ids, ref["input_ids"])
    np.testing.assert_array_equal(batch.attention_mask, ref["attention_mask"])
    np.testing.assert_array_equal(batch.token_type_ids, ref["token_type_ids"])
    assert batch.input_ids.dtype == np.int64


def test_padding_is_per_batch_and_truncation_at_max_length(tok):
    short = tok.pad_batch(tok.encode(["a b", "hello"]))
    assert short.input_ids.shape == (2, 4)  # [CLS] a b [SEP], not 128
    assert short.input_ids[1, -1] == 0 and short.attention_mask[1].tolist() == [1, 1, 1, 0]
    long = tok.encode([LONG_TEXT])[0]
    assert len(long.ids) == 256 and long.ids[-1] == 102  # truncated at 256, still ends with [SEP]
    small = TextTokenizer(tok.path, max_length=16)
    assert len(small.encode([LONG_TEXT])[0].ids) == 16


def test_pairs_match_transformers(tok, hf_tokenizer):
    pairs = [
        ("What is the capital of France?", "Paris is the capital."),
        ("", "x"),
        (LONG_TEXT, LONG_TEXT),
        ("Как дела?", "你好"),
    ]
    batch = tok.pad_batch(tok.encode_pairs(pairs))
    ref = hf_tokenizer(
        [a for a, _ in pairs],
        [b for _, b in pairs],
        padding=True,
        truncation="longest_first",
        max_length=256,
        return_tensors="np",
    )
    np.testing.assert_array_equal(batch.input_ids, ref["input_ids"])
    np.testing.assert_array_equal(batch.token_type_ids, ref["token_type_ids"])


def test_lowercase_option(reference_checkpoint):
    lower = TextTokenizer(reference_checkpoint / "tokenizer.json", max_length=32, lowercase=True)
    assert lower.encode(["ABC"])[0].ids == lower.encode(["abc"])[0].ids


def test_left_padding():
    class Enc:  # what pad_batch reads of a tokenizers.Encoding
        def __init__(self, ids):
            self.ids, self.type_ids = ids, [0] * len(ids)

        def __len__(self):
            return len(self.ids)

    batch = pad_batch([Enc([5, 6, 7]), Enc([8])], pad_id=1, padding_side="left")
    assert batch.input_ids.tolist() == [[5, 6, 7], [1, 1, 8]]
    assert batch.attention_mask.tolist() == [[1, 1, 1], [0, 0, 1]]


def test_errors(tmp_path, reference_checkpoint):
    with pytest.raises(ModelError, match=r"tokenizer\.json is missing"):
        TextTokenizer(tmp_path / "tokenizer.json", max_length=8)
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelError, match="corrupt"):
        TextTokenizer(tmp_path / "tokenizer.json", max_length=8)
    with pytest.raises(ModelError, match="max_length"):
        TextTokenizer(reference_checkpoint / "tokenizer.json", max_length=1)


@pytest.mark.parametrize("batch_size", [1, 3, 32, 100])
def test_length_sorted_batches(tok, sas_texts, batch_size):
    encodings = tok.encode(sas_texts[:70] + SPECIAL_TEXTS)
    lengths = np.array([len(e.ids) for e in encodings])
    batches = length_sorted_batches(encodings, batch_size)
    # every row exactly once, in batches of one token length (nothing padded) of at most batch_size
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(encodings)))
    assert all(len(set(lengths[b].tolist())) == 1 and len(b) <= batch_size for b in batches)
    # as few batches as that allows: per length, the rows cut into full batches and one remainder
    per_length = np.unique(lengths, return_counts=True)[1]
    assert len(batches) == sum(-(-count // batch_size) for count in per_length)
    # the longest rows first, lengths never increasing
    assert [lengths[b][0] for b in batches] == sorted((lengths[b][0] for b in batches), reverse=True)
    for b in batches:  # equal lengths keep their input order
        assert all(i < j for i, j in zip(b, b[1:], strict=False))
    assert length_sorted_batches([], batch_size) == []
