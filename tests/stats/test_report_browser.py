"""The --report pages of score, compare and calibrate as a person sees them: opened in headless Chromium
(Debian's chromium and chromium-driver, through selenium), every chart drawn (an SVG with drawing elements
and a nonzero box), no JavaScript error, every figure on the page equal to the JSON the command wrote, the
Russian and Chinese text drawn as text in a font that has the glyphs, and the page self-contained.
Screenshots are kept under the test's tmp dir, or under $SIMKERNEL_REPORT_SCREENSHOTS when set."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
from pathlib import Path

import pytest

from simkernel.cli import main

REPO = Path(__file__).resolve().parents[2]
ANSWERS = REPO / "examples" / "answers.csv"
# column names in Russian and Chinese: they appear in the charts' axes and legends, and the tables' headers
TRUTH, ANSWER, OTHER, LABEL, SCORE = "эталон", "回答", "другой_ответ", "оценка", "分数"


@pytest.fixture(scope="module")
def browser():
    if shutil.which("chromium") is None or shutil.which("chromedriver") is None:
        pytest.skip(
            "Chromium is not installed: apt-get install chromium chromium-driver (Debian) to run the report tests"
        )
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is missing: pip install 'simkernel[test]'"
    )
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1200,900",
    ):
        options.add_argument(flag)
    options.binary_location = shutil.which("chromium")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """examples/answers.csv (English, Russian and Chinese rows) with Russian and Chinese column names and a
    second system's answers (the ground truth on every third row)."""
    folder = tmp_path_factory.mktemp("reports")
    with ANSWERS.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    path = folder / "ответы.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", TRUTH, ANSWER, OTHER, LABEL])
        for i, row in enumerate(rows):
            other = row["ground_truth"] if i % 3 == 0 else row["predicted"]
            writer.writerow([i, row["ground_truth"], row["predicted"], other, row["label"]])
    return path


def _shots() -> Path | None:
    folder = os.environ.get("SIMKERNEL_REPORT_SCREENSHOTS")
    return Path(folder) if folder else None


def _lookup(data: dict, path: str):
    value = data
    for part in path.split("."):
        value = value[part]
    return value


def _check_page(browser, page: Path, expected: dict, shot: Path) -> None:
    text = page.read_text("utf-8")
    # self-contained: nothing fetched (SVG's own url(#id) references and namespace names only)
    assert not re.search(r"<link|<img|<iframe|src=|@import|url\((?!#)", text)
    assert 'xlink:href="http' not in text and 'href="http' not in text
    assert '<script type="application/json"' in text and "<script>" not in text and "<script src" not in text
    browser.get(page.as_uri())
    charts = browser.execute_script(
        """return [...document.querySelectorAll('section.chart')].map(s => {
            const svg = s.querySelector('svg'); if (!svg) return null;
            const box = svg.getBBox(); const rect = svg.getBoundingClientRect();
            return {id: s.id, drawn: svg.querySelectorAll('path, use, text, rect').length,
                    bbox: [box.width, box.height], rect: [rect.width, rect.height]};
        })"""
    )
    assert charts and all(c is not None for c in charts)
    for chart in charts:
        assert chart["drawn"] > 3 and min(chart["bbox"]) > 0 and min(chart["rect"]) > 0, chart
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []
    # every figure on the page is the JSON's, both the exact value and the rounded one shown
    cells = browser.execute_script(
        "return [...document.querySelectorAll('[data-key]')].map(c => [c.dataset.key, c.dataset.value, c.textContent])"
    )
    assert len(cells) >= 5
    embedded = json.loads(
        browser.execute_script("return document.getElementById('summary-json').textContent")
    )
    for key, raw, shown in cells:
        want = _lookup(expected, key)
        assert _lookup(embedded, key) == want, key
        if want is None:
            assert raw == "" and shown == "n/a", key
            continue
        assert float(raw) == want, key
        if isinstance(want, int) and not isinstance(want, bool):
            assert shown == f"{want:,}", key
        elif shown.endswith("%"):
            assert shown == f"{want:.1%}", key
        else:
            assert shown == f"{want:.4f}", key
    # Russian and Chinese: in the SVGs as text (not paths), drawn with a nonzero width, in a font that has them
    widths = browser.execute_script(
        """return [...document.querySelectorAll('svg text')]
            .filter(t => /[\\u0400-\\u04FF\\u4E00-\\u9FFF]/.test(t.textContent))
            .map(t => [t.textContent, t.getBBox().width])"""
    )
    assert any(re.search("[\u0400-\u04ff]", t) for t, _ in widths), "no Russian text in the charts"
    assert all(w > 0 for _, w in widths)
    # a glyph the page's fonts lack is drawn as the same "missing glyph" box as a private-use code point:
    # Chinese and Russian letters must draw otherwise (in the page's font stack)
    glyphs = browser.execute_script(
        """const font = '40px ' + getComputedStyle(document.body).fontFamily;
           const draw = t => { const c = document.createElement('canvas'); c.width = 60; c.height = 60;
               const g = c.getContext('2d'); g.font = font; g.fillText(t, 5, 45);
               return Array.from(g.getImageData(0, 0, 60, 60).data).join(','); };
           const missing = draw('\\uE000');
           return ['中', '数', 'Ж', 'ы'].map(t => draw(t) !== missing && draw(t) !== draw(' '))"""
    )
    assert glyphs == [True, True, True, True], (
        "Chinese or Russian glyphs missing: apt-get install fonts-noto-cjk"
    )
    cjk = browser.execute_script(
        """const s = document.createElement('span'); s.textContent = '中文字'; document.body.appendChild(s);
           const w = s.getBoundingClientRect().width; s.remove(); return w"""
    )
    assert cjk > 0
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1200, min(int(height) + 40, 12000))
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if _shots() is not None:
        _shots().mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, _shots() / shot.name)


def _run(*argv) -> None:
    code = main([str(a) for a in argv])
    assert code == 0


def test_score_report(browser, data, tmp_path, minilm):
    report, summary = tmp_path / "score.html", tmp_path / "score.json"
    _run(
        "score", data, "--ground-truth", TRUTH, "--predicted", ANSWER, "--label", LABEL, "--score-column", SCORE,
        "--threshold", "0.7", "-o", tmp_path / "out.csv", "--summary-json", summary, "--report", report,
        "--resamples", "2000", "-q",
    )  # fmt: skip
    expected = json.loads(summary.read_text("utf-8"))
    _check_page(browser, report, expected, tmp_path / "score-report.png")
    text = report.read_text("utf-8")
    assert "Threshold sweep" in text and "F1-best" in text and "Rows the metric gets most wrong" in text
    assert "в начале шестидесятых" in text or "十二个月" in text  # the rows' own texts in the table


def test_compare_report(browser, data, tmp_path, minilm):
    report, result = tmp_path / "compare.html", tmp_path / "compare.json"
    _run(
        "compare", data, "--ground-truth", TRUTH, "--predicted", ANSWER, "--predicted-b", OTHER, "--label", LABEL,
        "--output-json", result, "--report", report, "--resamples", "2000", "-q",
    )  # fmt: skip
    expected = json.loads(result.read_text("utf-8"))
    assert expected["mean_difference"] > 0 and not math.isnan(expected["p_value"])
    _check_page(browser, report, expected, tmp_path / "compare-report.png")
    text = report.read_text("utf-8")
    assert "Paired differences" in text and "Rows where B is ahead most" in text
    # B's own answers in its column of the table (the second system's texts, not A's again)
    assert "<th>B&#x27;s texts</th>" in text


def test_calibrate_report(browser, data, tmp_path, minilm):
    report, result = tmp_path / "calibrate.html", tmp_path / "calibrate.json"
    _run(
        "calibrate", data, "--ground-truth", TRUTH, "--predicted", ANSWER, "--label", LABEL,
        "--output-json", result, "--report", report, "--resamples", "2000", "-q",
    )  # fmt: skip
    expected = json.loads(result.read_text("utf-8"))
    _check_page(browser, report, expected, tmp_path / "calibrate-report.png")
    assert "Threshold sweep" in report.read_text("utf-8")


@pytest.fixture(scope="session")
def minilm() -> str:
    from tests.components.conftest import require_stored_model

    return require_stored_model("sentence-transformers/all-MiniLM-L6-v2")
