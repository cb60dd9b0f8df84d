"""Result files and charts of the benchmarks.

Every benchmark script that imports ``support`` records what it prints: when it exits, the Markdown tables
and the machine line of its output go to ``benchmarks/results/NAME.json`` (NAME: the script, and its
boolean flags, e.g. ``bench_encoder-by-length``), with the command and the date, and each table that has
figures gets a chart, ``docs/assets/charts/NAME[-K].svg`` (K: the table's number in the output, from 2),
which docs/benchmarks.md shows beside the table. Speed-up tables are drawn as the speed-up of each engine
(the columns headed ``speed-up`` or ``vs ...``, at the minimum of the rounds) per case, with 1x marked;
other tables as the first figure of each cell (rows/s, pairs/s, ...) per engine.

    python benchmarks/charts.py                     # the charts of every result file again
    python benchmarks/charts.py --from-page docs/benchmarks.md
        # result files and charts from the tables already published in the page (each section's command
        # names its script), for figures measured before the scripts wrote result files
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CHARTS = HERE.parent / "docs" / "assets" / "charts"
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
MACHINE = re.compile(r"load average")


def result_name(argv: list[str]) -> str:
    """``bench_encoder-by-length`` for ``bench_encoder.py --texts 2000 --by-length``: the script's stem and
    its boolean flags (a flag not followed by a value)."""
    stem = Path(argv[0]).stem
    flags = []
    for i, arg in enumerate(argv[1:], start=1):
        following = argv[i + 1] if i + 1 < len(argv) else None
        if arg.startswith("--") and "=" not in arg and (following is None or following.startswith("-")):
            flags.append(arg[2:])
    return "-".join([stem, *flags])


def parse_output(text: str) -> dict:
    """The Markdown tables (header and rows of cells) and the machine lines of a benchmark's output."""
    tables: list[dict] = []
    current: list[list[str]] = []
    machine: list[str] = []
    for line in [*text.splitlines(), ""]:
        stripped = line.strip()
        if stripped.startswith("|") and stripped.endswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if not all(re.fullmatch(r":?-{3,}:?", c) for c in cells):
                current.append(cells)
            continue
        if len(current) >= 2:
            tables.append({"header": current[0], "rows": current[1:]})
        current = []
        if MACHINE.search(stripped):
            machine.append(stripped)
    return {"tables": tables, "machine": machine}


def _first_number(cell: str) -> float | None:
    match = NUMBER.search(cell)
    return float(match.group(0).replace(",", "")) if match else None


def chart_series(table: dict) -> tuple[str, list[str], dict[str, list[float]]] | None:
    """(the axis label, the case of each row, the values of each engine) of a table, or None where there is
    nothing to draw."""
    header, rows = table["header"], table["rows"]
    if len(header) < 2 or not rows:
        return None
    cases = [row[0] for row in rows]
    speedups = [i for i, name in enumerate(header) if name == "speed-up" or name.startswith("vs ")]
    if speedups:
        series = {}
        for i in speedups:
            # one speed-up column: the rows are the engines; several: each follows its engine's column
            engine = header[i] if len(speedups) == 1 else header[i - 1]
            values = [_first_number(row[i]) if i < len(row) else None for row in rows]
            if any(v is not None for v in values):  # an engine without a figure for a case: no bar there
                series[engine] = [math.nan if v is None else v for v in values]
        return ("speed-up (x, at the minimum of the rounds)", cases, series) if series else None
    series = {}
    for i, name in enumerate(header[1:], start=1):
        values = [_first_number(row[i]) if i < len(row) else None for row in rows]
        if all(v is not None for v in values):
            series[name] = values
    return (f"the first figure of each cell ({header[0]})", cases, series) if series else None


def draw(table: dict, title: str, path: Path) -> bool:
    """The table's chart as an SVG at ``path``; False where the table has nothing to draw."""
    series = chart_series(table)
    if series is None:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # text stays text: small files, searchable
    plt.rcParams["svg.hashsalt"] = "simkernel"  # the same figures give the same file
    label, cases, values = series
    engines = list(values)
    height = 0.8 / len(engines)
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.32 * len(cases) * max(1, len(engines)) ** 0.6 + 0.8))
    for k, engine in enumerate(engines):
        offsets = [i + (k - (len(engines) - 1) / 2) * height for i in range(len(cases))]
        ax.barh(offsets, values[engine], height=height, label=engine)
    if label.startswith("speed-up"):
        ax.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_yticks(range(len(cases)), [c if len(c) <= 40 else c[:38] + "..." for c in cases])
    ax.invert_yaxis()
    ax.set_xlabel(label)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="best")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return True


def chart_paths(name: str, result: dict) -> list[Path]:
    """The charts of a result file, drawn again; the paths of those drawn."""
    drawn = []
    for k, table in enumerate(result["tables"], start=1):
        path = CHARTS / (f"{name}.svg" if k == 1 else f"{name}-{k}.svg")
        if draw(table, f"{result['command']}  (table {k})", path):
            drawn.append(path)
    return drawn


def write_result(argv: list[str], output: str) -> Path | None:
    """The result file and the charts of one run whose printed output is ``output``; None where it printed
    no table (a worker process, a run stopped early)."""
    parsed = parse_output(output)
    if not parsed["tables"]:
        return None
    name = result_name(argv)
    result = {
        "command": "python benchmarks/" + " ".join([Path(argv[0]).name, *argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        **parsed,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    chart_paths(name, result)
    return path


def from_page(page: Path) -> list[Path]:
    """Result files (and charts) from the tables of a page like docs/benchmarks.md: each ``##`` section's
    indented ``python benchmarks/...`` command names the result; its tables and machine lines follow."""
    written = []
    sections = re.split(r"(?m)^(?=#{2,3} )", page.read_text(encoding="utf-8"))
    for section in sections:
        commands = re.findall(r"(?m)^    python benchmarks/(\S+\.py.*)$", section)
        if not commands:
            continue
        argv = commands[0].split("#", 1)[0].split()
        name = result_name(argv)
        parsed = parse_output(section)
        if not parsed["tables"]:
            continue
        result = {"command": "python benchmarks/" + " ".join(argv), "date": None, **parsed}
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{name}.json"
        path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        chart_paths(name, result)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--from-page", type=Path, help="write result files from a page's published tables")
    args = parser.parse_args(argv)
    if args.from_page:
        for path in from_page(args.from_page):
            print(path.relative_to(HERE.parent))
        return 0
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        for chart in chart_paths(path.stem, result):
            print(chart.relative_to(HERE.parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
