"""simkernel's pytest plugin: the ``semantic`` fixture for asserting that two texts mean the same.

Registered through the ``pytest11`` entry point named ``simkernel``: installed simkernel loads it into
every pytest run, ``-p no:simkernel`` turns it off. Loading it imports nothing heavy (no numpy, no
onnxruntime); the model loads when a test first calls ``semantic``, once per process (so once per
pytest-xdist worker), through the process-wide shared encoder.

::

    def test_answer(semantic):
        assert semantic.similar(answer, "Paris is the capital of France.")
        assert semantic.similar(answer, ["Paris", "the city of Paris"], threshold=0.8)  # best match counts
        assert semantic.score(answer, "Paris") > 0.5

Settings, each as an option or an ini key (an option wins, a call's own argument wins over both):
``--semantic-model`` / ``semantic_model`` (default: sentence-transformers/all-MiniLM-L6-v2),
``--semantic-precision`` / ``semantic_precision`` (fp32 or int8; default fp32),
``--semantic-threshold`` / ``semantic_threshold`` (a number, or ``calibrated``, the default: the threshold
calibrated on human labels that the model's registry entry carries; a model without one needs a number).

At the end of the run a terminal summary line counts the comparisons, how many fell below their threshold,
the lowest passing score, how many times the model was loaded in how many processes, and how many
comparisons held non-Latin text on an English-only model (each such model also warns once per process).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from simkernel.pytest_plugin.settings import read_settings
from simkernel.pytest_plugin.tally import RECORD_KEY, Tally

if TYPE_CHECKING:  # pragma: no cover
    from simkernel.pytest_plugin.semantic import Engine

_STATE = pytest.StashKey["SemanticState"]()


class SemanticState:
    """The run's settings, its tally of comparisons, and this process's engine (made on first use)."""

    def __init__(self, config: pytest.Config) -> None:
        self.settings = read_settings(config)
        self.tally = Tally()
        self.engine: Engine | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # the teardown report carries every record of its test, also when it comes from an xdist worker
        if report.when == "teardown":
            records: list[Any] = [value for name, value in report.user_properties if name == RECORD_KEY]
            self.tally.add(records)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        if report.failed:
            records: list[Any] = [v for name, v in item.user_properties if name == RECORD_KEY]
            below = [v for v in records if not v["passed"]]
            if below:
                from simkernel.pytest_plugin.semantic import explain

                report.sections.append(("semantic similarity", "\n\n".join(explain(v) for v in below)))
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter) -> None:
        line = self.tally.summary_line()
        if line:
            terminalreporter.write_line(line)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("simkernel", "semantic assertions (simkernel)")
    group.addoption(
        "--semantic-model",
        dest="semantic_model",
        metavar="ID",
        help="model of the semantic fixture: a model id or a local folder "
        "(default: sentence-transformers/all-MiniLM-L6-v2)",
    )
    group.addoption(
        "--semantic-precision",
        dest="semantic_precision",
        metavar="fp32|int8",
        help="precision of the semantic fixture's model (default: fp32)",
    )
    group.addoption(
        "--semantic-threshold",
        dest="semantic_threshold",
        metavar="T",
        help="score a similar() result needs, a number or 'calibrated' (default: calibrated, the "
        "threshold the model's registry entry carries)",
    )
    parser.addini("semantic_model", "model of the semantic fixture (like --semantic-model)")
    parser.addini("semantic_precision", "precision of the semantic fixture's model: fp32 or int8")
    parser.addini("semantic_threshold", "threshold of semantic.similar(): a number or 'calibrated'")


def pytest_configure(config: pytest.Config) -> None:
    state = SemanticState(config)
    config.stash[_STATE] = state
    config.pluginmanager.register(state, "simkernel-semantic-state")


@pytest.fixture
def semantic(request: pytest.FixtureRequest):
    """Semantic similarity assertions: ``semantic.similar(actual, expected)`` (truthy when the score
    reaches the threshold) and ``semantic.score(a, b)`` (the cosine of the two embeddings)."""
    from simkernel.pytest_plugin.semantic import Engine, Semantic

    state = request.config.stash[_STATE]
    if state.engine is None:
        state.engine = Engine(state.settings)
    return Semantic(state.engine, request.node.user_properties.append)
