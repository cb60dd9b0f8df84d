"""OpenVinoEncoderSession in f32 (runs on any CPU) against onnxruntime's numbers, and its contracts:
thread-safety, ``threads`` honoured, data-parallel batches, bad input, load time. The bf16 numbers need
a CPU with native bf16: tests/runtime/test_bf16.py."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time

import numpy as np
import pytest

from simkernel.errors import ModelError
from simkernel.runtime.inference.bundle import onnx_file
from simkernel.runtime.inference.openvino_session import OpenVinoEncoderSession
from simkernel.runtime.inference.session import LOGITS_OUTPUTS, TOKEN_EMBEDDING_OUTPUTS, OnnxEncoderSession

pytest.importorskip(
    "openvino", reason="the openvino extra is not installed (pip install 'simkernel[openvino]')"
)


@pytest.fixture(scope="module")
def graph(default_bundle):
    return onnx_file(default_bundle, "fp32")


@pytest.fixture(scope="module")
def f32_session(graph):
    return OpenVinoEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=2, inference_precision="f32")


@pytest.fixture(scope="module")
def onnx_session(graph):
    return OnnxEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=2)


def token_batches(count: int, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``count`` batches of random token ids, lengths 3..60, batch sizes 1..9, some rows padded."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        rows, length = int(rng.integers(1, 10)), int(rng.integers(3, 61))
        ids = rng.integers(1000, 20000, (rows, length)).astype(np.int64)
        ids[:, 0] = 101
        mask = np.ones_like(ids)
        for r in range(rows):
            cut = int(rng.integers(2, length + 1))
            ids[r, cut:] = 0
            mask[r, cut:] = 0
        out.append((ids, mask, np.zeros_like(ids)))
    return out


def forward(run, batch):
    return run(*batch)


def test_f32_matches_onnxruntime(f32_session, onnx_session):
    worst = 0.0
    for batch in token_batches(10):
        got, expected = f32_session.run(*batch), onnx_session.run(*batch)
        assert got.dtype == np.float32 and got.shape == expected.shape == batch[0].shape + (384,)
        mask = batch[1].astype(bool)  # padded positions are not pooled: compare the real tokens
        worst = max(worst, float(np.abs(got[mask] - expected[mask]).max()))
    assert worst <= 2e-5, worst  # measured 4e-6 (both fp32, different kernels)


def test_session_describes_the_graph(f32_session, graph):
    assert f32_session.path == graph
    assert f32_session.input_names == ("input_ids", "attention_mask", "token_type_ids")
    assert f32_session.output_name == "token_embeddings"
    assert f32_session.uses_token_type_ids
    assert f32_session.inference_precision == "f32"
    assert 0 < f32_session.load_seconds < 120


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_are_honoured(graph, threads):
    session = OpenVinoEncoderSession(
        graph, TOKEN_EMBEDDING_OUTPUTS, threads=threads, inference_precision="f32"
    )
    assert session.compiled_threads == threads  # what OpenVINO reports for the compiled model
    assert session.workers == threads


def test_more_threads_than_cores_are_capped_by_openvino(graph):
    """OpenVINO runs at most one thread per core of the process: a larger request is capped, not refused."""
    from simkernel.cpu_budget import available_cpus

    many = available_cpus() + 2
    session = OpenVinoEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=many, inference_precision="f32")
    assert 1 <= session.compiled_threads <= available_cpus() < many
    assert session.workers == many


def test_default_threads_follow_the_cpu_budget(graph, monkeypatch):
    from simkernel.runtime.inference import openvino_session

    # one CPU in the budget (e.g. a cgroup quota) although OpenVINO alone would use every core
    monkeypatch.setattr(openvino_session, "available_cpus", lambda: 1)
    session = OpenVinoEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, inference_precision="f32")
    assert session.compiled_threads == 1 and session.workers == 1


def test_parallel_batches_equal_sequential_and_keep_order(graph, f32_session):
    batches = token_batches(12, seed=1)
    sequential = OpenVinoEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=1, inference_precision="f32")
    expected = sequential.map_batches(forward, batches)
    assert sequential._twin is None
    names = []

    def record(run, batch):
        names.append(threading.current_thread().name)
        return run(*batch)

    got = f32_session.map_batches(record, batches)
    assert f32_session._twin is not None and all(n.startswith("simkernel-batch") for n in names)
    for g, e, b in zip(got, expected, batches, strict=True):
        mask = b[1].astype(bool)
        np.testing.assert_allclose(g[mask], e[mask], atol=1e-5)
    assert f32_session.map_batches(forward, []) == []


def test_row_does_not_depend_on_its_batch_mates(f32_session):
    """The same row alone and inside a batch of other (longer, so it is padded) rows: its sentence
    embedding (mean-pooled, unit length) differs by at most 1e-6; the token vectors by float32 rounding
    only (other shapes, other GEMM blocking)."""
    from simkernel.runtime.inference.pooling import l2_normalize, pool

    rng = np.random.default_rng(2)
    ids = rng.integers(1000, 20000, (8, 48)).astype(np.int64)
    mask = np.ones_like(ids)
    mask[0, 20:] = 0
    ids[0, 20:] = 0
    batch_tokens = f32_session.run(ids, mask, np.zeros_like(ids))
    alone_tokens = f32_session.run(ids[:1, :20], mask[:1, :20], np.zeros_like(ids[:1, :20]))
    assert np.abs(alone_tokens[0] - batch_tokens[0, :20]).max() <= 1e-5
    in_batch = l2_normalize(pool(batch_tokens, mask, "mean"))[0]
    alone = l2_normalize(pool(alone_tokens, mask[:1, :20], "mean"))[0]
    assert np.abs(alone - in_batch).max() <= 1e-6


def test_many_threads_share_one_session(f32_session, onnx_session):
    batches = token_batches(16, seed=3)
    expected = [onnx_session.run(*b) for b in batches]
    results: list = [None] * len(batches)
    errors: list = []

    def work(i):
        try:
            for _ in range(3):
                results[i] = f32_session.run(*batches[i])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(batches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got, exp, b in zip(results, expected, batches, strict=True):
        mask = b[1].astype(bool)
        np.testing.assert_allclose(got[mask], exp[mask], atol=2e-5)


def test_cross_encoder_logits_match_onnxruntime(cross_encoder_bundle):
    graph = onnx_file(cross_encoder_bundle, "fp32")
    ov = OpenVinoEncoderSession(graph, LOGITS_OUTPUTS, threads=2, inference_precision="f32")
    ort = OnnxEncoderSession(graph, LOGITS_OUTPUTS, threads=2)
    assert ov.output_name == "logits"
    for batch in token_batches(4, seed=4):
        np.testing.assert_allclose(ov.run(*batch), ort.run(*batch), atol=2e-5)


def test_missing_file_names_file_and_fix(tmp_path):
    with pytest.raises(ModelError, match=r"model\.onnx is missing.*simkernel models"):
        OpenVinoEncoderSession(tmp_path / "model.onnx", TOKEN_EMBEDDING_OUTPUTS, inference_precision="f32")


def test_corrupt_file_names_file_and_fix(graph, tmp_path):
    shutil.copy(graph, tmp_path / "model.onnx")
    data = (tmp_path / "model.onnx").read_bytes()
    (tmp_path / "model.onnx").write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelError, match=r"model\.onnx.*corrupt"):
        OpenVinoEncoderSession(tmp_path / "model.onnx", TOKEN_EMBEDDING_OUTPUTS, inference_precision="f32")


def test_not_an_onnx_file_names_file(tmp_path):
    (tmp_path / "model.onnx").write_text("not a model", encoding="utf-8")
    with pytest.raises(ModelError, match=r"model\.onnx.*corrupt"):
        OpenVinoEncoderSession(tmp_path / "model.onnx", TOKEN_EMBEDDING_OUTPUTS, inference_precision="f32")


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_bad_threads(graph, threads):
    with pytest.raises(ValueError, match="threads must be a positive int"):
        OpenVinoEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=threads, inference_precision="f32")


def test_bad_inference_precision(graph):
    with pytest.raises(ValueError, match="inference_precision must be one of"):
        OpenVinoEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, inference_precision="fp16")


def test_conversion_check_passes_in_f32(f32_session):
    assert f32_session.conversion_error <= 1e-4, f32_session.conversion_error


def test_wrong_conversion_is_refused_at_load(cross_encoder_bundle, monkeypatch):
    """OpenVINO's own FusedGemm translator drops the pooler's Tanh: without simkernel's translator the
    load-time check against onnxruntime must refuse the graph instead of returning wrong logits."""
    from simkernel.runtime.inference import openvino_session

    monkeypatch.setattr(openvino_session, "conversion_extensions", lambda: [])
    with pytest.raises(ModelError, match=r"OpenVINO does not compute .*model\.onnx as onnxruntime does"):
        OpenVinoEncoderSession(
            onnx_file(cross_encoder_bundle, "fp32"), LOGITS_OUTPUTS, threads=1, inference_precision="f32"
        )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_compiles_again_instead_of_hanging(graph):
    """OpenVINO's worker threads are gone in a forked child: without compiling again there, the child's
    first inference waits forever (measured). Both the one-batch and the data-parallel paths must work."""
    session = OpenVinoEncoderSession(graph, TOKEN_EMBEDDING_OUTPUTS, threads=2, inference_precision="f32")
    batches = token_batches(4, seed=5)
    expected = session.map_batches(forward, batches)
    pid = os.fork()
    if pid == 0:  # child: exit status 0 = same results
        try:
            got = session.map_batches(forward, batches) + [session.run(*batches[0])]
            same = all(
                np.allclose(g, e, atol=1e-5) for g, e in zip(got, [*expected, expected[0]], strict=True)
            )
            os._exit(0 if same else 1)
        except BaseException:
            os._exit(2)
    deadline = time.monotonic() + 180
    while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung in OpenVINO")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(waited[1]) == 0
