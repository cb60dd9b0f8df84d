"""``lang`` picks the model and the baseline file as bert_score 0.3.13 does: ``score()`` and ``plot_example()``
lowercase it when it picks the model (``model_type`` None), so ``lang="EN"`` rescales with
``rescale_baseline/en/roberta-large.tsv``; ``BERTScorer`` keeps its ``lang`` as given for the file.

bert_score's model for English is roberta-large, too large for these tests: a 2-layer MiniLM checkpoint
saved as a folder named ``roberta-large`` in the working directory stands in for it, for bert_score (the
hub's loaders take a local folder first) and for simkernel (a local folder, exported into a store of the
test's own) alike; the shipped baseline file of roberta-large then rescales both.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from tests.bertscore.conftest import as_arrays
from tests.runtime.export_checkpoints import build_truncated_bi_encoder

from simkernel import bert_score as sk_bert_score

pytestmark = pytest.mark.export

CANDS = ["The cat sat on the mat.", "hello world", "Paris is in France"]
REFS = ["A cat was sitting on the mat.", "the quick brown fox", "Berlin is the capital of Germany"]
LAYER = 2


@pytest.fixture(scope="module")
def english_folder(tmp_path_factory, minilm_checkpoint) -> Path:
    """A working directory holding ``roberta-large/``: MiniLM's first two layers under that name."""
    root = tmp_path_factory.mktemp("lang")
    build_truncated_bi_encoder(Path(minilm_checkpoint), root / "roberta-large", num_layers=LAYER)
    return root


@pytest.fixture
def in_english_folder(english_folder, monkeypatch):
    from simkernel.runtime import clear_shared_instances

    monkeypatch.chdir(english_folder)
    monkeypatch.setenv("SIMKERNEL_HOME", str(english_folder / "store"))
    clear_shared_instances()
    yield english_folder
    clear_shared_instances()


@pytest.mark.parametrize("lang", ["en", "EN", "En"])
def test_score_rescales_with_the_lowercased_langs_baseline(lang, in_english_folder, bert_score_reference):
    kwargs = dict(lang=lang, num_layers=LAYER, rescale_with_baseline=True)
    ours = as_arrays(sk_bert_score.score(CANDS, REFS, **kwargs))
    theirs = as_arrays(bert_score_reference.score(CANDS, REFS, batch_size=1, **kwargs))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)
    raw = as_arrays(sk_bert_score.score(CANDS, REFS, lang=lang, num_layers=LAYER))
    assert np.abs(ours - raw).max() > 0.1  # the baseline was found and applied


def test_plot_example_rescales_with_the_lowercased_langs_baseline(in_english_folder, bert_score_reference):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = {}
    for name, library in (("simkernel", sk_bert_score), ("bert_score", bert_score_reference)):
        plt.close("all")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Agg cannot show: plt.show() warns
            library.plot_example(CANDS[0], REFS[0], lang="EN", num_layers=LAYER, rescale_with_baseline=True)
        axes = plt.gcf().axes[0]
        drawn[name] = (axes.get_title(), np.asarray(axes.get_images()[0].get_array(), dtype=np.float64))
    plt.close("all")
    assert drawn["simkernel"][0] == drawn["bert_score"][0] == "Similarity Matrix (after Rescaling)"
    np.testing.assert_allclose(drawn["simkernel"][1], drawn["bert_score"][1], rtol=0, atol=1e-5)


def test_bert_scorer_keeps_its_lang_for_the_baseline_file(in_english_folder, bert_score_reference):
    """bert_score's ``BERTScorer`` lowercases ``lang`` to pick the model only: with ``lang="EN"`` its baseline
    path names the folder ``EN``, which does not exist, and ``score`` raises; lowercase ``en`` works."""
    kwargs = dict(num_layers=LAYER, rescale_with_baseline=True)
    for library in (sk_bert_score, bert_score_reference):
        scorer = library.BERTScorer(lang="EN", **kwargs)
        assert scorer.model_type == "roberta-large" and scorer.lang == "EN"
        with pytest.raises(ValueError, match="Baseline not Found for roberta-large on EN at .*EN"):
            scorer.score(CANDS, REFS)
    ours = as_arrays(sk_bert_score.BERTScorer(lang="en", **kwargs).score(CANDS, REFS))
    theirs = as_arrays(bert_score_reference.BERTScorer(lang="en", **kwargs).score(CANDS, REFS, batch_size=1))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)
