"""Long answers: TextEncoder side by side with sentence-transformers on real prose of 60-256 tokens.

    python benchmarks/bench_long_answers.py [--per-bucket 256] [--rounds 5]

The texts (benchmarks/long_answers.py): docstrings of the running Python's standard library, bucketed by
token count (3-12 for comparison with short answers, 60-128, 129-256) and sampled with a fixed seed. Each
bucket is embedded whole (batch 32, length-sorted) by every engine in turn, round after round (the first
engine rotates), ``--threads`` threads each (default 2):

- sentence-transformers (torch CPU), the peer;
- simkernel fp32 and int8 (onnxruntime);
- simkernel bf16 (the fp32 graph on OpenVINO in bf16) where the CPU has native bf16, else the row says
  "not available" and why;
- OpenVINO f32: simkernel's OpenVINO session computing in f32 (not a precision simkernel offers: it shows
  what OpenVINO alone gives on this CPU, next to onnxruntime's fp32);
- sentence-transformers' own onnx (fp32, int8) and openvino (f32, bf16 where the CPU has it) backends
  (st_backends.py), in their own venv through a worker process.

Accuracy: per bucket, the minimum cosine of each engine's embeddings against simkernel fp32's. Load: model
load time and RSS after loading (and after 256 texts) of each simkernel engine in fresh processes
(bench_encoder.measure_loads).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import st_backends  # noqa: E402
from bench_encoder import measure_loads  # noqa: E402
from long_answers import BUCKETS, bucketed, describe  # noqa: E402
from support import (  # noqa: E402
    alternate,
    checkpoint,
    cosine_rows,
    machine,
    min_median,
    simkernel_encoder,
    st_encoder,
    store_bundle,
)

PEER = "sentence-transformers"
BF16 = "simkernel bf16"
COLUMNS = (PEER, *st_backends.ENGINES, "simkernel fp32", "simkernel int8", BF16, "OpenVINO f32")


def openvino_f32_encoder(threads: int, bundle: Path):
    """simkernel's TextEncoder with its session replaced by the OpenVINO one in f32 inference precision."""
    from simkernel.runtime import TextEncoder
    from simkernel.runtime.inference.openvino_session import OpenVinoEncoderSession

    enc = TextEncoder(bundle, precision="fp32", threads=threads, cache_size=0)
    session, tokenizer = enc._loaded()
    enc._runtime = (
        OpenVinoEncoderSession(
            session.path, (session.output_name,), threads=threads, inference_precision="f32"
        ),
        tokenizer,
    )
    return lambda texts, batch_size=32: enc.encode(texts, batch_size=batch_size)


def engines(threads: int, bundle: Path) -> tuple[dict, str | None]:
    """The engines (name -> ``encode(texts, batch_size)``) and, when bf16 cannot run here, why not."""
    from simkernel.runtime import capabilities

    out = {
        PEER: st_encoder(threads),
        "simkernel fp32": simkernel_encoder(threads, "fp32", bundle),
        "simkernel int8": simkernel_encoder(threads, "int8", bundle),
    }
    status = capabilities()["precisions"]["bf16"]
    if status["available"]:
        out[BF16] = simkernel_encoder(threads, "bf16", bundle)
    out["OpenVINO f32"] = openvino_f32_encoder(threads, bundle)
    return out, status["reason"]


def report(threads: int, rounds: int, per_bucket: int) -> str:
    from simkernel.runtime import TextEncoder

    bundle = store_bundle()
    tokenizer = TextEncoder(bundle, cache_size=0)._tokenizer
    buckets = bucketed(lambda texts: [len(e.ids) for e in tokenizer.encode(texts)], per_bucket)
    encoders, bf16_reason = engines(threads, bundle)
    for encode in encoders.values():
        encode(buckets[BUCKETS[0]][:64])  # warm-up (and simkernel's data-parallel twin)
    keyed = {f"{low}-{high}": buckets[(low, high)] for low, high in BUCKETS}
    peers = st_backends.Peers(st_backends.ENGINES, threads, keyed, Path(tempfile.mkdtemp(prefix="long-")))
    try:
        return _report(threads, rounds, bundle, keyed, encoders, peers, bf16_reason)
    finally:
        peers.close()


def _report(threads, rounds, bundle, keyed, encoders, peers, bf16_reason) -> str:
    missing = "not available"
    head = f"| tokens | texts | {PEER} |" + "".join(f" {n} | vs ST |" for n in COLUMNS[1:])
    lines = [head, "|---|---|---|" + "---|---|" * (len(COLUMNS) - 1)]
    accuracy = []
    for key, texts in keyed.items():
        calls = {n: (lambda e=e, t=texts: e(t)) for n, e in encoders.items()}
        calls.update({n: peers.call(f"encode {key} {n}") for n in peers.engines})
        times = alternate(calls, rounds)
        rate = {n: len(texts) / min_median(t)[1] for n, t in times.items()}  # texts/s at the median
        cells = [key, str(len(texts)), f"{rate[PEER]:.3g}"]
        cells += [
            f"{rate[n]:.3g} | {rate[n] / rate[PEER]:.2f}x" if n in rate else f"{missing} |"
            for n in COLUMNS[1:]
        ]
        lines.append("| " + " | ".join(cells) + " |")
        reference = encoders["simkernel fp32"](texts)
        cosines = {n: float(cosine_rows(e(texts), reference).min()) for n, e in encoders.items()}
        for n in peers.engines:
            cosines[n] = float(cosine_rows(peers.embeddings(key, n), reference).min())
        accuracy.append((key, cosines))
        print(lines[-1], file=sys.stderr, flush=True)
    ours = COLUMNS[1:]
    lines += ["", "Min cosine vs simkernel fp32:", "", "| tokens |" + "".join(f" {n} |" for n in ours)]
    lines.append("|---|" + "---|" * len(ours))
    for bucket, cos in accuracy:
        lines.append(
            f"| {bucket} |" + "".join(f" {cos[n]:.5f} |" if n in cos else f" {missing} |" for n in ours)
        )
    loads = measure_loads(
        [n for n in ours if n in encoders or n in peers.engines], threads, bundle, checkpoint()
    )
    lines += [
        "",
        "| engine | model load (s) | RSS after load (MB) | RSS after 256 texts (MB) |",
        "|---|---|---|---|",
    ]
    for name in ours:
        if name not in loads:
            lines.append(f"| {name} | {missing} | | |")
            continue
        row = loads[name]
        lines.append(f"| {name} | {row['load_s']:.2f} | {row['rss_mb']:.0f} | {row['rss_busy_mb']:.0f} |")
    lines.append("")
    if bf16_reason:
        lines.append(f"simkernel bf16: not available here: {bf16_reason}.")
    lines.append(
        f"{describe()}; texts/s at the median of {rounds} rounds (engines alternating), batch 32, "
        f"{threads} threads. Machine: {machine()}."
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-bucket", type=int, default=256, help="texts per token-count bucket")
    args = parser.parse_args()
    print(report(args.threads, args.rounds, args.per_bucket))


if __name__ == "__main__":
    main()
