/* haswell.c: AVX2 + FMA backend (Haswell and later, Zen 1 and later). float32 accumulation in 8-lane
 * registers, several independent accumulators per dot product, scalar float32 tails. Compiled with its own
 * target attributes: the rest of the build stays portable. */
/* The intrinsics headers come first: they declare each intrinsic with its own target attribute. */
#include <immintrin.h>
#include <math.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#elif defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#endif

#include "simkernel.h"

#define SK_FN(name) sk_haswell_##name
typedef float sk_acc;

static inline float sk_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float sk_hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline sk_acc sk_dot(const float *a, const float *b, size_t d) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 32 <= d; k += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 8), _mm256_loadu_ps(b + k + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 16), _mm256_loadu_ps(b + k + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 24), _mm256_loadu_ps(b + k + 24), s3);
    }
    for (; k + 8 <= d; k += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s0);
    float tail = 0.0f;
    for (; k < d; ++k) tail += a[k] * b[k];
    return sk_hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3))) + tail;
}

static inline sk_acc sk_sumsq(const float *x, size_t d) { return sk_dot(x, x, d); }

static inline void sk_dot2(const float *q, const float *r, size_t d, sk_acc *qr, sk_acc *rr) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 16 <= d; k += 16) {
        __m256 r0 = _mm256_loadu_ps(r + k), r1 = _mm256_loadu_ps(r + k + 8);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + k), r0, a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + k + 8), r1, a1);
        b0 = _mm256_fmadd_ps(r0, r0, b0);
        b1 = _mm256_fmadd_ps(r1, r1, b1);
    }
    for (; k + 8 <= d; k += 8) {
        __m256 r0 = _mm256_loadu_ps(r + k);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + k), r0, a0);
        b0 = _mm256_fmadd_ps(r0, r0, b0);
    }
    float tq = 0.0f, tr = 0.0f;
    for (; k < d; ++k) {
        tq += q[k] * r[k];
        tr += r[k] * r[k];
    }
    *qr = sk_hsum(_mm256_add_ps(a0, a1)) + tq;
    *rr = sk_hsum(_mm256_add_ps(b0, b1)) + tr;
}

static inline void sk_dot3(const float *a, const float *b, size_t d, sk_acc *ab, sk_acc *aa, sk_acc *bb) {
    __m256 ab0 = _mm256_setzero_ps(), ab1 = _mm256_setzero_ps(), aa0 = _mm256_setzero_ps(),
           aa1 = _mm256_setzero_ps(), bb0 = _mm256_setzero_ps(), bb1 = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 16 <= d; k += 16) {
        __m256 x0 = _mm256_loadu_ps(a + k), x1 = _mm256_loadu_ps(a + k + 8);
        __m256 y0 = _mm256_loadu_ps(b + k), y1 = _mm256_loadu_ps(b + k + 8);
        ab0 = _mm256_fmadd_ps(x0, y0, ab0);
        ab1 = _mm256_fmadd_ps(x1, y1, ab1);
        aa0 = _mm256_fmadd_ps(x0, x0, aa0);
        aa1 = _mm256_fmadd_ps(x1, x1, aa1);
        bb0 = _mm256_fmadd_ps(y0, y0, bb0);
        bb1 = _mm256_fmadd_ps(y1, y1, bb1);
    }
    for (; k + 8 <= d; k += 8) {
        __m256 x0 = _mm256_loadu_ps(a + k), y0 = _mm256_loadu_ps(b + k);
        ab0 = _mm256_fmadd_ps(x0, y0, ab0);
        aa0 = _mm256_fmadd_ps(x0, x0, aa0);
        bb0 = _mm256_fmadd_ps(y0, y0, bb0);
    }
    float tab = 0.0f, taa = 0.0f, tbb = 0.0f;
    for (; k < d; ++k) {
        tab += a[k] * b[k];
        taa += a[k] * a[k];
        tbb += b[k] * b[k];
    }
    *ab = sk_hsum(_mm256_add_ps(ab0, ab1)) + tab;
    *aa = sk_hsum(_mm256_add_ps(aa0, aa1)) + taa;
    *bb = sk_hsum(_mm256_add_ps(bb0, bb1)) + tbb;
}

static inline void sk_dot4(const float *q, const float *r, size_t stride, size_t d, sk_acc out[4]) {
    const float *r0 = r, *r1 = r + stride, *r2 = r + 2 * stride, *r3 = r + 3 * stride;
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    __m256 t0 = _mm256_setzero_ps(), t1 = _mm256_setzero_ps(), t2 = _mm256_setzero_ps(), t3 = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 16 <= d; k += 16) {
        __m256 x = _mm256_loadu_ps(q + k), y = _mm256_loadu_ps(q + k + 8);
        s0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r0 + k), s0);
        s1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r1 + k), s1);
        s2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r2 + k), s2);
        s3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r3 + k), s3);
        t0 = _mm256_fmadd_ps(y, _mm256_loadu_ps(r0 + k + 8), t0);
        t1 = _mm256_fmadd_ps(y, _mm256_loadu_ps(r1 + k + 8), t1);
        t2 = _mm256_fmadd_ps(y, _mm256_loadu_ps(r2 + k + 8), t2);
        t3 = _mm256_fmadd_ps(y, _mm256_loadu_ps(r3 + k + 8), t3);
    }
    for (; k + 8 <= d; k += 8) {
        __m256 x = _mm256_loadu_ps(q + k);
        s0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r0 + k), s0);
        s1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r1 + k), s1);
        s2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r2 + k), s2);
        s3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(r3 + k), s3);
    }
    float u0 = 0.0f, u1 = 0.0f, u2 = 0.0f, u3 = 0.0f;
    for (; k < d; ++k) {
        u0 += q[k] * r0[k];
        u1 += q[k] * r1[k];
        u2 += q[k] * r2[k];
        u3 += q[k] * r3[k];
    }
    out[0] = sk_hsum(_mm256_add_ps(s0, t0)) + u0;
    out[1] = sk_hsum(_mm256_add_ps(s1, t1)) + u1;
    out[2] = sk_hsum(_mm256_add_ps(s2, t2)) + u2;
    out[3] = sk_hsum(_mm256_add_ps(s3, t3)) + u3;
}

static inline void sk_scale(const float *x, size_t d, float s, float *out) {
    __m256 v = _mm256_set1_ps(s);
    size_t k = 0;
    for (; k + 8 <= d; k += 8) _mm256_storeu_ps(out + k, _mm256_mul_ps(_mm256_loadu_ps(x + k), v));
    for (; k < d; ++k) out[k] = x[k] * s;
}

/* max_ps(lo, v) and min_ps(hi, v) return v when v is NaN (second operand), so NaN survives the clamp and
 * reaches the sum, which the caller uses to report a NaN max. */
static inline void sk_row_stats(const float *s, size_t m, sk_clamp c, float *max, double *sum) {
    __m256 lo = _mm256_set1_ps(c.lo), hi = _mm256_set1_ps(c.hi);
    __m256 mx0 = _mm256_set1_ps(-INFINITY), mx1 = mx0, sm0 = _mm256_setzero_ps(), sm1 = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 16 <= m; k += 16) {
        __m256 v0 = _mm256_loadu_ps(s + k), v1 = _mm256_loadu_ps(s + k + 8);
        if (c.enabled) {
            v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, v0));
            v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, v1));
        }
        mx0 = _mm256_max_ps(mx0, v0);
        mx1 = _mm256_max_ps(mx1, v1);
        sm0 = _mm256_add_ps(sm0, v0);
        sm1 = _mm256_add_ps(sm1, v1);
    }
    float mx = sk_hmax(_mm256_max_ps(mx0, mx1)), total = sk_hsum(_mm256_add_ps(sm0, sm1));
    for (; k < m; ++k) {
        float v = s[k];
        if (c.enabled) v = v < c.lo ? c.lo : (v > c.hi ? c.hi : v);
        mx = v > mx ? v : mx;
        total += v;
    }
    *max = mx;
    *sum = (double)total;
}

#include "drivers.h"

const sk_backend sk_backend_haswell = SK_BACKEND_TABLE("haswell");

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#elif defined(__clang__)
#pragma clang attribute pop
#endif
