/* simkernel.h: the native cosine kernel of simkernel (public C API).
 *
 * Storage and layout
 *   Every vector is float32, rows are contiguous (row-major, C order), a row has `d` elements and rows
 *   follow each other without padding (row stride == d). Sizes are `size_t`, offsets `int64_t`.
 *
 * Numerics (identical contract for every backend; only the rounding differs)
 *   - Accumulation: the SIMD backends (haswell: AVX2+FMA, skylake: AVX-512F, neon: AArch64 NEON) multiply
 *     and accumulate in float32, in several independent vector accumulators (8 to 64 partial sums per dot
 *     product), summed at the end in float32. The serial backend accumulates in float64. The final
 *     `dot / sqrt(|a|^2 |b|^2)` and the inverse norms are computed in float64 and rounded once to float32.
 *     Against a float64 reference the absolute error of a cosine is about 1e-7 * sqrt(d) for typical
 *     embeddings (the tests assert <= 2e-6 + 3e-7 * sqrt(d)).
 *   - Zero-norm rows: a cosine involving a row of zeros is 0.0; `normalize` leaves
 *     such a row all zeros.
 *   - NaN: a NaN (or an infinity) anywhere in a row makes every cosine involving that row NaN, and
 *     `normalize` turns the row into NaN; a NaN similarity stays NaN through clamp, max and mean.
 *   - Extreme magnitudes: when a float32 squared norm falls outside [1e-30, 1e30] (elements below ~1e-16
 *     or above ~1e14, where float32 squares underflow or overflow), that row's sums are redone in float64,
 *     so tiny or huge (finite) vectors get correct cosines, never a silent 0 or NaN.
 *   - No clamping: a cosine may come out a few ulp outside [-1, 1]; only `clamp` (when asked) changes values.
 *   - Reductions: `max` is the largest similarity of the group (NaN if any is NaN); `mean` is the sum of
 *     the group's similarities (float64 for per-pair kernels; float32 lanes, then float64, when reducing a
 *     precomputed row) divided by the group size, rounded once to float32. An empty group gives
 *     0.0 for both. When clamping is asked, each similarity is clamped to [lo, hi] BEFORE the reduction.
 *   - Greedy matching (`greedy_match`, BERTScore's greedy_cos_idf): the similarity of two token rows is
 *     their plain dot product in the backend's accumulator (float32 lanes; float64 in serial), rounded to
 *     float32, with no norms and no float64 rescue path: callers pass L2-normalised rows, as BERTScore does.
 *     Maxima are exact over those float32 similarities (NaN sticky); weight sums and weighted sums of the
 *     maxima are float64, divided once and rounded once to float32.
 *
 * Threads: no global mutable state is touched by the kernels; every function is reentrant and may run
 * concurrently from several threads. Only `sk_select_backend` changes the process-wide dispatch table.
 */
#ifndef SIMKERNEL_H
#define SIMKERNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CPU features that matter to the kernels, as detected at load time; avx512_bf16 and amx_bf16 (native
   bfloat16 arithmetic, usable only when the OS saves the ZMM / AMX tile state) are reported for the runtime's
   bf16 precision, which needs one of them. */
typedef struct sk_cpu_features {
    int avx2;
    int fma;
    int avx512f;
    int neon;
    int avx512_bf16;
    int amx_bf16;
} sk_cpu_features;

/* Clamp settings: applied to each similarity before a reduction when `enabled` is non-zero. */
typedef struct sk_clamp {
    int enabled;
    float lo;
    float hi;
} sk_clamp;

/* The kernels of one backend. All pointers are non-null in a valid table. */
typedef struct sk_backend {
    const char *name;

    /* out[i, :] = x[i, :] / ||x[i, :]|| for i < n (a zero row stays zero). `out` may equal `x`. */
    void (*normalize)(const float *x, size_t n, size_t d, float *out);

    /* out[i] = cos(a[i, :], b[i, :]) for i < n. */
    void (*paired_cosine)(const float *a, const float *b, size_t n, size_t d, float *out);

    /* out[i * m + j] = cos(a[i, :], b[j, :]); `work` holds at least n + m floats of scratch space. */
    void (*cosine_matrix)(const float *a, size_t n, const float *b, size_t m, size_t d, float *work,
                          float *out);

    /* Ragged reduction: query i against refs[offsets[i] : offsets[i + 1]], i < nq. offsets must be valid
     * (offsets[0] == 0, non-decreasing, offsets[nq] == number of refs; see sk_check_offsets).
     * Writes the max into out_max[i] and the mean into out_mean[i]; either pointer may be NULL. */
    void (*cosine_reduce)(const float *queries, size_t nq, const float *refs, const int64_t *offsets,
                          size_t d, sk_clamp clamp, float *out_max, float *out_mean);

    /* Dense reduction: query i against every ref (nr of them). `work` holds at least nr floats. */
    void (*cosine_reduce_dense)(const float *queries, size_t nq, const float *refs, size_t nr, size_t d,
                                sk_clamp clamp, float *work, float *out_max, float *out_mean);

    /* Reduction of precomputed similarities: row i of `sims` (n rows of m, row stride `stride`). */
    void (*reduce_rows)(const float *sims, size_t n, size_t m, size_t stride, sk_clamp clamp,
                        float *out_max, float *out_mean);

    /* BERTScore greedy matching, one (P, R, F) per pair, without padding and without materialising a
     * similarity matrix.
     *   Candidate token rows `cand` (all candidate texts concatenated, d floats each) are cut into segments
     *   by `cand_offsets` (candidate segment c is rows cand_offsets[c] .. cand_offsets[c + 1] - 1); the same
     *   for `ref` / `ref_offsets`. Offsets must be valid for their rows (sk_check_offsets). Pair k is
     *   (pairs[2k], pairs[2k + 1]) = (candidate segment c, reference segment r), k < n_pairs, each index in
     *   range (sk_check_pairs); a segment may appear in any number of pairs.
     *   `cand_weights` / `ref_weights` hold one float32 weight per row of `cand` / `ref` (e.g. idf; 0 for
     *   [CLS] and [SEP]), or are NULL for weight 1 everywhere.
     *   With s[i, j] = cand_i . ref_j over the pair's rows (plain dot products: pass L2-normalised rows):
     *     P = sum_i w_c[i] max_j s[i, j] / sum_i w_c[i],   R = sum_j w_r[j] max_i s[i, j] / sum_j w_r[j],
     *     F = 2 P R / (P + R) computed in float64 from the float32 P and R, and 0 where that is NaN.
     *   Every row takes part in the maxima, also those of weight 0; weights only weight the means.
     *   Edge cases: a pair with an empty segment on either side gives P = R = F = 0; a side whose weights
     *   sum to exactly 0 scores 0 (whatever its maxima); a NaN in any row of the pair makes P and R NaN (a
     *   NaN row meets every row of the other side, so it reaches the maxima of both) and F = 0; a NaN
     *   weight makes its side NaN; infinite elements give infinite (or NaN) similarities that the maxima
     *   and means carry as IEEE arithmetic does; P + R = 0 with P != 0 gives an infinite F, as in BERTScore.
     *   Work: the candidate rows are taken 4 at a time (sk_dot4 against each reference row), keeping the
     *   4 row maxima in registers and a running column maximum per reference row in `col_max`, which holds
     *   at least the length of the longest reference segment any pair uses (sk_longest_segment) floats of
     *   scratch. out_p, out_r and out_f (n_pairs floats each) must all be non-NULL. */
    void (*greedy_match)(const float *cand, const int64_t *cand_offsets, const float *cand_weights,
                         const float *ref, const int64_t *ref_offsets, const float *ref_weights,
                         const int64_t *pairs, size_t n_pairs, size_t d, float *col_max, float *out_p,
                         float *out_r, float *out_f);
} sk_backend;

/* Backends compiled into this build, best first; each is usable only if the CPU supports it. */
extern const sk_backend sk_backend_serial;
#if defined(SK_HAVE_X86)
extern const sk_backend sk_backend_haswell;
extern const sk_backend sk_backend_skylake;
#endif
#if defined(SK_HAVE_NEON)
extern const sk_backend sk_backend_neon;
#endif

/* Detects the CPU once and selects the best backend. Idempotent; called when the module loads. */
void sk_init(void);

/* The detected CPU features. */
sk_cpu_features sk_cpu(void);

/* The backend every dispatched call uses now. */
const sk_backend *sk_active(void);

/* Number of backends compiled in, and the i-th of them (best first), whether supported or not. */
size_t sk_backend_count(void);
const sk_backend *sk_backend_at(size_t i);

/* Non-zero if the CPU can run the backend called `name`. */
int sk_backend_supported(const char *name);

/* Makes `name` the active backend ("auto" or NULL: the best supported one). Returns 0 on success,
 * -1 if no backend has that name, -2 if the CPU cannot run it (the active backend is then unchanged). */
int sk_select_backend(const char *name);

/* Validates ragged offsets for nq queries and nr refs. Returns -1 if they are valid, otherwise the first
 * index i at which they are not: offsets[0] != 0 (i = 0), offsets[i] < offsets[i - 1] or offsets[i] > nr
 * (i in 1..nq), or offsets[nq] != nr (i = nq). */
int64_t sk_check_offsets(const int64_t *offsets, size_t nq, size_t nr);

/* Validates greedy_match's pairs (n_pairs rows of two int64: candidate segment, reference segment) for
 * n_cand candidate and n_ref reference segments. Returns -1 if every index is in range, otherwise the flat
 * index (2k for the candidate of pair k, 2k + 1 for its reference) of the first that is negative or not
 * below n_cand / n_ref. */
int64_t sk_check_pairs(const int64_t *pairs, size_t n_pairs, size_t n_cand, size_t n_ref);

/* The number of rows of the longest of n segments of valid offsets (0 when n == 0): the scratch size of
 * greedy_match's col_max. */
size_t sk_longest_segment(const int64_t *offsets, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* SIMKERNEL_H */
