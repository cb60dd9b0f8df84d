/* attention.h: a BERT-family self-attention core in onnxruntime's CPU arithmetic (attention.c).
 *
 * sk_attention computes, for `rows` texts of `length` tokens each, with `heads` heads of `width` floats:
 *   context = softmax(query . key^T * alpha + mask) . value, per text and head,
 * where query, key, value and out are float32 (rows * length, heads * width) row-major (a head's columns
 * side by side, as the graph's projections give them) and mask is float32 (rows, length, length), the
 * additive mask the graph adds to the scores (0 where a key is attended to). Every output equals, bit for
 * bit, what onnxruntime's FusedMatMul / Add / Softmax / MatMul nodes give on the same inputs when its MLAS
 * library uses the sum of exp() named by sum_exp (SK_SUM_EXP_AVX512F or SK_SUM_EXP_FMA3, see attention.c);
 * callers check that on their own graph before relying on it.
 *
 * Returns 0, or SK_ATTENTION_UNSUPPORTED (this CPU lacks the instruction set), SK_ATTENTION_BAD_SHAPE (a
 * head width that is not a multiple of 8 up to 64, or an empty shape), SK_ATTENTION_NO_MEMORY. Thread-safe:
 * each call allocates its own scratch, (width + length) * length floats rounded up to 8. */
#ifndef SK_ATTENTION_H
#define SK_ATTENTION_H

#include <stddef.h>

#define SK_SUM_EXP_AVX512F 1
#define SK_SUM_EXP_FMA3 2

#define SK_ATTENTION_UNSUPPORTED (-1)
#define SK_ATTENTION_BAD_SHAPE (-2)
#define SK_ATTENTION_NO_MEMORY (-3)

int sk_attention_supported(int sum_exp);
int sk_attention(const float *query, const float *key, const float *value, const float *mask, size_t rows,
                 size_t length, size_t heads, size_t width, float alpha, int sum_exp, float *out);

#endif
