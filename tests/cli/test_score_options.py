"""``simkernel score`` options on their success paths: ``--threads`` (what onnxruntime is given),
``--batch-size`` (the batches it runs), ``--input-format`` and ``--score-column``. Scores are checked against
sentence-transformers (the independent reference); the sessions against what onnxruntime really received
(``onnx_sessions``, tests/conftest.py)."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from tests.cli.conftest import EXAMPLES, read_csv_rows
from tests.runtime.runtime_helpers import cosine_rows

ANSWERS = EXAMPLES / "answers.csv"
REFERENCES = EXAMPLES / "references.jsonl"


def csv_scores(text: str, column: str = "score") -> list[float]:
    return [float(row[column]) for row in csv.DictReader(io.StringIO(text))]


@pytest.fixture(scope="module")
def expected_sas(reference_embed) -> np.ndarray:
    """sentence-transformers' SAS scores of examples/answers.csv, float64."""
    rows = read_csv_rows(ANSWERS)
    return cosine_rows(
        reference_embed([r["predicted"] for r in rows]), reference_embed([r["ground_truth"] for r in rows])
    )


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_reach_onnxruntime_and_leave_the_scores_unchanged(
    cli, minilm, onnx_sessions, expected_sas, threads
):
    result = cli("score", ANSWERS, "-q", "--threads", threads, "--batch-size", 8)
    assert result.code == 0, result.err
    np.testing.assert_allclose(csv_scores(result.out), expected_sas, atol=1e-5)
    main, *twins = onnx_sessions
    assert (main.graph, main.intra_op_threads) == ("model.onnx", threads)
    # several batches with 2 threads: two workers, each batch on a single-threaded twin session
    assert [(s.graph, s.intra_op_threads) for s in twins] == ([] if threads == 1 else [("model.onnx", 1)])
    batches = [b for s in onnx_sessions for b in s.batches]
    distinct = {r[k] for r in read_csv_rows(ANSWERS) for k in ("predicted", "ground_truth")}
    assert sum(batches) == len(distinct) and max(batches) == 8  # --batch-size 8, each text once


def test_threads_in_reference_mode(cli, minilm, onnx_sessions):
    result = cli("score", REFERENCES, "--mode", "reference", "-q", "--threads", 1, "--batch-size", 4)
    assert result.code == 0, result.err
    assert [(s.graph, s.intra_op_threads) for s in onnx_sessions] == [("model.onnx", 1)]
    assert max(onnx_sessions[0].batches) == 4
    default = cli("score", REFERENCES, "--mode", "reference", "-q")
    np.testing.assert_allclose(
        [json.loads(line)["score"] for line in result.out.splitlines()],
        [json.loads(line)["score"] for line in default.out.splitlines()],
        atol=1e-6,
    )


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_input_format_reads_a_file_whose_extension_says_nothing(cli, write, minilm, expected_sas, fmt):
    rows = read_csv_rows(ANSWERS)
    if fmt == "jsonl":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    else:
        out = io.StringIO(newline="")
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), delimiter="," if fmt == "csv" else "\t")
        writer.writeheader()
        writer.writerows(rows)
        text = out.getvalue()
    path = write("answers.export.txt", text)
    refused = cli("score", path, "-q")
    assert refused.code == 2 and "--input-format" in refused.err
    result = cli("score", path, "-q", "--input-format", fmt)
    assert result.code == 0, result.err
    # stdout is written in the input's format, every row and column kept
    if fmt == "jsonl":
        scored = [json.loads(line) for line in result.out.splitlines()]
    else:
        scored = list(csv.DictReader(io.StringIO(result.out), delimiter="," if fmt == "csv" else "\t"))
    assert [{k: str(r[k]) for k in rows[0]} for r in scored] == rows
    np.testing.assert_allclose([float(r["score"]) for r in scored], expected_sas, atol=1e-5)


def test_input_format_overrides_the_extension(cli, write, minilm):
    """A TSV file named .csv: read as CSV it has one column and fails; --input-format tsv reads it."""
    path = write("mislabelled.csv", "ground_truth\tpredicted\nBerlin\tBerlin\nParis\tLyon\n")
    assert cli("score", path, "-q").code == 1
    result = cli("score", path, "-q", "--input-format", "tsv", "--output-format", "csv")
    assert result.code == 0, result.err
    scores = csv_scores(result.out)
    assert scores[0] == pytest.approx(1.0, abs=1e-6) and scores[1] < 0.9


def test_score_column_names_the_added_column(cli, tmp_path, minilm, expected_sas):
    out = tmp_path / "scored.csv"
    result = cli("score", ANSWERS, "-q", "--score-column", "sas", "--threshold", "0.5", "-o", out)
    assert result.code == 0, result.err
    scored = read_csv_rows(out)
    assert list(scored[0]) == ["question", "ground_truth", "predicted", "label", "sas", "success"]
    np.testing.assert_allclose([float(r["sas"]) for r in scored], expected_sas, atol=1e-5)
    assert [r["success"] for r in scored] == [str(float(r["sas"]) >= 0.5).lower() for r in scored]

    jsonl = cli("score", REFERENCES, "--mode", "reference", "-q", "--score-column", "сходство")
    assert jsonl.code == 0, jsonl.err
    rows = [json.loads(line) for line in jsonl.out.splitlines()]
    assert all(list(r)[-2:] == ["сходство", "success"] and isinstance(r["сходство"], float) for r in rows)
