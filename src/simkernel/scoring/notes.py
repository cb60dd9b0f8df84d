"""Notes a summary adds about what was scored: rows of non-Latin text on an English-only model, rows
without references. Shared by every batch engine (local, Ray, a file set on the nodes) and the pytest
plugin's ``semantic`` fixture."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simkernel.runtime.acquisition.registry import known_model

__all__ = [
    "MULTILINGUAL_SUGGESTION",
    "english_only_note",
    "english_only_warning",
    "no_references_note",
    "non_latin_rows",
]


def _non_latin(text: str) -> bool:
    """Whether ``text`` has a letter outside the Latin script (Cyrillic, CJK, Greek, Arabic, ...)."""
    return any(ch.isalpha() and ord(ch) > 0x24F for ch in text)


def non_latin_rows(predicted: Sequence[str], targets: Sequence[Any]) -> int:
    """How many rows hold non-Latin text in the predicted text or any of its targets (None: no target)."""
    return sum(
        1
        for text, target in zip(predicted, targets, strict=True)
        if _non_latin(text)
        or any(_non_latin(t) for t in ([target] if isinstance(target, str) else target or ()))
    )


MULTILINGUAL_SUGGESTION = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"


def english_only_warning(model: str, subject: str, option: str) -> str | None:
    """The warning that ``model`` is an English-only model of the registry and scored non-Latin text, else None.

    ``subject`` opens the sentence (``"3 row(s) hold"``), ``option`` is how the caller's user picks another
    model (``"--model"``). Such a model (all-MiniLM-L6-v2) splits Russian or Chinese into single
    characters, so those scores say little about meaning (unrelated Russian answers still score 0.5 to 0.7).
    """
    known = known_model(model)
    if known is None or known.languages != "en":
        return None
    return f"{subject} non-Latin text (e.g. Russian, Chinese) but {known.id} is English-only: it splits such text into characters and those scores are not meaningful; use a multilingual model such as {option} {MULTILINGUAL_SUGGESTION}"


def english_only_note(model: str, rows: int) -> str | None:
    """A summary's warning when an English-only model of the registry scores ``rows`` (> 0) rows of
    non-Latin text (see :func:`english_only_warning`)."""
    return english_only_warning(model, f"{rows} row(s) hold", "--model") if rows else None


def no_references_note(rows: int) -> str | None:
    """The reference mode's note on rows with an empty list of references (they score 0.0)."""
    return f"{rows} row(s) had no references and scored 0.0, as eval_lib does" if rows else None
