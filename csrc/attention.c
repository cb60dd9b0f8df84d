/* attention.c: the self-attention core of a BERT-family encoder layer (scaled scores, additive mask, softmax,
 * weighted values) for one batch of texts of one token length, in the arithmetic of onnxruntime's CPU
 * kernels (MLAS), so that its bits equal those of the graph's own nodes. See attention.h.
 *
 * What onnxruntime computes, and so what this file computes, per text and head (w = the head's width):
 *   - scores (FusedMatMul, alpha = the graph's scale): each score is one fused multiply-add chain over the w
 *     products of a query and a key, in order, from 0, then multiplied by alpha (MLAS's SGEMM kernels keep
 *     one accumulator per output and multiply by alpha when they store it; for K <= w and the K of the
 *     weighted values, one K block);
 *   - the mask (Add): score + mask;
 *   - Softmax over the last axis (MlasComputeSoftmax): the row's maximum, then MLAS's vector exp() and its
 *     sum, whose lanes and order depend on the instruction set MLAS picked (AVX-512F: 16 lanes, 48 elements
 *     a step, exponents by VSCALEFPS; FMA3: 8 lanes, 24 a step, exponents built in the integer unit), then
 *     each exp() times 1 / sum;
 *   - weighted values (MatMul): each output one fused multiply-add chain over the row's probabilities and
 *     the values, in order, from 0.
 * The two matrix products run on 8-lane FMA vectors for either instruction set: their lanes are independent
 * outputs, each with the same chain as MLAS's. Only the sum of exp() differs per instruction set, and the
 * caller names which one (sk_attention_sum_exp), so that a build can check both against onnxruntime. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>

#if defined(__GNUC__) || defined(__clang__)
#define SK_TARGET(t) __attribute__((target(t)))
#else
#define SK_TARGET(t)
#endif

/* MLAS's constants of exp() (onnxruntime/core/mlas/lib/compute.cpp, MlasExpConstants). */
#define SK_EXP_LOWER_RANGE (-103.9720840454f)
#define SK_EXP_LOWER_RANGE_SUM_EXP (-88.3762626647949f)
#define SK_EXP_ROUNDING_BIAS 12582912.0f /* 1.5 * 2^23 */
#define SK_EXP_LOG2_RECIPROCAL 1.44269504088896341f
#define SK_EXP_LOG2_HIGH (-6.93145752e-1f)
#define SK_EXP_LOG2_LOW (-1.42860677e-6f)
#define SK_EXP_POLY_0 0x1.694000p-10f
#define SK_EXP_POLY_1 0x1.125edcp-7f
#define SK_EXP_POLY_2 0x1.555b5ap-5f
#define SK_EXP_POLY_3 0x1.555450p-3f
#define SK_EXP_POLY_4 0x1.fffff6p-2f
#define SK_EXP_POLY_56 0x1.000000p+0f
#define SK_EXP_MAXIMUM_EXPONENT 0x3F800000

/* ---- the sum of exp(x - max) over a row, storing each exp(): MLAS's AVX-512F kernel ---- */

SK_TARGET("avx512f,avx2,fma")
static inline __m512 sk_exp16(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(SK_EXP_LOWER_RANGE), x);
    const __m512 bias = _mm512_set1_ps(SK_EXP_ROUNDING_BIAS);
    __m512 m = _mm512_fmadd_ps(_mm512_set1_ps(SK_EXP_LOG2_RECIPROCAL), x, bias);
    m = _mm512_sub_ps(m, bias);
    x = _mm512_fmadd_ps(m, _mm512_set1_ps(SK_EXP_LOG2_HIGH), x);
    x = _mm512_fmadd_ps(m, _mm512_set1_ps(SK_EXP_LOG2_LOW), x);
    __m512 p = _mm512_set1_ps(SK_EXP_POLY_0);
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(SK_EXP_POLY_1));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(SK_EXP_POLY_2));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(SK_EXP_POLY_3));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(SK_EXP_POLY_4));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(SK_EXP_POLY_56));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(SK_EXP_POLY_56));
    return _mm512_scalef_ps(p, m);
}

SK_TARGET("avx512f,avx2,fma")
static inline float sk_reduce16(__m512 acc) {
    __m256 s = _mm256_add_ps(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1)),
                             _mm512_castps512_ps256(acc));
    s = _mm256_hadd_ps(s, s);
    s = _mm256_hadd_ps(s, s);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));
}

/* softmax of one row in place (see sk_softmax_rows): MLAS's AVX-512F sum of exp() */
SK_TARGET("avx512f,avx2,fma")
static void sk_softmax_avx512f(float *row, size_t n, float negative_maximum) {
    const __m512 shift = _mm512_set1_ps(negative_maximum);
    if (n <= 16) { /* one vector, kept in a register (a store then a load of it stalls) */
        __mmask16 k = (__mmask16)((1u << n) - 1u);
        __m512 e = sk_exp16(_mm512_maskz_add_ps(k, shift, _mm512_loadu_ps(row)));
        float scale = 1.0f / sk_reduce16(_mm512_maskz_mov_ps(k, e));
        _mm512_storeu_ps(row, _mm512_mul_ps(_mm512_set1_ps(scale), e));
        return;
    }
    __m512 acc = _mm512_setzero_ps();
    float *p = row;
    size_t left = n;
    for (; left >= 48; left -= 48, p += 48) {
        __m512 e0 = sk_exp16(_mm512_add_ps(shift, _mm512_loadu_ps(p)));
        __m512 e1 = sk_exp16(_mm512_add_ps(shift, _mm512_loadu_ps(p + 16)));
        __m512 e2 = sk_exp16(_mm512_add_ps(shift, _mm512_loadu_ps(p + 32)));
        acc = _mm512_add_ps(acc, e0);
        acc = _mm512_add_ps(acc, e1);
        acc = _mm512_add_ps(acc, e2);
        _mm512_storeu_ps(p, e0);
        _mm512_storeu_ps(p + 16, e1);
        _mm512_storeu_ps(p + 32, e2);
    }
    while (left > 0) {
        __mmask16 k = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
        __m512 e = sk_exp16(_mm512_maskz_add_ps(k, shift, _mm512_loadu_ps(p)));
        acc = _mm512_mask_add_ps(acc, k, acc, e);
        _mm512_storeu_ps(p, e);
        p += 16;
        left = left > 16 ? left - 16 : 0;
    }
    const __m512 scale = _mm512_set1_ps(1.0f / sk_reduce16(acc));
    for (size_t j = 0; j < n; j += 16) _mm512_storeu_ps(row + j, _mm512_mul_ps(scale, _mm512_loadu_ps(row + j)));
}

/* ---- the same, MLAS's FMA3 kernel ---- */

SK_TARGET("avx2,fma")
static inline __m256 sk_exp8(__m256 x) {
    x = _mm256_max_ps(_mm256_set1_ps(SK_EXP_LOWER_RANGE_SUM_EXP), x);
    const __m256 bias = _mm256_set1_ps(SK_EXP_ROUNDING_BIAS);
    __m256 biased = _mm256_fmadd_ps(_mm256_set1_ps(SK_EXP_LOG2_RECIPROCAL), x, bias);
    __m256 m = _mm256_sub_ps(biased, bias);
    x = _mm256_fmadd_ps(m, _mm256_set1_ps(SK_EXP_LOG2_HIGH), x);
    x = _mm256_fmadd_ps(m, _mm256_set1_ps(SK_EXP_LOG2_LOW), x);
    __m256 p = _mm256_set1_ps(SK_EXP_POLY_0);
    p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(SK_EXP_POLY_1));
    p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(SK_EXP_POLY_2));
    p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(SK_EXP_POLY_3));
    p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(SK_EXP_POLY_4));
    p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(SK_EXP_POLY_56));
    p = _mm256_fmadd_ps(p, x, _mm256_set1_ps(SK_EXP_POLY_56));
    __m256i scale = _mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(biased), 23),
                                     _mm256_set1_epi32(SK_EXP_MAXIMUM_EXPONENT));
    return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

SK_TARGET("avx2,fma")
static inline __m256i sk_lanes8(size_t n) {
    static const int32_t table[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(table + 8 - n)); /* the first n lanes */
}

SK_TARGET("avx2,fma")
static float sk_sum_exp_fma3(float *row, size_t n, float negative_maximum) { /* stores each exp() */
    __m256 shift = _mm256_set1_ps(negative_maximum);
    __m256 acc = _mm256_setzero_ps();
    float *p = row;
    for (; n >= 24; n -= 24, p += 24) {
        __m256 e0 = sk_exp8(_mm256_add_ps(shift, _mm256_loadu_ps(p)));
        __m256 e1 = sk_exp8(_mm256_add_ps(shift, _mm256_loadu_ps(p + 8)));
        __m256 e2 = sk_exp8(_mm256_add_ps(shift, _mm256_loadu_ps(p + 16)));
        acc = _mm256_add_ps(acc, e0);
        acc = _mm256_add_ps(acc, e1);
        acc = _mm256_add_ps(acc, e2);
        _mm256_storeu_ps(p, e0);
        _mm256_storeu_ps(p + 8, e1);
        _mm256_storeu_ps(p + 16, e2);
    }
    for (; n >= 8; n -= 8, p += 8) {
        __m256 e = sk_exp8(_mm256_add_ps(shift, _mm256_loadu_ps(p)));
        acc = _mm256_add_ps(acc, e);
        _mm256_storeu_ps(p, e);
    }
    if (n > 0) {
        __m256i lanes = sk_lanes8(n);
        __m256 keep = _mm256_castsi256_ps(lanes);
        __m256 x = _mm256_and_ps(_mm256_loadu_ps(p), keep);
        __m256 e = sk_exp8(_mm256_add_ps(_mm256_and_ps(shift, keep), x));
        e = _mm256_and_ps(e, keep);
        acc = _mm256_add_ps(acc, e);
        _mm256_storeu_ps(p, e);
    }
    acc = _mm256_hadd_ps(acc, acc);
    acc = _mm256_hadd_ps(acc, acc);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc)));
}

/* ---- the core ---- */

/* softmax of one row in place (see sk_softmax_rows): MLAS's FMA3 sum of exp() */
SK_TARGET("avx2,fma")
static void sk_softmax_fma3(float *row, size_t n, float negative_maximum) {
    float scale = 1.0f / sk_sum_exp_fma3(row, n, negative_maximum);
    size_t j = 0;
    const __m256 s = _mm256_set1_ps(scale);
    for (; j < n; j += 8) _mm256_storeu_ps(row + j, _mm256_mul_ps(s, _mm256_loadu_ps(row + j)));
}

/* Softmax over each of `rows` rows of `length` scores (`stride` apart), as MlasComputeSoftmax: the row's
 * maximum, exp(x - maximum) and their sum, then each exp() times 1 / sum. */
SK_TARGET("avx2,fma")
static void sk_softmax_rows(float *scores, size_t rows, size_t length, size_t stride, int sum_exp) {
    for (size_t i = 0; i < rows; ++i) {
        float *row = scores + i * stride;
        __m256 top = _mm256_set1_ps(-3.40282347e+38f);
        size_t j = 0;
        for (; j + 8 <= length; j += 8) top = _mm256_max_ps(top, _mm256_loadu_ps(row + j));
        float lanes[8], maximum;
        _mm256_storeu_ps(lanes, top);
        maximum = lanes[0];
        for (size_t l = 1; l < 8; ++l) maximum = lanes[l] > maximum ? lanes[l] : maximum;
        for (; j < length; ++j) maximum = row[j] > maximum ? row[j] : maximum;
        if (sum_exp == SK_SUM_EXP_AVX512F)
            sk_softmax_avx512f(row, length, -maximum);
        else
            sk_softmax_fma3(row, length, -maximum);
    }
}

/* 8 x 8 floats transposed in registers: rows[r] holds row r; on return rows[c] holds column c. */
SK_TARGET("avx2,fma")
static inline void sk_transpose8(__m256 rows[8]) {
    __m256 t0 = _mm256_unpacklo_ps(rows[0], rows[1]), t1 = _mm256_unpackhi_ps(rows[0], rows[1]);
    __m256 t2 = _mm256_unpacklo_ps(rows[2], rows[3]), t3 = _mm256_unpackhi_ps(rows[2], rows[3]);
    __m256 t4 = _mm256_unpacklo_ps(rows[4], rows[5]), t5 = _mm256_unpackhi_ps(rows[4], rows[5]);
    __m256 t6 = _mm256_unpacklo_ps(rows[6], rows[7]), t7 = _mm256_unpackhi_ps(rows[6], rows[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    rows[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    rows[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    rows[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    rows[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    rows[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    rows[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    rows[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    rows[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* The keys of one head, transposed: kt[d * padded + j] = k[j * hidden + d], zero for j >= length. */
SK_TARGET("avx2,fma")
static void sk_transpose_keys(const float *k, size_t length, size_t hidden, size_t width, size_t padded,
                              float *kt) {
    for (size_t j = 0; j < padded; j += 8) {
        for (size_t d = 0; d < width; d += 8) {
            __m256 block[8];
            for (size_t r = 0; r < 8; ++r)
                block[r] = j + r < length ? _mm256_loadu_ps(k + (j + r) * hidden + d) : _mm256_setzero_ps();
            sk_transpose8(block);
            for (size_t c = 0; c < 8; ++c) _mm256_storeu_ps(kt + (d + c) * padded + j, block[c]);
        }
    }
}

/* scores[i][j] = (the chain over d of q[i][d] * k[j][d]) * alpha + mask[i][j] for ROWS query rows from i
 * and BLOCKS blocks of 8 keys from j: ROWS x BLOCKS independent chains, so the FMA units stay busy. */
#define SK_SCORES_TILE(ROWS, BLOCKS)                                                                         \
    do {                                                                                                   \
        __m256 acc[ROWS][BLOCKS];                                                                          \
        const float *qr[ROWS];                                                                             \
        for (size_t r = 0; r < ROWS; ++r) {                                                                \
            qr[r] = q + (i + (r < n ? r : 0)) * hidden;                                                    \
            for (size_t b = 0; b < BLOCKS; ++b) acc[r][b] = _mm256_setzero_ps();                           \
        }                                                                                                  \
        for (size_t d = 0; d < width; ++d) {                                                               \
            __m256 key[BLOCKS];                                                                            \
            for (size_t b = 0; b < BLOCKS; ++b) key[b] = _mm256_loadu_ps(kt + d * padded + j + 8 * b);     \
            for (size_t r = 0; r < ROWS; ++r) {                                                            \
                __m256 query = _mm256_set1_ps(qr[r][d]);                                                   \
                for (size_t b = 0; b < BLOCKS; ++b) acc[r][b] = _mm256_fmadd_ps(query, key[b], acc[r][b]); \
            }                                                                                              \
        }                                                                                                  \
        for (size_t b = 0; b < BLOCKS; ++b) {                                                              \
            size_t at = j + 8 * b, valid = length - at < 8 ? length - at : 8;                              \
            __m256i lanes = sk_lanes8(valid);                                                              \
            for (size_t r = 0; r < n && r < ROWS; ++r) {                                                   \
                __m256 m = _mm256_maskload_ps(mask + (i + r) * length + at, lanes);                        \
                _mm256_storeu_ps(scores + (i + r) * stride + at,                                           \
                                 _mm256_add_ps(_mm256_mul_ps(acc[r][b], scale), m));                       \
            }                                                                                              \
        }                                                                                                  \
    } while (0)

/* out[i][d] = the chain over j of p[i][j] * v[j][d] (p: the softmax's rows, `stride` apart), for every
 * query row, 2 rows at a time, VECTORS vectors of 8 floats per row (the head's width / 8). */
#define SK_VALUES_TILE(VECTORS)                                                                              \
    for (size_t i = 0; i < length; i += 2) {                                                               \
        size_t n = length - i < 2 ? length - i : 2;                                                        \
        const float *p0 = scores + i * stride;                                                             \
        const float *p1 = p0 + (n > 1 ? stride : 0);                                                       \
        __m256 a0[VECTORS], a1[VECTORS];                                                                   \
        for (size_t c = 0; c < VECTORS; ++c) a0[c] = a1[c] = _mm256_setzero_ps();                          \
        for (size_t j = 0; j < length; ++j) {                                                              \
            const float *vj = v + j * hidden;                                                              \
            __m256 w0 = _mm256_set1_ps(p0[j]), w1 = _mm256_set1_ps(p1[j]);                                 \
            for (size_t c = 0; c < VECTORS; ++c) {                                                         \
                __m256 value = _mm256_loadu_ps(vj + 8 * c);                                                \
                a0[c] = _mm256_fmadd_ps(w0, value, a0[c]);                                                 \
                a1[c] = _mm256_fmadd_ps(w1, value, a1[c]);                                                 \
            }                                                                                              \
        }                                                                                                  \
        for (size_t c = 0; c < VECTORS; ++c) _mm256_storeu_ps(out + i * hidden + 8 * c, a0[c]);            \
        if (n > 1)                                                                                         \
            for (size_t c = 0; c < VECTORS; ++c) _mm256_storeu_ps(out + (i + 1) * hidden + 8 * c, a1[c]);  \
    }

SK_TARGET("avx2,fma")
static void sk_attention_head(const float *q, const float *k, const float *v, const float *mask,
                              size_t length, size_t hidden, size_t width, float alpha, int sum_exp,
                              float *kt, float *scores, size_t padded, size_t stride, float *out) {
    sk_transpose_keys(k, length, hidden, width, padded, kt);
    const __m256 scale = _mm256_set1_ps(alpha);
    if (padded == 8) {
        for (size_t i = 0; i < length; i += 8) {
            size_t n = length - i, j = 0;
            SK_SCORES_TILE(8, 1);
        }
    } else {
        for (size_t i = 0; i < length; i += 4) {
            size_t n = length - i < 4 ? length - i : 4, j = 0;
            for (; j + 16 <= padded; j += 16) SK_SCORES_TILE(4, 2);
            if (j < padded) SK_SCORES_TILE(4, 1);
        }
    }
    sk_softmax_rows(scores, length, length, stride, sum_exp);
    switch (width / 8) { /* a constant count of vectors per row, so the accumulators stay in registers */
    case 1: SK_VALUES_TILE(1); break;
    case 2: SK_VALUES_TILE(2); break;
    case 3: SK_VALUES_TILE(3); break;
    case 4: SK_VALUES_TILE(4); break;
    case 5: SK_VALUES_TILE(5); break;
    case 6: SK_VALUES_TILE(6); break;
    case 7: SK_VALUES_TILE(7); break;
    default: SK_VALUES_TILE(8); break;
    }
}

#endif /* x86 */

int sk_attention_supported(int sum_exp) {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    static int fma3 = -1, avx512f = -1; /* racing first calls store the same values */
    if (fma3 < 0) {
        __builtin_cpu_init();
        avx512f = __builtin_cpu_supports("avx512f");
        fma3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    if (sum_exp == SK_SUM_EXP_FMA3) return fma3;
    if (sum_exp == SK_SUM_EXP_AVX512F) return fma3 && avx512f;
#endif
    (void)sum_exp;
    return 0;
}

int sk_attention(const float *query, const float *key, const float *value, const float *mask, size_t rows,
                 size_t length, size_t heads, size_t width, float alpha, int sum_exp, float *out) {
    if (!sk_attention_supported(sum_exp)) return SK_ATTENTION_UNSUPPORTED;
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
    if (width == 0 || width % 8 != 0 || width > 64 || length == 0 || heads == 0) return SK_ATTENTION_BAD_SHAPE;
    size_t hidden = heads * width, padded = (length + 7) / 8 * 8, stride = (length + 15) / 16 * 16;
    float *scratch = (float *)calloc(width * padded + length * stride, sizeof(float));
    if (scratch == NULL) return SK_ATTENTION_NO_MEMORY;
    float *kt = scratch, *scores = scratch + width * padded;
    for (size_t r = 0; r < rows; ++r) {
        size_t base = r * length * hidden;
        for (size_t h = 0; h < heads; ++h) {
            size_t at = base + h * width;
            sk_attention_head(query + at, key + at, value + at, mask + r * length * length, length, hidden, width,
                              alpha, sum_exp, kt, scores, padded, stride, out + at);
        }
    }
    free(scratch);
#endif
    (void)query, (void)key, (void)value, (void)mask, (void)rows, (void)length, (void)heads, (void)width, (void)alpha, (void)out;
    return 0;
}
