"""One model list: the registry (:mod:`simkernel.runtime.acquisition.registry`) is the source of the models
simkernel knows; the recipes in ``models/*.json`` and the models table of docs/models.md repeat parts of it, and
these tests fail when they say something else.

The recipes are written by hand (they describe how a model is built, not only what it is), so there is no
generator to compare with: each recipe of a hub model must agree with the model's registry entry (id,
aliases, kind, hub repository and revision), and a recipe of a model the registry does not know must be a
test model. The models page's table must list the registry's models in its order, with the same kind, dimension
and languages.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simkernel.runtime.acquisition.registry import ALIASES, DEFAULT_MODEL, KNOWN_MODELS, known_model

REPO = Path(__file__).resolve().parents[2]
LANGUAGES = {
    "en": "English",
    "ru": "Russian",
    "zh": "Chinese",
}  # the registry's codes, as the models page writes them


def _recipes() -> dict[str, dict]:
    return {
        p.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted((REPO / "models").glob("*.json"))
    }


def _readme_rows() -> list[list[str]]:
    """The cells of the rows of the models table that opens docs/models.md (the site's models page)."""
    text = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
    section = text.split("# Models and the model store\n", 1)[1].lstrip("\n")
    lines = section.split("\n\n", 1)[0].splitlines()  # the table right under the heading
    assert lines[0].split("|")[1:-1] == [" model id ", " kind ", " dim ", " languages ", " note "], lines[0]
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines[2:]]


def _dim(model) -> str:
    if model.kind == "cross-encoder":
        return f"{model.dim} label" + ("s" if model.dim != 1 else "")
    return str(model.dim)


def _languages(codes: str) -> str:
    return re.sub(r"\b[a-z]{2}\b", lambda m: LANGUAGES.get(m.group(0), m.group(0)), codes)


@pytest.mark.parametrize("name", sorted(_recipes()))
def test_recipe_agrees_with_the_registry(name):
    recipe = _recipes()[name]
    model_id = recipe["id"]
    assert name == model_id.replace("/", "--") + ".json"
    known = known_model(model_id)
    if "hub" not in recipe:  # built here from parts (no hub repository): a test model, not a known one
        assert known is None, f"{model_id} is in the registry: its recipe needs its hub repo and revision"
        assert recipe["role"].startswith("test model"), recipe["role"]
        return
    assert known is not None, f"{name}: {model_id} is not in the registry (runtime/acquisition/registry.py)"
    assert known.id == model_id, f"{name}: the registry's id is {known.id}"
    assert recipe["kind"] == known.kind
    assert recipe["hub"] == {"repo": known.hub_repo, "revision": known.revision}
    hub_aliases = sorted(alias for alias, target in ALIASES.items() if target == model_id and "/" in alias)
    assert sorted(recipe.get("aliases", [])) == hub_aliases
    assert recipe["role"].startswith("default model") == (model_id == DEFAULT_MODEL), recipe["role"]


def test_readme_table_lists_the_registry():
    listed = []
    for ids, kind, dim, languages, note in _readme_rows():
        for cell in ids.split(", "):
            assert cell.startswith("`") and cell.endswith("`"), ids
            model = known_model(cell.strip("`"))
            assert model is not None and model.id == cell.strip("`"), f"{cell} is not a registry id"
            assert (kind, dim, languages) == (model.kind, _dim(model), _languages(model.languages)), model.id
            assert note.startswith("default of ") == (model.id == DEFAULT_MODEL), note
            listed.append(model.id)
    assert listed == [m.id for m in KNOWN_MODELS]
