"""The models simkernel knows and recommends: frozen descriptions, one per hub repo.

Unknown ids are not an error: any hub repo publishing ``onnx/model.onnx`` plus ``tokenizer.json`` works
(:mod:`simkernel.runtime.acquisition.hub`). The registry adds what the hub cannot tell before a download:
a pinned revision, which files to fetch, and the figures to show in ``simkernel models list``.

Revisions: ``all-MiniLM-L6-v2`` is pinned to commit ``c9745ed1...`` (the commit that publishes
``onnx/model.onnx``, the one most projects pin). For the others no commit could be verified from this
offline build machine, so they say ``"main"`` (unpinned) until a maintainer pins them; the download
records the commit it actually got in the bundle's manifest.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

# Quantised ONNX files the sentence-transformers / cross-encoder repos publish, best first for x86-64
# with AVX-512 VNNI (all are dynamic int8 quantisations that run on any CPU, batch-dependent): only used
# when simkernel cannot make its own per-row int8 from the fp32 graph (see simkernel.runtime.acquisition.hub).
INT8_HUB_FILES = (
    "onnx/model_qint8_avx512_vnni.onnx",
    "onnx/model_qint8_avx512.onnx",
    "onnx/model_quint8_avx2.onnx",
    "onnx/model_qint8_arm64.onnx",
    "onnx/model_int8.onnx",
    "onnx/model_quantized.onnx",
)
FP32_HUB_FILE = "onnx/model.onnx"
# Configuration and tokenizer files a bundle keeps (whichever the repo has)
CONFIG_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
)
# Weight files of a transformers checkpoint (whichever it has; the index of a sharded one names its shards)
WEIGHT_FILES = (
    "model.safetensors",
    "pytorch_model.bin",
    "model.safetensors.index.json",
    "pytorch_model.bin.index.json",
)


@dataclass(frozen=True)
class CalibratedThreshold:
    """A threshold on this model's scores calibrated on human labels (``scripts/calibrate_default_model.py``):
    the F1-maximising ``threshold`` with its bootstrap 95% ``interval``, the ``f1`` and Cohen's ``kappa`` it
    reaches on the ``pairs`` labelled pairs of ``data`` under the label ``rule``.

    ``fitted_on`` names the precision whose scores the fit used, when not ``precision`` itself. int8 scores
    depend on the CPU (onnxruntime's int8 matrix product sums exactly with VNNI / AMX and saturates pairs of
    products in 16 bits with AVX2 or AVX-512 without VNNI): an int8 fit gave 0.489 on one kind of CPU and
    0.4727 on the other, because the best-F1 threshold sits on a flat stretch of the F1 curve where small
    score changes move it far. So int8 takes the threshold fitted on the fp32 scores, which are the same on
    every CPU (its ``interval``, ``f1`` and ``kappa`` are that fit's), and the tests check that int8
    decides alike on both kinds of x86-64 CPU: at most ``max_flipped`` of the pairs land on the other side
    of the threshold than with fp32, and int8's F1 and kappa there are within ``max_difference`` of fp32's.
    """

    precision: str
    threshold: float
    interval: tuple[float, float]
    f1: float
    kappa: float
    pairs: int
    data: str = "the English SAS data (SQuAD + NQ-open)"
    rule: str = "label >= 1 (partly or fully the same meaning) positive"
    fitted_on: str | None = None
    max_flipped: float | None = None
    max_difference: float | None = None

    @property
    def scores(self) -> str:
        """The precision whose scores the threshold was fitted on."""
        return self.fitted_on or self.precision


@dataclass(frozen=True)
class KnownModel:
    """A model simkernel knows: what it is, where it comes from, and how it embeds or scores."""

    id: str
    kind: str  # "bi-encoder" | "cross-encoder"
    dim: int  # embedding dimension (bi-encoder) or number of labels (cross-encoder)
    pooling: str | None  # bi-encoders: sentence-transformers pooling mode
    normalize: bool
    max_seq_length: int
    hub_repo: str
    revision: str  # a commit SHA, or "main" when unpinned (see the module docstring)
    languages: str
    description: str
    onnx_file: str = FP32_HUB_FILE
    int8_files: tuple[str, ...] = INT8_HUB_FILES
    calibrated: tuple[CalibratedThreshold, ...] = ()
    # parts of dense-layer (MatMul) node names kept in fp32 by simkernel's per-row int8 export of this
    # model's graphs (sentence embeddings and token layers): the layers whose int8 error alone breaks parity
    int8_keep_fp32: tuple[str, ...] = ()

    def calibrated_threshold(self, precision: str) -> CalibratedThreshold | None:
        """The threshold calibrated for ``precision``, or None."""
        return next((c for c in self.calibrated if c.precision == precision), None)

    @property
    def pinned(self) -> bool:
        return len(self.revision) == 40 and all(c in "0123456789abcdef" for c in self.revision)


KNOWN_MODELS: tuple[KnownModel, ...] = (
    KnownModel(
        id="sentence-transformers/all-MiniLM-L6-v2",
        kind="bi-encoder",
        dim=384,
        pooling="mean",
        normalize=True,
        max_seq_length=256,
        hub_repo="sentence-transformers/all-MiniLM-L6-v2",
        revision="c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
        languages="en",
        description="default; eval_lib's local embedding model; fast, English",
        # scripts/calibrate_default_model.py: SASEvaluator scores of the 4,600 labelled English SAS pairs;
        # int8 takes the fp32 fit (same on every CPU). Measured at 0.4719, int8 against fp32: 41 pairs
        # (0.89%) flipped, F1 -0.0018, kappa -0.0017 with exact int8 sums (VNNI / AMX); 43 (0.93%), F1
        # -0.0026, kappa -0.0037 with AVX2's pair-saturating ones; onnxruntime's dynamic int8 3.0%
        calibrated=(
            CalibratedThreshold("fp32", 0.4719, (0.4014, 0.5544), f1=0.5926, kappa=0.3849, pairs=4600),
            CalibratedThreshold(
                "int8",
                0.4719,
                (0.4014, 0.5544),
                f1=0.5926,
                kappa=0.3849,
                pairs=4600,
                fitted_on="fp32",
                max_flipped=0.015,
                max_difference=0.006,
            ),
        ),
    ),
    KnownModel(
        id="sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2",
        kind="bi-encoder",
        dim=384,
        pooling="mean",
        normalize=False,
        max_seq_length=128,
        hub_repo="sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2",
        revision="main",
        languages="50+ incl. ru, zh",
        description="small multilingual paraphrase model",
    ),
    KnownModel(
        id="sentence-transformers/paraphrase-multilingual-mpnet-base-v2",
        kind="bi-encoder",
        dim=768,
        pooling="mean",
        normalize=False,
        max_seq_length=128,
        hub_repo="sentence-transformers/paraphrase-multilingual-mpnet-base-v2",
        revision="main",
        languages="50+ incl. ru, zh",
        description="Haystack SASEvaluator's default model; multilingual",
    ),
    KnownModel(
        id="sentence-transformers/all-mpnet-base-v2",
        kind="bi-encoder",
        dim=768,
        pooling="mean",
        normalize=True,
        max_seq_length=384,
        hub_repo="sentence-transformers/all-mpnet-base-v2",
        revision="main",
        languages="en",
        description="most accurate of the all-* models; English",
        # per-row int8 of all 72 dense layers: min cosine 0.950 against fp32 on the empty string (sentence
        # parity tolerance 0.97); with layer 10's FFN input projection in fp32: 0.982 (1 of 72 layers)
        int8_keep_fp32=("layer.10/intermediate",),
    ),
    KnownModel(
        id="cross-encoder/stsb-distilroberta-base",
        kind="cross-encoder",
        dim=1,
        pooling=None,
        normalize=False,
        max_seq_length=512,
        hub_repo="cross-encoder/stsb-distilroberta-base",
        revision="main",
        languages="en",
        description="STS cross-encoder: similarity in [0, 1] (sigmoid)",
    ),
    KnownModel(
        id="cross-encoder/stsb-roberta-base",
        kind="cross-encoder",
        dim=1,
        pooling=None,
        normalize=False,
        max_seq_length=512,
        hub_repo="cross-encoder/stsb-roberta-base",
        revision="main",
        languages="en",
        description="STS cross-encoder, larger",
    ),
    KnownModel(
        id="cross-encoder/ms-marco-MiniLM-L12-v2",
        kind="cross-encoder",
        dim=1,
        pooling=None,
        normalize=False,
        max_seq_length=512,
        hub_repo="cross-encoder/ms-marco-MiniLM-L12-v2",
        revision="main",
        languages="en",
        description="passage re-ranker (relevance, not similarity)",
    ),
)

# Old names the hub redirects, and sentence-transformers' short names, -> registry id
ALIASES = {
    "cross-encoder/ms-marco-MiniLM-L-12-v2": "cross-encoder/ms-marco-MiniLM-L12-v2",
    **{m.id.split("/", 1)[1]: m.id for m in KNOWN_MODELS if m.id.startswith("sentence-transformers/")},
}


def canonical_id(model_id: str) -> str:
    """The registry id for an alias or short name (``"all-MiniLM-L6-v2"``); other ids unchanged."""
    return ALIASES.get(model_id, model_id)


def known_model(model_id: str) -> KnownModel | None:
    """The registry entry of ``model_id`` (aliases accepted), or None for a model we do not list."""
    wanted = canonical_id(model_id)
    return next((m for m in KNOWN_MODELS if m.id == wanted), None)
