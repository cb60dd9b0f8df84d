"""read_model_config on the real checkpoint and on synthetic folders covering each rule."""

from __future__ import annotations

import json

import pytest

from simkernel.errors import ModelError
from simkernel.runtime.inference.config import read_model_config


def _write(folder, name, data):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")


def test_reference_checkpoint(reference_checkpoint, st_model):
    cfg = read_model_config(reference_checkpoint)
    assert cfg.kind == "bi-encoder"
    assert cfg.architectures == ("BertModel",)
    assert cfg.pooling == "mean" and cfg.normalize is True
    assert cfg.max_seq_length == st_model.max_seq_length == 256
    assert cfg.dim == st_model.get_embedding_dimension() == 384
    assert cfg.do_lower_case is False and cfg.uses_token_type_ids is True
    assert cfg.pad_token == "[PAD]" and cfg.pad_token_id == 0
    assert cfg.num_labels is None and cfg.activation is None


def test_bundle_reads_like_its_checkpoint(default_bundle, reference_checkpoint):
    a, b = read_model_config(default_bundle), read_model_config(reference_checkpoint)
    for field in ("kind", "architectures", "pooling", "normalize", "max_seq_length", "dim", "pad_token_id"):
        assert getattr(a, field) == getattr(b, field), field


@pytest.mark.parametrize(
    ("architectures", "kind"),
    [
        (["BertForSequenceClassification"], "cross-encoder"),
        (["XLMRobertaModel"], "bi-encoder"),
        (["BertModel", "RobertaForSequenceClassification"], "cross-encoder"),
        ([], "bi-encoder"),
        (None, "bi-encoder"),
        (["BertForMaskedLM"], "bi-encoder"),
    ],
)
def test_kind_follows_haystack_rule(tmp_path, architectures, kind):
    _write(tmp_path, "config.json", {"architectures": architectures, "hidden_size": 8})
    assert read_model_config(tmp_path).kind == kind


def test_pooling_defaults_and_variants(tmp_path):
    _write(
        tmp_path,
        "config.json",
        {"architectures": ["BertModel"], "hidden_size": 8, "max_position_embeddings": 512},
    )
    cfg = read_model_config(tmp_path)
    assert (
        cfg.pooling == "mean" and cfg.normalize is False
    )  # sentence-transformers' default for plain checkpoints
    assert cfg.max_seq_length == 512
    _write(
        tmp_path,
        "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ],
    )
    _write(
        tmp_path,
        "1_Pooling/config.json",
        {"word_embedding_dimension": 8, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False},
    )
    assert read_model_config(tmp_path).pooling == "cls"
    _write(tmp_path, "1_Pooling/config.json", {"embedding_dimension": 8, "pooling_mode": "lasttoken"})
    assert read_model_config(tmp_path).pooling == "lasttoken"
    _write(tmp_path, "1_Pooling/config.json", {"embedding_dimension": 8, "pooling_mode": ["cls", "max"]})
    cfg = read_model_config(tmp_path)
    assert cfg.pooling == "cls+max" and cfg.dim == 16 and cfg.hidden_size == 8
    _write(tmp_path, "1_Pooling/config.json", {"embedding_dimension": 8, "pooling_mode": "median"})
    with pytest.raises(ModelError, match="median"):
        read_model_config(tmp_path)


def test_unsupported_modules_are_reported(tmp_path):
    _write(tmp_path, "config.json", {"architectures": ["BertModel"], "hidden_size": 8})
    _write(
        tmp_path,
        "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
            {"idx": 3, "name": "3", "path": "3_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )
    cfg = read_model_config(tmp_path)
    assert cfg.unsupported_modules == ("Dense",) and cfg.normalize is True


def test_max_seq_length_rules(tmp_path):
    _write(tmp_path, "config.json", {"architectures": ["BertModel"], "max_position_embeddings": 512})
    _write(tmp_path, "tokenizer_config.json", {"model_max_length": 1000000000000000019884624838656})
    assert read_model_config(tmp_path).max_seq_length == 512  # "unset" sentinel ignored
    _write(tmp_path, "tokenizer_config.json", {"model_max_length": 128, "do_lower_case": True})
    assert read_model_config(tmp_path).max_seq_length == 128
    _write(tmp_path, "sentence_bert_config.json", {"max_seq_length": 200, "do_lower_case": True})
    cfg = read_model_config(tmp_path)
    assert cfg.max_seq_length == 200 and cfg.do_lower_case is True
    _write(tmp_path, "sentence_bert_config.json", {"max_seq_length": 4096})
    assert read_model_config(tmp_path).max_seq_length == 512  # capped by the position embeddings
    _write(
        tmp_path,
        "config.json",
        {
            "architectures": ["XLMRobertaModel"],
            "model_type": "xlm-roberta",
            "max_position_embeddings": 514,
            "pad_token_id": 1,
        },
    )
    (tmp_path / "sentence_bert_config.json").unlink()
    (tmp_path / "tokenizer_config.json").unlink()
    cfg = read_model_config(tmp_path)
    assert cfg.max_seq_length == 512 and cfg.uses_token_type_ids is False


@pytest.mark.parametrize(
    ("extra", "num_labels", "activation"),
    [
        ({"id2label": {"0": "LABEL_0"}}, 1, "sigmoid"),
        ({"id2label": {"0": "a", "1": "b", "2": "c"}}, 3, "identity"),
        (
            {
                "id2label": {"0": "x"},
                "sentence_transformers": {"activation_fn": "torch.nn.modules.linear.Identity"},
            },
            1,
            "identity",
        ),
        (
            {
                "id2label": {"0": "x"},
                "sbert_ce_default_activation_function": "torch.nn.modules.activation.Tanh",
            },
            1,
            "tanh",
        ),
        ({"id2label": {"0": "x"}, "sentence_transformers": {"activation_fn": "mypkg.Custom"}}, 1, "sigmoid"),
    ],
)
def test_cross_encoder_activation_like_sentence_transformers(tmp_path, extra, num_labels, activation):
    _write(tmp_path, "config.json", {"architectures": ["BertForSequenceClassification"], **extra})
    cfg = read_model_config(tmp_path)
    assert cfg.kind == "cross-encoder" and cfg.num_labels == num_labels and cfg.activation == activation


def test_errors_name_the_file(tmp_path):
    with pytest.raises(ModelError, match="not a directory"):
        read_model_config(tmp_path / "nope")
    with pytest.raises(ModelError, match=r"config\.json is missing"):
        read_model_config(tmp_path)
    _write(tmp_path, "config.json", "{broken")
    with pytest.raises(ModelError, match=r"config\.json.*corrupt"):
        read_model_config(tmp_path)
    _write(tmp_path, "config.json", {"architectures": ["BertModel"]})
    _write(tmp_path, "sentence_bert_config.json", "[1,")
    with pytest.raises(ModelError, match=r"sentence_bert_config\.json"):
        read_model_config(tmp_path)
