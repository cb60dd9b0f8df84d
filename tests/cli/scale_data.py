"""Large inputs for the streaming, resume and Ray tests and benchmarks: rows made from the 5,025
human-labelled SAS pairs in tests/data/sas, cycled as often as needed, each text made distinct by its
row number (so the encoder's deduplication and cache cannot hide any work), plus Russian and Chinese
rows."""

from __future__ import annotations

import csv
import json
from pathlib import Path

SAS_DIR = Path(__file__).resolve().parents[1] / "data" / "sas"
SAS_FILES = ("SQuAD_SAS.csv", "NQ-open_SAS.csv", "GermanQuAD_SAS.csv")
COLUMNS = ("id", "ground_truth", "predicted", "label")
# every 50th row is one of these, so non-English text runs through every chunk
OTHER_LANGUAGES = (
    ("Лев Толстой написал «Войну и мир».", "«Войну и мир» написал Толстой.", 2.0),
    ("北京是中国的首都。", "中国的首都是北京。", 2.0),
    ("Москва", "Санкт-Петербург", 0.0),
)


def sas_pairs() -> list[tuple[str, str, float | None]]:
    """The 5,025 (answer1, answer2, label) pairs of the SAS paper's three data sets, in file order (a few
    have no label: None)."""
    pairs = []
    for name in SAS_FILES:
        with open(SAS_DIR / name, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                label = float(row["label"]) if row["label"].strip() else None
                pairs.append((row["answer1"], row["answer2"], label))
    return pairs


def distinct_rows(n: int) -> list[dict[str, object]]:
    """``n`` rows {id, ground_truth, predicted, label}; every text differs from every other row's."""
    pairs = sas_pairs()
    rows = []
    for i in range(n):
        if i % 50 == 49:
            truth, predicted, label = OTHER_LANGUAGES[(i // 50) % len(OTHER_LANGUAGES)]
        else:
            truth, predicted, label = pairs[i % len(pairs)]
        rows.append(
            {"id": i, "ground_truth": f"{truth} ({i})", "predicted": f"{predicted} ({i})", "label": label}
        )
    return rows


def write_csv(rows: list[dict[str, object]], path: Path) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_jsonl(rows: list[dict[str, object]], path: Path) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def write_parquet(rows: list[dict[str, object]], path: Path) -> Path:
    """A Parquet file with typed columns: ``id`` int64, ``label`` float64, texts as strings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=max(1, len(rows) // 3))
    return path
