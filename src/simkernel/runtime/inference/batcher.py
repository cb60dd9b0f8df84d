"""Shared forward passes for the concurrent callers of one loaded model (dynamic batching).

A :class:`PassBatcher` stands in front of a model's forward passes. Each call hands it its distinct,
already tokenized inputs; while a pass runs, the inputs of other calls wait in a FIFO queue and go into
the next pass together, up to ``max_batch_tokens`` tokens per pass. There is no timer: a caller that
finds the model idle runs the pass itself, in its own thread (a lone caller never waits for company, so
its latency is that of a direct call); when its own inputs are done, it leaves what queued meanwhile to
the model's pass thread, which runs passes back to back until the queue is empty, taking the next
pass before it wakes the callers of the last one.

Guarantees:

- **Same bits.** A pass is split into batches of ONE token length each
  (:func:`~simkernel.runtime.inference.tokenizer.length_sorted_batches`), so a row's result never depends
  on the other inputs of its pass: an input gives the same bits alone or in a shared pass.
- **Errors stay with their call.** Inputs are checked and tokenized in the caller's thread before they
  are queued, so bad input fails that call only, with the encoder's usual error. An error of the model
  itself fails every call of that pass.
- **Fair.** A call is queued as its inputs sorted by token length; a pass takes inputs from the queued
  calls in arrival order until ``max_batch_tokens`` is reached. A call that did not fit whole queues
  again with the rest of its inputs when its pass is done, behind the calls that came meanwhile, so a
  call of 5,000 texts takes one pass's worth at a time and a call of one text waits for at most the
  pass that was running when it came.
- **Bounded.** At most ``max_queue`` calls wait; one more raises :class:`QueueFullError` naming the
  setting.
- **Cancellable.** A call cancelled before its inputs went into a pass (an asyncio task cancelled while
  it awaits) is dropped from the queue; the rest of its inputs are never run.
- **fork-safe.** A child process starts with an empty queue (a pass running in another thread of the
  parent at the fork does not exist in the child).

The default ``max_batch_tokens`` (4,096 tokens, about 0.3 s of all-MiniLM-L6-v2 on two cores) bounds what
a newcomer waits behind a large call; a pass of that size still holds full batches of each length, since
a large call is cut in token-length order (measured in benchmarks/bench_latency.py).
"""

from __future__ import annotations

import bisect
import os
import threading
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from simkernel.errors import SimkernelError

DEFAULT_MAX_BATCH_TOKENS = 4096
DEFAULT_MAX_QUEUE = 1024
BATCHING_ENV = "SIMKERNEL_BATCHING"
MAX_BATCH_TOKENS_ENV = "SIMKERNEL_MAX_BATCH_TOKENS"
MAX_QUEUE_ENV = "SIMKERNEL_MAX_QUEUE"

# run_pass(encodings, batch_size) -> float32 array (len(encodings), width), rows in the order given
RunPass = Callable[[Sequence[Any], int], np.ndarray]


class QueueFullError(SimkernelError, RuntimeError):
    """The batching queue of a model holds ``max_queue`` waiting calls; the message names the setting."""


def batching_default() -> bool:
    """Whether encoders batch concurrent calls when not told: ``$SIMKERNEL_BATCHING`` (``0``/``false``/
    ``off``/``no`` turn it off), else on."""
    value = os.environ.get(BATCHING_ENV, "1").strip().lower()
    if value in ("0", "false", "off", "no"):
        return False
    if value in ("1", "true", "on", "yes", ""):
        return True
    raise ValueError(f"{BATCHING_ENV}={value!r} is not a switch; set it to 1 (batch concurrent calls) or 0")


def _setting(value: int | None, env: str, default: int, what: str) -> int:
    """A positive int from ``value``, else from the environment variable ``env``, else ``default``."""
    if value is None:
        raw = os.environ.get(env)
        if raw is None or not raw.strip():
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(
                f"{env}={raw!r} is not an integer; set it to a positive number of {what}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{what.replace(' ', '_')} must be a positive int, got {value!r}")
    return int(value)


def batch_settings(max_batch_tokens: int | None, max_queue: int | None) -> tuple[int, int]:
    """(max_batch_tokens, max_queue): the values given, else ``$SIMKERNEL_MAX_BATCH_TOKENS`` /
    ``$SIMKERNEL_MAX_QUEUE``, else the defaults (4,096 tokens, 1,024 calls); anything but a positive int
    raises ValueError."""
    tokens = _setting(max_batch_tokens, MAX_BATCH_TOKENS_ENV, DEFAULT_MAX_BATCH_TOKENS, "max batch tokens")
    queue = _setting(max_queue, MAX_QUEUE_ENV, DEFAULT_MAX_QUEUE, "max queue")
    return tokens, queue


class _Call:
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

    def __init__(self, keys, encodings, batch_size: int, on_done: Callable[[_Call], None] | None) -> None:
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        self.order = np.argsort(lengths, kind="stable")  # queue position -> the caller's row
        self.keys = [keys[i] for i in self.order]
        self.encodings = [encodings[i] for i in self.order]
        self.bounds = np.concatenate(([0], np.cumsum(lengths[self.order]))).tolist()  # token prefix sums
        self.batch_size = batch_size
        self.taken = 0  # inputs handed to passes
        self.finished = 0  # inputs whose rows are filled
        self.rows: np.ndarray | None = None  # (n, width), the caller's order
        self.error: BaseException | None = None
        self.done = False
        self.cancelled = False
        self.event = threading.Event() if on_done is None else None
        self.on_done = on_done

    def __len__(self) -> int:
        return len(self.keys)

    def result(self) -> np.ndarray:
        if self.error is not None:
            raise self.error
        assert self.rows is not None
        return self.rows


class PassBatcher:
    """The queue of one model's forward passes (see the module docstring).

    ``run_pass(encodings, batch_size)`` runs the model on distinct inputs and returns their rows (float32,
    one per input, in the order given); the batcher calls it from one thread at a time. ``name`` is the
    model's name, for errors.
    """

    def __init__(
        self, run_pass: RunPass, *, max_batch_tokens: int, max_queue: int, name: str = "the model"
    ) -> None:
        self._run_pass = run_pass
        self.max_batch_tokens = max_batch_tokens
        self.max_queue = max_queue
        self.name = name
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._queue: deque[_Call] = deque()
        self._busy = False  # a caller or the pass thread is running the queue
        self._threads: ThreadPoolExecutor | None = None  # the pass thread
        self.passes = 0  # forward passes run (for tests and metrics)

    # -- entry points ---------------------------------------------------------------------------------

    def run(self, keys: Sequence[Hashable], encodings: Sequence[Any], batch_size: int) -> np.ndarray:
        """The rows of ``keys`` (distinct inputs; ``encodings`` their tokenizations), blocking until done."""
        call = _Call(keys, encodings, batch_size, None)
        if self._enqueue(call):
            self._lead(call)
        else:
            assert call.event is not None
            call.event.wait()
        return call.result()

    def submit(
        self,
        keys: Sequence[Hashable],
        encodings: Sequence[Any],
        batch_size: int,
        on_done: Callable[[_Call], None],
    ) -> _Call:
        """Queue ``keys`` without blocking; ``on_done(call)`` is called (from the thread that ran the
        last pass) once ``call.result()`` is ready. A pass thread runs the queue if nobody does."""
        call = _Call(keys, encodings, batch_size, on_done)
        if self._enqueue(call):
            self._start_pass_thread()
        return call

    def cancel(self, call: _Call) -> None:
        """Drop ``call``'s inputs that have not gone into a pass yet (its result is then never ready)."""
        with self._lock:
            call.cancelled = True
            if call in self._queue:
                self._queue.remove(call)

    @property
    def waiting(self) -> int:
        """Calls in the queue (waiting for a pass, or for the rest of their inputs)."""
        return len(self._queue)

    # -- the queue ------------------------------------------------------------------------------------

    def _enqueue(self, call: _Call) -> bool:
        """Queue ``call``; True when the caller must run the queue (nobody else is)."""
        if self._pid != os.getpid():
            self._reset()
        with self._lock:
            if len(self._queue) >= self.max_queue:
                raise QueueFullError(
                    f"the batching queue of {self.name!r} is full: {len(self._queue)} calls wait for a forward pass (max_queue={self.max_queue}); raise max_queue (TextEncoder(..., max_queue=N) or SIMKERNEL_MAX_QUEUE=N), or send fewer calls at once and retry later"
                )
            self._queue.append(call)
            if self._busy:
                return False
            self._busy = True
            return True

    def _take(self) -> list[tuple[_Call, int, int]]:
        """The next pass, under the lock: (call, start, stop) slices of queued calls in arrival order,
        ``max_batch_tokens`` in all (at least one input); a call cut short goes to the back."""
        work: list[tuple[_Call, int, int]] = []
        room = self.max_batch_tokens
        while self._queue:
            call = self._queue[0]
            start = call.taken
            fits = bisect.bisect_right(call.bounds, call.bounds[start] + room) - 1
            stop = min(fits, len(call))
            if stop == start:
                if work:
                    break
                stop = start + 1
            work.append((call, start, stop))
            room -= call.bounds[stop] - call.bounds[start]
            call.taken = stop
            self._queue.popleft()
            if stop < len(call):
                break  # the pass is full; the rest of the call queues again when this pass is done
        return work

    def _lead(self, own: _Call) -> None:
        """Run passes in the caller's thread until its own call is done, then leave the rest of the
        queue to a pass thread (the caller returns at once)."""
        try:
            while True:
                with self._lock:
                    if own.done:
                        if self._queue:
                            self._start_pass_thread()
                        else:
                            self._busy = False
                        return
                    work = self._take()
                self._signal(self._execute(work))
        except BaseException:
            with self._lock:
                if own in self._queue:
                    self._queue.remove(own)  # its caller gets the exception: nobody reads its rows
                if self._queue:
                    self._start_pass_thread()
                else:
                    self._busy = False
            raise

    def _drain(self) -> None:
        """The pass thread: run passes until the queue is empty. The next pass is taken before the
        callers of the last one are woken, so it starts while they pick up their rows."""
        with self._lock:
            work = self._take()
            if not work:
                self._busy = False
        while work:
            try:
                ready = self._execute(work)
            except BaseException:
                with self._lock:
                    self._busy = False
                raise
            with self._lock:
                work = self._take()
                if not work:
                    self._busy = False
            self._signal(ready)

    def _start_pass_thread(self) -> None:
        """Under the lock (with ``_busy`` set): a pass thread drains the queue."""
        if self._threads is None:
            self._threads = ThreadPoolExecutor(1, thread_name_prefix="simkernel-pass")
        self._threads.submit(self._drain)

    def _execute(self, work: list[tuple[_Call, int, int]]) -> list[_Call]:
        """Run one pass over ``work``; the calls it completed (not yet signalled)."""
        slots: dict[Hashable, int] = {}
        encodings: list[Any] = []
        where: list[np.ndarray] = []
        for call, start, stop in work:
            index = []
            for i in range(start, stop):
                slot = slots.setdefault(call.keys[i], len(slots))
                if slot == len(encodings):
                    encodings.append(call.encodings[i])
                index.append(slot)
            where.append(np.asarray(index, dtype=np.int64))
        batch_size = min(call.batch_size for call, _, _ in work)
        try:
            out = self._run_pass(encodings, batch_size)
        except Exception as exc:
            return self._finish(work, None, where, exc)
        except BaseException:  # KeyboardInterrupt, SystemExit: the others' inputs wait for another pass
            with self._lock:
                for call, start, _ in reversed(work):
                    call.taken = start
                    if call not in self._queue and not call.cancelled:
                        self._queue.appendleft(call)
            raise
        return self._finish(work, out, where, None)

    def _finish(self, work, out: np.ndarray | None, where, error: BaseException | None) -> list[_Call]:
        """Give each call of a pass its rows (or the pass's error); the calls now done, to signal."""
        ready = []
        with self._lock:
            self.passes += 1
            for (call, start, stop), index in zip(work, where, strict=True):
                if call.done:
                    continue
                if error is not None:
                    call.error = error
                    if call in self._queue:
                        self._queue.remove(call)
                else:
                    assert out is not None
                    if call.rows is None:
                        call.rows = np.empty((len(call), out.shape[1]), dtype=out.dtype)
                    call.rows[call.order[start:stop]] = out[index]
                    call.finished += stop - start
                    if call.taken < len(call) and not call.cancelled:
                        self._queue.append(call)  # behind the calls that came during this pass
                if call.error is not None or call.finished == len(call):
                    call.done = True
                    ready.append(call)
        return ready

    @staticmethod
    def _signal(ready: list[_Call]) -> None:
        for call in ready:
            if call.event is not None:
                call.event.set()
            elif call.on_done is not None and not call.cancelled:
                call.on_done(call)


async def run_async(batcher: PassBatcher, keys, encodings, batch_size: int) -> np.ndarray:
    """:meth:`PassBatcher.run` for asyncio: awaits the rows without blocking the event loop; a cancelled
    task's inputs that have not gone into a pass are dropped."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future = loop.create_future()

    def resolve(call: _Call) -> None:
        if not future.done():
            future.set_result(None)

    def on_done(call: _Call) -> None:
        try:
            loop.call_soon_threadsafe(resolve, call)
        except RuntimeError:  # the loop was closed meanwhile: nobody awaits the result any more
            pass

    call = batcher.submit(keys, encodings, batch_size, on_done)
    try:
        await future
    except asyncio.CancelledError:
        batcher.cancel(call)
        raise
    return call.result()


def make_batcher(
    run_pass: RunPass,
    batching: bool | None,
    max_batch_tokens: int | None,
    max_queue: int | None,
    name: object,
) -> PassBatcher | None:
    """The batcher of an encoder's ``run_pass``, or None when batching is off (``batching=False``, or
    None with ``$SIMKERNEL_BATCHING=0``); the settings are checked here, at construction."""
    tokens, queue = batch_settings(max_batch_tokens, max_queue)
    if batching is None:
        batching = batching_default()
    elif not isinstance(batching, bool):
        raise ValueError(f"batching must be True, False or None (the environment's choice), got {batching!r}")
    if not batching:
        return None
    return PassBatcher(run_pass, max_batch_tokens=tokens, max_queue=queue, name=str(name))
