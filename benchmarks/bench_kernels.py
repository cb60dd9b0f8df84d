"""Cosine kernel speed: simkernel beside numpy, simsimd and torch (sentence-transformers' cos_sim), in turns.

    python benchmarks/bench_kernels.py [--rounds 20]

Cases (every peer computes the same numbers; each is checked against numpy in float64 before timing):

- ``1 x 8, d=384, max + mean``: 1 output against 8 references: the cosines, their max and their mean,
  Python call included (the reference-match metric's inner step).
- ``10,000 paired rows, d=384``: 10,000 row-wise cosines (the SAS step).
- ``1024 x 1024, d=768, max + mean per row``: a cosine matrix, then the max and the mean of every row.

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


CASES = {
    "1 x 8, d=384, max + mean": small_case,
    "10,000 paired rows, d=384": paired_case,
    "1024 x 1024, d=768, max + mean per row": matrix_case,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    groups = {}
    for title, make in CASES.items():
        engines, check = make()
        for name, run in engines.items():
            check(run(), name)
        iterations = {name: iterations_for(run) for name, run in engines.items()}
        groups[title] = alternate(engines, args.rounds, iterations=iterations)
    print(speedup_table(groups, "numpy", ["simsimd", "torch", "simkernel"]))
    for title, times in groups.items():
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
