"""simkernel's attention kernel (csrc/attention.h, ``simkernel._attention``), which packed passes run in place
of onnxruntime's attention stage once it gives that stage's bits (EncoderStages.check).

Reference: onnxruntime's own attention stage of the default model, bit for bit, with the sum of exp()
onnxruntime's MLAS library picks on this CPU: AVX-512F's where the CPU has it, FMA3's otherwise (the
arithmetic against float64 numpy: tests/kernels/test_kernel_attention.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from simkernel import _attention
from simkernel.kernels import capabilities
from simkernel.runtime import TextEncoder
from simkernel.runtime.inference.packed_passes import NATIVE_CHECK_LENGTHS, EncoderStages

CPU = capabilities()["cpu"]
# the sum of exp() of onnxruntime's softmax on this CPU (MLAS: AVX-512F kernels where the CPU has them)
MLAS_SUM_EXP = "avx512f" if CPU["avx512f"] else "fma3"
needs_fma3 = pytest.mark.skipif(
    not (CPU["avx2"] and CPU["fma"]), reason="the attention kernel needs AVX2 and FMA (x86-64 since 2013)"
)


def random_case(rng, rows, length, hidden, magnitude=4.0):
    query, key, value = (
        (rng.standard_normal((rows * length, hidden)) * magnitude).astype(np.float32) for _ in range(3)
    )
    return query, key, value, np.zeros((rows, 1, length, length), dtype=np.float32)


@pytest.fixture(scope="module")
def stages(default_bundle):
    encoder = TextEncoder(default_bundle, cache_size=0, batching=False)
    return EncoderStages.cut(encoder._session.path)


@needs_fma3
def test_the_kernel_gives_onnxruntimes_bits_with_its_sum_of_exp(stages):
    """Every length the check covers, scores within and beyond the range where MLAS's exp() clamps: equal bits
    with the sum of exp() MLAS uses here; the other instruction set's sum (where this CPU runs it) differs,
    so the comparison can tell them apart."""
    alpha, width = stages._native[0]
    assert (alpha, width) == (np.float32(1 / np.sqrt(32)), 32)  # all-MiniLM-L6-v2: 12 heads of 32
    rng = np.random.default_rng(3)
    others = [s for s in _attention.SUM_EXP if s != MLAS_SUM_EXP and _attention.supported(s)]
    differ = {s: 0 for s in others}
    for length in NATIVE_CHECK_LENGTHS:
        for magnitude in (1.0, 4.0, 40.0):
            case = random_case(rng, 2, length, 384, magnitude)
            query, key, value, mask = case
            want = stages._stage_attention(0, query, key, value, query, mask, 2, length)
            got = np.empty_like(want)
            _attention.attention(*case, 2, length, 12, alpha, MLAS_SUM_EXP, got)
            assert np.array_equal(got, want), (length, magnitude, np.max(np.abs(got - want)))
            for other in others:
                _attention.attention(*case, 2, length, 12, alpha, other, got)
                differ[other] += not np.array_equal(got, want)
    assert all(count > 0 for count in differ.values()), differ


@needs_fma3
def test_packed_stages_choose_the_kernel_and_keep_the_whole_graphs_bits(
    default_bundle, sas_texts, monkeypatch
):
    encoder = TextEncoder(default_bundle, cache_size=0, batching=False)
    assert encoder.prepare_packed_passes(), encoder.packed_status
    assert encoder._stages.attention_kernel == f"simkernel ({MLAS_SUM_EXP})"
    texts = sas_texts[1000:1300]
    whole = TextEncoder(default_bundle, cache_size=0, batching=False).encode(texts, normalize=False)
    calls = []
    real = _attention.attention

    def counted(*args):
        calls.append(args[4:6])  # (rows, length)
        real(*args)

    monkeypatch.setattr(_attention, "attention", counted)
    assert np.array_equal(encoder._run_pass(encoder._tokenizer.encode(texts), 32), whole)
    assert len(calls) >= 6 * 10 and len(set(calls)) >= 10  # every layer of every exact-length piece
    monkeypatch.undo()

    def off_by_one_bit(query, key, value, mask, rows, length, heads, alpha, sum_exp, out):
        real(query, key, value, mask, rows, length, heads, alpha, sum_exp, out)
        out[0, 0] = np.nextafter(out[0, 0], np.float32(np.inf))

    # a kernel whose bits are off is refused: onnxruntime's attention stage runs, with the same bits
    monkeypatch.setattr(_attention, "attention", off_by_one_bit)
    refused = TextEncoder(default_bundle, cache_size=0, batching=False)
    assert refused.prepare_packed_passes(), refused.packed_status
    assert refused._stages.attention_kernel == "onnxruntime"
    assert np.array_equal(refused._run_pass(refused._tokenizer.encode(texts), 32), whole)


def test_a_cpu_without_the_kernel_keeps_onnxruntimes_attention(default_bundle, sas_texts, monkeypatch):
    monkeypatch.setattr(_attention, "supported", lambda sum_exp: False)
    encoder = TextEncoder(default_bundle, cache_size=0, batching=False)
    assert encoder.prepare_packed_passes(), encoder.packed_status
    assert encoder._stages.attention_kernel == "onnxruntime"
    texts = sas_texts[:300]
    passes = encoder.packed_passes
    packed = encoder._run_pass(encoder._tokenizer.encode(texts), 32)
    assert encoder.packed_passes == passes + 1
    whole = TextEncoder(default_bundle, cache_size=0, batching=False).encode(texts, normalize=False)
    assert np.array_equal(packed, whole)
