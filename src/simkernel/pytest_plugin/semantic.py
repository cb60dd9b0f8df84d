"""What the ``semantic`` fixture gives a test: :class:`Semantic` (``similar`` and ``score``) and the
:class:`Similarity` result whose repr is the failure message of ``assert semantic.similar(...)``.

Scores are the cosine of the two texts' embeddings (float32, as ``SASEvaluator`` scores a pair) from the
process-wide shared :class:`~simkernel.runtime.TextEncoder`; with several expected texts the best (highest)
score counts. Each comparison is recorded in the test's ``user_properties`` (texts shortened to 200
characters), which is how the terminal summary counts them, across pytest-xdist workers too.

Non-Latin text (Russian, Chinese, ...) on an English-only model of the registry (the default,
all-MiniLM-L6-v2) gets scores that say little about meaning (unrelated Russian sentences pass the
calibrated threshold): the first such comparison of each model in a process warns (a ``UserWarning``, in
pytest's warnings summary), and every such comparison carries the note, which the failure report and the
terminal summary line show (:mod:`simkernel.scoring.notes` words it, as for ``simkernel score``).

Why it embeds through the runtime, not the registry's ``sas`` scorer: a comparison names the expected
text that scored best (``Similarity.best``) and the scorer returns only the best score; and the fixture
compares with a bi-encoder's cosines only, where ``sas`` would switch to a cross-encoder's scores.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from simkernel.calibration.thresholds import CALIBRATED, Threshold, calibrated_threshold, resolve_threshold
from simkernel.pytest_plugin.settings import PRECISIONS, Settings
from simkernel.pytest_plugin.tally import RECORD_KEY
from simkernel.scoring.notes import english_only_warning, non_latin_rows

REPR_TEXT_CHARS = 40  # each text in the one-line repr (pytest shortens reprs past 240 characters)
RECORD_TEXT_CHARS = 200
MODEL_OPTION = "--semantic-model"  # how a user of the fixture picks another model (named in the notes)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "\u2026"


class Engine:
    """This process's encoders, one per (model, precision), loaded on first use; counts the loads."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.loads = 0
        self.load_s = 0.0
        self._encoders: dict[tuple[str, str], object] = {}
        self._warned: set[str] = set()  # models whose English-only warning this process gave

    def cosines(self, actual: str, expected: list[str], model: str, precision: str) -> np.ndarray:
        """float32 cosine of ``actual`` with each of ``expected``."""
        from simkernel.kernels import cosine_matrix

        embeddings = self._encoder(model, precision).encode([actual, *expected])
        return cosine_matrix(embeddings[:1], embeddings[1:])[0]

    def _encoder(self, model: str, precision: str):
        encoder = self._encoders.get((model, precision))
        if encoder is None:
            from simkernel.runtime import get_text_encoder

            started = time.perf_counter()
            encoder = get_text_encoder(model, precision=precision)
            self.load_s += time.perf_counter() - started
            self.loads += 1
            self._encoders[(model, precision)] = encoder
        return encoder

    def language_note(self, actual: str, expected: list[str], model: str) -> str | None:
        """The note when the texts hold non-Latin text and ``model`` is English-only, else None; the first
        such comparison of each model in this process also warns (pointing at the test's line)."""
        if not non_latin_rows([actual], [expected]):
            return None
        note = english_only_warning(model, "the semantic fixture compared", MODEL_OPTION)
        if note is not None and model not in self._warned:
            self._warned.add(model)
            warnings.warn(
                note, UserWarning, stacklevel=3
            )  # language_note <- similar() or score() <- the test
        return note

    def threshold(self, given: object, model: str, precision: str) -> Threshold:
        """A call's ``threshold=`` if given, else the run's setting; ``"calibrated"`` from the registry."""
        if given is not None:
            return resolve_threshold(given, model, precision, "threshold= argument")
        settings = self.settings
        if settings.threshold == CALIBRATED:
            try:
                return calibrated_threshold(model, precision)
            except ValueError as exc:
                raise ValueError(
                    f"{exc}; for the semantic fixture: threshold=... in the call, --semantic-threshold or the ini key semantic_threshold"
                ) from None
        return Threshold(float(settings.threshold), settings.threshold_source)


@dataclass(frozen=True)
class Similarity:
    """One comparison: truthy when ``score >= threshold``. ``best`` is the expected text that scored
    highest; ``threshold_source`` says where the threshold came from; ``note`` is the English-only note
    when the texts hold non-Latin text and the model is English-only, else None."""

    score: float
    threshold: float
    threshold_source: str
    model: str
    precision: str
    actual: str
    expected: tuple[str, ...]
    best: str
    note: str | None = None

    @property
    def passed(self) -> bool:
        return self.score >= self.threshold

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        relation = ">=" if self.passed else "<"
        source = self.threshold_source.split(" for ", 1)[0].split(" on ", 1)[0]
        others = f" (best of {len(self.expected)})" if len(self.expected) > 1 else ""
        return (
            f"<similar: score {self.score:.4f} {relation} threshold {self.threshold:.4f} ({source}), "
            f"model {self.model} {self.precision}; actual {shorten(self.actual, REPR_TEXT_CHARS)!r}, "
            f"expected{others} {shorten(self.best, REPR_TEXT_CHARS)!r}>"
        )

    def record(self) -> dict:
        """The comparison as plain data (what travels in the test report)."""
        return {
            "score": self.score,
            "threshold": self.threshold,
            "source": self.threshold_source,
            "model": self.model,
            "precision": self.precision,
            "actual": shorten(self.actual, RECORD_TEXT_CHARS),
            "expected": [shorten(t, RECORD_TEXT_CHARS) for t in self.expected],
            "best": shorten(self.best, RECORD_TEXT_CHARS),
            "passed": self.passed,
            "note": self.note,
        }


def explain(record: dict) -> str:
    """A comparison in full, for the test's "semantic similarity" report section."""
    verdict = "reaches" if record["passed"] else "is below"
    lines = [
        f"score {record['score']:.4f} {verdict} the threshold {record['threshold']:.4f}",
        f"  threshold from  {record['source']}",
        f"  model           {record['model']} ({record['precision']})",
        f"  actual          {record['actual']!r}",
    ]
    if len(record["expected"]) == 1:
        lines.append(f"  expected        {record['expected'][0]!r}")
    else:
        lines.append(f"  expected        best of {len(record['expected'])}: {record['best']!r}")
        lines.extend(f"                  {text!r}" for text in record["expected"])
    if record.get("note"):
        lines.append(f"  note            {record['note']}")
    return "\n".join(lines)


class Semantic:
    """The ``semantic`` fixture: ``similar(actual, expected)`` and ``score(a, b)``."""

    def __init__(self, engine: Engine, record: Callable[[tuple[str, dict]], None]) -> None:
        self._engine = engine
        self._record = record

    def __repr__(self) -> str:
        settings = self._engine.settings
        return f"<semantic fixture: model {settings.model} {settings.precision}>"

    def similar(
        self,
        actual: str,
        expected: str | Sequence[str],
        threshold: float | str | None = None,
        model: str | None = None,
        precision: str | None = None,
    ) -> Similarity:
        """Whether ``actual`` means the same as ``expected`` (a text, or a list whose best match counts):
        a :class:`Similarity`, truthy when the score reaches ``threshold`` (a number or ``"calibrated"``;
        default: the run's ``--semantic-threshold``, else the model's calibrated threshold)."""
        model, precision = self._model(model, precision)
        texts = _expected_texts(expected)
        _check_text(actual, "actual")
        limit = self._engine.threshold(threshold, model, precision)
        note = self._engine.language_note(actual, texts, model)
        cosines = self._engine.cosines(actual, texts, model, precision)
        best = int(np.argmax(cosines))
        result = Similarity(
            score=float(cosines[best]),
            threshold=limit.value,
            threshold_source=limit.source,
            model=model,
            precision=precision,
            actual=actual,
            expected=tuple(texts),
            best=texts[best],
            note=note,
        )
        self._record((RECORD_KEY, {**result.record(), "pid": os.getpid(), "loads": self._engine.loads}))
        return result

    def score(self, a: str, b: str, model: str | None = None, precision: str | None = None) -> float:
        """The cosine of the embeddings of ``a`` and ``b`` (a float32 value as a float)."""
        model, precision = self._model(model, precision)
        _check_text(a, "a")
        _check_text(b, "b")
        self._engine.language_note(a, [b], model)
        return float(self._engine.cosines(a, [b], model, precision)[0])

    def _model(self, model: str | None, precision: str | None) -> tuple[str, str]:
        settings = self._engine.settings
        if precision is not None and precision not in PRECISIONS:
            raise ValueError(f"precision must be 'fp32' or 'int8', got {precision!r}")
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ValueError(f"model must be a model id or a folder (a non-empty string), got {model!r}")
        return model or settings.model, precision or settings.precision


def _check_text(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}: {value!r:.80}")


def _expected_texts(expected: object) -> list[str]:
    if isinstance(expected, str):
        return [expected]
    if not isinstance(expected, Sequence) or isinstance(expected, bytes):
        raise TypeError(
            f"expected must be a string or a list of strings, got {type(expected).__name__}: {expected!r:.80}"
        )
    texts = list(expected)
    if not texts:
        raise ValueError("expected is an empty list; give at least one expected text")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"expected[{i}] must be a string, got {type(text).__name__}: {text!r:.80}")
    return texts
