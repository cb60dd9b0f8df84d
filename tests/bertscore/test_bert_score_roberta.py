"""A RoBERTa checkpoint (byte-level BPE, ``<s>`` ... ``</s>``; bert_score's model for English is
roberta-large) exported to token layers by simkernel and scored against bert_score 0.3.13 on the same folder.

bert_score's ``sent_encode`` calls ``tokenizer.encode(sent, add_prefix_space=True, ...)`` for GPT-2 and
RoBERTa tokenizers; transformers 5 ignores that keyword, so bert_score tokenizes the text as it is, with or
without a ``tokenizer_config.json`` naming ``RobertaTokenizer``. simkernel must tokenize the same way, and
its export's parity check (transformers' tokenizer against the bundle's) must agree with it, or no such
model can be exported.

The checkpoint is built here: a byte-level BPE trained on a few sentences (no "ĠThe" in its vocabulary, so
a leading space changes the first token) and a 3-layer RoBERTa with random weights (seeded).
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from tests.bertscore.conftest import as_arrays

from simkernel import bert_score as sk_bert_score


def _transformers_major() -> int:
    try:
        from importlib.metadata import version

        return int(version("transformers").split(".")[0])
    except Exception:  # not installed: the tests skip on importorskip("torch") / the reference fixture
        return 5


pytestmark = [
    pytest.mark.export,
    pytest.mark.skipif(
        _transformers_major() < 5,
        reason="under transformers 4, bert_score's slow RoBERTa tokenizer adds a leading space that simkernel, "
        "like bert_score on transformers 5, does not add (docs/drop-ins.md)",
    ),
]

CORPUS = [
    "The cat sat on the mat.",
    "A cat was sitting on the mat.",
    "hello world",
    "the quick brown fox jumps over the lazy dog",
    "Berlin is the capital of Germany",
    "Paris is in France",
]
MAX_LENGTH = 128  # the tokenizer's model_max_length, special tokens included: the long texts below are cut
CANDS = [
    "The cat sat on the mat.",
    "hello world",
    "Paris is in France",
    "",
    "  The quick brown fox  ",
    "the lazy dog " * 60,
    "Zürich 🚀 unknown bytes",
]
REFS = [
    "A cat was sitting on the mat.",
    "the quick brown fox",
    "Berlin is the capital of Germany",
    "hello world",
    "The lazy dog",
    "the quick brown fox " * 45,
    "Zurich",
]


def build_tiny_roberta(folder: Path, tokenizer_config: bool) -> Path:
    """A RoBERTa checkpoint in ``folder``: vocab.json, merges.txt, tokenizer.json, config.json, weights, and
    with ``tokenizer_config`` a tokenizer_config.json naming RobertaTokenizer (as the hub's RoBERTa models
    have one)."""
    import torch
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import RobertaConfig, RobertaModel

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        CORPUS * 50,
        vocab_size=400,
        min_frequency=1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        show_progress=False,
    )
    bpe.post_processor = processors.RobertaProcessing(
        ("</s>", bpe.token_to_id("</s>")), ("<s>", bpe.token_to_id("<s>")), trim_offsets=True
    )
    folder.mkdir(parents=True)
    bpe.save_model(str(folder))
    bpe.save(str(folder / "tokenizer.json"))
    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=1200,  # past the tokenizer's 400: the export traces an example of token id 1000
        hidden_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=MAX_LENGTH + 2,
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    RobertaModel(config, add_pooling_layer=False).eval().save_pretrained(str(folder))
    if tokenizer_config:
        special = {"bos_token": "<s>", "eos_token": "</s>", "cls_token": "<s>", "sep_token": "</s>"}
        special |= {"unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>"}
        settings = {"tokenizer_class": "RobertaTokenizer", "model_max_length": MAX_LENGTH, **special}
        (folder / "tokenizer_config.json").write_text(json.dumps(settings), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def roberta(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    return build_tiny_roberta(tmp_path_factory.mktemp("roberta") / "tiny-roberta", tokenizer_config=True)


@pytest.fixture(scope="module")
def roberta_store(roberta, tmp_path_factory):
    """A store of the module's own, into which simkernel exports the checkpoint's token layers on first use."""
    from simkernel.runtime import clear_shared_instances

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SIMKERNEL_HOME", str(tmp_path_factory.mktemp("store")))
        clear_shared_instances()
        yield roberta
        clear_shared_instances()


def sent_encode_ids(reference, folder: Path, texts, max_length: int = MAX_LENGTH) -> list[list[int]]:
    """bert_score's own token ids (``utils.sent_encode``, the tokenizer bert_score loads) of each text."""
    from bert_score import utils

    tokenizer = utils.get_tokenizer(str(folder), False)
    tokenizer.model_max_length = min(tokenizer.model_max_length, max_length)  # unset: transformers' 1e30
    return [list(utils.sent_encode(tokenizer, text)) for text in texts]


def test_bert_score_adds_no_leading_space_under_transformers_5(roberta, bert_score_reference):
    """What this module relies on: bert_score's RoBERTa tokens are the text's own, no leading space."""
    from bert_score import utils
    from tokenizers import Tokenizer
    from transformers import RobertaTokenizer

    assert isinstance(utils.get_tokenizer(str(roberta), False), RobertaTokenizer)  # the add_prefix_space path
    plain = Tokenizer.from_file(str(roberta / "tokenizer.json"))
    ids = sent_encode_ids(bert_score_reference, roberta, ["The cat sat"])[0]
    assert ids == plain.encode("The cat sat").ids != plain.encode(" The cat sat").ids


@pytest.mark.parametrize("tokenizer_config", [True, False], ids=["tokenizer_config", "no_tokenizer_config"])
def test_tokens_are_bert_scores(tokenizer_config, roberta, tmp_path, bert_score_reference):
    """With and without tokenizer_config.json. Without it, transformers leaves ``model_max_length`` unset
    and bert_score 0.3.13 fails on the folder (OverflowError when it truncates); its tokens are compared
    with the limit simkernel takes from config.json's positions."""
    from simkernel.runtime.inference.token_encoder import BertScoreTokenizer

    folder = roberta
    if not tokenizer_config:
        folder = tmp_path / "no-tokenizer-config"
        shutil.copytree(roberta, folder)
        (folder / "tokenizer_config.json").unlink()
    ours = BertScoreTokenizer(folder)
    assert ours.max_length == MAX_LENGTH  # from tokenizer_config.json, else config.json's positions
    texts = CANDS + REFS
    got = [encoding.ids for encoding in ours.encodings(texts)]
    assert got == sent_encode_ids(bert_score_reference, folder, texts)


def test_a_roberta_checkpoint_exports_and_scores_as_bert_score(roberta_store, bert_score_reference):
    from simkernel.runtime import get_token_encoder
    from simkernel.runtime.store.manifest import read_manifest

    folder = str(roberta_store)
    for layer in range(4):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the empty and truncated texts' warnings
            ours = as_arrays(sk_bert_score.score(CANDS, REFS, model_type=folder, num_layers=layer))
        theirs = as_arrays(
            bert_score_reference.score(CANDS, REFS, model_type=folder, num_layers=layer, batch_size=1)
        )
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5, err_msg=f"layer {layer}")
    assert (ours[:, 3] == 0).all() and (ours[:, [0, 1, 2, 4, 5, 6]] != 0).all()
    parity = read_manifest(get_token_encoder(folder).model_path)["parity"]["fp32"]
    assert parity["token_ids_match"] is True


def test_idf_and_several_references_on_roberta(roberta_store, bert_score_reference):
    folder = str(roberta_store)
    groups = [[r, c] for c, r in zip(CANDS[1:], REFS[:-1], strict=True)]
    kwargs = dict(model_type=folder, num_layers=2, idf=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ours = as_arrays(sk_bert_score.score(CANDS[:-1], groups, **kwargs))
    theirs = as_arrays(bert_score_reference.score(CANDS[:-1], groups, batch_size=1, **kwargs))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)
