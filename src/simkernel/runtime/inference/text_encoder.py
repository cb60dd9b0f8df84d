"""``BundleTextEncoder``: sentence embeddings of a bi-encoder bundle on onnxruntime, matching
sentence-transformers."""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, overload

import numpy as np

from simkernel.errors import ModelError
from simkernel.runtime.inference.batcher import make_batcher
from simkernel.runtime.inference.bundle import check_precision, onnx_file, open_bundle, refuse_token_layers
from simkernel.runtime.inference.cache_settings import resolve_cache_dir
from simkernel.runtime.inference.config import ModelConfig, read_model_config
from simkernel.runtime.inference.disk_cache import DiskEmbeddingCache
from simkernel.runtime.inference.embedding_cache import EmbeddingCache
from simkernel.runtime.inference.encode_options import cosine_matrix, finish, prepare
from simkernel.runtime.inference.huge_pages import HugePageReport, collapsed_while_loading
from simkernel.runtime.inference.inputs import check_batch_size, check_texts
from simkernel.runtime.inference.packed_passes import (
    PROBE_TEXTS,
    EncoderStages,
    StagesUnavailable,
    chunk_rows,
)
from simkernel.runtime.inference.pooling import l2_normalize, pool
from simkernel.runtime.inference.session import TOKEN_EMBEDDING_OUTPUTS, OnnxEncoderSession
from simkernel.runtime.inference.tokenizer import length_sorted_batches
from simkernel.runtime.store.bundle_digest import bundle_digest

# Held while a graph is cut into packed stages (a background thread, see prepare_packed_passes): a fork
# waits for it, so that no child starts with onnxruntime's or the allocator's locks held by a cut that does
# not exist in the child (its first pass would wait forever).
_CUTTING = threading.Lock()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_CUTTING.acquire, after_in_parent=_CUTTING.release, after_in_child=_CUTTING.release
    )

DEFAULT_CACHE_SIZE = 10_000
INLINE_TEXTS = 64  # aencode checks and tokenizes a call of at most this many texts on the event loop


class BundleTextEncoder:
    """Embed texts with a sentence-transformers bi-encoder exported to ONNX, loaded from a bundle folder.

    The core of :class:`simkernel.runtime.TextEncoder`, which resolves a model name to its bundle folder
    first (this class never resolves names, downloads or exports). ``folder`` is a bundle folder;
    ``name`` is what the caller called the model (kept in :attr:`model` and named in errors; default the
    folder). The other arguments are :class:`simkernel.runtime.TextEncoder`'s:

    Args:
        precision: ``"fp32"`` (``model.onnx``) or ``"int8"`` (``model_int8.onnx``). Bundles exported by
            simkernel use per-row int8 (each token's activations scaled on their own: an embedding never
            depends on its batch-mates; min cosine 0.964-0.970 vs fp32 with the CPU's int8 kernel, SAS
            Spearman within 0.0005, ~1.6x faster);
            for hub models simkernel makes the same per-row int8 from the downloaded fp32 graph when the
            ``onnx`` package is installed, else it uses the repo's own int8 file (onnxruntime dynamic
            quantisation, batch-dependent; a warning says so). See docs/design-notes.md.
            ``"bf16"``: ``model.onnx`` on OpenVINO's CPU plugin computing in bf16, only on CPUs with
            native bf16 (avx512_bf16 / amx_bf16; elsewhere a PrecisionUnavailableError says what the CPU
            lacks) with the ``openvino`` extra: near-fp32 accuracy at int8-like speed on long texts
            (:mod:`simkernel.runtime.inference.bf16`).
        threads: CPU threads. A call with one batch runs it on this many onnxruntime intra-op threads;
            a call with several batches runs them on this many worker threads, one whole batch each
            (single-threaded: faster on short texts, see :class:`OnnxEncoderSession`). None: the CPUs
            this process may use (affinity mask and cgroup quota, :mod:`simkernel.cpu_budget`), at most
            8 workers.
        providers: onnxruntime execution providers (default CPU), checked against those available
            (fp32 and int8; bf16 runs on OpenVINO's CPU plugin).
        cache_size: entries of the LRU embedding cache shared by all calls (text -> vector;
            0 disables it). A repeated text is served from the cache: ~4 x dim bytes per entry.
        cache_dir: a folder for the persistent embedding cache shared across runs and processes
            (:mod:`simkernel.runtime.inference.disk_cache`; keyed by the bundle's checksum, the precision
            and the exact text); None: ``$SIMKERNEL_CACHE_DIR`` if set, else off. With it, the
            onnxruntime session opens at the first text the caches do not hold (a run served entirely
            from the cache never loads the model).
        batching: share forward passes between concurrent calls (:mod:`simkernel.runtime.inference.batcher`):
            while a pass runs, the texts of other calls (threads or asyncio tasks) queue and go into the
            next pass together; a lone call runs at once, and a text gives the same bits either way.
            None: ``$SIMKERNEL_BATCHING`` (``0`` turns it off), else on. The first time a call queues
            behind a pass, the graph is cut into packed stages in the background
            (:meth:`prepare_packed_passes`): later passes run each dense layer once over all their tokens.
        max_batch_tokens: tokens per shared pass (None: ``$SIMKERNEL_MAX_BATCH_TOKENS``, else 4,096); a
            larger call is run a pass's worth at a time, taking turns with the others.
        max_queue: calls that may wait for a pass (None: ``$SIMKERNEL_MAX_QUEUE``, else 1,024); one
            more raises :class:`~simkernel.errors.QueueFullError`.

    The pipeline is sentence-transformers': tokenization truncated at ``max_seq_length``, pooling per
    ``1_Pooling/config.json``, L2 normalisation when ``modules.json`` has a Normalize module. Thread-safe:
    many threads may call :meth:`encode` on one instance, and asyncio tasks :meth:`aencode`.
    """

    def __init__(
        self,
        folder: str | Path,
        precision: str = "fp32",
        threads: int | None = None,
        providers: list[str] | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        *,
        name: str | Path | None = None,
        cache_dir: str | os.PathLike | None = None,
        batching: bool | None = None,
        max_batch_tokens: int | None = None,
        max_queue: int | None = None,
    ) -> None:
        check_precision(precision)
        self._cache = EmbeddingCache(cache_size)
        self._batcher = make_batcher(
            self._run_pass,
            lambda texts: self._tokenizer.encode(texts),
            batching,
            max_batch_tokens,
            max_queue,
            name or folder,
            on_shared=self._prepare_packed_passes_in_background,
            on_rows=self._cache.put_many,  # the pass's thread caches a pass's rows at once, not each caller
        )
        self._stages: EncoderStages | None = None
        self.packed_status = "not prepared"  # see prepare_packed_passes
        self.packed_passes = 0  # passes run as packed stages (for tests and metrics)
        # what the stages' memory got of huge pages (see prepare_packed_passes and huge_pages)
        self.packed_huge_pages = HugePageReport()
        cache_folder = resolve_cache_dir(cache_dir)
        folder = Path(folder)
        model = str(folder) if name is None else name
        config = read_model_config(folder)
        if config.kind != "bi-encoder":
            raise ModelError(
                f"{model!r} is a cross-encoder (architectures {list(config.architectures)}): it scores pairs and gives no embeddings; use simkernel.CrossEncoder for it"
            )
        if config.unsupported_modules:
            raise ModelError(
                f"{model!r} has sentence-transformers modules {list(config.unsupported_modules)} that simkernel does not run (only Transformer, Pooling, Normalize); its embeddings would be wrong"
            )
        refuse_token_layers(folder)
        onnx_file(folder, precision)  # a missing graph fails here, not at the first text
        self._open = lambda: open_bundle(
            folder,
            config,
            precision,
            TOKEN_EMBEDDING_OUTPUTS,
            threads=threads,
            providers=providers,
            lowercase=config.do_lower_case,
        )
        self._runtime: tuple | None = None
        self._runtime_lock = threading.Lock()
        self.disk_cache: DiskEmbeddingCache | None = None
        self._disk_key = ""
        if cache_folder is not None:
            self.disk_cache = DiskEmbeddingCache(cache_folder)
            self._disk_key = bundle_digest(folder, precision, self.disk_cache.file_hash)
        else:
            self._loaded()
        self.model = str(model)
        self.model_path = folder
        self.precision = precision
        self.threads = threads
        self.config: ModelConfig = config
        self._dim = config.dim

    def _loaded(self) -> tuple:
        """(onnxruntime session, tokenizer), opened on first use."""
        if self._runtime is None:
            with self._runtime_lock:
                if self._runtime is None:
                    self._runtime = self._open()
        return self._runtime

    @property
    def _session(self):
        return self._loaded()[0]

    @property
    def _tokenizer(self):
        return self._loaded()[1]

    @property
    def dim(self) -> int:
        """Dimension of the embeddings."""
        if self._dim is None:
            self._dim = int(self._run_pass(self._tokenizer.encode(["dim probe"]), 1).shape[1])  # not cached
        return self._dim

    @property
    def max_seq_length(self) -> int:
        """Longest input in tokens (special tokens included); longer texts are truncated."""
        return self._tokenizer.max_length

    @property
    def cache(self) -> EmbeddingCache:
        return self._cache

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, precision={self.precision!r}, dim={self._dim}, "
            f"max_seq_length={self.max_seq_length}, path={str(self.model_path)!r})"
        )

    @overload
    def encode(
        self,
        texts: str | Iterable[str],
        batch_size: int = ...,
        normalize: bool | None = ...,
        *,
        show_progress_bar: bool | None = ...,
        convert_to_numpy: Literal[False],
        convert_to_tensor: bool = ...,
        normalize_embeddings: bool | None = ...,
    ) -> list[np.ndarray]: ...
    @overload
    def encode(
        self,
        texts: str | Iterable[str],
        batch_size: int = ...,
        normalize: bool | None = ...,
        *,
        show_progress_bar: bool | None = ...,
        convert_to_numpy: Literal[True] = ...,
        convert_to_tensor: bool = ...,
        normalize_embeddings: bool | None = ...,
    ) -> np.ndarray: ...
    def encode(
        self,
        texts: str | Iterable[str],
        batch_size: int = 32,
        normalize: bool | None = None,
        *,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        normalize_embeddings: bool | None = None,
    ) -> np.ndarray | list[np.ndarray]:
        """Embeddings of ``texts``, float32 (n, dim), in the input order.

        Identical texts are embedded once per call (and served from the cache across calls); the
        texts are batched by token length (less padding) and the order restored. ``normalize=True`` (the
        default) L2-normalises the rows (``x / max(||x||, 1e-12)``); ``False`` returns what the model's
        sentence-transformers pipeline gives (already unit-length when it has a Normalize module).

        ``SentenceTransformer.encode``'s arguments work as there (:mod:`.encode_options`): a single string
        gives one 1-D vector, ``convert_to_numpy=False`` a list of 1-D arrays, ``normalize_embeddings`` is
        ``normalize`` (given alone, it wins over the default), ``show_progress_bar=True`` prints one line on
        stderr, ``convert_to_tensor=True`` raises ValueError (no torch).
        """
        started = time.perf_counter()
        items, single, unit = prepare(
            texts, normalize, normalize_embeddings, convert_to_numpy, convert_to_tensor
        )
        plan = self._plan(items, batch_size)
        if plan is None:
            out = np.empty((0, self.dim), dtype=np.float32)
        else:
            fresh = self._embed(plan.missing_texts, batch_size) if plan.missing else None
            out = self._assemble(plan, fresh, unit)
        return finish(out, single, convert_to_numpy, show_progress_bar, batch_size, started)

    @overload
    async def aencode(
        self,
        texts: str | Iterable[str],
        batch_size: int = ...,
        normalize: bool | None = ...,
        *,
        show_progress_bar: bool | None = ...,
        convert_to_numpy: Literal[False],
        convert_to_tensor: bool = ...,
        normalize_embeddings: bool | None = ...,
    ) -> list[np.ndarray]: ...
    @overload
    async def aencode(
        self,
        texts: str | Iterable[str],
        batch_size: int = ...,
        normalize: bool | None = ...,
        *,
        show_progress_bar: bool | None = ...,
        convert_to_numpy: Literal[True] = ...,
        convert_to_tensor: bool = ...,
        normalize_embeddings: bool | None = ...,
    ) -> np.ndarray: ...
    async def aencode(
        self,
        texts: str | Iterable[str],
        batch_size: int = 32,
        normalize: bool | None = None,
        *,
        show_progress_bar: bool | None = None,
        convert_to_numpy: bool = True,
        convert_to_tensor: bool = False,
        normalize_embeddings: bool | None = None,
    ) -> np.ndarray | list[np.ndarray]:
        """:meth:`encode` for asyncio code (the same arguments): the same rows, bit for bit, awaited without
        blocking the event loop. With batching on, the texts join the model's queue and share a forward pass
        with the other callers; a cancelled task's texts that have not gone into a pass are dropped. Large
        calls (or a disk cache) are checked, looked up and tokenized in a worker thread."""
        from simkernel.runtime.inference.batcher import run_async
        from simkernel.runtime.inference.threads import run_blocking

        started = time.perf_counter()
        texts, single, unit = prepare(
            texts, normalize, normalize_embeddings, convert_to_numpy, convert_to_tensor
        )
        items = check_texts(texts)
        if self._runtime is None or len(items) > INLINE_TEXTS or self.disk_cache is not None:
            plan = await run_blocking(self._plan, items, batch_size)
        else:
            plan = self._plan(items, batch_size)
        if plan is None:
            out = np.empty((0, self.dim), dtype=np.float32)
        else:
            fresh = None
            if plan.missing:
                if self._batcher is None:
                    fresh = await run_blocking(self._embed, plan.missing_texts, batch_size)
                elif len(plan.missing) > INLINE_TEXTS:  # tokenized in a worker, beside the passes
                    encodings = await run_blocking(self._tokenizer.encode, plan.missing_texts)
                    fresh = await run_async(self._batcher, plan.missing_texts, batch_size, encodings)
                else:  # tokenized by the thread that runs the passes
                    fresh = await run_async(self._batcher, plan.missing_texts, batch_size)
            out = self._assemble(plan, fresh, unit)
        return finish(out, single, convert_to_numpy, show_progress_bar, batch_size, started)

    def similarity(self, a: Sequence | np.ndarray, b: Sequence | np.ndarray) -> np.ndarray:
        """Cosine similarity matrix of two sets of embeddings, float32 (len(a), len(b)):
        ``SentenceTransformer.similarity`` with its default cosine (a numpy array, not a tensor)."""
        return cosine_matrix(a, b)

    def _plan(self, texts: Iterable[str], batch_size: int) -> _EncodePlan | None:
        """The distinct texts of a call and which of them the caches hold (None for no texts)."""
        items = check_texts(texts)
        check_batch_size(batch_size)
        if not items:
            return None
        slots: dict[str, int] = {}
        inverse = np.fromiter(
            (slots.setdefault(t, len(slots)) for t in items), dtype=np.int64, count=len(items)
        )
        unique = list(slots)
        cached = self._cached(unique)
        missing = [i for i, v in enumerate(cached) if v is None]
        return _EncodePlan(unique, inverse, cached, missing)

    def _assemble(self, plan: _EncodePlan, fresh: np.ndarray | None, normalize: bool) -> np.ndarray:
        """The call's rows from the cached vectors and the ``fresh`` ones (already in the memory cache: see
        :meth:`_embed`; the disk cache takes them here)."""
        unique, cached, missing = plan.unique, plan.cached, plan.missing
        if fresh is not None and len(missing) == len(unique):
            vectors = fresh  # nothing came from a cache: the rows are in the order of the distinct texts
        else:
            width = fresh.shape[1] if fresh is not None else next(v for v in cached if v is not None).shape[0]
            vectors = np.empty((len(unique), width), dtype=np.float32)
            for i, vector in enumerate(cached):
                if vector is not None:
                    vectors[i] = vector
            if fresh is not None:
                vectors[missing] = fresh
        if fresh is not None and self.disk_cache is not None:  # the memory cache has them (see _embed)
            self.disk_cache.put_many(self._disk_key, plan.missing_texts, fresh)
        out = vectors if len(unique) == len(plan.inverse) else vectors[plan.inverse]  # no text twice: as is
        return l2_normalize(out) if normalize else out

    def _cached(self, texts: list[str]) -> list[np.ndarray | None]:
        """The vector of each text from the memory cache, else the disk cache (then kept in memory)."""
        found = self._cache.get_many(texts)
        if self.disk_cache is None:
            return found
        missing = [i for i, v in enumerate(found) if v is None]
        if missing:
            positions, matrix = self.disk_cache.lookup(self._disk_key, [texts[i] for i in missing])
            if matrix is not None:
                for row, k in enumerate(positions):
                    found[missing[k]] = matrix[row]
                self._cache.put_many([texts[missing[k]] for k in positions], matrix)
        return found

    def _embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Run the model on distinct texts: through the batcher (sharing a pass with concurrent calls)
        when batching is on, else in a pass of their own. Either way the rows are in the memory cache on
        return (the batcher's thread caches each pass's rows)."""
        if self._batcher is None:
            fresh = self._run_pass(self._tokenizer.encode(texts), batch_size)
            self._cache.put_many(texts, fresh)
            return fresh
        return self._batcher.run(texts, batch_size)

    def prepare_packed_passes(self) -> bool:
        """Cut the model's graph into packed stages now (:mod:`simkernel.runtime.inference.packed_passes`),
        checked bit for bit against the whole graph on a probe; True when passes now run packed.

        The batcher does this by itself, in a background thread, the first time calls queue behind a
        pass (the model is shared: a server, threads, asyncio tasks); until it is done, passes run the
        whole graph (the same bits). It costs 0.7 s of CPU once (importing ``onnx``, cutting, the probe) and
        memory for the stages' packed weights (RSS +100 MB for all-MiniLM-L6-v2 fp32, +70 MB int8; the
        weights themselves stay mapped from the bundle's file). :attr:`packed_status` says
        ``"ready"``, or why not (``"unavailable: ..."``: a graph that is not BERT-family, OpenVINO's bf16,
        an accelerator provider, or a probe whose bits differ); the stages'
        :attr:`~simkernel.runtime.inference.packed_passes.EncoderStages.attention_kernel` says who computes
        the attention cores (simkernel's kernel where it gives onnxruntime's bits)."""
        with self._runtime_lock:
            if self.packed_status == "ready" or self.packed_status.startswith("unavailable"):
                return self._stages is not None
            self.packed_status = "preparing"
        status, stages = "ready", None
        try:
            session, tokenizer = self._loaded()
            if not isinstance(session, OnnxEncoderSession) or session.providers != ("CPUExecutionProvider",):
                raise StagesUnavailable(
                    f"precision {self.precision!r} on {list(getattr(session, 'providers', ['OpenVINO']))} runs the whole graph"
                )
            # the stages' weights and arenas on huge pages: fewer TLB misses (huge_pages)
            with _CUTTING, collapsed_while_loading() as self.packed_huge_pages:
                stages = EncoderStages.cut(session.path)
                probe = tokenizer.encode(list(PROBE_TEXTS))
                batches = [
                    tokenizer.pad_batch([probe[i] for i in rows]) for rows in length_sorted_batches(probe, 32)
                ]
                stages.check(session.run, batches, str(session.path))
        except StagesUnavailable as exc:
            status, stages = f"unavailable: {exc}", None
        except Exception as exc:  # never fail a caller: the whole graph gives the same bits
            status, stages = f"unavailable: {type(exc).__name__}: {exc}", None
        with self._runtime_lock:
            self._stages, self.packed_status = stages, status
        return stages is not None

    def _prepare_packed_passes_in_background(self) -> None:
        if self.packed_status == "not prepared":
            # not a daemon: a process that ends meanwhile waits for the cut (under a second) instead of
            # tearing onnxruntime down under it (std::terminate, SIGABRT)
            threading.Thread(target=self.prepare_packed_passes, name="simkernel-packed", daemon=False).start()

    def _run_pass(self, encodings: Sequence, batch_size: int) -> np.ndarray:
        """One forward pass over tokenized distinct texts: length-sorted batches of one token length
        (data-parallel over the session's workers, see :meth:`OnnxEncoderSession.map_batches`; or, once
        :meth:`prepare_packed_passes` is done, chunks of them as packed stages), pooled, normalised if the
        model says so; float32 (n, dim) in the order given."""
        batches = length_sorted_batches(encodings, batch_size)
        stages = self._stages
        if stages is not None and len(batches) > 1:
            lengths = [len(encodings[rows[0]]) for rows in batches]
            chunks = chunk_rows(batches, lengths, self._session.workers)

            def embed_chunk(chunk: list[np.ndarray]) -> list[np.ndarray]:
                # in the worker: padding and pooling run beside the other chunks, not in the pass's thread
                padded = [self._tokenizer.pad_batch([encodings[i] for i in rows]) for rows in chunk]
                tokens_of = stages.run_chunk(padded)
                return [
                    self._pooled(tokens, batch.attention_mask)
                    for tokens, batch in zip(tokens_of, padded, strict=True)
                ]

            pooled = list(itertools.chain.from_iterable(self._session.map_parallel(embed_chunk, chunks)))
            batches = [rows for chunk in chunks for rows in chunk]  # pieces of the batches, in chunk order
            with self._runtime_lock:
                self.packed_passes += 1
        else:

            def embed_batch(run, rows: np.ndarray) -> np.ndarray:
                batch = self._tokenizer.pad_batch([encodings[i] for i in rows])
                return self._pooled(
                    run(batch.input_ids, batch.attention_mask, batch.token_type_ids), batch.attention_mask
                )

            pooled = self._session.map_batches(embed_batch, batches)
        out = np.empty((len(encodings), pooled[0].shape[1]), dtype=np.float32)  # never empty here
        for rows, vectors in zip(batches, pooled, strict=True):
            out[rows] = vectors
        return out

    def _pooled(self, tokens: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        """A batch's sentence embeddings from its token embeddings: pooled, normalised if the model says so."""
        if tokens.ndim != 3:
            raise ModelError(
                f"{self._session.path} returned an output of shape {tokens.shape}, not token embeddings (batch, seq, hidden); re-export it with `simkernel models export SRC DST`"
            )
        pooled = pool(tokens, attention_mask, self.config.pooling)
        return l2_normalize(pooled) if self.config.normalize else pooled


class _EncodePlan:
    """A call's distinct texts (``unique``), each input's slot among them (``inverse``), the cached
    vector of each (or None) and the slots to embed (``missing``)."""

    __slots__ = ("unique", "inverse", "cached", "missing", "missing_texts")

    def __init__(self, unique: list[str], inverse: np.ndarray, cached: list, missing: list[int]) -> None:
        self.unique = unique
        self.inverse = inverse
        self.cached = cached
        self.missing = missing
        self.missing_texts = [unique[i] for i in missing]
