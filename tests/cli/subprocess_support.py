"""Running ``simkernel`` in child processes against a temporary store and the loopback hub: the shared
pieces of the crash-safety and disk-full tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HUB_REPO = "org/tiny-crash"
LAYOUT = {
    name: name
    for name in (
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.txt",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    )
} | {"onnx/model.onnx": "model.onnx"}


DOWNLOAD = [
    "-c",
    "from simkernel.runtime.acquisition.hub import download_bundle; download_bundle('org/tiny-crash')",
]


def child_env(home: Path, hf_home: Path, endpoint: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SIMKERNEL_"))}
    env.update(
        PYTHONPATH=str(REPO_ROOT / "src"),
        SIMKERNEL_HOME=str(home),
        HF_HOME=str(hf_home),
        HF_HUB_VERBOSITY="error",
        NO_PROXY="127.0.0.1,localhost",
    )
    if endpoint:
        env["HF_ENDPOINT"] = endpoint
    return env


def simkernel(*args: str) -> list[str]:
    return [sys.executable, "-m", "simkernel", *args]
