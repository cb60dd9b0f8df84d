"""An OpenVINO CPU session for an exported encoder's fp32 ``model.onnx``, computing in bf16 (or f32).

``precision="bf16"`` runs the bundle's own fp32 graph (no other file in the store) on OpenVINO's CPU
plugin with ``INFERENCE_PRECISION_HINT=bf16``: matrix products take bf16 inputs and accumulate in fp32,
on CPUs with native bf16 (``avx512_bf16`` / ``amx_bf16``, see :mod:`simkernel.runtime.inference.bf16`).

- ``inference_precision``: ``"bf16"`` (what ``precision="bf16"`` uses; refused where the CPU would
  silently fall back to f32, and checked again on the compiled model) or ``"f32"`` (OpenVINO in full
  precision: the same numbers as onnxruntime's fp32 within ~1e-5, which is how the session is tested on any
  CPU; on a CPU with native bf16 OpenVINO would otherwise pick bf16 by itself, so f32 is always explicit).
- ``threads``: ``INFERENCE_NUM_THREADS`` of the compiled model and the number of workers of
  :meth:`map_batches` (``None``: the CPUs this process may use, :func:`simkernel.cpu_budget.available_cpus`,
  at most 8 workers), as for onnxruntime.
- ``run`` is thread-safe: each call takes an idle infer request of the compiled model (requests are made
  on demand and reused; an OpenVINO request must not be shared by two threads at once). A process forked
  after the load compiles the graph again at its first call (OpenVINO's threads do not survive ``fork``).
- :attr:`load_seconds`: wall time to read and compile the graph (OpenVINO compiles on load: ~1.3-1.5 s
  for all-MiniLM-L6-v2 on a 2-core AMD EPYC, against ~0.3 s for onnxruntime).
- At load the compiled graph is compared with onnxruntime fp32 on a probe batch
  (:mod:`simkernel.runtime.inference.openvino_graph`: OpenVINO's ONNX frontend has mistranslated onnxruntime's
  contrib operators); :attr:`conversion_error` holds the relative error, and a graph off by more than
  the precision's tolerance is refused with :class:`ModelError`.

Inputs are int64 ``(batch, seq)`` arrays; the output is float32. OpenVINO computes every row of a batch
on its own (no batch-wide statistics), so a text's embedding does not depend on its batch-mates.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import numpy as np

from simkernel._optional import import_optional
from simkernel.cpu_budget import available_cpus
from simkernel.errors import ModelError, PrecisionUnavailableError
from simkernel.runtime.inference.bf16 import require_bf16
from simkernel.runtime.inference.openvino_graph import (
    CONVERSION_TOLERANCE,
    conversion_error,
    conversion_extensions,
)
from simkernel.runtime.inference.session import model_feeds

INFERENCE_PRECISIONS = ("bf16", "f32")
MAX_DEFAULT_WORKERS = 8
_KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_FORKED_LEFTOVERS: list = []  # compiled models a forked child inherited (see _compiled_here)

Item = TypeVar("Item")
Result = TypeVar("Result")
RunBatch = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _store_weights_in_f16(model) -> None:
    """Turn the graph's fp32 weights into f16 constants (decompressed on the fly), in place, before a bf16
    compile: the CPU plugin then holds them in half the memory (all-MiniLM-L6-v2 in bf16, RSS after load
    221 MB instead of 283 MB on an Intel Xeon with AMX). bf16 computes with 8 mantissa bits, f16 stores 11: the rounding to f16
    (relative error ~1e-3 on the token embeddings in f32) stays below bf16's own (~1e-2). A no-op where
    OpenVINO lacks the transformation (it is what ``openvino.save_model(..., compress_to_fp16=True)``
    runs)."""
    try:
        from openvino._offline_transformations import compress_model_transformation
    except ImportError:  # pragma: no cover - another OpenVINO layout: keep fp32 weights
        return
    compress_model_transformation(model)


class _Compiled:
    """One compiled model and its idle infer requests (each request serves one thread at a time)."""

    def __init__(self, compiled, output_port) -> None:
        self.model = compiled
        self.port = output_port
        self._idle: list = []
        self._lock = threading.Lock()

    def infer(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        with self._lock:
            request = self._idle.pop() if self._idle else None
        if request is None:
            request = self.model.create_infer_request()
        try:
            # share_outputs=False (the default): the result is a copy, the request may be reused at once
            out = request.infer(feeds)[self.port]
        finally:
            with self._lock:
                self._idle.append(request)
        return np.asarray(out, dtype=np.float32)


class OpenVinoEncoderSession:
    """One ONNX graph compiled by OpenVINO's CPU plugin; same interface as
    :class:`~simkernel.runtime.inference.session.OnnxEncoderSession` (``run``, ``map_batches``, ``path``,
    ``workers``, ``input_names``, ``output_name``).

    ``output_names`` are tried in order; the first one the graph has is returned by :meth:`run`.
    """

    def __init__(
        self,
        path: str | Path,
        output_names: tuple[str, ...],
        threads: int | None = None,
        inference_precision: str = "bf16",
    ) -> None:
        path = Path(path)
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be a positive int or None, got {threads!r}")
        if inference_precision not in INFERENCE_PRECISIONS:
            raise ValueError(
                f"inference_precision must be one of {INFERENCE_PRECISIONS}, got {inference_precision!r}"
            )
        if inference_precision == "bf16":
            require_bf16()  # before anything is loaded: a CPU without bf16 gets the clear error
        if not path.is_file():
            raise ModelError(
                f"{path} is missing. Prepare the model with `simkernel models prepare` (the default model) or `simkernel models export SRC DST`, or delete the model folder so it is downloaded again."
            )
        self.path = path
        self.threads = threads
        self.inference_precision = inference_precision
        cpus = available_cpus()
        started = time.perf_counter()
        compiled = self._compile(threads or cpus, streams=1)
        self.load_seconds = time.perf_counter() - started
        self.input_names = tuple(port.any_name for port in compiled.inputs)
        outputs = [name for port in compiled.outputs for name in sorted(port.get_names())]
        self.output_name = next((n for n in output_names if n in outputs), outputs[0] if outputs else None)
        extra = [n for n in self.input_names if n not in _KNOWN_INPUTS]
        if "input_ids" not in self.input_names or extra or self.output_name is None:
            raise ModelError(
                f"{path} has inputs {list(self.input_names)} and outputs {outputs}; simkernel needs inputs among {sorted(_KNOWN_INPUTS)} (input_ids required) and one of the outputs {list(output_names)}. Re-export it with `simkernel models export SRC DST`."
            )
        self._check_precision(compiled)
        self._main = _Compiled(compiled, compiled.output(self.output_name))
        self._main_threads = threads or cpus
        self._main_pid = os.getpid()
        self.conversion_error = conversion_error(self.run, path, self.output_name)
        tolerance = CONVERSION_TOLERANCE[inference_precision]
        if not self.conversion_error <= tolerance:
            raise ModelError(
                f"OpenVINO does not compute {path} as onnxruntime does: relative error {self.conversion_error:.3g} on a probe batch (at most {tolerance} expected in {inference_precision}); an operator of this graph is converted wrongly. Use precision='fp32' or 'int8' (onnxruntime) for this model."
            )
        self.workers = threads or min(cpus, MAX_DEFAULT_WORKERS)
        self._twin: _Compiled | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        self._twin_lock = threading.Lock()

    def _compile(self, threads: int, streams: int):
        """The graph compiled for the CPU with ``threads`` threads split over ``streams`` streams (each
        stream runs one request at a time on threads / streams threads)."""
        ov = import_optional("openvino", "openvino", "precision='bf16' (OpenVINO)")
        config: dict = {
            "INFERENCE_PRECISION_HINT": self.inference_precision,
            "INFERENCE_NUM_THREADS": threads,
            "NUM_STREAMS": streams,
        }
        if streams == 1:
            config["PERFORMANCE_HINT"] = "LATENCY"
        core = ov.Core()
        core.add_extension(conversion_extensions())
        try:
            model = core.read_model(str(self.path))
            if self.inference_precision == "bf16":
                _store_weights_in_f16(model)
            return core.compile_model(model, "CPU", config)
        except Exception as exc:  # OpenVINO raises RuntimeError subclasses of its own
            raise ModelError(
                f"cannot load {self.path} with OpenVINO: {str(exc).strip().splitlines()[0][:300]}. The file is corrupt or truncated; re-export it (`simkernel models export SRC DST`, `simkernel models prepare` for the default model) or delete the model folder so it is downloaded again."
            ) from exc

    def _check_precision(self, compiled) -> None:
        """The compiled model must compute in the precision asked for (OpenVINO falls back silently)."""
        got = compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        if got != self.inference_precision:
            raise PrecisionUnavailableError(
                f"OpenVINO compiled {self.path} for {got} although {self.inference_precision} was asked for: this CPU or operating system does not let OpenVINO use native bf16. Use precision='int8' (faster, slightly less exact) or precision='fp32'."
            )

    @property
    def uses_token_type_ids(self) -> bool:
        return "token_type_ids" in self.input_names

    @property
    def compiled_threads(self) -> int:
        """``INFERENCE_NUM_THREADS`` of the compiled model (what OpenVINO actually uses)."""
        return int(self._main.model.get_property("INFERENCE_NUM_THREADS"))

    def run(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, token_type_ids: np.ndarray
    ) -> np.ndarray:
        """Run one batch (int64 arrays (batch, seq)); returns the selected output as float32."""
        return self._compiled_here().infer(
            model_feeds(self.input_names, input_ids, attention_mask, token_type_ids)
        )

    def _compiled_here(self) -> _Compiled:
        """The main compiled model, compiled again in a forked child: OpenVINO's worker threads do not
        survive ``fork`` (an inference in the child would wait for them forever); the twin is dropped too
        and made again on demand."""
        if self._main_pid != os.getpid():
            with self._twin_lock:
                if self._main_pid != os.getpid():
                    # the parent's compiled models are kept, never freed here: their destructors would
                    # wait for (or touch) threads that do not exist in this process (measured: SIGSEGV)
                    _FORKED_LEFTOVERS.append((self._main, self._twin))
                    compiled = self._compile(self._main_threads, streams=1)
                    self._main = _Compiled(compiled, compiled.output(self.output_name))
                    self._twin = None
                    self._main_pid = os.getpid()
        return self._main

    def _run_on_twin(self, input_ids, attention_mask, token_type_ids) -> np.ndarray:
        assert self._twin is not None  # made by map_batches before any batch runs on it
        return self._twin.infer(model_feeds(self.input_names, input_ids, attention_mask, token_type_ids))

    def map_batches(self, job: Callable[[RunBatch, Item], Result], batches: Sequence[Item]) -> list[Result]:
        """``[job(run, batch) for batch in batches]``, as :meth:`OnnxEncoderSession.map_batches`: with
        several batches and workers, on ``workers`` threads, each batch on one stream of a twin compiled
        model with one stream per worker (one thread each), made on first use. Measured in f32, 2 cores
        heavily loaded by other jobs (so ratios only), texts/s of batches in turn on two intra-op threads /
        one two-stream model / two single-stream models: 384 short SAS answers 46.9 / 60.7 / 63.8; 128
        docstrings of 60-128 tokens 5.9 / 6.2 / 7.4. Two models would hold a second copy of the weights."""
        if len(batches) < 2 or self.workers < 2:
            return [job(self.run, batch) for batch in batches]
        self._compiled_here()  # in a forked child: compile again, forget the parent's twin
        if self._twin is None or self._pool is None or self._pool_pid != os.getpid():
            with self._twin_lock:
                if self._twin is None:
                    twin = self._compile(self.workers, streams=self.workers)
                    self._twin = _Compiled(twin, twin.output(self.output_name))
                if self._pool is None or self._pool_pid != os.getpid():
                    self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="simkernel-batch")
                    self._pool_pid = os.getpid()
        return list(self._pool.map(lambda batch: job(self._run_on_twin, batch), batches))
