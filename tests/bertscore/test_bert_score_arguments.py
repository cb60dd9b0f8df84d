"""Bad arguments of simkernel.bert_score get bert_score's error type and message, or a clearer one, before
any model or kernel runs; what bert_score accepts is accepted."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from simkernel import bert_score as sk_bert_score


def test_signatures_are_bert_scores(bert_score_reference):
    for name in ("score", "plot_example", "BERTScorer"):
        theirs = inspect.signature(getattr(bert_score_reference, name)).parameters
        ours = inspect.signature(getattr(sk_bert_score, name)).parameters
        positional = [p for p in ours.values() if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        assert [(p.name, p.default) for p in positional] == [(p.name, p.default) for p in theirs.values()]
        assert {p.name for p in ours.values() if p.kind is inspect.Parameter.KEYWORD_ONLY} == {
            "precision",
            "threads",
        }
    theirs = inspect.signature(bert_score_reference.BERTScorer.score).parameters
    ours = inspect.signature(sk_bert_score.BERTScorer.score).parameters
    assert [(p.name, p.default) for p in ours.values()] == [(p.name, p.default) for p in theirs.values()]


def test_tables_are_bert_scores(bert_score_reference):
    from bert_score import utils

    assert sk_bert_score.model2layers == utils.model2layers
    assert dict(sk_bert_score.lang2model) == dict(utils.lang2model)
    assert sk_bert_score.lang2model["xx-unknown"] == utils.lang2model["xx-unknown"]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(cands=["a", "b"], refs=["a"]), AssertionError, "Different number of candidates and references"),
        (dict(cands=["a"], refs=["a"]), AssertionError, "Either lang or model_type should be specified"),
        (
            dict(cands=["a"], refs=["a"], model_type="m", num_layers=1, rescale_with_baseline=True),
            AssertionError,
            "Need to specify Language",
        ),
        (
            dict(cands=["a"], refs=["a"], model_type="no/such-model"),
            KeyError,
            "has no tuned layer in bert_score's model2layers table: pass num_layers",
        ),
        (
            dict(cands=["a"], refs=["a"], model_type="m", num_layers=1, device="cuda:0"),
            ValueError,
            "runs on the CPU",
        ),
        (dict(cands=["a"], refs=[["a"], []]), AssertionError, "Different number"),
        (dict(cands=["a", "b"], refs=[["a"], []]), ValueError, r"refs\[1\] must be a non-empty list"),
        (dict(cands=["a", None], refs=["a", "b"]), ValueError, r"cands\[1\] must be a string"),
        (dict(cands="abc", refs="abc"), ValueError, "must be a list of texts"),
        (
            dict(cands=["a"], refs=["a"], model_type="m", num_layers=1, precision="fp16"),
            ValueError,
            "precision must be one of",
        ),
    ],
)
def test_bad_arguments_fail_before_any_model_loads(kwargs, error, message):
    with pytest.raises(error, match=message):
        sk_bert_score.score(**kwargs)


def test_a_layer_past_the_models_depth_gets_bert_scores_message(model_id):
    with pytest.raises(AssertionError, match="Invalid num_layers: num_layers should be between 0 and 6 for"):
        sk_bert_score.score(["a"], ["b"], model_type=model_id, num_layers=7)
    with pytest.raises(ValueError, match="between 0 and 6"):
        sk_bert_score.BERTScorer(model_type=model_id, num_layers=-1)


def test_idf_without_weights_and_missing_baselines(model_id, tmp_path, capsys):
    scorer = sk_bert_score.BERTScorer(model_type=model_id, num_layers=2, idf=True)
    with pytest.raises(AssertionError, match="IDF weights are not computed"):
        scorer.score(["a"], ["b"])
    scorer.compute_idf(["a b", "b c"])
    with pytest.warns(UserWarning, match="Overwriting the previous importance weights"):
        scorer.compute_idf(["a b"])
    rescaled = sk_bert_score.BERTScorer(
        model_type=model_id, num_layers=2, lang="en", rescale_with_baseline=True
    )
    with pytest.raises(ValueError, match="Baseline not Found for .* on en at .*simkernel bertscore-baseline"):
        rescaled.score(["a"], ["b"])
    # score() warns and leaves the scores raw, as bert_score's does
    raw = sk_bert_score.score(["a cat"], ["a dog"], model_type=model_id, num_layers=2)
    kept = sk_bert_score.score(
        ["a cat"], ["a dog"], model_type=model_id, num_layers=2, lang="en", rescale_with_baseline=True
    )
    assert "Warning: Baseline not Found for" in capsys.readouterr().err
    np.testing.assert_array_equal(np.stack(raw), np.stack(kept))
    bad = tmp_path / "bad.tsv"
    bad.write_text("layer;p;r;f\n0;1;2;3\n")
    with pytest.raises(
        ValueError, match="is not a BERTScore baseline file: its first line must be LAYER,P,R,F"
    ):
        sk_bert_score.score(
            ["a"],
            ["b"],
            model_type=model_id,
            num_layers=2,
            lang="en",
            rescale_with_baseline=True,
            baseline_path=bad,
        )


def test_packaged_baselines_are_bert_scores(bert_score_reference):
    import os

    from simkernel.scoring.bertscore.baselines import packaged_baseline_path, read_baseline

    theirs = os.path.join(
        os.path.dirname(bert_score_reference.__file__), "rescale_baseline", "en", "roberta-large.tsv"
    )
    import pandas as pd

    np.testing.assert_array_equal(
        read_baseline(packaged_baseline_path("en", "roberta-large")),
        pd.read_csv(theirs).to_numpy()[:, 1:].astype(np.float32),
    )


def test_empty_input_gives_empty_arrays(model_id):
    p, r, f = sk_bert_score.score([], [], model_type=model_id, num_layers=2)
    assert p.shape == r.shape == f.shape == (0,) and f.dtype == np.float32
