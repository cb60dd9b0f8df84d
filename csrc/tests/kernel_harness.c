/* kernel_harness.c: every kernel function of every backend this CPU runs, against a float64 reference
 * computed here and against the serial backend, in plain C (no Python), so that the same checks run
 * natively on x86-64 (serial, haswell, skylake) and on aarch64 under user-mode emulation (serial, neon).
 *
 * The cases follow tests/kernels: dims 1..40 and the wider ones up to 1024 (every SIMD tail), three kinds
 * of rows (normal, embedding-like, wide magnitudes), zero rows, NaN and infinities at the start, middle and
 * end of a row, extreme magnitudes (the float64 path), clamping, ragged groups with empty ones, dense
 * reductions across the 64-similarity block, precomputed rows with a row stride, empty inputs, d = 0,
 * in-place normalize, misaligned pointers and a seeded fuzz over random shapes; BERTScore greedy matching
 * (greedy_match) on ragged texts of unit rows with weights, pairs, NaN rows, edge cases and its own fuzz.
 *
 * Every input buffer is surrounded by NaN guards (a kernel that reads past a row's end turns its result
 * into NaN), every output buffer by sentinels (a kernel that writes outside it, or leaves an output
 * unwritten, is caught). A value passes when its NaN-ness equals the reference's and it lies within
 * tolerance(d) = 2e-6 + 3e-7 sqrt(d) of the float64 reference and within twice that of serial.
 *
 * Usage: kernel_harness [--require NAME]... [--only NAME] [--fuzz N] [--seed N]
 *   --require NAME  fail unless backend NAME is compiled in and supported by this CPU (repeatable)
 *   --only NAME     run only backend NAME
 *   --fuzz N        number of random cases per backend (default 600; greedy_match gets N / 2 more)
 * Exit status: 0 when every check passed, 1 when one failed, 2 on a usage error.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simkernel.h"

#define GUARD 8
#define SENTINEL (-7777.0f)
#define MAX_PRINTED 25
#define PI 3.14159265358979323846

static const size_t DIMS[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,  13,  14,  15,  16,  17,  18,
                              19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,  31,  32,  33,  34,  35,  36,
                              37, 38, 39, 40, 47, 48, 49, 63, 64, 65, 97, 127, 128, 129, 384, 385, 768, 1024};
#define N_DIMS (sizeof(DIMS) / sizeof(DIMS[0]))

enum kind { NORMAL, POSITIVE, SCALED, MIXED };
static const char *const KIND_NAMES[] = {"normal", "positive", "scaled", "mixed"};

static const sk_clamp NO_CLAMP = {0, 0.0f, 0.0f};

typedef struct {
    const sk_backend *be;  /* the backend under test */
    const sk_backend *ser; /* the serial backend */
    char label[200];
    long cases, values, failures;
} harness;

static harness H;

static void fail(const char *fmt, ...) {
    H.failures++;
    if (H.failures > MAX_PRINTED) return;
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL %s: %s: ", H.be->name, H.label);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

static void label(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(H.label, sizeof H.label, fmt, ap);
    va_end(ap);
}

static double tolerance(size_t d) { return 2e-6 + 3e-7 * sqrt((double)d); }

/* ---- random numbers (splitmix64), reproducible on every platform ---- */

static uint64_t rng_state = 20261129;

static uint64_t rng_u64(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(void) { return (double)(rng_u64() >> 11) * 0x1.0p-53; }

static size_t rng_below(size_t n) { return (size_t)(rng_u64() % n); }

static double rng_normal(void) {
    double u1 = rng_unit(), u2 = rng_unit();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * PI * u2);
}

/* ---- guarded buffers ---- */

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "kernel_harness: out of memory allocating %zu bytes\n", bytes);
        exit(2);
    }
    return p;
}

/* n floats with GUARD floats of `guard` on each side, the body filled with `body`. */
static float *guarded(size_t n, float guard, float body) {
    float *base = xmalloc((n + 2 * GUARD) * sizeof(float));
    for (size_t i = 0; i < GUARD; ++i) base[i] = base[GUARD + n + i] = guard;
    for (size_t i = 0; i < n; ++i) base[GUARD + i] = body;
    return base + GUARD;
}

static void release(float *p) { free(p - GUARD); }

static float *input(size_t n) { return guarded(n, NAN, NAN); }

static float *output(size_t n) { return guarded(n, SENTINEL, SENTINEL); }

static void check_guards(const float *p, size_t n, float guard, const char *what) {
    for (size_t i = 0; i < GUARD; ++i) {
        if (!same_bits(p[-1 - (long)i], guard)) {
            fail("%s: element %ld before the buffer was overwritten (%.9g)", what, -1 - (long)i, p[-1 - (long)i]);
            return;
        }
        if (!same_bits(p[n + i], guard)) {
            fail("%s: element %zu past the end (length %zu) was overwritten (%.9g)", what, n + i, n, p[n + i]);
            return;
        }
    }
}

static void fill_rows(float *x, size_t n, size_t d, enum kind kind) {
    for (size_t i = 0; i < n; ++i) {
        double scale = kind == SCALED ? pow(10.0, -6.0 + 12.0 * rng_unit()) : 1.0;
        size_t mode = rng_below(4);
        for (size_t k = 0; k < d; ++k) {
            double v;
            if (kind == POSITIVE) {
                v = 1.0 + 0.05 * rng_normal();
            } else if (kind == MIXED) {
                /* exact zeros, small integers, repeats and normals, mixed per row */
                size_t r = rng_below(8);
                if (mode == 0 && r < 3)
                    v = 0.0;
                else if (mode == 1)
                    v = (double)((long)rng_below(7) - 3);
                else if (mode == 2 && k > 0 && r < 4)
                    v = x[i * d + k - 1];
                else
                    v = rng_normal() * (r == 7 ? 1e3 : 1.0);
            } else {
                v = rng_normal() * scale;
            }
            x[i * d + k] = (float)v;
        }
    }
}

static float *random_rows(size_t n, size_t d, enum kind kind) {
    float *x = input(n * d);
    fill_rows(x, n, d, kind);
    return x;
}

/* ---- float64 reference ---- */

static void ref_sums(const float *a, const float *b, size_t d, double *ab, double *aa, double *bb) {
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

/* cos(a, b): NaN when a row holds NaN or an infinity, 0 when a row is all zeros. */
static double ref_cos(const float *a, const float *b, size_t d) {
    double ab, aa, bb;
    ref_sums(a, b, d, &ab, &aa, &bb);
    double na = sqrt(aa), nb = sqrt(bb);
    if (!isfinite(na) || !isfinite(nb)) return NAN;
    double den = na * nb;
    return den > 0.0 ? ab / den : 0.0;
}

enum how { MAX, MEAN };

/* max or mean of cnt similarities after clamping each; 0 for an empty group, NaN if any is NaN. */
static double ref_reduce(const double *s, size_t cnt, sk_clamp c, enum how how) {
    if (cnt == 0) return 0.0;
    double mx = -INFINITY, sum = 0.0;
    for (size_t j = 0; j < cnt; ++j) {
        double v = s[j];
        if (isnan(v)) return NAN;
        if (c.enabled) v = v < c.lo ? c.lo : (v > c.hi ? c.hi : v);
        mx = v > mx ? v : mx;
        sum += v;
    }
    return how == MAX ? mx : sum / (double)cnt;
}

/* ---- value checks ---- */

static void check_value(const char *what, size_t i, float got, float serial, double want, double tol) {
    H.values++;
    if (got == SENTINEL) {
        fail("%s[%zu] was never written", what, i);
        return;
    }
    if (isnan(want) || isnan(got)) {
        if (isnan(want) != isnan(got))
            fail("%s[%zu] = %.9g, float64 reference %.9g (NaN pattern differs)", what, i, got, want);
        else if (!isnan(serial))
            fail("%s[%zu] = NaN, serial %.9g (NaN pattern differs from serial)", what, i, serial);
        return;
    }
    if (isinf(want) || isinf(got)) { /* only a precomputed row holds infinities: they pass through exactly */
        if ((double)got != want)
            fail("%s[%zu] = %.9g, expected exactly %.9g", what, i, got, want);
        else if ((double)serial != want)
            fail("%s[%zu] = %.9g, serial %.9g", what, i, got, serial);
        return;
    }
    double err = fabs((double)got - want);
    if (!(err <= tol)) {
        fail("%s[%zu] = %.9g, float64 reference %.9g (error %.3g > tolerance %.3g)", what, i, got, want, err,
             tol);
        return;
    }
    double diff = fabs((double)got - (double)serial);
    if (!(diff <= 2.0 * tol))
        fail("%s[%zu] = %.9g, serial %.9g (difference %.3g > 2 x tolerance %.3g)", what, i, got, serial, diff,
             2.0 * tol);
}

static void check_same(const char *what, const float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        if (!(same_bits(x[i], y[i]) || (isnan(x[i]) && isnan(y[i])))) {
            fail("%s[%zu] = %.9g, differs from %.9g", what, i, x[i], y[i]);
            return;
        }
    }
}

/* ---- one call of each kernel, checked ---- */

static void run_normalize(const float *x, size_t n, size_t d) {
    H.cases++;
    float *out = output(n * d), *ser = output(n * d), *inplace = input(n * d);
    H.be->normalize(x, n, d, out);
    H.ser->normalize(x, n, d, ser);
    check_guards(out, n * d, SENTINEL, "normalize out");
    for (size_t i = 0; i < n; ++i) {
        double ab, ss, bb;
        ref_sums(x + i * d, x + i * d, d, &ab, &ss, &bb);
        double norm = sqrt(ss), out_ss = 0.0;
        for (size_t k = 0; k < d; ++k) {
            double want = !isfinite(norm) ? NAN : (norm > 0.0 ? (double)x[i * d + k] / norm : 0.0);
            check_value("normalize", i * d + k, out[i * d + k], ser[i * d + k], want, tolerance(d));
            if (norm == 0.0 && out[i * d + k] != 0.0f)
                fail("normalize[%zu] of a zero row = %.9g, expected 0", i * d + k, out[i * d + k]);
            out_ss += (double)out[i * d + k] * (double)out[i * d + k];
        }
        if (isfinite(norm) && norm > 0.0 && !(fabs(sqrt(out_ss) - 1.0) <= 1e-6))
            fail("normalize row %zu has norm %.9g, expected 1", i, sqrt(out_ss));
    }
    /* in place (out == x) gives the same values */
    memcpy(inplace, x, n * d * sizeof(float));
    H.be->normalize(inplace, n, d, inplace);
    check_guards(inplace, n * d, NAN, "normalize in place");
    check_same("normalize in place", inplace, out, n * d);
    release(out);
    release(ser);
    release(inplace);
}

static void run_paired(const float *a, const float *b, size_t n, size_t d) {
    H.cases++;
    float *out = output(n), *ser = output(n);
    H.be->paired_cosine(a, b, n, d, out);
    H.ser->paired_cosine(a, b, n, d, ser);
    check_guards(out, n, SENTINEL, "paired_cosine out");
    for (size_t i = 0; i < n; ++i)
        check_value("paired_cosine", i, out[i], ser[i], ref_cos(a + i * d, b + i * d, d), tolerance(d));
    release(out);
    release(ser);
}

static void run_matrix(const float *a, size_t n, const float *b, size_t m, size_t d) {
    H.cases++;
    float *out = output(n * m), *ser = output(n * m), *work = output(n + m), *swork = output(n + m);
    H.be->cosine_matrix(a, n, b, m, d, work, out);
    H.ser->cosine_matrix(a, n, b, m, d, swork, ser);
    check_guards(out, n * m, SENTINEL, "cosine_matrix out");
    check_guards(work, n + m, SENTINEL, "cosine_matrix work");
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < m; ++j)
            check_value("cosine_matrix", i * m + j, out[i * m + j], ser[i * m + j],
                        ref_cos(a + i * d, b + j * d, d), tolerance(d));
    release(out);
    release(ser);
    release(work);
    release(swork);
}

/* the clamp bounds hold exactly for a max (each similarity is clamped before the reduction) */
static void check_clamped_max(const char *what, const float *mx, const double *want, size_t n, sk_clamp c) {
    if (!c.enabled) return;
    for (size_t i = 0; i < n; ++i)
        if (!isnan(want[i]) && !(mx[i] >= c.lo && mx[i] <= c.hi))
            fail("%s[%zu] = %.9g, outside the clamp [%g, %g]", what, i, mx[i], c.lo, c.hi);
}

static void run_ragged(const float *q, size_t nq, const float *refs, const int64_t *offsets, size_t d,
                       sk_clamp c) {
    H.cases++;
    float *mx = output(nq), *mean = output(nq), *smx = output(nq), *smean = output(nq), *only = output(nq);
    size_t nr = (size_t)offsets[nq];
    double *sims = xmalloc((nr + 1) * sizeof(double)), *wmax = xmalloc((nq + 1) * sizeof(double)),
           *wmean = xmalloc((nq + 1) * sizeof(double));
    H.be->cosine_reduce(q, nq, refs, offsets, d, c, mx, mean);
    H.ser->cosine_reduce(q, nq, refs, offsets, d, c, smx, smean);
    check_guards(mx, nq, SENTINEL, "cosine_reduce out_max");
    check_guards(mean, nq, SENTINEL, "cosine_reduce out_mean");
    for (size_t i = 0; i < nq; ++i) {
        size_t beg = (size_t)offsets[i], end = (size_t)offsets[i + 1];
        for (size_t j = beg; j < end; ++j) sims[j - beg] = ref_cos(q + i * d, refs + j * d, d);
        wmax[i] = ref_reduce(sims, end - beg, c, MAX);
        wmean[i] = ref_reduce(sims, end - beg, c, MEAN);
        check_value("cosine_reduce max", i, mx[i], smx[i], wmax[i], tolerance(d));
        check_value("cosine_reduce mean", i, mean[i], smean[i], wmean[i], tolerance(d));
        if (beg == end && (mx[i] != 0.0f || mean[i] != 0.0f))
            fail("empty group %zu gives max %.9g, mean %.9g; expected 0", i, mx[i], mean[i]);
    }
    check_clamped_max("cosine_reduce max", mx, wmax, nq, c);
    /* one output at a time gives the same values as both at once */
    H.be->cosine_reduce(q, nq, refs, offsets, d, c, only, NULL);
    check_same("cosine_reduce max alone", only, mx, nq);
    H.be->cosine_reduce(q, nq, refs, offsets, d, c, NULL, only);
    check_same("cosine_reduce mean alone", only, mean, nq);
    check_guards(only, nq, SENTINEL, "cosine_reduce single output");
    free(sims);
    free(wmax);
    free(wmean);
    release(mx);
    release(mean);
    release(smx);
    release(smean);
    release(only);
}

static void run_dense(const float *q, size_t nq, const float *refs, size_t nr, size_t d, sk_clamp c) {
    H.cases++;
    float *mx = output(nq), *mean = output(nq), *smx = output(nq), *smean = output(nq), *only = output(nq);
    float *work = output(nr), *swork = output(nr);
    double *sims = xmalloc((nr + 1) * sizeof(double)), *wmax = xmalloc((nq + 1) * sizeof(double));
    H.be->cosine_reduce_dense(q, nq, refs, nr, d, c, work, mx, mean);
    H.ser->cosine_reduce_dense(q, nq, refs, nr, d, c, swork, smx, smean);
    check_guards(mx, nq, SENTINEL, "cosine_reduce_dense out_max");
    check_guards(mean, nq, SENTINEL, "cosine_reduce_dense out_mean");
    check_guards(work, nr, SENTINEL, "cosine_reduce_dense work");
    for (size_t i = 0; i < nq; ++i) {
        for (size_t j = 0; j < nr; ++j) sims[j] = ref_cos(q + i * d, refs + j * d, d);
        wmax[i] = ref_reduce(sims, nr, c, MAX);
        check_value("cosine_reduce_dense max", i, mx[i], smx[i], wmax[i], tolerance(d));
        check_value("cosine_reduce_dense mean", i, mean[i], smean[i], ref_reduce(sims, nr, c, MEAN),
                    tolerance(d));
        if (nr == 0 && (mx[i] != 0.0f || mean[i] != 0.0f))
            fail("no refs: query %zu gives max %.9g, mean %.9g; expected 0", i, mx[i], mean[i]);
    }
    check_clamped_max("cosine_reduce_dense max", mx, wmax, nq, c);
    H.be->cosine_reduce_dense(q, nq, refs, nr, d, c, work, only, NULL);
    check_same("cosine_reduce_dense max alone", only, mx, nq);
    H.be->cosine_reduce_dense(q, nq, refs, nr, d, c, work, NULL, only);
    check_same("cosine_reduce_dense mean alone", only, mean, nq);
    free(sims);
    free(wmax);
    release(mx);
    release(mean);
    release(smx);
    release(smean);
    release(only);
    release(work);
    release(swork);
}

/* sims: n rows of m values, row stride `stride` (the gap between rows holds NaN, which must not be read) */
static void run_rows(const float *sims, size_t n, size_t m, size_t stride, sk_clamp c) {
    H.cases++;
    float *mx = output(n), *mean = output(n), *smx = output(n), *smean = output(n);
    double *row = xmalloc((m + 1) * sizeof(double));
    H.be->reduce_rows(sims, n, m, stride, c, mx, mean);
    H.ser->reduce_rows(sims, n, m, stride, c, smx, smean);
    check_guards(mx, n, SENTINEL, "reduce_rows out_max");
    check_guards(mean, n, SENTINEL, "reduce_rows out_mean");
    for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < m; ++j) row[j] = (double)sims[i * stride + j];
        double wmax = ref_reduce(row, m, c, MAX);
        /* the max of float32 values is one of them (after clamping): exact */
        if (!(same_bits(mx[i], (float)wmax) || (isnan(wmax) && isnan(mx[i]))))
            fail("reduce_rows max[%zu] = %.9g, expected exactly %.9g", i, mx[i], wmax);
        H.values++;
        check_value("reduce_rows mean", i, mean[i], smean[i], ref_reduce(row, m, c, MEAN), tolerance(m));
    }
    check_same("reduce_rows max vs serial", mx, smx, n);
    free(row);
    release(mx);
    release(mean);
    release(smx);
    release(smean);
}

/* ---- greedy matching (BERTScore) ---- */

/* Texts of token rows: segment i is rows offsets[i] .. offsets[i + 1] - 1; weights NULL means 1 each. */
typedef struct {
    const float *rows;
    const int64_t *offsets;
    const float *weights;
    size_t n;
} texts;

static double max_nan(double m, double s) { return (isnan(m) || isnan(s)) ? NAN : (s > m ? s : m); }

/* float64 reference of one pair: plain dot products, every token in the maxima, weighted means (0 for a
 * weight sum of 0), 0 for everything when a text is empty, F = 2PR / (P + R) with NaN turned into 0. */
static void ref_greedy(texts ct, texts rt, size_t c, size_t r, size_t d, double out[3]) {
    size_t cb = (size_t)ct.offsets[c], ce = (size_t)ct.offsets[c + 1];
    size_t rb = (size_t)rt.offsets[r], re = (size_t)rt.offsets[r + 1];
    out[0] = out[1] = out[2] = 0.0;
    if (cb == ce || rb == re) return;
    double *col = xmalloc((re - rb) * sizeof(double));
    for (size_t j = 0; j < re - rb; ++j) col[j] = -INFINITY;
    double p_sum = 0.0, p_weight = 0.0, r_sum = 0.0, r_weight = 0.0;
    for (size_t i = cb; i < ce; ++i) {
        double row = -INFINITY;
        for (size_t j = rb; j < re; ++j) {
            double ab, aa, bb;
            ref_sums(ct.rows + i * d, rt.rows + j * d, d, &ab, &aa, &bb);
            row = max_nan(row, ab);
            col[j - rb] = max_nan(col[j - rb], ab);
        }
        double w = ct.weights ? (double)ct.weights[i] : 1.0;
        p_sum += w * row;
        p_weight += w;
    }
    for (size_t j = rb; j < re; ++j) {
        double w = rt.weights ? (double)rt.weights[j] : 1.0;
        r_sum += w * col[j - rb];
        r_weight += w;
    }
    free(col);
    out[0] = p_weight == 0.0 ? 0.0 : p_sum / p_weight;
    out[1] = r_weight == 0.0 ? 0.0 : r_sum / r_weight;
    double f = 2.0 * out[0] * out[1] / (out[0] + out[1]);
    out[2] = isnan(f) ? 0.0 : f;
}

static void run_greedy(texts ct, texts rt, const int64_t *pairs, size_t n_pairs, size_t d) {
    H.cases++;
    if (sk_check_offsets(ct.offsets, ct.n, (size_t)ct.offsets[ct.n]) != -1 ||
        sk_check_offsets(rt.offsets, rt.n, (size_t)rt.offsets[rt.n]) != -1 ||
        sk_check_pairs(pairs, n_pairs, ct.n, rt.n) != -1) {
        fail("the harness built invalid greedy_match arguments");
        return;
    }
    size_t longest = sk_longest_segment(rt.offsets, rt.n);
    float *p = output(n_pairs), *r = output(n_pairs), *f = output(n_pairs), *sp = output(n_pairs),
          *sr = output(n_pairs), *sf = output(n_pairs), *col = output(longest), *scol = output(longest),
          *alone = output(3);
    H.be->greedy_match(ct.rows, ct.offsets, ct.weights, rt.rows, rt.offsets, rt.weights, pairs, n_pairs, d, col, p,
                       r, f);
    H.ser->greedy_match(ct.rows, ct.offsets, ct.weights, rt.rows, rt.offsets, rt.weights, pairs, n_pairs, d, scol,
                        sp, sr, sf);
    check_guards(p, n_pairs, SENTINEL, "greedy_match out_p");
    check_guards(r, n_pairs, SENTINEL, "greedy_match out_r");
    check_guards(f, n_pairs, SENTINEL, "greedy_match out_f");
    check_guards(col, longest, SENTINEL, "greedy_match col_max");
    for (size_t k = 0; k < n_pairs; ++k) {
        double want[3];
        ref_greedy(ct, rt, (size_t)pairs[2 * k], (size_t)pairs[2 * k + 1], d, want);
        check_value("greedy_match P", k, p[k], sp[k], want[0], tolerance(d));
        check_value("greedy_match R", k, r[k], sr[k], want[1], tolerance(d));
        if (isnan(f[k])) {
            fail("greedy_match F[%zu] is NaN; a NaN F must be 0", k);
        } else if (isnan(want[0]) || isnan(want[1])) {
            H.values++;
            if (f[k] != 0.0f) fail("greedy_match F[%zu] = %.9g with a NaN P or R; expected 0", k, f[k]);
        } else {
            /* the tolerance carried through F = 2PR / (P + R): |dF| <= 2 (P^2 + R^2) / (P + R)^2 |dP or dR| */
            double sum = want[0] + want[1], gain = 2.0 * (want[0] * want[0] + want[1] * want[1]) / (sum * sum);
            gain = isfinite(gain) && gain > 1.0 ? gain : 1.0;
            check_value("greedy_match F", k, f[k], sf[k], want[2], 2.0 * gain * tolerance(d));
        }
        /* the pair alone gives the same bits (a pair never depends on the others) */
        H.be->greedy_match(ct.rows, ct.offsets, ct.weights, rt.rows, rt.offsets, rt.weights, pairs + 2 * k, 1, d,
                           col, alone, alone + 1, alone + 2);
        const float batch[3] = {p[k], r[k], f[k]};
        check_same("greedy_match pair alone", alone, batch, 3);
    }
    check_guards(alone, 3, SENTINEL, "greedy_match single pair");
    release(p);
    release(r);
    release(f);
    release(sp);
    release(sr);
    release(sf);
    release(col);
    release(scol);
    release(alone);
}

/* n rows of unit L2 norm (normalised in float64), between NaN guards */
static float *unit_rows(size_t n, size_t d, enum kind kind) {
    float *x = random_rows(n, d, kind);
    for (size_t i = 0; i < n; ++i) {
        double ab, ss, bb;
        ref_sums(x + i * d, x + i * d, d, &ab, &ss, &bb);
        double inv = ss > 0.0 ? 1.0 / sqrt(ss) : 0.0;
        for (size_t k = 0; k < d; ++k) x[i * d + k] = (float)((double)x[i * d + k] * inv);
    }
    return x;
}

static int64_t *offsets_of(const size_t *lengths, size_t n) {
    int64_t *offsets = xmalloc((n + 1) * sizeof(int64_t));
    offsets[0] = 0;
    for (size_t i = 0; i < n; ++i) offsets[i + 1] = offsets[i] + (int64_t)lengths[i];
    return offsets;
}

/* idf-like weights in [0.1, 5), 0 for the first and last token of each text ([CLS], [SEP]) */
static float *idf_weights(const int64_t *offsets, size_t n) {
    size_t rows = (size_t)offsets[n];
    float *w = input(rows);
    for (size_t j = 0; j < rows; ++j) w[j] = (float)(0.1 + 4.9 * rng_unit());
    for (size_t i = 0; i < n; ++i)
        if (offsets[i + 1] > offsets[i]) w[offsets[i]] = w[offsets[i + 1] - 1] = 0.0f;
    return w;
}

/* n_pairs random pairs with repeats (the last repeats the first), or the identity when n_pairs == 0 */
static int64_t *greedy_pairs(size_t n_cand, size_t n_ref, size_t *n_pairs) {
    size_t n = *n_pairs ? *n_pairs : n_cand;
    int64_t *pairs = xmalloc((2 * n + 2) * sizeof(int64_t));
    for (size_t k = 0; k < n; ++k) {
        pairs[2 * k] = (int64_t)(*n_pairs ? rng_below(n_cand) : k);
        pairs[2 * k + 1] = (int64_t)(*n_pairs ? rng_below(n_ref) : k);
    }
    if (*n_pairs > 1) {
        pairs[2 * (n - 1)] = pairs[0];
        pairs[2 * (n - 1) + 1] = pairs[1];
    }
    *n_pairs = n;
    return pairs;
}

/* the texts of the given lengths (unit rows), identity pairs without weights, then random pairs with idf
 * weights on both sides and on one side only */
static void greedy_case(const size_t *cand_lengths, size_t n_cand, const size_t *ref_lengths, size_t n_ref,
                        size_t d, enum kind kind, size_t n_random_pairs) {
    int64_t *co = offsets_of(cand_lengths, n_cand), *ro = offsets_of(ref_lengths, n_ref);
    float *cand = unit_rows((size_t)co[n_cand], d, kind), *ref = unit_rows((size_t)ro[n_ref], d, kind);
    float *cw = idf_weights(co, n_cand), *rw = idf_weights(ro, n_ref);
    texts ct = {cand, co, NULL, n_cand}, rt = {ref, ro, NULL, n_ref};
    size_t n_pairs = 0;
    int64_t *pairs;
    if (n_cand == n_ref) {
        pairs = greedy_pairs(n_cand, n_ref, &n_pairs);
        run_greedy(ct, rt, pairs, n_pairs, d);
        free(pairs);
    }
    n_pairs = n_random_pairs;
    pairs = greedy_pairs(n_cand, n_ref, &n_pairs);
    ct.weights = cw;
    rt.weights = rw;
    run_greedy(ct, rt, pairs, n_pairs, d);
    rt.weights = NULL;
    run_greedy(ct, rt, pairs, n_pairs, d);
    free(pairs);
    free(co);
    free(ro);
    release(cand);
    release(ref);
    release(cw);
    release(rw);
}

/* every function on one pair of row sets (a: n rows, b: m rows) */
static void run_all(const float *a, size_t n, const float *b, size_t m, size_t d, sk_clamp c) {
    run_normalize(a, n, d);
    run_paired(a, b, n < m ? n : m, d);
    run_matrix(a, n, b, m, d);
    run_dense(a, n, b, m, d, c);
    /* ragged: query i gets a group that grows with i, the first empty, the rest absorbed by the last */
    int64_t *offsets = xmalloc((n + 1) * sizeof(int64_t));
    offsets[0] = 0;
    for (size_t i = 1; i <= n; ++i) offsets[i] = offsets[i - 1] + (int64_t)(i - 1);
    for (size_t i = 1; i <= n; ++i)
        if (offsets[i] > (int64_t)m) offsets[i] = (int64_t)m;
    if (n) offsets[n] = (int64_t)m;
    if (n) run_ragged(a, n, b, offsets, d, c);
    free(offsets);
}

/* ---- the suite ---- */

static void suite_tails(void) {
    for (size_t di = 0; di < N_DIMS; ++di) {
        size_t d = DIMS[di];
        for (int kind = NORMAL; kind <= SCALED; ++kind) {
            label("tails d=%zu %s", d, KIND_NAMES[kind]);
            float *x = random_rows(9, d, kind), *a = random_rows(11, d, kind), *b = random_rows(13, d, kind);
            run_normalize(x, 9, d);
            run_paired(a, b, 11, d);
            run_matrix(a, 7, b, 13, d); /* 13 = three blocks of 4 and one left over */
            run_matrix(b, 13, a, 8, d); /* two whole blocks */
            release(x);
            release(a);
            release(b);
        }
    }
}

static void suite_ragged(void) {
    static const size_t sizes[] = {3, 0, 1, 8, 0, 0, 5, 2, 0}; /* empty groups at the start, middle and end */
    const size_t nq = sizeof sizes / sizeof sizes[0];
    const sk_clamp clamps[] = {NO_CLAMP, {1, 0.0f, 1.0f}, {1, -0.05f, 0.05f}};
    int64_t offsets[sizeof sizes / sizeof sizes[0] + 1] = {0};
    for (size_t i = 0; i < nq; ++i) offsets[i + 1] = offsets[i] + (int64_t)sizes[i];
    for (size_t di = 0; di < N_DIMS; ++di) {
        size_t d = DIMS[di];
        for (size_t ci = 0; ci < 3; ++ci) {
            label("ragged d=%zu clamp %zu", d, ci);
            float *q = random_rows(nq, d, ci == 1 ? POSITIVE : NORMAL),
                  *r = random_rows((size_t)offsets[nq], d, NORMAL);
            run_ragged(q, nq, r, offsets, d, clamps[ci]);
            release(q);
            release(r);
        }
    }
}

static void suite_dense(void) {
    static const size_t n_refs[] = {0, 1, 3, 4, 5, 64, 65, 70, 130}; /* across the block of 64 */
    const sk_clamp clamps[] = {NO_CLAMP, {1, 0.0f, 1.0f}};
    for (size_t di = 0; di < N_DIMS; ++di) {
        size_t d = DIMS[di];
        for (size_t ri = 0; ri < sizeof n_refs / sizeof n_refs[0]; ++ri)
            for (size_t ci = 0; ci < 2; ++ci) {
                label("dense d=%zu refs=%zu clamp %zu", d, n_refs[ri], ci);
                float *q = random_rows(6, d, NORMAL), *r = random_rows(n_refs[ri], d, NORMAL);
                run_dense(q, 6, r, n_refs[ri], d, clamps[ci]);
                release(q);
                release(r);
            }
    }
}

static void suite_rows(void) {
    static const size_t ms[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 130};
    const sk_clamp clamps[] = {NO_CLAMP, {1, 0.0f, 1.0f}, {1, -0.05f, 0.05f}};
    const size_t n = 6;
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; ++mi) {
        size_t m = ms[mi];
        for (size_t gap = 0; gap <= 3; gap += 3)
            for (size_t ci = 0; ci < 3; ++ci)
                for (int with_nan = 0; with_nan <= 1; ++with_nan) {
                    size_t stride = m + gap;
                    label("reduce_rows m=%zu stride=%zu clamp %zu%s", m, stride, ci, with_nan ? " NaN" : "");
                    float *s = input(n * stride);
                    for (size_t i = 0; i < n; ++i)
                        for (size_t j = 0; j < m; ++j) s[i * stride + j] = (float)(2.0 * rng_unit() - 1.0);
                    if (with_nan && m) {
                        s[1 * stride + 0] = NAN;     /* first element */
                        s[2 * stride + m - 1] = NAN; /* last: the scalar tail */
                        s[3 * stride + m / 2] = NAN;
                        s[4 * stride + m - 1] = INFINITY; /* clamped to hi, or +inf */
                        s[5 * stride + 0] = -INFINITY;
                    }
                    run_rows(s, n, m, stride, clamps[ci]);
                    release(s);
                }
    }
}

static void suite_zero_rows(void) {
    static const size_t dims[] = {1, 4, 5, 8, 9, 16, 17, 384};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; ++di) {
        size_t d = dims[di];
        label("zero rows d=%zu", d);
        float *a = random_rows(5, d, NORMAL), *b = random_rows(5, d, NORMAL);
        memset(a + 1 * d, 0, d * sizeof(float));
        memset(b + 3 * d, 0, d * sizeof(float));
        memset(b + 1 * d, 0, d * sizeof(float));
        run_all(a, 5, b, 5, d, NO_CLAMP);
        float *p = output(5), *mx = output(5), *mean = output(5), *work = output(10), *mat = output(25);
        H.be->paired_cosine(a, b, 5, d, p);
        if (p[1] != 0.0f || p[3] != 0.0f)
            fail("paired cosine with a zero row = %.9g, %.9g; expected 0", p[1], p[3]);
        H.be->cosine_matrix(a, 5, b, 5, d, work, mat);
        for (size_t i = 0; i < 5; ++i)
            if (mat[1 * 5 + i] != 0.0f || mat[i * 5 + 3] != 0.0f || mat[i * 5 + 1] != 0.0f)
                fail("cosine_matrix with a zero row is not 0 (row or column %zu)", i);
        /* zero-norm gives 0.0, then the clamp applies: [0.2, 1] turns it into exactly 0.2 */
        const int64_t offsets[] = {0, 1, 2, 3, 4, 5};
        sk_clamp c = {1, 0.2f, 1.0f};
        H.be->cosine_reduce(a, 5, b, offsets, d, c, mx, mean);
        if (mean[3] != 0.2f || mx[1] != 0.2f)
            fail("clamped similarity of a zero row: mean %.9g, max %.9g; expected 0.2", mean[3], mx[1]);
        H.be->cosine_reduce(a, 5, b, offsets, d, NO_CLAMP, mx, mean);
        if (mean[3] != 0.0f || mx[1] != 0.0f)
            fail("similarity of a zero row: mean %.9g, max %.9g; expected 0", mean[3], mx[1]);
        H.values += 14;
        release(a);
        release(b);
        release(p);
        release(mx);
        release(mean);
        release(work);
        release(mat);
    }
}

static void suite_nan(void) {
    static const size_t dims[] = {1, 2, 4, 5, 8, 9, 15, 16, 17, 33, 384};
    const float bads[] = {NAN, INFINITY, -INFINITY};
    const char *bad_names[] = {"nan", "inf", "-inf"};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; ++di) {
        size_t d = dims[di];
        size_t where[] = {0, d / 2, d - 1};
        for (size_t bi = 0; bi < 3; ++bi)
            for (size_t wi = 0; wi < 3; ++wi) {
                label("%s at %zu d=%zu", bad_names[bi], where[wi], d);
                float *a = random_rows(4, d, NORMAL), *b = random_rows(6, d, NORMAL);
                a[2 * d + where[wi]] = bads[bi];
                b[4 * d + where[(wi + 1) % 3]] = bads[bi];
                run_all(a, 4, b, 6, d, NO_CLAMP);
                run_all(a, 4, b, 6, d, (sk_clamp){1, 0.0f, 1.0f});
                const int64_t offsets[] = {0, 2, 5, 6, 6}; /* query 1 meets ref 4, query 3's group is empty */
                run_ragged(a, 4, b, offsets, d, (sk_clamp){1, 0.0f, 1.0f});
                release(a);
                release(b);
            }
    }
    label("NaN row against a zero row");
    float *a = input(2), *z = input(2);
    a[0] = NAN;
    a[1] = 1.0f;
    z[0] = z[1] = 0.0f;
    run_paired(a, z, 1, 2);
    run_matrix(a, 1, z, 1, 2);
    release(a);
    release(z);
}

static void suite_extreme(void) {
    static const size_t dims[] = {1, 3, 4, 5, 8, 16, 17, 33, 384};
    const double mags[] = {1e-30, 1e-20, 1e-17, 1e17, 1e20, 1e30, 1e37};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; ++di) {
        size_t d = dims[di];
        for (size_t mi = 0; mi < sizeof mags / sizeof mags[0]; ++mi) {
            label("magnitude %g d=%zu", mags[mi], d);
            float mag = (float)mags[mi];
            float *a = random_rows(5, d, NORMAL), *b = random_rows(6, d, NORMAL);
            for (size_t k = 0; k < d; ++k) {
                a[1 * d + k] *= mag;
                b[2 * d + k] *= mag;
                a[3 * d + k] = mag;                 /* every element extreme */
                b[4 * d + k] = k == 0 ? mag : 0.0f; /* one extreme element */
            }
            run_all(a, 5, b, 6, d, NO_CLAMP);
            release(a);
            release(b);
        }
    }
}

static void suite_no_clamping(void) {
    const size_t n = 64, d = 97;
    label("identical and opposite rows");
    float *x = random_rows(n, d, NORMAL), *neg = input(n * d);
    for (size_t i = 0; i < n * d; ++i) neg[i] = -x[i];
    run_paired(x, x, n, d);
    run_paired(x, neg, n, d);
    int64_t offsets[65];
    for (size_t i = 0; i <= n; ++i) offsets[i] = (int64_t)i;
    float *mx = output(n);
    H.be->cosine_reduce(x, n, x, offsets, d, (sk_clamp){1, 0.0f, 0.5f}, mx, NULL);
    for (size_t i = 0; i < n; ++i)
        if (mx[i] != 0.5f) fail("max of a row with itself clamped to [0, 0.5] = %.9g, expected 0.5", mx[i]);
    H.values += (long)n;
    release(x);
    release(neg);
    release(mx);
}

static void suite_empty(void) {
    label("empty inputs");
    float *a = random_rows(3, 8, NORMAL), *none = input(0);
    const int64_t zeros[] = {0, 0, 0};
    run_normalize(none, 0, 8);
    run_paired(none, none, 0, 8);
    run_matrix(none, 0, a, 3, 8);
    run_matrix(a, 3, none, 0, 8);
    run_ragged(none, 0, none, zeros, 8, NO_CLAMP);
    run_ragged(a, 2, none, zeros, 8, NO_CLAMP);
    run_dense(a, 2, none, 0, 8, NO_CLAMP);
    run_dense(none, 0, a, 3, 8, NO_CLAMP);
    run_rows(none, 0, 5, 5, NO_CLAMP);
    run_rows(a, 3, 0, 8, NO_CLAMP);
    label("d = 0");
    run_all(none, 2, none, 3, 0, NO_CLAMP);
    release(a);
    release(none);
}

static void suite_large(void) {
    const size_t n = 2500, d = 384;
    label("large n=%zu d=%zu", n, d);
    float *a = random_rows(n, d, NORMAL), *b = random_rows(n, d, NORMAL);
    run_paired(a, b, n, d);
    run_normalize(a, n, d);
    size_t nq = 300;
    int64_t *offsets = xmalloc((nq + 1) * sizeof(int64_t));
    offsets[0] = 0;
    for (size_t i = 0; i < nq; ++i) offsets[i + 1] = offsets[i] + (int64_t)rng_below(5);
    run_ragged(a, nq, b, offsets, d, NO_CLAMP);
    run_matrix(a, 20, b, 30, d);
    free(offsets);
    release(a);
    release(b);
}

/* random shapes, contents, clamps and misaligned starts */
static void suite_fuzz(long count) {
    for (long t = 0; t < count; ++t) {
        size_t n = rng_below(10), m = rng_below(10), d = 1 + rng_below(70), shift = rng_below(4);
        enum kind kind = (enum kind)rng_below(4);
        label("fuzz %ld n=%zu m=%zu d=%zu %s shift %zu", t, n, m, d, KIND_NAMES[kind], shift);
        float *a = input(n * d + shift), *b = input(m * d + shift);
        fill_rows(a + shift, n, d, kind);
        fill_rows(b + shift, m, d, kind);
        size_t specials = rng_below(8) == 0 ? 1 + rng_below(3) : 0;
        for (size_t s = 0; s < specials && n && m; ++s) {
            const float vals[] = {NAN, INFINITY, -INFINITY, 1e-30f, 1e30f, 0.0f};
            float *dst = rng_below(2) ? a + shift + rng_below(n * d) : b + shift + rng_below(m * d);
            *dst = vals[rng_below(6)];
        }
        sk_clamp c = NO_CLAMP;
        if (rng_below(2)) {
            c.enabled = 1;
            c.lo = (float)(-rng_unit());
            c.hi = (float)rng_unit();
        }
        run_all(a + shift, n, b + shift, m, d, c);
        release(a);
        release(b);
    }
}

static void suite_greedy(void) {
    /* every SIMD tail of the dot products (dims) and of the 4-row candidate blocks (1..13 rows, empty texts) */
    static const size_t cand_lengths[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 0};
    static const size_t ref_lengths[] = {13, 9, 1, 4, 0, 5, 2, 3, 8, 7, 6};
    for (size_t di = 0; di < N_DIMS; ++di) {
        size_t d = DIMS[di];
        label("greedy_match d=%zu", d);
        greedy_case(cand_lengths, 11, ref_lengths, 11, d, di % 2 ? POSITIVE : NORMAL, 25);
    }
    /* long texts: 1 to 512 tokens a side */
    static const size_t long_cand[] = {512, 1, 37, 130}, long_ref[] = {64, 512, 97, 1};
    const size_t long_dims[] = {384, 768};
    for (size_t di = 0; di < 2; ++di) {
        label("greedy_match long texts d=%zu", long_dims[di]);
        int64_t *co = offsets_of(long_cand, 4), *ro = offsets_of(long_ref, 4);
        float *cand = unit_rows((size_t)co[4], long_dims[di], POSITIVE),
              *ref = unit_rows((size_t)ro[4], long_dims[di], POSITIVE);
        float *cw = idf_weights(co, 4), *rw = idf_weights(ro, 4);
        const int64_t pairs[] = {0, 0, 1, 1, 2, 2, 3, 3, 2, 1, 0, 3, 3, 2, 1, 0};
        run_greedy((texts){cand, co, cw, 4}, (texts){ref, ro, rw, 4}, pairs, 8, long_dims[di]);
        free(co);
        free(ro);
        release(cand);
        release(ref);
        release(cw);
        release(rw);
    }
}

static void suite_greedy_edges(void) {
    /* NaN in a candidate row of a 4-row block, in a tail row (weight 0), and in a reference row */
    static const size_t dims[] = {1, 4, 5, 16, 17, 384};
    static const size_t cand_lengths[] = {5, 5, 5, 5}, ref_lengths[] = {3, 3, 3, 3};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; ++di) {
        size_t d = dims[di];
        label("greedy_match NaN rows d=%zu", d);
        int64_t *co = offsets_of(cand_lengths, 4), *ro = offsets_of(ref_lengths, 4);
        float *cand = unit_rows(20, d, NORMAL), *ref = unit_rows(12, d, NORMAL), *cw = idf_weights(co, 4);
        cand[(5 + 4) * d + d / 2] = NAN;
        cand[(10 + 1) * d] = NAN;
        ref[(9 + 2) * d + d - 1] = NAN;
        const int64_t pairs[] = {0, 0, 1, 0, 2, 1, 0, 3, 1, 3};
        run_greedy((texts){cand, co, cw, 4}, (texts){ref, ro, NULL, 4}, pairs, 5, d);
        float p[5], r[5], f[5], col[3];
        H.be->greedy_match(cand, co, cw, ref, ro, NULL, pairs, 5, d, col, p, r, f);
        for (size_t k = 1; k < 5; ++k)
            if (!isnan(p[k]) || !isnan(r[k]) || f[k] != 0.0f)
                fail("pair %zu meets a NaN row: P %.9g, R %.9g, F %.9g; expected NaN, NaN, 0", k, p[k], r[k], f[k]);
        H.values += 12;
        free(co);
        free(ro);
        release(cand);
        release(ref);
        release(cw);
    }
    /* weights summing to 0 on one side, then on the other; a NaN weight */
    {
        label("greedy_match zero and NaN weights");
        static const size_t lengths[] = {5, 6, 2};
        int64_t *o = offsets_of(lengths, 3);
        float *cand = unit_rows(13, 17, NORMAL), *ref = unit_rows(13, 17, NORMAL);
        float *cw = idf_weights(o, 3), *rw = idf_weights(o, 3);
        for (size_t j = 0; j < 5; ++j) cw[j] = 0.0f;
        for (size_t j = 5; j < 11; ++j) rw[j] = 0.0f;
        rw[12] = NAN;
        const int64_t pairs[] = {0, 0, 1, 1, 2, 2, 1, 0};
        run_greedy((texts){cand, o, cw, 3}, (texts){ref, o, rw, 3}, pairs, 4, 17);
        float p[4], r[4], f[4], col[6];
        H.be->greedy_match(cand, o, cw, ref, o, rw, pairs, 4, 17, col, p, r, f);
        if (p[0] != 0.0f || f[0] != 0.0f || r[1] != 0.0f || f[1] != 0.0f || p[2] != 0.0f || !isnan(r[2]))
            fail("weights summing to 0 / a NaN weight: P0 %.9g F0 %.9g R1 %.9g F1 %.9g P2 %.9g R2 %.9g", p[0], f[0],
                 r[1], f[1], p[2], r[2]);
        H.values += 6;
        free(o);
        release(cand);
        release(ref);
        release(cw);
        release(rw);
    }
    /* exact cases: a weight-0 token takes part in the maxima; P = -R gives F = -inf */
    {
        label("greedy_match exact cases");
        const float cand[] = {1.0f, 0.0f}, best[] = {0.6f, 0.8f, 1.0f, 0.0f};
        const float opposite[] = {0.25f, (float)sqrt(1.0 - 0.0625), -0.75f, (float)sqrt(1.0 - 0.5625)};
        const float weights[] = {1.0f, 0.0f};
        const int64_t one[] = {0, 1}, two[] = {0, 2}, pair[] = {0, 0};
        float p, r, f, col[2];
        H.be->greedy_match(cand, one, NULL, best, two, weights, pair, 1, 2, col, &p, &r, &f);
        if (p != 1.0f || r != 0.6f || f != (float)(2.0 * 0.6f / (1.0 + 0.6f)))
            fail("the weight-0 best match: P %.9g (expected 1), R %.9g (expected 0.6), F %.9g", p, r, f);
        H.be->greedy_match(cand, one, NULL, opposite, two, NULL, pair, 1, 2, col, &p, &r, &f);
        if (p != 0.25f || r != -0.25f || f != -INFINITY)
            fail("P = -R: P %.9g, R %.9g, F %.9g; expected 0.25, -0.25, -inf", p, r, f);
        H.values += 6;
    }
    /* empty inputs: no pairs, no texts, d = 0 */
    {
        label("greedy_match empty inputs");
        float *none = input(0), *rows = unit_rows(3, 8, NORMAL), *zero_d = input(0);
        const int64_t zero[] = {0}, three[] = {0, 1, 3}, empty_pairs[] = {0, 0};
        run_greedy((texts){none, zero, NULL, 0}, (texts){none, zero, NULL, 0}, empty_pairs, 0, 8);
        run_greedy((texts){rows, three, NULL, 2}, (texts){rows, three, NULL, 2}, empty_pairs, 0, 8);
        const int64_t pairs[] = {0, 1, 1, 0, 1, 1};
        run_greedy((texts){zero_d, three, NULL, 2}, (texts){zero_d, three, NULL, 2}, pairs, 3, 0);
        release(none);
        release(rows);
        release(zero_d);
    }
    /* the argument checks */
    {
        label("sk_check_pairs, sk_longest_segment");
        const int64_t pairs[] = {0, 1, 2, 0, 1, 3, -1, 0, 0, 2};
        if (sk_check_pairs(pairs, 2, 3, 3) != -1) fail("valid pairs rejected");
        if (sk_check_pairs(pairs, 3, 3, 3) != 5) fail("pairs[2, 1] = 3 of 3 texts not found at flat index 5");
        if (sk_check_pairs(pairs, 3, 2, 4) != 2) fail("pairs[1, 0] = 2 of 2 texts not found at flat index 2");
        if (sk_check_pairs(pairs + 6, 1, 3, 3) != 0) fail("a negative index not found");
        if (sk_check_pairs(pairs + 8, 1, 3, 3) != -1) fail("pairs (0, 2) of 3 texts rejected");
        const int64_t offsets[] = {0, 3, 3, 10, 12};
        if (sk_longest_segment(offsets, 4) != 7 || sk_longest_segment(offsets, 0) != 0)
            fail("sk_longest_segment: %zu, %zu; expected 7, 0", sk_longest_segment(offsets, 4),
                 sk_longest_segment(offsets, 0));
        H.values += 6;
    }
}

/* random texts (0..20 tokens, 0..6 texts a side), dims, pairs, weights and misaligned starts */
static void suite_greedy_fuzz(long count) {
    for (long t = 0; t < count; ++t) {
        size_t n_cand = rng_below(7), n_ref = rng_below(7), d = 1 + rng_below(70), shift = rng_below(4);
        size_t cand_lengths[6], ref_lengths[6];
        for (size_t i = 0; i < n_cand; ++i) cand_lengths[i] = rng_below(21);
        for (size_t i = 0; i < n_ref; ++i) ref_lengths[i] = rng_below(21);
        int64_t *co = offsets_of(cand_lengths, n_cand), *ro = offsets_of(ref_lengths, n_ref);
        label("greedy_match fuzz %ld: %zu x %zu texts, d=%zu, shift %zu", t, n_cand, n_ref, d, shift);
        size_t nc_rows = (size_t)co[n_cand], nr_rows = (size_t)ro[n_ref];
        float *cand = input(nc_rows * d + shift), *ref = input(nr_rows * d + shift);
        float *cu = unit_rows(nc_rows, d, (enum kind)rng_below(4)), *ru = unit_rows(nr_rows, d, (enum kind)rng_below(4));
        memcpy(cand + shift, cu, nc_rows * d * sizeof(float));
        memcpy(ref + shift, ru, nr_rows * d * sizeof(float));
        float *cw = rng_below(2) ? idf_weights(co, n_cand) : NULL, *rw = rng_below(2) ? idf_weights(ro, n_ref) : NULL;
        size_t n_pairs = n_cand && n_ref ? 1 + rng_below(10) : 0;
        int64_t *pairs = xmalloc((2 * n_pairs + 2) * sizeof(int64_t));
        for (size_t k = 0; k < n_pairs; ++k) {
            pairs[2 * k] = (int64_t)rng_below(n_cand);
            pairs[2 * k + 1] = (int64_t)rng_below(n_ref);
        }
        run_greedy((texts){cand + shift, co, cw, n_cand}, (texts){ref + shift, ro, rw, n_ref}, pairs, n_pairs, d);
        free(pairs);
        free(co);
        free(ro);
        release(cand);
        release(ref);
        release(cu);
        release(ru);
        if (cw) release(cw);
        if (rw) release(rw);
    }
}

static void run_backend(const sk_backend *be, long fuzz) {
    memset(&H, 0, sizeof H);
    H.be = be;
    H.ser = &sk_backend_serial;
    rng_state = 20261129;
    clock_t start = clock();
    suite_tails();
    suite_ragged();
    suite_dense();
    suite_rows();
    suite_zero_rows();
    suite_nan();
    suite_extreme();
    suite_no_clamping();
    suite_empty();
    suite_large();
    suite_fuzz(fuzz);
    suite_greedy();
    suite_greedy_edges();
    suite_greedy_fuzz(fuzz / 2);
    double secs = (double)(clock() - start) / CLOCKS_PER_SEC;
    printf("%-8s %6ld cases, %8ld values checked, %ld failed  (%.1f s)\n", be->name, H.cases, H.values,
           H.failures, secs);
    if (H.failures > MAX_PRINTED)
        printf("%-8s (%ld more failures not shown)\n", be->name, H.failures - MAX_PRINTED);
}

int main(int argc, char **argv) {
    const char *only = NULL, *required[16];
    size_t n_required = 0;
    long fuzz = 600;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--require") == 0 && i + 1 < argc && n_required < 16)
            required[n_required++] = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--fuzz") == 0 && i + 1 < argc)
            fuzz = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--require NAME]... [--only NAME] [--fuzz N]\n", argv[0]);
            return 2;
        }
    }
    sk_init();
    int status = 0;
    for (size_t r = 0; r < n_required; ++r) {
        int compiled = 0;
        for (size_t i = 0; i < sk_backend_count(); ++i)
            compiled |= strcmp(sk_backend_at(i)->name, required[r]) == 0;
        if (!compiled) {
            printf("FAIL backend %s is required but not compiled into this build\n", required[r]);
            status = 1;
        } else if (!sk_backend_supported(required[r])) {
            printf("FAIL backend %s is required but this CPU does not support it\n", required[r]);
            status = 1;
        }
    }
    printf("kernel_harness: %zu backends compiled; best supported: %s\n", sk_backend_count(), sk_active()->name);
    long total_failures = 0, ran = 0;
    for (size_t i = 0; i < sk_backend_count(); ++i) {
        const sk_backend *be = sk_backend_at(i);
        if (only && strcmp(only, be->name) != 0) continue;
        if (!sk_backend_supported(be->name)) {
            printf("%-8s skipped: not supported by this CPU\n", be->name);
            continue;
        }
        run_backend(be, fuzz);
        total_failures += H.failures;
        ran++;
    }
    if (ran == 0) {
        printf("FAIL no backend ran\n");
        status = 1;
    }
    if (total_failures) status = 1;
    printf("kernel_harness: %s\n", status ? "FAILED" : "all checks passed");
    return status;
}
