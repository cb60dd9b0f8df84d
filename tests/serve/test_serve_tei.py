"""text-embeddings-inference's API on a real server, through the real clients: huggingface_hub's
``InferenceClient`` (feature_extraction, sentence_similarity, text_classification), Haystack's
``HuggingFaceAPITextEmbedder`` / ``HuggingFaceAPIDocumentEmbedder`` with ``api_type="text_embeddings_inference"``
and LangChain's ``HuggingFaceEndpointEmbeddings`` (in its own venv: its huggingface-hub < 2 pin). Every
vector and score equals the in-process library's, bit for bit (np.array_equal on float32); then TEI's
error shape and statuses, and /tokenize, /decode, /info against the model's own tokenizer.

all-MiniLM-L6-v2 normalises its vectors itself, so no ``normalize`` flag can change them; the flags and
``prompt_name`` are checked on a copy of it without its Normalize module and with prompts (``variant``)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import httpx
import numpy as np
import pytest
from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError
from serve_support import (
    API_KEY,
    CROSS_MODEL,
    DEFAULT_MODEL,
    ServerProcess,
    assert_queue_full_message,
    loopback_env,
)

TEXTS = [
    "Berlin is the capital of Germany.",
    "Столица Франции — Париж.",
    "法国的首都是巴黎。",
    "   ",
    "a long answer " * 200,  # past the model's 256 tokens: cut at the end, as the library cuts it
    "Berlin is the capital of Germany.",  # a repeat
]
PAIRS = [
    ("What is the capital of France?", "Paris is the capital of France."),
    ("Какая столица у Франции?", "Столица Франции — Париж."),
    ("法国的首都是哪里？", "法国的首都是巴黎。"),
    ("What is the capital of France?", "Berlin is in Germany."),
]


def hf_client(server) -> InferenceClient:
    return InferenceClient(base_url=server.url, api_key=API_KEY)


def as_float32(values) -> np.ndarray:
    """A client's numbers as float32 (the JSON numbers are float32 values written exactly)."""
    array = np.asarray(values, dtype=np.float64)
    assert np.array_equal(array.astype(np.float32).astype(np.float64), array), "not float32 values"
    return array.astype(np.float32)


# -- huggingface_hub's InferenceClient --------------------------------------------------------------------


@pytest.mark.parametrize("normalize", [True, False])
def test_feature_extraction_is_the_librarys_vectors(server, library, normalize):
    got = hf_client(server).feature_extraction(TEXTS, normalize=normalize)
    assert got.dtype == np.float32
    assert np.array_equal(got, library["text"].encode(TEXTS, normalize=normalize))
    one = hf_client(server).feature_extraction("Столица Франции — Париж.")
    assert np.array_equal(one, library["text"].encode(["Столица Франции — Париж."]))


def test_sentence_similarity_is_the_cosine_of_the_librarys_vectors(server, library):
    source, others = TEXTS[0], TEXTS[1:5]
    got = hf_client(server).sentence_similarity(source, other_sentences=others)
    vectors = library["text"].encode([source, *others])
    expected = (vectors[1:] @ vectors[0]) / (np.linalg.norm(vectors[1:], axis=1) * np.linalg.norm(vectors[0]))
    assert np.allclose(np.array(got, np.float64), expected.astype(np.float64), atol=1e-6, rtol=0)


def test_text_classification_on_the_cross_encoder(server, library):
    """The client posts {"inputs": text, "parameters": {}} to /: a served cross-encoder reads the text as
    one sequence (TEI's /predict on a string); the client keeps the top label."""
    for text in ("Paris is the capital of France.", "Столица Франции — Париж.", "法国的首都是巴黎。"):
        got = hf_client(server).text_classification(text)
        top = got[0] if isinstance(got, list) else got
        expected = library["cross"].predict_texts([text])
        assert top.label == "LABEL_0"
        assert np.float32(top.score) == expected[0]


def test_single_texts_are_one_sequence_each(library):
    """predict_texts against onnxruntime run here on the model's graph, one text at a time, with the
    model's tokenizer reading the text alone: [CLS] text [SEP], token types 0 (an independent pipeline)."""
    import onnxruntime as ort

    cross = library["cross"]
    texts = ["Paris is the capital of France.", "Столица Франции — Париж.", "法国的首都是巴黎。"]
    session = ort.InferenceSession(str(cross.model_path / "model.onnx"), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    logits = []
    for text in texts:
        encoding = cross._tokenizer._tokenizer.encode(text.lower() if cross.config.do_lower_case else text)
        assert encoding.special_tokens_mask[0] == encoding.special_tokens_mask[-1] == 1
        assert sum(encoding.special_tokens_mask) == 2 and set(encoding.type_ids) == {0}
        feed = {
            "input_ids": np.array([encoding.ids], np.int64),
            "attention_mask": np.ones((1, len(encoding.ids)), np.int64),
            "token_type_ids": np.zeros((1, len(encoding.ids)), np.int64),
        }
        logits.append(session.run(None, {k: v for k, v in feed.items() if k in names})[0][0, 0])
    raw = np.array(logits, np.float64)
    assert np.allclose(cross.predict_texts(texts, apply_activation=False), raw, atol=1e-5, rtol=0)
    assert np.allclose(cross.predict_texts(texts), 1 / (1 + np.exp(-raw)), atol=1e-6, rtol=0)
    # and not the pair's reading of the same text with an empty second segment
    assert not np.array_equal(cross.predict_texts(texts[:1]), cross.predict([(texts[0], "")]))


@pytest.mark.parametrize("raw_scores", [False, True])
def test_predict_pairs_and_texts_are_the_librarys_scores(client, library, raw_scores):
    body = {"inputs": [list(p) for p in PAIRS] + [["Paris."]], "raw_scores": raw_scores}
    got = client.post("/predict", json=body)
    assert got.status_code == 200, got.text
    rows = got.json()
    expected = library["cross"].predict(PAIRS, apply_activation=not raw_scores)
    alone = library["cross"].predict_texts(["Paris."], apply_activation=not raw_scores)
    assert [len(r) for r in rows] == [1] * (len(PAIRS) + 1)
    assert all(r[0]["label"] == "LABEL_0" for r in rows)
    assert np.array_equal(as_float32([r[0]["score"] for r in rows]), np.append(expected, alone))
    single = client.post("/predict", json={"inputs": list(PAIRS[1]), "raw_scores": raw_scores}).json()
    assert np.float32(single[0]["score"]) == expected[1]


def test_root_dispatches_by_the_bodys_shape(client, library):
    embedded = client.post("/", json={"inputs": TEXTS[:2]}).json()
    assert np.array_equal(as_float32(embedded), library["text"].encode(TEXTS[:2]))
    pairs = client.post("/", json={"inputs": [list(PAIRS[0])]}).json()
    assert np.float32(pairs[0][0]["score"]) == library["cross"].predict([PAIRS[0]])[0]
    candidates = [PAIRS[3][1], PAIRS[0][1], "Lyon."]
    ranked = client.post("/", json={"query": PAIRS[0][0], "texts": candidates}).json()
    scores = library["cross"].predict([(PAIRS[0][0], t) for t in candidates])
    assert [r["index"] for r in ranked] == sorted(range(3), key=lambda i: -scores[i])
    assert np.array_equal(as_float32([r["score"] for r in ranked]), np.sort(scores)[::-1])
    similar = client.post("/", json={"inputs": {"source_sentence": "a", "sentences": ["b", "c"]}}).json()
    vectors = library["text"].encode(["a", "b", "c"])
    assert np.allclose(similar, vectors[1:] @ vectors[0], atol=1e-6, rtol=0)
    # a cross-encoder named by the body reads strings as texts to classify
    named = client.post("/", json={"inputs": "Paris.", "model": CROSS_MODEL}).json()
    assert np.float32(named[0]["score"]) == library["cross"].predict_texts(["Paris."])[0]


# -- Haystack's HuggingFaceAPI embedders -------------------------------------------------------------------


def haystack_embedders(server):
    from haystack.utils import Secret

    try:
        from haystack_integrations.components.embedders.huggingface_api import (
            HuggingFaceAPIDocumentEmbedder,
            HuggingFaceAPITextEmbedder,
        )
    except ImportError:
        pytest.fail("huggingface-api-haystack is missing: pip install -e '.[test]' (make setup installs it)")

    settings = {
        "api_type": "text_embeddings_inference",
        "api_params": {"url": server.url},
        "token": Secret.from_token(API_KEY),
    }
    return HuggingFaceAPITextEmbedder(**settings), HuggingFaceAPIDocumentEmbedder(**settings, batch_size=4)


def test_haystack_text_and_document_embedders(server, library):
    from haystack import Document

    text_embedder, document_embedder = haystack_embedders(server)
    for text in TEXTS[:3]:
        got = text_embedder.run(text=text)["embedding"]
        # Haystack's default is normalize=False: the model's own pipeline output
        assert np.array_equal(as_float32(got), library["text"].encode([text], normalize=False)[0])
    documents = [Document(content=t) for t in TEXTS]
    embedded = document_embedder.run(documents=documents)["documents"]
    got = as_float32([d.embedding for d in embedded])
    assert np.array_equal(got, library["text"].encode(TEXTS, normalize=False))


# -- LangChain's HuggingFaceEndpointEmbeddings, in its own venv ----------------------------------------------


def test_langchain_endpoint_embeddings(server, library, tmp_path):
    from tests.integrations.tool_venv import run_checks

    texts = [t for t in TEXTS if "\n" not in t]  # LangChain replaces newlines with spaces before sending
    (tmp_path / "texts.json").write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
    result = run_checks(
        "langchain-hf",
        str(Path(__file__).with_name("langchain_hf_checks.py")),
        server.url,
        str(tmp_path / "texts.json"),
        cwd=tmp_path,
        # huggingface_hub's offline mode refuses every URL, the loopback server's too; the only one used here
        env={"HUGGINGFACEHUB_API_TOKEN": API_KEY, "HF_HUB_OFFLINE": "0"},
    )
    assert np.array_equal(as_float32(result["documents"]), library["text"].encode(texts))
    assert np.array_equal(as_float32(result["query"]), library["text"].encode([texts[1]])[0])
    assert np.array_equal(as_float32(result["async_documents"]), library["text"].encode(texts))


# -- /tokenize, /decode, /info -------------------------------------------------------------------------------


def test_tokenize_is_the_models_tokenizer_with_byte_offsets(client, library):
    text = "Столица 法国 is Paris"
    tokens = client.post("/tokenize", json={"inputs": text}).json()[0]
    assert not library["text"].config.do_lower_case  # the text as sent is the text the model reads
    encoding = library["text"]._tokenizer._tokenizer.encode(text, add_special_tokens=True)
    assert [t["id"] for t in tokens] == encoding.ids
    raw = text.encode("utf-8")
    for token in tokens:
        if token["special"]:
            assert token["start"] is None and token["text"] in ("[CLS]", "[SEP]")
        else:
            assert raw[token["start"] : token["stop"]].decode("utf-8") == token["text"]
    bare = client.post("/tokenize", json={"inputs": [text, "b"], "add_special_tokens": False}).json()
    assert [t["id"] for t in bare[0]] == encoding.ids[1:-1] and len(bare) == 2
    long = client.post("/tokenize", json={"inputs": "word " * 400}).json()[0]
    assert len(long) == 402  # /tokenize shows the whole text, as TEI does


def test_decode_is_the_tokenizers(client, library):
    ids = library["text"]._tokenizer.encode(["Paris is the capital."])[0].ids
    assert client.post("/decode", json={"ids": ids}).json() == ["paris is the capital."]
    both = client.post("/decode", json={"ids": [ids, ids], "skip_special_tokens": False}).json()
    assert both == ["[CLS] paris is the capital. [SEP]"] * 2


def test_info_describes_each_served_model(client, library):
    info = client.get("/info").json()
    assert info["model_id"] == DEFAULT_MODEL
    assert info["model_type"] == {"embedding": {"pooling": "mean"}}
    assert info["max_input_length"] == library["text"].max_seq_length == 256
    assert info["model_dtype"] == "float32" and info["auto_truncate"] is True
    assert info["max_client_batch_size"] == 2048
    assert isinstance(info["max_batch_tokens"], int) and isinstance(info["version"], str)
    cross = client.get("/info", params={"model": CROSS_MODEL}).json()
    assert cross["model_type"] == {"reranker": {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}}
    assert cross["max_input_length"] == library["cross"].max_seq_length


def test_the_hf_client_reads_info(server):
    client = InferenceClient(model=server.url, provider="hf-inference", api_key=API_KEY)
    assert client.get_endpoint_info()["model_id"] == DEFAULT_MODEL


# -- TEI's errors --------------------------------------------------------------------------------------------


def tei_error_of(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()
    assert set(error) == {"error", "error_type"}, error
    assert isinstance(error["error"], str) and len(error["error"]) > 20
    return error


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/embed", {"inputs": ""}),
        ("/embed", {"inputs": []}),
        ("/embed", {"inputs": ["a", ""]}),
        ("/", {"inputs": ""}),
        ("/predict", {"inputs": []}),
        ("/predict", {"inputs": ""}),
        ("/tokenize", {"inputs": []}),
        ("/decode", {"ids": []}),
        ("/similarity", {"inputs": {"source_sentence": "a", "sentences": []}}),
        ("/similarity", {"inputs": {"source_sentence": "", "sentences": ["a"]}}),
        ("/similarity", {"inputs": {"source_sentence": "a", "sentences": ["b", ""]}}),
        ("/", {"inputs": {"source_sentence": "", "sentences": ["a"]}}),
        ("/rerank", {"query": "q", "texts": []}),
        ("/rerank", {"query": "", "texts": ["a", ""]}),
        ("/", {"query": "", "texts": [""]}),
    ],
)
def test_empty_inputs_are_teis_400_empty(client, path, body):
    assert tei_error_of(client.post(path, json=body), 400)["error_type"] == "empty"


def test_a_pair_with_one_empty_text_is_scored_as_tei_scores_it(client, library):
    """TEI counts a pair empty only when both its texts are: an empty query with a text is ranked."""
    ranked = client.post("/rerank", json={"query": "", "texts": ["Paris.", "Berlin."]})
    assert ranked.status_code == 200, ranked.text
    scores = library["cross"].predict([("", "Paris."), ("", "Berlin.")])
    by_index = {r["index"]: r["score"] for r in ranked.json()}
    assert np.array_equal(as_float32([by_index[0], by_index[1]]), scores)


@pytest.mark.parametrize("body", [{"input": ""}, {"input": []}, {"input": ["a", ""]}])
def test_empty_inputs_are_openais_400_on_v1(client, body):
    response = client.post("/v1/embeddings", json={"model": DEFAULT_MODEL, **body})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "code"} and error["type"] == "invalid_request_error"
    assert "empty" in error["message"]


@pytest.mark.parametrize(
    ("path", "body", "named"),
    [
        ("/embed", {"inputs": "x", "prompt_name": "query"}, "no prompts"),
        ("/embed", {"inputs": 7}, "inputs"),
        ("/embed", {"inputs": [1, 2]}, "token ids"),
        ("/embed", {"inputs": "x", "normalize": "yes"}, "normalize"),
        ("/embed", {"inputs": "x", "dimensions": 64}, "dimensions"),
        ("/embed", {"inputs": "word " * 400, "truncate": False}, "max_input_length"),
        ("/embed", {"inputs": "word " * 400, "truncation_direction": "left"}, "left"),
        ("/embed", {"inputs": "x", "truncation_direction": "up"}, "truncation_direction"),
        ("/predict", {"inputs": ["a", "b", "c"]}, "more than two"),
        ("/predict", {"inputs": [["a", "b", "c"]]}, "inputs[0]"),
        ("/predict", {"inputs": "x", "raw_scores": 1}, "raw_scores"),
        # a truncate that is not a boolean is refused, whatever the inputs' length
        ("/embed", {"inputs": "x", "truncate": "false"}, "'truncate' must be true or false"),
        ("/embed", {"inputs": "x", "truncate": 0}, "'truncate' must be true or false"),
        ("/", {"inputs": "x", "truncate": "no"}, "'truncate' must be true or false"),
        ("/predict", {"inputs": "x", "truncate": "no"}, "'truncate' must be true or false"),
        ("/rerank", {"query": "q", "texts": ["a"], "truncate": 1}, "'truncate' must be true or false"),
        ("/predict", {"inputs": "x", "truncation_direction": 3}, "truncation_direction"),
        # /similarity's parameters, as TEI passes them to its embed
        (
            "/similarity",
            {"inputs": {"source_sentence": "a", "sentences": ["b"]}, "parameters": {"prompt_name": "query"}},
            "'parameters.prompt_name' is 'query', but",
        ),
        (
            "/similarity",
            {
                "inputs": {"source_sentence": "word " * 400, "sentences": ["b"]},
                "parameters": {"truncate": False},
            },
            "max_input_length",
        ),
        (
            "/similarity",
            {
                "inputs": {"source_sentence": "a", "sentences": ["word " * 400]},
                "parameters": {"truncation_direction": "left"},
            },
            "'parameters.truncation_direction' \"left\"",
        ),
        (
            "/similarity",
            {"inputs": {"source_sentence": "a", "sentences": ["b"]}, "parameters": {"truncate": "false"}},
            "'parameters.truncate' must be true or false",
        ),
        (
            "/similarity",
            {"inputs": {"source_sentence": "a", "sentences": ["b"]}, "parameters": 5},
            "'parameters'",
        ),
        ("/decode", {"ids": [10**9]}, "token id"),
        ("/decode", {"ids": "abc"}, "ids"),
        ("/embed", [1, 2], "JSON object"),
        ("/embed", {}, "missing"),
    ],
)
def test_wrong_values_are_teis_422_validation(client, path, body, named):
    error = tei_error_of(client.post(path, content=json.dumps(body).encode()), 422)
    assert error["error_type"] == "validation"
    assert named in error["error"], error


def test_short_inputs_ignore_the_truncation_settings(client, library):
    """``truncate: false`` and ``"left"`` refuse only inputs that would be cut."""
    vectors = library["text"].encode(TEXTS[:3])
    for extra in ({"truncate": False}, {"truncation_direction": "left"}):
        got = client.post("/embed", json={"inputs": TEXTS[:3], **extra})
        assert np.array_equal(as_float32(got.json()), vectors)
        inputs = {"source_sentence": TEXTS[0], "sentences": TEXTS[1:3]}
        similar = client.post("/similarity", json={"inputs": inputs, "parameters": extra})
        assert similar.json() == client.post("/similarity", json={"inputs": inputs}).json()


def test_bad_json_and_unknown_paths(client, server):
    error = tei_error_of(client.post("/embed", content=b"{bad"), 400)
    assert "JSON" in error["error"] and error["error_type"] == "validation"
    tei_error_of(client.get("/embed"), 405)
    tei_error_of(client.post("/embed", json={"inputs": "x", "model": "no/such-model"}), 404)
    bare = httpx.Client(base_url=server.url, trust_env=False)
    assert tei_error_of(bare.post("/embed", json={"inputs": "x"}), 401)["error_type"] == "unauthorized"
    tei_error_of(bare.post("/", json={"inputs": "x"}), 401)
    assert bare.get("/").json() == {"status": "ok"}  # TEI's health probe needs no key


def test_limits_on_a_small_server():
    """More inputs than max_client_batch_size: TEI's 422; a body past the byte limit: 413; the HF client
    raises its HTTP error with the server's message."""
    process = ServerProcess("--model", DEFAULT_MODEL, "--max-request-bytes", "20000", "--max-inputs", "4")
    try:
        http = httpx.Client(base_url=process.url, trust_env=False)
        for path, body in (
            ("/embed", {"inputs": ["a"] * 5}),
            ("/tokenize", {"inputs": ["a"] * 5}),
            ("/decode", {"ids": [[101]] * 5}),
            ("/similarity", {"inputs": {"source_sentence": "a", "sentences": ["b"] * 4}}),
        ):
            error = tei_error_of(http.post(path, json=body), 422)
            assert "limit of" in error["error"] and error["error_type"] == "validation", path
        error = tei_error_of(http.post("/embed", json={"inputs": "x" * 30_000}), 413)
        assert "20,000 bytes" in error["error"]
        assert http.get("/info").json()["max_client_batch_size"] == 4
        with pytest.raises(HfHubHTTPError, match="limit of 4"):
            InferenceClient(base_url=process.url).feature_extraction(["a"] * 5)
        with pytest.raises(HfHubHTTPError, match="empty string"):
            InferenceClient(base_url=process.url).feature_extraction("")
        # no cross-encoder served: TEI's answer to /predict on an embedding model, 424 "backend"
        error = tei_error_of(http.post("/predict", json={"inputs": "x"}), 424)
        assert "cross-encoder" in error["error"] and error["error_type"] == "backend"
    finally:
        status, stderr = process.stop()
    assert status == 0, stderr


def test_a_full_queue_is_teis_429_overloaded():

    import httpx

    process = ServerProcess("--model", DEFAULT_MODEL, "--max-queue", "1", env=loopback_env())
    texts = [f"answer number {i} to a question about the weather in spring" for i in range(48)]

    async def burst() -> list:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(
            base_url=process.url, trust_env=False, limits=limits, timeout=120
        ) as http:
            calls = [http.post("/embed", json={"inputs": [f"{i} {t}" for t in texts]}) for i in range(64)]
            return await asyncio.gather(*calls)

    try:
        responses = asyncio.run(burst())
    finally:
        status, stderr = process.stop()
    assert status == 0, stderr
    assert sorted({r.status_code for r in responses}) == [200, 429]
    for response in responses:
        if response.status_code == 429:
            assert response.headers["retry-after"] == "1"
            error = tei_error_of(response, 429)
            assert error["error_type"] == "overloaded"
            assert_queue_full_message(error["error"], stderr)


@pytest.fixture(scope="module")
def variant(tmp_path_factory):
    """A server of a copy of the default model without its Normalize module (its vectors are not unit
    length) and with sentence-transformers prompts, and the library's TextEncoder of that copy."""
    from simkernel.runtime import TextEncoder
    from simkernel.runtime.acquisition.resolve import resolve_model
    from simkernel.runtime.store.manifest import STAMP, read_manifest, write_manifest

    folder = tmp_path_factory.mktemp("variant") / "minilm-with-prompts-unnormalised"
    shutil.copytree(resolve_model(DEFAULT_MODEL), folder, ignore=shutil.ignore_patterns("model_int8*", STAMP))
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    modules = [m for m in modules if not m["type"].endswith("Normalize")]
    (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    config = folder / "config_sentence_transformers.json"
    settings = json.loads(config.read_text(encoding="utf-8"))
    settings["prompts"] = {"query": "query: ", "запрос": "запрос: "}
    config.write_text(json.dumps(settings, ensure_ascii=False), encoding="utf-8")
    write_manifest(folder, read_manifest(folder))  # the copy's files, measured again
    encoder = TextEncoder(str(folder))
    assert not encoder.config.normalize
    process = ServerProcess("--model", str(folder))
    try:
        yield process, encoder
    finally:
        status, stderr = process.stop()
        assert status == 0, stderr


@pytest.mark.parametrize("normalize", [True, False])
def test_the_normalize_flag_on_a_model_that_does_not_normalise(variant, normalize):
    process, encoder = variant
    got = InferenceClient(base_url=process.url).feature_extraction(TEXTS, normalize=normalize)
    expected = encoder.encode(TEXTS, normalize=normalize)
    assert np.array_equal(got, expected)
    norms = np.linalg.norm(expected.astype(np.float64), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-6) == normalize  # the flag changes the vectors here
    default = httpx.post(process.url + "/embed", json={"inputs": TEXTS}, trust_env=False).json()
    assert np.array_equal(as_float32(default), encoder.encode(TEXTS, normalize=True))  # TEI's default


def test_haystack_sends_normalize_false(variant):
    """Haystack's TEI embedders default to normalize=False: the model's own (here not unit) vectors."""
    process, encoder = variant
    text_embedder, document_embedder = haystack_embedders(process)
    got = text_embedder.run(text=TEXTS[1])["embedding"]
    assert np.array_equal(as_float32(got), encoder.encode([TEXTS[1]], normalize=False)[0])
    assert abs(np.linalg.norm(np.array(got)) - 1.0) > 1e-3


def test_prompts_of_a_model_that_has_them(variant):
    """prompt_name puts the prompt's text before each input (TEI's rule); an unknown name is refused
    naming the prompts."""
    process, encoder = variant
    http = httpx.Client(base_url=process.url, trust_env=False, timeout=60)
    got = http.post("/embed", json={"inputs": TEXTS[:3], "prompt_name": "запрос"})
    assert got.status_code == 200, got.text
    assert np.array_equal(as_float32(got.json()), encoder.encode(["запрос: " + t for t in TEXTS[:3]]))
    via_client = InferenceClient(base_url=process.url).feature_extraction(TEXTS[0], prompt_name="query")
    assert np.array_equal(via_client, encoder.encode(["query: " + TEXTS[0]]))
    tokens = http.post("/tokenize", json={"inputs": "Paris", "prompt_name": "query"}).json()[0]
    assert [t["text"] for t in tokens if not t["special"]][:2] == ["query", ":"]
    error = tei_error_of(http.post("/embed", json={"inputs": "x", "prompt_name": "passage"}), 422)
    assert "query" in error["error"] and "запрос" in error["error"]


def test_similarity_reads_teis_parameters(variant):
    """/similarity's ``parameters.prompt_name`` puts the prompt before the source and every sentence, as
    TEI's embed does for it: the cosines of the library's vectors of the prompted texts."""
    process, encoder = variant
    source, sentences = TEXTS[0], TEXTS[1:4]
    body = {
        "inputs": {"source_sentence": source, "sentences": sentences},
        "parameters": {"prompt_name": "query"},
    }
    got = np.array(httpx.post(process.url + "/similarity", json=body, trust_env=False).json())
    vectors = encoder.encode(["query: " + t for t in (source, *sentences)]).astype(np.float64)
    plain = encoder.encode([source, *sentences]).astype(np.float64)

    def cosines(rows):
        return rows[1:] @ rows[0] / (np.linalg.norm(rows[1:], axis=1) * np.linalg.norm(rows[0]))

    assert np.allclose(got, cosines(vectors), atol=1e-6, rtol=0)
    assert np.abs(got - cosines(plain)).max() > 1e-3  # the prompt changed them
    error = tei_error_of(
        httpx.post(
            process.url + "/similarity",
            json={**body, "parameters": {"prompt_name": "passage"}},
            trust_env=False,
        ),
        422,
    )
    assert "'parameters.prompt_name'" in error["error"] and "query" in error["error"]
