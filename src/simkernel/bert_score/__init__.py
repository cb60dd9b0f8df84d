"""A drop-in for ``bert_score`` 0.3.13 without torch: change ``from bert_score import ...`` to
``from simkernel.bert_score import ...``.

``score``, ``BERTScorer`` and ``plot_example`` take bert_score's arguments with its defaults and give its
numbers (within 1e-5 in fp32 on the same checkpoint and layer) as float32 numpy arrays shaped as its torch
tensors, plus simkernel's ``precision`` ("fp32", "int8", "bf16") and ``threads``. The token vectors come
from the model exported to ONNX (:class:`simkernel.runtime.TokenEncoder`), the greedy matching from the
native kernel (:func:`simkernel.kernels.greedy_match`); the metric itself lives in
:mod:`simkernel.scoring.bertscore`. What differs from bert_score is listed in docs/drop-ins.md (the site's "The drop-ins" page).
"""

from __future__ import annotations

from simkernel.bert_score.score import plot_example, score
from simkernel.bert_score.scorer import BERTScorer, get_hash
from simkernel.scoring.bertscore.layers import lang2model, model2layers

__all__ = ["BERTScorer", "get_hash", "lang2model", "model2layers", "plot_example", "score"]
