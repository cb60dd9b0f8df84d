"""Fuzzed request bodies against a real server: whatever a client sends, the answer is a 2xx or a 4xx
in the error contract's shape (OpenAI's on its routes, text-embeddings-inference's on TEI's), never a 500
(nor TEI's 424 for a model fault), and the server stays up (hypothesis, bounded examples)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from serve_support import CONTRACT_TYPES, CROSS_MODEL, DEFAULT_MODEL
from tests.fuzz_settings import fuzz

OPENAI_ENDPOINTS = ["/v1/embeddings", "/v1/sas", "/v1/reference-match"]
TEI_ENDPOINTS = ["/similarity", "/rerank", "/embed", "/predict", "/tokenize", "/decode", "/"]
ENDPOINTS = OPENAI_ENDPOINTS + TEI_ENDPOINTS
FIELDS = [
    "input", "model", "encoding_format", "dimensions", "user", "inputs", "source_sentence", "sentences",
    "query", "texts", "raw_scores", "return_text", "truncate", "ground_truth_answers", "predicted_answers",
    "output", "references", "aggregation", "threshold", "normalize", "truncation_direction", "prompt_name",
    "add_special_tokens", "ids", "skip_special_tokens", "parameters",
]  # fmt: skip
CLIENT_STATUSES = {200, 400, 404, 408, 413, 422}

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=40)
    | st.sampled_from(["max", "mean", "base64", "float", "calibrated"])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=24,
)
models = st.sampled_from([DEFAULT_MODEL, CROSS_MODEL, "text-embedding-3-small", "/tmp", ""]) | json_values
texts = st.lists(st.text(max_size=60), max_size=6)
field_values = {name: json_values | texts | st.text(max_size=60) for name in FIELDS}
field_values["model"] = models
shaped = st.fixed_dictionaries({}, optional=field_values)
with_inputs = st.builds(
    lambda body, source, sentences: {**body, "inputs": {"source_sentence": source, "sentences": sentences}},
    shaped,
    st.text(max_size=40) | json_values,
    texts | json_values,
)
# TEI's inputs: a text, texts, a pair, texts and pairs (/predict), token ids (/decode)
tei_inputs = (
    st.text(max_size=60)
    | texts
    | st.lists(st.text(max_size=30), min_size=2, max_size=2)
    | st.lists(st.lists(st.text(max_size=30), min_size=1, max_size=3), max_size=4)
)
token_ids = st.lists(st.integers(-5, 40_000), max_size=8) | st.lists(
    st.lists(st.integers(-5, 40_000), max_size=5), max_size=3
)
with_tei_inputs = st.builds(
    lambda body, inputs, ids: {**body, "inputs": inputs, "ids": ids}, shaped, tei_inputs, token_ids
)
bodies = (
    shaped.map(lambda b: json.dumps(b).encode())
    | with_inputs.map(lambda b: json.dumps(b).encode())
    | with_tei_inputs.map(lambda b: json.dumps(b).encode())
    | json_values.map(lambda b: json.dumps(b).encode())
    | st.binary(max_size=300)
)


@fuzz(300)  # ten endpoints
@given(path=st.sampled_from(ENDPOINTS), body=bodies)
def test_no_body_gets_a_500_or_stops_the_server(server_and_client, path, body):
    server, client = server_and_client
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code in CLIENT_STATUSES, (response.status_code, response.text[:500])
    payload = response.json()
    if response.status_code >= 400 and path in TEI_ENDPOINTS:
        assert set(payload) == {"error", "error_type"} and isinstance(payload["error"], str), payload
    elif response.status_code >= 400:
        assert set(payload["error"]) == {"message", "type", "code"}, payload
        assert payload["error"]["type"] == CONTRACT_TYPES[response.status_code], payload
    assert server.alive()


def test_the_server_is_still_up_after_the_fuzzing(server_and_client):
    server, client = server_and_client
    assert server.alive()
    assert client.get("/health").json() == {"status": "ok"}
    assert (
        client.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": "still here"}).status_code == 200
    )
