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


def test_the_command_line_local_and_ray_engines(model_id, tmp_path):
    from tests.ray.cluster import LOOPBACK_ENV, SLOW_MACHINE_ENV

    source = write_csv(tmp_path / "in.csv", ROWS * 5)
    env = {**os.environ, **LOOPBACK_ENV, **SLOW_MACHINE_ENV, "HF_HUB_OFFLINE": "1", "RAY_ADDRESS": "local"}
    outputs = {}
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
    np.testing.assert_array_equal(read_columns(tmp_path / "local.csv"), np.tile(expected(model_id), (5, 1)))
    assert outputs["ray"] == outputs["local"]


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
