/* drivers.h: the loops shared by every backend (internal; not part of the public API).
 *
 * A backend file defines its name, SK_FN(name) (the suffixed function name), the accumulator type
 * `sk_acc` and these primitives, then includes this file, so that the loops below are compiled with the
 * backend's own target attributes and inline its primitives:
 *
 *   sk_acc sk_sumsq(const float *x, size_t d);                       sum of x[k]^2
 *   void   sk_dot2(const float *q, const float *r, size_t d,          q.r and r.r in one pass
 *                  sk_acc *qr, sk_acc *rr);
 *   void   sk_dot3(const float *a, const float *b, size_t d,          a.b, a.a, b.b in one pass
 *                  sk_acc *ab, sk_acc *aa, sk_acc *bb);
 *   void   sk_dot4(const float *q, const float *r, size_t stride,     out[k] = q . r[k * stride : +d], k < 4
 *                  size_t d, sk_acc out[4]);
 *   sk_acc sk_dot(const float *a, const float *b, size_t d);         a.b
 *   void   sk_scale(const float *x, size_t d, float s, float *out);  out = x * s
 *   void   sk_row_stats(const float *s, size_t m, sk_clamp c,        clamped max and sum of s[0:m] (m > 0);
 *                       float *max, double *sum)                     NaN in s gives NaN max and NaN sum
 */
#include <float.h>
#include <math.h>

#include "simkernel.h"

/* float32 sums are trusted only when a squared norm lies in [SK_SAFE_LO, SK_SAFE_HI]: outside it (tiny or
 * huge elements) a float32 square or product may underflow to 0 or overflow to infinity, so the quantities
 * are recomputed in float64 (a rare path: zero rows and extreme magnitudes only). */
#define SK_SAFE_LO 1e-30
#define SK_SAFE_HI 1e30

static inline int SK_FN(unsafe)(double ss) { return !(ss >= SK_SAFE_LO && ss <= SK_SAFE_HI); }

/* The same inverse norm, kept in float32 by the matrix kernels: outside these bounds the row is extreme. */
static inline int SK_FN(unsafe_inv)(double inv) { return !(inv >= 1e-15 && inv <= 1e15); }

static double SK_FN(dot_f64)(const float *a, const float *b, size_t d) {
    double s = 0.0;
    for (size_t k = 0; k < d; ++k) s += (double)a[k] * (double)b[k];
    return s;
}

static double SK_FN(sumsq_f64)(const float *x, size_t d) {
    double s = (double)sk_sumsq(x, d);
    return SK_FN(unsafe)(s) ? SK_FN(dot_f64)(x, x, d) : s;
}

/* 1/sqrt(ss) for a squared norm ss: 0 for a zero row, NaN for NaN or infinity. */
static inline double SK_FN(inv_norm)(double ss) {
    if (ss > 0.0 && ss <= DBL_MAX) return 1.0 / sqrt(ss);
    if (ss == 0.0) return 0.0;
    return NAN;
}

/* Cosine from a dot product and two squared norms (see the numerics in simkernel.h). */
static inline float SK_FN(cos_from)(double ab, double aa, double bb) {
    if (aa > 0.0 && bb > 0.0 && aa <= DBL_MAX && bb <= DBL_MAX) return (float)(ab / (sqrt(aa) * sqrt(bb)));
    return (float)(ab * SK_FN(inv_norm)(aa) * SK_FN(inv_norm)(bb));
}

/* The cosine entirely in float64 (the path of extreme rows). */
static float SK_FN(cos_exact)(const float *a, const float *b, size_t d) {
    return SK_FN(cos_from)(SK_FN(dot_f64)(a, b, d), SK_FN(dot_f64)(a, a, d), SK_FN(dot_f64)(b, b, d));
}

/* Running clamp + max + sum of a group of similarities. NaN is sticky in both. */
static inline void SK_FN(push)(float s, sk_clamp c, float *mx, double *sum) {
    if (c.enabled) s = s < c.lo ? c.lo : (s > c.hi ? c.hi : s);
    if (s > *mx || s != s) *mx = (*mx != *mx) ? *mx : s;
    *sum += s;
}

static inline void SK_FN(finish)(size_t count, float mx, double sum, float *out_max, float *out_mean, size_t i) {
    if (out_max) out_max[i] = count ? mx : 0.0f;
    if (out_mean) out_mean[i] = count ? (float)(sum / (double)count) : 0.0f;
}

static void SK_FN(normalize)(const float *x, size_t n, size_t d, float *out) {
    for (size_t i = 0; i < n; ++i) {
        const float *row = x + i * d;
        double inv = SK_FN(inv_norm)(SK_FN(sumsq_f64)(row, d));
        if (SK_FN(unsafe_inv)(inv) && inv != 0.0) {
            for (size_t k = 0; k < d; ++k) out[i * d + k] = (float)((double)row[k] * inv);
        } else {
            sk_scale(row, d, (float)inv, out + i * d);
        }
    }
}

static void SK_FN(paired_cosine)(const float *a, const float *b, size_t n, size_t d, float *out) {
    for (size_t i = 0; i < n; ++i) {
        sk_acc ab, aa, bb;
        sk_dot3(a + i * d, b + i * d, d, &ab, &aa, &bb);
        if (SK_FN(unsafe)((double)aa) || SK_FN(unsafe)((double)bb)) {
            const float *x = a + i * d, *y = b + i * d;
            out[i] = SK_FN(cos_from)(SK_FN(dot_f64)(x, y, d), SK_FN(dot_f64)(x, x, d), SK_FN(dot_f64)(y, y, d));
        } else {
            out[i] = SK_FN(cos_from)((double)ab, (double)aa, (double)bb);
        }
    }
}

/* inv[j] = 1 / ||x[j]|| (0 for zero rows, NaN for NaN rows), in float32. */
static void SK_FN(inv_norms)(const float *x, size_t n, size_t d, float *inv) {
    for (size_t i = 0; i < n; ++i) inv[i] = (float)SK_FN(inv_norm)(SK_FN(sumsq_f64)(x + i * d, d));
}

/* Similarities of one query row (inverse norm iq) against m refs with inverse norms ib, into s[0:m].
 * A pair with an extreme row (inverse norm outside [1e-15, 1e15]) has its dot product redone in float64. */
static inline void SK_FN(sims_row)(const float *q, double iq, const float *b, const float *ib, size_t m, size_t d,
                                   float *s) {
    int q_extreme = SK_FN(unsafe_inv)(iq) && iq != 0.0;
    size_t j = 0;
    for (; j + 4 <= m; j += 4) {
        sk_acc dots[4];
        sk_dot4(q, b + j * d, d, d, dots);
        for (int k = 0; k < 4; ++k) {
            double dot = (double)dots[k], ibk = (double)ib[j + k];
            s[j + k] = (q_extreme || (SK_FN(unsafe_inv)(ibk) && ibk != 0.0))
                           ? SK_FN(cos_exact)(q, b + (j + k) * d, d)
                           : (float)(dot * iq * ibk);
        }
    }
    for (; j < m; ++j) {
        double dot = (double)sk_dot(q, b + j * d, d), ibj = (double)ib[j];
        s[j] = (q_extreme || (SK_FN(unsafe_inv)(ibj) && ibj != 0.0)) ? SK_FN(cos_exact)(q, b + j * d, d)
                                                                   : (float)(dot * iq * ibj);
    }
}

static void SK_FN(cosine_matrix)(const float *a, size_t n, const float *b, size_t m, size_t d, float *work,
                                 float *out) {
    float *ia = work, *ib = work + n;
    SK_FN(inv_norms)(a, n, d, ia);
    SK_FN(inv_norms)(b, m, d, ib);
    for (size_t i = 0; i < n; ++i) SK_FN(sims_row)(a + i * d, (double)ia[i], b, ib, m, d, out + i * m);
}

static void SK_FN(cosine_reduce)(const float *queries, size_t nq, const float *refs, const int64_t *offsets,
                                 size_t d, sk_clamp clamp, float *out_max, float *out_mean) {
    for (size_t i = 0; i < nq; ++i) {
        const float *q = queries + i * d;
        double qq = SK_FN(sumsq_f64)(q, d), iq = SK_FN(inv_norm)(qq);
        int q_extreme = SK_FN(unsafe)(qq);
        size_t beg = (size_t)offsets[i], end = (size_t)offsets[i + 1];
        float mx = -INFINITY;
        double sum = 0.0;
        for (size_t j = beg; j < end; ++j) {
            sk_acc qr, rr;
            const float *r = refs + j * d;
            sk_dot2(q, r, d, &qr, &rr);
            double dqr = (double)qr, drr = (double)rr;
            if (q_extreme || SK_FN(unsafe)(drr)) {
                dqr = SK_FN(dot_f64)(q, r, d);
                drr = SK_FN(dot_f64)(r, r, d);
            }
            float s = (float)(dqr * iq * SK_FN(inv_norm)(drr));
            SK_FN(push)(s, clamp, &mx, &sum);
        }
        SK_FN(finish)(end - beg, mx, sum, out_max, out_mean, i);
    }
}

static void SK_FN(reduce_rows)(const float *sims, size_t n, size_t m, size_t stride, sk_clamp clamp,
                               float *out_max, float *out_mean) {
    for (size_t i = 0; i < n; ++i) {
        float mx = 0.0f;
        double sum = 0.0;
        if (m) sk_row_stats(sims + i * stride, m, clamp, &mx, &sum);
        if (sum != sum) mx = NAN;
        SK_FN(finish)(m, mx, sum, out_max, out_mean, i);
    }
}

static void SK_FN(cosine_reduce_dense)(const float *queries, size_t nq, const float *refs, size_t nr, size_t d,
                                       sk_clamp clamp, float *work, float *out_max, float *out_mean) {
    float row[64];
    SK_FN(inv_norms)(refs, nr, d, work);
    for (size_t i = 0; i < nq; ++i) {
        const float *q = queries + i * d;
        double iq = SK_FN(inv_norm)(SK_FN(sumsq_f64)(q, d));
        float mx = 0.0f;
        double sum = 0.0;
        for (size_t j = 0; j < nr; j += 64) {
            size_t len = nr - j < 64 ? nr - j : 64;
            float bmx;
            double bsum;
            SK_FN(sims_row)(q, iq, refs + j * d, work + j, len, d, row);
            sk_row_stats(row, len, clamp, &bmx, &bsum);
            mx = (j == 0 || bmx > mx) ? bmx : mx;
            sum += bsum;
        }
        if (sum != sum) mx = NAN;
        SK_FN(finish)(nr, mx, sum, out_max, out_mean, i);
    }
}

/* The larger of a running maximum m and a similarity s, NaN sticky: a NaN s makes it NaN, and a NaN m stays. */
static inline float SK_FN(max_sticky)(float m, float s) { return (s > m || s != s) ? s : m; }

/* A side's score: the weighted sum of its maxima over its weight sum, 0 when the weights sum to 0. */
static inline float SK_FN(weighted_mean)(double weighted_sum, double weight_sum) {
    return weight_sum == 0.0 ? 0.0f : (float)(weighted_sum / weight_sum);
}

/* Greedy matching of one pair: nc candidate rows `cand` (weights cw or NULL) against nr reference rows
 * `ref` (weights rw or NULL); col_max holds nr floats of scratch. See greedy_match in simkernel.h. */
static void SK_FN(greedy_pair)(const float *cand, size_t nc, const float *cw, const float *ref, size_t nr,
                               const float *rw, size_t d, float *col_max, float *out_p, float *out_r,
                               float *out_f) {
    if (nc == 0 || nr == 0) {
        *out_p = *out_r = *out_f = 0.0f;
        return;
    }
    for (size_t j = 0; j < nr; ++j) col_max[j] = -INFINITY;
    double p_sum = 0.0, p_weight = 0.0;
    size_t i = 0;
    /* four candidate rows at a time: they stay in L1 while every reference row streams past them once */
    for (; i + 4 <= nc; i += 4) {
        const float *block = cand + i * d;
        float row_max[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
        for (size_t j = 0; j < nr; ++j) {
            sk_acc dots[4];
            sk_dot4(ref + j * d, block, d, d, dots);
            float column = col_max[j];
            for (int k = 0; k < 4; ++k) {
                float s = (float)dots[k];
                row_max[k] = SK_FN(max_sticky)(row_max[k], s);
                column = SK_FN(max_sticky)(column, s);
            }
            col_max[j] = column;
        }
        for (int k = 0; k < 4; ++k) {
            double w = cw ? (double)cw[i + (size_t)k] : 1.0;
            p_sum += w * (double)row_max[k];
            p_weight += w;
        }
    }
    for (; i < nc; ++i) {
        const float *row = cand + i * d;
        float row_max = -INFINITY;
        for (size_t j = 0; j < nr; ++j) {
            float s = (float)sk_dot(row, ref + j * d, d);
            row_max = SK_FN(max_sticky)(row_max, s);
            col_max[j] = SK_FN(max_sticky)(col_max[j], s);
        }
        double w = cw ? (double)cw[i] : 1.0;
        p_sum += w * (double)row_max;
        p_weight += w;
    }
    double r_sum = 0.0, r_weight = 0.0;
    for (size_t j = 0; j < nr; ++j) {
        double w = rw ? (double)rw[j] : 1.0;
        r_sum += w * (double)col_max[j];
        r_weight += w;
    }
    float p = SK_FN(weighted_mean)(p_sum, p_weight), r = SK_FN(weighted_mean)(r_sum, r_weight);
    double f = 2.0 * (double)p * (double)r / ((double)p + (double)r);
    *out_p = p;
    *out_r = r;
    *out_f = f != f ? 0.0f : (float)f;
}

static void SK_FN(greedy_match)(const float *cand, const int64_t *cand_offsets, const float *cand_weights,
                                const float *ref, const int64_t *ref_offsets, const float *ref_weights,
                                const int64_t *pairs, size_t n_pairs, size_t d, float *col_max, float *out_p,
                                float *out_r, float *out_f) {
    for (size_t k = 0; k < n_pairs; ++k) {
        size_t c = (size_t)pairs[2 * k], r = (size_t)pairs[2 * k + 1];
        size_t cb = (size_t)cand_offsets[c], ce = (size_t)cand_offsets[c + 1];
        size_t rb = (size_t)ref_offsets[r], re = (size_t)ref_offsets[r + 1];
        SK_FN(greedy_pair)(cand + cb * d, ce - cb, cand_weights ? cand_weights + cb : NULL, ref + rb * d, re - rb,
                           ref_weights ? ref_weights + rb : NULL, d, col_max, out_p + k, out_r + k, out_f + k);
    }
}

#define SK_BACKEND_TABLE(label)                                                                           \
    {                                                                                                     \
        label, SK_FN(normalize), SK_FN(paired_cosine), SK_FN(cosine_matrix), SK_FN(cosine_reduce),        \
            SK_FN(cosine_reduce_dense), SK_FN(reduce_rows), SK_FN(greedy_match)                           \
    }
