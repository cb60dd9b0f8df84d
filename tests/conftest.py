"""Fixtures shared by every test module: the reference data and fixtures the repo ships in tests/data, and
a recorder of the onnxruntime sessions a test makes.

tests/data/sas holds the 5,025 human-labelled SAS pairs and tests/data/fixtures the reference scores written
by the real Haystack and eval_lib (tests/data/README.md names their sources and licences).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def haystack_fixture() -> dict:
    return json.loads((DATA / "fixtures" / "haystack_sas_minilm.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def eval_lib_fixture() -> dict:
    return json.loads(
        (DATA / "fixtures" / "eval_lib_reference_match_minilm.json").read_text(encoding="utf-8")
    )


@dataclass
class SessionRecord:
    """One onnxruntime session made during a test: its graph file, intra-op threads and the batch size
    (rows of ``input_ids``) of every ``run`` call on it."""

    graph: str
    intra_op_threads: int
    batches: list[int] = field(default_factory=list)


@pytest.fixture
def onnx_sessions(monkeypatch) -> list[SessionRecord]:
    """Every ``onnxruntime.InferenceSession`` made during the test, in order, as :class:`SessionRecord`.

    The real class does the work (a subclass that writes down its settings and runs); the process-wide
    shared models are forgotten before and after, so the code under test loads its model here and later
    tests never reuse a recording session.
    """
    import onnxruntime

    from simkernel.runtime import clear_shared_instances

    records: list[SessionRecord] = []

    class RecordingSession(onnxruntime.InferenceSession):
        def __init__(self, path, sess_options=None, *args, **kwargs):
            threads = sess_options.intra_op_num_threads if sess_options is not None else 0
            self._record = SessionRecord(Path(path).name, threads)
            records.append(self._record)
            super().__init__(path, sess_options, *args, **kwargs)

        def run(self, output_names, input_feed, run_options=None):
            self._record.batches.append(int(input_feed["input_ids"].shape[0]))
            return super().run(output_names, input_feed, run_options)

    clear_shared_instances()
    monkeypatch.setattr(onnxruntime, "InferenceSession", RecordingSession)
    yield records
    monkeypatch.undo()
    clear_shared_instances()


@pytest.fixture(scope="session")
def eval_lib_evaluate_fixture() -> dict:
    """eval_lib's evaluate() over a batch with three metrics and the results.json its dashboard wrote
    (scripts/eval_lib_reference.sh)."""
    return json.loads((DATA / "fixtures" / "eval_lib_evaluate_minilm.json").read_text(encoding="utf-8"))


@pytest.fixture
def simulated_bf16(monkeypatch):
    """precision="bf16" runnable on any CPU: the CPU check passed and OpenVINO told to compute in f32, so
    the whole bf16 path (OpenVINO session included) runs and must give fp32's numbers. Shared bf16
    instances made under it are dropped afterwards."""
    pytest.importorskip("openvino", reason="no openvino extra (pip install 'simkernel[openvino]')")
    from simkernel.runtime import shared
    from simkernel.runtime.inference import bf16, bundle

    monkeypatch.setattr(bf16, "cpu_bf16_reason", lambda: None)
    monkeypatch.setattr(bundle, "BF16_INFERENCE", "f32")
    yield
    with shared._LOCK:
        for key in [k for k in shared._INSTANCES if k[2] == "bf16"]:
            del shared._INSTANCES[key]


def bf16_unavailable_reason() -> str | None:
    """Why precision="bf16" cannot run on this machine (None where it can)."""
    from simkernel.runtime import capabilities

    return capabilities()["precisions"]["bf16"]["reason"]
