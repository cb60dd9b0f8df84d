"""``EvalTestCase``: the test-case schema of eval_lib (eval-ai-library 0.8.2), field for field.

It is a pydantic v2 model, as in eval_lib, so the errors users already catch stay the same: a missing
``input`` or ``actual_output`` (or a value of the wrong type) raises ``pydantic.ValidationError`` with
pydantic's own messages, and ``model_dump()``, ``model_copy()``, ``model_validate()`` work as before.
pydantic is a run-time dependency of simkernel for this reason; it is imported only when this module is
(``import simkernel`` does not import it, and the metrics and ``evaluate`` never import it: they read the
attributes of whatever test-case object they are given, so eval_lib's own ``EvalTestCase`` works too).

Note: eval_lib's documentation shows ``EvalTestCase(actual_output=...)`` without ``input``; the real class
(and this one) rejects that, since ``input`` is required.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ConversationalEvalTestCase", "EvalTestCase", "ResourceUsage", "ToolCall", "TraceStep"]


class ToolCall(BaseModel):
    """A tool call made by an agent."""

    name: str
    description: str | None = None
    reasoning: str | None = None


class TraceStep(BaseModel):
    """One step of an agent's execution trace (``type``: "tool_call", "llm_call", "reasoning", ...)."""

    step_id: str | None = None
    type: str
    name: str | None = None
    input: Any | None = None
    output: Any | None = None
    duration_ms: float | None = None
    timestamp: float | None = None
    status: str | None = None
    error: str | None = None
    error_type: str | None = None
    parent_step_id: str | None = None
    metadata: dict[str, Any] | None = None


class ResourceUsage(BaseModel):
    """Resources an agent run consumed (tokens, milliseconds, US dollars)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    duration_ms: float | None = None
    cost: float | None = None
    model: str | None = None


class EvalTestCase(BaseModel):
    """One test case: the question (``input``), the answer to score (``actual_output``) and context.

    ``input`` and ``actual_output`` are required strings; everything else is optional. The vector
    metrics read ``actual_output`` (and ``expected_output`` for ``SemanticSimilarityMetric``).
    """

    input: str
    actual_output: str
    expected_output: str | None = None
    retrieval_context: list[str] | None = None
    tools_called: list[str] | None = None
    expected_tools: list[str] | None = None
    reasoning: str | None = None
    name: str | None = None

    # reliability evaluation fields
    execution_trace: list[TraceStep] | None = None
    agent_confidence: float | None = None
    perturbation_group: str | None = None
    planning_steps: list[str] | None = None
    resource_usage: ResourceUsage | None = None

    # free-form fields for metrics that substitute ``{{field_name}}`` placeholders
    extra_fields: dict[str, Any] | None = None


class ConversationalEvalTestCase(BaseModel):
    """A dialogue: one ``EvalTestCase`` per turn."""

    turns: list[EvalTestCase]
    chatbot_role: str | None = None
    name: str | None = Field(default=None)
