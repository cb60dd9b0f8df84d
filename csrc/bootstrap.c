/* bootstrap.c: the bootstrap's sums, one resample at a time (see bootstrap.h for what and in what
 * arithmetic). Plain C, no intrinsics: the compiler vectorises the sums (on x86 also for AVX2 and AVX-512,
 * picked at load time), and they keep one order whatever it picks (LANES partial sums of each float64 moment,
 * no FMA contraction; the rank sums are integers), so the results do not depend on the CPU. */
#include "bootstrap.h"

#include <stdlib.h>

#define LANES 8 /* interleaved partial sums of each moment: row i goes to lane i % LANES */
/* up to this many rows drawn, the sums of cubes of tie sizes are exact in int64: sum t^3 <= N^3 < 2^63 */
#define EXACT_DRAWN 2000000
/* up to this many groups of equal y, a group's sums are masked passes over the rows (vectorised) instead
 * of a walk through the rows in y's order (a gather per row) */
#define FEW_GROUPS 3

/* Load-time clones need GCC on x86 and glibc's ifunc (musl has none); SK_BOOTSTRAP_NO_CLONES: one build for
 * the compiler's target only (tests compare such builds' bits) */
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__)) && \
    defined(__GLIBC__) && !defined(SK_BOOTSTRAP_NO_CLONES)
#define VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

typedef struct {
    double *weights;       /* the resample's counts as float64 */
    int64_t *twice_rank;   /* each row's count times twice its uncentred average rank of x */
    uint8_t *group_of_row; /* each row's group of equal y, with at most FEW_GROUPS groups; else NULL */
} scratch;

/* the counts as float64 into `out`; returns the rows drawn, and the sum of their cubes into `cubes` */
VECTOR_CLONES
static int64_t to_double(const uint16_t *w, size_t n, double *out, int64_t *cubes) {
    int64_t drawn = 0;
    uint64_t cube_sum = 0; /* exact while drawn <= EXACT_DRAWN (rank_sums does not read it above) */
    for (size_t i = 0; i < n; i++) {
        uint64_t c = w[i];
        out[i] = (double)w[i];
        drawn += (int64_t)c;
        cube_sum += c * c * c;
    }
    *cubes = (int64_t)(cube_sum & INT64_MAX);
    return drawn;
}

/* sum over the rows of w[i] * column[i] for each of `columns` columns (column-major, n each) */
VECTOR_CLONES
static void moment_sums(const double *column_data, size_t columns, size_t n, const double *w, double *out) {
    for (size_t k = 0; k < columns; k++) {
        const double *column = column_data + k * n;
        double lane[LANES] = {0.0};
        size_t i = 0;
        for (; i + LANES <= n; i += LANES) {
            for (size_t j = 0; j < LANES; j++) {
                lane[j] += w[i + j] * column[i + j];
            }
        }
        for (size_t j = 0; i < n; i++, j++) {
            lane[j] += w[i] * column[i];
        }
        out[k] = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    }
}

/* one group's rows drawn and the sum of their twice_rank, by a masked pass over all the rows */
VECTOR_CLONES
static void masked_sums(const uint8_t *group_of_row, uint8_t group, const uint16_t *w, const int64_t *twice_rank,
                        size_t n, int64_t *count, int64_t *sum) {
    int64_t c = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t in = group_of_row[i] == group;
        c += in * (int64_t)w[i];
        s += in * twice_rank[i];
    }
    *count = c;
    *sum = s;
}

/* sum over tie groups of t^3, given by add_cube one group at a time: in int64 (exact) while the rows drawn
 * allow it, in float64 above */
typedef struct {
    int exact;
    int64_t cubes;
    double cubes_rounded;
} cube_sum;

static inline void add_cube(cube_sum *sum, int64_t t) {
    if (sum->exact) {
        sum->cubes += t * t * t;
    } else {
        sum->cubes_rounded += (double)t * (double)t * (double)t;
    }
}

static double cube_total(const cube_sum *sum) { return sum->exact ? (double)sum->cubes : sum->cubes_rounded; }

/* Spearman's three sums for one resample of `drawn` rows: [0] sum w rx ry, [1] sum w rx^2, [2] sum w ry^2
 * (centred average ranks); `row_cubes`: sum w^3 over the rows (to_double's) */
static void rank_sums(const sk_boot_sample *s, const uint16_t *w, int64_t drawn, int64_t row_cubes,
                      const scratch *work, double *out) {
    /* twice each drawn row's uncentred average rank of x, times its count: a run of equal x drawn c times in
     * all, after `below` rows, holds the ranks below + 1 .. below + c, of mean below + (c + 1) / 2 */
    int64_t *twice_rank = work->twice_rank;
    int64_t below = 0;
    cube_sum x_ties = {drawn <= EXACT_DRAWN, 0, 0.0};
    if (s->x_run_starts == NULL) { /* every x distinct: a row drawn c times is a tie group of c */
        for (size_t i = 0; i < s->n; i++) {
            int64_t c = w[i];
            twice_rank[i] = c * (2 * below + c + 1);
            below += c;
        }
        if (x_ties.exact) {
            x_ties.cubes = row_cubes;
        } else {
            for (size_t i = 0; i < s->n; i++) {
                add_cube(&x_ties, w[i]);
            }
        }
    } else {
        for (size_t g = 0; g < s->x_runs; g++) {
            size_t start = s->x_run_starts[g], stop = s->x_run_starts[g + 1];
            int64_t c = 0;
            for (size_t i = start; i < stop; i++) {
                c += w[i];
            }
            int64_t rank2 = 2 * below + c + 1;
            for (size_t i = start; i < stop; i++) {
                twice_rank[i] = (int64_t)w[i] * rank2;
            }
            add_cube(&x_ties, c);
            below += c;
        }
    }
    /* by group of equal y, in ascending y: its count and the sum of its rows' twice-ranks of x; centred on
     * (N + 1) / 2, twice a rank is 2 rank - (N + 1), so a group's centred sum is its sum - (N + 1) count */
    double cross4 = 0.0;
    cube_sum y_ties = {drawn <= EXACT_DRAWN, 0, 0.0};
    int64_t y_below = 0;
    for (size_t g = 0; g < s->y_groups; g++) {
        int64_t count = 0, sum = 0;
        if (work->group_of_row != NULL) {
            masked_sums(work->group_of_row, (uint8_t)g, w, twice_rank, s->n, &count, &sum);
        } else {
            for (size_t k = s->y_group_starts[g]; k < s->y_group_starts[g + 1]; k++) {
                size_t i = s->y_order[k];
                count += w[i];
                sum += twice_rank[i];
            }
        }
        int64_t y_rank2 = 2 * y_below + count - drawn; /* twice the group's centred average rank of y */
        cross4 += (double)y_rank2 * (double)(sum - (drawn + 1) * count);
        add_cube(&y_ties, count);
        y_below += count;
    }
    double n = (double)drawn;
    double all = n * n * n - n; /* the sum of (t^3 - t) over tie groups is their cubes minus N */
    out[0] = cross4 / 4.0;
    out[1] = (all - (cube_total(&x_ties) - n)) / 12.0;
    out[2] = (all - (cube_total(&y_ties) - n)) / 12.0;
}

int sk_bootstrap_sums(const sk_boot_sample *s, const uint16_t *counts, size_t resamples, double *out) {
    size_t n = s->n ? s->n : 1;
    scratch work = {malloc(n * sizeof(double)), malloc(n * sizeof(int64_t)), NULL};
    int few = s->y_order != NULL && s->y_groups <= FEW_GROUPS;
    if (few) {
        work.group_of_row = malloc(n);
    }
    if (work.weights == NULL || work.twice_rank == NULL || (few && work.group_of_row == NULL)) {
        free(work.weights);
        free(work.twice_rank);
        free(work.group_of_row);
        return SK_BOOT_NO_MEMORY;
    }
    if (few) {
        for (size_t g = 0; g < s->y_groups; g++) {
            for (size_t k = s->y_group_starts[g]; k < s->y_group_starts[g + 1]; k++) {
                work.group_of_row[s->y_order[k]] = (uint8_t)g;
            }
        }
    }
    for (size_t r = 0; r < resamples; r++) {
        const uint16_t *w = counts + r * s->n;
        double *sums = out + r * SK_BOOT_SUMS;
        int64_t cubes;
        int64_t drawn = to_double(w, s->n, work.weights, &cubes);
        sums[0] = (double)drawn;
        moment_sums(s->columns, s->n_columns, s->n, work.weights, sums + 1);
        if (s->y_order != NULL) {
            rank_sums(s, w, drawn, cubes, &work, sums + 7);
        }
    }
    free(work.weights);
    free(work.twice_rank);
    free(work.group_of_row);
    return 0;
}

VECTOR_CLONES
void sk_poisson_counts(const uint16_t *uniform, size_t cells, const uint16_t *edges, uint16_t *counts) {
    uint16_t edge[SK_POISSON_EDGES];
    for (size_t k = 0; k < SK_POISSON_EDGES; k++) {
        edge[k] = edges[k];
    }
    for (size_t i = 0; i < cells; i++) {
        uint16_t count = 0;
        for (size_t k = 0; k < SK_POISSON_EDGES; k++) {
            count += uniform[i] >= edge[k];
        }
        counts[i] = count;
    }
}
