"""SimkernelRagasEmbedding's checks against the REAL ragas 0.4, run inside the ragas venv
(scripts/tool_venv.sh ragas) by tests/integrations/test_ragas.py.

    python tests/integrations/ragas_checks.py MODEL CHECKPOINT SAS_CSV

Prints one JSON object: ``checks`` (name -> null when it held, else its traceback) and the numbers the
driver compares: ragas' SemanticSimilarity on SAS pairs with simkernel (fp32 and int8) and with ragas'
own HuggingFaceEmbeddings (sentence-transformers) on the same checkpoint.
"""

from __future__ import annotations

import asyncio
import copy
import csv
import json
import pickle
import sys
import traceback

import numpy as np
from encoder_calls import counted_calls
from loop_probe import (
    assert_first_call_loads_off_the_loop,
    distinct_texts,
    loop_kept_ticking,
    run_with_ticker,
)
from ragas.embeddings import HuggingFaceEmbeddings
from ragas.embeddings.base import BaseRagasEmbedding
from ragas.metrics.collections import SemanticSimilarity

from simkernel.integrations.ragas import SimkernelRagasEmbedding

ATOL = 1e-5
TEXTS = [
    "The capital of France is Paris.",
    "Paris is France's capital city.",
    "Berlin is the capital of Germany.",
    "Photosynthesis turns light into chemical energy in plants.",
    "Лев Толстой написал «Войну и мир».",
    "The capital of France is Paris.",  # a repeat
]


def sas_pairs(path: str, count: int = 60) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    step = max(1, len(rows) // count)
    return [{"reference": r["answer1"], "response": r["answer2"]} for r in rows[::step][:count]]


def main() -> None:
    model, checkpoint, sas_csv = sys.argv[1:4]
    ours = SimkernelRagasEmbedding(model=model, threads=2)
    reference = HuggingFaceEmbeddings(model=checkpoint, device="cpu")
    pairs = sas_pairs(sas_csv)
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
    def is_a_base_ragas_embedding():
        assert isinstance(ours, BaseRagasEmbedding)
        SemanticSimilarity(embeddings=ours)  # ragas' own check of the embeddings it is given

    @check
    def vectors_match_ragas_huggingface_embeddings():
        np.testing.assert_allclose(np.array(ours.embed_texts(TEXTS)), reference.embed_texts(TEXTS), atol=ATOL)
        np.testing.assert_allclose(ours.embed_text(TEXTS[0]), reference.embed_text(TEXTS[0]), atol=ATOL)
        np.testing.assert_allclose(ours.embed_text(" "), reference.embed_text(" "), atol=ATOL)

    @check
    def semantic_similarity_scores():
        # ragas' metric itself, unchanged: batch_score (its asyncio.run over ascore) on every pair
        for name, embeddings in (
            ("simkernel", ours),
            ("simkernel_int8", SimkernelRagasEmbedding(model=model, precision="int8", threads=2)),
            ("huggingface", reference),
        ):
            numbers[name] = [r.value for r in SemanticSimilarity(embeddings=embeddings).batch_score(pairs)]
        single = SemanticSimilarity(embeddings=ours).score(**pairs[0]).value
        assert single == numbers["simkernel"][0], (single, numbers["simkernel"][0])

    @check
    def ascore_in_a_running_loop():
        metric = SemanticSimilarity(embeddings=ours)

        async def main():
            return [(await metric.ascore(**p)).value for p in pairs[:5]]

        assert asyncio.run(main()) == [metric.score(**p).value for p in pairs[:5]]

    @check
    def async_methods_equal_the_sync_ones():
        async def main():
            return await ours.aembed_texts(TEXTS), await ours.aembed_text(TEXTS[1])

        many, one = asyncio.run(main())
        assert many == ours.embed_texts(TEXTS) and one == ours.embed_text(TEXTS[1])

    @check
    def one_encoder_call_per_list():
        with counted_calls(ours.encoder) as calls:
            ours.embed_texts(TEXTS)
            asyncio.run(ours.aembed_texts(TEXTS))
        assert calls == [("encode", len(TEXTS)), ("aencode", len(TEXTS))], calls

    @check
    def aembed_texts_does_not_block_the_event_loop():
        many = distinct_texts(600, "ragas async")
        vectors, worst_gap, elapsed = asyncio.run(run_with_ticker(ours.aembed_texts(many)))
        assert len(vectors) == 600
        assert elapsed > 0.3 and loop_kept_ticking(worst_gap, elapsed), (elapsed, worst_gap)

    @check
    def texts_are_checked_as_ragas_does():
        for bad in ([], ["fine", "   "], [3]):
            try:
                ours.embed_texts(bad)
            except ValueError:
                continue
            raise AssertionError(f"embed_texts({bad!r}) did not raise ValueError")
        try:
            ours.embed_text("x", normalize_embeddings=False)
        except TypeError as exc:
            assert "batch_size / normalize on the constructor" in str(exc), exc
        else:
            raise AssertionError("a per-call encode option was accepted")

    @check
    def copies_made_after_the_first_call_embed_the_same():
        expected = ours.embed_texts(TEXTS)  # the model is loaded by now
        for copied in (copy.deepcopy(ours), pickle.loads(pickle.dumps(ours))):
            assert copied.embed_texts(TEXTS) == expected
            assert asyncio.run(copied.aembed_texts(TEXTS)) == expected
            assert copied.encoder is ours.encoder  # loaded again at first use: this process's shared model

    @check
    def the_first_async_call_loads_the_model_off_the_event_loop():
        # the last check: it clears the shared instances, so the load really happens in this call; loaded
        # on the loop, the ticker would stall for all of it
        from simkernel.runtime import clear_shared_instances

        before = ours.encoder
        clear_shared_instances()
        fresh = SimkernelRagasEmbedding(model=model, threads=2)
        assert_first_call_loads_off_the_loop(fresh, fresh.aembed_texts(["the first call"]), before)

    print(json.dumps({"checks": checks, "numbers": numbers}))


if __name__ == "__main__":
    main()
