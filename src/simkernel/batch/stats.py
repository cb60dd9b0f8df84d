"""Pearson and Spearman of the summary: :mod:`simkernel.stats.correlation`, under its former path."""

from __future__ import annotations

from simkernel.stats.correlation import average_ranks, pearson, spearman

__all__ = ["average_ranks", "pearson", "spearman"]
