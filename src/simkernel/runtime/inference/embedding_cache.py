"""A thread-safe LRU cache of sentence embeddings keyed by the exact text."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np


class EmbeddingCache:
    """Least-recently-used map text -> embedding (a read-only float32 vector), at most ``max_items``.

    ``max_items=0`` disables it. Memory: about ``max_items x dim x 4`` bytes plus the texts (10,000
    entries of a 384-dim model: ~15 MB). All methods take one lock, so many threads may share it.
    """

    def __init__(self, max_items: int) -> None:
        if not isinstance(max_items, int) or isinstance(max_items, bool) or max_items < 0:
            raise ValueError(f"cache_size must be an int >= 0 (0 disables the cache), got {max_items!r}")
        self.max_items = max_items
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get_many(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """The cached vector of each text, or None; found entries become most recently used."""
        if self.max_items == 0:
            self.misses += len(texts)
            return [None] * len(texts)
        found: list[np.ndarray | None] = []
        with self._lock:
            for text in texts:
                vector = self._items.get(text)
                if vector is not None:
                    self._items.move_to_end(text)
                    self.hits += 1
                else:
                    self.misses += 1
                found.append(vector)
        return found

    def put_many(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store one row of ``vectors`` per text (copied, made read-only), evicting the oldest entries."""
        if self.max_items == 0:
            return
        start = max(0, len(texts) - self.max_items)  # only the last max_items can survive anyway
        rows = np.array(vectors[start:], dtype=np.float32)
        rows.setflags(write=False)
        with self._lock:
            for text, row in zip(texts[start:], rows, strict=True):
                self._items[text] = row
                self._items.move_to_end(text)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0
