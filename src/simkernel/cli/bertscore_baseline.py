"""``simkernel bertscore-baseline CORPUS --model ID --lang LANG -o FILE``: a BERTScore baseline for any model.

The method is bert_score's (:mod:`simkernel.scoring.bertscore.baselines`). With ``--seeds K`` the baseline
is computed for K seeds and the file holds their mean; the largest difference between two seeds' values of
each column is printed, so a user sees whether the corpus gives enough pairs for a stable baseline.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from simkernel.errors import EXIT_OK, UsageError


def run_bertscore_baseline(args: argparse.Namespace) -> int:
    from simkernel import runtime
    from simkernel.scoring.bertscore.baselines import compute_baseline, write_baseline

    corpus = Path(args.corpus)
    if not corpus.is_file():
        raise UsageError(
            f"corpus {args.corpus!r} is not a file; give a UTF-8 text file, one sentence per line"
        )
    try:
        lines = corpus.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise UsageError(f"corpus {args.corpus!r} is not UTF-8 text ({exc}); convert it with iconv") from None
    encoder = runtime.get_token_encoder(args.model, precision=args.precision, threads=args.threads)
    tables = [
        compute_baseline(encoder, lines, pairs=args.pairs, seed=args.seed + k) for k in range(args.seeds)
    ]
    mean = np.mean(np.stack(tables), axis=0).astype(np.float32)
    write_baseline(args.output, mean)
    print(
        f"BERTScore baseline of {args.model} ({args.lang}), {encoder.num_layers + 1} layers, written to {args.output}"
    )
    spread = np.ptp(np.stack(tables), axis=0) if args.seeds > 1 else None
    print(
        "layer         P          R          F"
        + ("   spread over seeds (largest of P, R, F)" if spread is not None else "")
    )
    for layer, (p, r, f) in enumerate(mean.tolist()):
        extra = f"   {spread[layer].max():.6f}" if spread is not None else ""
        print(f"{layer:5d}  {p:9.6f}  {r:9.6f}  {f:9.6f}{extra}")
    return EXIT_OK
