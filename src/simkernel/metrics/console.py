"""Console output of the metrics and of ``evaluate`` (the layout eval_lib prints), only when verbose.

Unlike eval_lib, nothing here is called when ``verbose`` is False: eval_lib prints every metric result
(as a raw dict) even then.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Sequence
from typing import Any

BOLD, DIM, ENDC = "\033[1m", "\033[2m", "\033[0m"
HEADER, BLUE, CYAN, GREEN, YELLOW, RED = (
    "\033[95m",
    "\033[94m",
    "\033[96m",
    "\033[92m",
    "\033[93m",
    "\033[91m",
)


def _bar(fraction: float, length: int) -> str:
    filled = max(0, min(length, int(length * fraction)))
    return "█" * filled + "░" * (length - filled)


def print_metric_result(result: dict[str, Any], default_name: str) -> None:
    """A boxed block: metric name, PASSED/FAILED, score bar, cost, wrapped reason, evaluation log."""
    width = max(shutil.get_terminal_size().columns // 2, 60)
    success = result.get("success", False)
    score = float(result.get("score", 0.0) or 0.0)
    cost = float(result.get("evaluation_cost", 0.0) or 0.0)
    title = f"📊 {result.get('name', default_name)}"
    title = title[: width - 3] + "..." if len(title) > width else title.center(width)
    color, icon, status = (GREEN, "✅", "PASSED") if success else (RED, "❌", "FAILED")
    bar = _bar(score, min(30, width - 30))
    reason = textwrap.fill(
        str(result.get("reason", "N/A")), width - 2, initial_indent="  ", subsequent_indent="  "
    )
    lines = [
        f"\n{BOLD}{CYAN}╔{'═' * width}╗{ENDC}",
        f"{BOLD}{CYAN}║{ENDC}{title}{BOLD}{CYAN}║{ENDC}",
        f"{BOLD}{CYAN}╚{'═' * width}╝{ENDC}\n",
        f"{BOLD}Status:{ENDC} {icon} {color}{BOLD}{status}{ENDC}",
        f"{BOLD}Score:{ENDC}  {YELLOW}{score:.2f}{ENDC} [{bar}] {score * 100:.0f}%",
        f"{BOLD}Cost:{ENDC}   {BLUE}💰 ${cost:.6f}{ENDC}",
        f"{BOLD}Reason:{ENDC}",
        f"{DIM}{reason}{ENDC}\n",
    ]
    log = result.get("evaluation_log")
    if log:
        lines += [f"{BOLD}Evaluation Log:{ENDC}", f"{DIM}╭{'─' * width}╮{ENDC}"]
        for line in json.dumps(log, indent=2, ensure_ascii=False, default=str).split("\n"):
            for piece in textwrap.wrap(line, width - 4, drop_whitespace=False) or [""]:
                lines.append(f"{DIM}│{ENDC} {piece}{' ' * max(0, width - len(piece) - 2)}{DIM}│{ENDC}")
        lines.append(f"{DIM}╰{'─' * width}╯{ENDC}")
    lines.append(f"{DIM}{'─' * width}{ENDC}\n")
    print("\n".join(lines))


def print_evaluation_header(n_cases: int, metrics: Sequence[Any]) -> None:
    """The banner of ``evaluate``: number of cases, metrics and their thresholds."""
    print(f"\n{BOLD}{HEADER}{'=' * 70}{ENDC}")
    print(f"{BOLD}{HEADER}{'🚀 STARTING EVALUATION'.center(70)}{ENDC}")
    print(f"{BOLD}{HEADER}{'=' * 70}{ENDC}\n")
    print(f"{BOLD}Configuration:{ENDC}")
    print(f"  📝 Test Cases: {CYAN}{n_cases}{ENDC}")
    print(f"  📊 Metrics: {CYAN}{len(metrics)}{ENDC}")
    print(f"  🎯 Total Evaluations: {CYAN}{n_cases * len(metrics)}{ENDC}")
    print(f"\n{BOLD}Metrics:{ENDC}")
    for i, metric in enumerate(metrics, 1):
        print(f"  {i}. {BLUE}{metric.name}{ENDC} (threshold: {metric.threshold})")


def print_case_header(index: int, total: int, input_text: str) -> None:
    print(f"\n{BOLD}{CYAN}{'─' * 70}{ENDC}")
    print(f"{BOLD}{CYAN}📝 Test Case {index}/{total}{ENDC}")
    print(f"{BOLD}{CYAN}{'─' * 70}{ENDC}")
    print(f"{DIM}Input: {input_text[:80]}{'...' if len(input_text) > 80 else ''}{ENDC}")


def print_progress(current: int, total: int, item: str) -> None:
    print(
        f"\r{CYAN}Progress: [{_bar(current / total, 40)}] {current / total * 100:.0f}% "
        f"({current}/{total}) - {item}{ENDC}",
        end="",
        flush=True,
    )


def print_case_summary(success: bool, cost: float, metric_results: Sequence[Any]) -> None:
    color, icon, status = (GREEN, "✅", "PASSED") if success else (RED, "❌", "FAILED")
    print(f"\n{BOLD}Test Case Summary:{ENDC}")
    print(f"  {icon} Overall: {color}{BOLD}{status}{ENDC}")
    print(f"  💰 Cost: {YELLOW}${cost:.6f}{ENDC}")
    print(f"\n  {BOLD}Metrics Breakdown:{ENDC}")
    for md in metric_results:
        mark, mcolor = ("✅", GREEN) if md.success else ("❌", RED)
        print(f"    {mark} {md.name}: {mcolor}{md.score:.2f}{ENDC}")


def print_summary(total_cost: float, total_time_s: float, passed: int, total: int) -> None:
    rate = passed / total * 100 if total else 0.0
    color = GREEN if rate >= 80 else YELLOW if rate >= 50 else RED
    print(f"\n\n{BOLD}{GREEN}{'=' * 70}{ENDC}")
    print(f"{BOLD}{GREEN}📋 EVALUATION SUMMARY{ENDC}")
    print(f"{BOLD}{GREEN}{'=' * 70}{ENDC}")
    print(f"\n{BOLD}Overall Results:{ENDC}")
    print(f"  ✅ Passed: {GREEN}{passed}{ENDC} / {total}")
    print(f"  ❌ Failed: {RED}{total - passed}{ENDC} / {total}")
    print(f"  📊 Success Rate: {color}{rate:.1f}%{ENDC}")
    print(f"\n{BOLD}Resource Usage:{ENDC}")
    print(f"  💰 Total Cost: {YELLOW}${total_cost:.6f}{ENDC}")
    print(f"  ⏱️  Total Time: {CYAN}{total_time_s:.2f}s{ENDC}")
    print(f"  📈 Avg Time per Test: {DIM}{(total_time_s / total if total else 0):.2f}s{ENDC}")
    print(f"\n{BOLD}{GREEN}{'=' * 70}{ENDC}\n")
