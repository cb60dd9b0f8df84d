"""``BundleCrossEncoder``: scores of (text_a, text_b) pairs by a cross-encoder bundle on onnxruntime,
matching sentence-transformers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from simkernel.errors import ModelError
from simkernel.runtime.inference.batcher import make_batcher
from simkernel.runtime.inference.bundle import check_precision, open_bundle
from simkernel.runtime.inference.config import ModelConfig, read_model_config
from simkernel.runtime.inference.inputs import check_batch_size, check_pairs, check_texts
from simkernel.runtime.inference.session import LOGITS_OUTPUTS
from simkernel.runtime.inference.tokenizer import length_sorted_batches


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # stable in float32 for large |x|: exp of a non-positive number only
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(np.float32)


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=1, keepdims=True))
    return (z / z.sum(axis=1, keepdims=True)).astype(np.float32)


# name -> function on logits (n, labels), float32
ACTIVATIONS = {
    "sigmoid": _sigmoid,
    "identity": lambda x: x,
    "tanh": lambda x: np.tanh(x).astype(np.float32),
    "softmax": _softmax,
}


class BundleCrossEncoder:
    """Score text pairs with a cross-encoder (``...ForSequenceClassification``) exported to ONNX, loaded
    from a bundle folder.

    The core of :class:`simkernel.runtime.CrossEncoder`, which resolves a model name to its bundle folder
    first (this class never resolves names, downloads or exports); ``name`` is what the caller called the
    model (kept in :attr:`model` and named in errors; default the folder).

    The activation on the logits is the one sentence-transformers' ``CrossEncoder`` picks
    (:attr:`activation`): the ``activation_fn`` in the model's ``config.json`` if it names a torch
    activation, else sigmoid for a 1-label model (scores in (0, 1)) and identity for several labels.
    Pairs are tokenized as one sequence (``[CLS] a [SEP] b [SEP]``), truncated longest-first at
    ``max_seq_length``. Thread-safe.

    ``threads``: CPU threads, used as :class:`BundleTextEncoder` uses them (intra-op for one batch, one
    worker per thread for several). ``precision``: ``"fp32"``, ``"int8"`` or ``"bf16"``, as for
    :class:`BundleTextEncoder`. ``batching``, ``max_batch_tokens``, ``max_queue``: concurrent calls share
    forward passes, as :class:`BundleTextEncoder`'s do (a pair's score is the same bits either way).
    """

    def __init__(
        self,
        folder: str | Path,
        precision: str = "fp32",
        threads: int | None = None,
        providers: list[str] | None = None,
        *,
        name: str | Path | None = None,
        batching: bool | None = None,
        max_batch_tokens: int | None = None,
        max_queue: int | None = None,
    ) -> None:
        check_precision(precision)
        folder = Path(folder)
        model = str(folder) if name is None else name
        self._batcher = make_batcher(
            self._run_pass,
            lambda keys: self._encode_keys(keys),
            batching,
            max_batch_tokens,
            max_queue,
            model,
        )
        config = read_model_config(folder)
        if config.kind != "cross-encoder":
            raise ModelError(
                f"{model!r} is a bi-encoder (architectures {list(config.architectures)}): it embeds texts, it does not score pairs; use simkernel.TextEncoder and cosine similarity"
            )
        self._session, self._tokenizer = open_bundle(
            folder, config, precision, LOGITS_OUTPUTS, threads=threads, providers=providers
        )
        self.model = str(model)
        self.model_path = folder
        self.precision = precision
        self.threads = threads
        self.config: ModelConfig = config
        self.num_labels: int = int(config.num_labels or 1)
        self.activation: str = config.activation or "sigmoid"

    @property
    def max_seq_length(self) -> int:
        return self._tokenizer.max_length

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, precision={self.precision!r}, "
            f"num_labels={self.num_labels}, "
            f"activation={self.activation!r}, path={str(self.model_path)!r})"
        )

    def predict(
        self, pairs: Iterable[tuple[str, str]], batch_size: int = 32, apply_activation: bool = True
    ) -> np.ndarray:
        """Scores float32: shape (n,) for a 1-label model, (n, num_labels) otherwise.

        Identical pairs are scored once; batches are sorted by token length and the order restored.
        ``apply_activation=False`` returns the raw logits.
        """
        unique, inverse = self._distinct(pairs, batch_size)
        logits = np.empty((0, self.num_labels), dtype=np.float32)
        if unique:
            if self._batcher is None:
                logits = self._run_pass(self._tokenizer.encode_pairs(unique), batch_size)
            else:
                logits = self._batcher.run(unique, batch_size)
        return self._scores(logits, inverse, apply_activation)

    async def apredict(
        self, pairs: Iterable[tuple[str, str]], batch_size: int = 32, apply_activation: bool = True
    ) -> np.ndarray:
        """:meth:`predict` for asyncio code: the same scores, bit for bit, awaited without blocking the
        event loop (sharing passes with concurrent callers when batching is on)."""
        from simkernel.runtime.inference.batcher import run_async
        from simkernel.runtime.inference.threads import run_blocking

        if self._batcher is None:
            return await run_blocking(self.predict, pairs, batch_size, apply_activation)
        unique, inverse = self._distinct(pairs, batch_size)
        logits = np.empty((0, self.num_labels), dtype=np.float32)
        if unique:
            logits = await run_async(self._batcher, unique, batch_size)
        return self._scores(logits, inverse, apply_activation)

    def predict_texts(
        self, texts: Iterable[str], batch_size: int = 32, apply_activation: bool = True
    ) -> np.ndarray:
        """Scores of single texts, each read alone as one sequence (``[CLS] text [SEP]``), as
        transformers' text-classification pipeline and text-embeddings-inference's ``/predict`` read a
        string: float32, (n,) for a 1-label model, (n, num_labels) otherwise. The same passes, batcher and
        activation as :meth:`predict`; a text's score does not depend on the other texts of the call."""
        unique, inverse = self._distinct_texts(texts, batch_size)
        logits = np.empty((0, self.num_labels), dtype=np.float32)
        if unique:
            if self._batcher is None:
                logits = self._run_pass(self._tokenizer.encode(unique), batch_size)
            else:
                logits = self._batcher.run(unique, batch_size)
        return self._scores(logits, inverse, apply_activation)

    async def apredict_texts(
        self, texts: Iterable[str], batch_size: int = 32, apply_activation: bool = True
    ) -> np.ndarray:
        """:meth:`predict_texts` for asyncio code (sharing passes with concurrent callers, as
        :meth:`apredict`)."""
        from simkernel.runtime.inference.batcher import run_async
        from simkernel.runtime.inference.threads import run_blocking

        if self._batcher is None:
            return await run_blocking(self.predict_texts, texts, batch_size, apply_activation)
        unique, inverse = self._distinct_texts(texts, batch_size)
        logits = np.empty((0, self.num_labels), dtype=np.float32)
        if unique:
            logits = await run_async(self._batcher, unique, batch_size)
        return self._scores(logits, inverse, apply_activation)

    def _encode_keys(self, keys: Sequence) -> list:
        """Tokenizations of the batcher's inputs: a (a, b) pair as one sequence of two segments, a str
        (from :meth:`predict_texts`) as a sequence of its own; the order kept."""
        singles = [i for i, key in enumerate(keys) if isinstance(key, str)]
        if not singles:
            return self._tokenizer.encode_pairs(keys)
        pairs = [i for i, key in enumerate(keys) if not isinstance(key, str)]
        out: list = [None] * len(keys)
        for i, encoding in zip(singles, self._tokenizer.encode([keys[i] for i in singles]), strict=True):
            out[i] = encoding
        if pairs:
            encoded = self._tokenizer.encode_pairs([keys[i] for i in pairs])
            for i, encoding in zip(pairs, encoded, strict=True):
                out[i] = encoding
        return out

    @staticmethod
    def _distinct_texts(texts: Iterable[str], batch_size: int) -> tuple[list, np.ndarray]:
        items = check_texts(texts)
        check_batch_size(batch_size)
        slots: dict[str, int] = {}
        inverse = np.fromiter(
            (slots.setdefault(t, len(slots)) for t in items), dtype=np.int64, count=len(items)
        )
        return list(slots), inverse

    @staticmethod
    def _distinct(pairs: Iterable[tuple[str, str]], batch_size: int) -> tuple[list, np.ndarray]:
        """(the distinct pairs, each input's index among them); bad input raises here."""
        items = check_pairs(pairs)
        check_batch_size(batch_size)
        slots: dict[tuple[str, str], int] = {}
        inverse = np.fromiter(
            (slots.setdefault(p, len(slots)) for p in items), dtype=np.int64, count=len(items)
        )
        return list(slots), inverse

    def _scores(self, logits: np.ndarray, inverse: np.ndarray, apply_activation: bool) -> np.ndarray:
        scores = ACTIVATIONS[self.activation](logits) if apply_activation else logits
        scores = scores[inverse]
        return scores[:, 0].copy() if self.num_labels == 1 else scores

    def _run_pass(self, encodings: Sequence, batch_size: int) -> np.ndarray:
        """One forward pass over tokenized distinct pairs in length-sorted batches of one token length;
        float32 logits (n, num_labels) in the order given."""
        batches = length_sorted_batches(encodings, batch_size)

        def score_batch(run, rows: np.ndarray) -> np.ndarray:
            batch = self._tokenizer.pad_batch([encodings[i] for i in rows])
            out = run(batch.input_ids, batch.attention_mask, batch.token_type_ids)
            if out.ndim != 2 or out.shape[1] != self.num_labels:
                raise ModelError(
                    f"{self._session.path} returned logits of shape {out.shape}, expected (batch, {self.num_labels}); re-export the model with `simkernel models export SRC DST`"
                )
            return out

        logits = np.empty((len(encodings), self.num_labels), dtype=np.float32)
        for rows, out in zip(batches, self._session.map_batches(score_batch, batches), strict=True):
            logits[rows] = out
        return logits
