# cython: language_level=3
"""Cython layer of the attention core (csrc/attention.h): the self-attention of one exact-length batch of a
BERT-family layer in onnxruntime's own CPU arithmetic, for packed passes
(:mod:`simkernel.runtime.inference.packed_passes`), which check its bits against the graph before using it.

Arrays must already be float32 and C-contiguous (the packed stages' own outputs and views of them): a wrong
one raises ``ValueError`` naming it. The native call runs without the GIL.
"""

cimport numpy as cnp

cnp.import_array()


cdef extern from "attention.h" nogil:
    int SK_SUM_EXP_AVX512F
    int SK_SUM_EXP_FMA3
    int SK_ATTENTION_UNSUPPORTED
    int SK_ATTENTION_BAD_SHAPE
    int SK_ATTENTION_NO_MEMORY
    int sk_attention_supported(int sum_exp)
    int sk_attention(const float *query, const float *key, const float *value, const float *mask, size_t rows,
                     size_t length, size_t heads, size_t width, float alpha, int sum_exp, float *out)


# the sums of exp() MLAS may use, by the name of the instruction set it picked (attention.c)
SUM_EXP = {"avx512f": SK_SUM_EXP_AVX512F, "fma3": SK_SUM_EXP_FMA3}


def supported(str sum_exp):
    """True when this CPU runs the kernel with the sum of exp() named ``sum_exp`` ("avx512f" or "fma3")."""
    return bool(sk_attention_supported(_code(sum_exp)))


cdef int _code(str sum_exp) except -1:
    if sum_exp not in SUM_EXP:
        raise ValueError(f"sum_exp must be one of {sorted(SUM_EXP)}, got {sum_exp!r}")
    return SUM_EXP[sum_exp]


cdef const float *_floats(object x, str name, int ndim) except NULL:
    if not (
        isinstance(x, cnp.ndarray)
        and cnp.PyArray_TYPE(<cnp.ndarray>x) == cnp.NPY_FLOAT32
        and cnp.PyArray_NDIM(<cnp.ndarray>x) == ndim
        and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>x)
        and cnp.PyArray_ISALIGNED(<cnp.ndarray>x)
    ):
        raise ValueError(f"{name} must be a C-contiguous float32 numpy array of {ndim} dimensions, got {type(x).__name__} {getattr(x, 'dtype', '')} {getattr(x, 'shape', '')}")
    return <const float *>cnp.PyArray_DATA(<cnp.ndarray>x)


def attention(query, key, value, mask, size_t rows, size_t length, size_t heads, float alpha, str sum_exp, out):
    """Write into ``out`` the attention context of ``rows`` texts of ``length`` tokens:
    softmax(query . key^T * alpha + mask) . value per text and head.

    ``query``, ``key``, ``value`` and ``out``: float32 ``(rows * length, hidden)``, a head's ``hidden / heads``
    columns side by side; ``mask``: float32 ``(rows, 1, length, length)``, added to the scores (the graph's
    additive attention mask). ``sum_exp``: the sum of exp() of onnxruntime's softmax to reproduce ("avx512f" or
    "fma3", see csrc/attention.c). Raises ``ValueError`` on a wrong array or shape, ``RuntimeError`` when this
    CPU lacks the instruction set."""
    cdef int code = _code(sum_exp)
    cdef const float *q = _floats(query, "query", 2)
    cdef const float *k = _floats(key, "key", 2)
    cdef const float *v = _floats(value, "value", 2)
    cdef const float *m = _floats(mask, "mask", 4)
    cdef float *o = <float *>_floats(out, "out", 2)
    if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>out):
        raise ValueError("out must be a writeable array")
    tokens = rows * length
    if heads == 0 or tokens == 0:
        raise ValueError(f"rows, length and heads must be positive, got {rows}, {length}, {heads}")
    hidden = query.shape[1]
    for name, x in (("key", key), ("value", value), ("out", out)):
        if x.shape != query.shape:
            raise ValueError(f"{name} has shape {x.shape}, query {query.shape}: they must be equal")
    if query.shape[0] != tokens or hidden % heads:
        raise ValueError(f"query has shape {query.shape}, not (rows * length, hidden) = ({tokens}, a multiple of {heads} heads)")
    if mask.shape != (rows, 1, length, length):
        raise ValueError(f"mask has shape {mask.shape}, not (rows, 1, length, length) = ({rows}, 1, {length}, {length})")
    cdef size_t width = hidden // heads
    cdef int status
    with nogil:
        status = sk_attention(q, k, v, m, rows, length, heads, width, alpha, code, o)
    if status == SK_ATTENTION_UNSUPPORTED:
        raise RuntimeError(f"this CPU cannot run the attention kernel with the {sum_exp} sum of exp(); check attention.supported({sum_exp!r}) first")
    if status == SK_ATTENTION_BAD_SHAPE:
        raise ValueError(f"the attention kernel takes heads of 8 to 64 floats in steps of 8, got {width} ({hidden} / {heads} heads)")
    if status == SK_ATTENTION_NO_MEMORY:
        raise MemoryError(f"the attention kernel could not allocate its scratch for {length} tokens")
