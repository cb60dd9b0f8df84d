"""``simkernel score --threshold calibrated``: the registry's calibrated threshold of the model and
precision decides ``success``, the summary says where it came from; models without one are refused."""

from __future__ import annotations

import json

import pytest
from tests.cli.conftest import read_csv_rows

from simkernel.runtime.acquisition.registry import known_model

ENTRY = known_model("sentence-transformers/all-MiniLM-L6-v2")


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_calibrated_threshold_decides_success(cli, write, tmp_path, minilm, minilm_int8, precision):
    threshold = ENTRY.calibrated_threshold(precision).threshold
    path = write(
        "pairs.csv",
        "ground_truth,predicted\nThe capital of France,Paris\nParis,Paris\nCanberra,a large red bus\n",
    )
    out, summary = tmp_path / "scored.csv", tmp_path / "summary.json"
    result = cli(
        "score", path, "--threshold", "calibrated", "--precision", precision, "--output", out,
        "--summary-json", summary,
    )  # fmt: skip
    assert result.code == 0, result.err
    rows = read_csv_rows(out)
    assert [r["success"] for r in rows] == [str(float(r["score"]) >= threshold).lower() for r in rows]
    assert [r["success"] for r in rows] == ["true", "true", "false"]  # 0.63 passes here, not at 0.7
    data = json.loads(summary.read_text("utf-8"))
    assert data["threshold"] == threshold and data["passed"] == 2
    note = f"threshold {threshold:.4f}: calibrated for sentence-transformers/all-MiniLM-L6-v2 ({precision})"
    assert note in result.err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--mode", "exact"], "--threshold calibrated does not apply to --mode exact"),
        (["--model", "{folder}"], "--threshold calibrated: model '{folder}' has no calibrated threshold"),
        (["--model", "{folder}"], "pass a number instead, e.g. --threshold 0.7, or find one"),
    ],
)
def test_refusals(cli, write, tmp_path, extra, message):
    path = write("p.csv", "ground_truth,predicted\nParis,Paris\n")
    folder = str(tmp_path)
    result = cli("score", path, "--threshold", "calibrated", *[a.format(folder=folder) for a in extra])
    assert result.code == 2
    assert message.format(folder=folder) in result.err and result.out == ""
