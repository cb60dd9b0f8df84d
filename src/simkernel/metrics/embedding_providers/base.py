"""The embedding-provider interface of the vector metrics (blocking work runs on the runtime's shared
pools, :func:`simkernel.runtime.inference.threads.run_blocking`)."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from simkernel.runtime.inference.threads import run_blocking

__all__ = ["EmbeddingProvider", "run_blocking"]


class EmbeddingProvider(ABC):
    """Turns texts into embedding vectors.

    ``embed`` returns ``(embeddings, cost_usd)``: an ``(n, dim)`` array (or list of lists) in the
    order of ``texts``, and the cost of the call in US dollars (0.0 for local models).
    """

    model_name: str

    @abstractmethod
    async def embed(self, texts: list[str]) -> tuple[np.ndarray, float]:
        """Embed ``texts`` in one call; returns ``(embeddings, cost_usd)``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_name={self.model_name!r})"
