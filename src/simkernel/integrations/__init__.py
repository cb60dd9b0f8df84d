"""simkernel as the embedding backend of the evaluation and RAG tools people already use.

One module per tool, each imported only when used (``import simkernel.integrations`` imports none of
the tools), each with its own extra; a missing tool raises
:class:`~simkernel.errors.MissingDependencyError` naming ``pip install 'simkernel[NAME]'``:

- :mod:`simkernel.integrations.langchain`: ``SimkernelEmbeddings``, a LangChain ``Embeddings``
  (extra ``langchain``);
- :mod:`simkernel.integrations.llama_index`: ``SimkernelEmbedding``, a LlamaIndex ``BaseEmbedding``
  (extra ``llamaindex``);
- :mod:`simkernel.integrations.haystack`: ``SimkernelTextEmbedder``, ``SimkernelDocumentEmbedder`` and
  ``SimkernelSimilarityRanker``, Haystack components (extra ``haystack``), re-exported from
  :mod:`simkernel.components.embedders` and :mod:`simkernel.components.rankers` where they live;
- :mod:`simkernel.integrations.ragas`: ``SimkernelRagasEmbedding``, a ragas 0.4 ``BaseRagasEmbedding``
  (extra ``ragas``);
- :mod:`simkernel.integrations.deepeval`: ``SimkernelDeepEvalEmbedding``, a deepeval
  ``DeepEvalBaseEmbeddingModel`` (extra ``deepeval``);
- :mod:`simkernel.integrations.mlflow`: ``SimkernelSimilarityScorer``, an ``mlflow.genai.evaluate`` scorer,
  and ``semantic_similarity_metric``, an ``mlflow.evaluate`` metric (extra ``mlflow``).

``TextEncoder.encode`` itself takes ``SentenceTransformer.encode``'s arguments, and ``similarity``, so
code written for sentence-transformers runs on it unchanged.

Every adapter takes ``model`` / ``precision`` / ``threads`` as :class:`simkernel.runtime.TextEncoder`
does and uses the process-wide shared encoder (:func:`simkernel.runtime.get_text_encoder`); a list of
texts is one encoder call (batched by token length, each distinct text embedded once), and the async
methods await :meth:`~simkernel.runtime.TextEncoder.aencode`, so they never block the event loop and share
forward passes with concurrent callers.
"""
