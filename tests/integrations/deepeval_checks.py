"""SimkernelDeepEvalEmbedding's checks against the REAL deepeval, run inside the deepeval venv
(scripts/tool_venv.sh deepeval) by tests/integrations/test_deepeval.py.

    python tests/integrations/deepeval_checks.py MODEL CHECKPOINT

Prints one JSON object: ``checks`` (name -> null when it held, else its traceback) and the numbers the
driver compares: deepeval's own cosine (the synthesizer's) of pairs of simkernel vectors and of
sentence-transformers vectors on the same checkpoint.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback

import numpy as np
from deepeval.metrics.utils import initialize_embedding_model
from deepeval.models import DeepEvalBaseEmbeddingModel, DeepEvalBaseLLM
from deepeval.synthesizer.config import ContextConstructionConfig
from deepeval.synthesizer.synthesizer import ContextWithSources, Synthesizer
from encoder_calls import counted_calls
from loop_probe import distinct_texts, loop_kept_ticking, run_with_ticker
from sentence_transformers import SentenceTransformer

from simkernel.integrations.deepeval import SimkernelDeepEvalEmbedding

ATOL = 1e-5
TEXTS = [
    "The capital of France is Paris.",
    "Paris is France's capital city.",
    "Berlin is the capital of Germany.",
    "The cat sat on the mat.",
    "A dog chased a ball across the park.",
    "Photosynthesis turns light into chemical energy in plants.",
    "",
    "Лев Толстой написал «Войну и мир».",
    "The capital of France is Paris.",  # a repeat
]


class NoLLM(DeepEvalBaseLLM):
    """A critic model that is never called: these checks need deepeval's embedder paths only."""

    def load_model(self):
        return self

    def generate(self, *args, **kwargs):
        raise AssertionError("the checks call no LLM")

    async def a_generate(self, *args, **kwargs):
        raise AssertionError("the checks call no LLM")

    def get_model_name(self):
        return "no-llm"


class SentenceTransformersEmbedding(DeepEvalBaseEmbeddingModel):
    """The reference: deepeval's embedder interface on sentence-transformers."""

    def __init__(self, checkpoint: str):
        self.checkpoint = checkpoint
        super().__init__(checkpoint)

    def load_model(self):
        return SentenceTransformer(self.checkpoint, device="cpu")

    def embed_texts(self, texts):
        return self.model.encode(texts, normalize_embeddings=True).tolist()

    def embed_text(self, text):
        return self.embed_texts([text])[0]

    async def a_embed_texts(self, texts):
        return self.embed_texts(texts)

    async def a_embed_text(self, text):
        return self.embed_text(text)

    def get_model_name(self):
        return "sentence-transformers"


def main() -> None:
    model, checkpoint = sys.argv[1:3]
    ours = SimkernelDeepEvalEmbedding(model=model, threads=2)
    reference = SentenceTransformersEmbedding(checkpoint)
    checks: dict[str, object] = {}
    numbers: dict[str, object] = {}

    def check(fn):
        try:
            fn()
            checks[fn.__name__] = None
        except BaseException:  # noqa: BLE001 - every failure is reported, with its traceback
            checks[fn.__name__] = traceback.format_exc()
        return fn

    @check
    def is_a_deepeval_embedding_model():
        assert isinstance(ours, DeepEvalBaseEmbeddingModel)
        assert initialize_embedding_model(ours) is ours
        assert ours.get_model_name() == model and ours.name == model
        assert ours.model is ours.load_model()  # the process-wide shared encoder

    @check
    def context_construction_config_takes_it():
        config = ContextConstructionConfig(embedder=ours, critic_model=NoLLM())
        assert config.embedder is ours

    @check
    def vectors_match_sentence_transformers():
        np.testing.assert_allclose(
            np.array(ours.embed_texts(TEXTS)), np.array(reference.embed_texts(TEXTS)), atol=ATOL
        )
        np.testing.assert_allclose(ours.embed_text(TEXTS[5]), reference.embed_text(TEXTS[5]), atol=ATOL)

    @check
    def synthesizer_cosines():
        # deepeval's own cosine (the synthesizer ranks contexts with it) over every pair of texts
        for name, embedder in (("simkernel", ours), ("sentence_transformers", reference)):
            vectors = embedder.embed_texts(TEXTS)
            numbers[name] = [
                Synthesizer._cosine_similarity(vectors[i], vectors[j])
                for i in range(len(TEXTS))
                for j in range(i + 1, len(TEXTS))
            ]

    @check
    def synthesizer_groups_contexts_as_on_sentence_transformers():
        contexts = [
            ContextWithSources(context=[text], source_files=[f"file{i % 4}.txt"])
            for i, text in enumerate(t for t in TEXTS if t)
        ]
        synthesizer = Synthesizer(model=NoLLM(), async_mode=False)

        def groups(embedder):
            merged = synthesizer._merge_cross_file_contexts(contexts, embedder, target_files_per_context=2)
            return [(m.context, sorted(m.source_files)) for m in merged]

        ours_groups = groups(ours)
        assert ours_groups == groups(reference), ours_groups
        assert asyncio.run(synthesizer._a_merge_cross_file_contexts(contexts, ours, 2)) is not None

    @check
    def async_methods_equal_the_sync_ones():
        async def main():
            return await ours.a_embed_texts(TEXTS), await ours.a_embed_text(TEXTS[1])

        many, one = asyncio.run(main())
        assert many == ours.embed_texts(TEXTS) and one == ours.embed_text(TEXTS[1])

    @check
    def one_encoder_call_per_list():
        with counted_calls(ours.model) as calls:
            ours.embed_texts(TEXTS)
            asyncio.run(ours.a_embed_texts(TEXTS))
        assert calls == [("encode", len(TEXTS)), ("aencode", len(TEXTS))], calls

    @check
    def a_embed_texts_does_not_block_the_event_loop():
        many = distinct_texts(600, "deepeval async")
        vectors, worst_gap, elapsed = asyncio.run(run_with_ticker(ours.a_embed_texts(many)))
        assert len(vectors) == 600
        assert elapsed > 0.3 and loop_kept_ticking(worst_gap, elapsed), (elapsed, worst_gap)

    print(json.dumps({"checks": checks, "numbers": numbers}))


if __name__ == "__main__":
    main()
