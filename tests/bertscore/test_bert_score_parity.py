"""simkernel.bert_score against the real bert_score 0.3.13 on the same checkpoint: within 1e-5 in fp32.

Every layer of all-MiniLM-L6-v2, idf on and off, several references per candidate, all layers at once,
baseline rescaling from a file, multilingual and odd texts, texts past 512 tokens, duplicates, and batch
sizes 1, 7 and 64 (a pair's scores never depend on its batch-mates).
"""

from __future__ import annotations

import inspect
import warnings
from collections import defaultdict

import numpy as np
import pytest
from tests.bertscore.conftest import ODD_TEXTS, as_arrays

from simkernel import bert_score as sk_bert_score

FP32_TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def pairs(sas_pairs) -> tuple[list[str], list[str]]:
    """120 SAS pairs (every 42nd) and the odd texts against each other and against SAS answers."""
    sample = sas_pairs[::42]
    cands = [a for a, _, _ in sample] + ODD_TEXTS + ODD_TEXTS[::-1]
    refs = (
        [b for _, b, _ in sample]
        + ODD_TEXTS[1:]
        + ODD_TEXTS[:1]
        + [b for _, b, _ in sample[: len(ODD_TEXTS)]]
    )
    return cands, refs


def simkernel_scores(model_id, cands, refs, **kwargs) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # truncation warnings; their counts are tested elsewhere
        return as_arrays(sk_bert_score.score(cands, refs, model_type=model_id, **kwargs))


def reference_scores(reference, checkpoint, cands, refs, batch_size=1, **kwargs) -> np.ndarray:
    """bert_score's scores, one pair per batch by default: its padded batches raise a token's negative best
    match to 0 (the padding's zero similarities) for every pair but the batch's longest, which changes
    pairs with negative token cosines (the embedding output, unrelated or very long texts); one pair per
    batch pads nothing. test_bert_scores_padding_is_the_only_difference checks the padded batches."""
    return as_arrays(reference.score(cands, refs, model_type=checkpoint, batch_size=batch_size, **kwargs))


@pytest.mark.parametrize("layer", range(7))
def test_every_layer_of_minilm_matches_bert_score(
    layer, pairs, model_id, minilm_checkpoint, bert_score_reference
):
    cands, refs = pairs
    ours = simkernel_scores(model_id, cands, refs, num_layers=layer)
    theirs = reference_scores(bert_score_reference, minilm_checkpoint, cands, refs, num_layers=layer)
    assert ours.shape == theirs.shape == (3, len(cands))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)


@pytest.mark.parametrize("layer", [0, 1])
def test_bert_scores_padding_is_the_only_difference(
    layer, pairs, model_id, minilm_checkpoint, bert_score_reference
):
    """bert_score in batches of 64: never below simkernel's P and R (its padded zeros only raise maxima),
    and equal on most pairs."""
    cands, refs = pairs
    ours = simkernel_scores(model_id, cands, refs, num_layers=layer)
    padded = reference_scores(
        bert_score_reference, minilm_checkpoint, cands, refs, num_layers=layer, batch_size=64
    )
    assert (padded[:2] >= ours[:2] - FP32_TOLERANCE).all()
    assert np.mean(np.abs(padded - ours) <= FP32_TOLERANCE) > 0.9


@pytest.mark.parametrize("layer", [2, 6])
def test_idf_weights_match_bert_score(layer, pairs, model_id, minilm_checkpoint, bert_score_reference):
    cands, refs = pairs
    ours = simkernel_scores(model_id, cands, refs, num_layers=layer, idf=True)
    theirs = reference_scores(
        bert_score_reference, minilm_checkpoint, cands, refs, num_layers=layer, idf=True
    )
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)
    plain = simkernel_scores(model_id, cands, refs, num_layers=layer)
    assert np.abs(ours - plain).max() > 1e-3  # idf really changed the weights


def test_several_references_per_candidate(pairs, model_id, minilm_checkpoint, bert_score_reference):
    cands, refs = pairs
    groups = [
        [refs[i], refs[(i + 5) % len(refs)], refs[(i + 11) % len(refs)]][: 1 + i % 3]
        for i in range(len(cands))
    ]
    ours = simkernel_scores(model_id, cands, groups, num_layers=4)
    theirs = reference_scores(bert_score_reference, minilm_checkpoint, cands, groups, num_layers=4)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)


def test_all_layers(pairs, model_id, minilm_checkpoint, bert_score_reference):
    cands, refs = pairs
    ours = simkernel_scores(model_id, cands[:40], refs[:40], num_layers=3, all_layers=True)
    theirs = reference_scores(
        bert_score_reference, minilm_checkpoint, cands[:40], refs[:40], num_layers=3, all_layers=True
    )
    assert ours.shape == theirs.shape == (3, 7, 40)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)


def test_rescaling_with_a_baseline_file(tmp_path, pairs, model_id, minilm_checkpoint, bert_score_reference):
    cands, refs = pairs
    path = tmp_path / "baseline.tsv"
    path.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.{3 + k}1,0.{3 + k}2,0.{3 + k}3\n" for k in range(7)))
    kwargs = dict(num_layers=5, lang="en", rescale_with_baseline=True, baseline_path=str(path))
    ours = simkernel_scores(model_id, cands, refs, **kwargs)
    theirs = reference_scores(bert_score_reference, minilm_checkpoint, cands, refs, **kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)
    ours_all = simkernel_scores(model_id, cands[:20], refs[:20], all_layers=True, **kwargs)
    theirs_all = reference_scores(
        bert_score_reference, minilm_checkpoint, cands[:20], refs[:20], all_layers=True, **kwargs
    )
    np.testing.assert_allclose(ours_all, theirs_all, rtol=0, atol=FP32_TOLERANCE)


def test_empty_texts_score_zero_with_one_warning(model_id, minilm_checkpoint, bert_score_reference):
    cands = ["", "a cat", "   ", "the dog barks"]
    refs = ["a cat", "", "the dog", "the dog barked"]
    with pytest.warns(
        UserWarning, match=r"2 pair\(s\) with an empty candidate and 1 with an empty reference"
    ) as caught:
        ours = as_arrays(sk_bert_score.score(cands, refs, model_type=model_id, num_layers=4))
    assert len([w for w in caught if "empty" in str(w.message)]) == 1
    theirs = reference_scores(bert_score_reference, minilm_checkpoint, cands, refs, num_layers=4)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)
    assert (ours[:, :3] == 0).all() and (ours[:, 3] > 0.5).all()


def test_long_texts_are_truncated_as_bert_score_truncates_them(
    model_id, minilm_checkpoint, bert_score_reference
):
    long_a = "alpha beta gamma delta " * 200
    long_b = "alpha beta gamma " * 180 + "omega"
    cands = [long_a, long_b + " tail that is cut"]
    refs = [long_b, long_a]
    with pytest.warns(UserWarning, match=r"3 text\(s\) longer than the model's limit were truncated"):
        ours = as_arrays(sk_bert_score.score(cands, refs, model_type=model_id, num_layers=6))
    theirs = reference_scores(bert_score_reference, minilm_checkpoint, cands, refs, num_layers=6)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)


def test_duplicates_and_batch_mates_do_not_change_a_score(pairs, model_id):
    cands, refs = pairs
    alone = [
        simkernel_scores(model_id, [c], [r], num_layers=4)[:, 0]
        for c, r in zip(cands[:12], refs[:12], strict=True)
    ]
    together = simkernel_scores(model_id, cands[:12] * 2, refs[:12] * 2, num_layers=4)
    for batch_size in (1, 7, 64):
        scorer = sk_bert_score.BERTScorer(model_type=model_id, num_layers=4, batch_size=batch_size)
        batched = as_arrays(scorer.score(cands[:12], refs[:12], batch_size=batch_size))
        np.testing.assert_array_equal(batched, together[:, :12])
    np.testing.assert_array_equal(together[:, :12], together[:, 12:])
    np.testing.assert_array_equal(np.stack(alone, axis=1), together[:, :12])


def test_scorer_object_matches_bert_scorer(pairs, model_id, minilm_checkpoint, bert_score_reference):
    cands, refs = pairs
    idf_sents = refs[:60]
    ours = sk_bert_score.BERTScorer(model_type=model_id, num_layers=3, idf=True, idf_sents=idf_sents)
    theirs = bert_score_reference.BERTScorer(
        model_type=minilm_checkpoint, num_layers=3, idf=True, idf_sents=idf_sents
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mine = as_arrays(ours.score(cands, refs))
    np.testing.assert_allclose(mine, as_arrays(theirs.score(cands, refs)), rtol=0, atol=FP32_TOLERANCE)
    assert ours.idf_dict is not None
    theirs_dict = theirs._idf_dict
    for token, weight in list(ours.idf_dict.items())[:200]:
        assert weight == pytest.approx(theirs_dict[token], abs=1e-12)
    (p, r, f), digest = ours.score(cands[:3], refs[:3], return_hash=True)
    assert digest == ours.hash and digest.startswith(f"{model_id}_L3_idf_version=0.3.13")
    assert f.dtype == np.float32 and isinstance(f.mean().item(), float) and len(f.tolist()) == 3


@pytest.mark.parametrize(
    "idf", [{}, defaultdict(lambda: 1.0), defaultdict(float)], ids=["dict", "defaultdict-1", "defaultdict-0"]
)
def test_an_empty_idf_dict_means_idf_off(idf, pairs, model_id, minilm_checkpoint, bert_score_reference):
    """bert_score tests ``not idf`` first: an empty dict, whatever its default, is idf off (weight 1, the
    cls and sep tokens 0)."""
    cands, refs = pairs
    ours = simkernel_scores(model_id, cands[:30], refs[:30], num_layers=4, idf=idf)
    theirs = reference_scores(
        bert_score_reference, minilm_checkpoint, cands[:30], refs[:30], num_layers=4, idf=idf
    )
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=FP32_TOLERANCE)
    ones = defaultdict(lambda: 1.0, {0: 1.0})  # not empty: every token weighs 1, cls and sep too
    weighted = simkernel_scores(model_id, cands[:30], refs[:30], num_layers=4, idf=ones)
    assert np.abs(weighted - ours).max() > 1e-3


def test_warnings_name_the_callers_line(model_id):
    """The empty-text and truncation warnings point at the line that called ``score`` / ``BERTScorer.score``
    (where a user looks, and what a ``module`` / ``lineno`` warnings filter matches)."""
    cands, refs = ["", "word " * 600], ["a", "b"]
    scorer = sk_bert_score.BERTScorer(model_type=model_id, num_layers=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score_line = inspect.currentframe().f_lineno + 1
        sk_bert_score.score(cands, refs, model_type=model_id, num_layers=4)
        scorer_line = inspect.currentframe().f_lineno + 1
        scorer.score(cands, refs)
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, score_line)] * 2 + [
        (__file__, scorer_line)
    ] * 2, [(w.filename, w.lineno, str(w.message)[:40]) for w in caught]


def test_all_layers_with_several_references_is_each_layers_best(
    pairs, model_id, minilm_checkpoint, bert_score_reference
):
    """A documented difference: bert_score 0.3.13 takes the group maxima along the layer axis when
    ``all_layers`` meets several references; simkernel gives (layers, N), each layer's P, R, F the best
    over the references, which is bert_score's all-layers scores of each reference, maxed."""
    cands, refs = pairs
    cands, first, second = cands[:12], refs[:12], refs[12:24]
    ours = simkernel_scores(
        model_id, cands, [[a, b] for a, b in zip(first, second, strict=True)], num_layers=4, all_layers=True
    )
    each = [
        reference_scores(bert_score_reference, minilm_checkpoint, cands, group, num_layers=4, all_layers=True)
        for group in (first, second)
    ]
    assert ours.shape == each[0].shape == (3, 7, 12)
    np.testing.assert_allclose(ours, np.maximum(*each), rtol=0, atol=FP32_TOLERANCE)
