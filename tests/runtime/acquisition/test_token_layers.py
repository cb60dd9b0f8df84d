"""Token layers in the store: on-demand export from a real local checkpoint folder, the store's layout and
checks, the parity gate, the errors without the export extra, and ``simkernel models export --token-layers``.

The reference of the numbers is transformers' ``AutoModel`` in torch (``output_hidden_states``) on the same
checkpoint; tests/runtime/inference/test_token_encoder.py holds the full parity against BERTScore.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from simkernel.errors import MissingDependencyError, ModelNotFoundError
from simkernel.runtime import TokenEncoder
from simkernel.runtime.acquisition.parity import ParityError
from simkernel.runtime.acquisition.resolve import local_export_id
from simkernel.runtime.acquisition.token_layers import export_token_layers
from simkernel.runtime.store import bundles as store
from simkernel.runtime.store.layout import layer_graph_name, token_layers_id

pytestmark = pytest.mark.export

TEXTS = ["The cat sat on the mat.", "Москва — столица России.", "北京是中国的首都。", ""]


def torch_hidden_states(checkpoint, text: str) -> np.ndarray:
    """(layers + 1, tokens, dim) float64 of ``text`` from transformers' AutoModel in torch."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(checkpoint))
    model = AutoModel.from_pretrained(str(checkpoint)).eval()
    ids = tokenizer.encode(text.strip(), add_special_tokens=True, max_length=512, truncation=True)
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_hidden_states=True)
    return torch.stack(out.hidden_states)[:, 0].double().numpy()


def test_local_checkpoint_is_exported_on_demand_then_reused(reference_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))
    encoder = TokenEncoder.load(reference_checkpoint, threads=1)
    expected_folder = store.model_dir(token_layers_id(local_export_id(reference_checkpoint)))
    assert encoder.model_path == expected_folder
    assert encoder.num_layers == 6 and encoder.max_length == 512
    # its own bundle beside the model's (none made here): the model's bundles stay as they are
    assert not store.model_dir(local_export_id(reference_checkpoint)).exists()
    manifest = json.loads((expected_folder / "simkernel.json").read_text(encoding="utf-8"))
    assert manifest["kind"] == "token-layers" and manifest["num_layers"] == 6
    assert manifest["parity"]["fp32"]["max_abs_diff"] <= 1e-4
    assert {manifest["files"][layer_graph_name("fp32", i)]["layer"] for i in range(7)} == set(range(7))
    assert not (expected_folder / "model_int8.onnx").exists()  # fp32 asked: fp32 exported
    store.verify_bundle(expected_folder, check_hashes=True)
    every = encoder.encode(TEXTS, layer=None)
    for i, text in enumerate(TEXTS):
        np.testing.assert_allclose(
            every.text_vectors(i), torch_hidden_states(reference_checkpoint, text), rtol=0, atol=1e-5
        )

    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr("simkernel.runtime.acquisition.token_layers.export_token_layers", no_export)
    again = TokenEncoder.load(reference_checkpoint, threads=1)
    assert again.model_path == expected_folder
    assert np.array_equal(again.encode(TEXTS, layer=2).vectors, encoder.encode(TEXTS, layer=2).vectors)
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "other-store"))
    # a token-layers bundle folder is used as it is
    assert TokenEncoder.load(expected_folder, precision="fp32").model_path == expected_folder


def test_without_the_export_extra_the_error_names_the_install(reference_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))
    monkeypatch.setitem(sys.modules, "torch", None)  # as if the export extra were absent
    with pytest.raises(MissingDependencyError) as info:
        TokenEncoder.load(reference_checkpoint)
    message = str(info.value)
    assert "pip install -e '.[export]'" in message and "'simkernel[export]'" in message
    assert "simkernel models prepare" in message and "--token-layers" in message


def test_export_false_names_the_prepare_command(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))
    with pytest.raises(ModelNotFoundError, match=r"simkernel models prepare org/absent --token-layers"):
        TokenEncoder.load("org/absent", export=False)
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        TokenEncoder.load(tmp_path / "no-such-folder")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match="neither a token-layers bundle nor a checkpoint"):
        TokenEncoder.load(tmp_path / "empty")


def test_a_graph_missing_its_tolerance_writes_nothing(reference_checkpoint, tmp_path):
    dst = tmp_path / "token-layers"
    with pytest.raises(ParityError, match=r"fp32 token layers .* do not match transformers' hidden states"):
        export_token_layers(reference_checkpoint, dst, "fp32", tolerance={"fp32": {"max_abs_diff": 0.0}})
    assert not dst.exists() and list(tmp_path.iterdir()) == []


def test_int8_keeps_the_dense_layers_the_registry_names_for_the_model(reference_checkpoint, tmp_path):
    """all-mpnet-base-v2's int8 token layers keep ``layer.10/intermediate`` in fp32 (its registry entry); the
    same export of a 2-layer checkpoint under that id fails on the pattern, which shows that the registry's
    layers are applied without being asked; an explicit keep overrides them and lands in the manifest."""
    mpnet = "sentence-transformers/all-mpnet-base-v2"
    with pytest.raises(
        ValueError, match=r"int8_keep_fp32 \['layer.10/intermediate'\] matches no dense layer"
    ):
        export_token_layers(reference_checkpoint, tmp_path / "a", ("fp32", "int8"), model_id=mpnet)
    folder = export_token_layers(
        reference_checkpoint, tmp_path / "b", "int8", model_id=mpnet, int8_keep_fp32=("layer.1/intermediate",)
    )
    facts = json.loads((folder / "simkernel.json").read_text())["files"]["model_int8.onnx"]["quantization"]
    assert [name for name in facts["kept_fp32"] if "layer.1/intermediate" in name] == facts["kept_fp32"]
    assert len(facts["kept_fp32"]) == 1


def test_cli_export_token_layers(reference_checkpoint, tmp_path, monkeypatch, capsys):
    from simkernel.cli import main

    monkeypatch.setenv("SIMKERNEL_HOME", str(tmp_path / "store"))
    dst = tmp_path / "out"
    assert main(["models", "export", str(reference_checkpoint), str(dst), "--token-layers"]) == 0
    assert "TokenEncoder.load" in capsys.readouterr().out
    encoder = TokenEncoder.load(dst)
    assert encoder.model_path == dst and encoder.num_layers == 6
    code = main(
        ["models", "export", str(reference_checkpoint), str(tmp_path / "y"), "--token-layers"]
        + ["--int8-keep-fp32", "layer.1/intermediate"]
    )
    assert code != 0 and "--int8-keep-fp32 applies to the int8 graph" in capsys.readouterr().err
    code = main(
        ["models", "export", str(reference_checkpoint), str(tmp_path / "z"), "--token-layers"]
        + ["--precision", "int8", "--int8-keep-fp32", "layer.99/intermediate"]
    )
    err = capsys.readouterr().err
    assert code != 0 and "matches no dense layer" in err and "layer.99/intermediate" in err
    assert not (tmp_path / "z" / "simkernel.json").exists()
