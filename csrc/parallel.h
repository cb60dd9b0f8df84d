/* parallel.h: run a row range on a few threads (internal helper of the Cython layer). */
#ifndef SIMKERNEL_PARALLEL_H
#define SIMKERNEL_PARALLEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Work on the items [begin, end) with the context `ctx`. Must be thread-safe for disjoint ranges. */
typedef void (*sk_range_fn)(void *ctx, size_t begin, size_t end);

/* Runs fn(ctx, bounds[i], bounds[i + 1]) for i < parts: part 0 on the calling thread, the others on new
 * threads, and returns when all are done. Falls back to running a part on the calling thread if a thread
 * cannot be created (and everywhere threads are unavailable). parts <= SK_MAX_THREADS. */
#define SK_MAX_THREADS 64
void sk_parallel_ranges(const size_t *bounds, size_t parts, sk_range_fn fn, void *ctx);

/* Number of CPUs this process may run on (at least 1). */
size_t sk_cpu_count(void);

#ifdef __cplusplus
}
#endif

#endif
