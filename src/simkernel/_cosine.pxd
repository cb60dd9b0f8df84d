# cython: language_level=3
# Declarations of the native cosine kernel (csrc/simkernel.h, csrc/parallel.h) and the numpy C-API
# helpers of _cosine.pyx, which Cython reads together with this file (same module name).

cimport numpy as cnp
from libc.stdint cimport int64_t


cdef extern from "simkernel.h" nogil:
    ctypedef struct sk_cpu_features:
        int avx2
        int fma
        int avx512f
        int neon
        int avx512_bf16
        int amx_bf16

    ctypedef struct sk_clamp:
        int enabled
        float lo
        float hi

    ctypedef struct sk_backend:
        const char *name
        void (*normalize)(const float *x, size_t n, size_t d, float *out) noexcept nogil
        void (*paired_cosine)(const float *a, const float *b, size_t n, size_t d, float *out) noexcept nogil
        void (*cosine_matrix)(const float *a, size_t n, const float *b, size_t m, size_t d, float *work,
                              float *out) noexcept nogil
        void (*cosine_reduce)(const float *queries, size_t nq, const float *refs, const int64_t *offsets,
                              size_t d, sk_clamp clamp, float *out_max, float *out_mean) noexcept nogil
        void (*cosine_reduce_dense)(const float *queries, size_t nq, const float *refs, size_t nr, size_t d,
                                    sk_clamp clamp, float *work, float *out_max, float *out_mean) noexcept nogil
        void (*reduce_rows)(const float *sims, size_t n, size_t m, size_t stride, sk_clamp clamp,
                            float *out_max, float *out_mean) noexcept nogil
        void (*greedy_match)(const float *cand, const int64_t *cand_offsets, const float *cand_weights,
                             const float *ref, const int64_t *ref_offsets, const float *ref_weights,
                             const int64_t *pairs, size_t n_pairs, size_t d, float *col_max, float *out_p,
                             float *out_r, float *out_f) noexcept nogil

    void sk_init()
    sk_cpu_features sk_cpu()
    const sk_backend *sk_active()
    size_t sk_backend_count()
    const sk_backend *sk_backend_at(size_t i)
    int sk_backend_supported(const char *name)
    int sk_select_backend(const char *name)
    int64_t sk_check_offsets(const int64_t *offsets, size_t nq, size_t nr)
    int64_t sk_check_pairs(const int64_t *pairs, size_t n_pairs, size_t n_cand, size_t n_ref)
    size_t sk_longest_segment(const int64_t *offsets, size_t n)


cdef extern from "parallel.h" nogil:
    ctypedef void (*sk_range_fn)(void *ctx, size_t begin, size_t end) noexcept nogil
    void sk_parallel_ranges(const size_t *bounds, size_t parts, sk_range_fn fn, void *ctx)
    size_t sk_cpu_count()
    enum: SK_MAX_THREADS


# raw float32 data of a checked array, and new uninitialised float32 arrays (numpy C API)
cdef inline const float *_data(cnp.ndarray a) noexcept:
    return <const float *>cnp.PyArray_DATA(a)


cdef inline float *_out(cnp.ndarray a) noexcept:
    return <float *>cnp.PyArray_DATA(a)


cdef inline cnp.ndarray _empty1(cnp.npy_intp n):
    return <cnp.ndarray>cnp.PyArray_EMPTY(1, &n, cnp.NPY_FLOAT32, 0)


cdef inline cnp.ndarray _empty2(cnp.npy_intp n, cnp.npy_intp m):
    cdef cnp.npy_intp dims[2]
    dims[0] = n
    dims[1] = m
    return <cnp.ndarray>cnp.PyArray_EMPTY(2, dims, cnp.NPY_FLOAT32, 0)
