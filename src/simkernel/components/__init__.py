"""Haystack components running on simkernel's ONNX runtime and cosine kernel, laid out as Haystack's own
``haystack.components``:

- :mod:`simkernel.components.evaluators`: :class:`~simkernel.components.evaluators.SASEvaluator` and
  :class:`~simkernel.components.evaluators.AnswerExactMatchEvaluator`, drop-in replacements for Haystack's
  (change the import, keep the code). Importing them never imports haystack.
- :mod:`simkernel.components.embedders`: ``SimkernelTextEmbedder`` and ``SimkernelDocumentEmbedder``, for
  sentence-transformers-haystack's embedders; :mod:`simkernel.components.rankers`:
  ``SimkernelSimilarityRanker``, for its cross-encoder ranker. These need haystack (``Document``) and are not
  imported by ``import simkernel.components``. Their former path, :mod:`simkernel.integrations.haystack`,
  re-exports them.
- All are made Haystack components one way (:mod:`simkernel.components._haystack`): with haystack-ai
  installed ``Pipeline.add_component`` accepts them next to Haystack's own, ``AsyncPipeline`` runs their
  ``run_async``, and ``Pipeline.dumps()`` / ``loads()`` round-trips them. Haystack only deserialises
  classes from allowlisted modules, so load with ``Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)``
  (one list for all of them: :mod:`simkernel.components.serialization`).
- A pipeline saved with Haystack's own evaluators loads with simkernel's after
  :func:`use_simkernel_evaluators` (rewrites their ``type`` strings, in nested pipelines too, e.g. a
  ``SuperComponent``'s); both classes' ``from_dict`` also accept
  Haystack's type strings.
- :class:`Secret`: Haystack's ``Secret`` API (``from_env_var`` / ``from_token``) without haystack; Haystack's
  own ``Secret`` objects are accepted as well.
"""

from simkernel.components.evaluators import AnswerExactMatchEvaluator, SASEvaluator
from simkernel.components.secret import Secret
from simkernel.components.serialization import ALLOWED_MODULES, use_simkernel_evaluators

__all__ = [
    "ALLOWED_MODULES",
    "AnswerExactMatchEvaluator",
    "SASEvaluator",
    "Secret",
    "use_simkernel_evaluators",
]
