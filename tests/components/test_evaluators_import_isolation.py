"""Import behaviour, in fresh interpreters: simkernel never imports haystack (or torch) itself, the classes
become Haystack components whatever the import order, and they work standalone when haystack is missing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")
HEAVY = ("haystack", "torch", "transformers", "sentence_transformers", "onnxruntime")


def run_python(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (simkernel's src first on the path); it prints JSON last."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_and_building_components_imports_nothing_heavy():
    out = run_python(
        f"""
        import json, sys
        import simkernel
        from simkernel.components.evaluators import AnswerExactMatchEvaluator, SASEvaluator
        evaluator = simkernel.SASEvaluator(device="cpu")
        data = evaluator.to_dict()
        SASEvaluator.from_dict(data)
        em = AnswerExactMatchEvaluator().run(["a"], ["a"])
        empty = evaluator.run([], [])
        device = SASEvaluator.from_dict(simkernel.SASEvaluator(device="cuda:1").to_dict())._device
        device = [type(device).__module__, device.to_torch_str(), device.to_hf(), device.to_dict()]
        heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
        print(json.dumps({{"heavy": heavy, "em": em, "empty": empty, "device": device}}))
        """
    )
    assert out == {
        "heavy": [],
        "em": {"individual_scores": [1], "score": 1.0},
        "empty": {"score": 0.0, "individual_scores": [0.0]},
        # without Haystack imported, _device is simkernel's ComponentDevice, with Haystack's methods
        "device": ["simkernel.components.device", "cuda:1", "cuda:1", {"type": "single", "device": "cuda:1"}],
    }


def test_components_imported_before_haystack_still_load_from_yaml():
    """The registry entry comes from the import hook, without any instance being built first."""
    out = run_python(
        """
        import json
        from simkernel.components import ALLOWED_MODULES, SASEvaluator, AnswerExactMatchEvaluator
        yaml_text = '''
        components:
          em:
            init_parameters: {}
            type: simkernel.components.evaluators.answer_exact_match.AnswerExactMatchEvaluator
          sas:
            init_parameters:
              batch_size: 8
              device: {type: single, device: cpu}
              model: sentence-transformers/all-MiniLM-L6-v2
              token: {type: env_var, env_vars: [HF_API_TOKEN, HF_TOKEN], strict: false}
            type: simkernel.components.evaluators.sas_evaluator.SASEvaluator
        connections: []
        '''
        from haystack import Pipeline
        pipe = Pipeline.loads(yaml_text, allowed_modules=ALLOWED_MODULES)
        sas = pipe.get_component("sas")
        print(json.dumps({
            "classes": [type(pipe.get_component("sas")) is SASEvaluator,
                        type(pipe.get_component("em")) is AnswerExactMatchEvaluator],
            "batch_size": sas._batch_size,
            "device": sas.to_dict()["init_parameters"]["device"],
        }))
        """
    )
    assert out == {"classes": [True, True], "batch_size": 8, "device": {"type": "single", "device": "cpu"}}


def test_components_imported_after_haystack_are_registered_at_once():
    out = run_python(
        """
        import json
        from haystack.core.component.component import component
        from simkernel.components.evaluators import SASEvaluator
        print(json.dumps({"registered": component.registry.get(
            "simkernel.components.evaluators.sas_evaluator.SASEvaluator") is SASEvaluator}))
        """
    )
    assert out == {"registered": True}


def test_standalone_without_haystack_installed():
    out = run_python(
        """
        import importlib.abc, json, sys

        class NoHaystack(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "haystack" or name.startswith("haystack."):
                    raise ModuleNotFoundError(f"No module named {name!r}")
        sys.meta_path.insert(0, NoHaystack())

        from simkernel.components import AnswerExactMatchEvaluator, SASEvaluator, use_simkernel_evaluators
        from simkernel.components.serialization import ComponentDeserializationError
        haystack_saved = {"type": "haystack.components.evaluators.sas_evaluator.SASEvaluator",
                          "init_parameters": {"model": "m", "batch_size": 4,
                                              "device": {"type": "single", "device": "cpu"},
                                              "token": {"type": "env_var", "env_vars": ["HF_TOKEN"],
                                                        "strict": False}}}
        evaluator = SASEvaluator.from_dict(haystack_saved)
        try:
            SASEvaluator.from_dict({})
            error = None
        except ComponentDeserializationError as exc:
            error = [type(exc).__name__, isinstance(exc, ValueError), str(exc)]
        try:
            evaluator.__haystack_input__
            sockets = "built"
        except ImportError:
            sockets = "ImportError"
        print(json.dumps({
            "to_dict": evaluator.to_dict(),
            "error": error,
            "em": AnswerExactMatchEvaluator().run(["Berlin", "Paris"], ["Berlin", "Lyon"]),
            "sockets": sockets,
        }))
        """
    )
    assert out["to_dict"] == {
        "type": "simkernel.components.evaluators.sas_evaluator.SASEvaluator",
        "init_parameters": {
            "model": "m",
            "batch_size": 4,
            "device": {"type": "single", "device": "cpu"},
            "token": {"type": "env_var", "env_vars": ["HF_TOKEN"], "strict": False},
        },
    }
    assert out["error"] == ["ComponentDeserializationError", True, "Missing 'type' in serialization data"]
    assert out["em"] == {"individual_scores": [1, 0], "score": 0.5}
    assert out["sockets"] == "ImportError"  # only Haystack reads the sockets
