"""``--cache-dir`` of ``simkernel score`` and ``simkernel calibrate``: the second run is served from the
persistent cache with the same scores; modes without a model refuse the option."""

from __future__ import annotations

import sqlite3

from tests.cli.conftest import EXAMPLES, read_csv_rows


def cached_texts(folder) -> int:
    with sqlite3.connect(folder / "embeddings.sqlite3") as conn:
        return conn.execute("SELECT count(*) FROM vectors").fetchone()[0]


def test_second_run_is_served_from_the_cache(cli, tmp_path, minilm):
    rows = read_csv_rows(EXAMPLES / "answers.csv")
    distinct = {r["ground_truth"] for r in rows} | {r["predicted"] for r in rows}
    outputs = []
    for run in range(2):
        out = tmp_path / f"scored{run}.csv"
        result = cli(
            "score", EXAMPLES / "answers.csv", "--cache-dir", tmp_path / "cache", "--output", out, "-q"
        )
        assert result.code == 0, result.err
        outputs.append(read_csv_rows(out))
        assert cached_texts(tmp_path / "cache") == len(distinct)
    assert outputs[0] == outputs[1]
    refs = cli(
        "score", EXAMPLES / "references.jsonl", "--mode", "reference", "--cache-dir", tmp_path / "cache", "-q"
    )
    assert refs.code == 0, refs.err
    assert cached_texts(tmp_path / "cache") > len(distinct)
    calibrated = cli(
        "calibrate", EXAMPLES / "answers.csv", "--label", "label", "--cache-dir", tmp_path / "cache"
    )
    assert calibrated.code == 0, calibrated.err


def test_exact_mode_refuses_the_option(cli, tmp_path):
    result = cli("score", EXAMPLES / "answers.csv", "--mode", "exact", "--cache-dir", tmp_path)
    assert result.code == 2 and "--cache-dir does not apply to --mode exact" in result.err
