"""Shared forward passes (simkernel.runtime.inference.batcher) on the real default model.

Each test that needs callers to meet in one pass holds the model's first pass at a gate (a wrapper around
the encoder's real pass function) until the other calls are queued: which calls share a pass is then
fixed, not left to thread timing. The reference of every row is the same text embedded alone by an
encoder with batching off, compared bit for bit.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time

import numpy as np
import pytest
from runtime_helpers import SPECIAL_TEXTS

from simkernel.errors import ModelError, QueueFullError
from simkernel.runtime import CrossEncoder, TextEncoder
from simkernel.runtime.inference.batch_settings import batch_settings

WAIT = 60.0  # seconds any wait of these tests may take before it is a failure (a hang)


class PassRecorder:
    """Wraps an encoder's real pass function: records each pass's inputs (token ids) and thread, and
    holds the first pass at ``gate`` until the test opens it."""

    def __init__(self, model, gate: bool = False, fail_pass: int | None = None) -> None:
        self.batcher = model._batcher
        assert self.batcher is not None, "batching is off"
        self.inner = self.batcher._run_pass
        self.passes: list[list[tuple[int, ...]]] = []
        self.threads: list[int] = []
        self.first_started = threading.Event()
        self.gate = threading.Event()
        if not gate:
            self.gate.set()
        self.fail_pass = fail_pass
        self.batcher._run_pass = self._run_pass

    def _run_pass(self, encodings, batch_size):
        index = len(self.passes)
        self.passes.append([tuple(e.ids) for e in encodings])
        self.threads.append(threading.get_ident())
        if index == 0:
            self.first_started.set()
            assert self.gate.wait(WAIT), "the gate was never opened"
        if index == self.fail_pass:
            raise ModelError("the model failed in this pass (raised by the test)")
        return self.inner(encodings, batch_size)

    def wait_queued(self, calls: int) -> None:
        deadline = time.monotonic() + WAIT
        while self.batcher.waiting < calls:
            assert time.monotonic() < deadline, f"{self.batcher.waiting} of {calls} calls queued"
            time.sleep(0.002)

    def wait_idle(self) -> None:
        deadline = time.monotonic() + WAIT
        while self.batcher._busy:
            assert time.monotonic() < deadline, "the batcher never went idle"
            time.sleep(0.002)


def ids_of(model, texts):
    return [tuple(e.ids) for e in model._tokenizer.encode(list(texts))]


def in_threads(fn, args_list):
    """Run ``fn(*args)`` for each args in threads; returns (results, errors) by index."""
    results: dict[int, object] = {}
    errors: dict[int, BaseException] = {}

    def target(i, args):
        try:
            results[i] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - the test inspects it
            errors[i] = exc

    threads = [threading.Thread(target=target, args=(i, a)) for i, a in enumerate(args_list)]
    for t in threads:
        t.start()
    return threads, results, errors


def join_all(threads):
    for t in threads:
        t.join(WAIT)
        assert not t.is_alive(), "a caller never returned"


def calls_in_one_pass(encoder, recorder: PassRecorder, calls):
    """Hold the model's first pass (a call of its own) until every one of ``calls`` is queued, then let
    them run: they share the next pass. Returns (results, errors) by index, every caller joined."""
    first = threading.Thread(target=encoder.encode, args=(["the call that holds the model"],))
    first.start()
    assert recorder.first_started.wait(WAIT)
    threads, results, errors = in_threads(lambda t: encoder.encode(t, normalize=False), [(c,) for c in calls])
    recorder.wait_queued(len(calls))
    recorder.gate.set()
    join_all([first, *threads])
    return results, errors


@pytest.fixture(scope="module")
def alone(default_bundle):
    """Each text embedded by itself, batching off: the reference rows."""
    encoder = TextEncoder(default_bundle, cache_size=0, batching=False)
    return lambda texts: np.stack([encoder.encode([t], normalize=False)[0] for t in texts])


@pytest.fixture
def fresh(default_bundle):
    """A new encoder with batching on and no cache (every text runs the model)."""
    return lambda **options: TextEncoder(default_bundle, cache_size=0, batching=True, **options)


def test_concurrent_calls_share_one_pass_with_the_bits_of_a_lone_call(fresh, alone, sas_texts):
    encoder = fresh()
    recorder = PassRecorder(encoder, gate=True)
    calls = [[sas_texts[2 * i], sas_texts[2 * i + 1]] for i in range(16)]
    calls[3] = [SPECIAL_TEXTS[4], SPECIAL_TEXTS[7]]  # Russian, Chinese
    calls[5] = [calls[6][0], "a"]  # a text two calls share, and a one-token text
    results, errors = calls_in_one_pass(encoder, recorder, calls)
    assert not errors
    assert len(recorder.passes) == 2, [len(p) for p in recorder.passes]  # all 16 calls in ONE pass
    distinct = {t for call in calls for t in call}
    assert sorted(recorder.passes[1]) == sorted(ids_of(encoder, distinct))  # each distinct text once
    for i, call in enumerate(calls):
        assert np.array_equal(results[i], alone(call)), i


def test_a_shared_pass_caches_its_rows_for_every_caller(default_bundle, alone, sas_texts):
    """The thread that runs a shared pass puts its rows into the memory cache once (not each caller):
    every distinct text of the pass is cached with its lone-call bits, and asking again runs no pass."""
    encoder = TextEncoder(default_bundle, cache_size=100, batching=True)
    recorder = PassRecorder(encoder, gate=True)
    calls = [[sas_texts[2 * i], sas_texts[2 * i + 1]] for i in range(8)]
    calls[2] = [SPECIAL_TEXTS[4], SPECIAL_TEXTS[7]]  # Russian, Chinese
    calls[5] = [calls[6][0], "a"]  # a text two calls share
    results, errors = calls_in_one_pass(encoder, recorder, calls)
    assert not errors and len(recorder.passes) == 2
    distinct = list(dict.fromkeys(t for call in calls for t in call))
    cached = encoder.cache.get_many(distinct)
    assert all(v is not None for v in cached), [t for t, v in zip(distinct, cached, strict=True) if v is None]
    assert np.array_equal(np.stack(cached), alone(distinct))
    again = encoder.encode(distinct, normalize=False)
    assert len(recorder.passes) == 2  # all from the cache
    assert np.array_equal(again, alone(distinct))


def test_the_first_shared_pass_gets_packed_passes_ready_with_the_same_bits(fresh, alone, sas_texts):
    encoder = fresh()
    texts = sas_texts[1000:1040]
    for text in texts[:3]:  # lone calls: nothing is shared, nothing is prepared
        encoder.encode([text])
    assert encoder.packed_status == "not prepared"
    recorder = PassRecorder(encoder, gate=True)
    first = threading.Thread(target=encoder.encode, args=(["holds the model"],))
    first.start()
    assert recorder.first_started.wait(WAIT)
    calls = [[texts[2 * i], texts[2 * i + 1]] for i in range(8)] + [[SPECIAL_TEXTS[4], SPECIAL_TEXTS[6]]]
    threads, results, errors = in_threads(lambda t: encoder.encode(t, normalize=False), [(c,) for c in calls])
    recorder.wait_queued(len(calls))  # queued behind a pass: the model is shared
    deadline = time.monotonic() + 20  # the cut takes about a second
    while encoder.packed_status in ("not prepared", "preparing") and time.monotonic() < deadline:
        time.sleep(0.01)  # cut in the background meanwhile
    status = encoder.packed_status
    recorder.gate.set()
    join_all([first, *threads])
    assert status == "ready", f"packed passes were not prepared: {status}"
    assert not errors
    assert len(recorder.passes) == 2 and encoder.packed_passes == 1  # the shared pass ran packed
    for i, call in enumerate(calls):
        assert np.array_equal(results[i], alone(call)), i


def test_a_lone_call_runs_at_once_in_the_callers_thread(fresh, alone, sas_texts):
    encoder = fresh()
    recorder = PassRecorder(encoder)
    texts = sas_texts[40:60]
    for text in texts[:5]:
        assert np.array_equal(encoder.encode([text], normalize=False), alone([text]))
    out = encoder.encode(texts, normalize=False)
    assert np.array_equal(out, alone(texts))
    assert len(recorder.passes) == 6  # one pass per call, no waiting for company
    assert set(recorder.threads) == {threading.get_ident()}
    assert not encoder._batcher._busy  # no pass thread was needed


def test_bad_input_fails_only_its_call_with_the_usual_error(fresh, default_bundle, alone, sas_texts):
    unbatched = TextEncoder(default_bundle, cache_size=0, batching=False)
    with pytest.raises(TypeError) as usual:
        unbatched.encode(["fine", None])
    encoder = fresh()
    recorder = PassRecorder(encoder, gate=True)
    holder = threading.Thread(target=encoder.encode, args=(["holds the model"],))
    holder.start()
    assert recorder.first_started.wait(WAIT)
    good = [[sas_texts[100 + i]] for i in range(4)]
    calls = [(good[0],), (good[1],), (["fine", None],), (good[2],)]
    threads, results, errors = in_threads(lambda t: encoder.encode(t, normalize=False), calls)
    recorder.wait_queued(3)
    recorder.gate.set()
    join_all([holder, *threads])
    assert set(errors) == {2} and str(errors[2]) == str(usual.value)
    for i, call in ((0, good[0]), (1, good[1]), (3, good[2])):
        assert np.array_equal(results[i], alone(call)), i
    assert ids_of(encoder, ["fine"])[0] not in {t for p in recorder.passes for t in p}


def test_an_error_of_the_model_fails_that_pass_only(fresh, alone, sas_texts):
    encoder = fresh()
    recorder = PassRecorder(encoder, gate=True, fail_pass=1)
    holder = threading.Thread(target=encoder.encode, args=(["holds the model"],))
    holder.start()
    assert recorder.first_started.wait(WAIT)
    threads, results, errors = in_threads(encoder.encode, [([sas_texts[200 + i]],) for i in range(3)])
    # the three queued calls run in pass 1 together, which fails
    recorder.wait_queued(3)
    recorder.gate.set()
    join_all([holder, *threads])
    assert set(errors) == {0, 1, 2}
    assert all(isinstance(e, ModelError) and "raised by the test" in str(e) for e in errors.values())
    text = sas_texts[300]
    assert np.array_equal(encoder.encode([text], normalize=False), alone([text]))  # recovered
    recorder.wait_idle()  # the pass thread goes idle once it has waited for callers to come back


def test_a_large_call_takes_turns_with_small_ones(fresh, alone, sas_texts):
    """FIFO and fair: behind a call of 400 texts cut into passes of 256 tokens, a one-text call that came
    during its first pass runs in the next pass, long before the large call ends; the large call's rows
    are the bits of a call of its own."""
    encoder = fresh(max_batch_tokens=256)
    recorder = PassRecorder(encoder, gate=True)
    large = sas_texts[1000:1400]
    small = [sas_texts[2000]]
    done_order: list[str] = []
    out: dict[str, np.ndarray] = {}

    def call(name, texts):
        out[name] = encoder.encode(texts, normalize=False)
        done_order.append(name)

    big = threading.Thread(target=call, args=("large", large))
    big.start()
    assert recorder.first_started.wait(WAIT)
    little = threading.Thread(target=call, args=("small", small))
    little.start()
    recorder.wait_queued(1)  # the small call (the rest of the large one queues when its pass is done)
    recorder.gate.set()
    join_all([big, little])
    assert done_order == ["small", "large"]
    small_ids = ids_of(encoder, small)[0]
    assert small_ids in recorder.passes[1]  # the very next pass
    assert len(recorder.passes) > 5
    assert all(sum(len(ids) for ids in p) <= 256 for p in recorder.passes)
    assert np.array_equal(out["large"], alone(large))
    assert np.array_equal(out["small"], alone(small))


def test_a_cancelled_tasks_texts_are_dropped(fresh, alone, sas_texts):
    encoder = fresh()
    recorder = PassRecorder(encoder, gate=True)
    holder = threading.Thread(target=encoder.encode, args=(["holds the model"],))
    holder.start()
    assert recorder.first_started.wait(WAIT)
    dropped = sas_texts[500:505]
    kept = sas_texts[505:508]

    async def scenario():
        doomed = asyncio.create_task(encoder.aencode(dropped))
        survivor = asyncio.create_task(encoder.aencode(kept, normalize=False))
        while encoder._batcher.waiting < 2:
            await asyncio.sleep(0.002)
        doomed.cancel()
        with pytest.raises(asyncio.CancelledError):
            await doomed
        recorder.gate.set()
        return await asyncio.wait_for(survivor, WAIT)

    rows = asyncio.run(scenario())
    join_all([holder])
    recorder.wait_idle()
    assert np.array_equal(rows, alone(kept))
    ran = {t for p in recorder.passes for t in p}
    assert not ran & set(ids_of(encoder, dropped))
    assert set(ids_of(encoder, kept)) <= ran


def test_a_full_queue_is_an_error_naming_the_setting(fresh, sas_texts):
    encoder = fresh(max_queue=2)
    recorder = PassRecorder(encoder, gate=True)
    holder = threading.Thread(target=encoder.encode, args=(["holds the model"],))
    holder.start()
    assert recorder.first_started.wait(WAIT)
    threads, results, errors = in_threads(encoder.encode, [([sas_texts[600]],), ([sas_texts[601]],)])
    recorder.wait_queued(2)
    with pytest.raises(QueueFullError, match=r"max_queue=2\); raise max_queue") as full:
        encoder.encode([sas_texts[602]])
    assert "2 calls wait for a forward pass" in str(full.value)
    recorder.gate.set()
    join_all([holder, *threads])
    assert not errors and len(results) == 2
    assert encoder.encode([sas_texts[602]]).shape == (1, 384)  # room again


def test_async_calls_give_the_sync_bits_and_share_passes(fresh, alone, sas_texts):
    encoder = fresh()
    recorder = PassRecorder(encoder)
    calls = [[sas_texts[700 + 2 * i], sas_texts[701 + 2 * i]] for i in range(64)]

    async def scenario():
        return await asyncio.gather(*(encoder.aencode(c, normalize=False) for c in calls))

    rows = asyncio.run(scenario())
    for call, got in zip(calls, rows, strict=True):
        assert np.array_equal(got, alone(call))
    assert len(recorder.passes) < len(calls)  # 64 tasks queued together: fewer passes than calls
    empty = asyncio.run(encoder.aencode([]))
    assert empty.shape == (0, 384)
    with pytest.raises(TypeError, match=r"texts\[1\] is int \(7\), not str"):
        asyncio.run(encoder.aencode(["fine", 7]))


def test_cross_encoder_pairs_share_passes_with_the_same_bits(cross_encoder_bundle, sas_texts):
    pairs = [(sas_texts[i], sas_texts[i + 1]) for i in range(800, 840)]
    unbatched = CrossEncoder(cross_encoder_bundle, batching=False)
    reference = np.concatenate([unbatched.predict([p]) for p in pairs])
    encoder = CrossEncoder(cross_encoder_bundle, batching=True)
    recorder = PassRecorder(encoder)

    async def scenario():
        return await asyncio.gather(*(encoder.apredict([p]) for p in pairs))

    rows = np.concatenate(asyncio.run(scenario()))
    assert np.array_equal(rows, reference)
    assert len(recorder.passes) < len(pairs)
    threads, results, errors = in_threads(encoder.predict, [([p],) for p in pairs])
    join_all(threads)
    assert not errors
    assert np.array_equal(np.concatenate([results[i] for i in range(len(pairs))]), reference)


def _child_scores(encoder, text, queue):
    queue.put(encoder.encode([text], normalize=False))


def test_a_forked_child_scores_while_the_parent_holds_a_pass(fresh, alone):
    encoder = fresh()
    recorder = PassRecorder(encoder, gate=True)
    holder = threading.Thread(target=encoder.encode, args=(["holds the model in the parent"],))
    holder.start()
    assert recorder.first_started.wait(WAIT)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_scores, args=(encoder, "scored in the child", queue))
    child.start()
    try:
        got = queue.get(timeout=WAIT)
    finally:
        recorder.gate.set()
        child.join(WAIT)
        join_all([holder])
    assert child.exitcode == 0
    assert np.array_equal(got, alone(["scored in the child"]))


def test_settings_are_checked_and_the_environment_turns_batching_off(default_bundle, monkeypatch):
    assert batch_settings(None, None) == (4096, 1024)
    monkeypatch.setenv("SIMKERNEL_MAX_BATCH_TOKENS", "512")
    monkeypatch.setenv("SIMKERNEL_MAX_QUEUE", "8")
    assert batch_settings(None, None) == (512, 8)
    assert batch_settings(100, 3) == (100, 3)
    monkeypatch.setenv("SIMKERNEL_MAX_QUEUE", "many")
    with pytest.raises(ValueError, match="SIMKERNEL_MAX_QUEUE='many' is not an integer"):
        TextEncoder(default_bundle)
    monkeypatch.delenv("SIMKERNEL_MAX_QUEUE")
    with pytest.raises(ValueError, match="max_batch_tokens must be a positive int, got 0"):
        TextEncoder(default_bundle, max_batch_tokens=0)
    with pytest.raises(ValueError, match="batching must be True, False or None"):
        TextEncoder(default_bundle, batching="yes")
    assert TextEncoder(default_bundle)._batcher is not None
    monkeypatch.setenv("SIMKERNEL_BATCHING", "0")
    assert TextEncoder(default_bundle)._batcher is None
    assert TextEncoder(default_bundle, batching=True)._batcher is not None
    monkeypatch.setenv("SIMKERNEL_BATCHING", "maybe")
    with pytest.raises(ValueError, match="SIMKERNEL_BATCHING='maybe' is not a switch"):
        TextEncoder(default_bundle)


def test_a_fault_of_the_pass_thread_strands_no_caller(fresh, sas_texts):
    """Should the pass thread itself fail (a fault of the batcher, not of the model), the calls waiting in
    the queue get that error instead of waiting forever, and the next call runs normally."""
    encoder = fresh()
    recorder = PassRecorder(encoder, gate=True)
    holder = threading.Thread(target=encoder.encode, args=(["holds the model"],))
    holder.start()
    assert recorder.first_started.wait(WAIT)
    threads, results, errors = in_threads(encoder.encode, [([sas_texts[900]],), ([sas_texts[901]],)])
    recorder.wait_queued(2)

    def broken_take():
        raise RuntimeError("the batcher broke (raised by the test)")

    encoder._batcher._take = broken_take  # the holder took its pass already: only the pass thread calls it
    recorder.gate.set()
    join_all([holder, *threads])
    assert set(errors) == {0, 1} and all("raised by the test" in str(e) for e in errors.values())
    del encoder._batcher._take
    assert encoder.encode([sas_texts[902]]).shape == (1, 384)


class LoopProbe:
    """Wraps a model's real pass function (batching off: the function ``aencode`` / ``apredict`` runs): each
    pass records its thread, then waits until a coroutine of the event loop has run since the pass began.
    A pass run ON the loop's thread (a blocking call where an awaited one belongs) holds the loop, so that
    coroutine never runs: after ``RELEASE_WAIT`` s the pass fails the call, naming the held loop."""

    RELEASE_WAIT = 10.0

    def __init__(self, model) -> None:
        self.inner = model._run_pass
        self.started = threading.Event()
        self.released = threading.Event()
        self.threads: list[int] = []
        model._run_pass = self._run_pass

    def _run_pass(self, encodings, batch_size):
        self.threads.append(threading.get_ident())
        self.started.set()
        if not self.released.wait(self.RELEASE_WAIT):
            raise AssertionError("the event loop was held while the model ran (a blocking call on the loop)")
        return self.inner(encodings, batch_size)

    async def await_call(self, call):
        """Await ``call`` while a coroutine of this loop releases the pass once it started; (result, the
        loop's thread)."""
        self.started.clear()
        self.released.clear()

        async def release() -> None:
            while not self.started.is_set():
                await asyncio.sleep(0.001)
            self.released.set()

        releaser = asyncio.ensure_future(release())
        result = await call
        releaser.cancel()
        return result, threading.get_ident()


def test_with_batching_off_the_async_calls_give_the_sync_bits_off_the_event_loop(
    default_bundle, cross_encoder_bundle, sas_texts, monkeypatch
):
    """SIMKERNEL_BATCHING=0 (no batcher): aencode / apredict still equal encode / predict bit for bit, and the
    model runs in a worker thread while the event loop keeps running (a coroutine of the loop releases each
    pass; a blocking call on the loop would hold it until the probe gives up)."""
    monkeypatch.setenv("SIMKERNEL_BATCHING", "0")
    encoder = TextEncoder(default_bundle, cache_size=0)
    cross = CrossEncoder(cross_encoder_bundle)
    assert encoder._batcher is None and cross._batcher is None
    texts = [sas_texts[i] for i in range(1000, 1012)] + [
        "Лев Толстой написал «Войну и мир».",
        "北京是中国的首都。",
    ]
    pairs = [(texts[i], texts[i + 1]) for i in range(len(texts) - 1)]
    want_rows = encoder.encode(texts, normalize=False)
    want_scores = cross.predict(pairs)
    want_logits = cross.predict(pairs, apply_activation=False)
    text_probe, cross_probe = LoopProbe(encoder), LoopProbe(cross)

    async def scenario():
        rows, loop_thread = await text_probe.await_call(encoder.aencode(texts, normalize=False))
        scores, _ = await cross_probe.await_call(cross.apredict(pairs))
        logits, _ = await cross_probe.await_call(cross.apredict(pairs, apply_activation=False))
        return rows, scores, logits, loop_thread

    rows, scores, logits, loop_thread = asyncio.run(scenario())
    assert np.array_equal(rows, want_rows) and rows.dtype == want_rows.dtype
    assert np.array_equal(scores, want_scores) and np.array_equal(logits, want_logits)
    for probe, passes in ((text_probe, 1), (cross_probe, 2)):
        assert len(probe.threads) == passes
        assert loop_thread not in probe.threads, "the model ran on the event loop's thread"


def test_when_a_shared_tokenization_fails_each_call_is_tokenized_alone(fresh, alone, sas_texts):
    """asyncio callers' texts are tokenized together by the pass thread; when that one tokenizer call fails,
    each call is tokenized again alone: the call at fault gets the tokenizer's error, the others their rows
    (the bits of a lone call), in the same pass."""
    encoder = fresh()
    recorder = PassRecorder(encoder, gate=True)
    batcher = encoder._batcher
    tokenize = batcher._tokenize
    calls_seen: list[list] = []
    poison = "a text the tokenizer refuses (the test's stand-in for a tokenizer fault)"

    def tokenizer(keys):
        calls_seen.append(list(keys))
        if poison in keys:
            raise ValueError("the tokenizer refused a text (raised by the test)")
        return tokenize(keys)

    batcher._tokenize = tokenizer
    good = [[sas_texts[1100 + 2 * i], sas_texts[1101 + 2 * i]] for i in range(3)]
    holder = threading.Thread(target=encoder.encode, args=(["holds the first pass"],))
    holder.start()
    assert recorder.first_started.wait(WAIT)

    async def scenario():
        tasks = [asyncio.ensure_future(encoder.aencode(c, normalize=False)) for c in good[:2]]
        tasks.append(asyncio.ensure_future(encoder.aencode(["fine", poison], normalize=False)))
        tasks.append(asyncio.ensure_future(encoder.aencode(good[2], normalize=False)))
        while batcher.waiting < 4:
            await asyncio.sleep(0.002)
        recorder.gate.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    try:
        results = asyncio.run(scenario())
    finally:
        recorder.gate.set()
        join_all([holder])
    assert isinstance(results[2], ValueError) and "raised by the test" in str(results[2])
    for call, got in zip(good, [results[0], results[1], results[3]], strict=True):
        assert np.array_equal(got, alone(call))
    shared = [k for c in (good[0], good[1], ["fine", poison], good[2]) for k in c]
    assert shared in calls_seen  # the one shared call that failed, then each call alone:
    assert calls_seen[calls_seen.index(shared) + 1 :][:4] == [good[0], good[1], ["fine", poison], good[2]]
    assert len(recorder.passes) == 2  # the holder's pass, then one pass for the three good calls
    assert sorted(recorder.passes[1]) == sorted(ids_of(encoder, [t for c in good for t in c]))


# ------------------------------------------------------------------ the gather window


@pytest.mark.parametrize(
    ("window", "waited", "expected", "came_back", "next_window"),
    [
        (0.004, 0.003, 8, 8, 0.006),  # all came back in 3 ms: twice that
        (0.004, 0.0004, 8, 8, 0.002),  # all came back at once: the floor
        (0.008, 0.008, 8, 9, 0.010),  # all came back (and more): twice 8 ms, cut to the ceiling
        (0.004, 0.004, 8, 4, 0.006),  # half came back before the window closed: 1.5 times longer
        (0.008, 0.008, 8, 6, 0.010),  # most came back: 1.5 times, cut to the ceiling
        (0.008, 0.008, 8, 3, 0.004),  # fewer than half: half as long
        (0.003, 0.003, 8, 0, 0.002),  # nobody came back: never below the floor
    ],
)
def test_the_gather_window_follows_the_callers_that_come_back(
    window, waited, expected, came_back, next_window
):
    from simkernel.runtime.inference.batcher import (
        GATHER_CEILING_SECONDS,
        GATHER_FLOOR_SECONDS,
        next_gather_window,
    )

    assert (GATHER_FLOOR_SECONDS, GATHER_CEILING_SECONDS) == (0.002, 0.010)
    assert next_gather_window(window, waited, expected, came_back) == pytest.approx(next_window, abs=1e-12)


def test_callers_that_never_come_back_keep_the_pass_thread_from_waiting_longer(fresh, alone, sas_texts):
    """A server's pattern: each caller makes one call and leaves. The pass thread, having woken them, waits
    for them once and finds none back, so its window stays at the floor: queued calls are never held for
    company that is not coming. (Repeat callers, threads scoring pair after pair, widen it: the rule is
    checked above, its effect on pass sizes measured by benchmarks/studies/shared_passes.py.)"""
    from simkernel.runtime.inference.batcher import GATHER_FLOOR_SECONDS

    encoder = fresh()
    recorder = PassRecorder(encoder, gate=True)
    batcher = encoder._batcher
    calls = [[sas_texts[300 + i]] for i in range(8)]
    results, errors = calls_in_one_pass(encoder, recorder, calls)
    recorder.wait_idle()
    assert not errors
    assert len(recorder.passes) == 2
    assert batcher.gather_window == GATHER_FLOOR_SECONDS  # waited once for the 8, none came back
    for i, call in enumerate(calls):
        assert np.array_equal(results[i], alone(call)), i
