"""The pytest plugin in real pytest sessions (pytester, each run in a fresh subprocess so that model loads
are counted per process as a user's run would count them).

These runs load the plugin explicitly (``-p no:simkernel -p simkernel.pytest_plugin``: the entry-point
copy, if installed, is blocked and the module loaded by name), so they test the plugin's behaviour
whatever the installed metadata says; ``test_entry_point.py`` tests the ``pytest11`` registration itself.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytest_plugins = ["pytester"]

LOAD = ("-p", "no:simkernel", "-p", "simkernel.pytest_plugin", "-p", "no:cacheprovider")
FP32_THRESHOLD = 0.4719  # the default model's calibrated fp32 threshold (registry)


@pytest.fixture(autouse=True)
def _model(store_env):
    """Every run here uses the default model from this store."""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*LOAD, *args, timeout=600)


def summary_line(result: pytest.RunResult) -> str:
    lines = [line for line in result.outlines if line.startswith("simkernel semantic:")]
    assert len(lines) == 1, result.stdout.str()
    return lines[0]


def test_scores_failure_message_and_summary(pytester, st_model, tmp_path):
    pairs = [
        ("The capital of France is Paris.", "Paris is France's capital city."),
        (
            "The cat sat on the mat.",
            "Quarterly revenue grew by four percent in Europe and in Asia this year.",
        ),
        ("Москва — столица России.", "Столица России — Москва."),
        ("北京是中国的首都。", "中国的首都是北京。"),
    ]
    pytester.makepyfile(
        test_answers=f"""
        import json

        PAIRS = {pairs!r}

        def test_scores(semantic):
            scores = [semantic.score(a, b) for a, b in PAIRS]
            with open({str(tmp_path / "scores.json")!r}, "w") as handle:
                json.dump(scores, handle)

        def test_similar(semantic):
            assert semantic.similar(*PAIRS[0])

        def test_different(semantic):
            assert semantic.similar(*PAIRS[1])

        def test_russian_identical(semantic):
            assert semantic.similar(PAIRS[2][0], PAIRS[2][0])
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=3, failed=1)
    # the scores are the cosines of sentence-transformers' embeddings of the same checkpoint
    scores = json.loads((tmp_path / "scores.json").read_text())
    for (a, b), score in zip(pairs, scores, strict=True):
        x, y = st_model.encode([a, b], convert_to_numpy=True).astype(np.float64)
        assert score == pytest.approx(float(x @ y / np.linalg.norm(x) / np.linalg.norm(y)), abs=1e-5)
    out = result.stdout.str()
    low = scores[1]
    # the assertion's own message: score, threshold and its source, model, both texts (shortened)
    assert (
        f"assert <similar: score {low:.4f} < threshold {FP32_THRESHOLD:.4f} (calibrated), "
        "model sentence-transformers/all-MiniLM-L6-v2 fp32; actual 'The cat sat on the mat.', "
        "expected 'Quarterly revenue grew by four percent\u2026'>" in out
    )
    # the report section in full
    assert "semantic similarity" in out
    assert f"score {low:.4f} is below the threshold {FP32_THRESHOLD:.4f}" in out
    assert (
        "threshold from  calibrated for sentence-transformers/all-MiniLM-L6-v2 (fp32) on the English SAS "
        "data (SQuAD + NQ-open)" in out
    )
    assert "expected        'Quarterly revenue grew by four percent in Europe and in Asia this year.'" in out
    passing = min(scores[0], 1.0)  # the passing comparisons: PAIRS[0], and a Russian text with itself
    line = summary_line(result)
    assert line.startswith("simkernel semantic: 3 comparisons, 1 below the threshold; lowest passing score ")
    lowest = float(re.search(r"lowest passing score ([-0-9.]+)", line).group(1))
    assert lowest == pytest.approx(passing, abs=1e-4)
    assert "; 1 model load in 1 process; 1 comparison of non-Latin text on the English-only " in line


ENGLISH_ONLY_WARNING = (
    "UserWarning: the semantic fixture compared non-Latin text (e.g. Russian, Chinese) but "
    "sentence-transformers/all-MiniLM-L6-v2 is English-only: it splits such text into characters and "
    "those scores are not meaningful; use a multilingual model such as --semantic-model "
    "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
)


def test_non_latin_text_on_the_english_only_model_is_flagged(pytester, st_model, tmp_path):
    """Unrelated Russian sentences pass the default model's calibrated threshold: the run says so, with a
    warning (once per model and process), a note in the failure report and the summary line."""
    russian = (
        "Сегодня в Москве солнечно, температура около двадцати градусов.",
        "Пароль можно восстановить через ссылку, отправленную на вашу электронную почту.",
    )
    chinese = ("今天北京天气晴朗。", "请点击登录页面上的链接重置密码。")
    pytester.makepyfile(
        test_languages=f"""
        import json

        def test_russian_unrelated(semantic):
            result = semantic.similar(*{russian!r})
            with open({str(tmp_path / "score.json")!r}, "w") as handle:
                json.dump(result.score, handle)
            assert result.note is not None

        def test_chinese_unrelated(semantic):
            assert semantic.score(*{chinese!r}) < 1.0
            assert semantic.similar(*{chinese!r}, threshold=0.99)

        def test_english(semantic):
            result = semantic.similar("The capital of France is Paris.", "Paris is France's capital city.")
            assert result and result.note is None
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=1, warnings=1)
    # the unrelated Russian pair passed: sentence-transformers' cosine on the same checkpoint is above
    # the calibrated threshold too, so only the note tells the user that this pass means nothing
    score = json.loads((tmp_path / "score.json").read_text())
    x, y = st_model.encode(list(russian), convert_to_numpy=True).astype(np.float64)
    assert score == pytest.approx(float(x @ y / np.linalg.norm(x) / np.linalg.norm(y)), abs=1e-5)
    assert score >= FP32_THRESHOLD
    out = result.stdout.str()
    assert out.count(ENGLISH_ONLY_WARNING) == 1  # the first comparison's warning, in the warnings summary
    assert "test_languages.py::test_russian_unrelated" in out.split("warnings summary")[1]
    note = ENGLISH_ONLY_WARNING.removeprefix("UserWarning: ")
    assert f"  note            {note}" in out  # the failing Chinese comparison's report section
    assert summary_line(result) == (
        "simkernel semantic: 3 comparisons, 1 below the threshold; lowest passing score "
        f"{min(score, 1.0):.4f} (threshold {FP32_THRESHOLD:.4f}); 1 model load in 1 process; "
        "2 comparisons of non-Latin text on the English-only sentence-transformers/all-MiniLM-L6-v2: "
        "those scores are not meaningful, use a multilingual model (see the warnings)"
    )


def test_several_expected_texts_best_match_counts(pytester):
    pytester.makepyfile(
        """
        def test_best(semantic):
            result = semantic.similar("Berlin", ["Paris", "Berlin, Germany"], threshold=0.5)
            assert result.best == "Berlin, Germany"
            assert result.score == semantic.score("Berlin", "Berlin, Germany")
            assert result.score > semantic.score("Berlin", "Paris")
            assert result

        def test_best_still_too_low(semantic):
            assert semantic.similar("Berlin", ["Paris", "Madrid"], threshold=0.95)
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "threshold 0.9500 (threshold= argument)" in out and "expected (best of 2) '" in out
    assert "expected        best of 2: " in out


def test_options_ini_keys_and_their_precedence(pytester):
    pytester.makeini(
        """
        [pytest]
        semantic_threshold = 0.999
        semantic_precision = int8
        """
    )
    pytester.makepyfile(
        """
        def test_near(semantic):
            assert semantic.similar("The capital of France is Paris.", "Paris is the capital of France.")
        """
    )
    from_ini = run(pytester)
    from_ini.assert_outcomes(failed=1)
    assert "threshold 0.9990 (ini semantic_threshold), model sentence-transformers/all-MiniLM-L6-v2 int8" in (
        from_ini.stdout.str()
    )
    from_option = run(pytester, "--semantic-threshold", "0.2", "--semantic-precision", "fp32")
    from_option.assert_outcomes(passed=1)
    assert "(threshold 0.2000)" in summary_line(from_option)
    calibrated = run(pytester, "--semantic-threshold", "calibrated")
    calibrated.assert_outcomes(passed=1)
    # int8's calibrated threshold (the fp32 fit), int8 from the ini
    assert "(threshold 0.4719)" in summary_line(calibrated)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--semantic-threshold", "high"), "--semantic-threshold: threshold 'high' is neither a number nor"),
        (("--semantic-threshold", "nan"), "--semantic-threshold: threshold must be a finite number"),
        (
            ("--semantic-precision", "fp16"),
            "--semantic-precision is 'fp16'; the semantic fixture's precision",
        ),
    ],
)
def test_bad_settings_stop_the_run_with_the_fix(pytester, args, message):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_model_without_calibrated_threshold_says_what_to_pass(pytester, default_model_ready):
    pytester.makepyfile(
        """
        def test_near(semantic):
            assert semantic.similar("Paris", "Paris, France")
        """
    )
    folder = str(default_model_ready)  # a bundle folder: no registry entry, so no calibrated threshold
    result = run(pytester, "--semantic-model", folder)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert f"model {folder!r} has no calibrated threshold for fp32" in out
    assert "--semantic-threshold or the ini key semantic_threshold" in out
    run(pytester, "--semantic-model", folder, "--semantic-threshold", "0.5").assert_outcomes(passed=1)


def test_one_model_load_per_worker_under_xdist(pytester):
    pytester.makepyfile(
        "\n".join(
            f"def test_{i}(semantic):\n    assert semantic.similar('answer {i}', 'answer {i}')\n"
            for i in range(8)
        )
    )
    result = run(pytester, "-n", "2", "--dist", "load")
    result.assert_outcomes(passed=8)
    assert summary_line(result) == (
        "simkernel semantic: 8 comparisons, 0 below the threshold; lowest passing score 1.0000 "
        f"(threshold {FP32_THRESHOLD:.4f}); 2 model loads in 2 processes"
    )
    single = run(pytester)
    assert summary_line(single).endswith("; 1 model load in 1 process")


def test_no_summary_line_without_comparisons(pytester):
    pytester.makepyfile("def test_plain():\n    assert 1\n")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    assert not [line for line in result.outlines if line.startswith("simkernel semantic:")]
