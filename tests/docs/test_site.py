"""The documentation site: it builds strictly, its CLI reference is the parser's own --help, README's
synopsis is the parser's usage, and every page loads in a real browser (headless Chromium) with its images
and stylesheets and no JavaScript error. Screenshots of the home page and the performance page are kept as
artefacts ($SIMKERNEL_TEST_ARTEFACTS, default build/test-artefacts/docs)."""

from __future__ import annotations

import argparse
import os
import re
import shutil
from pathlib import Path

import pytest
from tests.docs.pages import REPO
from tests.docs.site_support import build_site, page_paths, serve_site

from simkernel.cli.parser import build_parser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
ARTEFACTS = Path(os.environ.get("SIMKERNEL_TEST_ARTEFACTS", REPO / "build" / "test-artefacts")) / "docs"
README_MAX_LINES = 250


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    run = build_site(folder)
    assert run.returncode == 0, run.stdout + run.stderr
    return folder


def _commands(parser: argparse.ArgumentParser, path: str = "simkernel"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, f"{path} {name}")


def test_cli_reference_is_every_commands_help(site, monkeypatch):
    """The generated page holds each command's --help as the parser prints it at the page's width."""
    monkeypatch.setenv("COLUMNS", "100")
    page = (site / "cli-reference" / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", page)
    import html

    text = html.unescape(text)
    commands = list(_commands(build_parser()))
    assert len(commands) >= 10
    for name, parser in commands:
        for line in parser.format_help().splitlines():
            assert line.rstrip() in text, (name, line)


def test_readme_synopsis_is_the_parsers_usage(monkeypatch):
    """Each `usage:` paragraph of README's synopsis is exactly a command's usage (at 110 columns)."""
    monkeypatch.setenv("COLUMNS", "110")
    usages = {parser.format_usage().strip() for _, parser in _commands(build_parser())}
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    synopsis = readme.split("## The command line\n", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    shown = re.split(r"\n(?=usage: )", synopsis.strip())
    assert len(shown) >= 4
    for usage in shown:
        assert usage in usages, usage


def test_readme_is_short_and_keeps_the_two_commands():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, len(lines)
    assert lines[3].startswith("make demo") and lines[4].startswith("make test"), lines[:5]


def test_no_page_mentions_a_removed_flag():
    """`prepare_test_models.py --mpnet` is gone: no page may tell a reader to pass it."""
    for path in [REPO / "README.md", *(REPO / "docs").rglob("*.md")]:
        assert "--mpnet" not in path.read_text(encoding="utf-8"), path


@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="needs Debian's chromium and chromium-driver")
def test_every_page_in_chromium(site):
    """Each page loads (no 404), every image has loaded and every stylesheet is applied, and the browser's
    console has no SEVERE entry (a JavaScript error, a failed request)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1024",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    paths = page_paths(site)
    assert len(paths) >= 25, paths
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    problems: list[str] = []
    try:
        with serve_site(site) as (base, failed_requests):
            for path in paths:
                driver.get(base + path)
                WebDriverWait(driver, 60).until(
                    lambda d: d.execute_script("return document.readyState") == "complete"
                )
                state = driver.execute_script(
                    "return {ready: document.readyState, title: document.title,"
                    " images: [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src),"
                    " sheets: [...document.querySelectorAll('link[rel=stylesheet]')].filter(l => !l.sheet).map(l => l.href),"
                    " h1: (document.querySelector('article h1') || {}).textContent || ''}"
                )
                if state["ready"] != "complete" or not state["h1"]:
                    problems.append(f"{path}: not loaded ({state['ready']}, h1 {state['h1']!r})")
                problems += [f"{path}: image not loaded: {src}" for src in state["images"]]
                problems += [f"{path}: stylesheet not applied: {href}" for href in state["sheets"]]
                problems += [
                    f"{path}: console: {entry['message']}"
                    for entry in driver.get_log("browser")
                    if entry["level"] == "SEVERE"
                ]
                if path in ("", "performance/"):  # the whole page, charts included
                    height = driver.execute_script("return document.documentElement.scrollHeight")
                    driver.set_window_size(1280, min(int(height), 12000))
                    driver.save_screenshot(str(ARTEFACTS / f"{path.strip('/') or 'home'}.png"))
                    driver.set_window_size(1280, 1024)
            problems += [f"request failed: {failure}" for failure in failed_requests]
    finally:
        driver.quit()
    assert not problems, "\n".join(problems)
    assert (ARTEFACTS / "home.png").stat().st_size > 10_000
    assert (ARTEFACTS / "performance.png").stat().st_size > 10_000
