"""An onnxruntime ``InferenceSession`` for an exported encoder, with checked settings.

- ``providers``: validated against ``onnxruntime.get_available_providers()``; default CPU.
- ``threads``: onnxruntime intra-op threads (``None`` = onnxruntime's default, one per physical core);
  inter-op threads are 1 (the graphs are sequential).
- Graph optimisation: ``ORT_ENABLE_ALL`` by default; a graph the exporter already optimised (its
  manifest entry says ``"graph_optimization": "all"|"extended"|...`` or ``"optimized": true``) loads with
  ``ORT_ENABLE_BASIC`` so the expensive passes are not re-run at every load.
- Inputs are built from ``session.get_inputs()``: ``token_type_ids`` only when the graph declares it.
- ``run`` is safe to call from many threads at once (onnxruntime's ``InferenceSession.run`` is).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simkernel.errors import ModelError

_LEVELS = ("disable", "basic", "extended", "all")
# output names of the token embeddings, best first (simkernel's exporter, then optimum/the hub)
TOKEN_EMBEDDING_OUTPUTS = ("token_embeddings", "last_hidden_state")
LOGITS_OUTPUTS = ("logits",)


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
            f"execution provider(s) {missing} are not available in this onnxruntime build; available: "
            f"{available}. Install the matching onnxruntime package (e.g. onnxruntime-gpu for CUDA) or "
            "drop them."
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
        import onnxruntime as ort

        path = Path(path)
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise ValueError(f"threads must be a positive int or None, got {threads!r}")
        if optimization not in _LEVELS:
            raise ValueError(f"optimization must be one of {_LEVELS}, got {optimization!r}")
        chosen = validate_providers(providers)
        if not path.is_file():
            raise ModelError(
                f"{path} is missing. Prepare the model with `simkernel models prepare` (the default model) "
                "or "
                "`simkernel models export SRC DST`, or delete the model folder so it is downloaded again."
            )
        options = ort.SessionOptions()
        options.graph_optimization_level = _level(optimization)
        options.intra_op_num_threads = threads or 0
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(str(path), sess_options=options, providers=chosen)
        except Exception as exc:  # onnxruntime raises its own (Fail, InvalidProtobuf, ...) classes
            raise ModelError(
                f"cannot load {path}: {exc}. The file is corrupt or truncated; re-export it "
                "(`simkernel models export SRC DST`, `simkernel models prepare` for the default model) or "
                "delete the model folder so it is downloaded again."
            ) from exc
        self.path = path
        self.threads = threads
        self.providers = tuple(self._session.get_providers())
        self.input_names = tuple(i.name for i in self._session.get_inputs())
        outputs = [o.name for o in self._session.get_outputs()]
        self.output_name = next((n for n in output_names if n in outputs), outputs[0] if outputs else None)
        known = {"input_ids", "attention_mask", "token_type_ids"}
        extra = [n for n in self.input_names if n not in known]
        if "input_ids" not in self.input_names or extra or self.output_name is None:
            raise ModelError(
                f"{path} has inputs {list(self.input_names)} and outputs {outputs}; simkernel needs inputs "
                "among "
                f"{sorted(known)} (input_ids required) and one of the outputs {list(output_names)}. "
                "Re-export it with `simkernel models export SRC DST`."
            )

    @property
    def uses_token_type_ids(self) -> bool:
        return "token_type_ids" in self.input_names

    def run(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, token_type_ids: np.ndarray
    ) -> np.ndarray:
        """Run one batch (int64 arrays (batch, seq)); returns the selected output as float32."""
        available = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "token_type_ids": token_type_ids,
        }
        feeds = {name: available[name] for name in self.input_names}
        (out,) = self._session.run([self.output_name], feeds)
        return np.asarray(out, dtype=np.float32)
