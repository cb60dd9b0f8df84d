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


def test_empty_input_gives_empty_arrays(model_id, minilm_checkpoint, bert_score_reference):
    """A documented difference: bert_score raises IndexError on no pairs, simkernel gives empty arrays."""
    p, r, f = sk_bert_score.score([], [], model_type=model_id, num_layers=2)
    assert p.shape == r.shape == f.shape == (0,) and f.dtype == np.float32
    p, r, f = sk_bert_score.score([], [], model_type=model_id, num_layers=2, all_layers=True)
    assert p.shape == r.shape == f.shape == (7, 0)
    p, r, f = sk_bert_score.BERTScorer(model_type=model_id, num_layers=2).score([], [])
    assert p.shape == r.shape == f.shape == (0,)
    with pytest.raises(IndexError):
        bert_score_reference.score([], [], model_type=minilm_checkpoint, num_layers=2)


def test_idf_weights_from_no_sentences_are_refused_as_bert_score_refuses_them(
    model_id, minilm_checkpoint, bert_score_reference
):
    """bert_score's idf dict from no sentences is empty, hence falsy: its ``score`` asserts it is computed."""
    theirs = bert_score_reference.BERTScorer(
        model_type=minilm_checkpoint, num_layers=2, idf=True, idf_sents=[], nthreads=0
    )
    with pytest.raises(AssertionError, match="IDF weights are not computed"):
        theirs.score(["a cat"], ["a dog"])
    ours = sk_bert_score.BERTScorer(model_type=model_id, num_layers=2, idf=True, idf_sents=[])
    assert ours.idf_dict == dict(theirs._idf_dict) == {}
    message = r"IDF weights are not computed: the idf weights came from no sentences \(idf_sents=\[\] or compute_idf\(\[\]\)\); pass idf_sents=\.\.\. or call compute_idf\(sents\) with at least one sentence"
    with pytest.raises(AssertionError, match=message):
        ours.score(["a cat"], ["a dog"])
    with pytest.warns(UserWarning, match="Overwriting"):
        ours.compute_idf(["a cat", "a dog"])
    p, r, f = ours.score(["a cat"], ["a dog"])
    assert f[0] > 0


@pytest.mark.parametrize("layer", [np.int64(3), np.int32(3), np.uint8(3)])
def test_num_layers_may_be_a_numpy_integer(layer, model_id, minilm_checkpoint, bert_score_reference):
    ours = sk_bert_score.score(["a cat sat"], ["the cat sat"], model_type=model_id, num_layers=layer)
    theirs = bert_score_reference.score(
        ["a cat sat"], ["the cat sat"], model_type=minilm_checkpoint, num_layers=layer
    )
    np.testing.assert_allclose(np.stack(ours), np.stack([t.numpy() for t in theirs]), rtol=0, atol=1e-5)
    scorer = sk_bert_score.BERTScorer(model_type=model_id, num_layers=layer)
    assert scorer.num_layers == 3 and scorer.hash.startswith(f"{model_id}_L3_no-idf")


@pytest.mark.parametrize("layer", [True, np.True_, 3.0, "3"])
def test_num_layers_that_is_no_integer_is_refused(layer, model_id):
    with pytest.raises(
        AssertionError, match="num_layers must be an integer, got .*: pass the layer's number"
    ):
        sk_bert_score.score(["a"], ["b"], model_type=model_id, num_layers=layer)


def test_bertscore_baseline_help_names_the_score_option_that_takes_the_file(tmp_path):
    """The help of ``simkernel bertscore-baseline`` says how ``simkernel score --mode bertscore`` takes the
    file it writes; that advice, followed literally, gives the bertscore metric its baseline option."""
    import re

    from simkernel.cli.parser import build_parser
    from simkernel.scoring.metrics.bertscore import check_options

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    description = " ".join(commands["bertscore-baseline"].description.split())
    advice = re.search(r"(--\S+(?: \S+=FILE)?) to (?:simkernel )?score --mode bertscore", description)
    assert advice is not None, description
    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n")
    argv = ["score", "in.csv", "--mode", "bertscore", *advice.group(1).replace("FILE", str(baseline)).split()]
    args = parser.parse_args(argv)
    assert check_options(args.metric_options) == (None, str(baseline))
