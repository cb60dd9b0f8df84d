"""``POST /v1/score/{metric}``: any metric of the scoring core's registry, one route for all of them.

The route is derived from :mod:`simkernel.scoring.registry`: a metric registered there (built in, or by a
plugin's entry point) is served with no other change. The body holds ``predicted`` (texts), the metric's
target column (``ground_truth``: one text a row, or a list of texts where the metric takes several;
``references``: a list of texts a row), an optional ``model`` (a served model; default the first served)
and the metric's settings that a request may set (``aggregation``; ``options``: the metric's own, numbers
only, e.g. bertscore's ``{"layer": 4}``); the server's ``--precision`` is
the metric's precision. The answer: ``{"metric", "model", "scores", "mean"}``, one score a row, in the
metric's numbers (float32 scores as the floats they hold), ``mean`` null for no rows. A metric that adds
several columns answers its primary column in ``scores`` and ``mean``, and every column in
``"columns": {suffix: {"scores": [...], "mean": ...}}`` (in the metric's order) with ``"primary"``, the
primary column's suffix.
"""

from __future__ import annotations

import threading
from typing import Any

import simkernel.serve.bodies as bodies
from simkernel.scoring.registry import get_metric, metric_names
from simkernel.scoring.settings import ScoringSettings
from simkernel.serve.errors import ApiError, invalid, model_call

REQUEST_SETTINGS = ("aggregation",)  # the metric settings a request may set (the rest are the server's)
_scorers: dict[tuple, Any] = {}
_scorers_lock = threading.Lock()


def _metric_options(metric: Any, given: Any, endpoint: str) -> dict[str, Any]:
    """A request's ``options`` (the metric's own settings): names the metric takes, numbers only (a request
    never names a file of the server's; such options are set when the server starts)."""
    if not isinstance(given, dict):
        raise invalid(
            f"{endpoint}: 'options' must be an object of the metric's settings, e.g. {{\"layer\": 4}}"
        )
    unknown = sorted(set(given) - set(metric.options))
    if unknown:
        raise invalid(
            f"{endpoint}: unknown option(s) {unknown}; {metric.name} takes {sorted(metric.options)}"
        )
    for name, value in given.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise invalid(f"{endpoint}: option {name!r} must be a number over HTTP, got {value!r}")
    return dict(given)


def _metric(name: str) -> Any:
    try:
        return get_metric(name)
    except ValueError:
        raise ApiError(
            404,
            f"no metric named {name[:100]!r}; the metrics are: {', '.join(metric_names())} (POST /v1/score/NAME)",
            "metric_not_found",
        ) from None


def _targets(metric: Any, value: Any, max_inputs: int) -> list[Any]:
    role = metric.target
    if not isinstance(value, list):
        raise invalid(f"{role!r} must be an array, got a JSON {type(value).__name__}", "invalid_type")
    out: list[Any] = []
    for i, item in enumerate(value):
        if isinstance(item, list) and (role == "references" or metric.several_targets):
            out.append(bodies.texts(item, f"{role}[{i}]", max_inputs, allow_empty_list=role == "references"))
        elif role == "references":
            raise invalid(
                f"'references[{i}]' must be an array of texts, got a JSON {type(item).__name__}",
                "invalid_type",
            )
        else:
            out.append(bodies.text(item, f"{role}[{i}]"))
    count = sum(len(item) if isinstance(item, list) else 1 for item in out)
    if count > max_inputs:
        raise ApiError(
            413,
            f"{role!r} holds {count:,} texts, over this server's limit of {max_inputs:,} per request; split the rows into several requests (the operator can raise --max-inputs)",
            "too_many_inputs",
        )
    return out


def _scorer(metric: Any, settings: ScoringSettings) -> Any:
    """The metric's scorer for these settings, built and loaded once per server (the served model is the
    runtime's shared instance, so it is not loaded again)."""
    key = (metric.name, repr(sorted(settings.as_dict().items())))
    with _scorers_lock:
        scorer = _scorers.get(key)
        if scorer is None:
            scorer = metric.scorer(settings)
            scorer.load()
            _scorers[key] = scorer
    return scorer


async def score(app_state: Any, body: dict[str, Any], metric_name: str) -> dict[str, Any]:
    from simkernel.runtime.inference.threads import run_blocking

    metric = _metric(metric_name)
    endpoint = f"POST /v1/score/{metric.name}"
    takes = tuple(name for name in REQUEST_SETTINGS if name in metric.settings)
    own = ("options",) if metric.options else ()
    bodies.check_known(body, ("predicted", metric.target, "model", *takes, *own), endpoint)
    limit = app_state.settings.max_inputs
    predicted = bodies.texts(
        bodies.required(body, "predicted", endpoint), "predicted", limit, allow_empty_list=True
    )
    targets = _targets(metric, bodies.required(body, metric.target, endpoint), limit)
    if len(targets) != len(predicted):
        raise invalid(
            f"'predicted' holds {len(predicted)} texts and {metric.target!r} {len(targets)} rows; give one {metric.target.replace('_', ' ')} row per predicted text",
            "invalid_value",
        )
    options: dict[str, Any] = {name: body[name] for name in takes if name in body}
    if "options" in body:
        options["options"] = _metric_options(metric, body["options"], endpoint)
    model, model_id = None, None
    if metric.loads_model:
        model = app_state.models.get(body.get("model"), None, endpoint)
        model_id = model.id
        options.update(model=model_id, precision=app_state.settings.precision)
    elif "model" in body:
        raise invalid(f"{endpoint} runs no model; drop 'model'", "invalid_value")
    try:
        settings = ScoringSettings.from_options(**options)
    except (TypeError, ValueError) as exc:
        raise invalid(str(exc)) from None
    scorer = await model_call(run_blocking(_scorer, metric, settings), model_id)
    scores = await model_call(run_blocking(scorer.score, predicted, targets), model_id) if predicted else []
    if model is not None and predicted:
        app_state.metrics.count_input(
            model.id, await model.input_tokens(model.row_inputs(predicted, targets))
        )
    columns = {
        suffix: _column(values, kind)
        for (suffix, kind), values in zip(metric.columns, metric.score_columns(scores), strict=True)
    }
    primary = columns[metric.primary]
    answer: dict[str, Any] = {
        "metric": metric.name,
        "model": model_id,
        "scores": primary["scores"],
        "mean": primary["mean"],
    }
    if metric.several_columns:
        answer["primary"] = metric.primary
        answer["columns"] = columns
    return answer


def _column(scores: list[Any], kind: str) -> dict[str, Any]:
    """One score column of the answer: its numbers (ints for int64) and their mean (null for no rows)."""
    values = [float(s) if kind != "int64" else int(s) for s in scores]
    return {"scores": values, "mean": sum(values) / len(values) if values else None}
