"""Shared constants and builders of the runtime tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

LONG_TEXT = " ".join(
    f"Sentence {i} of a long answer that goes on about evaluation metrics, embeddings and truncation."
    for i in range(60)
)
SPECIAL_TEXTS = [
    "",
    " ",
    "   \t\n ",
    LONG_TEXT,
    "Привет, мир! Как сбросить пароль? Нажмите «Забыли пароль?» на странице входа.",
    "Москва — столица России, крупнейший по численности населения город страны.",
    "你好，世界。今天天气很好，我们去公园散步吧。",
    "北京是中华人民共和国的首都。",
    "Café naïve résumé – accents and ümlauts",
    "emoji 😀 and symbols ∑ ∞ ≠",
    "a",
    "The quick brown fox jumps over the lazy dog. " * 40,
]


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine in float64."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


# ----------------------------------------------------------------------------------------------------
# Tiny random checkpoints, exported to ONNX with torch in the test session (independent of the EXPORT
# helper's exporter), to check pooling modes and cross-encoders end to end against sentence-transformers.
# ----------------------------------------------------------------------------------------------------

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def _tiny_bert_config(**extra):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        **extra,
    )


def _onnx_export(model, folder: Path, output: str) -> None:
    import torch

    class Wrapper(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.logits if output == "logits" else out.last_hidden_state

    ids = torch.ones(2, 7, dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        Wrapper(model.eval()),
        (ids, ids, torch.zeros_like(ids)),
        str(folder / "model.onnx"),
        input_names=names,
        output_names=[output],
        dynamic_axes={n: {0: "batch", 1: "seq"} for n in [*names, output]},
        opset_version=17,
        dynamo=False,
    )


def make_tiny_bi_encoder(
    root: Path, reference_checkpoint: Path, pooling_mode: str, normalize: bool, max_seq_length: int = 64
) -> Path:
    """A random tiny BERT saved as a sentence-transformers checkpoint plus its ONNX export (one folder)."""
    import torch
    from transformers import BertModel

    folder = root / f"tiny-bi-{pooling_mode.replace('+', '_')}-{int(normalize)}"
    if folder.exists():
        return folder
    folder.mkdir(parents=True)
    torch.manual_seed(0)
    model = BertModel(_tiny_bert_config())
    model.save_pretrained(folder)
    for name in TOKENIZER_FILES:
        shutil.copy(reference_checkpoint / name, folder / name)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append(
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
        )
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": max_seq_length, "do_lower_case": False})
    )
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps(
            {
                "embedding_dimension": 32,
                "pooling_mode": pooling_mode.split("+") if "+" in pooling_mode else pooling_mode,
                "include_prompt": True,
            }
        )
    )
    _onnx_export(model, folder, "token_embeddings")
    return folder


def make_tiny_cross_encoder(root: Path, reference_checkpoint: Path, num_labels: int) -> Path:
    """A random tiny BertForSequenceClassification checkpoint plus its ONNX export (one folder)."""
    import torch
    from transformers import BertForSequenceClassification

    folder = root / f"tiny-ce-{num_labels}"
    if folder.exists():
        return folder
    folder.mkdir(parents=True)
    torch.manual_seed(1)
    model = BertForSequenceClassification(_tiny_bert_config(num_labels=num_labels))
    model.save_pretrained(folder)
    for name in TOKENIZER_FILES:
        shutil.copy(reference_checkpoint / name, folder / name)
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"]
    _onnx_export(model, folder, "logits")
    return folder
