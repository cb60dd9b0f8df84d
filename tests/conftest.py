"""Fixtures shared by every test module: the reference data and fixtures the repo ships in tests/data, and
a recorder of the onnxruntime sessions a test makes.

tests/data/sas holds the 5,025 human-labelled SAS pairs and tests/data/fixtures the reference scores written
by the real Haystack and eval_lib (tests/data/README.md names their sources and licences).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"

# Ray keeps 127.0.0.1 as the node address only with this set before ray is first imported (tests/ray/cluster.py
# says why); a test that imports ray earlier in the same process (a documentation example, say) would
# otherwise leave every later loopback-cluster driver waiting for a GCS at the machine's outward address.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


_STACKS_FILE = None  # kept open for faulthandler, which writes to its file descriptor


def pytest_configure(config):
    """A part of scripts/run_tests.sh past its budget gets SIGUSR1 (every thread's stack, appended to the
    file ``$SIMKERNEL_TEST_STACKS`` names: pytest captures file descriptor 2 while a test runs), then SIGINT
    (pytest's summary). A shell starts background processes with SIGINT ignored, and Python then keeps it
    ignored, so the KeyboardInterrupt handler is installed here explicitly."""
    global _STACKS_FILE
    if hasattr(signal, "SIGUSR1"):
        target = os.environ.get("SIMKERNEL_TEST_STACKS")
        _STACKS_FILE = open(target, "a") if target else sys.__stderr__  # noqa: SIM115 (open for the session)
        faulthandler.register(signal.SIGUSR1, file=_STACKS_FILE, all_threads=True)
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
