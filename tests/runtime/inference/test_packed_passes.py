"""Packed passes (simkernel.runtime.inference.packed_passes) on the real default model, fp32 and int8.

The reference of every row is the whole graph run on the exact-length batch the text belongs to (what
every pass ran before packed passes, and what a call with batching off runs), compared bit for bit.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from runtime_helpers import SPECIAL_TEXTS

from simkernel.runtime import CrossEncoder, TextEncoder
from simkernel.runtime.inference.packed_passes import (
    CHUNK_TOKENS,
    EncoderStages,
    StagesUnavailable,
    chunk_rows,
)
from simkernel.runtime.inference.tokenizer import length_sorted_batches

PRECISIONS = ("fp32", "int8")


@pytest.fixture(scope="module", params=PRECISIONS)
def prepared(request, default_bundle):
    """(encoder with its packed stages ready, batching off, so no pass is shared by chance; the stages)."""
    encoder = TextEncoder(default_bundle, precision=request.param, cache_size=0, batching=False)
    assert encoder.prepare_packed_passes(), encoder.packed_status
    assert encoder.packed_status == "ready"
    return encoder, encoder._stages


def exact_length_batches(encoder, texts):
    encodings = encoder._tokenizer.encode(list(texts))
    return [
        encoder._tokenizer.pad_batch([encodings[i] for i in rows])
        for rows in length_sorted_batches(encodings, 32)
    ]


def test_a_chunk_of_many_lengths_gives_the_whole_graphs_bits(prepared, sas_texts):
    encoder, stages = prepared
    rng = np.random.default_rng(7)
    texts = list(SPECIAL_TEXTS) + sas_texts[:400]  # Russian, Chinese, emoji, a text truncated at 256 tokens
    checked = 0
    for size in (3, 17, 60, len(texts)):
        sample = [texts[i] for i in rng.choice(len(texts), size, replace=False)]
        batches = exact_length_batches(encoder, sample)
        for batch, rows in zip(batches, stages.run_chunk(batches), strict=True):
            whole = encoder._session.run(batch.input_ids, batch.attention_mask, batch.token_type_ids)
            assert rows.dtype == np.float32 and rows.shape == whole.shape
            assert np.array_equal(rows, whole), (batch.input_ids.shape, np.max(np.abs(rows - whole)))
            checked += 1
    assert checked > 40  # many exact-length batches, of one to dozens of rows


def test_a_texts_rows_do_not_depend_on_its_chunk_mates(prepared, sas_texts):
    encoder, stages = prepared
    target = [SPECIAL_TEXTS[4], SPECIAL_TEXTS[6], sas_texts[3]]  # Russian, Chinese, English
    alone = [stages.run_chunk(exact_length_batches(encoder, [t]))[0] for t in target]
    crowd = exact_length_batches(encoder, target + sas_texts[500:700])
    rows = {
        tuple(b.input_ids[r]): out[r]
        for b, out in zip(crowd, stages.run_chunk(crowd), strict=True)
        for r in range(len(b.input_ids))
    }
    for text, expected in zip(target, alone, strict=True):
        ids = tuple(encoder._tokenizer.encode([text])[0].ids)
        assert np.array_equal(rows[ids], expected[0]), text


def test_encode_with_packed_passes_gives_the_unbatched_bits(prepared, default_bundle, sas_texts):
    encoder, _ = prepared
    texts = list(SPECIAL_TEXTS) + sas_texts[:700]
    passes = encoder.packed_passes
    packed = encoder._run_pass(encoder._tokenizer.encode(texts), 32)
    assert encoder.packed_passes == passes + 1  # the pass ran packed
    reference = TextEncoder(default_bundle, precision=encoder.precision, cache_size=0, batching=False)
    assert reference.packed_status == "not prepared"
    assert np.array_equal(packed, reference.encode(texts, normalize=False))


def test_a_graph_that_is_not_bert_family_runs_whole(cross_encoder_bundle, tmp_path):
    with pytest.raises(StagesUnavailable, match="is not the last layer's LayerNorm"):
        EncoderStages.cut(cross_encoder_bundle / "model.onnx")  # its output is the classifier's logits
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["input_ids"], ["token_embeddings"])],
        "not-an-encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"])],
        [helper.make_tensor_value_info("token_embeddings", TensorProto.INT64, ["b", "s"])],
    )
    onnx.save(helper.make_model(graph), tmp_path / "model.onnx")
    with pytest.raises(StagesUnavailable, match="has no BERT-family layers"):
        EncoderStages.cut(tmp_path / "model.onnx")
    assert CrossEncoder(cross_encoder_bundle).predict([("a", "b")]).shape == (1,)  # not touched by any of it


def test_stages_whose_bits_differ_are_refused_and_the_whole_graph_is_kept(
    default_bundle, sas_texts, monkeypatch
):
    encoder = TextEncoder(default_bundle, cache_size=0, batching=False)
    whole_run = encoder._session.run

    def one_ulp_off(input_ids, attention_mask, token_type_ids):  # a whole graph that differs in the last bit
        out = whole_run(input_ids, attention_mask, token_type_ids)
        return np.nextafter(out, np.float32(np.inf))

    monkeypatch.setattr(encoder._session, "run", one_ulp_off)
    assert not encoder.prepare_packed_passes()
    assert (
        encoder.packed_status.startswith("unavailable: ")
        and "differ from the whole graph" in encoder.packed_status
    )
    assert encoder._stages is None
    monkeypatch.undo()
    assert not encoder.prepare_packed_passes()  # decided once: not cut again at every pass
    texts = sas_texts[:50]
    before = encoder.packed_passes
    out = encoder._run_pass(encoder._tokenizer.encode(texts), 32)
    assert encoder.packed_passes == before  # the whole graph ran
    assert np.array_equal(
        out, TextEncoder(default_bundle, cache_size=0, batching=False).encode(texts, normalize=False)
    )


@st.composite
def passes(draw):
    """(batches, lengths, workers): a pass's exact-length batches as row-index arrays over a shuffled pass."""
    sizes = draw(st.lists(st.integers(min_value=1, max_value=32), min_size=1, max_size=40))
    lengths = draw(
        st.lists(st.integers(min_value=1, max_value=300), min_size=len(sizes), max_size=len(sizes))
    )
    rows = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).permutation(sum(sizes))
    batches = np.split(rows, np.cumsum(sizes)[:-1])
    return batches, lengths, draw(st.integers(min_value=1, max_value=8))


@given(passes())
@settings(max_examples=300, deadline=None)
def test_chunks_cover_the_rows_in_order_balanced_to_the_row(a_pass):
    batches, lengths, workers = a_pass
    chunks = chunk_rows(batches, lengths, workers)
    length_of = {int(r): length for rows, length in zip(batches, lengths, strict=True) for r in rows}
    batch_of = {int(r): k for k, rows in enumerate(batches) for r in rows}
    pieces = [piece for chunk in chunks for piece in chunk]
    assert np.array_equal(np.concatenate(pieces), np.concatenate(batches))  # every row once, in pass order
    assert all(len(piece) and len({batch_of[int(r)] for r in piece}) == 1 for piece in pieces)  # one length
    assert all(chunk for chunk in chunks)
    tokens = [sum(length_of[int(r)] for piece in chunk for r in piece) for chunk in chunks]
    total, count = sum(tokens), sum(len(rows) for rows in batches)
    by_size = max(workers, -(-total // CHUNK_TOKENS))  # a chunk per worker at least, near CHUNK_TOKENS each
    assert len(chunks) == min(count, -(-by_size // workers) * workers)  # as many for every worker
    if len(chunks) > 1:  # balanced: no chunk is off its share by more than its longest row
        share = total / len(chunks)
        assert all(abs(t - share) <= max(lengths) for t in tokens), (tokens, share)


def test_chunk_rows_by_example():
    def cut(sizes, lengths, workers):
        batches = np.split(np.arange(sum(sizes)), np.cumsum(sizes)[:-1])
        return [[piece.tolist() for piece in chunk] for chunk in chunk_rows(batches, lengths, workers)]

    assert cut([0], [5], 2) == []
    assert cut([1], [10], 4) == [[[0]]]
    assert cut([10], [5], 2) == [[[0, 1, 2, 3, 4]], [[5, 6, 7, 8, 9]]]  # one batch split in two
    # 30 + 10 tokens: the cut at 20 falls after the second row of the first batch
    assert cut([3, 2], [10, 5], 2) == [[[0, 1]], [[2], [3, 4]]]
    # 14 + 45 + 12 + 56 = 127 tokens: 63 | 64, the third batch cut after its first row
    assert cut([2, 9, 3, 14], [7, 5, 4, 4], 2) == [
        [[0, 1], list(range(2, 11)), [11]],
        [[12, 13], list(range(14, 28))],
    ]
    one_token = cut([300, 300, 300, 300], [1, 1, 1, 1], 1)  # 1,200 tokens: 3 chunks of 400 (CHUNK_TOKENS 512)
    assert [[(piece[0], piece[-1]) for piece in chunk] for chunk in one_token] == [
        [(0, 299), (300, 399)],
        [(400, 599), (600, 799)],
        [(800, 899), (900, 1199)],
    ]
    two_workers = cut([300, 300, 300, 300], [1, 1, 1, 1], 2)  # 3 chunks by size: 4, so 2 for each worker
    assert [sum(len(piece) for piece in chunk) for chunk in two_workers] == [300, 300, 300, 300]


def test_a_batch_split_between_chunks_keeps_the_whole_graphs_bits(prepared, sas_texts, monkeypatch):
    encoder, _ = prepared
    monkeypatch.setattr(encoder._session, "workers", 2)  # the pass below is cut as the test expects, any CPU
    encodings = encoder._tokenizer.encode(list(sas_texts[:400]))
    width = len(encodings[0].ids)
    same = [e for e in encodings if len(e.ids) == width][:21]  # one exact-length batch of 21 rows ...
    texts = same + [e for e in encodings if len(e.ids) != width][:3]  # ... and 3 texts of other lengths
    batches = length_sorted_batches(texts, 32)
    chunks = chunk_rows(batches, [len(texts[rows[0]].ids) for rows in batches], encoder._session.workers)
    assert sum(len(chunk) for chunk in chunks) == len(batches) + 1  # the long batch was cut in two
    passes = encoder.packed_passes
    packed = encoder._run_pass(texts, 32)
    assert encoder.packed_passes == passes + 1
    for i, encoding in enumerate(texts):
        batch = encoder._tokenizer.pad_batch([encoding])
        whole = encoder._session.run(batch.input_ids, batch.attention_mask, batch.token_type_ids)
        assert np.array_equal(packed[i], encoder._pooled(whole, batch.attention_mask)[0]), i


@pytest.mark.parametrize("seconds", [k / 10 for k in range(12)])  # exit at each stage of the cut
def test_a_process_that_exits_while_its_stages_are_cut_exits_cleanly(default_bundle, seconds):
    script = (
        "import time\n"
        "from simkernel.runtime import TextEncoder\n"
        f"encoder = TextEncoder({str(default_bundle)!r}, cache_size=0)\n"
        "encoder._prepare_packed_passes_in_background()  # what the first queued call starts\n"
        f"time.sleep({seconds})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stderr) == (0, "")


def test_a_chunks_embeddings_come_from_one_run_with_each_texts_positions(prepared, sas_texts, monkeypatch):
    encoder, stages = prepared
    assert stages.packed_embeddings  # the default model's embeddings depend on its tokens and positions only
    runs = []
    real = stages._embed_packed

    class Counted:
        def run(self, names, feeds):
            runs.append({name: array.copy() for name, array in feeds.items()})
            return real.run(names, feeds)

    monkeypatch.setattr(stages, "_embed_packed", Counted())
    batches = exact_length_batches(encoder, sas_texts[:40])
    for batch, rows in zip(batches, stages.run_chunk(batches), strict=True):
        whole = encoder._session.run(batch.input_ids, batch.attention_mask, batch.token_type_ids)
        assert np.array_equal(rows, whole), batch.input_ids.shape
    assert len(runs) == 1 and len(batches) > 5  # one run for every batch of the chunk
    positions = runs[0][stages._positions][0]
    expected = np.concatenate(
        [np.tile(np.arange(b.input_ids.shape[1]), b.input_ids.shape[0]) for b in batches]
    )
    assert np.array_equal(positions, expected)  # each text's positions from 0


def test_padded_batches_embed_per_batch_with_the_graphs_mask(prepared, sas_texts):
    """Not what passes send (their batches hold one exact length), but a padded batch still gets the whole
    graph's bits: its embeddings and mask come from the per-batch stage, and the attention honours the mask."""
    encoder, stages = prepared
    encodings = encoder._tokenizer.encode([sas_texts[0], sas_texts[1] + " and a few more words", "ok"])
    batch = encoder._tokenizer.pad_batch(encodings)
    assert not batch.attention_mask.all()
    (rows,) = stages.run_chunk([batch])
    whole = encoder._session.run(batch.input_ids, batch.attention_mask, batch.token_type_ids)
    real = batch.attention_mask.astype(bool)
    assert np.array_equal(rows[real], whole[real])


def test_packed_embeddings_whose_bits_differ_are_dropped_and_batches_embed_alone(default_bundle, monkeypatch):
    from simkernel.runtime.inference import packed_passes

    real_cut = packed_passes.EncoderStages.cut

    def cut_with_shifted_positions(path):
        stages = real_cut(path)
        real = stages._embed_packed

        class Shifted:  # every position one further: the rows differ from the whole graph's
            def run(self, names, feeds):
                feeds = dict(feeds)
                feeds[stages._positions] = feeds[stages._positions] + 1
                return real.run(names, feeds)

        stages._embed_packed = Shifted()
        return stages

    monkeypatch.setattr(packed_passes.EncoderStages, "cut", cut_with_shifted_positions)
    encoder = TextEncoder(default_bundle, cache_size=0, batching=False)
    assert encoder.prepare_packed_passes(), encoder.packed_status
    assert not encoder._stages.packed_embeddings
    assert encoder._stages.attention_kernel != "onnxruntime" or not any(
        encoder._stages._native_candidates()
    )  # the attention kernel is still used where the CPU runs it
