"""SASEvaluator's API against the real Haystack SASEvaluator: constructor, checks and messages, serialisation.

Everything here runs without loading a model (Haystack's checks all come before its model load), except
the batch_size check, which Haystack makes inside sentence-transformers after loading (tested in
test_sas_parity_fixture.py).
"""

from __future__ import annotations

import inspect

import pytest
from haystack.components.evaluators import SASEvaluator as HaystackSAS
from haystack.core.errors import DeserializationError
from haystack.utils import ComponentDevice
from haystack.utils import Secret as HaystackSecret

from simkernel.components import Secret
from simkernel.components.evaluators import SASEvaluator

SIMKERNEL_TYPE = "simkernel.components.evaluators.sas_evaluator.SASEvaluator"
HAYSTACK_TYPE = "haystack.components.evaluators.sas_evaluator.SASEvaluator"


def raised(fn) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value)


def test_constructor_parameters_and_defaults_are_haystacks():
    ours = inspect.signature(SASEvaluator.__init__).parameters
    theirs = inspect.signature(HaystackSAS.__init__).parameters
    positional = [n for n, p in ours.items() if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert positional == list(theirs)  # self, model, batch_size, device, token; extensions are keyword-only
    for name in ("model", "batch_size", "device"):
        assert ours[name].default == theirs[name].default
    assert ours["token"].default.to_dict() == theirs["token"].default.to_dict()
    assert [n for n, p in ours.items() if p.kind is p.KEYWORD_ONLY] == ["precision", "threads", "cache_dir"]
    assert (
        ours["precision"].default == "fp32" and ours["threads"].default is ours["cache_dir"].default is None
    )


def test_top_level_import():
    import simkernel

    assert simkernel.SASEvaluator is SASEvaluator


@pytest.mark.parametrize(
    "ground_truths, predictions",
    [
        (["a", "b"], ["a"]),  # lengths differ
        (["a"], []),
        (["a", None], ["a"]),  # lengths are checked before anything else
        (["a", "b"], ["a", None]),  # None prediction
        ([None], [None]),
        ([], [None]),
    ],
)
def test_haystack_rejections_have_haystacks_messages(ground_truths, predictions):
    expected = raised(
        lambda: HaystackSAS().run(ground_truth_answers=ground_truths, predicted_answers=predictions)
    )
    assert raised(
        lambda: SASEvaluator().run(ground_truth_answers=ground_truths, predicted_answers=predictions)
    ) == (expected)


def test_empty_input_gives_haystacks_result_without_loading_a_model():
    evaluator = SASEvaluator(model="no/such-model")
    expected = HaystackSAS(model="no/such-model").run(ground_truth_answers=[], predicted_answers=[])
    result = evaluator.run(ground_truth_answers=[], predicted_answers=[])
    assert result == expected == {"score": 0.0, "individual_scores": [0.0]}
    assert type(result["score"]) is type(expected["score"])
    assert evaluator._similarity_model is None


@pytest.mark.parametrize(
    "ground_truths, predictions, message",
    [
        (["a", None], ["a", "b"], "ground_truth_answers[1] is NoneType"),
        (["a", 3], ["a", "b"], "ground_truth_answers[1] is int"),
        ([["a", None]], ["a"], r"ground_truth_answers[0][1] is NoneType"),
        ([[]], ["a"], "ground_truth_answers[0] is an empty list"),
        (["a", "b"], ["a", 7], "predicted_answers[1] is int"),
        ("ab", ["a", "b"], "ground_truth_answers must be a list of strings, got a single string"),
        (["a", "b"], "ab", "predicted_answers must be a list of strings, got a single string"),
    ],
)
def test_what_haystack_lets_crash_is_a_clear_value_error(ground_truths, predictions, message):
    evaluator = SASEvaluator(model="no/such-model")
    with pytest.raises(ValueError) as info:
        evaluator.run(ground_truth_answers=ground_truths, predicted_answers=predictions)
    assert message in str(info.value)
    assert evaluator._similarity_model is None  # rejected before any model load


@pytest.mark.parametrize("batch_size", [0, -3, 2.5, None, "32", True])
def test_bad_batch_size_is_rejected_at_run_time_with_haystacks_message(batch_size):
    evaluator = SASEvaluator(
        model="no/such-model", batch_size=batch_size
    )  # accepted at construction, as Haystack
    with pytest.raises(ValueError, match=r"^batch_size must be a positive integer, got .*\.$"):
        evaluator.run(ground_truth_answers=["a"], predicted_answers=["a"])


def test_to_dict_is_haystacks_form_with_simkernels_type():
    for kwargs in (
        {},
        {"model": "sentence-transformers/all-MiniLM-L6-v2", "batch_size": 8},
        {"device": ComponentDevice.from_str("cpu")},
        {"token": HaystackSecret.from_env_var("MY_TOKEN")},
        {"token": None},
    ):
        expected = HaystackSAS(**kwargs).to_dict()
        ours = SASEvaluator(**kwargs).to_dict()
        assert expected["type"] == HAYSTACK_TYPE
        assert ours == {"type": SIMKERNEL_TYPE, "init_parameters": expected["init_parameters"]}


def test_to_dict_of_plain_device_strings_and_extensions():
    data = SASEvaluator(device="cpu", precision="int8", threads=2).to_dict()
    assert data["init_parameters"]["device"] == ComponentDevice.from_str("cpu").to_dict()
    assert data["init_parameters"]["precision"] == "int8" and data["init_parameters"]["threads"] == 2
    assert SASEvaluator(device="CUDA:1").to_dict()["init_parameters"]["device"] == {
        "type": "single",
        "device": "cuda:1",
    }


def test_token_secret_cannot_be_serialised_like_haystack():
    expected = raised(lambda: HaystackSAS(token=HaystackSecret.from_token("abc")).to_dict())
    assert raised(lambda: SASEvaluator(token=Secret.from_token("abc")).to_dict()) == expected
    assert raised(lambda: SASEvaluator(token=HaystackSecret.from_token("abc")).to_dict()) == expected
    assert "abc" not in repr(Secret.from_token("abc"))


def test_plain_string_token_is_refused_at_construction():
    with pytest.raises(TypeError, match="token must be a Secret"):
        SASEvaluator(token="hf_abc")


def test_secret_resolution_matches_haystack(monkeypatch):
    monkeypatch.delenv("HF_API_TOKEN", raising=False)
    monkeypatch.setenv("HF_TOKEN", "t2")
    for strict in (False, True):
        ours = Secret.from_env_var(["HF_API_TOKEN", "HF_TOKEN"], strict=strict)
        theirs = HaystackSecret.from_env_var(["HF_API_TOKEN", "HF_TOKEN"], strict=strict)
        assert ours.resolve_value() == theirs.resolve_value() == "t2"
        assert ours.to_dict() == theirs.to_dict()
    monkeypatch.delenv("HF_TOKEN")
    assert Secret.from_env_var("HF_TOKEN", strict=False).resolve_value() is None
    expected = raised(lambda: HaystackSecret.from_env_var("HF_TOKEN").resolve_value())
    assert raised(lambda: Secret.from_env_var("HF_TOKEN").resolve_value()) == expected


@pytest.mark.parametrize("type_string", [SIMKERNEL_TYPE, HAYSTACK_TYPE])
def test_from_dict_accepts_both_type_strings_and_restores_parameters(type_string):
    saved = HaystackSAS(
        model="sentence-transformers/all-MiniLM-L6-v2",
        batch_size=16,
        device=ComponentDevice.from_str("cpu"),
        token=HaystackSecret.from_env_var(["A", "B"], strict=False),
    ).to_dict()
    saved["type"] = type_string
    evaluator = SASEvaluator.from_dict(saved)
    assert evaluator._model == "sentence-transformers/all-MiniLM-L6-v2" and evaluator._batch_size == 16
    assert evaluator._token.to_dict() == {"type": "env_var", "env_vars": ["A", "B"], "strict": False}
    assert evaluator.to_dict() == {**saved, "type": SIMKERNEL_TYPE}
    assert saved["init_parameters"]["token"] == {"type": "env_var", "env_vars": ["A", "B"], "strict": False}


def test_from_dict_errors_are_haystacks():
    expected = raised(lambda: HaystackSAS.from_dict({"init_parameters": {}}))
    assert expected == (DeserializationError, "Missing 'type' in serialization data")
    assert raised(lambda: SASEvaluator.from_dict({"init_parameters": {}})) == expected
    with pytest.raises(DeserializationError, match="can't be deserialized as 'SASEvaluator'"):
        SASEvaluator.from_dict({"type": "haystack.components.evaluators.AnswerExactMatchEvaluator"})


@pytest.mark.parametrize(
    "device", ["mps", "xpu", "tpu", "cuda:x", "cpu:1", 3, ComponentDevice.from_str("mps")]
)
def test_unsupported_devices_are_refused_at_construction(device):
    with pytest.raises(ValueError, match="device"):
        SASEvaluator(device=device)


def test_device_maps_are_refused():
    from haystack.utils.device import Device, DeviceMap

    device_map = ComponentDevice.from_multiple(DeviceMap({"layer": Device.cpu()}))
    with pytest.raises(ValueError, match="Device maps are not supported"):
        SASEvaluator(device=device_map)


def test_cuda_without_cuda_onnxruntime_is_a_clear_error():
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip(
            "this onnxruntime has CUDA; the error path cannot be reached here"
        )  # never the case in CI
    evaluator = SASEvaluator(model="sentence-transformers/all-MiniLM-L6-v2", device="cuda")
    with pytest.raises(ValueError, match="needs onnxruntime with CUDA.*onnxruntime-gpu"):
        evaluator.warm_up()
    assert evaluator._similarity_model is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"precision": "fp16"}, "precision must be one of"),
        ({"threads": 0}, "threads must be None or a positive integer"),
        ({"model": ""}, "model must be"),
        ({"model": None}, "model must be"),
    ],
)
def test_bad_extension_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SASEvaluator(**kwargs)


def test_model_path_objects_are_accepted(tmp_path):
    assert SASEvaluator(model=tmp_path).to_dict()["init_parameters"]["model"] == str(tmp_path)


def test_cuda_device_maps_to_the_cuda_execution_provider(monkeypatch):
    """Wiring only (no GPU here): with a CUDA-enabled onnxruntime, "cuda:1" loads a private encoder on
    CUDAExecutionProvider device 1 with the CPU as fallback."""
    import onnxruntime

    from simkernel import runtime

    created = []

    class FakeEncoder:
        def __init__(self, model, **kwargs):
            created.append((model, kwargs))

    monkeypatch.setattr(
        onnxruntime, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"]
    )
    monkeypatch.setattr(runtime, "TextEncoder", FakeEncoder)
    monkeypatch.setattr(runtime, "model_architectures", lambda model, token=None: ["BertModel"])
    for name in ("HF_API_TOKEN", "HF_TOKEN"):  # the default token Secret reads them: none here
        monkeypatch.delenv(name, raising=False)
    SASEvaluator(model="some/model", device="cuda:1", precision="int8", threads=3).warm_up()
    assert created == [
        (
            "some/model",
            {
                "precision": "int8",
                "threads": 3,
                "token": None,
                "cache_dir": None,
                "providers": [("CUDAExecutionProvider", {"device_id": 1}), "CPUExecutionProvider"],
            },
        )
    ]
