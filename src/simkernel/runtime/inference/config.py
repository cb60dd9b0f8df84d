"""Read what a model is from its configuration files, without loading it.

Works on a transformers / sentence-transformers checkpoint directory and on an exported simkernel
bundle alike (a bundle keeps the checkpoint's configuration files). Only JSON is read: no torch, no
transformers, no onnxruntime.

Rules (each mirrors the library whose numbers we reproduce):

- ``kind``: ``"cross-encoder"`` when any entry of ``config.json`` ``architectures`` ends with
  ``"ForSequenceClassification"``, else ``"bi-encoder"`` -- exactly Haystack's ``SASEvaluator.warm_up``.
- ``pooling``: from ``1_Pooling/config.json`` (the pooling module's folder named in ``modules.json``),
  new ``pooling_mode`` key or legacy ``pooling_mode_*_token(s)`` booleans; ``"mean"`` when absent
  (sentence-transformers' default when it wraps a plain transformers checkpoint). Several modes are
  joined with ``"+"`` in sentence-transformers' order (the embeddings are concatenated).
- ``normalize``: a ``sentence_transformers.models.Normalize`` module in ``modules.json``.
- ``max_seq_length``: ``sentence_bert_config.json`` ``max_seq_length``, else ``tokenizer_config.json``
  ``model_max_length`` (transformers' "unset" sentinel ~1e30 ignored), capped by ``config.json``
  ``max_position_embeddings`` (minus the padding offset for RoBERTa-style position ids).
- ``do_lower_case``: ``sentence_bert_config.json`` ``do_lower_case``: sentence-transformers lower-cases
  the text itself before the tokenizer (independent of the tokenizer's own normaliser).
- ``activation`` (cross-encoders): like sentence-transformers' ``CrossEncoder.get_default_activation_fn``:
  ``config.json`` ``sentence_transformers.activation_fn`` (or the pre-v4 key
  ``sbert_ce_default_activation_function``) when it is a ``torch.nn`` activation we implement, else
  ``"sigmoid"`` for one label and ``"identity"`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simkernel.errors import ModelError
from simkernel.runtime.store.layout import read_json

POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
# legacy boolean keys of 1_Pooling/config.json -> mode, in sentence-transformers' order
_LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
# torch.nn activation class name -> simkernel's name (see cross_encoder.ACTIVATIONS)
_ACTIVATIONS = {"Sigmoid": "sigmoid", "Identity": "identity", "Tanh": "tanh", "Softmax": "softmax"}
# model types whose tokenizers do not emit token_type_ids (transformers' model_input_names)
_NO_TOKEN_TYPES = {
    "roberta",
    "xlm-roberta",
    "xlm-roberta-xl",
    "camembert",
    "distilbert",
    "mpnet",
    "bart",
    "gpt2",
    "modernbert",
    "qwen2",
    "qwen3",
    "llama",
    "mistral",
    "gemma",
    "gemma2",
    "gemma3_text",
    "t5",
    "mt5",
}
_ROBERTA_LIKE = {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer"}
_UNSET_MAX_LENGTH = 10**20  # transformers writes int(1e30) when a tokenizer has no limit
_KNOWN_ST_MODULES = {"Transformer", "Pooling", "Normalize"}


@dataclass(frozen=True)
class ModelConfig:
    """What a checkpoint or bundle is, read from its JSON configuration files.

    ``dim`` is the dimension of the sentence embedding (hidden size x number of pooling modes) for a
    bi-encoder, the hidden size for a cross-encoder. ``num_labels``/``activation`` are ``None`` for a
    bi-encoder. ``modules`` lists the sentence-transformers module types (short names, e.g.
    ``("Transformer", "Pooling", "Normalize")``); ``unsupported_modules`` those simkernel cannot run
    (e.g. ``Dense``), which makes the model unusable as a ``TextEncoder``. ``padding_side`` comes from
    ``tokenizer_config.json`` (``"right"`` unless it says ``"left"``).
    """

    path: Path
    kind: str
    architectures: tuple[str, ...]
    model_type: str | None
    pooling: str
    normalize: bool
    max_seq_length: int
    do_lower_case: bool
    hidden_size: int | None
    dim: int | None
    num_labels: int | None
    activation: str | None
    uses_token_type_ids: bool
    pad_token: str | None
    pad_token_id: int | None
    modules: tuple[str, ...] = ()
    unsupported_modules: tuple[str, ...] = ()
    padding_side: str = "right"
    id2label: dict[int, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_cross_encoder(self) -> bool:
        return self.kind == "cross-encoder"

    @property
    def pooling_modes(self) -> tuple[str, ...]:
        return tuple(self.pooling.split("+"))


def _optional_json(path: Path) -> Any:
    return read_json(path) if path.is_file() else None


def is_cross_encoder_architecture(architectures: list[str] | tuple[str, ...] | None) -> bool:
    """Haystack's rule: a cross-encoder iff an architecture name ends with ``ForSequenceClassification``."""
    return any(a.endswith("ForSequenceClassification") for a in architectures or ())


def _module_type_name(entry: dict) -> str:
    return str(entry.get("type", "")).rsplit(".", 1)[-1]


def _pooling_modes(cfg: dict | None) -> tuple[str, ...]:
    if not cfg:
        return ("mean",)
    mode = cfg.get("pooling_mode")
    if mode is not None:
        modes = (mode,) if isinstance(mode, str) else tuple(mode)
    else:
        modes = tuple(m for key, m in _LEGACY_POOLING_KEYS.items() if cfg.get(key))
        if not modes:
            modes = ("mean",)
    for m in modes:
        if m not in POOLING_MODES:
            raise ModelError(
                f"unknown pooling mode {m!r} in the pooling config; known: {', '.join(POOLING_MODES)}"
            )
    return modes


def _max_seq_length(st_cfg: dict | None, tok_cfg: dict | None, config: dict) -> int:
    value = None
    if st_cfg and st_cfg.get("max_seq_length"):
        value = int(st_cfg["max_seq_length"])
    elif tok_cfg and tok_cfg.get("model_max_length") and tok_cfg["model_max_length"] < _UNSET_MAX_LENGTH:
        value = int(tok_cfg["model_max_length"])
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int) and positions > 0:
        if config.get("model_type") in _ROBERTA_LIKE:
            positions -= int(config.get("pad_token_id", 1)) + 1
        value = positions if value is None else min(value, positions)
    if value is None:
        value = 512
    return value


def _activation(config: dict, num_labels: int) -> str:
    path = None
    st = config.get("sentence_transformers")
    if isinstance(st, dict) and st.get("activation_fn"):
        path = st["activation_fn"]
    elif config.get("sbert_ce_default_activation_function"):
        path = config["sbert_ce_default_activation_function"]
    # sentence-transformers only instantiates torch.* paths without trust_remote_code; others fall back
    if isinstance(path, str) and path.startswith("torch."):
        name = path.rsplit(".", 1)[-1]
        if name not in _ACTIVATIONS:
            raise ModelError(
                f"the cross-encoder's config asks for activation {path!r}, which simkernel does not implement (known: {', '.join('torch.nn.' + k for k in _ACTIVATIONS)})"
            )
        return _ACTIVATIONS[name]
    return "sigmoid" if num_labels == 1 else "identity"


def _pad_token(special: dict | None, tok_cfg: dict | None) -> str | None:
    for source in (special, tok_cfg):
        if source and source.get("pad_token"):
            tok = source["pad_token"]
            return tok.get("content") if isinstance(tok, dict) else str(tok)
    return None


def _uses_token_type_ids(config: dict, tok_cfg: dict | None) -> bool:
    names = (tok_cfg or {}).get("model_input_names")
    if names:
        return "token_type_ids" in names
    return config.get("model_type") not in _NO_TOKEN_TYPES


def read_model_config(path: str | Path) -> ModelConfig:
    """Read :class:`ModelConfig` from a checkpoint or bundle directory (JSON only; no model is loaded).

    Raises :class:`ModelError` when the directory or its ``config.json`` is missing or corrupt.
    """
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ModelError(f"{root} is not a directory; give the folder of a checkpoint or an exported bundle")
    config_path = root / "config.json"
    if not config_path.is_file():
        raise ModelError(
            f"{config_path} is missing: {root} is not a transformers/sentence-transformers checkpoint nor a simkernel bundle. Point model= at the folder that holds config.json, or re-export the model with `simkernel models export SRC DST`."
        )
    config = read_json(config_path)
    if not isinstance(config, dict):
        raise ModelError(f"{config_path} does not hold a JSON object; re-export or re-download the model")
    tok_cfg = _optional_json(root / "tokenizer_config.json")
    special = _optional_json(root / "special_tokens_map.json")
    st_cfg = _optional_json(root / "sentence_bert_config.json")
    modules_list = _optional_json(root / "modules.json") or []

    architectures = tuple(config.get("architectures") or ())
    kind = "cross-encoder" if is_cross_encoder_architecture(architectures) else "bi-encoder"
    module_types = tuple(_module_type_name(m) for m in modules_list)
    pooling_dir = next((m.get("path") for m in modules_list if _module_type_name(m) == "Pooling"), None)
    pooling_cfg = _optional_json(root / (pooling_dir or "1_Pooling") / "config.json")
    modes = _pooling_modes(pooling_cfg)

    hidden = config.get("hidden_size", config.get("d_model", config.get("dim")))
    if pooling_cfg:
        hidden = pooling_cfg.get("word_embedding_dimension", pooling_cfg.get("embedding_dimension", hidden))
    hidden = int(hidden) if hidden is not None else None

    num_labels = activation = None
    id2label: dict[int, str] = {}
    if kind == "cross-encoder":
        id2label = {int(k): str(v) for k, v in (config.get("id2label") or {}).items()}
        num_labels = int(config.get("num_labels") or len(id2label) or 2)
        activation = _activation(config, num_labels)
        dim = hidden
    else:
        dim = hidden * len(modes) if hidden is not None else None

    return ModelConfig(
        path=root,
        kind=kind,
        architectures=architectures,
        model_type=config.get("model_type"),
        pooling="+".join(modes),
        normalize="Normalize" in module_types,
        max_seq_length=_max_seq_length(st_cfg, tok_cfg, config),
        do_lower_case=bool((st_cfg or {}).get("do_lower_case", False)),
        hidden_size=hidden,
        dim=dim,
        num_labels=num_labels,
        activation=activation,
        uses_token_type_ids=_uses_token_type_ids(config, tok_cfg),
        pad_token=_pad_token(special, tok_cfg),
        pad_token_id=config.get("pad_token_id"),
        modules=module_types,
        unsupported_modules=tuple(t for t in module_types if t not in _KNOWN_ST_MODULES),
        padding_side="left" if (tok_cfg or {}).get("padding_side") == "left" else "right",
        id2label=id2label,
    )
