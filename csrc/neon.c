/* neon.c: AArch64 Advanced SIMD backend (compiled only on aarch64, where NEON is always present).
 * float32 accumulation in 4-lane registers, several independent accumulators, scalar float32 tails. */
#include <arm_neon.h>
#include <math.h>

#include "simkernel.h"

#define SK_FN(name) sk_neon_##name
typedef float sk_acc;

static inline sk_acc sk_dot(const float *a, const float *b, size_t d) {
    float32x4_t s0 = vdupq_n_f32(0), s1 = vdupq_n_f32(0), s2 = vdupq_n_f32(0), s3 = vdupq_n_f32(0);
    size_t k = 0;
    for (; k + 16 <= d; k += 16) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + k), vld1q_f32(b + k));
        s1 = vfmaq_f32(s1, vld1q_f32(a + k + 4), vld1q_f32(b + k + 4));
        s2 = vfmaq_f32(s2, vld1q_f32(a + k + 8), vld1q_f32(b + k + 8));
        s3 = vfmaq_f32(s3, vld1q_f32(a + k + 12), vld1q_f32(b + k + 12));
    }
    for (; k + 4 <= d; k += 4) s0 = vfmaq_f32(s0, vld1q_f32(a + k), vld1q_f32(b + k));
    float tail = 0.0f;
    for (; k < d; ++k) tail += a[k] * b[k];
    return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3))) + tail;
}

static inline sk_acc sk_sumsq(const float *x, size_t d) { return sk_dot(x, x, d); }

static inline void sk_dot2(const float *q, const float *r, size_t d, sk_acc *qr, sk_acc *rr) {
    float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0), b0 = vdupq_n_f32(0), b1 = vdupq_n_f32(0);
    size_t k = 0;
    for (; k + 8 <= d; k += 8) {
        float32x4_t r0 = vld1q_f32(r + k), r1 = vld1q_f32(r + k + 4);
        a0 = vfmaq_f32(a0, vld1q_f32(q + k), r0);
        a1 = vfmaq_f32(a1, vld1q_f32(q + k + 4), r1);
        b0 = vfmaq_f32(b0, r0, r0);
        b1 = vfmaq_f32(b1, r1, r1);
    }
    float tq = 0.0f, tr = 0.0f;
    for (; k < d; ++k) {
        tq += q[k] * r[k];
        tr += r[k] * r[k];
    }
    *qr = vaddvq_f32(vaddq_f32(a0, a1)) + tq;
    *rr = vaddvq_f32(vaddq_f32(b0, b1)) + tr;
}

static inline void sk_dot3(const float *a, const float *b, size_t d, sk_acc *ab, sk_acc *aa, sk_acc *bb) {
    float32x4_t ab0 = vdupq_n_f32(0), ab1 = vdupq_n_f32(0), aa0 = vdupq_n_f32(0), aa1 = vdupq_n_f32(0),
                bb0 = vdupq_n_f32(0), bb1 = vdupq_n_f32(0);
    size_t k = 0;
    for (; k + 8 <= d; k += 8) {
        float32x4_t x0 = vld1q_f32(a + k), x1 = vld1q_f32(a + k + 4);
        float32x4_t y0 = vld1q_f32(b + k), y1 = vld1q_f32(b + k + 4);
        ab0 = vfmaq_f32(ab0, x0, y0);
        ab1 = vfmaq_f32(ab1, x1, y1);
        aa0 = vfmaq_f32(aa0, x0, x0);
        aa1 = vfmaq_f32(aa1, x1, x1);
        bb0 = vfmaq_f32(bb0, y0, y0);
        bb1 = vfmaq_f32(bb1, y1, y1);
    }
    float tab = 0.0f, taa = 0.0f, tbb = 0.0f;
    for (; k < d; ++k) {
        tab += a[k] * b[k];
        taa += a[k] * a[k];
        tbb += b[k] * b[k];
    }
    *ab = vaddvq_f32(vaddq_f32(ab0, ab1)) + tab;
    *aa = vaddvq_f32(vaddq_f32(aa0, aa1)) + taa;
    *bb = vaddvq_f32(vaddq_f32(bb0, bb1)) + tbb;
}

static inline void sk_dot4(const float *q, const float *r, size_t stride, size_t d, sk_acc out[4]) {
    const float *r0 = r, *r1 = r + stride, *r2 = r + 2 * stride, *r3 = r + 3 * stride;
    float32x4_t s0 = vdupq_n_f32(0), s1 = vdupq_n_f32(0), s2 = vdupq_n_f32(0), s3 = vdupq_n_f32(0);
    size_t k = 0;
    for (; k + 4 <= d; k += 4) {
        float32x4_t x = vld1q_f32(q + k);
        s0 = vfmaq_f32(s0, x, vld1q_f32(r0 + k));
        s1 = vfmaq_f32(s1, x, vld1q_f32(r1 + k));
        s2 = vfmaq_f32(s2, x, vld1q_f32(r2 + k));
        s3 = vfmaq_f32(s3, x, vld1q_f32(r3 + k));
    }
    float u0 = 0.0f, u1 = 0.0f, u2 = 0.0f, u3 = 0.0f;
    for (; k < d; ++k) {
        u0 += q[k] * r0[k];
        u1 += q[k] * r1[k];
        u2 += q[k] * r2[k];
        u3 += q[k] * r3[k];
    }
    out[0] = vaddvq_f32(s0) + u0;
    out[1] = vaddvq_f32(s1) + u1;
    out[2] = vaddvq_f32(s2) + u2;
    out[3] = vaddvq_f32(s3) + u3;
}

static inline void sk_scale(const float *x, size_t d, float s, float *out) {
    size_t k = 0;
    for (; k + 4 <= d; k += 4) vst1q_f32(out + k, vmulq_n_f32(vld1q_f32(x + k), s));
    for (; k < d; ++k) out[k] = x[k] * s;
}

/* vmaxq/vminq propagate NaN, and the sum reports it to the caller as well. */
static inline void sk_row_stats(const float *s, size_t m, sk_clamp c, float *max, double *sum) {
    float32x4_t lo = vdupq_n_f32(c.lo), hi = vdupq_n_f32(c.hi);
    float32x4_t mx0 = vdupq_n_f32(-INFINITY), sm0 = vdupq_n_f32(0);
    size_t k = 0;
    for (; k + 4 <= m; k += 4) {
        float32x4_t v = vld1q_f32(s + k);
        if (c.enabled) v = vminq_f32(hi, vmaxq_f32(lo, v));
        mx0 = vmaxq_f32(mx0, v);
        sm0 = vaddq_f32(sm0, v);
    }
    float mx = vmaxvq_f32(mx0), total = vaddvq_f32(sm0);
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

const sk_backend sk_backend_neon = SK_BACKEND_TABLE("neon");
