"""Where the BLAS route of ``cosine_matrix`` starts to win over the native kernel (``kernels.py``'s
``min(n, m) >= 16`` and ``n * m * d >= 1.5e5``).

    python benchmarks/studies/route_crossover.py [--rounds 30]

Times ``cosine_matrix(a, b)`` for each shape with the route forced native and forced BLAS
(``kernels.use_backend(None, blas=False/True)``), the two taking turns in every round; prints the
minimum microseconds per call and which route the shape rule picks.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from simkernel import kernels  # noqa: E402
from support import alternate, iterations_for, machine  # noqa: E402

SHAPES = [(8, 8), (4, 64), (16, 16), (16, 64), (64, 64), (256, 256)]


def forced(blas: bool, a: np.ndarray, b: np.ndarray):
    def run() -> None:
        with kernels.use_backend(None, blas=blas):
            kernels.cosine_matrix(a, b)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print("| n x m, d | native (us) | BLAS (us) | rule picks |\n|---|---|---|---|")
    for dim in (384, 768):
        for n, m in SHAPES:
            a = rng.standard_normal((n, dim)).astype(np.float32)
            b = rng.standard_normal((m, dim)).astype(np.float32)
            engines = {"native": forced(False, a, b), "BLAS": forced(True, a, b)}
            iterations = {name: iterations_for(run) for name, run in engines.items()}
            times = alternate(engines, args.rounds, iterations=iterations)
            rule = "BLAS" if min(n, m) >= 16 and n * m * dim >= 1.5e5 else "native"
            native, blas = (min(times[k]) * 1e6 for k in ("native", "BLAS"))
            print(f"| {n} x {m}, {dim} | {native:.1f} | {blas:.1f} | {rule} |")
    print(f"\nmin of {args.rounds} rounds, backend {kernels.capabilities()['backend']}; {machine()}")


if __name__ == "__main__":
    main()
