"""simkernel's ComponentDevice against Haystack's, and what a component's ``_device`` holds.

The reference is Haystack's own ``haystack.utils.device.ComponentDevice``: every method simkernel's class
offers gives Haystack's answer for the same single device.
"""

from __future__ import annotations

import pytest
import torch
from haystack.utils.device import ComponentDevice as HaystackDevice
from haystack.utils.device import Device

from simkernel.components import SASEvaluator
from simkernel.components.device import ComponentDevice, component_device

DEVICES = ["cpu", "cuda", "cuda:0", "cuda:3"]


@pytest.mark.parametrize("text", DEVICES)
def test_methods_give_haystacks_answers(text):
    ours, theirs = ComponentDevice.from_str(text), HaystackDevice.from_str(text)
    assert ours.to_dict() == theirs.to_dict()
    assert ours.to_torch_str() == theirs.to_torch_str()
    assert ours.to_torch() == theirs.to_torch() == torch.device(text)
    assert ours.to_hf() == theirs.to_hf()
    assert ours.has_multiple_devices is theirs.has_multiple_devices is False
    assert ours.first_device.to_dict() == theirs.first_device.to_dict()
    for kwargs in ({}, {"device": "x"}, {"device_map": "auto"}):
        for overwrite in (False, True):
            assert ours.update_hf_kwargs(dict(kwargs), overwrite=overwrite) == theirs.update_hf_kwargs(
                dict(kwargs), overwrite=overwrite
            )
    if text != "cuda":  # Haystack's to_spacy needs a GPU index (an AssertionError without one)
        assert ours.to_spacy() == theirs.to_spacy()
    assert ComponentDevice.from_dict(theirs.to_dict()) == ours
    assert ComponentDevice.from_single(Device.from_str(text)) == ours
    assert ComponentDevice.resolve_device(ours) is ours


def test_extensions_and_refusals():
    assert ComponentDevice.from_str("cuda").to_spacy() == 0  # "cuda" is GPU 0 for onnxruntime
    assert ComponentDevice.from_str(" GPU:1 ").to_torch_str() == "cuda:1"
    assert ComponentDevice.resolve_device(None) == ComponentDevice.from_str("cpu")  # no GPU unless asked
    assert hash(ComponentDevice.from_str("cuda:0")) == hash(ComponentDevice.from_str("CUDA:0"))
    assert repr(ComponentDevice.from_str("cuda:2")) == "ComponentDevice.from_str('cuda:2')"
    for bad in ("mps", "disk", "cuda:x", "cpu:1", ""):
        with pytest.raises(ValueError, match="device"):
            ComponentDevice.from_str(bad)
    with pytest.raises(ValueError, match="Device maps are not supported"):
        ComponentDevice.from_dict({"type": "multiple", "device_map": {"a": "cpu"}})
    with pytest.raises(ValueError, match="Must either be None or ComponentDevice"):
        ComponentDevice.resolve_device("cpu")
    with pytest.raises(AttributeError, match="immutable"):
        ComponentDevice.from_str("cpu")._device = "cuda"


@pytest.mark.parametrize(
    "given", ["cuda:1", ComponentDevice.from_str("cuda:1"), {"type": "single", "device": "cuda:1"}]
)
def test_component_device_is_haystacks_when_haystack_is_imported(given):
    device = SASEvaluator(device=given)._device
    assert type(device) is HaystackDevice and device == HaystackDevice.from_str("cuda:1")
    assert component_device(given) == device


def test_a_haystack_device_given_is_kept_as_is():
    given = HaystackDevice.from_str("cpu")
    assert SASEvaluator(device=given)._device is given
    assert SASEvaluator()._device is None  # as Haystack: no device given, None


def test_from_dict_device_and_token_are_haystacks_when_haystack_is_imported(monkeypatch):
    from haystack.utils import Secret as HaystackSecret

    monkeypatch.setenv("HF_API_TOKEN", "t")
    data = SASEvaluator(device="cuda:0").to_dict()
    evaluator = SASEvaluator.from_dict(data)
    assert type(evaluator._device) is HaystackDevice and evaluator._device.to_torch_str() == "cuda:0"
    assert isinstance(evaluator._token, HaystackSecret) and evaluator._token.resolve_value() == "t"
    assert evaluator.to_dict() == data


def test_device_attribute_can_be_set_and_is_checked():
    evaluator = SASEvaluator(device="cpu")
    evaluator._device = "cuda:2"
    assert evaluator._device.to_torch_str() == "cuda:2"
    assert evaluator.to_dict()["init_parameters"]["device"] == {"type": "single", "device": "cuda:2"}
    with pytest.raises(ValueError, match="Unsupported device 'mps'"):
        evaluator._device = "mps"
    assert "device='cuda:2'" in repr(evaluator)
