"""Type stubs of the attention kernel's Cython layer (used by simkernel.runtime.inference.packed_passes)."""

import numpy as np
import numpy.typing as npt

SUM_EXP: dict[str, int]

def supported(sum_exp: str) -> bool: ...
def attention(
    query: npt.NDArray[np.float32],
    key: npt.NDArray[np.float32],
    value: npt.NDArray[np.float32],
    mask: npt.NDArray[np.float32],
    rows: int,
    length: int,
    heads: int,
    alpha: float,
    sum_exp: str,
    out: npt.NDArray[np.float32],
) -> None: ...
