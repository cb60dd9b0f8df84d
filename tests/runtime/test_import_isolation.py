"""`import simkernel` (and reading configs or the store) loads no heavy framework; encoders load only
onnxruntime, tokenizers and numpy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ["torch", "transformers", "sentence_transformers", "haystack", "onnxruntime", "huggingface_hub"]
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _loaded_after(code: str) -> set[str]:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))"
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_simkernel_loads_nothing_heavy():
    loaded = _loaded_after("import simkernel, simkernel.runtime")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_reading_configs_and_store_loads_nothing_heavy(reference_checkpoint):
    loaded = _loaded_after(
        "from simkernel.runtime import read_model_config\nfrom simkernel.runtime.store import bundles as store\n"
        f"read_model_config({str(reference_checkpoint)!r}); store.list_models()"
    )
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_encoding_loads_no_torch(default_bundle):
    loaded = _loaded_after(
        f"from simkernel import TextEncoder\nTextEncoder({str(default_bundle)!r}).encode(['hello'])"
    )
    assert "onnxruntime" in loaded
    assert not loaded & {"torch", "transformers", "sentence_transformers", "haystack"}
