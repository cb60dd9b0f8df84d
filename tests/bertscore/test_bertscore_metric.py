"""The ``bertscore`` metric of the scoring core from every batch entry point: ``score_file``, ``simkernel
score`` (local and Ray engines), Spark's ``metric_udf`` and ``POST /v1/score/bertscore``; each compared
with :func:`simkernel.bert_score.score` on the same rows (itself checked against bert_score 0.3.13 in
test_bert_score_parity.py), several ground truths per row taking each column's best."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from tests.spark.conftest import spark, sparks  # noqa: F401  (the local Spark session of tests/spark)

from simkernel import bert_score as sk_bert_score

LAYER = 3
ROWS = [
    ("The cat sat on the mat.", "A cat was sitting on the mat."),
    ("Paris", "The capital of France is Paris."),
    ("Кошка сидела на коврике.", "На коврике сидела кошка."),
    ("猫坐在垫子上。", "垫子上坐着一只猫。"),
    ("", "an empty prediction scores 0"),
    ("the launch 🚀 worked", "the launch succeeded"),
]


def expected(model_id, rows=ROWS) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        p, r, f = sk_bert_score.score(
            [a for a, _ in rows], [b for _, b in rows], model_type=model_id, num_layers=LAYER
        )
    return np.stack([p, r, f], axis=1)


def write_csv(path, rows=ROWS) -> str:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["predicted", "ground_truth"])
        writer.writerows(rows)
    return str(path)


def read_columns(path) -> np.ndarray:
    with open(path, encoding="utf-8", newline="") as handle:
        return np.array(
            [[float(r["score_P"]), float(r["score_R"]), float(r["score_F"])] for r in csv.DictReader(handle)]
        )


def test_score_file_writes_p_r_f(model_id, tmp_path):
    import simkernel

    out = tmp_path / "out.csv"
    summary = simkernel.score_file(
        write_csv(tmp_path / "in.csv"),
        str(out),
        metric="bertscore",
        allow_empty=True,
        metric_options={"layer": LAYER},
    )
    np.testing.assert_array_equal(read_columns(out), expected(model_id).astype(np.float64))
    assert summary.rows == len(ROWS)
    assert any("1 pair(s) with an empty text scored 0" in note for note in summary.notes)


def test_a_pair_with_both_texts_empty_counts_once(model_id, tmp_path):
    """The summary counts the pairs scored 0 for an empty text: the pairs with either text empty (blank
    texts too), each once, as bert_score's ``score`` zeroes them."""
    import simkernel

    rows = [("", ""), ("", "a cat"), ("a cat", "   "), (" ", "\t"), ("a cat", "a dog")]
    summary = simkernel.score_file(
        write_csv(tmp_path / "in.csv", rows),
        str(tmp_path / "out.csv"),
        metric="bertscore",
        allow_empty=True,
        metric_options={"layer": LAYER},
    )
    scores = read_columns(tmp_path / "out.csv")
    zeroed = int((scores == 0).all(axis=1).sum())
    empty = sum(1 for a, b in rows if not a.strip() or not b.strip())
    assert zeroed == empty == 4
    assert f"{empty} pair(s) with an empty text scored 0 (bert_score's rule)" in summary.notes


def test_several_ground_truths_take_each_columns_best(model_id, tmp_path):
    import simkernel

    rows = [{"predicted": "The cat sat.", "ground_truth": ["A cat sat.", "Dogs bark loudly."]}]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    simkernel.score_file(str(source), str(out), metric="bertscore", metric_options={"layer": LAYER})
    got = json.loads(out.read_text(encoding="utf-8"))
    each = expected(model_id, [("The cat sat.", "A cat sat."), ("The cat sat.", "Dogs bark loudly.")])
    assert [got["score_P"], got["score_R"], got["score_F"]] == pytest.approx(each.max(axis=0).tolist(), abs=0)


LONG = "word " * 600  # past the model's 512 tokens


def count_notes(text: str) -> list[str]:
    """The summary's note lines that count empty and truncated texts."""
    return [
        line.strip()
        for line in text.splitlines()
        if "scored 0 (bert_score" in line or "truncated (as" in line
    ]


def test_the_command_line_local_and_ray_engines(model_id, tmp_path):
    """Same output and the same counts of empty and truncated texts: the Ray workers' counts come back to
    the summary, a long text in several blocks counting once."""
    from tests.ray.cluster import LOOPBACK_ENV, SLOW_MACHINE_ENV

    rows = ROWS * 5 + [(LONG, "a long answer"), ("short", LONG)] * 3 + [("", "")]
    source = write_csv(tmp_path / "in.csv", rows)
    env = {**os.environ, **LOOPBACK_ENV, **SLOW_MACHINE_ENV, "HF_HUB_OFFLINE": "1", "RAY_ADDRESS": "local"}
    outputs, notes = {}, {}
    for engine in ("local", "ray"):
        out = tmp_path / f"{engine}.csv"
        argv = [
            source,
            "--mode",
            "bertscore",
            "--metric-option",
            f"layer={LAYER}",
            "--allow-empty",
            "-o",
            str(out),
        ]
        if engine == "ray":
            argv += ["--engine", "ray", "--workers", "1"]
        run = subprocess.run(
            [sys.executable, "-m", "simkernel", "score", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert run.returncode == 0, run.stderr
        assert "column      score_F: mean" in run.stderr
        outputs[engine] = out.read_bytes()
        notes[engine] = count_notes(run.stderr)
    np.testing.assert_array_equal(
        read_columns(tmp_path / "local.csv")[: len(ROWS) * 5], np.tile(expected(model_id), (5, 1))
    )
    assert outputs["ray"] == outputs["local"]
    # 5 empty predictions of ROWS, and the last row (both texts empty: one pair); LONG in 6 rows (3 blocks)
    # is 1 text
    empty = sum(1 for a, b in rows if not a.strip() or not b.strip())
    assert empty == 6
    assert notes["local"] == [
        f"note        {empty} pair(s) with an empty text scored 0 (bert_score's rule)",
        "note        1 text(s) past the model's limit truncated (as bert_score does)",
    ]
    assert notes["ray"] == notes["local"]


def test_a_long_text_in_two_passes_of_pairs_is_counted_once(tmp_path):
    """1,030 rows: the same long text in the first and the last row, which fall in different passes of
    PAIRS_PER_PASS pairs."""
    import simkernel
    from simkernel.scoring.bertscore.matching import PAIRS_PER_PASS

    rows = [(LONG, "a long answer")] + [("The cat sat.", "A cat sat.")] * (PAIRS_PER_PASS + 4) + [(LONG, "x")]
    summary = simkernel.score_file(
        write_csv(tmp_path / "in.csv", rows),
        str(tmp_path / "out.csv"),
        metric="bertscore",
        metric_options={"layer": LAYER},
    )
    assert summary.rows > PAIRS_PER_PASS + 1
    assert "1 text(s) past the model's limit truncated (as bert_score does)" in summary.notes


def test_an_option_the_mode_does_not_take_is_refused(tmp_path):
    source = write_csv(tmp_path / "in.csv")
    run = subprocess.run(
        [sys.executable, "-m", "simkernel", "score", source, "--mode", "sas", "--metric-option", "layer=2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2
    assert "--metric-option layer does not apply to --mode sas (its options: none)" in run.stderr
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "simkernel",
            "score",
            source,
            "--mode",
            "bertscore",
            "--metric-option",
            "layer=9",
            "--allow-empty",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode != 0 and "Invalid num_layers: num_layers should be between 0 and 6" in bad.stderr


def test_spark_gives_a_struct_of_p_r_f(spark, model_id):  # noqa: F811 (the fixture imported above)
    from simkernel.spark import metric_udf

    df = spark.createDataFrame(
        [(i, a, b) for i, (a, b) in enumerate(ROWS)], "id long, predicted string, ground_truth string"
    )
    scored = df.withColumn(
        "s", metric_udf("bertscore", options={"layer": LAYER})("predicted", "ground_truth")
    )
    assert dict(scored.dtypes)["s"] == "struct<P:float,R:float,F:float>"
    got = {r.id: (r.s.P, r.s.R, r.s.F) for r in scored.collect()}
    np.testing.assert_array_equal(
        np.array([got[i] for i in range(len(ROWS))], dtype=np.float32), expected(model_id)
    )


def test_the_server_answers_p_r_f(model_id):
    from tests.serve.serve_support import DEFAULT_MODEL, served_client

    with served_client("--model", DEFAULT_MODEL, timeout=300) as http:
        body = {
            "predicted": [a for a, _ in ROWS],
            "ground_truth": [b for _, b in ROWS],
            "options": {"layer": LAYER},
        }
        answer = http.post("/v1/score/bertscore", json=body)
        assert answer.status_code == 200, answer.text
        data = answer.json()
        want = expected(model_id)
        assert data["primary"] == "F" and data["scores"] == want[:, 2].tolist()
        for k, suffix in enumerate("PRF"):
            assert data["columns"][suffix]["scores"] == want[:, k].tolist()
        refused = http.post("/v1/score/bertscore", json={**body, "options": {"baseline": "/etc/passwd"}})
        assert refused.status_code == 422 and "must be a number over HTTP" in refused.text
