"""precision="bf16": where it runs, the clear error where it cannot, and its numbers.

Three kinds of tests:

- on a CPU without native bf16 (no avx512_bf16 / amx_bf16), and on one with it seen as one without
  (``cpu_without_bf16``: its cpuid flags read as absent): every entry point refuses bf16 with an error
  naming what the CPU lacks and suggesting int8 / fp32; OpenVINO's silent f32 fallback is caught (only on
  a CPU really without bf16: on one with it, OpenVINO computes bf16);
- anywhere: the bf16 plumbing (encoders, SASEvaluator, metrics, CLI, shared instances) run end to end with
  the CPU check passed and OpenVINO computing in f32 (``simulated_bf16``), so the path must give fp32's
  numbers within OpenVINO-vs-onnxruntime rounding;
- on a CPU with native bf16 only (skipped elsewhere, with the reason printed): bf16's accuracy against
  fp32 (min cosine >= 0.9999 on the probe and SAS texts, SQuAD-SAS Spearman within 0.001), and that it
  really rounds to bf16 (differs from fp32 by more than f32 rounding). Measured on an Intel Xeon with
  AMX-BF16 (OpenVINO 2026.4, weights held in f16): min cosine 0.99993 on the SAS texts, max abs difference
  2.2e-3; SQuAD-SAS Spearman 0.67423 against fp32's 0.67418.
"""

from __future__ import annotations

import numpy as np
import pytest
from runtime_helpers import cosine_rows
from tests.runtime.inference.bf16_cpu import simulate_cpu_without_bf16

from simkernel.errors import MissingDependencyError, PrecisionUnavailableError
from simkernel.runtime import CrossEncoder, TextEncoder
from simkernel.runtime.inference import bf16

pytest.importorskip(
    "openvino", reason="the openvino extra is not installed (pip install 'simkernel[openvino]')"
)

STATUS = bf16.bf16_status()
needs_no_bf16 = pytest.mark.skipif(
    STATUS["available"],
    reason="this CPU has native bf16: OpenVINO computes bf16, its f32 fallback cannot be seen",
)
needs_bf16 = pytest.mark.skipif(
    not STATUS["available"], reason=f"bf16 accuracy needs a CPU with native bf16: {STATUS['reason']}"
)
REFUSAL = r"precision='bf16' is not available: .*(avx512_bf16 nor amx_bf16|not x86-64).*int8.*fp32"


@pytest.fixture
def cpu_without_bf16(monkeypatch) -> str:
    return simulate_cpu_without_bf16(monkeypatch)


# ------------------------------------------------------------------------------ status and refusal
def test_status_says_why(default_bundle):
    caps = __import__("simkernel.runtime", fromlist=["capabilities"]).capabilities()
    entry = caps["precisions"]["bf16"]
    assert entry == {
        "available": STATUS["available"],
        "reason": STATUS["reason"],
        "engine": "openvino",
        "file": "model.onnx",
    }
    assert caps["precisions"]["fp32"]["available"] and caps["precisions"]["int8"]["available"]
    assert caps["cpu"] == bf16.cpu_bf16_flags()
    if not any(caps["cpu"].values()):
        assert not entry["available"] and "neither avx512_bf16 nor amx_bf16" in entry["reason"]


def test_text_encoder_refuses_bf16(default_bundle, cpu_without_bf16):
    with pytest.raises(PrecisionUnavailableError, match=REFUSAL):
        TextEncoder(default_bundle, precision="bf16")
    assert issubclass(PrecisionUnavailableError, ValueError)


def test_cross_encoder_refuses_bf16(cross_encoder_bundle, cpu_without_bf16):
    with pytest.raises(PrecisionUnavailableError, match=REFUSAL):
        CrossEncoder(cross_encoder_bundle, precision="bf16")


def test_shared_instance_refuses_bf16(default_bundle, cpu_without_bf16):
    from simkernel.runtime import get_text_encoder

    with pytest.raises(PrecisionUnavailableError, match=REFUSAL):
        get_text_encoder(default_bundle, precision="bf16")


@needs_no_bf16
def test_openvino_silent_fallback_is_caught(default_bundle, monkeypatch):
    """Told the CPU has bf16 when it has not, OpenVINO compiles for f32 without a word: the session
    checks the compiled model's precision and refuses."""
    from simkernel.runtime.inference.openvino_session import OpenVinoEncoderSession
    from simkernel.runtime.inference.session import TOKEN_EMBEDDING_OUTPUTS

    monkeypatch.setattr(bf16, "cpu_bf16_reason", lambda: None)
    with pytest.raises(PrecisionUnavailableError, match=r"OpenVINO compiled .* for f32 although bf16"):
        OpenVinoEncoderSession(default_bundle / "model.onnx", TOKEN_EMBEDDING_OUTPUTS, threads=1)


def test_missing_openvino_names_the_extra(default_bundle, monkeypatch):
    monkeypatch.setattr(bf16, "cpu_bf16_reason", lambda: None)
    monkeypatch.setattr(bf16, "openvino_reason", lambda: "the openvino package is not installed")
    with pytest.raises(MissingDependencyError, match=r"pip install 'simkernel\[openvino\]'"):
        TextEncoder(default_bundle, precision="bf16")


def test_unknown_precision_lists_bf16(default_bundle):
    with pytest.raises(ValueError, match=r"precision must be one of \['bf16', 'fp32', 'int8'\]"):
        TextEncoder(default_bundle, precision="fp16")


# -------------------------------------------------------------------- the bf16 path, computing in f32
def test_bf16_path_text_encoder(default_bundle, simulated_bf16, probe_texts):
    from simkernel.runtime.inference.openvino_session import OpenVinoEncoderSession

    path = TextEncoder(default_bundle, precision="bf16", threads=2, cache_size=0)
    assert isinstance(path._session, OpenVinoEncoderSession) and path.precision == "bf16"
    assert "precision='bf16'" in repr(path)
    fp32 = TextEncoder(default_bundle, threads=2, cache_size=0)
    np.testing.assert_allclose(path.encode(probe_texts), fp32.encode(probe_texts), atol=2e-6)


def test_bf16_path_text_alone_equals_text_in_batch(default_bundle, simulated_bf16, sas_texts):
    encoder = TextEncoder(default_bundle, precision="bf16", threads=2, cache_size=0)
    texts = sas_texts[:40]
    batched = encoder.encode(texts, batch_size=32)
    alone = np.stack([encoder.encode([t])[0] for t in texts])
    assert np.abs(alone - batched).max() <= 1e-6


def test_bf16_path_cross_encoder(cross_encoder_bundle, simulated_bf16):
    pairs = [("Berlin is the capital of Germany.", "Germany's capital is Berlin."), ("1945", "in 1945")]
    pairs += [
        ("Москва — столица России.", "Столица России — Москва."),
        ("北京是中国的首都。", "中国的首都是北京。"),
    ]
    path = CrossEncoder(cross_encoder_bundle, precision="bf16", threads=2)
    fp32 = CrossEncoder(cross_encoder_bundle, threads=2)
    np.testing.assert_allclose(path.predict(pairs), fp32.predict(pairs), atol=2e-5)


def test_bf16_path_shared_instance_is_its_own(default_bundle, simulated_bf16):
    from simkernel.runtime import get_text_encoder

    path = get_text_encoder(default_bundle, precision="bf16", threads=1)
    assert get_text_encoder(default_bundle, precision="bf16", threads=1) is path
    assert get_text_encoder(default_bundle, precision="fp32", threads=1) is not path


# ------------------------------------------------------------------------- real bf16 (CPU with bf16)
@pytest.fixture(scope="module")
def real_bf16(default_bundle):
    return TextEncoder(default_bundle, precision="bf16", threads=2, cache_size=0)


@needs_bf16
def test_real_bf16_runs_in_bf16(real_bf16):
    assert real_bf16._session.inference_precision == "bf16"
    assert real_bf16._session.conversion_error <= 0.1


@needs_bf16
def test_real_bf16_close_to_fp32_on_probe_and_sas_texts(real_bf16, default_bundle, probe_texts, sas_texts):
    from simkernel.runtime.acquisition.export_probes import PROBE_TEXTS

    fp32 = TextEncoder(default_bundle, threads=2, cache_size=0)
    for texts in (list(PROBE_TEXTS), probe_texts, sas_texts):
        ours, reference = real_bf16.encode(texts), fp32.encode(texts)
        cosine = cosine_rows(ours, reference)
        diff = float(np.abs(ours - reference).max())
        print(
            f"bf16 vs fp32 on {len(texts)} texts: min cosine {cosine.min():.6f}, max abs difference {diff:.2e}"
        )
        assert cosine.min() >= 0.9999, cosine.min()
        # and it is bf16: f32 (the simulated path) stays within 2e-6 of onnxruntime's fp32
        assert diff >= 1e-4, diff


@needs_bf16
def test_real_bf16_squad_spearman_within_0001_of_fp32(real_bf16, default_bundle, data_dir):
    import csv

    from scipy.stats import spearmanr

    with open(data_dir / "sas" / "SQuAD_SAS.csv", newline="", encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if r["label"].strip()]
    labels = [float(r["label"]) for r in rows]
    fp32 = TextEncoder(default_bundle, threads=2, cache_size=0)
    rho = {}
    for name, encoder in (("fp32", fp32), ("bf16", real_bf16)):
        a = encoder.encode([r["answer1"] for r in rows])
        b = encoder.encode([r["answer2"] for r in rows])
        rho[name] = spearmanr(cosine_rows(a, b), labels).statistic
    print(f"SQuAD-SAS Spearman: fp32 {rho['fp32']:.5f}, bf16 {rho['bf16']:.5f}")
    assert abs(rho["bf16"] - rho["fp32"]) <= 0.001


@needs_bf16
def test_real_bf16_text_alone_equals_text_in_batch(real_bf16, sas_texts):
    texts = sas_texts[:40]
    batched = real_bf16.encode(texts, batch_size=32)
    alone = np.stack([real_bf16.encode([t])[0] for t in texts])
    assert np.abs(alone - batched).max() <= 1e-6


def test_bf16_path_honours_threads(default_bundle, simulated_bf16):
    encoder = TextEncoder(default_bundle, precision="bf16", threads=1, cache_size=0)
    assert encoder._session.compiled_threads == 1 and encoder._session.workers == 1


def test_bf16_path_refuses_onnxruntime_providers(default_bundle, simulated_bf16):
    with pytest.raises(ValueError, match=r"providers=\['CUDAExecutionProvider'\] applies to onnxruntime"):
        TextEncoder(default_bundle, precision="bf16", providers=["CUDAExecutionProvider"])
