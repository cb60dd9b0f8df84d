/* skylake.c: AVX-512F backend (Skylake-X and later, Zen 4 and later). float32 accumulation in 16-lane
 * registers, several independent accumulators per dot product; tails use masked loads, so no scalar loop.
 * Compiled with its own target attributes: the rest of the build stays portable. */
/* The intrinsics headers come first: they declare each intrinsic with its own target attribute. */
#include <immintrin.h>
#include <math.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#elif defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#endif

#include "simkernel.h"

#define SK_FN(name) sk_skylake_##name
typedef float sk_acc;

static inline __mmask16 sk_tail(size_t n) { return (__mmask16)((1u << n) - 1u); }

static inline sk_acc sk_dot(const float *a, const float *b, size_t d) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 64 <= d; k += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(b + k), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k + 16), _mm512_loadu_ps(b + k + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k + 32), _mm512_loadu_ps(b + k + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k + 48), _mm512_loadu_ps(b + k + 48), s3);
    }
    for (; k + 16 <= d; k += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(b + k), s0);
    if (k < d) {
        __mmask16 m = sk_tail(d - k);
        s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + k), _mm512_maskz_loadu_ps(m, b + k), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static inline sk_acc sk_sumsq(const float *x, size_t d) { return sk_dot(x, x, d); }

static inline void sk_dot2(const float *q, const float *r, size_t d, sk_acc *qr, sk_acc *rr) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 32 <= d; k += 32) {
        __m512 r0 = _mm512_loadu_ps(r + k), r1 = _mm512_loadu_ps(r + k + 16);
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + k), r0, a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + k + 16), r1, a1);
        b0 = _mm512_fmadd_ps(r0, r0, b0);
        b1 = _mm512_fmadd_ps(r1, r1, b1);
    }
    for (; k < d; k += 16) {
        __mmask16 m = d - k >= 16 ? (__mmask16)0xFFFF : sk_tail(d - k);
        __m512 r0 = _mm512_maskz_loadu_ps(m, r + k);
        a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + k), r0, a0);
        b0 = _mm512_fmadd_ps(r0, r0, b0);
    }
    *qr = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    *rr = _mm512_reduce_add_ps(_mm512_add_ps(b0, b1));
}

static inline void sk_dot3(const float *a, const float *b, size_t d, sk_acc *ab, sk_acc *aa, sk_acc *bb) {
    __m512 ab0 = _mm512_setzero_ps(), ab1 = _mm512_setzero_ps(), aa0 = _mm512_setzero_ps(),
           aa1 = _mm512_setzero_ps(), bb0 = _mm512_setzero_ps(), bb1 = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 32 <= d; k += 32) {
        __m512 x0 = _mm512_loadu_ps(a + k), x1 = _mm512_loadu_ps(a + k + 16);
        __m512 y0 = _mm512_loadu_ps(b + k), y1 = _mm512_loadu_ps(b + k + 16);
        ab0 = _mm512_fmadd_ps(x0, y0, ab0);
        ab1 = _mm512_fmadd_ps(x1, y1, ab1);
        aa0 = _mm512_fmadd_ps(x0, x0, aa0);
        aa1 = _mm512_fmadd_ps(x1, x1, aa1);
        bb0 = _mm512_fmadd_ps(y0, y0, bb0);
        bb1 = _mm512_fmadd_ps(y1, y1, bb1);
    }
    for (; k < d; k += 16) {
        __mmask16 m = d - k >= 16 ? (__mmask16)0xFFFF : sk_tail(d - k);
        __m512 x0 = _mm512_maskz_loadu_ps(m, a + k), y0 = _mm512_maskz_loadu_ps(m, b + k);
        ab0 = _mm512_fmadd_ps(x0, y0, ab0);
        aa0 = _mm512_fmadd_ps(x0, x0, aa0);
        bb0 = _mm512_fmadd_ps(y0, y0, bb0);
    }
    *ab = _mm512_reduce_add_ps(_mm512_add_ps(ab0, ab1));
    *aa = _mm512_reduce_add_ps(_mm512_add_ps(aa0, aa1));
    *bb = _mm512_reduce_add_ps(_mm512_add_ps(bb0, bb1));
}

static inline void sk_dot4(const float *q, const float *r, size_t stride, size_t d, sk_acc out[4]) {
    const float *r0 = r, *r1 = r + stride, *r2 = r + 2 * stride, *r3 = r + 3 * stride;
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    __m512 t0 = _mm512_setzero_ps(), t1 = _mm512_setzero_ps(), t2 = _mm512_setzero_ps(), t3 = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 32 <= d; k += 32) {
        __m512 x = _mm512_loadu_ps(q + k), y = _mm512_loadu_ps(q + k + 16);
        s0 = _mm512_fmadd_ps(x, _mm512_loadu_ps(r0 + k), s0);
        s1 = _mm512_fmadd_ps(x, _mm512_loadu_ps(r1 + k), s1);
        s2 = _mm512_fmadd_ps(x, _mm512_loadu_ps(r2 + k), s2);
        s3 = _mm512_fmadd_ps(x, _mm512_loadu_ps(r3 + k), s3);
        t0 = _mm512_fmadd_ps(y, _mm512_loadu_ps(r0 + k + 16), t0);
        t1 = _mm512_fmadd_ps(y, _mm512_loadu_ps(r1 + k + 16), t1);
        t2 = _mm512_fmadd_ps(y, _mm512_loadu_ps(r2 + k + 16), t2);
        t3 = _mm512_fmadd_ps(y, _mm512_loadu_ps(r3 + k + 16), t3);
    }
    for (; k < d; k += 16) {
        __mmask16 m = d - k >= 16 ? (__mmask16)0xFFFF : sk_tail(d - k);
        __m512 x = _mm512_maskz_loadu_ps(m, q + k);
        s0 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, r0 + k), s0);
        s1 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, r1 + k), s1);
        s2 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, r2 + k), s2);
        s3 = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(m, r3 + k), s3);
    }
    out[0] = _mm512_reduce_add_ps(_mm512_add_ps(s0, t0));
    out[1] = _mm512_reduce_add_ps(_mm512_add_ps(s1, t1));
    out[2] = _mm512_reduce_add_ps(_mm512_add_ps(s2, t2));
    out[3] = _mm512_reduce_add_ps(_mm512_add_ps(s3, t3));
}

static inline void sk_scale(const float *x, size_t d, float s, float *out) {
    __m512 v = _mm512_set1_ps(s);
    size_t k = 0;
    for (; k + 16 <= d; k += 16) _mm512_storeu_ps(out + k, _mm512_mul_ps(_mm512_loadu_ps(x + k), v));
    if (k < d) {
        __mmask16 m = sk_tail(d - k);
        _mm512_mask_storeu_ps(out + k, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + k), v));
    }
}

/* max_ps(lo, v) and min_ps(hi, v) return v when v is NaN (second operand), so NaN survives the clamp and
 * reaches the sum, which the caller uses to report a NaN max. */
static inline void sk_row_stats(const float *s, size_t m, sk_clamp c, float *max, double *sum) {
    __m512 lo = _mm512_set1_ps(c.lo), hi = _mm512_set1_ps(c.hi);
    __m512 mx0 = _mm512_set1_ps(-INFINITY), mx1 = mx0, sm0 = _mm512_setzero_ps(), sm1 = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 32 <= m; k += 32) {
        __m512 v0 = _mm512_loadu_ps(s + k), v1 = _mm512_loadu_ps(s + k + 16);
        if (c.enabled) {
            v0 = _mm512_min_ps(hi, _mm512_max_ps(lo, v0));
            v1 = _mm512_min_ps(hi, _mm512_max_ps(lo, v1));
        }
        mx0 = _mm512_max_ps(mx0, v0);
        mx1 = _mm512_max_ps(mx1, v1);
        sm0 = _mm512_add_ps(sm0, v0);
        sm1 = _mm512_add_ps(sm1, v1);
    }
    for (; k < m; k += 16) {
        __mmask16 mk = m - k >= 16 ? (__mmask16)0xFFFF : sk_tail(m - k);
        __m512 v = _mm512_maskz_loadu_ps(mk, s + k);
        if (c.enabled) v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
        mx0 = _mm512_mask_max_ps(mx0, mk, mx0, v);
        sm0 = _mm512_mask_add_ps(sm0, mk, sm0, v);
    }
    *max = _mm512_reduce_max_ps(_mm512_max_ps(mx0, mx1));
    *sum = (double)_mm512_reduce_add_ps(_mm512_add_ps(sm0, sm1));
}

#include "drivers.h"

const sk_backend sk_backend_skylake = SK_BACKEND_TABLE("skylake");

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#elif defined(__clang__)
#pragma clang attribute pop
#endif
