"""``AnswerExactMatchEvaluator``: Haystack's exact-match evaluator (haystack-ai 3.4.1), without haystack.

Same ``run(ground_truth_answers, predicted_answers)``, checks, messages and outputs as
``haystack.components.evaluators.AnswerExactMatchEvaluator``: each pair scores ``int(ground_truth ==
predicted)`` (case and whitespace sensitive, no normalisation); ``score`` is their mean as a Python float.
It is here so that a pipeline evaluating with simkernel needs no ``haystack`` import for its metrics; with
haystack installed it is a Haystack component like :class:`~simkernel.components.evaluators.SASEvaluator`.
"""

from __future__ import annotations

from typing import Any

from simkernel.components._haystack import haystack_component, output_types, registry_key, run_pre_init_hook
from simkernel.components.serialization import check_type
from simkernel.scoring.metrics.exact import exact_matches

HAYSTACK_TYPE = "haystack.components.evaluators.answer_exact_match.AnswerExactMatchEvaluator"


@haystack_component
class AnswerExactMatchEvaluator:
    """Proportion of predicted answers equal to their ground truth (Haystack-compatible).

    >>> AnswerExactMatchEvaluator().run(["Berlin", "Paris"], ["Berlin", "Lyon"])
    {'individual_scores': [1, 0], 'score': 0.5}
    """

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def to_dict(self) -> dict[str, Any]:
        """``{"type": <simkernel's class>, "init_parameters": {}}`` (the component has no parameters)."""
        return {"type": registry_key(type(self)), "init_parameters": {}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerExactMatchEvaluator:
        """Rebuild from :meth:`to_dict` output, simkernel's or Haystack's (``type`` of either class)."""
        check_type(data, cls, (registry_key(cls), HAYSTACK_TYPE))
        init_parameters = dict(data.get("init_parameters", {}))
        run_pre_init_hook(cls, init_parameters)
        return cls(**init_parameters)

    @output_types(individual_scores=list[int], score=float)
    def run(self, ground_truth_answers: list[str], predicted_answers: list[str]) -> dict[str, Any]:
        """Score each pair 1 if the strings are equal, else 0.

        :returns: ``{"individual_scores": [0 or 1, ...], "score": proportion of matches (float)}``.
        :raises ValueError: a list is empty (checked first), or their lengths differ (Haystack's messages).
        """
        if len(ground_truth_answers) == 0 or len(predicted_answers) == 0:
            raise ValueError("ground_truth_answers and predicted_answers must be provided.")

        if not len(ground_truth_answers) == len(predicted_answers):
            raise ValueError("The length of ground_truth_answers and predicted_answers must be the same.")

        matches = exact_matches(ground_truth_answers, predicted_answers)
        return {"individual_scores": matches, "score": sum(matches) / len(predicted_answers)}

    @output_types(individual_scores=list[int], score=float)
    async def run_async(
        self, ground_truth_answers: list[str], predicted_answers: list[str]
    ) -> dict[str, Any]:
        """:meth:`run` for ``AsyncPipeline`` and asyncio code (string comparisons only: nothing to wait
        for, so it runs on the event loop); the same outputs and errors."""
        return self.run(ground_truth_answers, predicted_answers)
