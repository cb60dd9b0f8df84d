"""Type stubs of the bootstrap's Cython layer (used by simkernel.stats.intervals)."""

import numpy as np
import numpy.typing as npt

SUMS: int
POISSON_EDGES: int

class Sample:
    def __init__(
        self,
        columns: npt.NDArray[np.float64],
        x_run_starts: npt.NDArray[np.intp] | None = None,
        y_order: npt.NDArray[np.intp] | None = None,
        y_group_starts: npt.NDArray[np.intp] | None = None,
    ) -> None: ...
    def sums(self, counts: npt.NDArray[np.uint16], out: npt.NDArray[np.float64]) -> None: ...

def poisson_counts(
    uniform: npt.NDArray[np.uint16], edges: npt.NDArray[np.uint16], counts: npt.NDArray[np.uint16]
) -> None: ...
