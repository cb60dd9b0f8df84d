"""An onnxruntime ``InferenceSession`` for an exported encoder, with checked settings.

- ``providers``: validated against ``onnxruntime.get_available_providers()``; default CPU.
- ``threads``: onnxruntime intra-op threads of the main session, and the number of workers of
  :meth:`map_batches`; ``None``: the CPUs this process may really use
  (:func:`simkernel.cpu_budget.available_cpus`: affinity mask and cgroup quota, not the host's cores as
  onnxruntime's own default), at most 8 workers; inter-op threads are 1 (the graphs are sequential).
- Graph optimisation: ``ORT_ENABLE_ALL`` by default; a graph the exporter already optimised (its
  manifest entry says ``"graph_optimization": "all"|"extended"|...`` or ``"optimized": true``) loads with
  ``ORT_ENABLE_BASIC`` so the expensive passes are not re-run at every load.
- Inputs are built from ``session.get_inputs()``: ``token_type_ids`` only when the graph declares it.
- ``run`` is safe to call from many threads at once (onnxruntime's ``InferenceSession.run`` is).
- ``map_batches`` runs a call's batches data-parallel on the CPU: ``threads`` worker threads, each running
  whole batches on a single-threaded twin of the session, instead of one batch at a time split over
  ``threads`` intra-op threads. On short texts the per-operator work is too small to split well:
  measured 1.12-1.44x (fp32) and 1.16-1.34x (int8) more sentences/s for all-MiniLM-L6-v2 on the SAS
  answers (2 cores; docs/design-notes.md). The twin is made at the first call
  with several batches (~0.2 s, and +58 MB RSS for the fp32 default model, +29 MB int8), so a call with
  one batch (and single-text latency) keeps the intra-op session.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import numpy as np

from simkernel.cpu_budget import available_cpus
from simkernel.errors import ModelError
from simkernel.runtime.inference.huge_pages import collapsed_while_loading

_LEVELS = ("disable", "basic", "extended", "all")
# output names of the token embeddings, best first (simkernel's exporter, then optimum/the hub)
TOKEN_EMBEDDING_OUTPUTS = ("token_embeddings", "last_hidden_state")
LOGITS_OUTPUTS = ("logits",)
CPU_ONLY = ("CPUExecutionProvider",)
MAX_DEFAULT_WORKERS = 8  # threads=None: one worker per CPU of the process, at most this many

Item = TypeVar("Item")
Result = TypeVar("Result")
RunBatch = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def validate_providers(providers: list[str] | tuple[str, ...] | None) -> list[str]:
    """The providers to use; an unavailable one raises :class:`ValueError` listing those available."""
    import onnxruntime as ort

    available = ort.get_available_providers()
    if providers is None:
        return ["CPUExecutionProvider"]
    if isinstance(providers, str):
        providers = [providers]
    wanted = [p if isinstance(p, str) else p[0] for p in providers]  # (name, options) tuples allowed
    missing = [p for p in wanted if p not in available]
    if missing:
        raise ValueError(
            f"execution provider(s) {missing} are not available in this onnxruntime build; available: {available}. Install the matching onnxruntime package (e.g. onnxruntime-gpu for CUDA) or drop them."
        )
    return list(providers)


def _level(name: str):
    import onnxruntime as ort

    return {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[name]


def session_options(intra_op_threads: int, optimization: str):
    """onnxruntime ``SessionOptions`` of simkernel's sessions: ``intra_op_threads`` threads, one inter-op
    thread (the graphs are sequential), the graph optimisation level ``optimization`` (one of
    ``"disable"``, ``"basic"``, ``"extended"``, ``"all"``), warnings and errors only in the log."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = _level(optimization)
    options.intra_op_num_threads = intra_op_threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return options


def model_feeds(
    input_names: Sequence[str], input_ids: np.ndarray, attention_mask: np.ndarray, token_type_ids: np.ndarray
) -> dict[str, np.ndarray]:
    """The token arrays a graph declares among ``input_names`` (``token_type_ids`` only when it has it)."""
    available = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
    return {name: available[name] for name in input_names}


class OnnxEncoderSession:
    """One loaded ONNX graph: feeds int64 token arrays, returns its main output as float32.

    ``output_names`` are tried in order; the first one the graph has is returned by :meth:`run`.
    """

    def __init__(
        self,
        path: str | Path,
        output_names: tuple[str, ...],
        threads: int | None = None,
        providers: list[str] | None = None,
        optimization: str = "all",
    ) -> None:
        path = Path(path)
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be a positive int or None, got {threads!r}")
        if optimization not in _LEVELS:
            raise ValueError(f"optimization must be one of {_LEVELS}, got {optimization!r}")
        chosen = validate_providers(providers)
        if not path.is_file():
            raise ModelError(
                f"{path} is missing. Prepare the model with `simkernel models prepare` (the default model) or `simkernel models export SRC DST`, or delete the model folder so it is downloaded again."
            )
        self.path = path
        self.threads = threads
        self._optimization = optimization
        cpus = available_cpus()
        self.huge_page_bytes = 0  # of the sessions' memory, moved onto huge pages at load (huge_pages)
        self._session = self._load(threads or cpus, chosen)
        self.providers = tuple(self._session.get_providers())
        self.input_names = tuple(i.name for i in self._session.get_inputs())
        outputs = [o.name for o in self._session.get_outputs()]
        self.output_name = next((n for n in output_names if n in outputs), outputs[0] if outputs else None)
        known = {"input_ids", "attention_mask", "token_type_ids"}
        extra = [n for n in self.input_names if n not in known]
        if "input_ids" not in self.input_names or extra or self.output_name is None:
            raise ModelError(
                f"{path} has inputs {list(self.input_names)} and outputs {outputs}; simkernel needs inputs among {sorted(known)} (input_ids required) and one of the outputs {list(output_names)}. Re-export it with `simkernel models export SRC DST`."
            )
        # data-parallel batches: CPU only (an accelerator runs one batch at a time anyway)
        self.workers = (threads or min(cpus, MAX_DEFAULT_WORKERS)) if self.providers == CPU_ONLY else 1
        self._twin = None
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0  # the process that made the pool
        self._twin_lock = threading.Lock()

    def _load(self, intra_op_threads: int, providers: list[str]):
        """An ``InferenceSession`` of this graph with ``intra_op_threads`` threads."""
        import onnxruntime as ort

        options = session_options(intra_op_threads, self._optimization)
        try:
            with collapsed_while_loading() as huge_pages:  # its weights on huge pages: fewer TLB misses
                session = ort.InferenceSession(str(self.path), sess_options=options, providers=providers)
        except Exception as exc:  # onnxruntime raises its own (Fail, InvalidProtobuf, ...) classes
            raise ModelError(
                f"cannot load {self.path}: {exc}. The file is corrupt or truncated; re-export it (`simkernel models export SRC DST`, `simkernel models prepare` for the default model) or delete the model folder so it is downloaded again."
            ) from exc
        self.huge_page_bytes += huge_pages.collapsed
        return session

    @property
    def uses_token_type_ids(self) -> bool:
        return "token_type_ids" in self.input_names

    def run(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, token_type_ids: np.ndarray
    ) -> np.ndarray:
        """Run one batch (int64 arrays (batch, seq)); returns the selected output as float32."""
        return self._run_on(self._session, input_ids, attention_mask, token_type_ids)

    def _run_on(self, session, input_ids, attention_mask, token_type_ids) -> np.ndarray:
        feeds = model_feeds(self.input_names, input_ids, attention_mask, token_type_ids)
        (out,) = session.run([self.output_name], feeds)
        return np.asarray(out, dtype=np.float32)

    def _run_on_twin(self, input_ids, attention_mask, token_type_ids) -> np.ndarray:
        return self._run_on(self._twin, input_ids, attention_mask, token_type_ids)

    def map_batches(self, job: Callable[[RunBatch, Item], Result], batches: Sequence[Item]) -> list[Result]:
        """``[job(run, batch) for batch in batches]``, where ``job`` builds a batch's inputs, calls ``run``
        on them (same signature as :meth:`run`) and post-processes the output.

        With several batches and several workers (CPU provider, ``threads`` > 1 or ``None``) the jobs run
        on ``self.workers`` threads, each batch on the single-threaded twin session (made here on first
        use); otherwise in turn on the main session. Results come back in the order of ``batches``;
        give the longest batches first so the workers finish together. An exception in a job is
        raised here. ``job`` must be thread-safe (write only to its own rows).
        """
        if len(batches) < 2 or self.workers < 2:
            return [job(self.run, batch) for batch in batches]
        if self._twin is None:
            with self._twin_lock:
                if self._twin is None:
                    self._twin = self._load(1, list(CPU_ONLY))
        return self.map_parallel(lambda batch: job(self._run_on_twin, batch), batches)

    def map_parallel(self, job: Callable[[Item], Result], items: Sequence[Item]) -> list[Result]:
        """``[job(item) for item in items]`` on the ``self.workers`` threads of :meth:`map_batches` (in the
        calling thread when there is one item or one worker); results in the order of ``items``, an
        exception in a job raised here. The jobs bring their own sessions (packed passes' stages)."""
        if len(items) < 2 or self.workers < 2:
            return [job(item) for item in items]
        # a forked child inherits the pool object but not its threads: it would wait forever
        if self._pool is None or self._pool_pid != os.getpid():
            with self._twin_lock:
                if self._pool is None or self._pool_pid != os.getpid():
                    self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="simkernel-batch")
                    self._pool_pid = os.getpid()
        return list(self._pool.map(job, items))
