"""Packed passes: a BERT-family encoder graph cut at its attention cores, so that the dense layers of a
shared pass run over all of its tokens at once, with the same bits as the whole graph.

Why. A shared pass holds texts of many token lengths, and the whole graph runs one exact-length batch at a
time (:func:`~simkernel.runtime.inference.tokenizer.length_sorted_batches`: no padding, so a text's bits
never depend on its batch-mates). A pass of 30 short texts splits into about 12 such batches of 2-3 rows,
and each run of the graph reads every weight of the encoder: 42 MB for all-MiniLM-L6-v2 in fp32, more than
a 32 MB L3 holds, about 3.4 ms a run whatever its size (``python benchmarks/studies/shared_passes.py
--run-cost``). So small passes cost up to 1.5x the CPU per token of large ones.

How. :class:`EncoderStages` cuts the graph (with the ``onnx`` package) into

- ``embed``: the token, position and type embeddings and their LayerNorm, and the additive attention
  mask, run once per exact-length batch (the graph numbers the positions from the batch's width); or,
  where the position ids can be fed instead (:attr:`EncoderStages.packed_embeddings`), once over every
  token of the chunk with each text's positions from 0, the mask then all 0 (every text attends to all its
  tokens);
- for each layer, ``dense_in``: the query, key and value projections, run ONCE over every token of the
  chunk, the rows of all its batches stacked ``(1, tokens, hidden)``;
- ``attention``: the scaled scores, the mask, the softmax and the weighted values, run per exact-length
  batch on views of those rows (this stage has no weights): by simkernel's own kernel where it gives this
  stage's bits (``csrc/attention.h``, :attr:`EncoderStages.attention_kernel`: one C call per batch instead
  of an onnxruntime run of about 27 us of overhead), else by onnxruntime;
- ``dense_out``: the attention output projection, the residual, LayerNorm, the feed-forward layers and
  the second LayerNorm, again over every token at once.

A row of a matrix product, LayerNorm or GELU depends on that row only (onnxruntime's CPU kernels give the
same bits for a row in a matrix of any height and at any position: the contract
:mod:`~simkernel.runtime.inference.tokenizer` already relies on), and attention still sees exactly one
text length per run, so the chained stages give the whole graph's bits for every text. That is not taken
on trust: :meth:`EncoderStages.check` runs a probe of mixed lengths (Latin, Cyrillic and CJK texts,
:data:`PROBE_TEXTS`) through both and refuses the stages (:class:`StagesUnavailable`) unless every row is
bit-identical; before that, simkernel's attention kernel must give the attention stage's own bits on random
scores of every length of :data:`NATIVE_CHECK_LENGTHS`. The same holds for simkernel's per-row int8 graphs
(each token's activations are quantized on their own).

Each layer's weights are then read once per chunk instead of once per exact-length batch. Measured with
``python benchmarks/studies/shared_passes.py --packed`` (all-MiniLM-L6-v2 fp32, SAS texts, 2-core AMD
EPYC, two runs): a pass of 12 texts 164-166 us per token packed against 188-195 for the whole graph, 30
texts 133-134 against 152-167, 800 texts 121-122 against 117-134 (docs/design-notes.md).

A chunk runs on one thread (:meth:`EncoderStages.run_chunk`: single-threaded sessions, so that concurrent
chunks on the encoder's workers neither spin nor wait for each other's thread pools); a pass is cut into
chunks balanced by tokens to the row (:func:`chunk_rows`).

Graphs that cannot be cut this way (no per-layer ``query`` / ``key`` / ``value`` projections or
LayerNorms under the names transformers' BERT-family modules export, extra attention inputs such as
MPNet's relative position bias, OpenVINO's bf16) keep the whole graph: :class:`StagesUnavailable` says why.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from simkernel import _attention
from simkernel.runtime.inference.session import CPU_ONLY, model_feeds, session_options
from simkernel.runtime.inference.tokenizer import Batch

# A chunk's tokens, about (its activations stay within a few MB: 512 x 1,536 floats, all-MiniLM-L6-v2's
# feed-forward layer, are 3 MB). One call of 800 SAS texts, pairs/s with chunks of 256 / 512 / 1,024 /
# 2,048 tokens: 552 / 544 / 554 / 519, the whole graph 555 (benchmarks/bench_latency.py's one call).
CHUNK_TOKENS = 512
# The probe of EncoderStages.check: lengths from 3 to ~40 tokens, several scripts, several texts per length.
PROBE_TEXTS = (
    "ok",
    "no",
    "The answer is Paris.",
    "The capital is Paris.",
    "Столица Франции — Париж.",
    "法国的首都是巴黎。",
    "A longer answer that mentions the river Seine and the Eiffel Tower, built for the 1889 fair.",
    "Ответ длиннее: река Сена и Эйфелева башня, построенная к выставке 1889 года.",
    "埃菲尔铁塔建于1889年，位于塞纳河畔。",
)

# The lengths of the random texts on which simkernel's attention kernel must give the attention stage's bits
# before it replaces it (EncoderStages.check): every branch of the softmax's sums (16 / 48 lanes a step for
# AVX-512F, 8 / 24 for FMA3, and their tails) and of the kernel's own tiles (8 and 16 keys, 4 and 8 queries).
NATIVE_CHECK_LENGTHS = (2, 3, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 47, 48, 49, 50, 64, 65, 97, 130)

_QKV = re.compile(r"layer\.(\d+)/attention/self/(query|key|value)/Add_output_0$")
_LAYER_OUT = re.compile(r"layer\.(\d+)/output/LayerNorm/LayerNormalization_output_0$")
_EMBEDDINGS_OUT = re.compile(r"embeddings/LayerNorm/LayerNormalization_output_0$")


class StagesUnavailable(Exception):
    """The graph cannot run as packed stages (the message says why); it runs whole instead."""


@dataclasses.dataclass(frozen=True)
class StageNames:
    """The tensors an encoder graph is cut at."""

    hidden: list[str]  # the input of each layer, then the graph's output
    qkv: list[tuple[str, str, str]]  # per layer: the query, key and value projections
    context: list[str]  # per layer: the attention's output, before its own projection
    mask: str  # the additive attention mask the embedding stage computes
    # per layer: the scale of the scores (FusedMatMul's alpha) and the width of a head, when the core is
    # FusedMatMul(query, key^T, alpha) / Add(mask) / Softmax / MatMul(values), which simkernel's own kernel
    # (csrc/attention.h) can reproduce; None where it is shaped otherwise
    native: list[tuple[float, int] | None] = dataclasses.field(default_factory=list)
    # the position ids the position embeddings gather (computed in the graph from the batch's width), or
    # None: fed as an input, they let one run embed every token of a chunk (see run_chunk)
    positions: str | None = None


class EncoderStages:
    """The stages of one encoder graph (see the module docstring), as single-threaded onnxruntime
    sessions; :meth:`run_chunk` is safe to call from several threads at once."""

    def __init__(self, sessions: dict, names: StageNames, input_names: tuple[str, ...]) -> None:
        self._embed = sessions["embed"]
        self._embed_packed = sessions.get("embed_packed")  # all of a chunk's tokens at once, or None
        self._dense_in = sessions["dense_in"]
        self._attention = sessions["attention"]
        self._dense_out = sessions["dense_out"]
        self._hidden = names.hidden
        self._qkv = names.qkv
        self._context = names.context
        self._mask = names.mask
        self._native = names.native
        self._positions = names.positions
        self.input_names = input_names
        self.layers = len(self._qkv)
        # the sum of exp() simkernel's attention kernel reproduces (chosen by check), or None: onnxruntime's
        # attention stage runs instead
        self._sum_exp: str | None = None

    @classmethod
    def cut(cls, path: str | Path) -> EncoderStages:
        """The stages of the ONNX graph ``path`` (check them with :meth:`check` before use). Raises
        :class:`StagesUnavailable` naming what the graph lacks. The stages run on onnxruntime's CPU provider.
        Needs the ``onnx`` package (a dependency of simkernel)."""
        try:
            import onnx
            from onnx import TensorProto, helper
            from onnx.utils import Extractor
        except ImportError as exc:  # pragma: no cover - onnx is a dependency
            raise StagesUnavailable(f"the onnx package is missing ({exc}); pip install onnx") from exc
        import onnxruntime as ort

        path = Path(path)
        # the weights stay where they are: a stage's initializers point into the bundle's external data
        # file (onnxruntime maps it), so the stages add no copy of the weights but their packed forms
        model = onnx.load(str(path), load_external_data=False)
        graph = model.graph
        produced = {name: node for node in graph.node for name in node.output}
        qkv: dict[int, dict[str, str]] = {}
        layer_out: dict[int, str] = {}
        embeddings = None
        for name in produced:
            if m := _QKV.search(name):
                qkv.setdefault(int(m.group(1)), {})[m.group(2)] = name
            elif m := _LAYER_OUT.search(name):
                layer_out[int(m.group(1))] = name
            elif _EMBEDDINGS_OUT.search(name):
                embeddings = name
        layers = sorted(qkv)
        if not layers or layers != list(range(len(layers))) or embeddings is None:
            raise StagesUnavailable(
                f"{path} has no BERT-family layers (per-layer attention/self/query|key|value and LayerNorm outputs, embeddings/LayerNorm) to cut at"
            )
        output = graph.output[0].name
        last = produced.get(output)
        if layers[-1] not in layer_out and last is not None and last.op_type == "LayerNormalization":
            if f"layer.{layers[-1]}/output/LayerNorm" in last.name:  # the exporter named the output itself
                layer_out[layers[-1]] = output
        if any(len(qkv[i]) != 3 for i in layers) or sorted(layer_out) != layers:
            raise StagesUnavailable(
                f"{path}: some layers lack a query, key or value projection or an output LayerNorm"
            )
        output = graph.output[0].name
        if layer_out[layers[-1]] != output:
            raise StagesUnavailable(
                f"{path}: the graph's output {output!r} is not the last layer's LayerNorm"
            )
        hidden = [embeddings] + [layer_out[i] for i in layers]
        consumers: dict[str, list] = {}
        for node in graph.node:
            for name in node.input:
                consumers.setdefault(name, []).append(node)
        context: list[str] = []
        native: list[tuple[float, int] | None] = []
        mask: str | None = None
        for i in layers:
            found = _attention_nodes(graph, produced, consumers, qkv[i]["value"], i)
            if found is None:
                raise StagesUnavailable(
                    f"{path}: layer {i}'s attention is not softmax(scores + mask) @ values"
                )
            context.append(found[0])
            native.append(_native_attention(graph, produced, found[2], found[3], qkv[i]))
            if mask not in (None, found[1]):
                raise StagesUnavailable(f"{path}: the layers do not share one attention mask")
            mask = found[1]
        assert mask is not None  # every layer has one (found above)
        known = {v.name for v in graph.value_info} | {o.name for o in graph.output}
        for name in [
            *hidden,
            *context,
            mask,
            *(qkv[i][k] for i in layers for k in ("query", "key", "value")),
        ]:
            if name not in known:
                graph.value_info.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
        gathers = [n for n in graph.node if n.op_type == "Gather" and "position_embeddings" in n.name]
        positions = gathers[0].input[1] if len(gathers) == 1 and gathers[0].input[1] in produced else None
        if positions is not None and positions not in known:
            graph.value_info.append(helper.make_tensor_value_info(positions, TensorProto.INT64, None))
        extractor = Extractor(model)
        inputs = tuple(i.name for i in graph.input)
        names = StageNames(
            hidden,
            [(qkv[i]["query"], qkv[i]["key"], qkv[i]["value"]) for i in layers],
            context,
            mask,
            native,
            positions,
        )

        def session(stage):
            options = session_options(1, "basic")  # the graph was optimised before it was cut
            options.add_session_config_entry(
                "session.model_external_initializers_file_folder_path", str(path.parent)
            )
            try:
                return ort.InferenceSession(
                    stage.SerializeToString(),
                    sess_options=options,
                    providers=list(CPU_ONLY),
                )
            except Exception as exc:  # onnxruntime's own classes: a stage that does not stand alone
                raise StagesUnavailable(f"{path}: a stage of the cut graph does not load: {exc}") from exc

        try:
            sessions = {
                "embed": session(extractor.extract_model(list(inputs), [hidden[0], mask])),
                "dense_in": [
                    session(extractor.extract_model([hidden[i]], list(names.qkv[i]))) for i in layers
                ],
                "attention": [
                    session(extractor.extract_model([*names.qkv[i], hidden[i], mask], [context[i]]))
                    for i in layers
                ],
                "dense_out": [
                    session(extractor.extract_model([context[i], hidden[i]], [hidden[i + 1]])) for i in layers
                ],
            }
        except StagesUnavailable:
            raise
        except Exception as exc:  # onnx's extractor: a stage needs a tensor from outside its inputs
            raise StagesUnavailable(f"{path}: the graph does not cut at its attention cores: {exc}") from exc
        if positions is not None:
            token_inputs = [name for name in inputs if name != "attention_mask"]
            try:
                packed = session(extractor.extract_model([*token_inputs, positions], [hidden[0]]))
            except Exception:  # the embeddings depend on more than the tokens: they are computed per batch
                packed = None
            if packed is not None and {x.name for x in packed.get_inputs()} == {*token_inputs, positions}:
                sessions["embed_packed"] = packed
        for i in layers:
            attention_inputs = {x.name for x in sessions["attention"][i].get_inputs()}
            if attention_inputs != {*names.qkv[i], hidden[i], mask}:
                raise StagesUnavailable(f"{path}: layer {i}'s attention reads {sorted(attention_inputs)}")
        return cls(sessions, names, inputs)

    @property
    def packed_embeddings(self) -> bool:
        """True when a chunk's embeddings come from one run over all its tokens (else one run per batch)."""
        return self._embed_packed is not None

    @property
    def attention_kernel(self) -> str:
        """Who computes the attention cores: ``"simkernel (avx512f)"`` / ``"simkernel (fma3)"`` (the kernel of
        csrc/attention.h, reproducing onnxruntime's softmax for that instruction set) or ``"onnxruntime"``."""
        return f"simkernel ({self._sum_exp})" if self._sum_exp else "onnxruntime"

    def check(
        self,
        run_whole: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
        probe: Sequence[Batch],
        where: str,
    ) -> None:
        """Raise :class:`StagesUnavailable` unless :meth:`run_chunk` gives the whole graph's bits
        (``run_whole(input_ids, attention_mask, token_type_ids)``, e.g.
        :meth:`~simkernel.runtime.inference.session.OnnxEncoderSession.run`) on every exact-length batch of
        ``probe``, all in one chunk. ``where`` names the graph in the error.

        First with the embeddings of a chunk in one run (where the graph allows it), then per batch; each with
        simkernel's attention kernel, for each sum of exp() this CPU runs (:attr:`attention_kernel`), kept when
        it gives the attention stage's bits on random scores of every length :data:`NATIVE_CHECK_LENGTHS` and
        the whole graph's on the probe; else with onnxruntime's attention stage."""
        expected = [
            np.asarray(run_whole(b.input_ids, b.attention_mask, b.token_type_ids), dtype=np.float32)
            for b in probe
        ]

        def matches() -> bool:
            packed = self.run_chunk(probe)
            return all(np.array_equal(want, rows) for want, rows in zip(expected, packed, strict=True))

        kernel_ok: dict[str, bool] = {}  # the kernel against the attention stage, once per sum of exp()
        embeddings = [self._embed_packed, None] if self._embed_packed is not None else [None]
        for embed_packed in embeddings:
            self._embed_packed = embed_packed
            for sum_exp in self._native_candidates():
                self._sum_exp = sum_exp
                try:
                    if sum_exp not in kernel_ok:
                        kernel_ok[sum_exp] = self._native_matches_stage(probe[0], sum_exp)
                    if kernel_ok[sum_exp] and matches():
                        return
                except (ValueError, RuntimeError, MemoryError):  # a shape or CPU the kernel refuses
                    kernel_ok[sum_exp] = False
            self._sum_exp = None
            if matches():
                return
        for batch, want, rows in zip(probe, expected, self.run_chunk(probe), strict=True):
            if not np.array_equal(want, rows):
                length = batch.input_ids.shape[1]
                raise StagesUnavailable(
                    f"{where}: the packed stages differ from the whole graph on the probe's texts of {length} tokens (max |diff| {np.max(np.abs(want - rows)):.3g}); the whole graph is used"
                )

    def _native_candidates(self) -> list[str]:
        """The sums of exp() to try: none unless every layer's core is the kernel's (StageNames.native)."""
        if not self._native or any(core is None for core in self._native):
            return []
        return [sum_exp for sum_exp in _attention.SUM_EXP if _attention.supported(sum_exp)]

    def _native_matches_stage(self, batch: Batch, sum_exp: str) -> bool:
        """True when the kernel gives each distinct layer core's own attention stage bits on random inputs of
        every length of :data:`NATIVE_CHECK_LENGTHS` (2 texts each), scores of two magnitudes (within and
        beyond the range where onnxruntime's exp() clamps), with an all-zero mask and with masked keys.
        ``batch``: any batch of the model, to learn the width of its projections."""
        (tokens, _) = self._embed.run(
            None, model_feeds(self.input_names, batch.input_ids, batch.attention_mask, batch.token_type_ids)
        )
        rng = np.random.default_rng(0)
        seen = set()
        for layer, core in enumerate(self._native):
            if core in seen:
                continue
            seen.add(core)
            alpha, width = core  # type: ignore[misc]  # checked by _native_candidates
            projected = self._dense_in[layer].run(None, {self._hidden[layer]: tokens[:, :1]})[0].shape[-1]
            for length in NATIVE_CHECK_LENGTHS:
                for magnitude in (4.0, 40.0):
                    rows = 2
                    query, key, value = (
                        (rng.standard_normal((rows * length, projected)) * magnitude).astype(np.float32)
                        for _ in range(3)
                    )
                    mask = np.zeros((rows, 1, length, length), dtype=np.float32)
                    if magnitude > 4.0 and length > 2:
                        mask[1, :, :, length // 2 :] = np.finfo(np.float32).min  # the second text padded
                    want = self._stage_attention(layer, query, key, value, query, mask, rows, length)
                    got = np.empty_like(query)
                    heads = query.shape[1] // width
                    _attention.attention(query, key, value, mask, rows, length, heads, alpha, sum_exp, got)
                    if not np.array_equal(want, got):
                        return False
        return True

    def _stage_attention(
        self,
        layer: int,
        query: np.ndarray,
        key: np.ndarray,
        value: np.ndarray,
        hidden: np.ndarray,
        mask: np.ndarray,
        rows: int,
        length: int,
    ) -> np.ndarray:
        """onnxruntime's attention stage of ``layer`` on one exact-length batch: ``rows`` texts of ``length``
        tokens, ``query``, ``key``, ``value`` and the layer's input ``hidden`` as ``(rows * length, width)``
        rows, ``mask`` the graph's additive mask; the context as ``(rows * length, width)`` rows."""
        query_name, key_name, value_name = self._qkv[layer]
        (out,) = self._attention[layer].run(
            None,
            {
                query_name: query.reshape(rows, length, -1),
                key_name: key.reshape(rows, length, -1),
                value_name: value.reshape(rows, length, -1),
                self._hidden[layer]: hidden.reshape(rows, length, -1),
                self._mask: mask,
            },
        )
        return out.reshape(rows * length, -1)

    def run_chunk(self, batches: Sequence[Batch]) -> list[np.ndarray]:
        """The token embeddings (float32 ``(rows, length, hidden)``) of each exact-length batch of a chunk,
        computed in the calling thread: the embeddings per batch, then each layer's dense stages once over
        all the chunk's tokens and its attention per batch."""
        shapes = [batch.input_ids.shape for batch in batches]
        if any(len(shape) != 2 or 0 in shape for shape in shapes):
            raise ValueError(f"batches must be non-empty (rows, length) arrays, got shapes {shapes}")
        if self._embed_packed is not None and all(batch.attention_mask.all() for batch in batches):
            # one run for every token: each text's positions fed from 0 (the graph computes them per batch),
            # and every text attends to all its tokens: the additive mask is 0 (what the graph computes then)
            feeds = {
                name: np.concatenate([getattr(batch, name).reshape(-1) for batch in batches])[None]
                for name in self.input_names
                if name != "attention_mask"
            }
            feeds[self._positions] = np.concatenate(  # type: ignore[index]  # set with _embed_packed
                [np.tile(np.arange(length, dtype=np.int64), rows) for rows, length in shapes]
            )[None]
            (hidden,) = self._embed_packed.run(None, feeds)
            masks = [np.zeros((rows, 1, length, length), dtype=np.float32) for rows, length in shapes]
        else:
            embedded = [
                self._embed.run(
                    None,
                    model_feeds(
                        self.input_names, batch.input_ids, batch.attention_mask, batch.token_type_ids
                    ),
                )
                for batch in batches
            ]
            hidden = np.concatenate([tokens.reshape(-1, tokens.shape[-1]) for tokens, _ in embedded])[None]
            # (rows, 1, length, length), as simkernel's attention kernel reads it (a graph may broadcast it)
            masks = [
                np.ascontiguousarray(np.broadcast_to(mask, (rows, 1, length, length)), dtype=np.float32)
                for (_, mask), (rows, length) in zip(embedded, shapes, strict=True)
            ]
        bounds = np.cumsum([0] + [rows * length for rows, length in shapes]).tolist()
        width = hidden.shape[-1]
        for layer in range(self.layers):
            layer_in = self._hidden[layer]
            query, key, value = self._dense_in[layer].run(None, {layer_in: hidden})
            context = np.empty_like(query)
            for k, (rows, length) in enumerate(shapes):
                span = slice(bounds[k], bounds[k + 1])
                if self._sum_exp is not None:
                    alpha, head_width = self._native[layer]  # type: ignore[misc]  # set with _sum_exp (check)
                    _attention.attention(
                        query[0, span],
                        key[0, span],
                        value[0, span],
                        masks[k],
                        rows,
                        length,
                        query.shape[-1] // head_width,
                        alpha,
                        self._sum_exp,
                        context[0, span],
                    )
                else:
                    context[0, span] = self._stage_attention(
                        layer,
                        query[0, span],
                        key[0, span],
                        value[0, span],
                        hidden[0, span],
                        masks[k],
                        rows,
                        length,
                    )
            (hidden,) = self._dense_out[layer].run(None, {self._context[layer]: context, layer_in: hidden})
        return [
            np.asarray(hidden[0, bounds[k] : bounds[k + 1]].reshape(rows, length, width), dtype=np.float32)
            for k, (rows, length) in enumerate(shapes)
        ]


def _attention_nodes(graph, produced: dict, consumers: dict, value: str, layer: int):
    """(context, mask, scores node, values node) of a layer: the Softmax over ``scores + mask`` whose weights
    multiply (the values node, a MatMul) the values projected into ``value``, then the transpose and reshape
    back to ``(rows, length, heads x width)`` (context); or None. ``produced``: tensor -> the node that
    outputs it; ``consumers``: tensor -> the nodes that read it."""
    marker = f"layer.{layer}/"
    for softmax in (n for n in graph.node if n.op_type == "Softmax" and marker in n.name):
        add = produced.get(softmax.input[0])
        if add is None or add.op_type != "Add":
            return None
        scores = [x for x in add.input if x in produced and marker in produced[x].name]
        masks = [x for x in add.input if x not in scores]
        weighted = [n for n in consumers.get(softmax.output[0], []) if n.op_type == "MatMul"]
        if len(scores) != 1 or len(masks) != 1 or len(weighted) != 1:
            return None
        node = weighted[0]
        # the values: Add (projection) -> Reshape -> Transpose -> the MatMul's second input
        back = produced.get(node.input[1])
        while back is not None and back.op_type in ("Transpose", "Reshape"):
            back = produced.get(back.input[0])
        if back is None or back.output[0] != value:
            return None
        for op in ("Transpose", "Reshape"):
            following = consumers.get(node.output[0], [])
            if len(following) != 1 or following[0].op_type != op:
                return None
            node = following[0]
        return node.output[0], masks[0], produced[scores[0]], weighted[0]
    return None


def _native_attention(
    graph, produced: dict, scores, weighted, qkv: dict[str, str]
) -> tuple[float, int] | None:
    """(alpha, head width) when a layer's attention core is the one simkernel's kernel reproduces
    (csrc/attention.h): ``FusedMatMul(transpose(query heads), transpose(key heads), alpha)``, the mask added,
    Softmax, then ``MatMul(weights, transpose(value heads))``, the heads split by a Reshape to
    ``(rows, length, heads, width)`` with a constant width; else None (onnxruntime runs it)."""
    from onnx import helper, numpy_helper

    if scores.op_type != "FusedMatMul":
        return None
    attributes = {a.name: helper.get_attribute_value(a) for a in scores.attribute}
    if any(attributes.get(flag, 0) for flag in ("transA", "transB", "transBatchA", "transBatchB")):
        return None
    initializers = {i.name: i for i in graph.initializer}

    def heads_of(tensor: str, perm: list[int], projection: str) -> int | None:
        """The head width of ``tensor`` = Transpose(perm) of Reshape(projection, (.., .., -1 or heads, width))."""
        transpose = produced.get(tensor)
        if transpose is None or transpose.op_type != "Transpose":
            return None
        if list(helper.get_attribute_value(transpose.attribute[0])) != perm:
            return None
        reshape = produced.get(transpose.input[0])
        if reshape is None or reshape.op_type != "Reshape" or reshape.input[0] != projection:
            return None
        shape = reshape.input[1]
        if shape in initializers:
            width = int(numpy_helper.to_array(initializers[shape]).reshape(-1)[-1])
        elif (
            shape in produced
            and produced[shape].op_type == "Concat"
            and produced[shape].input[-1] in initializers
        ):
            width = int(numpy_helper.to_array(initializers[produced[shape].input[-1]]).reshape(-1)[-1])
        else:
            return None
        return width if width > 0 else None

    widths = {
        heads_of(scores.input[0], [0, 2, 1, 3], qkv["query"]),
        heads_of(scores.input[1], [0, 2, 3, 1], qkv["key"]),
        heads_of(weighted.input[1], [0, 2, 1, 3], qkv["value"]),
    }
    width = widths.pop()
    if widths or width is None:  # the three disagree, or one is not a constant
        return None
    return float(np.float32(attributes.get("alpha", 1.0))), width


def chunk_rows(
    batches: Sequence[np.ndarray], lengths: Sequence[int], workers: int, chunk_tokens: int = CHUNK_TOKENS
) -> list[list[np.ndarray]]:
    """Cut a pass's exact-length batches (``batches``: arrays of row indices, in pass order; ``lengths``:
    each batch's token length) into chunks balanced by tokens to the row.

    - How many: one per worker, or as many as keep a chunk near ``chunk_tokens``, rounded up to a multiple
      of ``workers`` (3 equal chunks on 2 workers keep one worker busy for two while the other waits); never
      more chunks than rows.
    - Where: each cut is the row boundary nearest to its share of the tokens. A batch that straddles a cut
      is split between its two chunks; both pieces still hold one token length, so no row's bits change.
      (Cutting between whole batches only left the chunks of a 28-text pass of short texts up to 2x apart,
      42 against 89 tokens, and the pass waits for its longest chunk.)

    A chunk is a list of pieces of batches, each an array of row indices of one length, in pass order."""
    sizes = [len(rows) for rows in batches]
    if not sum(sizes):
        return []
    row_tokens = np.repeat(np.asarray(lengths, dtype=np.int64), sizes)
    ends = np.cumsum(row_tokens)  # the pass's tokens up to and including each row
    total, count = int(ends[-1]), len(row_tokens)
    wanted = min(count, -(-max(workers, -(-total // chunk_tokens)) // workers) * workers)
    cuts = [0]  # rows before each cut
    for j in range(1, wanted):
        target = total * j / wanted
        row = int(np.searchsorted(ends, target))  # the row that reaches the target: cut before or after it
        before = int(ends[row - 1]) if row else 0
        cut = row + 1 if ends[row] - target < target - before else row
        cuts.append(min(max(cut, cuts[-1] + 1), count - (wanted - j)))
    cuts.append(count)
    rows = np.concatenate(batches)
    batch_of_row = np.repeat(np.arange(len(batches)), sizes)
    chunks = []
    for a, b in itertools.pairwise(cuts):
        pieces = np.flatnonzero(np.diff(batch_of_row[a:b])) + 1  # where the next batch starts
        chunks.append(np.split(rows[a:b], pieces))
    return chunks
