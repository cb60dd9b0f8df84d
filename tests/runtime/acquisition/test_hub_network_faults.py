"""The hub download under network faults of the real loopback hub (tests/runtime/fake_hub.py answering
with the faults of tests/fault_http.py), through huggingface_hub, nothing mocked.

Faults hit the GET of the ONNX graph (the CDN blob) or of ``config.json`` (a regular file): a reset
mid-body, an answer cut short of its Content-Length, a stall past the timeout, a truncated body, a
proxy's HTML page, 429 with Retry-After, 500 and 503. Once: the download ends with the bundle, byte for
byte the repo's files. On every attempt: a one-line ModelError naming the repo and what failed, within
the bound below. Either way the store holds the complete bundle or nothing (no model folder, no staging
folder), and the next download, with the fault gone, succeeds.

The timeout is huggingface_hub's (``HF_HUB_DOWNLOAD_TIMEOUT`` / ``HF_HUB_ETAG_TIMEOUT``, read by it at
import, so set here on its constants); a download that keeps receiving bytes is not cut off (a large
model over a slow line is no fault), so the trickle fault is not among these.
"""

from __future__ import annotations

import time

import pytest
from fake_hub import FakeHub
from runtime_helpers import make_tiny_bi_encoder

from simkernel.errors import ModelError
from simkernel.runtime.acquisition.hub import DOWNLOAD_ATTEMPTS, download_bundle
from simkernel.runtime.store import bundles as store

pytestmark = [
    pytest.mark.filterwarnings("ignore:Converting a tensor to a Python boolean"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

REPO = "org/tiny-faulty"
TIMEOUT_S = 1
FAULTS = ("reset", "short", "stall", "truncated", "malformed", "429", "500", "503")
TARGETS = {"blob": ("onnx/model.onnx", "model.onnx"), "config": ("config.json", "config.json")}
CONFIGS = ["config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"]
CONFIGS += ["modules.json", "sentence_bert_config.json", "1_Pooling/config.json"]


@pytest.fixture(scope="module")
def tiny_repo(tiny_models_root, reference_checkpoint):
    return make_tiny_bi_encoder(tiny_models_root, reference_checkpoint, "mean", True)


@pytest.fixture()
def hub(tiny_repo, tmp_path, monkeypatch):
    import huggingface_hub.constants as hf_constants

    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for name in ("HF_HUB_CACHE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hf_constants, "HF_HUB_DOWNLOAD_TIMEOUT", TIMEOUT_S)
    monkeypatch.setattr(hf_constants, "HF_HUB_ETAG_TIMEOUT", TIMEOUT_S)
    layout = {name: name for name in CONFIGS} | {"onnx/model.onnx": "model.onnx"}
    with FakeHub(FakeHub.from_folder(REPO, tiny_repo, layout)) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        yield server


def store_is_clean_or_complete(tiny_repo) -> bool:
    """The store holds the complete, verifying bundle (True) or no trace of one (False); anything else
    fails the test."""
    root = store.store_root()
    staging = list((root / "tmp").glob("stage-*")) if (root / "tmp").is_dir() else []
    assert not staging, f"staging folders left behind: {staging}"
    folder = store.model_dir(REPO)
    if not folder.exists():
        return False
    store.verify_bundle(folder, check_hashes=True)
    for name in ("model.onnx", "config.json", "tokenizer.json"):
        assert (folder / name).read_bytes() == (tiny_repo / name).read_bytes(), name
    return True


def bound_s(fault: str) -> float:
    """The longest a download may take with ``fault`` on every try: huggingface_hub's own retries
    (a stall or a cut-short body: 6 tries a second apart, each a timeout at most; 429: 6 tries backing
    off 1, 2, 4, 8, 8 s), or simkernel's (reset, size mismatch, 5xx: DOWNLOAD_ATTEMPTS tries 0.5 and
    2 s apart), plus 3 s of slack for the download itself."""
    hub_retries = {"stall": 6 * (TIMEOUT_S + 1.0), "short": 6 * 1.5, "429": 23.0 + 6 * 0.5}
    return hub_retries.get(fault, DOWNLOAD_ATTEMPTS * 0.5 + 2.5) + 3.0


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("fault", FAULTS)
def test_one_fault_then_the_bundle(hub, tiny_repo, fault, target):
    hub_path, _ = TARGETS[target]
    hub.faults[hub_path] = [fault]
    started = time.monotonic()
    folder = download_bundle(REPO)
    assert folder == store.model_dir(REPO)
    assert store_is_clean_or_complete(tiny_repo)
    assert time.monotonic() - started < bound_s(fault)


# huggingface_hub's own retries of these take 10-25 s each: once, on the blob, is enough for CI
SLOW_WHEN_PERSISTENT = {"stall", "short", "429"}
PERSISTENT = [(f, t) for f in FAULTS for t in TARGETS if t == "blob" or f not in SLOW_WHEN_PERSISTENT]


@pytest.mark.parametrize(("fault", "target"), PERSISTENT)
def test_the_fault_every_time_is_a_clear_error_and_nothing_in_the_store(hub, tiny_repo, fault, target):
    hub_path, _ = TARGETS[target]
    hub.faults[hub_path] = [fault] * 100
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        download_bundle(REPO)
    elapsed = time.monotonic() - started
    message = str(info.value)
    assert REPO in message and "\n" not in message, message
    assert elapsed < bound_s(fault), f"{fault} on {target}: {elapsed:.1f} s"
    assert not store_is_clean_or_complete(tiny_repo)
    hub.faults.clear()  # the network is back: the next download succeeds
    download_bundle(REPO)
    assert store_is_clean_or_complete(tiny_repo)
