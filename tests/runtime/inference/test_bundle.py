"""Which ONNX file serves a precision, and the load-time optimisation level read from the manifest."""

from __future__ import annotations

import json

import pytest

from simkernel.errors import ModelError
from simkernel.runtime.inference.bundle import is_bundle, onnx_file, session_optimization


def test_default_bundle_is_pre_optimised(default_bundle):
    manifest = json.loads((default_bundle / "simkernel.json").read_text())
    level = manifest["files"]["model.onnx"].get("graph_optimization")
    assert session_optimization(default_bundle, "model.onnx") == ("basic" if level else "all")
    assert onnx_file(default_bundle, "fp32") == default_bundle / "model.onnx"
    assert is_bundle(default_bundle)


@pytest.mark.parametrize(
    ("entry", "level"),
    [
        ({}, "all"),
        ({"graph_optimization": "extended"}, "basic"),
        ({"graph_optimization": "all"}, "basic"),
        ({"optimized": True}, "basic"),
        ({"graph_optimization": None}, "all"),
    ],
)
def test_optimisation_level_from_manifest(tmp_path, entry, level):
    (tmp_path / "simkernel.json").write_text(json.dumps({"files": {"model.onnx": entry}}))
    assert session_optimization(tmp_path, "model.onnx") == level


def test_no_manifest_means_full_optimisation(tmp_path):
    assert session_optimization(tmp_path, "model.onnx") == "all"


def test_precision_files(tmp_path):
    with pytest.raises(ValueError, match="precision"):
        onnx_file(tmp_path, "bf16")
    with pytest.raises(ModelError, match="model.onnx is missing"):
        onnx_file(tmp_path, "fp32")
    (tmp_path / "model_int8.onnx").write_bytes(b"x")
    assert onnx_file(tmp_path, "int8") == tmp_path / "model_int8.onnx"


@pytest.mark.parametrize(("precision", "graph"), [("fp32", "model.onnx"), ("int8", "model_int8.onnx")])
def test_weights_are_external_data_and_a_missing_data_file_is_named(
    tmp_path, default_bundle, precision, graph
):
    """The export stores weights in ``<graph>_data`` (memory-mapped at load); without that file the error
    names it and says how to get the model back."""
    import shutil

    from simkernel.runtime import TextEncoder

    manifest = json.loads((default_bundle / "simkernel.json").read_text())
    assert manifest["files"][graph]["external_data"] == graph + "_data"
    assert (default_bundle / (graph + "_data")).stat().st_size > 10 * (default_bundle / graph).stat().st_size
    copy = tmp_path / "bundle"
    shutil.copytree(default_bundle, copy)
    TextEncoder(copy, precision=precision, threads=1).encode(["works with its data file"])
    (copy / (graph + "_data")).unlink()
    with pytest.raises(ModelError, match=graph + "_data") as info:
        TextEncoder(copy, precision=precision, threads=1)
    assert "re-export" in str(info.value) or "prepare" in str(info.value)
