"""A chunk: consecutive rows of an input table, as every reader yields them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Chunk:
    """Consecutive rows of the input: ``rows[i]`` maps column name to value (strings for CSV/TSV, JSON
    values for JSONL, Python values for Parquet; a key a JSONL row lacks is absent), ``lines[i]`` is where
    row ``i`` starts (1-based line, or row in Parquet), ``first`` the index of ``rows[0]`` in the input.
    ``arrow`` is the rows as a pyarrow Table for Parquet input (its column types kept), else None;
    ``texts`` the rows as the file wrote them for JSONL input (one JSON object each, without its line
    end), which JSONL output keeps, else None."""

    rows: list[dict[str, Any]]
    lines: list[int]
    first: int
    arrow: Any = None
    texts: list[str] | None = None

    def __len__(self) -> int:
        return len(self.rows)
