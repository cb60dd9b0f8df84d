"""``evaluate(..., show_dashboard=True)``: results saved where eval_lib's dashboard reads them.

Appends one session to ``.eval_cache/results.json`` in the current folder, in the format of eval_lib's
``DashboardCache`` (``eval-lib dashboard`` shows it). The file is replaced atomically; an unreadable
existing file is kept aside as ``results.json.unreadable-<timestamp>`` instead of being overwritten.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

CACHE_DIR = ".eval_cache"
CACHE_FILE = "results.json"


def _model_label(model: Any) -> str:
    if isinstance(model, str):
        return model
    get_name = getattr(model, "get_model_name", None)
    return str(get_name()) if callable(get_name) else type(model).__name__


def _session_data(results: list[tuple[Any, list[Any]]]) -> dict[str, Any]:
    test_cases: list[dict[str, Any]] = []
    summary: dict[str, dict[str, Any]] = {}
    total_cost = 0.0
    for test_index, case_results in results:
        for result in case_results:
            metrics = []
            for md in result.metrics_data:
                model = _model_label(md.evaluation_model)
                metrics.append(
                    {
                        "name": md.name,
                        "score": round(md.score, 3),
                        "success": md.success,
                        "threshold": md.threshold,
                        "reason": md.reason[:300] if md.reason else "",
                        "reason_full": md.reason,
                        "evaluation_model": model,
                        "evaluation_cost": md.evaluation_cost,
                        "evaluation_log": md.evaluation_log,
                    }
                )
                entry = summary.setdefault(
                    md.name,
                    {
                        "scores": [],
                        "passed": 0,
                        "failed": 0,
                        "threshold": md.threshold,
                        "total_cost": 0.0,
                        "model": model,
                    },
                )
                entry["scores"].append(md.score)
                entry["passed" if md.success else "failed"] += 1
                if md.evaluation_cost:
                    total_cost += md.evaluation_cost
                    entry["total_cost"] += md.evaluation_cost
            text_in = result.input or ""
            test_cases.append(
                {
                    "test_index": test_index,
                    "input": text_in[:100] + "..." if len(text_in) > 100 else text_in,
                    "input_full": result.input,
                    "actual_output": result.actual_output[:200] if result.actual_output else "",
                    "actual_output_full": result.actual_output,
                    "expected_output": result.expected_output[:200] if result.expected_output else "",
                    "expected_output_full": result.expected_output,
                    "retrieval_context": result.retrieval_context or [],
                    "tools_called": result.tools_called or [],
                    "expected_tools": result.expected_tools or [],
                    "metrics": metrics,
                }
            )
    for entry in summary.values():
        n = entry["passed"] + entry["failed"]
        entry["avg_score"] = sum(entry["scores"]) / len(entry["scores"]) if entry["scores"] else 0
        entry["success_rate"] = entry["passed"] / n * 100 if n else 0
    return {
        "test_cases": test_cases,
        "metrics_summary": summary,
        "total_cost": total_cost,
        "total_tests": len(test_cases),
    }


def save_results_to_cache(results: list[tuple[Any, list[Any]]], session_name: str | None = None) -> str:
    """Append ``results`` (what ``evaluate`` returned) as a session; returns the session id."""
    folder = Path(CACHE_DIR)
    folder.mkdir(exist_ok=True)
    path = folder / CACHE_FILE
    history: list[Any] = []
    if path.exists():
        try:
            history = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(history, list):
                raise ValueError("not a list of sessions")
        except ValueError as exc:
            aside = path.with_name(f"{CACHE_FILE}.unreadable-{int(time.time())}")
            path.rename(aside)
            warnings.warn(
                f"{path} could not be read ({exc}); kept it as {aside} and started a new one", stacklevel=3
            )
            history = []
    session_id = session_name or f"session_{int(time.time())}"
    history.append(
        {
            "session_id": session_id,
            "timestamp": datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
            "data": _session_data(results),
        }
    )
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".results-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(history, handle, indent=2, ensure_ascii=False, default=str)
    os.replace(tmp, path)
    return session_id
