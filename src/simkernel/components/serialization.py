"""Serialised form of simkernel's Haystack components, the one allowlist that loads them, and moving
pipelines saved by Haystack (or by an older simkernel) over to them.

simkernel's components serialise exactly as Haystack's (``{"type": ..., "init_parameters": {...}}``, same
parameter names and nested forms), except that ``type`` names simkernel's class, e.g.
``simkernel.components.evaluators.sas_evaluator.SASEvaluator``, so that ``Pipeline.loads`` builds the
simkernel component again. Haystack refuses to import classes from modules outside its allowlist; load a
pipeline holding simkernel components (evaluators, embedders, rankers) with::

    Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)

(or ``haystack.core.serialization.allow_deserialization_module(...)`` once per process for each entry, or
``HAYSTACK_DESERIALIZATION_ALLOWLIST``). :data:`ALLOWED_MODULES` also holds
``simkernel.integrations.haystack``, where the embedders and ranker lived before: :data:`MOVED_TYPES` maps
the ``type`` strings that pipelines saved then hold to the classes' present ones, and those old strings
keep loading.

A pipeline saved with Haystack's own evaluators names Haystack's classes; :func:`use_simkernel_evaluators`
rewrites those ``type`` strings so the same file loads with simkernel's. ``SASEvaluator.from_dict`` and
``AnswerExactMatchEvaluator.from_dict`` also accept Haystack's ``type`` strings directly.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

# every module a saved pipeline may name for a simkernel component (Pipeline.loads(..., allowed_modules=...))
ALLOWED_MODULES = ["simkernel.components", "simkernel.integrations.haystack"]

# type strings saved before the Haystack embedders and ranker moved into simkernel.components -> their
# present ones (both are registered with Haystack, and the classes' from_dict accept both)
MOVED_TYPES = {
    f"simkernel.integrations.haystack.{old}.{name}": f"simkernel.components.{new}.{name}"
    for old, new, name in (
        ("embedders", "embedders.text_embedders", "SimkernelTextEmbedder"),
        ("embedders", "embedders.text_embedders", "SimkernelDocumentEmbedder"),
        ("ranker", "rankers.similarity_ranker", "SimkernelSimilarityRanker"),
    )
}

# Haystack's type string -> simkernel's, for the components simkernel re-implements
HAYSTACK_TO_SIMKERNEL = {
    f"haystack.components.evaluators.{module}.{name}": f"simkernel.components.evaluators.{module}.{name}"
    for module, name in (
        ("sas_evaluator", "SASEvaluator"),
        ("answer_exact_match", "AnswerExactMatchEvaluator"),
    )
}


class ComponentDeserializationError(ValueError):
    """Serialised component data that cannot be turned back into a simkernel component."""


def deserialization_error(message: str) -> Exception:
    """Haystack's ``DeserializationError`` when haystack is loaded (what Haystack code catches), else ours."""
    errors = sys.modules.get("haystack.core.errors")
    error_class = getattr(errors, "DeserializationError", None) if errors is not None else None
    return (error_class or ComponentDeserializationError)(message)


def check_type(data: dict[str, Any], cls: type, accepted: tuple[str, ...]) -> None:
    """Raise as Haystack's ``default_from_dict`` when ``data["type"]`` is missing or not in ``accepted``."""
    if "type" not in data:
        raise deserialization_error("Missing 'type' in serialization data")
    if data["type"] not in accepted:
        raise deserialization_error(f"Class '{data['type']}' can't be deserialized as '{cls.__name__}'")


def use_simkernel_evaluators(pipeline_data: dict[str, Any]) -> dict[str, Any]:
    """Copy of a serialised Haystack pipeline (``Pipeline.to_dict()`` or its parsed YAML) whose
    SASEvaluator and AnswerExactMatchEvaluator components are simkernel's (the others stay as they are),
    in nested pipelines too (a ``SuperComponent``'s ``init_parameters.pipeline``, a ``PipelineTool``'s
    ``data.pipeline``, at any depth).

    >>> data = use_simkernel_evaluators(yaml.safe_load(open("pipeline.yaml")))
    >>> pipe = Pipeline.from_dict(data, allowed_modules=ALLOWED_MODULES)
    """
    out = copy.deepcopy(pipeline_data)
    _use_simkernel_in_pipeline(out)
    return out


def _use_simkernel_in_pipeline(pipeline_data: dict[str, Any]) -> None:
    for component in (pipeline_data.get("components") or {}).values():
        if isinstance(component, dict):
            if component.get("type") in HAYSTACK_TO_SIMKERNEL:
                component["type"] = HAYSTACK_TO_SIMKERNEL[component["type"]]
            _use_simkernel_in_nested_pipelines(component)


def _use_simkernel_in_nested_pipelines(value: Any) -> None:
    """Rewrite every serialised pipeline (a dict with a ``components`` dict) inside ``value``."""
    if isinstance(value, dict):
        if isinstance(value.get("components"), dict):
            _use_simkernel_in_pipeline(value)
            return
        for item in value.values():
            _use_simkernel_in_nested_pipelines(item)
    elif isinstance(value, list):
        for item in value:
            _use_simkernel_in_nested_pipelines(item)
