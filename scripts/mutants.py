"""``make mutants``: a fixed list of named mutants of the product code, each of which a test must kill.

Each mutant is one exact text replacement in one file of ``src/`` (a bug someone could plausibly write:
a blocking call where an awaited one belongs, a metric fixed at zero, a setting ignored), with the test
files (or test ids) that must catch it. The repository is copied once into a temporary folder (the files
git tracks or would track, and the compiled kernel); each mutant is applied there alone, the named tests
run against it (``PYTHONPATH`` on the copy's ``src``, so subprocesses, servers and Ray workers import the
mutant too), and the file is restored. A mutant is **killed** when pytest reports a failing test
(status 1), **survived** when every test passed, and an **error** otherwise (the tests could not run, or
the mutant's text is no longer in its file: the list must follow the code). Any survivor or error fails
the run. The table gives each mutant, the tests run, the outcome and the seconds.

Usage: python scripts/mutants.py [--list] [--only NAME ...] [--python PYTHON] [--keep]
See docs/mutants.md (what it checks, how to add a mutant).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 900  # one mutant's tests (a Ray cluster's start on a loaded 2-core machine is the slowest)


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository root
    old: str  # the exact text replaced (must occur exactly once in the file)
    new: str
    tests: tuple[str, ...]  # pytest arguments: test files or test ids
    breaks: str  # what the mutant breaks, in words


BATCHER_TESTS = "tests/runtime/inference/test_batcher.py"
PACKED_TESTS = "tests/runtime/inference/test_packed_passes.py"
ATTENTION_TESTS = "tests/runtime/inference/test_attention_kernel.py"
HUGE_PAGE_TESTS = "tests/runtime/inference/test_huge_pages.py"
IN_PROCESS = "tests/serve/test_serve_in_process.py"
QUEUED = f"{IN_PROCESS}::test_queue_depth_latencies_and_counters_while_requests_wait_at_a_held_pass"
SPEED = f"{IN_PROCESS}::test_tokens_per_second_is_the_pass_tokens_between_two_scrapes_over_their_interval"
ROUTES = f"{IN_PROCESS}::test_every_route_is_labelled_and_counts_its_input_tokens"

MUTANTS = (
    Mutant(
        "aencode-blocks-without-batcher",
        "src/simkernel/runtime/inference/text_encoder.py",
        "fresh = await run_blocking(self._embed, plan.missing_texts, batch_size)",
        "fresh = self._embed(plan.missing_texts, batch_size)",
        (f"{BATCHER_TESTS}::test_with_batching_off_the_async_calls_give_the_sync_bits_off_the_event_loop",),
        "TextEncoder.aencode with batching off runs the model on the event loop's thread",
    ),
    Mutant(
        "apredict-blocks-without-batcher",
        "src/simkernel/runtime/inference/cross_encoder.py",
        "return await run_blocking(self.predict, pairs, batch_size, apply_activation)",
        "return self.predict(pairs, batch_size, apply_activation)",
        (f"{BATCHER_TESTS}::test_with_batching_off_the_async_calls_give_the_sync_bits_off_the_event_loop",),
        "CrossEncoder.apredict with batching off runs the model on the event loop's thread",
    ),
    Mutant(
        "batcher-gather-window-grows-for-nobody",
        "src/simkernel/runtime/inference/batcher.py",
        "        grown = 0.5 * window",
        "        grown = 1.5 * window",
        (
            f"{BATCHER_TESTS}::test_callers_that_never_come_back_keep_the_pass_thread_from_waiting_longer",
            f"{BATCHER_TESTS}::test_the_gather_window_follows_the_callers_that_come_back",
        ),
        "the pass thread waits longer and longer for callers that never come back (a server's handlers)",
    ),
    Mutant(
        "batcher-no-per-call-retokenization",
        "src/simkernel/runtime/inference/batcher.py",
        "call.prepare(self._tokenize(call.keys))\n                except Exception as exc:",
        "call.prepare(self._tokenize(keys))\n                except Exception as exc:",
        (f"{BATCHER_TESTS}::test_when_a_shared_tokenization_fails_each_call_is_tokenized_alone",),
        "a failed shared tokenization fails every queued call instead of the one at fault",
    ),
    Mutant(
        "pass-texts-counted-per-call",
        "src/simkernel/runtime/inference/batcher.py",
        "self.pass_texts += len(encodings)",
        "self.pass_texts += sum(stop - start for _, start, stop in work)",
        ("tests/serve/test_batcher_counters.py",),
        "a text shared by several calls of a pass is counted once per call",
    ),
    Mutant(
        "metrics-queue-depth-zero",
        "src/simkernel/serve/metrics.py",
        "depth.add_metric([model.id], batcher.waiting)",
        "depth.add_metric([model.id], 0)",
        (QUEUED,),
        "simkernel_queue_depth is always 0",
    ),
    Mutant(
        "metrics-tokens-per-second-zero",
        "src/simkernel/serve/metrics.py",
        "speed.add_metric([model.id], rate)",
        "speed.add_metric([model.id], 0.0)",
        (SPEED,),
        "simkernel_pass_tokens_per_second is always 0.0",
    ),
    Mutant(
        "metrics-latency-zero",
        "src/simkernel/serve/metrics.py",
        "self.latency.labels(endpoint, method).observe(seconds)",
        "self.latency.labels(endpoint, method).observe(0.0)",
        (QUEUED,),
        "every request latency is observed as 0.0 s",
    ),
    Mutant(
        "metrics-input-tokens-one-per-request",
        "src/simkernel/serve/metrics.py",
        "self.input_tokens.labels(model).inc(tokens)",
        "self.input_tokens.labels(model).inc(1)",
        (QUEUED, ROUTES),
        "simkernel_input_tokens_total counts 1 per request",
    ),
    Mutant(
        "metrics-rerank-tokens-uncounted",
        "src/simkernel/serve/routes_tei.py",
        "    app_state.metrics.count_input(model.id, await model.input_tokens(pairs))\n",
        "",
        (ROUTES,),
        "/rerank's input tokens are not counted in simkernel_input_tokens_total",
    ),
    Mutant(
        "metrics-endpoint-raw-path",
        "src/simkernel/serve/metrics.py",
        "                return label\n",
        "                return path\n",
        (ROUTES,),
        "the endpoint label is the request's path, not its route's template (/v1/score/sas, not /v1/score/{metric})",
    ),
    Mutant(
        "drain-cut-counted-as-answered",
        "src/simkernel/serve/middleware.py",
        "                    send,\n                    503,",
        "                    tracked_send,\n                    503,",
        (
            "tests/serve/test_serve_load.py::test_a_drain_timeout_that_cuts_requests_short_is_a_503_in_their_shape_exit_1_and_counted",
        ),
        "a request cut short by the drain timeout, answered 503, is counted as answered (exit 0)",
    ),
    Mutant(
        "error-type-always-server-error",
        "src/simkernel/serve/errors.py",
        '"type": TYPES.get(status, "invalid_request_error")',
        '"type": "server_error"',
        ("tests/serve/test_serve_contract.py::test_malformed_json_is_400",),
        "the error body's type is server_error for every status",
    ),
    Mutant(
        "model-fault-is-422",
        "src/simkernel/serve/errors.py",
        "    except ModelError:\n        raise  # the server's fault, not the client's: answered 500 by the app\n",
        "",
        (
            f"{IN_PROCESS}::test_a_fault_of_the_model_is_a_500_in_the_contracts_shape_and_the_next_request_is_served",
        ),
        "a fault of the model is answered 422 (a client error) instead of 500",
    ),
    Mutant(
        "server-fault-in-starlettes-shape",
        "src/simkernel/serve/app.py",
        "exception_handlers={HTTPException: http_error, Exception: internal_error}",
        "exception_handlers={HTTPException: http_error}",
        (
            f"{IN_PROCESS}::test_a_fault_of_the_model_is_a_500_in_the_contracts_shape_and_the_next_request_is_served",
        ),
        "a fault of the server is answered with Starlette's plain-text 500, not the contract's JSON",
    ),
    Mutant(
        "body-limit-read-to-the-end",
        "src/simkernel/serve/bodies.py",
        "                raise _too_large(size, max_bytes)\n            chunks.append(chunk)\n    except",
        "                pass\n            chunks.append(chunk)\n        if size > max_bytes:\n            raise _too_large(size, max_bytes)\n    except",
        (
            "tests/serve/test_serve_robustness.py::test_a_streamed_body_past_the_limit_is_413_without_reading_it_all",
        ),
        "a streamed body past the limit is read to its end before the 413",
    ),
    Mutant(
        "serve-precision-ignored",
        "src/simkernel/serve/models.py",
        "runtime = get_text_encoder(model_id, precision=settings.precision)",
        "runtime = get_text_encoder(model_id)",
        ("tests/serve/test_serve_cli.py::test_precision_int8_serves_the_int8_model",),
        "serve --precision int8 still embeds with the fp32 model",
    ),
    Mutant(
        "serve-no-warning-beyond-loopback",
        "src/simkernel/serve/server.py",
        "return ipaddress.ip_address(host).is_loopback",
        "return True",
        ("tests/serve/test_serve_cli.py::test_a_host_beyond_loopback_without_a_key_is_warned_about",),
        "no warning for a host beyond loopback without a key",
    ),
    Mutant(
        "langchain-precision-fp32",
        "src/simkernel/integrations/langchain.py",
        "shared_encoder(self.model, self.precision, self.threads)",
        'shared_encoder(self.model, "fp32", self.threads)',
        ("tests/integrations/test_langchain.py::test_precision_int8_gives_the_int8_encoders_vectors",),
        "LangChain's adapter embeds in fp32 whatever precision says",
    ),
    Mutant(
        "langchain-always-normalize",
        "src/simkernel/integrations/langchain.py",
        "return embed(self.encoder, texts, self.batch_size, self.normalize)",
        "return embed(self.encoder, texts, self.batch_size, True)",
        (
            "tests/integrations/test_langchain.py::test_normalize_is_honoured_on_a_model_that_does_not_normalise_itself",
        ),
        "LangChain's adapter always normalises",
    ),
    Mutant(
        "llama-index-precision-fp32",
        "src/simkernel/integrations/llama_index.py",
        "shared_encoder(self.model_name, self.precision, self.threads)",
        'shared_encoder(self.model_name, "fp32", self.threads)',
        ("tests/integrations/test_llama_index.py::test_precision_int8_gives_the_int8_encoders_vectors",),
        "LlamaIndex's adapter embeds in fp32 whatever precision says",
    ),
    Mutant(
        "llama-index-always-normalize",
        "src/simkernel/integrations/llama_index.py",
        "return embed(self.encoder, texts, self.batch_size, self.normalize)",
        "return embed(self.encoder, texts, self.batch_size, True)",
        (
            "tests/integrations/test_llama_index.py::test_normalize_is_honoured_on_a_model_that_does_not_normalise_itself",
        ),
        "LlamaIndex's adapter always normalises",
    ),
    Mutant(
        "ray-actor-threads-default",
        "src/simkernel/ray/scorers.py",
        "threads = checked.threads or actor_threads()",
        "threads = actor_threads()",
        ("tests/ray/test_scorers.py::test_an_actor_runs_onnxruntime_on_the_cpus_ray_gave_it",),
        "a Ray scorer's threads are the actor's CPUs whatever threads says",
    ),
    Mutant(
        "ray-engine-reads-everything-first",
        "src/simkernel/ray/engine.py",
        "blocks = self._blocks(pa, inputs, size)",
        "blocks = iter(list(self._blocks(pa, inputs, size)))",
        ("tests/ray/test_cli_engine.py::test_the_engine_reads_a_block_only_once_a_scored_one_came_back",),
        "the Ray engine reads every chunk before it scores any",
    ),
    Mutant(
        "spark-install-without-the-lock",
        "src/simkernel/spark/workers.py",
        "with store.model_lock(model_id):",
        'with store.model_lock(model_id + str(__import__("os").getpid())):',
        (
            "tests/spark/test_workers.py::test_workers_of_a_node_install_the_shipped_bundle_once_under_the_lock",
        ),
        "each Spark worker of a node installs the shipped bundle under a lock of its own",
    ),
    Mutant(
        "spark-install-no-second-look",
        "src/simkernel/spark/workers.py",
        "if store.is_installed(model_id) and (dest / PRECISIONS[precision]).is_file():",
        "if False:",
        (
            "tests/spark/test_workers.py::test_workers_of_a_node_install_the_shipped_bundle_once_under_the_lock",
        ),
        "a Spark worker that waited for the lock installs the bundle again",
    ),
    Mutant(
        "shared-encoder-made-per-caller",
        "src/simkernel/runtime/shared.py",
        "instance = _INSTANCES.get(key)",
        "instance = None",
        ("tests/spark/test_workers.py::test_the_model_loads_once_per_worker_process_across_its_tasks",),
        "every caller gets a new encoder (a Spark worker loads the model once per UDF instead of once)",
    ),
    Mutant(
        "packed-stages-unchecked",
        "src/simkernel/runtime/inference/text_encoder.py",
        "                stages.check(session.run, batches, str(session.path))\n",
        "                pass\n",
        (f"{PACKED_TESTS}::test_stages_whose_bits_differ_are_refused_and_the_whole_graph_is_kept",),
        "packed stages are used without checking their bits against the whole graph",
    ),
    Mutant(
        "packed-attention-reads-keys-as-queries",
        "src/simkernel/runtime/inference/packed_passes.py",
        "query_name: query.reshape(rows, length, -1),",
        "query_name: key.reshape(rows, length, -1),",
        (PACKED_TESTS, f"{ATTENTION_TESTS}::test_a_cpu_without_the_kernel_keeps_onnxruntimes_attention"),
        "a packed pass feeds onnxruntime's attention the wrong rows (the stages refuse themselves at their bit check)",
    ),
    Mutant(
        "packed-embeddings-positions-run-on",
        "src/simkernel/runtime/inference/packed_passes.py",
        "[np.tile(np.arange(length, dtype=np.int64), rows) for rows, length in shapes]",
        "[np.arange(rows * length, dtype=np.int64) for rows, length in shapes]",
        (f"{PACKED_TESTS}::test_a_chunks_embeddings_come_from_one_run_with_each_texts_positions",),
        "a chunk's embeddings number each text's positions on from the previous text's (the check drops them)",
    ),
    Mutant(
        "packed-embeddings-ignore-padding",
        "src/simkernel/runtime/inference/packed_passes.py",
        "if self._embed_packed is not None and all(batch.attention_mask.all() for batch in batches):",
        "if self._embed_packed is not None:",
        (f"{PACKED_TESTS}::test_padded_batches_embed_per_batch_with_the_graphs_mask",),
        "a padded batch gets the packed embeddings' all-zero mask: its texts attend to the padding",
    ),
    Mutant(
        "attention-kernel-unchecked",
        "src/simkernel/runtime/inference/packed_passes.py",
        "if kernel_ok[sum_exp] and matches():",
        "if True:",
        (f"{ATTENTION_TESTS}::test_packed_stages_choose_the_kernel_and_keep_the_whole_graphs_bits",),
        "simkernel's attention kernel is used without checking its bits against onnxruntime's",
    ),
    Mutant(
        "attention-kernel-never-used",
        "src/simkernel/runtime/inference/packed_passes.py",
        "                if self._sum_exp is not None:\n",
        "                if self._sum_exp is None and self.layers < 0:\n",
        (f"{ATTENTION_TESTS}::test_packed_stages_choose_the_kernel_and_keep_the_whole_graphs_bits",),
        "passes run onnxruntime's attention although simkernel's kernel was chosen",
    ),
    Mutant(
        "huge-pages-never-collapsed",
        "src/simkernel/runtime/inference/huge_pages.py",
        "        if madvise(start, end - start, MADV_COLLAPSE) == 0:\n",
        "        if madvise(start, end - start, MADV_COLLAPSE) == 0 and end < start:\n",
        (HUGE_PAGE_TESTS,),
        "a model's weights stay on 4 KiB pages although the kernel would collapse them",
    ),
    Mutant(
        "huge-pages-untouched-collapsed",
        "src/simkernel/runtime/inference/huge_pages.py",
        "RESIDENT_SHARE = 0.5\n",
        "RESIDENT_SHARE = 0.0\n",
        (HUGE_PAGE_TESTS,),
        "memory the process never touched (a thread's stack, an arena's unused end) is filled into huge pages",
    ),
    Mutant(
        "huge-pages-stages-left-out",
        "src/simkernel/runtime/inference/text_encoder.py",
        "            with _CUTTING, collapsed_while_loading() as self.packed_huge_pages:\n",
        "            with _CUTTING:\n",
        (HUGE_PAGE_TESTS,),
        "the packed stages' weights (a second copy of the model) stay on 4 KiB pages",
    ),
    Mutant(
        "packed-passes-never-used",
        "src/simkernel/runtime/inference/text_encoder.py",
        "if stages is not None and len(batches) > 1:",
        "if stages is not None and len(batches) > 1 and stages is None:",
        (f"{PACKED_TESTS}::test_encode_with_packed_passes_gives_the_unbatched_bits",),
        "passes run the whole graph although the packed stages are ready",
    ),
    Mutant(
        "packed-chunks-unbalanced",
        "src/simkernel/runtime/inference/packed_passes.py",
        "target = total * j / wanted",
        "target = total * j / (wanted + 1)",
        (PACKED_TESTS,),
        "a pass's chunks are cut off their shares of its tokens (the pass waits for its longest chunk)",
    ),
    Mutant(
        "packed-pooled-with-another-pieces-mask",
        "src/simkernel/runtime/inference/text_encoder.py",
        "for tokens, batch in zip(tokens_of, padded, strict=True)",
        "for tokens, batch in zip(tokens_of, padded[::-1], strict=True)",
        (PACKED_TESTS,),
        "a chunk's worker pools each piece of a batch with another piece's attention mask",
    ),
    Mutant(
        "shared-pass-rows-not-cached",
        "src/simkernel/runtime/inference/text_encoder.py",
        "on_rows=self._cache.put_many,",
        "on_rows=None,",
        (
            f"{BATCHER_TESTS}::test_a_shared_pass_caches_its_rows_for_every_caller",
            "tests/runtime/inference/test_text_encoder.py::test_cache_serves_repeats_across_calls",
        ),
        "a shared pass's rows never reach the memory cache (each caller used to cache its own; now the pass does)",
    ),
    Mutant(
        "batcher-never-prepares-packed-passes",
        "src/simkernel/runtime/inference/batcher.py",
        "on_shared()  # the text encoder gets its packed passes ready (in a thread of its own)",
        "del on_shared",
        (f"{BATCHER_TESTS}::test_the_first_shared_pass_gets_packed_passes_ready_with_the_same_bits",),
        "a shared model never gets its packed passes ready",
    ),
    Mutant(
        "packed-cut-in-a-daemon-thread",
        "src/simkernel/runtime/inference/text_encoder.py",
        'name="simkernel-packed", daemon=False',
        'name="simkernel-packed", daemon=True',
        (f"{PACKED_TESTS}::test_a_process_that_exits_while_its_stages_are_cut_exits_cleanly",),
        "a process that exits while its stages are cut aborts (onnxruntime torn down under the cut)",
    ),
)


def copy_repository(dest: Path) -> None:
    """The files git tracks or would track (untracked, not ignored) and the compiled kernel, into ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    names = [n.decode() for n in listed if n]
    names += [str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*.so")]
    for name in names:
        source = ROOT / name
        if not source.is_file():  # deleted in the work tree, not yet committed
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def run_mutant(mutant: Mutant, copy: Path, python: str) -> tuple[str, float, str]:
    """(outcome, seconds, the last lines of pytest's output) of one mutant applied in ``copy``."""
    path = copy / mutant.path
    original = path.read_text(encoding="utf-8")
    found = original.count(mutant.old)
    if found != 1:
        return (
            "error",
            0.0,
            f"the mutant's text occurs {found} times in {mutant.path} (expected once): update scripts/mutants.py",
        )
    path.write_text(original.replace(mutant.old, mutant.new), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(copy / "src"), str(copy)]), "COLUMNS": "240"}
    command = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutant.tests]
    started = time.monotonic()
    try:
        result = subprocess.run(
            command, cwd=copy, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
        status, output = result.returncode, result.stdout + result.stderr
    except subprocess.TimeoutExpired as exc:
        status, output = -1, f"timed out after {TIMEOUT_S} s\n{exc.stdout or ''}"
    finally:
        path.write_text(original, encoding="utf-8")
    seconds = time.monotonic() - started
    outcome = {0: "SURVIVED", 1: "killed"}.get(status, "error")
    lines = str(output).strip().splitlines()
    if outcome == "killed":  # pytest's short summary line: the test that failed, and why
        return outcome, seconds, next((line for line in lines if line.startswith("FAILED ")), lines[-1])
    return outcome, seconds, "\n".join(lines[-15:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run these mutants only")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs pytest")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy (its path is printed)")
    args = parser.parse_args(argv)
    chosen = list(MUTANTS)
    if args.only:
        unknown = sorted(set(args.only) - {m.name for m in MUTANTS})
        if unknown:
            parser.error(f"unknown mutant(s) {', '.join(unknown)}; --list shows the names")
        chosen = [m for m in MUTANTS if m.name in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.breaks}\n    {m.path}; tests: {' '.join(m.tests)}")
        return 0
    folder = Path(tempfile.mkdtemp(prefix="simkernel-mutants-"))
    rows = []
    started = time.monotonic()
    try:
        copy = folder / "repo"
        copy_repository(copy)
        for i, mutant in enumerate(chosen, 1):
            print(f"[{i}/{len(chosen)}] {mutant.name}: {mutant.breaks} ...", flush=True)
            outcome, seconds, tail = run_mutant(mutant, copy, args.python)
            rows.append((mutant, outcome, seconds))
            print(f"    {outcome} in {seconds:.0f} s", flush=True)
            shown = tail[:400] if outcome == "killed" else tail
            print("    " + shown.replace("\n", "\n    "), flush=True)
    finally:
        if args.keep:
            print(f"the copy is kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    width = max(len(m.name) for m, _, _ in rows)
    print(f"\n{'mutant':<{width}}  {'outcome':<8}  {'seconds':>7}  tests")
    for mutant, outcome, seconds in rows:
        print(f"{mutant.name:<{width}}  {outcome:<8}  {seconds:>7.0f}  {' '.join(mutant.tests)}")
    bad = [m.name for m, outcome, _ in rows if outcome != "killed"]
    print(f"\n{len(rows) - len(bad)} of {len(rows)} mutants killed in {time.monotonic() - started:.0f} s")
    if bad:
        print(f"error: not killed: {', '.join(bad)} (see their pytest output above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
