"""Hypothesis strategies of the API fuzz tests: texts that are valid (ASCII, Russian, Chinese, emoji,
NUL, control and bidi characters, whitespace, empty) and items that are not (non-str values, strings
with lone surrogates)."""

from __future__ import annotations

from hypothesis import strategies as st

PIECES = ["a", "Berlin", " ", "\x00", "\t\n", "Лев Толстой", "北京", "😀", "\u200f", "\u2028", "\ufeff", "é"]
VALID_TEXT = st.lists(st.sampled_from(PIECES), max_size=6).map("".join) | st.text(max_size=8)
LONE_SURROGATE = st.builds(
    lambda head, code, tail: head + chr(code) + tail, VALID_TEXT, st.integers(0xD800, 0xDFFF), VALID_TEXT
)
NOT_STR = st.sampled_from([None, 1, 2.5, float("nan"), b"bytes", ["a"], ("a",), {"a": 1}, True])
ITEM = st.one_of(VALID_TEXT, VALID_TEXT, VALID_TEXT, LONE_SURROGATE, NOT_STR)


def first_bad(items: list) -> tuple[int, str] | None:
    """(index, "type" | "surrogate") of the first item that is not valid text, else None."""
    for index, item in enumerate(items):
        if not isinstance(item, str):
            return index, "type"
        if any("\ud800" <= c <= "\udfff" for c in item):
            return index, "surrogate"
    return None
