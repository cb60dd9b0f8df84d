"""Validation of what users pass to the encoders: a clear TypeError/ValueError naming the bad item."""

from __future__ import annotations

from collections.abc import Iterable


def check_texts(texts: Iterable[str]) -> list[str]:
    """A list of str from any iterable of str; a bare string, or a non-str item, raises TypeError."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(
            f"texts must be a list of strings, got a single {type(texts).__name__}; wrap it: encode([text])"
        )
    if texts is None or not isinstance(texts, Iterable):
        raise TypeError(f"texts must be a list of strings, got {type(texts).__name__}")
    items = list(texts)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(
                f"texts[{index}] is {type(item).__name__} ({item!r:.60}), not str; every item must be a string (convert or drop it; use '' for an empty answer)"
            )
        check_unicode(item, f"texts[{index}]")
    return items


def check_unicode(text: str, where: str) -> None:
    """ValueError naming ``where`` when ``text`` holds a lone surrogate (U+D800-U+DFFF), which is not
    Unicode text (the tokenizer cannot take it); such strings come from bytes decoded with
    ``errors="surrogateescape"`` or from broken JSON escapes. ASCII text is checked in O(1)."""
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{where} holds a lone surrogate U+{ord(text[exc.start]):04X} at position {exc.start}, which is not valid Unicode text; repair it, e.g. text.encode('utf-8', 'replace').decode('utf-8')"
        ) from None


def check_pairs(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """A list of (str, str) from any iterable of 2-item sequences; anything else raises TypeError."""
    if isinstance(pairs, (str, bytes)) or pairs is None or not isinstance(pairs, Iterable):
        raise TypeError(f"pairs must be a list of (text_a, text_b) tuples, got {type(pairs).__name__}")
    items = []
    for index, pair in enumerate(pairs):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise TypeError(f"pairs[{index}] must be a (text_a, text_b) pair, got {pair!r:.80}")
        a, b = pair
        for side, item in ((0, a), (1, b)):
            if not isinstance(item, str):
                raise TypeError(
                    f"pairs[{index}][{side}] is {type(item).__name__} ({item!r:.60}), not str; every text must be a string"
                )
            check_unicode(item, f"pairs[{index}][{side}]")
        items.append((a, b))
    return items


def check_batch_size(batch_size: int) -> int:
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    return batch_size
