"""Cosine kernel speed: simkernel beside numpy, simsimd and torch (sentence-transformers' cos_sim), in turns.

    python benchmarks/bench_kernels.py [--rounds 20]

Cases (every peer computes the same numbers; each is checked against numpy in float64 before timing):

- ``1 x 8, d=384, max + mean``: 1 output against 8 references: the cosines, their max and their mean,
  Python call included (the reference-match metric's inner step).
- ``10,000 paired rows, d=384``: 10,000 row-wise cosines (the SAS step).
- ``1024 x 1024, d=768, max + mean per row``: a cosine matrix, then the max and the mean of every row.
- ``BERTScore greedy matching, 64 pairs of 5-60 tokens, d=768``: per pair, every candidate token's best
  cosine and every reference token's, idf-weighted means, F1 (``bert_score.utils.greedy_cos_idf``). numpy
  and torch run it as BERTScore does, on a padded batch (one ``B x K x K`` similarity tensor by a batched
  matmul, masks, maxima; the padded tensors are made beforehand, to their favour); simkernel's
  ``greedy_match`` takes the ragged rows as they are. simsimd has no such function (its cells stay empty).

Peers: numpy (BLAS matmul / einsum, its own threads), simsimd (``cdist`` / ``cosine``; single-threaded, as
shipped), torch through ``sentence_transformers.util.cos_sim`` / ``pairwise_cos_sim`` on tensors made
beforehand. They are declared by the ``bench`` extra (``pip install -e '.[bench]'``); a missing one is an
error, never a skipped row. Each turn of an engine times as many calls as take ~10 ms (min 1), and the
engines take turns in every round (benchmarks/support.py).
"""

from __future__ import annotations

import argparse

import numpy as np

from support import alternate, iterations_for, machine, min_median, speedup_table

try:
    import simsimd
    import torch
    from sentence_transformers import util
except ImportError as error:  # a peer missing would silently drop its column: refuse instead
    raise SystemExit(
        f"bench_kernels needs its peers ({error.name} is missing): pip install -e '.[bench]'"
    ) from error

from simkernel import kernels

RNG = np.random.default_rng(2026)


def _rows(n: int, d: int) -> np.ndarray:
    return RNG.standard_normal((n, d)).astype(np.float32)


def _unit(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def small_case() -> tuple[dict, object]:
    q, r = _rows(1, 384), _rows(8, 384)
    offsets = np.array([0, 8], np.int64)
    tq, tr = torch.from_numpy(q), torch.from_numpy(r)

    def numpy_run():
        sims = (r / np.linalg.norm(r, axis=1, keepdims=True)) @ (q[0] / np.linalg.norm(q[0]))
        return sims.max(), sims.mean()

    def simsimd_run():
        sims = 1.0 - np.asarray(simsimd.cosine(q[0], r))
        return sims.max(), sims.mean()

    def torch_run():
        sims = util.cos_sim(tq, tr)
        return sims.max().item(), sims.mean().item()

    def simkernel_run():
        maxes, means = kernels.cosine_reduce(q, r, offsets, reduce=("max", "mean"))
        return maxes[0], means[0]

    sims = _unit(r) @ _unit(q)[0]
    engines = {"numpy": numpy_run, "simsimd": simsimd_run, "torch": torch_run, "simkernel": simkernel_run}
    return engines, lambda out, name: np.testing.assert_allclose(out, (sims.max(), sims.mean()), atol=1e-5)


def paired_case() -> tuple[dict, object]:
    a, b = _rows(10_000, 384), _rows(10_000, 384)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    expected = np.einsum("ij,ij->i", _unit(a), _unit(b))
    engines = {
        "numpy": lambda: (
            np.einsum("ij,ij->i", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        ),
        # distances (1 - cosine): the subtraction is left out of its time, to its favour
        "simsimd": lambda: simsimd.cosine(a, b),
        "torch": lambda: util.pairwise_cos_sim(ta, tb),
        "simkernel": lambda: kernels.paired_cosine(a, b),
    }
    checks = {"simsimd": lambda out: 1.0 - np.asarray(out, np.float64)}

    def check(out, name):
        out = checks.get(name, lambda o: np.asarray(o, np.float64))(out)
        np.testing.assert_allclose(out, expected, atol=1e-5)

    return engines, check


def matrix_case() -> tuple[dict, object]:
    a, b = _rows(1024, 768), _rows(1024, 768)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    sims = _unit(a) @ _unit(b).T

    def numpy_run():
        s = (a / np.linalg.norm(a, axis=1, keepdims=True)) @ (b / np.linalg.norm(b, axis=1, keepdims=True)).T
        return s.max(axis=1), s.mean(axis=1)

    def simsimd_run():
        s = 1.0 - np.asarray(simsimd.cdist(a, b, metric="cosine"))
        return s.max(axis=1), s.mean(axis=1)

    def torch_run():
        s = util.cos_sim(ta, tb)
        return s.max(dim=1).values, s.mean(dim=1)

    engines = {
        "numpy": numpy_run,
        "simsimd": simsimd_run,
        "torch": torch_run,
        "simkernel": lambda: kernels.cosine_reduce(a, b, reduce=("max", "mean")),
    }

    def check(out, name):
        np.testing.assert_allclose(np.asarray(out[0], np.float64), sims.max(axis=1), atol=1e-5)
        np.testing.assert_allclose(np.asarray(out[1], np.float64), sims.mean(axis=1), atol=1e-5)

    return engines, check


def greedy_case() -> tuple[dict, object]:
    n_pairs, d = 64, 768
    cand_lengths, ref_lengths = RNG.integers(5, 61, n_pairs), RNG.integers(5, 61, n_pairs)
    # |normal| rows: every cosine is positive, as between contextual embeddings, so the 0 that BERTScore's
    # mask leaves in a padded cell never wins a maximum and the padded peers compute the same numbers
    cand = _unit(np.abs(_rows(int(cand_lengths.sum()), d))).astype(np.float32)
    ref = _unit(np.abs(_rows(int(ref_lengths.sum()), d))).astype(np.float32)
    cand_offsets = np.concatenate([[0], np.cumsum(cand_lengths)]).astype(np.int64)
    ref_offsets = np.concatenate([[0], np.cumsum(ref_lengths)]).astype(np.int64)
    cand_idf = RNG.uniform(0.5, 3.0, len(cand)).astype(np.float32)
    ref_idf = RNG.uniform(0.5, 3.0, len(ref)).astype(np.float32)

    def padded(rows, offsets, idf):
        """BERTScore's batch: (B, K, d) rows, (B, K) 0/1 mask and (B, K) idf, zero past each text's end."""
        width = int(np.diff(offsets).max())
        out, mask, weights = np.zeros((n_pairs, width, d), np.float32), np.zeros((n_pairs, width), np.float32), np.zeros((n_pairs, width), np.float32)  # fmt: skip
        for i in range(n_pairs):
            n = offsets[i + 1] - offsets[i]
            out[i, :n], mask[i, :n], weights[i, :n] = rows[offsets[i] : offsets[i + 1]], 1.0, idf[offsets[i] : offsets[i + 1]]  # fmt: skip
        return out, mask, weights

    hyp, hyp_mask, hyp_idf = padded(cand, cand_offsets, cand_idf)
    refs, ref_mask, ref_idf_padded = padded(ref, ref_offsets, ref_idf)
    hyp_scale = hyp_idf / hyp_idf.sum(axis=1, keepdims=True)
    ref_scale = ref_idf_padded / ref_idf_padded.sum(axis=1, keepdims=True)
    masks = hyp_mask[:, :, None] * ref_mask[:, None, :]
    t_hyp, t_refs, t_masks = torch.from_numpy(hyp), torch.from_numpy(refs), torch.from_numpy(masks)
    t_hyp_scale, t_ref_scale = torch.from_numpy(hyp_scale), torch.from_numpy(ref_scale)

    def numpy_run():
        sim = np.matmul(hyp, refs.transpose(0, 2, 1)) * masks
        p = (sim.max(axis=2) * hyp_scale).sum(axis=1)
        r = (sim.max(axis=1) * ref_scale).sum(axis=1)
        return p, r, np.nan_to_num(2 * p * r / (p + r))

    def torch_run():
        sim = torch.bmm(t_hyp, t_refs.transpose(1, 2)) * t_masks
        p = (sim.max(dim=2)[0] * t_hyp_scale).sum(dim=1)
        r = (sim.max(dim=1)[0] * t_ref_scale).sum(dim=1)
        f = 2 * p * r / (p + r)
        return p, r, f.masked_fill(torch.isnan(f), 0.0)

    def simkernel_run():
        return kernels.greedy_match(cand, cand_offsets, ref, ref_offsets, None, cand_idf, ref_idf)

    expected = []
    for i in range(n_pairs):
        c, q = slice(cand_offsets[i], cand_offsets[i + 1]), slice(ref_offsets[i], ref_offsets[i + 1])
        sims = cand[c].astype(np.float64) @ ref[q].astype(np.float64).T
        p = (cand_idf[c] * sims.max(axis=1)).sum() / cand_idf[c].sum()
        r = (ref_idf[q] * sims.max(axis=0)).sum() / ref_idf[q].sum()
        expected.append((p, r, 2 * p * r / (p + r)))
    expected_prf = np.array(expected).T

    def check(out, name):
        got = np.stack([np.asarray(x, np.float64) for x in out])
        np.testing.assert_allclose(got, expected_prf, atol=1e-5, err_msg=name)

    engines = {"numpy": numpy_run, "torch": torch_run, "simkernel": simkernel_run}
    return engines, check


CASES = {
    "1 x 8, d=384, max + mean": small_case,
    "10,000 paired rows, d=384": paired_case,
    "1024 x 1024, d=768, max + mean per row": matrix_case,
    "BERTScore greedy matching, 64 pairs of 5-60 tokens, d=768": greedy_case,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--case", default="", help="run only the cases whose title contains this text")
    args = parser.parse_args()
    groups = {}
    for title, make in CASES.items():
        if args.case not in title:
            continue
        engines, check = make()
        for name, run in engines.items():
            check(run(), name)
        iterations = {name: iterations_for(run) for name, run in engines.items()}
        groups[title] = alternate(engines, args.rounds, iterations=iterations)
    print(speedup_table(groups, "numpy", ["simsimd", "torch", "simkernel"]))
    for title, times in groups.items():
        if "simsimd" not in times:
            continue
        (ours_min, ours_median), (theirs_min, theirs_median) = (
            min_median(times[n]) for n in ("simkernel", "simsimd")
        )
        print(
            f"\n{title}: simkernel vs simsimd "
            f"{theirs_min / ours_min:.1f}x / {theirs_median / ours_median:.1f}x"
        )
    print(
        f"\nmin / median of {args.rounds} rounds, time per call; speed-up = numpy's time / the engine's; "
        f"numpy {np.__version__}, simsimd {simsimd.__version__}, torch {torch.__version__}, "
        "simkernel backend "
        f"{kernels.capabilities()['backend']}; {machine()}"
    )


if __name__ == "__main__":
    main()
