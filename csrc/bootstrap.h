/* bootstrap.h: the sums behind the bootstrap's statistics, one pass over a sample's rows per resample
 * (bootstrap.c), for simkernel.stats.intervals.
 *
 * A resample is a row of counts: how often each of the sample's n rows was drawn into it (uint16; the
 * jackknife's 0/1 weights too). The rows are held sorted by x. For each resample, sk_bootstrap_sums writes
 * SK_BOOT_SUMS doubles:
 *
 *   [0] N, the rows drawn (sum of the counts)          [5] sum w yc^2
 *   [1] sum w x                                         [6] sum w xc yc
 *   [2] sum w xc (xc: x minus the sample's mean)        [7] Spearman: sum w rx ry
 *   [3] sum w yc (yc: y minus the sample's mean)        [8] Spearman: sum w rx^2
 *   [4] sum w xc^2                                      [9] Spearman: sum w ry^2
 *
 * where rx (ry) is a drawn row's average rank of x (of y) among the N rows drawn, ties sharing the mean of
 * the ranks they span, centred on (N + 1) / 2. The sums [1]-[6] are those of the sample's moment columns
 * (x alone: [1] only); [7]-[9] are written when the sample has y's groups (y_order), else left as they were.
 *
 * Numerics. The moments [1]-[6] are float64 sums in a fixed order (eight interleaved partial sums, added
 * pairwise at the end; no fused multiply-add), so every CPU and every build gives the same bits. The ranks are integers: twice a
 * centred rank is exact in int64, the sums of squares come from the closed form
 *   sum w rx^2 = ((N^3 - N) - sum over tie groups (t^3 - t)) / 12
 * (a row drawn c times is a tie group of c, as are the rows of equal x drawn; the cubes summed in int64 up
 * to 2,000,000 rows drawn), and the cross sum from exact integer sums per group of equal y, so [7]-[9] are
 * exact while 4 N^3 stays below 2^53 (N up to 131,000 rows drawn), and within float64 rounding above.
 *
 * Thread-safe: each call allocates its own scratch (n doubles, n int64 and n bytes). Returns 0, or
 * SK_BOOT_NO_MEMORY. */
#ifndef SK_BOOTSTRAP_H
#define SK_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#define SK_BOOT_SUMS 10
#define SK_BOOT_NO_MEMORY (-1)

typedef struct {
    size_t n;                     /* rows, sorted by x ascending */
    const double *columns;        /* the moment columns, n values each, one after another: x, or x, xc, yc,
                                   * xc^2, yc^2, xc yc (xc, yc: x and y minus the sample's means) */
    size_t n_columns;             /* 1 or 6 */
    const size_t *x_run_starts;   /* runs of equal x: x_runs + 1 row indices (the last is n); NULL: x distinct */
    size_t x_runs;
    const size_t *y_order;        /* the rows by ascending y (indices in x's order); NULL: no rank sums */
    const size_t *y_group_starts; /* groups of equal y in y_order: y_groups + 1 positions (the last is n) */
    size_t y_groups;
} sk_boot_sample;

int sk_bootstrap_sums(const sk_boot_sample *sample, const uint16_t *counts, size_t resamples, double *out);

/* Poisson(1) counts from 16-bit uniforms: counts[i] = #{k < SK_POISSON_EDGES : uniform[i] >= edges[k]}. */
#define SK_POISSON_EDGES 8
void sk_poisson_counts(const uint16_t *uniform, size_t cells, const uint16_t *edges, uint16_t *counts);

#endif
