"""A call in the batcher's queue (:mod:`simkernel.runtime.inference.batcher`): its inputs sorted by token
length, how many went into passes, its rows, and how its caller is woken."""

from __future__ import annotations

import itertools
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
        "_waiter",
        "on_done",
    )

    def __init__(
        self, keys: Sequence[Hashable], batch_size: int, on_done: Callable[[QueuedCall], None] | None
    ) -> None:
        self.keys = list(keys)
        self.encodings: list[Any] | None = None  # None until tokenized (see prepare)
        self.order: list[int] = []
        self.bounds: list[int] = []
        self.batch_size = batch_size
        self.taken = 0  # inputs handed to passes
        self.finished = 0  # inputs whose rows are filled
        self.rows: np.ndarray | None = None  # (n, width), the caller's order
        self.error: BaseException | None = None
        self.done = False
        self.cancelled = False
        # a blocking caller waits on a lock held until its call is done: one futex hand-over, where an
        # Event is a Condition of Python code on both sides (about 10 us a call under the GIL all callers share)
        self._waiter: threading.Lock | None = None
        if on_done is None:
            self._waiter = threading.Lock()
            self._waiter.acquire()
        self.on_done = on_done

    def prepare(self, encodings: Sequence[Any]) -> None:
        """Take the inputs' tokenizations and sort them by token length (the order passes take them)."""
        lengths = [len(encoding) for encoding in encodings]
        # plain Python, not numpy: a call of one or two texts (the common one under load) costs its caller
        # about 5 us instead of 12, under the GIL that all callers share
        self.order = sorted(range(len(lengths)), key=lengths.__getitem__)  # stable: position -> caller's row
        self.keys = [self.keys[i] for i in self.order]
        self.encodings = [encodings[i] for i in self.order]
        self.bounds = [0, *itertools.accumulate(lengths[i] for i in self.order)]  # token prefix sums

    def wait(self) -> None:
        """Block until :meth:`wake` (a blocking caller's call; the others are told by ``on_done``)."""
        assert self._waiter is not None
        self._waiter.acquire()

    def wake(self) -> None:
        """Tell the call's caller that it is done: release its :meth:`wait`, else call ``on_done``
        (not for a cancelled call). Called once per call, by the thread that finished it."""
        if self._waiter is not None:
            if self._waiter.locked():  # as Event.set: a second wake of a call not yet waited on does nothing
                self._waiter.release()
        elif self.on_done is not None and not self.cancelled:
            self.on_done(self)

    def __len__(self) -> int:
        return len(self.keys)

    def result(self) -> np.ndarray:
        if self.error is not None:
            raise self.error
        assert self.rows is not None
        return self.rows
