/* parallel.c: fork-join over row ranges with plain POSIX threads (no OpenMP runtime to clash with the
 * ones torch or onnxruntime load). Threads are created per call; callers use this only for work large
 * enough (megabytes of input) that the creation cost (tens of microseconds) is noise. */
#if !defined(_WIN32)
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#endif

#include "parallel.h"

typedef struct sk_part {
    sk_range_fn fn;
    void *ctx;
    size_t begin, end;
} sk_part;

#if !defined(_WIN32)
static void *sk_part_main(void *arg) {
    sk_part *p = (sk_part *)arg;
    p->fn(p->ctx, p->begin, p->end);
    return NULL;
}
#endif

void sk_parallel_ranges(const size_t *bounds, size_t parts, sk_range_fn fn, void *ctx) {
    if (parts > SK_MAX_THREADS) parts = SK_MAX_THREADS;
    if (parts <= 1) {
        if (parts == 1) fn(ctx, bounds[0], bounds[1]);
        return;
    }
    sk_part jobs[SK_MAX_THREADS];
#if !defined(_WIN32)
    pthread_t threads[SK_MAX_THREADS];
    int started[SK_MAX_THREADS] = {0};
#endif
    for (size_t i = 0; i < parts; ++i) {
        jobs[i].fn = fn;
        jobs[i].ctx = ctx;
        jobs[i].begin = bounds[i];
        jobs[i].end = bounds[i + 1];
    }
#if !defined(_WIN32)
    for (size_t i = 1; i < parts; ++i)
        started[i] = pthread_create(&threads[i], NULL, sk_part_main, &jobs[i]) == 0;
#endif
    fn(ctx, jobs[0].begin, jobs[0].end);
    for (size_t i = 1; i < parts; ++i) {
#if !defined(_WIN32)
        if (started[i]) {
            pthread_join(threads[i], NULL);
            continue;
        }
#endif
        fn(ctx, jobs[i].begin, jobs[i].end);
    }
}

size_t sk_cpu_count(void) {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return (size_t)n;
    }
#endif
#if !defined(_WIN32)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n > 0) return (size_t)n;
#endif
    return 1;
}
