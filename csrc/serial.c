/* serial.c: the portable reference backend, plain C99, float64 accumulation. Runs on every CPU; the SIMD
 * backends are tested against the same float64 reference, and this one is the fallback of last resort. */
#include <math.h>

#include "simkernel.h"

#define SK_FN(name) sk_serial_##name
typedef double sk_acc;

static inline sk_acc sk_sumsq(const float *x, size_t d) {
    double s = 0.0;
    for (size_t k = 0; k < d; ++k) s += (double)x[k] * (double)x[k];
    return s;
}

static inline sk_acc sk_dot(const float *a, const float *b, size_t d) {
    double s = 0.0;
    for (size_t k = 0; k < d; ++k) s += (double)a[k] * (double)b[k];
    return s;
}

static inline void sk_dot2(const float *q, const float *r, size_t d, sk_acc *qr, sk_acc *rr) {
    double sqr = 0.0, srr = 0.0;
    for (size_t k = 0; k < d; ++k) {
        sqr += (double)q[k] * (double)r[k];
        srr += (double)r[k] * (double)r[k];
    }
    *qr = sqr;
    *rr = srr;
}

static inline void sk_dot3(const float *a, const float *b, size_t d, sk_acc *ab, sk_acc *aa, sk_acc *bb) {
    double sab = 0.0, saa = 0.0, sbb = 0.0;
    for (size_t k = 0; k < d; ++k) {
        sab += (double)a[k] * (double)b[k];
        saa += (double)a[k] * (double)a[k];
        sbb += (double)b[k] * (double)b[k];
    }
    *ab = sab;
    *aa = saa;
    *bb = sbb;
}

static inline void sk_dot4(const float *q, const float *r, size_t stride, size_t d, sk_acc out[4]) {
    for (int j = 0; j < 4; ++j) out[j] = sk_dot(q, r + (size_t)j * stride, d);
}

static inline void sk_scale(const float *x, size_t d, float s, float *out) {
    for (size_t k = 0; k < d; ++k) out[k] = x[k] * s;
}

static inline void sk_row_stats(const float *s, size_t m, sk_clamp c, float *max, double *sum) {
    float mx = -INFINITY;
    double total = 0.0;
    for (size_t k = 0; k < m; ++k) {
        float v = s[k];
        if (c.enabled) v = v < c.lo ? c.lo : (v > c.hi ? c.hi : v);
        mx = v > mx ? v : mx;
        total += v;
    }
    *max = mx;
    *sum = total;
}

#include "drivers.h"

const sk_backend sk_backend_serial = SK_BACKEND_TABLE("serial");
