"""Where a shared pass's time goes on a CPU whose cache is smaller than the fp32 model, and what was tried.

    python benchmarks/studies/shared_passes.py --run-cost      # ms per forward pass by rows x token length
    python benchmarks/studies/shared_passes.py --ratios        # 16 threads / 64 tasks vs one call, by gather window
    python benchmarks/studies/shared_passes.py --stages        # the graph cut at its layers: same bits? faster?
    python benchmarks/studies/shared_passes.py --packed        # packed passes against the whole graph, by pass size
    python benchmarks/studies/shared_passes.py --balance       # a pass's two chunks: cut between batches or rows
    python benchmarks/studies/shared_passes.py --cycle         # 16 threads: where a pass cycle's time goes
    python benchmarks/studies/shared_passes.py --shares        # one call, 16 threads, 64 tasks, by pair length
    python benchmarks/studies/shared_passes.py --callers       # 16 threads: a caller's CPU, step by step
    python benchmarks/studies/shared_passes.py --attention     # attention cores: onnxruntime's stage or the kernel
    python benchmarks/studies/shared_passes.py --huge-pages    # the model's memory on 4 KiB or 2 MiB pages

Concurrent single-pair callers share passes (simkernel.runtime.inference.batcher); a pass is split into
batches of ONE token length so that a text's bits never depend on its pass-mates. With 16 callers a pass
holds about 30 texts, so its batches hold 2-3 rows each. ``--run-cost`` times one forward pass of
all-MiniLM-L6-v2 fp32 on one thread by rows and token length: the time of a run of 2 tokens is what every
run pays whatever its size (the encoder's 42 MB of fp32 weights, read once per run: more than a 32 MB L3
holds). ``--ratios`` runs the latency benchmark's cases (benchmarks/bench_latency.py: 16 threads and 64
asyncio tasks, one new pair per call, against one call of the same pairs, which is timed before and after
each case and averaged) for fixed gather windows and the batcher's adaptive one, interleaved round by round.
``--stages`` cuts the graph at each layer's output (the embeddings, then one graph per layer), checks that
the chained stages give the whole graph's bits on every exact-length batch of 2,000 SAS texts, and times a
pass run stage by stage over all its batches (each layer's weights read once per pass, then from cache)
against whole-graph runs, both on two single-threaded workers as the batcher runs them.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support import MODEL_ID, distinct_texts  # noqa: E402

HIDDEN_MASK = "/inner/Where_1_output_0"  # the additive attention mask every layer of the exported graph reads


def _session(path: str, threads: int = 1):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])


def _encoder():
    from simkernel.runtime import TextEncoder

    return TextEncoder(MODEL_ID, cache_size=0)


def run_cost() -> None:
    """ms per run and per row, one thread, by rows and token length."""
    session = _session(str(_encoder()._session.path))
    print("| tokens | " + " | ".join(f"{rows} rows: ms/run (ms/row)" for rows in (1, 2, 4, 8, 32)) + " |")
    print("|---:|" + "---:|" * 5)
    for length in (2, 8, 16, 32):
        cells = []
        for rows in (1, 2, 4, 8, 32):
            ids = np.full((rows, length), 2000, dtype=np.int64)
            ids[:, 0], ids[:, -1] = 101, 102
            feeds = {
                "input_ids": ids,
                "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids),
            }
            for _ in range(3):
                session.run(None, feeds)
            repeats = max(5, 200 // rows)
            start = time.perf_counter()
            for _ in range(repeats):
                session.run(None, feeds)
            ms = (time.perf_counter() - start) / repeats * 1000
            cells.append(f"{ms:.2f} ({ms / rows:.2f})")
        print(f"| {length} | " + " | ".join(cells) + " |", flush=True)


def ratios(pairs_count: int, rounds: int, windows: list[float]) -> None:
    """pairs/s of 16 threads and 64 tasks over one call's, for fixed gather windows and the adaptive one
    (the product's), medians over rounds."""
    import simkernel.runtime.inference.batcher as batcher
    from bench_latency import forget, one_call, tasks, threaded
    from simkernel.components.evaluators import SASEvaluator

    texts = distinct_texts()
    pairs = [(texts[2 * i], texts[2 * i + 1]) for i in range(pairs_count)]
    evaluator = SASEvaluator(model=MODEL_ID)
    evaluator.warm_up()
    pass_batcher = evaluator._similarity_model._batcher
    adaptive = batcher.next_gather_window
    modes: list[tuple[str, float | None]] = [(f"fixed {w * 1000:g} ms", w) for w in windows]
    modes.append(("adaptive", None))
    found: dict[tuple[str, str], list[float]] = {}
    try:
        for round_ in range(rounds):
            for mode, window in modes:
                if window is None:
                    batcher.next_gather_window = adaptive
                    pass_batcher.gather_window = batcher.GATHER_FLOOR_SECONDS
                else:
                    batcher.next_gather_window = lambda *_, fixed=window: fixed
                    pass_batcher.gather_window = window
                rates, texts_per_pass = {}, {}
                for case, run in (
                    ("one call", lambda: one_call(evaluator, pairs)),
                    ("16 threads", lambda: threaded(evaluator, pairs, 16)[0]),
                    ("one call, after", lambda: one_call(evaluator, pairs)),
                    ("64 tasks", lambda: tasks(evaluator, pairs, 64)[0]),
                ):
                    forget(evaluator)
                    passes, pass_texts = pass_batcher.passes, pass_batcher.pass_texts
                    rates[case] = run()
                    texts_per_pass[case] = (pass_batcher.pass_texts - pass_texts) / max(
                        1, pass_batcher.passes - passes
                    )
                one = (rates["one call"] + rates["one call, after"]) / 2
                for case in ("16 threads", "64 tasks"):
                    found.setdefault((mode, case), []).append(rates[case] / one)
                print(
                    f"round {round_}, {mode}: one call {one:.0f} pairs/s; 16 threads {rates['16 threads'] / one:.2f} "
                    f"({texts_per_pass['16 threads']:.1f} texts a pass); 64 tasks {rates['64 tasks'] / one:.2f} "
                    f"({texts_per_pass['64 tasks']:.1f} texts a pass)",
                    flush=True,
                )
    finally:
        batcher.next_gather_window = adaptive
    print("| gather window | 16 threads / one call | 64 tasks / one call |")
    print("|---|---:|---:|")
    for mode, _ in modes:
        cells = [statistics.median(found[(mode, case)]) for case in ("16 threads", "64 tasks")]
        print(f"| {mode} | {cells[0]:.2f} | {cells[1]:.2f} |")


def _cut(model_path: Path, folder: Path) -> list[str]:
    """The graph cut at each layer's output: the embeddings' graph, then one graph per layer."""
    import onnx
    from onnx import TensorProto, helper
    from onnx.utils import Extractor

    model = onnx.load(str(model_path))
    graph = model.graph
    layers = sorted(
        {int(n.name.split("/layer.")[1].split("/")[0]) for n in graph.node if "/layer." in n.name}
    )
    hidden = ["/inner/embeddings/LayerNorm/LayerNormalization_output_0"]
    hidden += [f"/inner/encoder/layer.{i}/output/LayerNorm/LayerNormalization_output_0" for i in layers[:-1]]
    hidden.append(graph.output[0].name)
    known = {v.name for v in graph.value_info}
    for name in [*hidden, HIDDEN_MASK]:
        if name not in known:
            graph.value_info.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    extractor = Extractor(model)
    stages = [
        extractor.extract_model(["input_ids", "attention_mask", "token_type_ids"], [hidden[0], HIDDEN_MASK])
    ]
    stages += [
        extractor.extract_model([hidden[i], HIDDEN_MASK, "input_ids"], [hidden[i + 1]]) for i in layers
    ]
    paths = []
    for k, stage in enumerate(stages):
        path = folder / f"stage{k}.onnx"
        onnx.save(stage, str(path), save_as_external_data=True, location=f"stage{k}.data")
        paths.append(str(path))
    return paths


def stages(passes: int) -> None:
    from simkernel.runtime.inference.tokenizer import length_sorted_batches

    encoder = _encoder()
    tokenizer = encoder._tokenizer
    whole_path = encoder._session.path
    with tempfile.TemporaryDirectory() as folder:
        paths = _cut(Path(whole_path), Path(folder))
        workers = [(_session(str(whole_path)), [_session(p) for p in paths]) for _ in range(2)]
        first_inputs = [s.get_inputs()[0].name for s in workers[0][1]]

        def feeds(encodings, rows):
            batch = tokenizer.pad_batch([encodings[i] for i in rows])
            return {
                "input_ids": batch.input_ids,
                "attention_mask": batch.attention_mask,
                "token_type_ids": batch.token_type_ids,
            }

        def staged(stage_sessions, batch_feeds):
            held = [stage_sessions[0].run(None, f) for f in batch_feeds]
            hidden, masks = [h for h, _ in held], [m for _, m in held]
            for k in range(1, len(stage_sessions)):
                for j, f in enumerate(batch_feeds):
                    (hidden[j],) = stage_sessions[k].run(
                        None, {first_inputs[k]: hidden[j], HIDDEN_MASK: masks[j], "input_ids": f["input_ids"]}
                    )
            return hidden

        texts = distinct_texts()[:2000]
        encodings = tokenizer.encode(texts)
        batches = [feeds(encodings, rows) for rows in length_sorted_batches(encodings, 32)]
        same = sum(
            np.array_equal(workers[0][0].run(None, f)[0], staged(workers[0][1], [f])[0]) for f in batches
        )
        print(f"chained stages give the whole graph's bits on {same} of {len(batches)} exact-length batches")

        def on_two_workers(batch_feeds, use_stages: bool) -> None:
            lock = threading.Lock()
            queue = list(batch_feeds)
            halves = [batch_feeds[0::2], batch_feeds[1::2]]

            def work(w: int) -> None:
                whole, stage_sessions = workers[w]
                if use_stages:
                    staged(stage_sessions, halves[w])
                    return
                while True:
                    with lock:
                        if not queue:
                            return
                        f = queue.pop(0)
                    whole.run(None, f)

            threads = [threading.Thread(target=work, args=(w,)) for w in (0, 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        rng = np.random.default_rng(0)
        all_texts = distinct_texts()
        print("| texts in the pass | whole graph, us per token | stage by stage, us per token |")
        print("|---:|---:|---:|")
        for size in (30, 80, 960):
            found: dict[bool, list[float]] = {False: [], True: []}
            for repeat in range(passes):
                sample = [all_texts[i] for i in rng.choice(len(all_texts), size, replace=False)]
                sample_encodings = tokenizer.encode(sample)
                tokens = sum(len(e.ids) for e in sample_encodings)
                pass_feeds = [
                    feeds(sample_encodings, rows) for rows in length_sorted_batches(sample_encodings, 32)
                ]
                for use_stages in (repeat % 2 == 0, repeat % 2 == 1):
                    start = time.perf_counter()
                    on_two_workers(pass_feeds, use_stages)
                    found[use_stages].append((time.perf_counter() - start) / tokens * 1e6)
            print(
                f"| {size} | {statistics.median(found[False]):.0f} | {statistics.median(found[True]):.0f} |"
            )


def packed(passes: int) -> None:
    """us per token of one pass by its size: the whole graph per exact-length batch (two single-threaded
    workers, what a pass ran before) against packed stages (two chunks on the same workers), interleaved;
    and two packed chunks at once against one (what two concurrent chunks cost each other)."""
    from simkernel.runtime.inference.tokenizer import length_sorted_batches

    encoder = _encoder()
    assert encoder.prepare_packed_passes(), encoder.packed_status
    stages_ready = encoder._stages
    tokenizer = encoder._tokenizer
    all_texts = distinct_texts()
    rng = np.random.default_rng(0)
    print("| texts in the pass | whole graph, us per token | packed, us per token | packed / whole |")
    print("|---:|---:|---:|---:|")
    for size in (12, 30, 80, 300, 800):
        found: dict[str, list[float]] = {"whole": [], "packed": []}
        for repeat in range(passes):
            sample = [all_texts[i] for i in rng.choice(len(all_texts), size, replace=False)]
            encodings = tokenizer.encode(sample)
            tokens = sum(len(e.ids) for e in encodings)
            for mode in ("whole", "packed") if repeat % 2 == 0 else ("packed", "whole"):
                encoder._stages = stages_ready if mode == "packed" else None
                start = time.perf_counter()
                encoder._run_pass(encodings, 32)
                found[mode].append((time.perf_counter() - start) / tokens * 1e6)
        whole, packed_ = statistics.median(found["whole"]), statistics.median(found["packed"])
        print(f"| {size} | {whole:.0f} | {packed_:.0f} | {packed_ / whole:.2f} |")
    print()
    print("| texts in a chunk | one chunk at a time, us per token | two at once, us per token and thread |")
    print("|---:|---:|---:|")
    for size in (12, 30):
        chunks = []
        for _ in range(4 * passes):
            encodings = tokenizer.encode(
                [all_texts[i] for i in rng.choice(len(all_texts), size, replace=False)]
            )
            batches = [
                tokenizer.pad_batch([encodings[i] for i in rows])
                for rows in length_sorted_batches(encodings, 32)
            ]
            chunks.append((batches, sum(len(e.ids) for e in encodings)))
        tokens = sum(t for _, t in chunks)
        start = time.perf_counter()
        for batches, _ in chunks:
            stages_ready.run_chunk(batches)
        alone = (time.perf_counter() - start) / tokens * 1e6

        def share(part) -> None:
            for batches, _ in part:
                stages_ready.run_chunk(batches)

        threads = [threading.Thread(target=share, args=(chunks[k::2],)) for k in (0, 1)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        both = (time.perf_counter() - start) / tokens * 1e6 * 2
        print(f"| {size} | {alone:.0f} | {both:.0f} |")


def _chunks_of_whole_batches(batches, lengths, workers: int) -> list[list[np.ndarray]]:
    """How packed passes cut a pass before: whole batches per chunk, each cut at the batch boundary nearest
    to its share of the tokens; one chunk per worker, or as many as keep a chunk near CHUNK_TOKENS."""
    from simkernel.runtime.inference.packed_passes import CHUNK_TOKENS

    tokens = [len(rows) * length for rows, length in zip(batches, lengths, strict=True)]
    wanted = min(len(tokens), max(workers, -(-sum(tokens) // CHUNK_TOKENS)))
    ends = np.cumsum(tokens)
    cuts = [0]
    for j in range(1, wanted):
        target = ends[-1] * j / wanted
        cut = int(np.searchsorted(ends, target))
        if cut < len(tokens) and ends[cut] - target < target - (ends[cut - 1] if cut else 0):
            cut += 1
        cuts.append(min(max(cut, cuts[-1] + 1), len(tokens) - (wanted - j)))
    cuts.append(len(tokens))
    return [list(batches[a:b]) for a, b in itertools.pairwise(cuts) if b > a]


def balance(passes: int) -> None:
    """Passes of 28 texts (what 16 single-pair callers share) as two packed chunks on two threads, cut at
    batch boundaries (before) or to the row (:func:`chunk_rows`), interleaved: how much longer the pass
    waits for its longer chunk than the chunks' mean, and the pass's us per token (wall); then the latency
    benchmark's one call and 16 threads with each cut (:func:`_balance_in_the_latency_cases`)."""
    from simkernel.runtime.inference.packed_passes import chunk_rows
    from simkernel.runtime.inference.tokenizer import length_sorted_batches

    encoder = _encoder()
    assert encoder.prepare_packed_passes(), encoder.packed_status
    stages_ready, tokenizer = encoder._stages, encoder._tokenizer
    all_texts = distinct_texts()
    rng = np.random.default_rng(0)
    cutters = {"whole batches": _chunks_of_whole_batches, "to the row": chunk_rows}
    print("| texts | chunks cut | longest chunk / mean chunk (median) | pass us per token (median) |")
    print("|---|---|---:|---:|")
    for label, texts in (
        ("SAS texts 4,000-4,800 (short)", all_texts[4000:4800]),
        ("random SAS texts", [all_texts[i] for i in rng.permutation(len(all_texts))[:800]]),
    ):
        found: dict[str, list[tuple[float, float]]] = {name: [] for name in cutters}
        for repeat in range(passes):
            for start in range(0, 28 * (len(texts) // 28), 28):
                encodings = tokenizer.encode(texts[start : start + 28])
                batches = length_sorted_batches(encodings, 32)
                lengths = [len(encodings[rows[0]].ids) for rows in batches]
                tokens = sum(len(e.ids) for e in encodings)
                for name in cutters if repeat % 2 == 0 else list(cutters)[::-1]:
                    chunks = [
                        [tokenizer.pad_batch([encodings[i] for i in rows]) for rows in chunk]
                        for chunk in cutters[name](batches, lengths, 2)
                    ]
                    seconds = [0.0] * len(chunks)

                    def run(k: int, chunks=chunks, seconds=seconds) -> None:
                        began = time.perf_counter()
                        stages_ready.run_chunk(chunks[k])
                        seconds[k] = time.perf_counter() - began

                    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(chunks))]
                    began = time.perf_counter()
                    for t in threads:
                        t.start()
                    for t in threads:
                        t.join()
                    wall = time.perf_counter() - began
                    found[name].append((max(seconds) / statistics.mean(seconds), wall / tokens * 1e6))
        for name, values in found.items():
            waits = statistics.median(v[0] for v in values)
            speed = statistics.median(v[1] for v in values)
            print(f"| {label} | {name} | {waits:.2f} | {speed:.0f} |")
    print()
    _balance_in_the_latency_cases(cutters, passes)


def _balance_in_the_latency_cases(cutters: dict, rounds: int) -> None:
    """The latency benchmark's one call and 16 threads (one new pair a call) with each way of cutting the
    chunks, on one evaluator, interleaved round by round, on three stretches of pairs (the SAS texts' lengths
    differ by stretch): pairs/s, medians over rounds."""
    import simkernel.runtime.inference.text_encoder as text_encoder
    from bench_latency import forget, one_call, threaded

    texts = distinct_texts()
    evaluator = _packed_evaluator()
    product = text_encoder.chunk_rows
    print("| pairs | chunks cut | one call, pairs/s | 16 threads, pairs/s | share |")
    print("|---|---|---:|---:|---:|")
    try:
        for first in (2000, 0, 1000):  # the shortest SAS answers, then two stretches of longer ones
            pairs = [(texts[2 * i], texts[2 * i + 1]) for i in range(first, first + 400)]
            found: dict[str, list[tuple[float, float]]] = {name: [] for name in cutters}
            for round_ in range(rounds):
                for name in cutters if round_ % 2 == 0 else list(cutters)[::-1]:
                    text_encoder.chunk_rows = cutters[name]
                    forget(evaluator)
                    one = one_call(evaluator, pairs)
                    forget(evaluator)
                    found[name].append((one, threaded(evaluator, pairs, 16)[0]))
            for name, values in found.items():
                one = statistics.median(v[0] for v in values)
                threads = statistics.median(v[1] for v in values)
                share = statistics.median(v[1] / v[0] for v in values)
                print(f"| {first}-{first + 400} | {name} | {one:.0f} | {threads:.0f} | {share:.2f} |")
    finally:
        text_encoder.chunk_rows = product


def _packed_evaluator():
    """A warmed-up SASEvaluator on the default model whose packed passes are ready (as once it is shared)."""
    from simkernel.components.evaluators import SASEvaluator

    evaluator = SASEvaluator(model=MODEL_ID)
    evaluator.warm_up()
    assert evaluator._similarity_model.prepare_packed_passes(), evaluator._similarity_model.packed_status
    return evaluator


def _short_pairs_and_evaluator():
    """The shortest SAS answers as pairs (pairs 2,000-2,400, about 5 tokens a text) and
    :func:`_packed_evaluator`."""
    texts = distinct_texts()
    return [(texts[2 * i], texts[2 * i + 1]) for i in range(2000, 2400)], _packed_evaluator()


def cycle(rounds: int) -> None:
    """16 threads scoring one new pair per call (bench_latency's case) on the shortest SAS answers (pairs
    2,000-2,400, about 5 tokens a text), instrumented: the pass's time and the time from its end to the
    next pass (the callers coming back), the CPU seconds of the encoder's workers (the chunks) against one
    call's whole process, each caller's CPU from its wake-up to its next call (thread CPU time), and how
    much 200 us more of GIL-held Python per call costs (is that Python on the critical path?)."""
    import resource

    from bench_latency import forget, one_call, threaded
    from simkernel.runtime.inference.batch_call import QueuedCall

    pairs, evaluator = _short_pairs_and_evaluator()
    encoder = evaluator._similarity_model
    pass_batcher = encoder._batcher
    run_pass, enqueue, result, run = (
        pass_batcher._run_pass,
        pass_batcher._enqueue,
        QueuedCall.result,
        evaluator.run,
    )
    spans: list[tuple[float, float]] = []
    woke: dict[int, float] = {}
    caller_cpu: list[float] = []

    def timed_pass(encodings, batch_size):
        began = time.perf_counter()
        try:
            return run_pass(encodings, batch_size)
        finally:
            spans.append((began, time.perf_counter()))

    def timed_enqueue(call):
        began = woke.pop(threading.get_ident(), None)
        if began is not None:
            caller_cpu.append(time.thread_time() - began)
        return enqueue(call)

    def timed_result(call):
        woke[threading.get_ident()] = time.thread_time()
        return result(call)

    def process_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def workers_cpu() -> float:
        ids = {str(t.native_id) for t in threading.enumerate() if t.name.startswith("simkernel-batch")}
        total = 0.0
        for tid in ids:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def spin(microseconds: float) -> None:
        end = time.perf_counter() + microseconds / 1e6
        while time.perf_counter() < end:
            pass

    pass_batcher._run_pass, pass_batcher._enqueue, QueuedCall.result = timed_pass, timed_enqueue, timed_result
    found: dict[str, list[float]] = {}
    try:
        for _ in range(rounds):
            forget(evaluator)
            cpu = process_cpu()
            found.setdefault("one call, pairs/s", []).append(one_call(evaluator, pairs))
            found.setdefault("one call, process CPU s", []).append(process_cpu() - cpu)
            forget(evaluator)
            spans.clear()
            caller_cpu.clear()
            cpu, passes, pass_texts = workers_cpu(), pass_batcher.passes, pass_batcher.pass_texts
            found.setdefault("16 threads, pairs/s", []).append(threaded(evaluator, pairs, 16)[0])
            found.setdefault("16 threads, workers' CPU s", []).append(workers_cpu() - cpu)
            found.setdefault("texts a pass", []).append(
                (pass_batcher.pass_texts - pass_texts) / max(1, pass_batcher.passes - passes)
            )
            found.setdefault("pass ms", []).append(statistics.median(b - a for a, b in spans) * 1e3)
            found.setdefault("end of a pass to the next ms", []).append(
                statistics.median(c - b for (_, b), (c, _) in itertools.pairwise(spans)) * 1e3
            )
            found.setdefault("a caller's CPU from wake-up to its next call us", []).append(
                statistics.median(caller_cpu) * 1e6
            )
            forget(evaluator)
            evaluator.run = lambda *a, **k: (spin(200), run(*a, **k))[1]
            found.setdefault("16 threads, 200 us more Python a call, pairs/s", []).append(
                threaded(evaluator, pairs, 16)[0]
            )
            evaluator.run = run
    finally:
        pass_batcher._run_pass, pass_batcher._enqueue, QueuedCall.result = run_pass, enqueue, result
        evaluator.run = run
    print("| measure | median | rounds |")
    print("|---|---:|---|")
    for name, values in found.items():
        print(f"| {name} | {statistics.median(values):.2f} | {' '.join(f'{v:.2f}' for v in values)} |")


def shares(rounds: int) -> None:
    """The latency benchmark's one call, 16 threads and 64 tasks (one new pair a call) on three stretches of
    pairs (the SAS texts' lengths differ by stretch), in one process: one call's pairs/s (timed before and
    after the two cases, averaged) and each case's share of it, medians over rounds. Run it on two commits
    one process after the other, several times, to compare them on a machine whose speed drifts."""
    from bench_latency import forget, one_call, tasks, threaded

    texts = distinct_texts()
    evaluator = _packed_evaluator()
    print("| pairs | one call, pairs/s | 16 threads / one call | 64 tasks / one call |")
    print("|---|---:|---:|---:|")
    for first in (2000, 0, 1000):  # the shortest SAS answers, then two stretches of longer ones
        pairs = [(texts[2 * i], texts[2 * i + 1]) for i in range(first, first + 400)]
        forget(evaluator)
        threaded(evaluator, pairs[:64], 16)  # warm-up
        found = []
        for _ in range(rounds):
            forget(evaluator)
            before = one_call(evaluator, pairs)
            forget(evaluator)
            in_threads = threaded(evaluator, pairs, 16)[0]
            forget(evaluator)
            in_tasks = tasks(evaluator, pairs, 64)[0]
            forget(evaluator)
            one = (before + one_call(evaluator, pairs)) / 2
            found.append((one, in_threads / one, in_tasks / one))
        cells = [statistics.median(v[i] for v in found) for i in range(3)]
        print(f"| {first}-{first + 400} | {cells[0]:.0f} | {cells[1]:.2f} | {cells[2]:.2f} |", flush=True)


def callers(rounds: int) -> None:
    """16 threads scoring one new pair per call on the shortest SAS answers, each caller's thread CPU and
    wall time step by step (medians over calls, per round): from ``run()`` to the tokenizer, the
    tokenizer, to the queue, the wait for the pass, the assembly of the call's rows, the scores."""
    import collections

    import simkernel.runtime.inference.text_encoder as text_encoder
    from bench_latency import forget, threaded
    from simkernel.runtime.inference.batch_call import QueuedCall

    pairs, evaluator = _short_pairs_and_evaluator()
    encoder = evaluator._similarity_model
    pass_batcher = encoder._batcher
    marks: dict[int, list[tuple[str, float, float]]] = collections.defaultdict(list)

    def mark(label: str) -> None:
        marks[threading.get_ident()].append((label, time.thread_time(), time.perf_counter()))

    def marked(function, before: str, after: str | None = None):
        def wrapper(*args, **kwargs):
            mark(before)
            out = function(*args, **kwargs)
            if after is not None:
                mark(after)
            return out

        return wrapper

    originals = (evaluator.run, pass_batcher._tokenize, pass_batcher._enqueue, QueuedCall.result)
    assemble, encode = text_encoder.BundleTextEncoder._assemble, text_encoder.BundleTextEncoder.encode
    evaluator.run = marked(evaluator.run, "run()", "run() returns")
    pass_batcher._tokenize = marked(pass_batcher._tokenize, "tokenizer", "tokenized")
    pass_batcher._enqueue = marked(pass_batcher._enqueue, "queued")
    QueuedCall.result = marked(QueuedCall.result, "woken")
    text_encoder.BundleTextEncoder._assemble = marked(assemble, "assembly", "assembled")
    text_encoder.BundleTextEncoder.encode = marked(encode, "encode()", "encode() returns")
    try:
        for round_ in range(rounds):
            marks.clear()
            forget(evaluator)
            rate = threaded(evaluator, pairs, 16)[0]
            cpu: dict[str, list[float]] = collections.defaultdict(list)
            wall: dict[str, list[float]] = collections.defaultdict(list)
            for steps in marks.values():
                for (a, cpu_a, wall_a), (b, cpu_b, wall_b) in itertools.pairwise(steps):
                    cpu[f"{a} -> {b}"].append(cpu_b - cpu_a)
                    wall[f"{a} -> {b}"].append(wall_b - wall_a)
            print(f"round {round_}: 16 threads {rate:.0f} pairs/s")
            print("| step | calls | CPU us | wall us |")
            print("|---|---:|---:|---:|")
            for step, values in cpu.items():
                if len(values) >= len(pairs) // 2:
                    print(
                        f"| {step} | {len(values)} | {statistics.median(values) * 1e6:.1f} | "
                        f"{statistics.median(wall[step]) * 1e6:.1f} |"
                    )
    finally:
        evaluator.run, pass_batcher._tokenize, pass_batcher._enqueue, QueuedCall.result = originals
        text_encoder.BundleTextEncoder._assemble, text_encoder.BundleTextEncoder.encode = assemble, encode


def _first_chunk(tokenizer, texts: list[str]) -> list:
    """The padded batches of the first of the two chunks a packed pass of ``texts`` runs on two workers
    (32 texts: a 16-thread pass's half; 800: a chunk of one call)."""
    from simkernel.runtime.inference.packed_passes import chunk_rows
    from simkernel.runtime.inference.tokenizer import length_sorted_batches

    encodings = tokenizer.encode(texts)
    batches = length_sorted_batches(encodings, 32)
    chunk = chunk_rows(batches, [len(encodings[rows[0]]) for rows in batches], 2)[0]
    return [tokenizer.pad_batch([encodings[i] for i in rows]) for rows in chunk]


def attention(rounds: int) -> None:
    """The attention cores of a packed pass: onnxruntime's attention stage against simkernel's kernel
    (csrc/attention.h), microseconds per call by rows x token length (one thread, random inputs), then a
    chunk of a 16-thread pass (13-16 short texts) and one of a one-call pass (about 415 tokens) timed whole
    with each of them, min of ``rounds`` x 20 runs."""
    from simkernel import _attention
    from simkernel.runtime import TextEncoder

    encoder = TextEncoder(MODEL_ID, cache_size=0, batching=False)
    assert encoder.prepare_packed_passes(), encoder.packed_status
    stages = encoder._stages
    sum_exp = stages._sum_exp
    print(f"attention kernel: {stages.attention_kernel}; packed embeddings: {stages.packed_embeddings}\n")
    if sum_exp is None:
        print("simkernel's kernel is not used on this CPU: nothing to compare")
        return
    alpha, width = stages._native[0]
    rng = np.random.default_rng(0)
    print("| rows x tokens | onnxruntime's stage us | simkernel's kernel us | same bits |")
    print("|---|---:|---:|---|")
    for rows, length in ((1, 5), (3, 8), (8, 12), (16, 30), (4, 60), (2, 128)):
        query, key, value = (rng.standard_normal((rows * length, 384)).astype(np.float32) for _ in range(3))
        mask = np.zeros((rows, 1, length, length), dtype=np.float32)
        out = np.empty_like(query)

        def onnxruntime_run(query=query, key=key, value=value, mask=mask, rows=rows, length=length):
            return stages._stage_attention(0, query, key, value, query, mask, rows, length)

        def kernel_run(query=query, key=key, value=value, mask=mask, rows=rows, length=length, out=out):
            _attention.attention(query, key, value, mask, rows, length, 384 // width, alpha, sum_exp, out)

        times = []
        for run in (onnxruntime_run, kernel_run):
            best = float("inf")
            for _ in range(rounds):
                start = time.perf_counter()
                for _ in range(200):
                    run()
                best = min(best, (time.perf_counter() - start) / 200)
            times.append(best * 1e6)
        same = np.array_equal(onnxruntime_run(), out)
        print(f"| {rows} x {length} | {times[0]:.1f} | {times[1]:.1f} | {same} |")
    texts = distinct_texts()
    tokenizer = encoder._tokenizer
    print("\n| chunk | onnxruntime's attention ms | simkernel's kernel ms |")
    print("|---|---:|---:|")
    for label, sample in (("16-thread pass", texts[4000:4032]), ("one call", texts[4000:4800])):
        padded = _first_chunk(tokenizer, sample)
        tokens = sum(batch.input_ids.size for batch in padded)
        times = []
        for kernel in (None, sum_exp):
            stages._sum_exp = kernel
            stages.run_chunk(padded)
            best = float("inf")
            for _ in range(rounds):
                start = time.perf_counter()
                for _ in range(20):
                    stages.run_chunk(padded)
                best = min(best, (time.perf_counter() - start) / 20)
            times.append(best * 1e3)
        stages._sum_exp = sum_exp
        print(f"| {label}: {len(padded)} batches, {tokens} tokens | {times[0]:.2f} | {times[1]:.2f} |")


def _huge_pages_probe() -> None:
    """One process of ``--huge-pages``: prints one JSON line of its measurements (see huge_pages)."""
    import json

    from bench_latency import forget, one_call, threaded

    texts = distinct_texts()
    evaluator = _packed_evaluator()
    encoder = evaluator._similarity_model
    stages, tokenizer = encoder._stages, encoder._tokenizer
    found: dict[str, float] = {}
    for label, sample in (("chunk_16_threads_ms", texts[4000:4032]), ("chunk_one_call_ms", texts[4000:4800])):
        padded = _first_chunk(tokenizer, sample)
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(10):
                stages.run_chunk(padded)
            best = min(best, (time.perf_counter() - start) / 10)
        found[label] = best * 1e3
    lone = []
    for text in texts[:300]:
        start = time.perf_counter()
        batch = tokenizer.pad_batch(tokenizer.encode([text]))
        encoder._session.run(batch.input_ids, batch.attention_mask, batch.token_type_ids)
        lone.append(time.perf_counter() - start)
    found["lone_text_p50_ms"] = statistics.median(lone) * 1e3
    pairs = [(texts[2 * i], texts[2 * i + 1]) for i in range(2000, 2400)]
    forget(evaluator)
    threaded(evaluator, pairs[:64], 16)  # warm-up
    rates = []
    for _ in range(2):
        forget(evaluator)
        one = one_call(evaluator, pairs)
        forget(evaluator)
        rates.append((one, threaded(evaluator, pairs, 16)[0]))
    found["one_call_pairs_s"] = statistics.median(r[0] for r in rates)
    found["share_16_threads"] = statistics.median(r[1] / r[0] for r in rates)
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith(("Rss:", "AnonHugePages:")):
                found[line.split(":")[0] + "_mib"] = int(line.split()[1]) / 1024
    found["collapsed_mib"] = (encoder._session.huge_page_bytes + encoder.packed_huge_pages.collapsed) / 2**20
    print(json.dumps(found))


def huge_pages(rounds: int) -> None:
    """The model's memory on 4 KiB pages (``SIMKERNEL_HUGE_PAGES=0``) or collapsed onto 2 MiB pages (the
    default where the kernel allows, simkernel.runtime.inference.huge_pages): one process each, alternating,
    ``rounds`` times. Each times a chunk of a 16-thread pass (13 short texts) and of one call (about 415
    tokens) on one thread (min of 5 x 10), a lone text through the whole graph (p50 of 300), and one call and
    16 threads on the shortest pairs (medians of 2), with RSS and the memory on huge pages."""
    import json
    import subprocess

    runs: dict[str, list[dict]] = {"0": [], "1": []}
    for _ in range(rounds):
        for switch in runs:
            env = {**os.environ, "SIMKERNEL_HUGE_PAGES": switch}
            done = subprocess.run(
                [sys.executable, __file__, "--huge-pages-probe"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            runs[switch].append(json.loads(done.stdout.splitlines()[-1]))
    keys = list(runs["0"][0])
    print("| measure | 4 KiB pages (SIMKERNEL_HUGE_PAGES=0), each run | huge pages, each run |")
    print("|---|---|---|")
    for key in keys:
        cells = [" / ".join(f"{run[key]:.3g}" for run in runs[switch]) for switch in runs]
        print(f"| {key} | {cells[0]} | {cells[1]} |")


# the studies by option, in the order they run when several are chosen
STUDIES = {
    "run-cost": lambda args: run_cost(),
    "ratios": lambda args: ratios(args.pairs, args.rounds, [float(w) for w in args.windows.split(",")]),
    "stages": lambda args: stages(args.passes),
    "packed": lambda args: packed(args.passes),
    "balance": lambda args: balance(args.passes),
    "cycle": lambda args: cycle(args.rounds),
    "shares": lambda args: shares(args.rounds),
    "callers": lambda args: callers(args.rounds),
    "attention": lambda args: attention(args.rounds),
    "huge-pages": lambda args: huge_pages(args.rounds),
    "huge-pages-probe": lambda args: _huge_pages_probe(),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in STUDIES:
        hidden = name.endswith("-probe")  # a child process of another study
        parser.add_argument(f"--{name}", action="store_true", help=argparse.SUPPRESS if hidden else None)
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--windows", default="0.002,0.005,0.010", help="gather windows in seconds, comma-separated"
    )
    parser.add_argument("--passes", type=int, default=6)
    args = parser.parse_args()
    chosen = [name for name in STUDIES if getattr(args, name.replace("-", "_"))]
    if not chosen:
        parser.error("choose at least one of " + ", ".join(f"--{name}" for name in STUDIES))
    for name in chosen:
        STUDIES[name](args)


if __name__ == "__main__":
    main()
