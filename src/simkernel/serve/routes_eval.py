"""simkernel's scoring endpoints: ``POST /v1/sas`` and ``POST /v1/reference-match``.

``/v1/sas`` takes :class:`~simkernel.components.evaluators.SASEvaluator`'s inputs,
``ground_truth_answers`` (one string per question, or a list of correct answers per question) and
``predicted_answers``, plus an optional ``model`` (a served bi- or cross-encoder; default the first
served), and answers its outputs: ``{"score", "individual_scores", "model"}``.

``/v1/reference-match`` takes :class:`~simkernel.metrics.ReferenceMatchMetric`'s settings and one case:
``output`` (the text scored), ``references`` (strings), ``aggregation`` (``"max"``, the default, or
``"mean"``), ``threshold`` (a number, default 0.7, or ``"calibrated"``) and an optional ``model`` (a
served bi-encoder), and answers the metric's result: ``name``, ``score``, ``success``, ``reason``,
``evaluation_cost``, ``evaluation_log``, plus ``threshold`` and ``model``.

Why these two call the drop-ins, not the registry's scorers (``POST /v1/score/{metric}`` does): they answer
the drop-ins' exact contracts, Haystack's (``[0.0]`` for no answers, its ``ValueError`` messages, ``score``
the numpy mean) and eval_lib's (``reason``, ``evaluation_log``, ``threshold="calibrated"``), which the
drop-ins implement on the scoring core's own functions.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import simkernel.serve.bodies as bodies
from simkernel.scoring.settings import AGGREGATIONS
from simkernel.serve.errors import ApiError, invalid, model_call

SAS_FIELDS = ("ground_truth_answers", "predicted_answers", "model")
REFERENCE_FIELDS = ("output", "references", "aggregation", "threshold", "model")


def _ground_truths(value: Any, max_inputs: int) -> list[Any]:
    if not isinstance(value, list):
        raise invalid(
            f"'ground_truth_answers' must be an array, got a JSON {type(value).__name__}", "invalid_type"
        )
    out: list[Any] = []
    count = 0
    for i, item in enumerate(value):
        if isinstance(item, list):
            out.append(bodies.texts(item, f"ground_truth_answers[{i}]", max_inputs))
            count += len(item)
        else:
            out.append(bodies.text(item, f"ground_truth_answers[{i}]"))
            count += 1
    if count > max_inputs:
        raise ApiError(
            413,
            f"'ground_truth_answers' holds {count:,} texts, over this server's limit of {max_inputs:,} per request; split the questions into several requests (the operator can raise --max-inputs)",
            "too_many_inputs",
        )
    return out


async def sas(app_state, body: dict[str, Any]) -> dict[str, Any]:
    bodies.check_known(body, SAS_FIELDS, "POST /v1/sas")
    limit = app_state.settings.max_inputs
    truths = _ground_truths(bodies.required(body, "ground_truth_answers", "POST /v1/sas"), limit)
    predictions = bodies.texts(
        bodies.required(body, "predicted_answers", "POST /v1/sas"),
        "predicted_answers",
        limit,
        allow_empty_list=True,
    )
    model = app_state.models.get(body.get("model"), None, "POST /v1/sas")
    result = await model_call(
        model.sas.run_async(ground_truth_answers=truths, predicted_answers=predictions), model.id
    )
    app_state.metrics.count_input(model.id, await model.input_tokens(model.row_inputs(predictions, truths)))
    return {
        "score": float(result["score"]),
        "individual_scores": [float(s) for s in result["individual_scores"]],
        "model": model.id,
    }


def _threshold(body: dict[str, Any]) -> float | str:
    value = body.get("threshold", 0.7)
    if isinstance(value, str) and value.strip().lower() == "calibrated":
        return "calibrated"
    return bodies.number(value, "'threshold' (a number, or \"calibrated\")")


async def reference_match(app_state, body: dict[str, Any]) -> dict[str, Any]:
    from simkernel.metrics import ReferenceMatchMetric

    bodies.check_known(body, REFERENCE_FIELDS, "POST /v1/reference-match")
    output = bodies.text(bodies.required(body, "output", "POST /v1/reference-match"), "output")
    references = bodies.texts(
        bodies.required(body, "references", "POST /v1/reference-match"),
        "references",
        app_state.settings.max_inputs - 1,
        allow_empty_list=True,
    )
    aggregation = body.get("aggregation", "max")
    if aggregation not in AGGREGATIONS:
        raise invalid(
            f'\'aggregation\' must be "max" or "mean", got {str(aggregation)[:60]!r}', "invalid_value"
        )
    threshold = _threshold(body)
    model = app_state.models.get(body.get("model"), "bi-encoder", "POST /v1/reference-match")
    try:
        metric = ReferenceMatchMetric(
            threshold=threshold,
            references=references,
            aggregation=aggregation,
            embedding_provider=model.provider,
        )
    except (ValueError, TypeError) as exc:
        raise invalid(str(exc)) from None
    result = await model_call(metric.evaluate(SimpleNamespace(actual_output=output)), model.id)
    if references:  # with none, the metric answers without the model
        app_state.metrics.count_input(model.id, await model.input_tokens([output, *references]))
    return {**result, "score": float(result["score"]), "threshold": metric.threshold, "model": model.id}
