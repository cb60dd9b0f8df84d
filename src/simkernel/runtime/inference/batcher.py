"""Shared forward passes for the concurrent callers of one loaded model (dynamic batching).

A :class:`PassBatcher` stands in front of a model's forward passes. Each call hands it its distinct
inputs; while a pass runs, the inputs of other calls wait in a FIFO queue and go into
the next pass together, up to ``max_batch_tokens`` tokens per pass. There is no timer: a caller that
finds the model idle runs the pass itself, in its own thread (a lone caller never waits for company, so
its latency is that of a direct call); when its own inputs are done, it leaves what queued meanwhile to
the model's pass thread, which runs passes back to back until the queue is empty (giving the callers
of the last pass a few milliseconds to come back, so that they share the next one: a window that
adapts to whether they do, see :func:`next_gather_window`).

Guarantees:

- **Same bits.** A pass is split into batches of ONE token length each
  (:func:`~simkernel.runtime.inference.tokenizer.length_sorted_batches`), so a row's result never depends
  on the other inputs of its pass: an input gives the same bits alone or in a shared pass. (A text
  encoder's shared passes run as packed stages once the model is shared,
  :mod:`simkernel.runtime.inference.packed_passes`: the dense layers over every token of the pass at once,
  attention still per exact-length batch, checked bit-identical to the whole graph.)
- **Errors stay with their call.** Inputs are checked in the caller's thread before they are queued (and
  tokenized there, or by the pass thread for an asyncio caller), so bad input fails that call only, with
  the encoder's usual error. An error of the model itself fails every call of that pass.
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

The settings (on or off, ``max_batch_tokens``, ``max_queue``, their environment variables) are read by
:mod:`simkernel.runtime.inference.batch_settings`.
"""

from __future__ import annotations

import bisect
import functools
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from simkernel.errors import QueueFullError
from simkernel.runtime.inference.batch_call import QueuedCall
from simkernel.runtime.inference.batch_settings import batch_settings, batching_default

# How long the pass thread waits, at most, for the callers it woke to come back (seconds): a window that
# starts at the floor, grows while they do come back and shrinks to the floor when they do not
# (:func:`next_gather_window`).
GATHER_FLOOR_SECONDS = 0.002
GATHER_CEILING_SECONDS = 0.010
# run_pass(encodings, batch_size) -> float32 array (len(encodings), width), rows in the order given
RunPass = Callable[[Sequence[Any], int], np.ndarray]


def next_gather_window(window: float, waited: float, expected: int, came_back: int) -> float:
    """The pass thread's next gather window (seconds), from its last wait: ``waited`` seconds for
    ``expected`` calls, of which ``came_back`` were queued by the end of the wait.

    - All came back: twice the time they took, so that the next wait covers them with room to spare.
    - At least half came back (the window cut the others off): 1.5 times longer.
    - Fewer than half: half as long. Callers that never come back (a server's request handlers, which
      return after their call) bring the window down to the floor within a few passes, so that queued
      calls never wait for company that is not coming.

    The result stays within [``GATHER_FLOOR_SECONDS``, ``GATHER_CEILING_SECONDS``].
    """
    if came_back >= expected:
        grown = 2.0 * waited
    elif 2 * came_back >= expected:
        grown = 1.5 * window
    else:
        grown = 0.5 * window
    return min(GATHER_CEILING_SECONDS, max(GATHER_FLOOR_SECONDS, grown))


class PassBatcher:
    """The queue of one model's forward passes (see the module docstring).

    ``run_pass(encodings, batch_size)`` runs the model on distinct inputs and returns their rows (float32,
    one per input, in the order given); the batcher calls it from one thread at a time. ``tokenize(keys)``
    gives the inputs' tokenizations (``tokenizers.Encoding`` s): a synchronous caller tokenizes its own
    inputs in its thread; an asyncio caller's are tokenized by the thread that runs the passes, so that
    the event loop does no work that gives up the GIL. ``name`` is the model's name, for errors.
    ``on_rows(keys, rows)``, if given, is called by the thread that ran each pass with its distinct inputs
    and their rows, before their callers are woken (a text encoder's memory cache takes them: once a pass,
    not once a caller, since everything a woken caller does holds up the others, see
    docs/design-notes.md).
    """

    def __init__(
        self,
        run_pass: RunPass,
        tokenize: Callable[[list], list],
        *,
        max_batch_tokens: int,
        max_queue: int,
        name: str = "the model",
        on_shared: Callable[[], None] | None = None,
        on_rows: Callable[[list, np.ndarray], None] | None = None,
    ) -> None:
        self._run_pass = run_pass
        self._tokenize = tokenize
        self._on_shared = on_shared
        self._on_rows = on_rows
        self.max_batch_tokens = max_batch_tokens
        self.max_queue = max_queue
        self.name = name
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)  # notified when _gather calls are queued
        self._gather = 0  # calls the pass thread waits for (0: it does not wait)
        self.gather_window = GATHER_FLOOR_SECONDS  # the pass thread's current wait, at most (seconds)
        self._queue: deque[QueuedCall] = deque()
        self._busy = False  # a caller or the pass thread is running the queue
        self._threads: ThreadPoolExecutor | None = None  # the pass thread
        self.passes = 0  # forward passes run (for tests and metrics)
        self.pass_texts = 0  # distinct inputs run in those passes, in all (read-only, for metrics)
        self.pass_tokens = 0  # their tokens, padding left out (read-only, for metrics)

    # -- entry points ---------------------------------------------------------------------------------

    def run(self, keys: Sequence[Hashable], batch_size: int) -> np.ndarray:
        """The rows of ``keys`` (distinct inputs), blocking until done; tokenized in this thread."""
        call = QueuedCall(keys, batch_size, None)
        call.prepare(self._tokenize(call.keys))
        if self._enqueue(call):
            self._lead(call)
        else:
            call.wait()
        return call.result()

    def submit(
        self,
        keys: Sequence[Hashable],
        batch_size: int,
        on_done: Callable[[QueuedCall], None],
        encodings: Sequence[Any] | None = None,
    ) -> QueuedCall:
        """Queue ``keys`` without blocking (``encodings``: their tokenizations if the caller has them, else
        the pass thread tokenizes them); ``on_done(call)`` is called (from the thread that ran the last
        pass) once ``call.result()`` is ready. The pass thread runs the queue if nobody does."""
        call = QueuedCall(keys, batch_size, on_done)
        if encodings is not None:
            call.prepare(encodings)
        if self._enqueue(call):
            self._start_pass_thread()
        return call

    def cancel(self, call: QueuedCall) -> None:
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

    def _enqueue(self, call: QueuedCall) -> bool:
        """Queue ``call``; True when the caller must run the queue (nobody else is)."""
        if self._pid != os.getpid():
            self._reset()
        with self._lock:
            if len(self._queue) >= self.max_queue:
                raise QueueFullError(
                    f"the batching queue of {self.name!r} is full: {len(self._queue)} calls wait for a forward pass (max_queue={self.max_queue}); raise max_queue (TextEncoder(..., max_queue=N) or SIMKERNEL_MAX_QUEUE=N), or send fewer calls at once and retry later",
                    self.max_queue,
                )
            self._queue.append(call)
            if self._gather and len(self._queue) >= self._gather:
                self._arrived.notify()  # once: each wake-up of the pass thread costs it a GIL hand-over
            if self._busy:
                if self._on_shared is not None:  # the first call queued behind a pass: the model is shared
                    on_shared, self._on_shared = self._on_shared, None
                    on_shared()  # the text encoder gets its packed passes ready (in a thread of its own)
                return False
            self._busy = True
            return True

    def _take(self) -> list[tuple[QueuedCall, int, int]]:
        """The next pass, under the lock: (call, start, stop) slices of queued calls in arrival order,
        ``max_batch_tokens`` in all (at least one input); a call cut short goes to the back."""
        work: list[tuple[QueuedCall, int, int]] = []
        room = self.max_batch_tokens
        while self._queue:
            call = self._queue[0]
            if call.encodings is None:
                break  # not tokenized yet (see _tokenize_queued): later calls wait behind it
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

    def _lead(self, own: QueuedCall) -> None:
        """Run passes in the caller's thread until its own call is done, then leave the rest of the
        queue to the pass thread (the caller returns at once)."""
        try:
            while True:
                self._tokenize_queued()
                with self._lock:
                    if own.done:
                        if self._queue:
                            self._start_pass_thread()
                        else:
                            self._busy = False
                        return
                    work = self._take()
                if work:
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
        """The pass thread: run passes until the queue is empty. Before it takes the next pass it waits
        up to ``gather_window`` seconds for the callers it just woke to come back with their next call,
        so that they join the calls already queued in one pass instead of two half passes. The window
        adapts (:func:`next_gather_window`): callers that come back (threads or tasks scoring one pair
        after another) widen it up to ``GATHER_CEILING_SECONDS``; callers that do not (a server's
        handlers) bring it down to ``GATHER_FLOOR_SECONDS``. With 16 threads of single-pair calls a
        fixed 2 ms window gave passes of about 21 texts, 5 ms about 30 of the 32 in flight
        (benchmarks/studies/shared_passes.py). Nobody waits on this when alone: a lone caller runs its own
        pass in its own thread."""
        target = 0  # calls to wait for before the next pass
        try:
            while True:
                self._tokenize_queued()
                with self._lock:
                    queued = len(self._queue)
                    if queued < target:
                        self._gather = target  # _enqueue wakes this thread once, when that many are queued
                        started = time.monotonic()
                        self._arrived.wait_for(functools.partial(self._gathered, target), self.gather_window)
                        self.gather_window = next_gather_window(
                            self.gather_window,
                            time.monotonic() - started,
                            target - queued,
                            len(self._queue) - queued,
                        )
                        self._gather = 0
                    work = self._take()
                    idle = not work and not self._queue
                    if idle:
                        self._busy = False
                if idle:
                    return
                ready = self._execute(work) if work else []
                with self._lock:  # the queue to wait for: what is queued now, and the callers woken now
                    target = min(len(self._queue) + len(ready), self.max_queue)
                self._signal(ready)
        except BaseException as exc:  # a fault of the batcher itself: no queued caller may wait forever
            with self._lock:
                stranded = list(self._queue)
                self._queue.clear()
                for call in stranded:
                    call.error, call.done = exc, True
                self._busy = False
            self._signal(stranded)
            raise

    def _gathered(self, calls: int) -> bool:
        return len(self._queue) >= calls

    def _tokenize_queued(self) -> None:
        """Tokenize the queued calls that came untokenized (asyncio callers), in one tokenizer call; a
        call whose inputs the tokenizer refuses gets that error."""
        with self._lock:
            raw = [call for call in self._queue if call.encodings is None]
        if not raw:
            return
        keys = [key for call in raw for key in call.keys]
        try:
            encodings = self._tokenize(keys)
        except Exception:  # find the call at fault: each on its own
            encodings = None
        failed = []
        with self._lock:
            start = 0
            for call in raw:
                if encodings is not None:
                    call.prepare(encodings[start : start + len(call)])
                    start += len(call)
                    continue
                try:
                    call.prepare(self._tokenize(call.keys))
                except Exception as exc:
                    call.error, call.done = exc, True
                    if call in self._queue:
                        self._queue.remove(call)
                    failed.append(call)
        self._signal(failed)

    def _start_pass_thread(self) -> None:
        """Under the lock (with ``_busy`` set): a pass thread drains the queue."""
        if self._threads is None:
            self._threads = ThreadPoolExecutor(1, thread_name_prefix="simkernel-pass")
        self._threads.submit(self._drain)

    def _execute(self, work: list[tuple[QueuedCall, int, int]]) -> list[QueuedCall]:
        """Run one pass over ``work``; the calls it completed (not yet signalled)."""
        slots: dict[Hashable, int] = {}
        encodings: list[Any] = []
        where: list[np.ndarray] = []
        for call, start, stop in work:
            index = []
            assert call.encodings is not None  # _take takes tokenized calls only
            for i in range(start, stop):
                slot = slots.setdefault(call.keys[i], len(slots))
                if slot == len(encodings):
                    encodings.append(call.encodings[i])
                index.append(slot)
            where.append(np.asarray(index, dtype=np.int64))
        batch_size = min(call.batch_size for call, _, _ in work)
        tokens = sum(len(encoding) for encoding in encodings)
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
        if self._on_rows is not None:
            self._on_rows(list(slots), out)  # once a pass, not once a call: the callers share the GIL
        with self._lock:
            self.pass_texts += len(encodings)
            self.pass_tokens += tokens
        return self._finish(work, out, where, None)

    def _finish(self, work, out: np.ndarray | None, where, error: BaseException | None) -> list[QueuedCall]:
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
    def _signal(ready: list[QueuedCall]) -> None:
        for call in ready:
            call.wake()


async def run_async(batcher: PassBatcher, keys, batch_size: int, encodings=None) -> np.ndarray:
    """:meth:`PassBatcher.run` for asyncio: awaits the rows without blocking the event loop (``encodings``:
    the keys' tokenizations if the caller made them, else the pass thread does); a cancelled task's
    inputs that have not gone into a pass are dropped."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future = loop.create_future()

    def resolve(call: QueuedCall) -> None:
        if not future.done():
            future.set_result(None)

    def on_done(call: QueuedCall) -> None:
        try:
            loop.call_soon_threadsafe(resolve, call)
        except RuntimeError:  # the loop was closed meanwhile: nobody awaits the result any more
            pass

    call = batcher.submit(keys, batch_size, on_done, encodings)
    try:
        await future
    except asyncio.CancelledError:
        batcher.cancel(call)
        raise
    return call.result()


def make_batcher(
    run_pass: RunPass,
    tokenize: Callable[[list], list],
    batching: bool | None,
    max_batch_tokens: int | None,
    max_queue: int | None,
    name: object,
    on_shared: Callable[[], None] | None = None,
    on_rows: Callable[[list, np.ndarray], None] | None = None,
) -> PassBatcher | None:
    """The batcher of an encoder's ``run_pass``, or None when batching is off (``batching=False``, or
    None with ``$SIMKERNEL_BATCHING=0``); the settings are checked here, at construction. ``on_shared()``
    is called once, when a call first queues behind a running pass (it must not block); ``on_rows(keys,
    rows)`` after each pass with its distinct inputs and their rows (an encoder's memory cache takes them)."""
    tokens, queue = batch_settings(max_batch_tokens, max_queue)
    if batching is None:
        batching = batching_default()
    elif not isinstance(batching, bool):
        raise ValueError(f"batching must be True, False or None (the environment's choice), got {batching!r}")
    if not batching:
        return None
    return PassBatcher(
        run_pass,
        tokenize,
        max_batch_tokens=tokens,
        max_queue=queue,
        name=str(name),
        on_shared=on_shared,
        on_rows=on_rows,
    )
