"""``evaluate``: eval_lib's evaluation loop (same signature, return shape and result classes), batched.

``await evaluate(test_cases, metrics, verbose=True, show_dashboard=False, session_name=None)`` returns
``[(None, [TestCaseResult]), ...]``, one tuple per test case in order, as eval_lib 0.8.2 does.

How it runs: every simkernel vector metric with the "local" provider (its ``evaluate`` and the provider's
``embed`` neither overridden by a subclass nor patched on the instance) is scored for ALL test cases
before the loop: the distinct texts of the whole batch (answers, references, expected outputs, across
every such metric sharing one model) are embedded once, then each metric scores all its cases in one
ragged ``cosine_reduce`` kernel call. Other metrics (the "openai" provider, custom providers, eval_lib's
own metrics or any object with ``name``, ``threshold`` and ``async evaluate(test_case) -> dict``) are
called case by case, in order, as eval_lib does; so is a vector metric whose ``evaluate`` a subclass
overrides or a test patches. Results are identical to case-by-case evaluation.

``verbose=True`` prints eval_lib's progress layout; ``verbose=False`` prints nothing (eval_lib prints
every result dict regardless). ``show_dashboard=True`` saves the session in ``.eval_cache/results.json``
for eval_lib's dashboard (see ``dashboard``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simkernel.metrics import console
from simkernel.metrics.embedding_providers.local import LocalEmbeddingProvider
from simkernel.metrics.vector_metrics import _VectorMetric
from simkernel.scoring.metrics.reference import score_groups

__all__ = ["MetricResult", "TestCaseResult", "evaluate"]


@dataclass
class MetricResult:
    """One metric on one test case (eval_lib's ``MetricResult``; ``evaluation_cost`` in US dollars,
    the int 0 when nothing was spent; ``evaluation_model`` is None for vector metrics)."""

    name: str
    score: float
    threshold: float
    success: bool
    evaluation_cost: float | None
    reason: str | None
    evaluation_model: Any
    evaluation_log: Any | None = None


@dataclass
class TestCaseResult:
    """All metrics on one test case (eval_lib's ``TestCaseResult``); ``success`` = every metric passed."""

    __test__ = False  # not a pytest test class

    input: str
    actual_output: str
    expected_output: str | None
    retrieval_context: list[str] | None
    success: bool
    metrics_data: list[MetricResult]
    tools_called: list[str] | None = None
    expected_tools: list[str] | None = None


def _as_list(value: Any, what: str, example: str) -> list[Any]:
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Sequence):
        raise TypeError(f"{what} must be a list, got {type(value).__name__}; call {example}")
    return list(value)


def _check_case(index: int, case: Any) -> None:
    for field in ("input", "actual_output"):
        if not hasattr(case, field):
            raise TypeError(
                f"test_cases[{index}] must be an EvalTestCase (or an object with .input and .actual_output), got {type(case).__name__}; build it with simkernel.EvalTestCase(input=..., actual_output=...)"
            )


def _check_metric(index: int, metric: Any) -> None:
    missing = [a for a in ("name", "threshold", "evaluate") if not hasattr(metric, a)]
    if missing:
        raise TypeError(
            f"metrics[{index}] is a {type(metric).__name__} without {', '.join(missing)}; pass metric objects such as ReferenceMatchMetric(...), not classes or names"
        )


# What the batched path stands in for: the metric's ``evaluate`` (it scores the case itself) and the
# provider's ``embed`` (called once over the batch's texts, its cost taken as the local provider's 0.0).
_BATCH_BYPASSED_METRIC_METHODS = ("evaluate",)
_BATCH_BYPASSED_PROVIDER_METHODS = ("embed",)


def _keeps_methods(obj: Any, base: type, names: tuple[str, ...]) -> bool:
    """True when ``obj`` runs ``base``'s own ``names``: neither its class overrides one nor the instance
    replaces one (``mock.patch.object(obj, name, ...)`` sets an instance attribute)."""
    own = getattr(obj, "__dict__", {})
    return all(getattr(type(obj), n, None) is getattr(base, n) and n not in own for n in names)


def _local_group_key(metric: Any) -> tuple[Any, ...] | None:
    """Metrics with equal keys share one encoder; None for metrics scored case by case.

    Only a metric whose results the batched path reproduces is batched: a simkernel vector metric on the
    plain local provider, with neither ``evaluate`` nor the provider's ``embed`` overridden by a subclass
    or replaced on the instance (a test's patch); any other is awaited case by case, as eval_lib does."""
    if not isinstance(metric, _VectorMetric) or type(metric.provider) is not LocalEmbeddingProvider:
        return None
    if not (
        _keeps_methods(metric, _VectorMetric, _BATCH_BYPASSED_METRIC_METHODS)
        and _keeps_methods(metric.provider, LocalEmbeddingProvider, _BATCH_BYPASSED_PROVIDER_METHODS)
    ):
        return None
    p = metric.provider
    return (p.model_id, p.precision, p.threads, p.batch_size)


async def _score_local_metrics(cases: list[Any], metrics: list[Any]) -> dict[int, list[dict[str, Any]]]:
    """Results of every local-provider vector metric on every case: metric index -> results in case order."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for m_idx, metric in enumerate(metrics):
        key = _local_group_key(metric)
        if key is not None:
            groups.setdefault(key, []).append(m_idx)

    results: dict[int, list[dict[str, Any]]] = {}
    for member_indices in groups.values():
        row_of: dict[str, int] = {}  # distinct text -> row of the embedding matrix
        plans: dict[int, list[Any]] = {}  # metric index -> per case: a result dict or (query row, ref rows)
        for m_idx in member_indices:
            metric = metrics[m_idx]
            plan: list[Any] = []
            for c_idx, case in enumerate(cases):
                special = metric._special_result(case)
                if special is not None:
                    plan.append(special)
                    continue
                try:
                    text, refs = metric._texts(case)
                except TypeError as exc:
                    raise TypeError(f"test_cases[{c_idx}]: {exc}") from None
                query_row = row_of.setdefault(text, len(row_of))
                plan.append((query_row, [row_of.setdefault(r, len(row_of)) for r in refs]))
            plans[m_idx] = plan

        provider: LocalEmbeddingProvider = metrics[member_indices[0]].provider
        embeddings = (await provider.embed(list(row_of)))[0] if row_of else None

        for m_idx in member_indices:
            metric, plan = metrics[m_idx], plans[m_idx]
            scored = [i for i, p in enumerate(plan) if isinstance(p, tuple)]
            out: list[Any] = list(plan)
            if scored:
                assert embeddings is not None  # a plan with scored cases put their texts in row_of
                counts = np.array([len(plan[i][1]) for i in scored], dtype=np.int64)
                offsets = np.concatenate(([0], np.cumsum(counts)))
                query_rows = np.array([plan[i][0] for i in scored], dtype=np.int64)
                ref_rows = np.fromiter(
                    (r for i in scored for r in plan[i][1]), dtype=np.int64, count=int(offsets[-1])
                )
                grouped = score_groups(embeddings, query_rows, ref_rows, offsets, metric._aggregation)
                for j, c_idx in enumerate(scored):
                    sims = grouped.similarities[offsets[j] : offsets[j + 1]]
                    out[c_idx] = metric._result(cases[c_idx], float(grouped.scores[j]), sims, 0.0)
            results[m_idx] = out
    return results


async def evaluate(
    test_cases: list[Any],
    metrics: list[Any],
    verbose: bool = True,
    show_dashboard: bool = False,
    session_name: str | None = None,
) -> list[tuple[None, list[TestCaseResult]]]:
    """Evaluate every test case with every metric; one ``(None, [TestCaseResult])`` per case, in order."""
    cases = _as_list(test_cases, "test_cases", "evaluate([test_case], [metric])")
    metric_list = _as_list(metrics, "metrics", "evaluate(test_cases, [metric])")
    for c_idx, case in enumerate(cases):
        _check_case(c_idx, case)
    for m_idx, metric in enumerate(metric_list):
        _check_metric(m_idx, metric)

    start = time.time()
    if verbose:
        console.print_evaluation_header(len(cases), metric_list)
    precomputed = await _score_local_metrics(cases, metric_list)

    results: list[tuple[None, list[TestCaseResult]]] = []
    total_cost, passed = 0.0, 0
    for c_idx, case in enumerate(cases):
        if verbose:
            console.print_case_header(c_idx + 1, len(cases), str(case.input))
        metric_results: list[MetricResult] = []
        case_cost = 0.0
        for m_idx, metric in enumerate(metric_list):
            if verbose:
                console.print_progress(m_idx + 1, len(metric_list), metric.name)
            saved_verbose = getattr(metric, "verbose", True)
            metric.verbose = verbose  # eval_lib: evaluate's verbose overrides the metric's for this call
            try:
                if m_idx in precomputed:
                    res = precomputed[m_idx][c_idx]
                    metric.print_result(res)
                else:
                    res = await metric.evaluate(case)
            finally:
                metric.verbose = saved_verbose
            cost = res.get("evaluation_cost", 0) or 0
            case_cost += cost
            total_cost += cost
            metric_results.append(
                MetricResult(
                    name=metric.name,
                    score=res["score"],
                    threshold=metric.threshold,
                    success=res["success"],
                    evaluation_cost=cost,
                    reason=res["reason"],
                    evaluation_model=getattr(metric, "model", None),
                    evaluation_log=res.get("evaluation_log", None),
                )
            )
        overall = all(m.success for m in metric_results)
        passed += overall
        if verbose:
            console.print_case_summary(overall, case_cost, metric_results)
        results.append(
            (
                None,
                [
                    TestCaseResult(
                        input=case.input,
                        actual_output=case.actual_output,
                        expected_output=getattr(case, "expected_output", None),
                        retrieval_context=getattr(case, "retrieval_context", None),
                        tools_called=getattr(case, "tools_called", None),
                        expected_tools=getattr(case, "expected_tools", None),
                        success=overall,
                        metrics_data=metric_results,
                    )
                ],
            )
        )

    if verbose:
        console.print_summary(total_cost, time.time() - start, passed, len(cases))
    if show_dashboard:
        from simkernel.metrics.dashboard import save_results_to_cache

        session_id = save_results_to_cache(results, session_name)
        if verbose:
            print(
                f"\n✅ Results saved to cache: {session_id} (.eval_cache/results.json); "
                "view them with `eval-lib dashboard`"
            )
    return results
