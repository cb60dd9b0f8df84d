"""A chunk: consecutive rows of an input table, as every reader yields them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Chunk:
    """Consecutive rows of the input: ``rows[i]`` maps column name to value (strings for CSV/TSV, JSON
    values for JSONL, Python values for Parquet; a key a JSONL row lacks is absent), ``lines[i]`` is where
    row ``i`` starts (1-based line, or row in Parquet), ``first`` the index of ``rows[0]`` in the input.
    ``arrow`` is the rows as a pyarrow Table for Parquet input (its column types kept), else None."""

    rows: list[dict[str, Any]]
    lines: list[int]
    first: int
    arrow: Any = None

    def __len__(self) -> int:
        return len(self.rows)
