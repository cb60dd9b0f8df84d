"""A call in the batcher's queue (:mod:`simkernel.runtime.inference.batcher`): its inputs sorted by token
length, how many went into passes, its rows, and how its caller is woken."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np


class QueuedCall:
    """One caller's inputs in the queue, sorted by token length, and what became of them."""

    __slots__ = (
        "encodings",
        "keys",
        "order",
        "bounds",
        "batch_size",
        "taken",
        "finished",
        "rows",
        "error",
        "done",
        "cancelled",
        "event",
        "on_done",
    )

    def __init__(
        self, keys: Sequence[Hashable], batch_size: int, on_done: Callable[[QueuedCall], None] | None
    ) -> None:
        self.keys = list(keys)
        self.encodings: list[Any] | None = None  # None until tokenized (see prepare)
        self.order = np.arange(0)
        self.bounds: list[int] = []
        self.batch_size = batch_size
        self.taken = 0  # inputs handed to passes
        self.finished = 0  # inputs whose rows are filled
        self.rows: np.ndarray | None = None  # (n, width), the caller's order
        self.error: BaseException | None = None
        self.done = False
        self.cancelled = False
        self.event = threading.Event() if on_done is None else None
        self.on_done = on_done

    def prepare(self, encodings: Sequence[Any]) -> None:
        """Take the inputs' tokenizations and sort them by token length (the order passes take them)."""
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        self.order = np.argsort(lengths, kind="stable")  # queue position -> the caller's row
        positions = self.order.tolist()
        self.keys = [self.keys[i] for i in positions]
        self.encodings = [encodings[i] for i in positions]
        self.bounds = np.concatenate(([0], np.cumsum(lengths[self.order]))).tolist()  # token prefix sums

    def __len__(self) -> int:
        return len(self.keys)

    def result(self) -> np.ndarray:
        if self.error is not None:
            raise self.error
        assert self.rows is not None
        return self.rows
