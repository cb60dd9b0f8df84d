"""The Haystack embedders and ranker moved from simkernel.integrations.haystack to simkernel.components:
the old import path gives the same objects, and a pipeline saved before the move (its ``type`` strings
name ``simkernel.integrations.haystack.embedders`` / ``.ranker``) still loads, as the present classes.

No model is loaded here (components are built, never warmed up)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from haystack import Pipeline
from haystack.core.errors import DeserializationError
from haystack.core.serialization import DeserializationCallbacks

import simkernel.integrations.haystack as former
from simkernel.components import ALLOWED_MODULES
from simkernel.components.embedders import SimkernelDocumentEmbedder, SimkernelTextEmbedder
from simkernel.components.rankers import SimkernelSimilarityRanker

SRC = str(Path(__file__).resolve().parents[2] / "src")
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# a pipeline as simkernel.integrations.haystack saved it, before the move
SAVED_BEFORE_THE_MOVE = f"""
components:
  doc_embedder:
    init_parameters:
      batch_size: 8
      embedding_separator: ' | '
      meta_fields_to_embed: [topic]
      model: {MODEL}
      normalize_embeddings: false
      precision: int8
      prefix: 'doc: '
      progress_bar: false
      suffix: ''
      threads: null
    type: simkernel.integrations.haystack.embedders.SimkernelDocumentEmbedder
  text_embedder:
    init_parameters: {{model: {MODEL}, precision: fp32, threads: 2, prefix: '', suffix: ' ?',
                      batch_size: 32, progress_bar: true, normalize_embeddings: true}}
    type: simkernel.integrations.haystack.embedders.SimkernelTextEmbedder
  ranker:
    init_parameters: {{model: simkernel-test/minilm-l6-cross-encoder, top_k: 2, scale_score: false}}
    type: simkernel.integrations.haystack.ranker.SimkernelSimilarityRanker
connections: []
"""
PRESENT_TYPES = {
    "doc_embedder": "simkernel.components.embedders.text_embedders.SimkernelDocumentEmbedder",
    "text_embedder": "simkernel.components.embedders.text_embedders.SimkernelTextEmbedder",
    "ranker": "simkernel.components.rankers.similarity_ranker.SimkernelSimilarityRanker",
}


def test_former_import_path_gives_the_same_objects():
    from simkernel.integrations.haystack import embedders, ranker

    assert former.SimkernelTextEmbedder is embedders.SimkernelTextEmbedder is SimkernelTextEmbedder
    assert (
        former.SimkernelDocumentEmbedder is embedders.SimkernelDocumentEmbedder is SimkernelDocumentEmbedder
    )
    assert former.SimkernelSimilarityRanker is ranker.SimkernelSimilarityRanker is SimkernelSimilarityRanker
    assert former.ALLOWED_MODULES is ALLOWED_MODULES  # one allowlist for every simkernel component
    assert "simkernel.components" in ALLOWED_MODULES and "simkernel.integrations.haystack" in ALLOWED_MODULES


def check_loaded(pipeline: Pipeline) -> None:
    doc_embedder, text_embedder = (
        pipeline.get_component("doc_embedder"),
        pipeline.get_component("text_embedder"),
    )
    assert type(doc_embedder) is SimkernelDocumentEmbedder and type(text_embedder) is SimkernelTextEmbedder
    assert (doc_embedder.precision, doc_embedder.meta_fields_to_embed, doc_embedder.embedding_separator) == (
        "int8",
        ["topic"],
        " | ",
    )
    assert (text_embedder.threads, text_embedder.suffix, text_embedder.normalize_embeddings) == (
        2,
        " ?",
        True,
    )
    ranker = pipeline.get_component("ranker")
    assert type(ranker) is SimkernelSimilarityRanker and (ranker.top_k, ranker.scale_score) == (2, False)


@pytest.mark.parametrize("allowed", [ALLOWED_MODULES, ["simkernel.integrations.haystack"]])
def test_pipeline_saved_before_the_move_loads(allowed):
    """With the one allowlist, or with the list simkernel.integrations.haystack exported before the move."""
    loaded = Pipeline.loads(SAVED_BEFORE_THE_MOVE, allowed_modules=allowed)
    check_loaded(loaded)
    # saved again, it names the present classes, and loads back the same
    again = loaded.to_dict()
    assert {name: c["type"] for name, c in again["components"].items()} == PRESENT_TYPES
    assert Pipeline.from_dict(again, allowed_modules=ALLOWED_MODULES).to_dict() == again


def test_former_types_are_still_refused_outside_the_allowlist():
    with pytest.raises(DeserializationError, match="'simkernel.integrations.haystack.embedders'.*allowlist"):
        Pipeline.loads(SAVED_BEFORE_THE_MOVE)


def test_pre_init_callbacks_see_the_present_classes():
    seen = []

    def pre_init(name, component_class, init_params):
        seen.append((name, component_class))
        if component_class is SimkernelSimilarityRanker:
            init_params["top_k"] = 5

    loaded = Pipeline.loads(
        SAVED_BEFORE_THE_MOVE,
        callbacks=DeserializationCallbacks(component_pre_init=pre_init),
        allowed_modules=ALLOWED_MODULES,
    )
    assert loaded.get_component("ranker").top_k == 5
    assert sorted(seen, key=lambda item: item[0]) == [
        ("doc_embedder", SimkernelDocumentEmbedder),
        ("ranker", SimkernelSimilarityRanker),
        ("text_embedder", SimkernelTextEmbedder),
    ]


def test_from_dict_refuses_another_class_as_haystack_does():
    data = SimkernelTextEmbedder(model=MODEL).to_dict()
    assert data["type"] == PRESENT_TYPES["text_embedder"]
    with pytest.raises(DeserializationError, match="Missing 'type' in serialization data"):
        SimkernelTextEmbedder.from_dict({"init_parameters": {}})
    wrong = {**data, "type": PRESENT_TYPES["doc_embedder"]}
    with pytest.raises(
        DeserializationError,
        match=f"Class '{PRESENT_TYPES['doc_embedder']}' can't be deserialized as 'SimkernelTextEmbedder'",
    ):
        SimkernelTextEmbedder.from_dict(wrong)


def test_saved_pipeline_loads_in_a_fresh_interpreter_that_imported_no_simkernel():
    """Haystack itself imports the former module named by the type string; that registers the classes."""
    code = f"""
        import json, sys
        from haystack import Pipeline
        pipe = Pipeline.loads({SAVED_BEFORE_THE_MOVE!r}, allowed_modules=["simkernel.integrations.haystack"])
        print(json.dumps({{name: f"{{type(c).__module__}}.{{type(c).__name__}}" for name, c in pipe.walk()}}))
    """
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == PRESENT_TYPES
