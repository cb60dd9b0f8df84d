"""``BundleTokenEncoder``: the hidden states per token of a chosen layer (or of every layer) of a transformer,
from a token-layers bundle on onnxruntime, as BERTScore (``bert_score`` 0.3.13) computes them in torch.

What BERTScore does, and what this reproduces:

- tokens (:class:`BertScoreTokenizer`): ``bert_score.utils.sent_encode``: the text ``str.strip()``-ed, the
  model's special tokens added ([CLS] ... [SEP]), truncated at the tokenizer's ``model_max_length`` (512 for
  BERT-like models; NOT sentence-transformers' ``max_seq_length``, 256 for all-MiniLM-L6-v2, which
  :class:`~simkernel.runtime.inference.tokenizer.TextTokenizer` uses); an empty (or all-whitespace) text
  gives the special tokens alone;
- vectors: ``bert_score.utils.get_model(model, num_layers)`` + ``bert_encode``: the output of layer
  ``num_layers`` of ``AutoModel`` (0: the embedding output), or with ``all_layers=True`` the embedding
  output and every layer's (``output_hidden_states``), float32, not normalised.

A token-layers bundle (:mod:`simkernel.runtime.store.layout`, written by
:mod:`simkernel.runtime.acquisition.token_layers`) holds one graph per layer, which computes the layers up
to it only (as BERTScore truncates the model), and one graph with every layer. Texts run in batches of one
token length (no padding, :func:`~simkernel.runtime.inference.tokenizer.length_sorted_batches`), so a
text's vectors never depend on the other texts of the call, bit for bit; the batches run data-parallel
over the session's workers (``threads``) as the other encoders' do.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from simkernel.errors import ModelError
from simkernel.runtime.inference.bundle import check_precision, onnx_file, open_graph
from simkernel.runtime.inference.config import read_model_config
from simkernel.runtime.inference.inputs import check_batch_size, check_texts
from simkernel.runtime.inference.tokenizer import length_sorted_batches
from simkernel.runtime.store.layout import (
    ALL_LAYERS_OUTPUT,
    LAYER_OUTPUT,
    PRECISIONS,
    TOKEN_LAYERS_KIND,
    layer_graph_name,
    read_json,
)
from simkernel.runtime.store.manifest import check_bundle, read_manifest

_UNSET_MAX_LENGTH = 10**20  # transformers writes int(1e30) when a tokenizer has no limit
_ROBERTA_LIKE = {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "longformer"}


@dataclass(frozen=True)
class TokenBatch:
    """The token vectors of a call's texts, concatenated in the input order.

    - ``vectors``: float32, ``(total_tokens, dim)`` for one layer, or ``(layers + 1, total_tokens, dim)``
      for every layer (index 0: the embedding output, index L: layer L's output, BERTScore's
      ``all_layers``); the model's hidden states as they are (not normalised; the caller normalises);
    - ``offsets``: int64 ``(n_texts + 1,)``: text i's tokens are ``offsets[i]:offsets[i + 1]`` (special
      tokens included: a text has at least 2);
    - ``token_ids``: int64 ``(total_tokens,)``: the token ids, aligned with the vectors' token axis;
    - ``truncated``: bool ``(n_texts,)``: the texts cut at the tokenizer's ``model_max_length``;
    - ``layer``: the layer asked for, None for every layer.
    """

    vectors: np.ndarray
    offsets: np.ndarray
    token_ids: np.ndarray
    truncated: np.ndarray
    layer: int | None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def text_vectors(self, index: int) -> np.ndarray:
        """Text ``index``'s vectors: ``(tokens, dim)``, or ``(layers + 1, tokens, dim)`` for every layer."""
        return self.vectors[..., self.offsets[index] : self.offsets[index + 1], :]

    def text_token_ids(self, index: int) -> np.ndarray:
        """Text ``index``'s token ids, int64 ``(tokens,)``."""
        return self.token_ids[self.offsets[index] : self.offsets[index + 1]]


def model_max_length(folder: Path) -> int:
    """The tokenizer's ``model_max_length`` (``tokenizer_config.json``), the length BERTScore truncates at;
    when it is unset (transformers' ~1e30 sentinel), ``config.json``'s ``max_position_embeddings`` (minus
    RoBERTa's padding offset), else 512."""
    tok_path = folder / "tokenizer_config.json"
    tok_cfg = read_json(tok_path) if tok_path.is_file() else {}
    value = tok_cfg.get("model_max_length") if isinstance(tok_cfg, dict) else None
    if isinstance(value, (int, float)) and 2 <= value < _UNSET_MAX_LENGTH:
        return int(value)
    config = read_json(folder / "config.json")
    positions = config.get("max_position_embeddings") if isinstance(config, dict) else None
    if isinstance(positions, int) and positions > 0:
        if config.get("model_type") in _ROBERTA_LIKE:
            positions -= int(config.get("pad_token_id", 1)) + 1
        return positions
    return 512


class BertScoreTokenizer:
    """Token ids as ``bert_score.utils.sent_encode`` gives them, from the bundle's ``tokenizer.json``.

    ``text.strip()`` (Python's whitespace, as bert_score), then the tokenizer with special tokens,
    truncated on the right (or the side ``tokenizer_config.json`` names) at :attr:`max_length`
    (``model_max_length``, special tokens included). An empty stripped text gives the special tokens alone
    (``build_inputs_with_special_tokens([])``). No leading space is added for RoBERTa's or GPT-2's
    tokenizers: bert_score passes them ``add_prefix_space=True``, which transformers 5 ignores (its
    tokenizers take that setting when they are built, not per call), so bert_score 0.3.13 on transformers 5
    tokenizes the text as it is (transformers 4's slow tokenizers added the space; docs/drop-ins.md). bert_score
    uses the slow (Python) tokenizer by default; this is the fast one (``tokenizer.json``), identical on the
    texts the tests compare (see tests/runtime/inference/test_token_encoder.py and
    tests/bertscore/test_bert_score_roberta.py). Thread-safe.
    """

    def __init__(self, folder: str | Path) -> None:
        from tokenizers import Tokenizer

        folder = Path(folder)
        path = folder / "tokenizer.json"
        if not path.is_file():
            raise ModelError(
                f"{path} is missing: the token-layers bundle has no tokenizer.json. Export it again with `simkernel models export SRC DST --token-layers`."
            )
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception on a corrupt file
            raise ModelError(
                f"cannot load {path}: {exc}. The file is corrupt; export the token layers again."
            ) from exc
        tok_path = folder / "tokenizer_config.json"
        tok_cfg = read_json(tok_path) if tok_path.is_file() else {}
        tok_cfg = tok_cfg if isinstance(tok_cfg, dict) else {}
        self.max_length = model_max_length(folder)
        side = "left" if tok_cfg.get("truncation_side") == "left" else "right"
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_length, strategy="longest_first", direction=side)
        self._tokenizer = tokenizer
        special_path = folder / "special_tokens_map.json"
        special = read_json(special_path) if special_path.is_file() else {}
        special = special if isinstance(special, dict) else {}
        empty = tokenizer.encode("", add_special_tokens=True).ids
        self.cls_id = self._special_id(special, tok_cfg, "cls_token", empty[0] if empty else None)
        self.sep_id = self._special_id(special, tok_cfg, "sep_token", empty[-1] if empty else None)
        self.special_ids = frozenset(
            int(i) for i, token in tokenizer.get_added_tokens_decoder().items() if token.special
        )
        self.empty_length = len(empty)

    def token_texts(self, token_ids: Sequence[int]) -> list[str]:
        """Each id decoded on its own (bert_score's ``tokenizer.decode([i])``), for plots and reports."""
        return [self._tokenizer.decode([int(i)], skip_special_tokens=False) for i in token_ids]

    def _special_id(self, special: dict, tok_cfg: dict, key: str, fallback: int | None) -> int | None:
        token = special.get(key, tok_cfg.get(key))
        token = token.get("content") if isinstance(token, dict) else token
        found = self._tokenizer.token_to_id(token) if isinstance(token, str) else None
        return int(found) if found is not None else fallback

    def encodings(self, texts: Sequence[str]) -> list:
        """``tokenizers.Encoding`` of each text (see the class docstring); ``overflowing`` is non-empty for a
        truncated text."""
        return self._tokenizer.encode_batch([t.strip() for t in texts], add_special_tokens=True)


class BundleTokenEncoder:
    """The hidden states per token of a transformer's layers, loaded from a token-layers bundle folder.

    The core of :class:`simkernel.runtime.TokenEncoder` (which resolves a model name, and exports the token
    layers on demand); this class only reads ``folder``. ``name``: what the caller called the model (named
    in errors; default the folder).

    Args:
        precision: ``"fp32"`` (the graphs exported from torch: the same numbers as transformers within
            float rounding), ``"int8"`` (simkernel's per-row int8, batch-independent; ~1.5x faster) or
            ``"bf16"`` (the fp32 graphs on OpenVINO computing in bf16, on CPUs with native bf16 only).
        threads: CPU threads (onnxruntime intra-op threads for a call with one batch, worker threads each
            running whole batches for a call with several; None: the CPUs this process may use).
        providers: onnxruntime execution providers (fp32, int8; default CPU).
    """

    def __init__(
        self,
        folder: str | Path,
        precision: str = "fp32",
        threads: int | None = None,
        providers: list[str] | None = None,
        *,
        name: str | Path | None = None,
    ) -> None:
        check_precision(precision)
        folder = Path(folder)
        self.model = str(folder if name is None else name)
        manifest = read_manifest(folder)
        if manifest.get("kind") != TOKEN_LAYERS_KIND:
            raise ModelError(
                f"{folder} is not a token-layers bundle (its manifest's kind is {manifest.get('kind')!r}, not {TOKEN_LAYERS_KIND!r}): load the model with simkernel.runtime.TokenEncoder.load(MODEL), which exports its token layers, or export them with `simkernel models export CHECKPOINT DST --token-layers`"
            )
        onnx_file(folder, precision)  # the precision's all-layers graph is there (else the fix)
        check_bundle(folder)  # every file against its checksum, unless verified unchanged before
        self.num_layers = int(manifest["num_layers"])
        self.model_id = str(manifest.get("model") or self.model)
        config = read_model_config(folder)
        if config.hidden_size is None:
            raise ModelError(f"{folder / 'config.json'} gives no hidden_size; export the token layers again")
        self.dim = int(config.hidden_size)
        self.tokenizer = BertScoreTokenizer(folder)
        self.model_path = folder
        self.precision = precision
        self.threads = threads
        self._providers = providers
        self._sessions: dict[int | None, Any] = {}
        self._lock = threading.Lock()

    @property
    def max_length(self) -> int:
        """Longest input in tokens, special tokens included: the tokenizer's ``model_max_length``."""
        return self.tokenizer.max_length

    @property
    def cls_id(self) -> int | None:
        return self.tokenizer.cls_id

    @property
    def sep_id(self) -> int | None:
        return self.tokenizer.sep_id

    @property
    def special_ids(self) -> frozenset[int]:
        """The ids of the tokenizer's special tokens ([CLS], [SEP], [PAD], [UNK], [MASK], ...)."""
        return self.tokenizer.special_ids

    @property
    def empty_length(self) -> int:
        """Tokens of the empty text ([CLS] [SEP]: 2): a text of no more tokens is empty to BERTScore
        (bert_score's ``masks.sum(dim=1).eq(2)``)."""
        return self.tokenizer.empty_length

    def token_texts(self, token_ids: Sequence[int]) -> list[str]:
        """Each id as text, decoded on its own as bert_score's ``plot_example`` does."""
        return self.tokenizer.token_texts(token_ids)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, precision={self.precision!r}, "
            f"num_layers={self.num_layers}, dim={self.dim}, max_length={self.max_length})"
        )

    def check_layer(self, layer: int | None) -> int | None:
        """``layer`` if it is None (every layer) or an int in ``0..num_layers``, else ValueError with
        BERTScore's own message."""
        if layer is None:
            return None
        if not isinstance(layer, (int, np.integer)) or isinstance(layer, bool):
            raise TypeError(f"layer must be an int in 0..{self.num_layers} or None, got {layer!r}")
        if not 0 <= int(layer) <= self.num_layers:
            raise ValueError(
                f"layer={layer} is outside {self.model_id}'s {self.num_layers} layers. Invalid num_layers: num_layers should be between 0 and {self.num_layers} for {self.model_id}; give layer in 0..{self.num_layers} (0: the embedding output), or None for every layer"
            )
        return int(layer)

    @overload
    def tokenize(
        self, texts: Iterable[str], *, with_truncation: Literal[False] = ...
    ) -> list[np.ndarray]: ...
    @overload
    def tokenize(
        self, texts: Iterable[str], *, with_truncation: Literal[True]
    ) -> tuple[list[np.ndarray], np.ndarray]: ...
    def tokenize(
        self, texts: Iterable[str], *, with_truncation: bool = False
    ) -> list[np.ndarray] | tuple[list[np.ndarray], np.ndarray]:
        """Token ids of each text, int64, as ``bert_score.utils.sent_encode`` gives them
        (:class:`BertScoreTokenizer`); with ``with_truncation=True`` also a bool array saying which texts
        were cut at :attr:`max_length`."""
        encodings = self.tokenizer.encodings(check_texts(texts))
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        if not with_truncation:
            return ids
        return ids, np.fromiter((bool(e.overflowing) for e in encodings), dtype=bool, count=len(encodings))

    def encode(self, texts: Iterable[str], layer: int | None, batch_size: int = 32) -> TokenBatch:
        """The hidden states of every token of ``texts`` at ``layer`` (0: the embedding output,
        ``num_layers``: the last layer), or of every layer when ``layer`` is None; see :class:`TokenBatch`.

        float32, not normalised. Texts are tokenized as :meth:`tokenize` does and run in batches of at most
        ``batch_size`` texts of one token length: no padding, so a text's vectors do not depend on the other
        texts of the call."""
        layer = self.check_layer(layer)
        check_batch_size(batch_size)
        encodings = self.tokenizer.encodings(check_texts(texts))
        count = len(encodings)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=count)
        offsets = np.zeros(count + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        total = int(offsets[-1])
        token_ids = np.empty(total, dtype=np.int64)
        for i, enc in enumerate(encodings):
            token_ids[offsets[i] : offsets[i + 1]] = enc.ids
        truncated = np.fromiter((bool(e.overflowing) for e in encodings), dtype=bool, count=count)
        shape = (total, self.dim) if layer is not None else (self.num_layers + 1, total, self.dim)
        vectors = np.empty(shape, dtype=np.float32)
        if count:
            session = self._session(layer)
            batches = length_sorted_batches(encodings, batch_size)

            def run_batch(run, rows: np.ndarray) -> None:
                ids = np.stack([token_ids[offsets[r] : offsets[r + 1]] for r in rows])
                states = run(ids, np.ones_like(ids), np.zeros_like(ids))  # BERTScore feeds no token types
                expected = (
                    ids.shape + (self.dim,)
                    if layer is not None
                    else (self.num_layers + 1, *ids.shape, self.dim)
                )
                if states.shape != expected:
                    raise ModelError(
                        f"{session.path} returned an output of shape {states.shape}, expected {expected}; export the token layers again with `simkernel models export CHECKPOINT DST --token-layers`"
                    )
                for k, r in enumerate(rows):  # each batch writes its own rows' tokens only
                    vectors[..., offsets[r] : offsets[r + 1], :] = states[..., k, :, :]

            session.map_batches(run_batch, batches)
        return TokenBatch(vectors, offsets, token_ids, truncated, layer)

    def _session(self, layer: int | None):
        """The session of ``layer``'s graph (the all-layers graph for None), opened on first use."""
        found = self._sessions.get(layer)
        if found is None:
            with self._lock:
                found = self._sessions.get(layer)
                if found is None:
                    name = (
                        PRECISIONS[self.precision]
                        if layer is None
                        else layer_graph_name(self.precision, layer)
                    )
                    if not (self.model_path / name).is_file():
                        raise ModelError(
                            f"{self.model_path / name} is missing: the token-layers bundle is incomplete; export it again (`simkernel models prepare MODEL --token-layers --force`, or delete the folder so it is exported again)"
                        )
                    output = ALL_LAYERS_OUTPUT if layer is None else LAYER_OUTPUT
                    found = open_graph(
                        self.model_path,
                        name,
                        self.precision,
                        (output,),
                        threads=self.threads,
                        providers=self._providers,
                    )
                    self._sessions[layer] = found
        return found
