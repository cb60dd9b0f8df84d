"""benchmarks/charts.py: a benchmark's printed tables become a result file and a chart whose bars are the
table's own figures."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from tests.docs.pages import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
charts = pytest.importorskip("charts")

OUTPUT = """\
| case | Haystack | speed-up | simkernel fp32 | speed-up | simkernel int8 | speed-up |
|---|---|---|---|---|---|---|
| 1 pair | 14.7 ms / 16.4 ms | 1.0x | 7.06 ms / 7.5 ms | 2.1x / 3.9x | 2.77 ms / 3 ms | 5.3x / 8.1x |
| 5,025 pairs | 11.9 s / 12 s | 1.0x | 4.48 s / 4.5 s | 2.7x / 2.7x | 1.68 s / 1.7 s | 7.1x / 7.3x |
| fresh process | 5.2 s / 5.3 s | 1.0x | 0.28 s / 0.29 s | 18.6x / 18.2x | | |

Intel Xeon, 2 cores, flags avx2; load average 2.0 at the end; 2026-12-03 07:34 UTC
"""


def test_result_name_keeps_boolean_flags_only():
    assert charts.result_name(["bench_encoder.py", "--texts", "2000", "--rounds", "3"]) == "bench_encoder"
    assert charts.result_name(["bench_encoder.py", "--by-length"]) == "bench_encoder-by-length"


def test_speedups_are_the_tables_figures_at_the_minimum():
    parsed = charts.parse_output(OUTPUT)
    assert parsed["machine"] == [
        "Intel Xeon, 2 cores, flags avx2; load average 2.0 at the end; 2026-12-03 07:34 UTC"
    ]
    label, cases, series = charts.chart_series(parsed["tables"][0])
    assert cases == ["1 pair", "5,025 pairs", "fresh process"]
    rows = [line.split("|")[1:-1] for line in OUTPUT.splitlines()[2:5]]
    for engine, column in (("simkernel fp32", 4), ("simkernel int8", 6)):
        expected = [float(row[column].strip().split("x")[0]) if row[column].strip() else None for row in rows]
        assert [None if math.isnan(v) else v for v in series[engine]] == expected
    assert series["Haystack"] == [1.0, 1.0, 1.0] and "speed-up" in label


def test_one_speedup_column_is_one_series_over_the_engines():
    table = {
        "header": ["engine", "sentences/s", "vs ST"],
        "rows": [["ST", "615", "1.00x"], ["simkernel int8", "3560", "5.79x"]],
    }
    label, cases, series = charts.chart_series(table)
    assert cases == ["ST", "simkernel int8"] and series == {"vs ST": [1.0, 5.79]}


def test_a_run_writes_its_result_file_and_chart(tmp_path, monkeypatch):
    monkeypatch.setattr(charts, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(charts, "CHARTS", tmp_path / "charts")
    path = charts.write_result(["bench_sas.py", "--rounds", "3"], "warming up\n" + OUTPUT)
    result = json.loads(Path(path).read_text(encoding="utf-8"))
    assert result["command"] == "python benchmarks/bench_sas.py --rounds 3"
    assert result["tables"][0]["rows"][1][0] == "5,025 pairs"
    svg = (tmp_path / "charts" / "bench_sas.svg").read_text(encoding="utf-8")
    assert svg.startswith("<?xml") and "5,025 pairs" in svg and "simkernel int8" in svg
    assert charts.write_result(["bench_sas.py"], "no table here\n") is None
