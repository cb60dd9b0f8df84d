"""Haystack embedders on simkernel's ONNX runtime: ``from simkernel.components.embedders import
SimkernelTextEmbedder``.

- :class:`SimkernelTextEmbedder` for sentence-transformers-haystack's ``SentenceTransformersTextEmbedder``
  (a query -> ``embedding``);
- :class:`SimkernelDocumentEmbedder` for ``SentenceTransformersDocumentEmbedder`` (documents ->
  ``documents`` with ``embedding`` set; ``meta_fields_to_embed``, ``prefix`` / ``suffix``).

``prefix``, ``suffix``, ``batch_size``, ``progress_bar``, ``normalize_embeddings``,
``meta_fields_to_embed`` and ``embedding_separator`` mean what they mean there; ``precision`` is
simkernel's (``"fp32"``, ``"int8"``, ``"bf16"``: the model's graph), and ``threads`` the model's CPU
threads. Each has ``warm_up``, ``to_dict`` / ``from_dict`` and ``run_async`` (awaits the encoder without
blocking the event loop; concurrent runs share forward passes). A saved pipeline holding them loads with
``Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)`` (:data:`simkernel.components.ALLOWED_MODULES`).
Importing this package imports haystack (``Document``): it needs ``pip install 'simkernel[haystack]'``.
"""

from simkernel.components.embedders.text_embedders import SimkernelDocumentEmbedder, SimkernelTextEmbedder

__all__ = ["SimkernelDocumentEmbedder", "SimkernelTextEmbedder"]
