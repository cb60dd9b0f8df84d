"""`simkernel score --precision bf16` and `simkernel models info`'s bf16 line: a one-line refusal naming
what the CPU lacks where there is no native bf16 (checked on every CPU: one with bf16 is seen as one
without); with the bf16 path computing in f32 (``simulated_bf16``)
the scores equal fp32's and info prints measured parity figures."""

from __future__ import annotations

import json

import pytest
from tests.cli.conftest import EXAMPLES, read_csv_rows
from tests.runtime.inference.bf16_cpu import simulate_cpu_without_bf16

ANSWERS = EXAMPLES / "answers.csv"  # English, Russian and Chinese rows


def test_score_bf16_is_a_one_line_refusal(cli, minilm, tmp_path, monkeypatch):
    reason = simulate_cpu_without_bf16(monkeypatch)
    out = tmp_path / "scored.csv"
    result = cli("score", ANSWERS, "--model", minilm, "--precision", "bf16", "--output", out)
    assert result.code == 1
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "precision='bf16' is not available" in lines[0] and reason in lines[0]
    assert "precision='int8'" in lines[0] and "Traceback" not in result.err
    assert not out.exists()


def test_models_info_says_why_bf16_is_not_available(cli, minilm, monkeypatch):
    reason = simulate_cpu_without_bf16(monkeypatch)
    info = cli("models", "info", minilm)
    assert info.code == 0, info.err
    assert f"parity bf16  not available here: {reason}" in info.out


def test_score_bf16_path_equals_fp32(cli, minilm, tmp_path, simulated_bf16):
    scored = {}
    for precision in ("fp32", "bf16"):
        out = tmp_path / f"{precision}.csv"
        result = cli("score", ANSWERS, "--model", minilm, "--precision", precision, "--output", out, "-q")
        assert result.code == 0, result.err
        scored[precision] = read_csv_rows(out)
    assert len(scored["bf16"]) == len(scored["fp32"]) == 45
    for a, b in zip(scored["fp32"], scored["bf16"], strict=True):
        assert a["predicted"] == b["predicted"]
        assert float(b["score"]) == pytest.approx(float(a["score"]), abs=1e-5)


def test_models_info_measures_bf16_parity(cli, minilm, simulated_bf16):
    info = cli("models", "info", minilm)
    assert info.code == 0, info.err
    line = next(x for x in info.out.splitlines() if x.startswith("parity bf16"))
    figures = json.loads(line.removeprefix("parity bf16").split(" (vs fp32")[0])
    assert figures["probe_texts"] == 16 and figures["min_cosine"] >= 0.99999  # f32: rounding only
    assert figures["max_abs_diff_alone_vs_batch"] <= 1e-6
