"""bert_score's heat map of one pair's token-by-token cosines (matplotlib, the ``plot`` extra)."""

from __future__ import annotations

from typing import Any

import numpy as np

from simkernel._optional import import_optional

__all__ = ["plot_similarity", "similarity_matrix"]


def similarity_matrix(
    encoder: Any, candidate: str, reference: str, layer: int
) -> tuple[np.ndarray, list[str], list[str]]:
    """float32 cosines (candidate tokens, reference tokens) at ``layer`` with the first and last token of each
    text left out (bert_score drops [CLS] and [SEP]: ``sim[1:-1, 1:-1]``), and the tokens as text."""
    from simkernel.kernels import cosine_matrix

    batch = encoder.encode([candidate, reference], layer=layer)
    offsets = batch.offsets
    cand = batch.vectors[offsets[0] : offsets[1]]
    ref = batch.vectors[offsets[1] : offsets[2]]
    sim = cosine_matrix(cand, ref)[1:-1, 1:-1]
    cand_tokens = encoder.token_texts(batch.token_ids[offsets[0] : offsets[1]])[1:-1]
    ref_tokens = encoder.token_texts(batch.token_ids[offsets[1] : offsets[2]])[1:-1]
    return sim, cand_tokens, ref_tokens


def plot_similarity(
    encoder: Any, candidate: str, reference: str, layer: int, baseline_f: float | None, fname: str
) -> None:
    """Draws the matrix as bert_score's ``plot_example`` does (Blues, 0 to 1, each cell's value written in
    it), rescaled by the F baseline when given; saves it to ``fname`` when not empty, then shows it."""
    plt = import_optional("matplotlib.pyplot", "plot", "plot_example's heat map")
    axes_grid = import_optional("mpl_toolkits.axes_grid1", "plot", "plot_example's heat map")
    sim, h_tokens, r_tokens = similarity_matrix(encoder, candidate, reference, layer)
    if baseline_f is not None:
        sim = (sim - baseline_f) / (1 - baseline_f)
    fig, ax = plt.subplots(figsize=(max(len(r_tokens), 1), max(len(h_tokens), 1)))
    image = ax.imshow(sim, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(np.arange(len(r_tokens)))
    ax.set_yticks(np.arange(len(h_tokens)))
    ax.set_xticklabels(r_tokens, fontsize=10)
    ax.set_yticklabels(h_tokens, fontsize=10)
    ax.grid(False)
    plt.xlabel("Reference (tokenized)", fontsize=14)
    plt.ylabel("Candidate (tokenized)", fontsize=14)
    plt.title("Similarity Matrix" + (" (after Rescaling)" if baseline_f is not None else ""), fontsize=14)
    colorbar_axes = axes_grid.make_axes_locatable(ax).append_axes("right", size="2%", pad=0.2)
    fig.colorbar(image, cax=colorbar_axes)
    plt.setp(ax.get_xticklabels(), rotation=45, ha="right", rotation_mode="anchor")
    for i in range(len(h_tokens)):
        for j in range(len(r_tokens)):
            value = float(sim[i, j])
            ax.text(j, i, f"{value:.3f}", ha="center", va="center", color="k" if value < 0.5 else "w")
    fig.tight_layout()
    if fname != "":
        plt.savefig(fname, dpi=100)
        print("Saved figure to file: ", fname)
    plt.show()
