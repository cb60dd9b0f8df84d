"""``score`` and ``plot_example``: bert_score 0.3.13's functions, on simkernel's ONNX token encoder and kernel."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from simkernel.bert_score.scorer import (
    flatten_references,
    get_hash,
    idf_weights_from,
    load_encoder,
    raw_scores,
)
from simkernel.scoring.bertscore.baselines import baseline_file, layer_baseline, rescale
from simkernel.scoring.bertscore.model import (
    baseline_lang,
    check_device,
    check_num_layers,
    resolve_model,
)
from simkernel.scoring.settings import DEFAULT_PRECISION, check_precision_name, check_threads

__all__ = ["plot_example", "score"]


def score(
    cands: Sequence[str],
    refs: Sequence[Any],
    model_type: str | None = None,
    num_layers: int | None = None,
    verbose: bool = False,
    idf: Any = False,
    device: Any = None,
    batch_size: int = 64,
    nthreads: int = 4,
    all_layers: bool = False,
    lang: str | None = None,
    return_hash: bool = False,
    rescale_with_baseline: bool = False,
    baseline_path: str | os.PathLike[str] | None = None,
    use_fast_tokenizer: bool = False,
    *,
    precision: str = DEFAULT_PRECISION,
    threads: int | None = None,
) -> Any:
    """BERTScore of each candidate against its reference(s), as bert_score's ``score``.

    Returns ``(P, R, F)``, float32 numpy arrays of shape (N,) (``all_layers``: (layers, N), the embedding
    output first), or ``((P, R, F), hash)`` with ``return_hash``. ``refs`` is a list of strings or a list of
    lists of strings (several references: each of P, R, F is the best over them, as bert_score takes it).
    ``idf``: False, True (weights from ``refs``) or a dict of weights by token id. simkernel's own keywords:
    ``precision`` ("fp32", "int8", "bf16") and ``threads``. ``device`` must be None or a CPU; ``nthreads`` and
    ``batch_size`` are accepted (a score never depends on the batch size here).
    """
    flat_cands, flat_refs, sizes = flatten_references(cands, refs)
    model, layer = resolve_model(model_type, num_layers, lang, rescale_with_baseline)
    lang = baseline_lang(lang, model_type)
    check_device(device)
    check_precision_name(precision)
    check_threads(threads)
    encoder = load_encoder(model, precision, threads)
    if not all_layers:
        check_num_layers(layer, encoder.num_layers, model)
    weights = idf_weights_from(idf, encoder, flat_refs)
    if verbose:
        print("calculating scores...")
    start = time.perf_counter()
    scores = raw_scores(encoder, flat_cands, flat_refs, sizes, None if all_layers else layer, weights)
    if rescale_with_baseline:
        path = baseline_file(baseline_path, lang, model)
        if os.path.isfile(path):
            scores = rescale(scores, layer_baseline(path, None if all_layers else layer))
        else:
            print(f"Warning: Baseline not Found for {model} on {lang} at {path}", file=sys.stderr)
    out = scores[..., 0], scores[..., 1], scores[..., 2]
    if verbose:
        elapsed = time.perf_counter() - start
        print(f"done in {elapsed:.2f} seconds, {len(flat_refs) / max(elapsed, 1e-9):.2f} sentences/sec")
    if return_hash:
        return out, get_hash(
            model, layer, idf, rescale_with_baseline, baseline_path is not None, use_fast_tokenizer, precision
        )
    return out


def plot_example(
    candidate: str,
    reference: str,
    model_type: str | None = None,
    num_layers: int | None = None,
    lang: str | None = None,
    rescale_with_baseline: bool = False,
    baseline_path: str | os.PathLike[str] | None = None,
    use_fast_tokenizer: bool = False,
    fname: str = "",
    *,
    precision: str = DEFAULT_PRECISION,
    threads: int | None = None,
) -> None:
    """bert_score's heat map of the token-by-token cosines of one pair (special tokens left out), saved to
    ``fname`` when given and shown with ``matplotlib.pyplot.show()``; needs matplotlib
    (``pip install 'simkernel[plot]'``)."""
    from simkernel.bert_score.plot import plot_similarity
    from simkernel.scoring.bertscore.model import BERTScoreArgumentError

    if not isinstance(candidate, str) or not isinstance(reference, str):
        raise BERTScoreArgumentError("plot_example takes one candidate and one reference, each a string")
    model, layer = resolve_model(model_type, num_layers, lang, rescale_with_baseline)
    lang = baseline_lang(lang, model_type)
    encoder = load_encoder(model, precision, threads)
    check_num_layers(layer, encoder.num_layers, model)
    baseline = None
    if rescale_with_baseline:
        path = baseline_file(baseline_path, lang, model)
        if os.path.isfile(path):
            baseline = float(layer_baseline(path, layer)[2])
        else:
            print(f"Warning: Baseline not Found for {model} on {lang} at {path}", file=sys.stderr)
    plot_similarity(encoder, candidate, reference, layer, baseline, fname)
