"""``SASEvaluator``: Haystack's Semantic Answer Similarity evaluator on simkernel's ONNX runtime.

A drop-in replacement for ``haystack.components.evaluators.SASEvaluator`` (haystack-ai 3.4.1): same
constructor parameters and defaults, same ``warm_up()``, same ``run()`` checks, messages, outputs and
numbers (within 1e-5 of Haystack's on the same checkpoint), same serialised parameters. No torch and no
sentence-transformers at run time; the model is an ONNX bundle of the model store (``simkernel models
prepare`` / ``simkernel models export``).

How a score is computed (as Haystack does, on the same model; the formulas are the scoring core's
:mod:`simkernel.scoring.metrics.sas`, which this class calls after checking Haystack's contract):

- bi-encoder (the model's ``config.json`` ``architectures`` has no entry ending in
  ``ForSequenceClassification``): ``individual_scores[i]`` = cosine of the embeddings of
  ``predicted_answers[i]`` and ``ground_truth_answers[i]``, in float32, not clamped (identical texts can
  give 1.0000001, unrelated ones negative values). All predicted and ground-truth texts are embedded in
  ONE pass of the shared :class:`~simkernel.runtime.TextEncoder`, which embeds each distinct text once, in
  batches sorted by token length; the cosines come from :func:`simkernel.kernels.paired_cosine`.
- cross-encoder: the pairs are ``(predicted, ground_truth)``, scored by the
  :class:`~simkernel.runtime.CrossEncoder` (which applies the model's activation as sentence-transformers
  does, a sigmoid for one label by default); then, exactly as Haystack, the logistic function is applied to
  the WHOLE array when ANY score is > 1 (all or nothing). A model with several labels gives a list of
  lists. Identical pairs are scored once.
- ``score`` is the mean of ``individual_scores`` (``numpy.float64``); ``individual_scores`` are Python
  floats holding float32 values. Empty inputs give ``{"score": 0.0, "individual_scores": [0.0]}``.

Extensions (none changes the compatible behaviour):

- ``precision="int8"``: the bundle's int8 graph (faster, slightly different scores: see the accuracy section
  of docs/benchmarks.md); ``precision="bf16"``: the fp32 graph on OpenVINO in bf16, on CPUs with native
  bf16 only (elsewhere the constructor raises ``PrecisionUnavailableError`` naming what the CPU lacks);
  ``threads=N``: onnxruntime intra-op threads (default: onnxruntime's choice).
- ``device`` also takes plain strings: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` (see
  :mod:`simkernel.components.device`). ``device=None`` means the CPU (Haystack would pick a GPU through
  torch when one is visible).
- ``run`` accepts several correct answers per question: ``ground_truth_answers`` may hold lists of strings
  (``[["Berlin", "Berlin, Germany"], "Paris"]``); that pair's score is the MAX over its ground truths
  (for a cross-encoder, the all-or-nothing logistic rule is applied over all scored pairs first).
- ``run_async``: the same outputs for ``AsyncPipeline`` and asyncio code, without blocking the event loop;
  concurrent calls (threads or tasks) share the model's forward passes
  (:mod:`simkernel.runtime.inference.batcher`).

Differences in bad input: everything Haystack rejects is rejected with Haystack's message; what Haystack
lets crash deep inside (``None`` or non-string ground truths, non-string predictions, a string instead of
a list) raises a ``ValueError`` naming the index; ``token`` must be a ``Secret`` (a plain string would be
written to saved pipelines in clear text) and ``device`` is checked when the component is built.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from simkernel.components._haystack import haystack_component, output_types, registry_key, run_pre_init_hook
from simkernel.components.device import component_device, device_string, device_to_dict, onnx_providers
from simkernel.components.secret import Secret, SecretLike, secret_from_dict
from simkernel.components.serialization import check_type
from simkernel.runtime.inference.inputs import check_unicode
from simkernel.runtime.inference.lazy_model import LazyModelState
from simkernel.scoring.metrics import sas
from simkernel.scoring.settings import PRECISIONS, check_model, check_threads

HAYSTACK_TYPE = "haystack.components.evaluators.sas_evaluator.SASEvaluator"
HAYSTACK_DEFAULT_MODEL = "sentence-transformers/paraphrase-multilingual-mpnet-base-v2"


@haystack_component
class SASEvaluator(LazyModelState):
    """Semantic Answer Similarity between predicted and ground-truth answers (Haystack-compatible).

    Usage (the same as Haystack's; only the import changes)::

        from simkernel.components.evaluators import SASEvaluator

        evaluator = SASEvaluator(model="sentence-transformers/all-MiniLM-L6-v2")
        evaluator.warm_up()
        result = evaluator.run(ground_truth_answers=["Berlin", "Paris"], predicted_answers=["Berlin", "Lyon"])
        result["individual_scores"]   # [1.0, 0.49678...]  (Haystack: [1.0000001192092896, 0.49678...])
        result["score"]               # numpy.float64 mean

    ``copy.deepcopy`` and ``pickle`` work, warmed up or not (a copy loads the model at its first use:
    :class:`~simkernel.runtime.inference.lazy_model.LazyModelState`).
    """

    _LOADED_MODEL_ATTRIBUTES = ("_similarity_model",)

    def __init__(
        self,
        model: str = HAYSTACK_DEFAULT_MODEL,
        batch_size: int = 32,
        device: Any = None,
        token: SecretLike | None = Secret.from_env_var(["HF_API_TOKEN", "HF_TOKEN"], strict=False),  # noqa: B008
        *,
        precision: str = "fp32",
        threads: int | None = None,
        cache_dir: str | os.PathLike | None = None,
    ) -> None:
        """Store the settings; nothing is loaded until :meth:`warm_up` (or the first :meth:`run`).

        :param model: model id in the store (``"sentence-transformers/all-MiniLM-L6-v2"``) or path of an
            exported bundle / checkpoint directory; a bi-encoder or a cross-encoder (module docstring).
        :param batch_size: texts (bi-encoder) or pairs (cross-encoder) per forward pass; checked in
            :meth:`run`, as Haystack does.
        :param device: ``None`` (CPU), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a Haystack ``ComponentDevice``.
        :param token: Hugging Face token as a ``Secret`` (simkernel's or Haystack's); kept and serialised as
            Haystack does, resolved in :meth:`warm_up` and sent to the hub when the model has to be
            downloaded (neither a local folder nor in the store): private and gated repos work.
        :param precision: ``"fp32"`` (default; Haystack's numbers), ``"int8"`` (the bundle's int8 graph) or
            ``"bf16"`` (CPUs with native bf16, ``openvino`` extra).
        :param threads: CPU threads of the model (as :class:`simkernel.TextEncoder` uses them); ``None``:
            one per CPU.
        :param cache_dir: folder of the persistent embedding cache shared across runs (bi-encoders;
            default ``$SIMKERNEL_CACHE_DIR`` if set, else off; see :class:`simkernel.TextEncoder`).
        """
        model = check_model(model)
        if token is not None and not isinstance(token, SecretLike):
            raise TypeError(
                f"token must be a Secret, got {type(token).__name__}: use Secret.from_env_var('HF_TOKEN') or Secret.from_token('...') (from simkernel.components or haystack.utils)"
            )
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        if precision == "bf16":  # refused now, not at warm_up, where the CPU has no native bf16
            from simkernel.runtime.inference.bundle import check_precision

            check_precision(precision)
        check_threads(threads)
        self._device = device  # validated (ValueError naming the value); read back as a ComponentDevice
        self._model = model
        self._batch_size = batch_size
        self._token = token
        self._precision = precision
        self._threads = threads
        self._cache_dir = None if cache_dir is None else os.fspath(cache_dir)
        self._similarity_model: Any = None
        self._is_cross_encoder = False
        self._lock = threading.Lock()

    @property
    def _device(self) -> Any:
        """``None`` or a ``ComponentDevice``: Haystack's when Haystack is imported, else simkernel's (same
        methods: ``to_torch_str()``, ``to_dict()``, ``to_hf()``, ...); :mod:`simkernel.components.device`."""
        return component_device(self._device_setting)

    @_device.setter
    def _device(self, device: Any) -> None:
        device_string(device)  # validates; raises ValueError naming the value
        self._device_setting = device

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self._model!r}, batch_size={self._batch_size!r}, "
            f"device={device_string(self._device_setting)!r}, precision={self._precision!r}, "
            f"threads={self._threads!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        """Haystack's serialised form; ``type`` names simkernel's class (see ``components.serialization``).

        ``precision`` and ``threads`` are written only when they differ from the defaults, so a compatible
        evaluator serialises to exactly Haystack's parameters. A ``Secret.from_token`` token raises
        ``ValueError`` (it cannot be serialised), as in Haystack.
        """
        init_parameters: dict[str, Any] = {
            "model": self._model,
            "batch_size": self._batch_size,
            "device": device_to_dict(self._device_setting),
            "token": self._token.to_dict() if self._token is not None else None,
        }
        if self._precision != "fp32":
            init_parameters["precision"] = self._precision
        if self._threads is not None:
            init_parameters["threads"] = self._threads
        if self._cache_dir is not None:
            init_parameters["cache_dir"] = self._cache_dir
        return {"type": registry_key(type(self)), "init_parameters": init_parameters}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SASEvaluator:
        """Rebuild from :meth:`to_dict` output, simkernel's or Haystack's (``type`` of either class)."""
        check_type(data, cls, (registry_key(cls), HAYSTACK_TYPE))
        init_parameters = dict(data.get("init_parameters", {}))
        token = init_parameters.get("token")
        if isinstance(token, dict) and token.get("type") == "env_var":
            init_parameters["token"] = secret_from_dict(token)
        device = init_parameters.get("device")
        if isinstance(device, dict):  # as Haystack: a ComponentDevice (Haystack's when it is imported)
            init_parameters["device"] = component_device(device)
        run_pre_init_hook(cls, init_parameters)
        return cls(**init_parameters)

    def warm_up(self) -> None:
        """Load the model once (a second call does nothing): a cross-encoder if any entry of the model's
        ``architectures`` ends with ``ForSequenceClassification``, else a bi-encoder (Haystack's rule)."""
        if self._similarity_model is not None:
            return
        with self._lock:
            if self._similarity_model is not None:
                return
            from simkernel.scoring.metrics.sas import load_similarity_model

            providers = onnx_providers(self._device_setting)  # raises first when the device is unusable
            token = (self._token.resolve_value() if self._token is not None else None) or None
            model, is_cross_encoder = load_similarity_model(
                self._model, self._precision, self._threads, self._cache_dir, token, providers
            )
            self._is_cross_encoder = is_cross_encoder  # before the model: run() checks the model only
            self._similarity_model = model

    @output_types(score=float, individual_scores=list[float])
    def run(
        self, ground_truth_answers: list[str] | list[list[str]], predicted_answers: list[str]
    ) -> dict[str, Any]:
        """Score each predicted answer against its ground truth(s).

        :param ground_truth_answers: one expected answer per question, or (extension) a list of correct
            answers per question, scored by the best of them.
        :param predicted_answers: one generated answer per question.
        :returns: ``{"score": mean (numpy.float64), "individual_scores": [float, ...]}``.
        :raises ValueError: lengths differ; a prediction is ``None`` (Haystack's messages); a ground truth or
            prediction is not a string, an empty list of ground truths; ``batch_size`` is not a positive int.
        """
        checked = self._checked_inputs(ground_truth_answers, predicted_answers)
        if checked is None:
            return {"score": 0.0, "individual_scores": [0.0]}
        predictions, groups, several, batch_size = checked
        if self._similarity_model is None:
            self.warm_up()
        if self._is_cross_encoder:
            pairs = sas.cross_pairs(predictions, groups)
            scores = self._similarity_model.predict(pairs, batch_size=batch_size)
            individual = sas.cross_encoder_scores(scores, groups, several, self._model)
        else:
            texts = sas.bi_encoder_texts(predictions, groups)
            embeddings = self._similarity_model.encode(
                texts, batch_size=batch_size, normalize=sas.NORMALIZE_EMBEDDINGS
            )
            individual = sas.bi_encoder_scores(embeddings, groups, several)
        return {"score": sas.mean_score(individual), "individual_scores": individual}

    @output_types(score=float, individual_scores=list[float])
    async def run_async(
        self, ground_truth_answers: list[str] | list[list[str]], predicted_answers: list[str]
    ) -> dict[str, Any]:
        """:meth:`run` for ``AsyncPipeline`` and asyncio code: the same outputs, bit for bit, without
        blocking the event loop. The texts join the shared model's queue (``TextEncoder.aencode`` /
        ``CrossEncoder.apredict``), so concurrent tasks share forward passes; the model is loaded (the
        first call) in a worker thread."""
        checked = self._checked_inputs(ground_truth_answers, predicted_answers)
        if checked is None:
            return {"score": 0.0, "individual_scores": [0.0]}
        predictions, groups, several, batch_size = checked
        if self._similarity_model is None:
            from simkernel.runtime.inference.threads import run_blocking

            await run_blocking(self.warm_up)
        if self._is_cross_encoder:
            pairs = sas.cross_pairs(predictions, groups)
            scores = await self._similarity_model.apredict(pairs, batch_size=batch_size)
            individual = sas.cross_encoder_scores(scores, groups, several, self._model)
        else:
            texts = sas.bi_encoder_texts(predictions, groups)
            embeddings = await self._similarity_model.aencode(
                texts, batch_size=batch_size, normalize=sas.NORMALIZE_EMBEDDINGS
            )
            individual = sas.bi_encoder_scores(embeddings, groups, several)
        return {"score": sas.mean_score(individual), "individual_scores": individual}

    def _checked_inputs(
        self, ground_truth_answers: Any, predicted_answers: Any
    ) -> tuple[list[str], list[list[str]], bool, int] | None:
        """(predictions, ground-truth groups, whether any question has several, batch size), checked as
        Haystack checks them; None for empty inputs."""
        if len(ground_truth_answers) != len(predicted_answers):
            raise ValueError("The number of predictions and labels must be the same.")

        if any(answer is None for answer in predicted_answers):
            raise ValueError("Predicted answers must not contain None values.")

        if len(predicted_answers) == 0:
            return None

        predictions = _checked_predictions(predicted_answers)
        groups, several = _ground_truth_groups(ground_truth_answers)
        batch_size = self._batch_size
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}.")
        return predictions, groups, several, int(batch_size)


def _checked_predictions(predicted_answers: Sequence[Any]) -> list[str]:
    if isinstance(predicted_answers, (str, bytes)):
        raise ValueError("predicted_answers must be a list of strings, got a single string")
    out = list(predicted_answers)
    for i, answer in enumerate(out):
        if not isinstance(answer, str):
            raise ValueError(
                f"predicted_answers[{i}] is {type(answer).__name__} ({answer!r}); every predicted answer must be a string"
            )
        check_unicode(answer, f"predicted_answers[{i}]")
    return out


def _ground_truth_groups(ground_truth_answers: Sequence[Any]) -> tuple[list[list[str]], bool]:
    """(one list of strings per question, whether any question has a list of ground truths)."""
    if isinstance(ground_truth_answers, (str, bytes)):
        raise ValueError("ground_truth_answers must be a list of strings, got a single string")
    answers = list(ground_truth_answers)
    if all(isinstance(answer, str) for answer in answers):
        for i, answer in enumerate(answers):
            check_unicode(answer, f"ground_truth_answers[{i}]")
        return [[answer] for answer in answers], False
    groups = []
    for i, answer in enumerate(answers):
        if isinstance(answer, str):
            check_unicode(answer, f"ground_truth_answers[{i}]")
            groups.append([answer])
            continue
        if answer is None or not isinstance(answer, (list, tuple)):
            raise ValueError(
                f"ground_truth_answers[{i}] is {type(answer).__name__} ({answer!r}); every ground truth must be a string, or a non-empty list of strings when a question has several correct answers"
            )
        if len(answer) == 0:
            raise ValueError(
                f"ground_truth_answers[{i}] is an empty list; give at least one correct answer per question"
            )
        for j, text in enumerate(answer):
            if not isinstance(text, str):
                raise ValueError(
                    f"ground_truth_answers[{i}][{j}] is {type(text).__name__} ({text!r}); every ground truth must be a string"
                )
            check_unicode(text, f"ground_truth_answers[{i}][{j}]")
        groups.append(list(answer))
    return groups, True
