/* dispatch.c: CPU detection (once, at load) and the process-wide table of the active backend. */
#include <string.h>

#include "simkernel.h"

#if defined(SK_HAVE_X86) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define SK_X86_GNU 1
#elif defined(SK_HAVE_X86) && defined(_MSC_VER)
#include <immintrin.h>
#include <intrin.h>
#define SK_X86_MSVC 1
#endif

/* Best first. */
static const sk_backend *const sk_all_backends[] = {
#if defined(SK_HAVE_X86)
    &sk_backend_skylake,
    &sk_backend_haswell,
#endif
#if defined(SK_HAVE_NEON)
    &sk_backend_neon,
#endif
    &sk_backend_serial,
};
#define SK_BACKEND_COUNT (sizeof(sk_all_backends) / sizeof(sk_all_backends[0]))

static sk_cpu_features sk_features;
static int sk_initialized = 0;
static const sk_backend *volatile sk_current = &sk_backend_serial;

#if defined(SK_X86_GNU) || defined(SK_X86_MSVC)
static void sk_cpuid(unsigned leaf, unsigned sub, unsigned regs[4]) {
#if defined(SK_X86_GNU)
    __cpuid_count(leaf, sub, regs[0], regs[1], regs[2], regs[3]);
#else
    int r[4];
    __cpuidex(r, (int)leaf, (int)sub);
    for (int i = 0; i < 4; ++i) regs[i] = (unsigned)r[i];
#endif
}

/* XCR0: which register states the operating system saves (YMM, ZMM), i.e. may be used at all. */
static unsigned long long sk_xcr0(void) {
#if defined(SK_X86_GNU)
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
#else
    return _xgetbv(0);
#endif
}

static sk_cpu_features sk_detect(void) {
    sk_cpu_features f = {0, 0, 0, 0, 0, 0};
    unsigned r[4];
#if defined(SK_X86_GNU)
    if (__get_cpuid_max(0, 0) < 7) return f;
#endif
    sk_cpuid(1, 0, r);
    int osxsave = (r[2] >> 27) & 1, avx = (r[2] >> 28) & 1, fma = (r[2] >> 12) & 1;
    if (!osxsave || !avx) return f;
    unsigned long long xcr0 = sk_xcr0();
    int ymm_os = (xcr0 & 0x6) == 0x6;    /* SSE + AVX state */
    int zmm_os = (xcr0 & 0xe6) == 0xe6;  /* + opmask, ZMM_Hi256, Hi16_ZMM */
    sk_cpuid(7, 0, r);
    f.avx2 = ymm_os && ((r[1] >> 5) & 1);
    f.fma = ymm_os && fma;
    f.avx512f = zmm_os && ((r[1] >> 16) & 1);
    int amx_os = (xcr0 & 0x60000) == 0x60000; /* XTILECFG + XTILEDATA */
    f.amx_bf16 = amx_os && ((r[3] >> 22) & 1); /* leaf 7.0 EDX bit 22 */
    unsigned max_sub = r[0];
    if (max_sub >= 1) {
        sk_cpuid(7, 1, r);
        f.avx512_bf16 = zmm_os && f.avx512f && ((r[0] >> 5) & 1); /* leaf 7.1 EAX bit 5 */
    }
    return f;
}
#elif defined(SK_HAVE_NEON)
static sk_cpu_features sk_detect(void) {
    sk_cpu_features f = {0, 0, 0, 1, 0, 0}; /* Advanced SIMD is mandatory on AArch64. */
    return f;
}
#else
static sk_cpu_features sk_detect(void) {
    sk_cpu_features f = {0, 0, 0, 0, 0, 0};
    return f;
}
#endif

static int sk_supports(const sk_backend *b) {
    const char *n = b->name;
    if (strcmp(n, "serial") == 0) return 1;
    if (strcmp(n, "haswell") == 0) return sk_features.avx2 && sk_features.fma;
    if (strcmp(n, "skylake") == 0) return sk_features.avx512f && sk_features.avx2 && sk_features.fma;
    if (strcmp(n, "neon") == 0) return sk_features.neon;
    return 0;
}

void sk_init(void) {
    if (sk_initialized) return;
    sk_features = sk_detect();
    sk_initialized = 1;
    sk_select_backend("auto");
}

sk_cpu_features sk_cpu(void) {
    sk_init();
    return sk_features;
}

const sk_backend *sk_active(void) { return sk_current; }

size_t sk_backend_count(void) { return SK_BACKEND_COUNT; }

const sk_backend *sk_backend_at(size_t i) { return i < SK_BACKEND_COUNT ? sk_all_backends[i] : NULL; }

int sk_backend_supported(const char *name) {
    sk_init();
    for (size_t i = 0; i < SK_BACKEND_COUNT; ++i)
        if (strcmp(sk_all_backends[i]->name, name) == 0) return sk_supports(sk_all_backends[i]);
    return 0;
}

int sk_select_backend(const char *name) {
    sk_init();
    int automatic = name == NULL || strcmp(name, "auto") == 0;
    for (size_t i = 0; i < SK_BACKEND_COUNT; ++i) {
        const sk_backend *b = sk_all_backends[i];
        if (automatic) {
            if (sk_supports(b)) {
                sk_current = b;
                return 0;
            }
        } else if (strcmp(b->name, name) == 0) {
            if (!sk_supports(b)) return -2;
            sk_current = b;
            return 0;
        }
    }
    return automatic ? -2 : -1;
}

int64_t sk_check_offsets(const int64_t *offsets, size_t nq, size_t nr) {
    if (offsets[0] != 0) return 0;
    for (size_t i = 1; i <= nq; ++i)
        if (offsets[i] < offsets[i - 1] || offsets[i] > (int64_t)nr) return (int64_t)i;
    if (offsets[nq] != (int64_t)nr) return (int64_t)nq;
    return -1;
}

int64_t sk_check_pairs(const int64_t *pairs, size_t n_pairs, size_t n_cand, size_t n_ref) {
    for (size_t k = 0; k < n_pairs; ++k) {
        if (pairs[2 * k] < 0 || (uint64_t)pairs[2 * k] >= (uint64_t)n_cand) return (int64_t)(2 * k);
        if (pairs[2 * k + 1] < 0 || (uint64_t)pairs[2 * k + 1] >= (uint64_t)n_ref) return (int64_t)(2 * k + 1);
    }
    return -1;
}

size_t sk_longest_segment(const int64_t *offsets, size_t n) {
    size_t longest = 0;
    for (size_t i = 0; i < n; ++i) {
        size_t len = (size_t)(offsets[i + 1] - offsets[i]);
        longest = len > longest ? len : longest;
    }
    return longest;
}
