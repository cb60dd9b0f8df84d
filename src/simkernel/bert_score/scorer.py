"""``BERTScorer``: bert_score 0.3.13's scorer object, on simkernel's ONNX token encoder and native kernel."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from simkernel.scoring.bertscore.baselines import baseline_file, layer_baseline, rescale
from simkernel.scoring.bertscore.idf import (
    MappedWeights,
    TokenWeights,
    Weights,
    document_frequency_idf,
    ids_and_offsets,
)
from simkernel.scoring.bertscore.matching import PairScores, best_over_groups, score_pairs
from simkernel.scoring.bertscore.model import (
    BERTScoreArgumentError,
    check_device,
    check_num_layers,
    resolve_model,
)
from simkernel.scoring.settings import DEFAULT_PRECISION, check_precision_name, check_threads

__all__ = [
    "BERT_SCORE_VERSION",
    "BERTScorer",
    "flatten_references",
    "get_hash",
    "idf_weights_from",
    "load_encoder",
    "raw_scores",
]

BERT_SCORE_VERSION = "0.3.13"  # the bert_score release whose API and numbers this package reproduces


def get_hash(
    model: str,
    num_layers: int,
    idf: Any,
    rescale_with_baseline: bool,
    use_custom_baseline: bool,
    use_fast_tokenizer: bool,
    precision: str = DEFAULT_PRECISION,
) -> str:
    """bert_score's hash of a setting (``{model}_L{layer}_idf|_no-idf_version=...``) with simkernel's version
    in place of transformers', and ``_int8`` / ``_bf16`` when the precision is not fp32 (its numbers differ)."""
    from simkernel._version import __version__

    msg = "{}_L{}{}_version={}(simkernel={})".format(
        model, num_layers, "_idf" if idf else "_no-idf", BERT_SCORE_VERSION, __version__
    )
    if rescale_with_baseline:
        msg += "-custom-rescaled" if use_custom_baseline else "-rescaled"
    if use_fast_tokenizer:
        msg += "_fast-tokenizer"
    if precision != DEFAULT_PRECISION:
        msg += f"_{precision}"
    return msg


def flatten_references(
    cands: Sequence[str], refs: Sequence[Any]
) -> tuple[list[str], list[str], list[int] | None]:
    """bert_score's handling of ``refs``: a list of strings (one per candidate) or of lists of strings
    (several per candidate, each candidate repeated once per reference); the group sizes in the second case."""
    if len(cands) != len(refs):
        raise BERTScoreArgumentError(
            f"Different number of candidates and references: {len(cands)} candidates, {len(refs)} references"
        )
    for name, texts in (("cands", cands), ("refs", refs)):
        if isinstance(texts, str):
            raise BERTScoreArgumentError(f"{name} must be a list of texts, not one string")
    if not refs or isinstance(refs[0], str):
        _check_texts("cands", cands)
        _check_texts("refs", refs)
        return list(cands), list(refs), None
    flat_cands: list[str] = []
    flat_refs: list[str] = []
    sizes: list[int] = []
    for position, (cand, group) in enumerate(zip(cands, refs, strict=True)):
        if isinstance(group, str) or not isinstance(group, Sequence) or len(group) == 0:
            raise BERTScoreArgumentError(
                f"refs[{position}] must be a non-empty list of reference texts when refs[0] is a list, got {group!r}"
            )
        flat_cands += [cand] * len(group)
        flat_refs += list(group)
        sizes.append(len(group))
    _check_texts("cands", flat_cands)
    _check_texts("refs", flat_refs)
    return flat_cands, flat_refs, sizes


def _check_texts(name: str, texts: Sequence[Any]) -> None:
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise BERTScoreArgumentError(
                f"{name}[{position}] must be a string, got {type(text).__name__} {text!r}: convert it with str() or drop the row"
            )


def warn_about(result: PairScores, stacklevel: int = 3) -> None:
    """One warning for the pairs with an empty text (scored 0) and one for the truncated texts."""
    if result.empty_candidates or result.empty_references:
        warnings.warn(
            f"BERTScore: {result.empty_candidates} pair(s) with an empty candidate and {result.empty_references} with an empty reference; setting their raw BERTScores to 0 (as bert_score does)",
            UserWarning,
            stacklevel=stacklevel,
        )
    if result.truncated_texts:
        warnings.warn(
            f"BERTScore: {result.truncated_texts} text(s) longer than the model's limit were truncated to it (as bert_score truncates them): their scores cover the beginning only",
            UserWarning,
            stacklevel=stacklevel,
        )


class BERTScorer:
    """bert_score's ``BERTScorer`` (same arguments, defaults, properties and methods), plus ``precision``
    ("fp32", "int8", "bf16") and ``threads`` (onnxruntime and kernel threads; None: one per CPU).

    The model loads when the scorer is built (as bert_score's does); ``device`` must be None or a CPU.
    ``nthreads`` is accepted and unused: idf needs no worker processes here.
    """

    def __init__(
        self,
        model_type: str | None = None,
        num_layers: int | None = None,
        batch_size: int = 64,
        nthreads: int = 4,
        all_layers: bool = False,
        idf: bool = False,
        idf_sents: Sequence[str] | None = None,
        device: Any = None,
        lang: str | None = None,
        rescale_with_baseline: bool = False,
        baseline_path: str | os.PathLike[str] | None = None,
        use_fast_tokenizer: bool = False,
        *,
        precision: str = DEFAULT_PRECISION,
        threads: int | None = None,
    ) -> None:
        model, layer = resolve_model(model_type, num_layers, lang, rescale_with_baseline)
        check_device(device)
        self._precision = check_precision_name(precision)
        self._threads = check_threads(threads)
        self.device = "cpu"
        self._lang = lang
        self._rescale_with_baseline = rescale_with_baseline
        self._idf = idf
        self.batch_size = batch_size
        self.nthreads = nthreads
        self.all_layers = all_layers
        self._model_type = model
        self._num_layers = layer
        self._use_fast_tokenizer = use_fast_tokenizer
        self._encoder = load_encoder(model, precision, threads)
        check_num_layers(layer, self._encoder.num_layers, model)
        self._idf_dict: TokenWeights | None = None
        if idf_sents is not None:
            self.compute_idf(idf_sents)
        self._baseline_vals: np.ndarray | None = None
        self.use_custom_baseline = baseline_path is not None
        self.baseline_path = baseline_file(baseline_path, lang, model)

    @property
    def lang(self) -> str | None:
        return self._lang

    @property
    def idf(self) -> bool:
        return self._idf

    @property
    def model_type(self) -> str:
        return self._model_type

    @property
    def num_layers(self) -> int:
        return self._num_layers

    @property
    def rescale_with_baseline(self) -> bool:
        return self._rescale_with_baseline

    @property
    def use_fast_tokenizer(self) -> bool:
        return self._use_fast_tokenizer

    @property
    def precision(self) -> str:
        return self._precision

    @property
    def idf_dict(self) -> dict[int, float] | None:
        """The idf weights by token id (ids absent weigh ``log(M + 1)``), or None before ``compute_idf``."""
        return None if self._idf_dict is None else self._idf_dict.as_dict()

    @property
    def baseline_vals(self) -> np.ndarray:
        """The baseline row(s) of this layer (3,), or of every layer (layers, 1, 3) with ``all_layers``;
        ``ValueError`` (bert_score's message) when the file does not exist."""
        if self._baseline_vals is None:
            if not os.path.isfile(self.baseline_path):
                raise ValueError(
                    f"Baseline not Found for {self.model_type} on {self.lang} at {self.baseline_path}: compute one with `simkernel bertscore-baseline CORPUS --model MODEL --lang LANG -o FILE` and pass baseline_path=FILE"
                )
            self._baseline_vals = layer_baseline(
                self.baseline_path, None if self.all_layers else self.num_layers
            )
        return self._baseline_vals

    @property
    def hash(self) -> str:
        return get_hash(
            self.model_type,
            self.num_layers,
            self.idf,
            self.rescale_with_baseline,
            self.use_custom_baseline,
            self.use_fast_tokenizer,
            self._precision,
        )

    def compute_idf(self, sents: Sequence[str]) -> None:
        """idf weights from ``sents`` (bert_score's ``get_idf_dict``), used by :meth:`score` when ``idf``."""
        if self._idf_dict is not None:
            warnings.warn("Overwriting the previous importance weights.", stacklevel=2)
        _check_texts("sents", sents)
        self._idf_dict = sentence_idf(self._encoder, sents)

    def score(
        self,
        cands: Sequence[str],
        refs: Sequence[Any],
        verbose: bool = False,
        batch_size: int = 64,
        return_hash: bool = False,
    ) -> Any:
        """(P, R, F): float32 arrays of shape (N,), or (layers, N) with ``all_layers``; ((P, R, F), hash)
        with ``return_hash``. Several references per candidate: each of P, R, F is its best over them."""
        flat_cands, flat_refs, sizes = flatten_references(cands, refs)
        if verbose:
            print("calculating scores...")
        start = time.perf_counter()
        weights: Weights | None = None
        if self.idf:
            if self._idf_dict is None:
                raise BERTScoreArgumentError(
                    "IDF weights are not computed: pass idf_sents=... to BERTScorer or call compute_idf(sents)"
                )
            if self._idf_dict.table.size == 0:  # bert_score: its idf dict is empty, hence falsy
                raise BERTScoreArgumentError(
                    "IDF weights are not computed: the idf weights came from no sentences (idf_sents=[] or compute_idf([])); pass idf_sents=... or call compute_idf(sents) with at least one sentence"
                )
            weights = self._idf_dict
        layer = None if self.all_layers else self.num_layers
        out = raw_scores(self._encoder, flat_cands, flat_refs, sizes, layer, weights)
        if self.rescale_with_baseline:
            out = rescale(out, self.baseline_vals)
        result = (out[..., 0], out[..., 1], out[..., 2])
        if verbose:
            elapsed = time.perf_counter() - start
            print(f"done in {elapsed:.2f} seconds, {len(flat_refs) / max(elapsed, 1e-9):.2f} sentences/sec")
        if return_hash:
            return result, self.hash
        return result

    def plot_example(self, candidate: str, reference: str, fname: str = "") -> None:
        """bert_score's token-by-token similarity heat map of one pair (needs matplotlib)."""
        from simkernel.bert_score.plot import plot_similarity

        baseline = (
            float(self.baseline_vals[2]) if self.rescale_with_baseline and not self.all_layers else None
        )
        plot_similarity(self._encoder, candidate, reference, self.num_layers, baseline, fname)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(hash={self.hash}, batch_size={self.batch_size}, nthreads={self.nthreads})"

    def __str__(self) -> str:
        return self.__repr__()


def raw_scores(
    encoder: Any,
    cands: list[str],
    refs: list[str],
    sizes: list[int] | None,
    layer: int | None,
    weights: Weights | None,
) -> np.ndarray:
    """(N, 3) raw P, R, F at ``layer``, or (layers, N, 3) for every layer (``layer`` None), the best over each
    candidate's references (``sizes``: how many each has; None: one each); warns about empty and truncated
    texts."""
    if not cands:
        return np.zeros((encoder.num_layers + 1, 0, 3) if layer is None else (0, 3), dtype=np.float32)
    result = score_pairs(encoder, cands, refs, layer=layer, weights=weights)
    warn_about(result, stacklevel=4)  # warn_about, raw_scores, score: the warning names score's caller
    return result.scores if sizes is None else best_over_groups(result.scores, sizes)


def load_encoder(model: str, precision: str, threads: int | None) -> Any:
    """The process-wide token encoder of ``model`` (every layer available; loaded once per process)."""
    from simkernel import runtime

    return runtime.get_token_encoder(model, precision=precision, threads=threads)


def idf_weights_from(idf: Any, encoder: Any, refs: Sequence[str]) -> Weights | None:
    """bert_score's ``idf`` argument of ``score()``: False or an empty dict (None here: idf off), a dict of
    weights, or True (from ``refs``, every reference of every candidate)."""
    if not idf:  # bert_score tests this first: an empty dict (or defaultdict) is idf off too
        return None
    if isinstance(idf, Mapping):
        return MappedWeights(idf)
    return sentence_idf(encoder, refs)


def sentence_idf(encoder: Any, sentences: Sequence[str]) -> TokenWeights:
    """bert_score's idf over ``sentences`` as ``encoder`` tokenizes them (``get_idf_dict``)."""
    return document_frequency_idf(*ids_and_offsets(encoder.tokenize(list(sentences))))
