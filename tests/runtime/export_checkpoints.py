"""Small real checkpoints for the export, quantisation and prepare tests, built from all-MiniLM-L6-v2.

A "truncated" checkpoint keeps the first layers of the real model (same architecture, tokenizer and
sentence-transformers configs) so exports stay fast on 2 cores while exercising the real code paths.
The test cross-encoder builder is the one ``scripts/prepare_test_models.py`` uses for the store.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ST_FILES = (
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


def prepare_test_models_script():
    """``scripts/prepare_test_models.py`` imported as a module."""
    name = "prepare_test_models"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / "prepare_test_models.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def build_truncated_bi_encoder(base: Path, dst: Path, num_layers: int = 2) -> Path:
    """A sentence-transformers checkpoint: ``base``'s first ``num_layers`` layers and all its configs."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(base), num_hidden_layers=num_layers)
    model.save_pretrained(str(dst))
    for name in ST_FILES:
        if (base / name).is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(base / name, dst / name)
    return dst


def block_imports_dir(root: Path, modules: tuple[str, ...]) -> Path:
    """A folder with a ``sitecustomize.py`` that makes importing ``modules`` fail, as if not installed.

    Put it first on ``PYTHONPATH`` of a subprocess to simulate a missing optional dependency.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "sitecustomize.py").write_text(
        textwrap.dedent(f"""
        import sys

        BLOCKED = {tuple(modules)!r}

        class _Blocker:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, _Blocker())
    """),
        encoding="utf-8",
    )
    return root


def subprocess_env(tmp_home: Path, *front: Path) -> dict:
    """Subprocess environment: the store at ``tmp_home``; ``front`` folders, then ``src/``, on PYTHONPATH."""
    import os

    env = dict(os.environ)
    env["SIMKERNEL_HOME"] = str(tmp_home)
    env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in front), str(REPO / "src")])
    env.setdefault("OMP_NUM_THREADS", "1")
    return env
