"""Fuzzed request bodies against a real server: whatever a client sends, the answer is a 2xx or a 4xx
in the error contract's shape, never a 500, and the server stays up (hypothesis, bounded examples)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from serve_support import CROSS_MODEL, DEFAULT_MODEL
from tests.fuzz_settings import fuzz

ENDPOINTS = ["/v1/embeddings", "/similarity", "/rerank", "/v1/sas", "/v1/reference-match"]
FIELDS = [
    "input", "model", "encoding_format", "dimensions", "user", "inputs", "source_sentence", "sentences",
    "query", "texts", "raw_scores", "return_text", "truncate", "ground_truth_answers", "predicted_answers",
    "output", "references", "aggregation", "threshold",
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
bodies = (
    shaped.map(lambda b: json.dumps(b).encode())
    | with_inputs.map(lambda b: json.dumps(b).encode())
    | json_values.map(lambda b: json.dumps(b).encode())
    | st.binary(max_size=300)
)


@fuzz(200)
@given(path=st.sampled_from(ENDPOINTS), body=bodies)
def test_no_body_gets_a_500_or_stops_the_server(server_and_client, path, body):
    server, client = server_and_client
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code in CLIENT_STATUSES, (response.status_code, response.text[:500])
    payload = response.json()
    if response.status_code >= 400:
        assert set(payload["error"]) == {"message", "type", "code"}, payload
    assert server.alive()


def test_the_server_is_still_up_after_the_fuzzing(server_and_client):
    server, client = server_and_client
    assert server.alive()
    assert client.get("/health").json() == {"status": "ok"}
    assert (
        client.post("/v1/embeddings", json={"model": DEFAULT_MODEL, "input": "still here"}).status_code == 200
    )
