# cython: language_level=3
"""Cython layer of the cosine kernel: argument fast path, GIL release, native dispatch, BLAS route.

The public names are re-exported (and documented) by :mod:`simkernel.kernels`; import them from there.

Arguments that already are float32, C-contiguous, aligned, native-endian ``numpy.ndarray`` s go straight to
the C kernels (a few C-level checks, no Python-level work: a call on 1 x 8 vectors costs about a microsecond).
Anything else goes once through :mod:`simkernel._validation`, which converts it or raises. Arrays are read
through ``const`` pointers, so read-only arrays are accepted and never written. Native calls on
``GIL_FREE_FLOATS`` floats or more run ``with nogil``; smaller ones keep the GIL (retaking it can cost an
event loop the 5 ms switch interval).

Arrays are taken as ``ndarray`` objects and read through the numpy C API rather than as typed memoryviews:
acquiring a ``const float[:, ::1]`` view costs a few hundred nanoseconds per argument, which is most of
the budget of a small call; the checks made are the same (dtype, dimensions, C order, alignment).
"""

cimport numpy as cnp
from libc.stdint cimport int64_t

# csrc/simkernel.h's and csrc/parallel.h's declarations, and the array helpers (_data, _out, _empty*): .pxd

import numpy as np

from simkernel import _validation

cnp.import_array()


sk_init()

# Threads for large memory-bound calls (paired_cosine, ragged cosine_reduce, normalize): a call is split
# only when it reads at least _parallel_min_floats floats per part, so small calls never pay for a thread.
cdef size_t _num_threads = sk_cpu_count() if sk_cpu_count() < 8 else 8
cdef size_t _parallel_min_floats = 1 << 18
cdef size_t GIL_FREE_FLOATS = 32768  # calls reading fewer floats keep the GIL (module docstring)

# Route of cosine_matrix and dense cosine_reduce: -1 chooses by shape, 0 always native, 1 always BLAS.
cdef int _blas_mode = -1
# BLAS (numpy.matmul on natively normalised rows) wins once both sides have a few rows and the product
# amortises the extra passes (measured on a 2-core AVX-512 machine: benchmarks/studies/route_crossover.py).
cdef double _blas_min_work = 1.5e5   # n * m * d multiply-adds
cdef size_t _blas_min_rows = 16      # min(n, m)
# The dense BLAS route computes similarities in blocks of query rows of at most this many floats (16 MiB):
# one BLAS call per block, and each call is a barrier for BLAS's threads, which costs dearly when another
# process holds a core; 1024 x 1024 and smaller shapes take a single call.
cdef size_t _blas_block_floats = 1 << 22
cdef tuple _MAX_MEAN = ("max", "mean")


cdef inline bint _is_fast(object x, int ndim):
    return (
        cnp.PyArray_CheckExact(x)
        and cnp.PyArray_TYPE(<cnp.ndarray>x) == cnp.NPY_FLOAT32
        and cnp.PyArray_NDIM(<cnp.ndarray>x) == ndim
        and cnp.PyArray_ISCARRAY_RO(<cnp.ndarray>x)
    )


cdef inline bint _fast_clamp(object clamp, sk_clamp *c):
    """Reads a (lo, hi) tuple of Python floats/ints with lo <= hi into c; False sends it to _validation."""
    if type(clamp) is not tuple or len(<tuple>clamp) != 2:
        return False
    a = (<tuple>clamp)[0]
    b = (<tuple>clamp)[1]
    if not ((type(a) is float or type(a) is int) and (type(b) is float or type(b) is int)):
        return False
    if type(a) is int and not -(1 << 53) <= a <= (1 << 53) or type(b) is int and not -(1 << 53) <= b <= (1 << 53):
        return False
    cdef double lo = a, hi = b
    if not lo <= hi:  # also rejects NaN
        return False
    c.enabled = 1
    c.lo = <float>lo
    c.hi = <float>hi
    return True


cdef inline cnp.ndarray _matrix(object x, str name):
    if _is_fast(x, 2):
        return <cnp.ndarray>x
    return _validation.as_matrix(x, name)


cdef inline bint _use_blas(size_t n, size_t m, size_t d) noexcept:
    if _blas_mode >= 0:
        return _blas_mode == 1
    return n >= _blas_min_rows and m >= _blas_min_rows and <double>n * <double>m * <double>d >= _blas_min_work


ctypedef struct _Job:
    const sk_backend *be
    const float *a
    const float *b
    const int64_t *offsets
    size_t d
    sk_clamp clamp
    float *out
    float *out2


cdef void _normalize_part(void *ctx, size_t begin, size_t end) noexcept nogil:
    cdef _Job *j = <_Job *>ctx
    j.be.normalize(j.a + begin * j.d, end - begin, j.d, j.out + begin * j.d)


cdef void _paired_part(void *ctx, size_t begin, size_t end) noexcept nogil:
    cdef _Job *j = <_Job *>ctx
    j.be.paired_cosine(j.a + begin * j.d, j.b + begin * j.d, end - begin, j.d, j.out + begin)


cdef void _reduce_part(void *ctx, size_t begin, size_t end) noexcept nogil:
    cdef _Job *j = <_Job *>ctx
    j.be.cosine_reduce(j.a + begin * j.d, end - begin, j.b, j.offsets + begin, j.d, j.clamp,
                       j.out + begin if j.out != NULL else NULL, j.out2 + begin if j.out2 != NULL else NULL)


cdef size_t _parts_for(size_t rows, double floats) noexcept nogil:
    cdef size_t parts = <size_t>(floats / <double>_parallel_min_floats)
    if parts > _num_threads:
        parts = _num_threads
    if parts > rows:
        parts = rows
    if parts > SK_MAX_THREADS:
        parts = SK_MAX_THREADS
    return parts if parts > 1 else 1


cdef void _run_rows(_Job *job, sk_range_fn fn, size_t rows, size_t row_floats) noexcept nogil:
    """Runs fn over [0, rows) in equal parts, on several threads when the call is large."""
    cdef size_t parts = _parts_for(rows, <double>rows * <double>row_floats)
    cdef size_t bounds[SK_MAX_THREADS + 1]
    cdef size_t i
    if parts <= 1:
        fn(job, 0, rows)
        return
    for i in range(parts + 1):
        bounds[i] = rows * i // parts
    sk_parallel_ranges(bounds, parts, fn, job)


cdef void _run_ragged(_Job *job, size_t nq, size_t nr) noexcept nogil:
    """Runs the ragged reduction in parts of about equal numbers of refs (plus queries), in parallel when large."""
    cdef size_t parts = _parts_for(nq, <double>(nr + nq) * <double>job.d)
    cdef size_t bounds[SK_MAX_THREADS + 1]
    cdef size_t i, q = 0
    cdef double total = <double>(nr + nq), target
    if parts <= 1:
        _reduce_part(job, 0, nq)
        return
    bounds[0] = 0
    for i in range(1, parts):
        target = total * i / parts
        while q < nq and <double>(job.offsets[q] + <int64_t>q) < target:
            q += 1
        bounds[i] = q
    bounds[parts] = nq
    sk_parallel_ranges(bounds, parts, _reduce_part, job)


cdef cnp.ndarray _normalized(cnp.ndarray x, bint threaded=True):
    """Normalised copy of x. The BLAS route passes threaded=False: right before and after numpy's BLAS
    call, BLAS's own threads are spinning on the other cores, and a thread of ours would fight them."""
    cdef size_t n = <size_t>cnp.PyArray_DIMS(x)[0], d = <size_t>cnp.PyArray_DIMS(x)[1]
    cdef cnp.ndarray out = _empty2(n, d)
    cdef _Job job
    job.be = sk_active()
    job.a = _data(x)
    job.d = d
    job.out = _out(out)
    if n * d < GIL_FREE_FLOATS:
        _normalize_part(&job, 0, n)
        return out
    with nogil:
        if threaded:
            _run_rows(&job, _normalize_part, n, 2 * d)
        else:
            _normalize_part(&job, 0, n)
    return out


def normalize(x):
    cdef cnp.ndarray X = _matrix(x, "x")
    return _normalized(X)


def paired_cosine(a, b):
    cdef cnp.ndarray A = _matrix(a, "a")
    cdef cnp.ndarray B = _matrix(b, "b")
    cdef cnp.npy_intp *da = cnp.PyArray_DIMS(A)
    cdef cnp.npy_intp *db = cnp.PyArray_DIMS(B)
    if da[1] != db[1]:
        _validation.check_same_dim(A, B, "a", "b")
    if da[0] != db[0]:
        _validation.check_same_rows(A, B, "a", "b")
    cdef size_t n = <size_t>da[0], d = <size_t>da[1]
    cdef cnp.ndarray out = _empty1(da[0])
    cdef _Job job
    job.be = sk_active()
    job.a = _data(A)
    job.b = _data(B)
    job.d = d
    job.out = _out(out)
    if 2 * n * d < GIL_FREE_FLOATS:
        _paired_part(&job, 0, n)
    else:
        with nogil:
            _run_rows(&job, _paired_part, n, 2 * d)
    return out


def cosine_matrix(a, b):
    cdef cnp.ndarray A = _matrix(a, "a")
    cdef cnp.ndarray B = _matrix(b, "b")
    cdef cnp.npy_intp *da = cnp.PyArray_DIMS(A)
    cdef cnp.npy_intp *db = cnp.PyArray_DIMS(B)
    if da[1] != db[1]:
        _validation.check_same_dim(A, B, "a", "b")
    cdef size_t n = <size_t>da[0], m = <size_t>db[0], d = <size_t>da[1]
    if _use_blas(n, m, d):
        return np.matmul(_normalized(A, False), _normalized(B, False).T)
    cdef cnp.ndarray out = _empty2(da[0], db[0])
    cdef cnp.ndarray work = _empty1(da[0] + db[0])
    cdef const sk_backend *be = sk_active()
    cdef const float *pa = _data(A)
    cdef const float *pb = _data(B)
    cdef float *pw = _out(work)
    cdef float *po = _out(out)
    if (n + m) * d < GIL_FREE_FLOATS:
        be.cosine_matrix(pa, n, pb, m, d, pw, po)
    else:
        with nogil:
            be.cosine_matrix(pa, n, pb, m, d, pw, po)
    return out


cdef void _reduce_dense_blas(cnp.ndarray Q, cnp.ndarray R, sk_clamp clamp, float *pmax, float *pmean) except *:
    cdef size_t nq = <size_t>cnp.PyArray_DIMS(Q)[0], nr = <size_t>cnp.PyArray_DIMS(R)[0]
    cdef size_t block = _blas_block_floats // (nr if nr > 0 else 1)
    if block < 1:
        block = 1
    if block > nq:
        block = nq if nq > 0 else 1
    cdef cnp.ndarray qn = _normalized(Q, False)
    cdef object rt = _normalized(R, False).T
    cdef cnp.ndarray buf = _empty2(block, nr)
    cdef size_t start = 0, rows
    cdef const sk_backend *be = sk_active()
    cdef const float *ps = _data(buf)
    cdef object matmul = np.matmul
    while start < nq:
        rows = nq - start if nq - start < block else block
        matmul(qn[start:start + rows], rt, out=buf[:rows])
        with nogil:
            be.reduce_rows(ps, rows, nr, nr, clamp, pmax + start if pmax != NULL else NULL,
                           pmean + start if pmean != NULL else NULL)
        start += rows


def cosine_reduce(queries, refs, offsets=None, reduce="max", clamp=None):
    cdef cnp.ndarray Q = _matrix(queries, "queries")
    cdef cnp.ndarray R = _matrix(refs, "refs")
    cdef cnp.npy_intp *dq = cnp.PyArray_DIMS(Q)
    cdef cnp.npy_intp *dr = cnp.PyArray_DIMS(R)
    if dq[1] != dr[1]:
        _validation.check_same_dim(Q, R, "queries", "refs")
    cdef size_t nq = <size_t>dq[0], nr = <size_t>dr[0], d = <size_t>dq[1]

    cdef bint want_max = False, want_mean = False, single = True
    cdef tuple names = None
    if type(reduce) is str and (<str>reduce == "max" or <str>reduce == "mean"):
        want_max = <str>reduce == "max"
        want_mean = not want_max
    elif type(reduce) is tuple and <tuple>reduce == _MAX_MEAN:
        want_max = want_mean = True
        single = False
        names = _MAX_MEAN
    else:
        names, single = _validation.parse_reduce(reduce)
        want_max = "max" in names
        want_mean = "mean" in names

    cdef sk_clamp c
    c.enabled = 0
    c.lo = 0.0
    c.hi = 0.0
    if clamp is not None and not _fast_clamp(clamp, &c):
        enabled, lo, hi = _validation.parse_clamp(clamp)
        c.enabled = 1
        c.lo = lo
        c.hi = hi

    cdef cnp.ndarray O = None
    cdef int64_t bad
    if offsets is not None:
        if (cnp.PyArray_CheckExact(offsets) and cnp.PyArray_TYPE(<cnp.ndarray>offsets) == cnp.NPY_INT64
                and cnp.PyArray_NDIM(<cnp.ndarray>offsets) == 1 and cnp.PyArray_ISCARRAY_RO(<cnp.ndarray>offsets)
                and <size_t>cnp.PyArray_DIMS(<cnp.ndarray>offsets)[0] == nq + 1):
            O = <cnp.ndarray>offsets
        else:
            O = _validation.as_offsets(offsets, nq)
        bad = sk_check_offsets(<const int64_t *>cnp.PyArray_DATA(O), nq, nr)
        if bad >= 0:
            raise _validation.offsets_error(O, bad, nr)

    cdef cnp.ndarray out_max = _empty1(dq[0]) if want_max else None
    cdef cnp.ndarray out_mean = _empty1(dq[0]) if want_mean else None
    cdef float *pmax = _out(out_max) if want_max else NULL
    cdef float *pmean = _out(out_mean) if want_mean else NULL
    cdef const sk_backend *be = sk_active()
    cdef const float *pq = _data(Q)
    cdef const float *pr = _data(R)
    cdef cnp.ndarray work
    cdef float *pw
    cdef _Job job
    if O is not None:
        job.be = be
        job.a = pq
        job.b = pr
        job.offsets = <const int64_t *>cnp.PyArray_DATA(O)
        job.d = d
        job.clamp = c
        job.out = pmax
        job.out2 = pmean
        if (nq + nr) * d < GIL_FREE_FLOATS:
            _run_ragged(&job, nq, nr)
        else:
            with nogil:
                _run_ragged(&job, nq, nr)
    elif _use_blas(nq, nr, d):
        _reduce_dense_blas(Q, R, c, pmax, pmean)
    else:
        work = _empty1(dr[0])
        pw = _out(work)
        if (nq + nr) * d < GIL_FREE_FLOATS:
            be.cosine_reduce_dense(pq, nq, pr, nr, d, c, pw, pmax, pmean)
        else:
            with nogil:
                be.cosine_reduce_dense(pq, nq, pr, nr, d, c, pw, pmax, pmean)

    if single:
        return out_max if want_max else out_mean
    if names is _MAX_MEAN:
        return out_max, out_mean
    return tuple([out_max if name == "max" else out_mean for name in names])


# ---- greedy matching (BERTScore) ----

# Greedy matching is compute-bound (n_c * n_r * d multiply-adds per pair): a call is split over threads
# only when each part gets at least this many multiply-adds (about a tenth of a millisecond of one core).
cdef double _parallel_min_madds = <double>(1 << 21)


ctypedef struct _GreedyJob:
    const sk_backend *be
    const float *cand
    const int64_t *cand_offsets
    const float *cand_weights
    const float *ref
    const int64_t *ref_offsets
    const float *ref_weights
    const int64_t *pairs
    size_t d
    size_t bounds[SK_MAX_THREADS + 1]  # part i scores the pairs bounds[i] .. bounds[i + 1] - 1
    size_t parts
    float *col_max                     # parts x col_max_floats: each part's running column maxima
    size_t col_max_floats
    float *out_p
    float *out_r
    float *out_f


cdef void _greedy_part(void *ctx, size_t begin, size_t end) noexcept nogil:
    cdef _GreedyJob *j = <_GreedyJob *>ctx
    cdef size_t part = 0
    if begin >= end:
        return
    while part + 1 < j.parts and not (j.bounds[part] == begin and j.bounds[part + 1] == end):
        part += 1
    j.be.greedy_match(j.cand, j.cand_offsets, j.cand_weights, j.ref, j.ref_offsets, j.ref_weights,
                      j.pairs + 2 * begin, end - begin, j.d, j.col_max + part * j.col_max_floats,
                      j.out_p + begin, j.out_r + begin, j.out_f + begin)


cdef inline double _pair_work(const _GreedyJob *j, size_t k) noexcept nogil:
    """Multiply-adds of pair k, n_c * n_r * d, plus n_c + n_r + 1 rows of d for its own overhead."""
    cdef int64_t c = j.pairs[2 * k], r = j.pairs[2 * k + 1]
    cdef double nc = <double>(j.cand_offsets[c + 1] - j.cand_offsets[c])
    cdef double nr = <double>(j.ref_offsets[r + 1] - j.ref_offsets[r])
    return (nc * nr + nc + nr + 1.0) * <double>(j.d + 1)


cdef void _run_greedy(_GreedyJob *job, size_t n_pairs, double total) noexcept nogil:
    """Scores the pairs in parts of about equal work (not equal counts), on several threads when large.
    job.parts holds the most parts job.col_max has room for; it is lowered to the parts used."""
    cdef size_t parts = <size_t>(total / _parallel_min_madds)
    cdef size_t i, k = 0
    cdef double done = 0.0, target
    if parts > job.parts:
        parts = job.parts
    if parts > n_pairs:
        parts = n_pairs
    if parts <= 1:
        job.parts = 1
        job.bounds[0] = 0
        job.bounds[1] = n_pairs
        _greedy_part(job, 0, n_pairs)
        return
    job.parts = parts
    job.bounds[0] = 0
    for i in range(1, parts):
        target = total * i / parts
        while k < n_pairs and done + 0.5 * _pair_work(job, k) < target:
            done += _pair_work(job, k)
            k += 1
        job.bounds[i] = k
    job.bounds[parts] = n_pairs
    sk_parallel_ranges(job.bounds, parts, _greedy_part, job)


cdef inline cnp.ndarray _segment_offsets(object offsets, str name, str rows_name, size_t n_rows):
    cdef cnp.ndarray O
    if (cnp.PyArray_CheckExact(offsets) and cnp.PyArray_TYPE(<cnp.ndarray>offsets) == cnp.NPY_INT64
            and cnp.PyArray_NDIM(<cnp.ndarray>offsets) == 1 and cnp.PyArray_ISCARRAY_RO(<cnp.ndarray>offsets)
            and cnp.PyArray_DIMS(<cnp.ndarray>offsets)[0] >= 1):
        O = <cnp.ndarray>offsets
    else:
        O = _validation.as_segment_offsets(offsets, name, rows_name)
    cdef int64_t bad = sk_check_offsets(<const int64_t *>cnp.PyArray_DATA(O),
                                        <size_t>cnp.PyArray_DIMS(O)[0] - 1, n_rows)
    if bad >= 0:
        raise _validation.segment_offsets_error(O, bad, n_rows, name, rows_name)
    return O


cdef inline cnp.ndarray _weights(object weights, str name, size_t n_rows, str rows_name):
    if _is_fast(weights, 1) and <size_t>cnp.PyArray_DIMS(<cnp.ndarray>weights)[0] == n_rows:
        return <cnp.ndarray>weights
    return _validation.as_weights(weights, name, n_rows, rows_name)


def greedy_match(cand, cand_offsets, ref, ref_offsets, pairs=None, cand_weights=None, ref_weights=None):
    cdef cnp.ndarray C = _matrix(cand, "cand")
    cdef cnp.ndarray R = _matrix(ref, "ref")
    cdef cnp.npy_intp *dc = cnp.PyArray_DIMS(C)
    cdef cnp.npy_intp *dr = cnp.PyArray_DIMS(R)
    if dc[1] != dr[1]:
        _validation.check_same_dim(C, R, "cand", "ref")
    cdef cnp.ndarray CO = _segment_offsets(cand_offsets, "cand_offsets", "cand", <size_t>dc[0])
    cdef cnp.ndarray RO = _segment_offsets(ref_offsets, "ref_offsets", "ref", <size_t>dr[0])
    cdef size_t n_cand = <size_t>cnp.PyArray_DIMS(CO)[0] - 1, n_ref = <size_t>cnp.PyArray_DIMS(RO)[0] - 1

    cdef cnp.ndarray P
    if pairs is None:
        if n_cand != n_ref:
            _validation.check_pairs_none(n_cand, n_ref)
        P = np.repeat(np.arange(n_cand, dtype=np.int64), 2).reshape(n_cand, 2)
    elif (cnp.PyArray_CheckExact(pairs) and cnp.PyArray_TYPE(<cnp.ndarray>pairs) == cnp.NPY_INT64
            and cnp.PyArray_NDIM(<cnp.ndarray>pairs) == 2 and cnp.PyArray_ISCARRAY_RO(<cnp.ndarray>pairs)
            and cnp.PyArray_DIMS(<cnp.ndarray>pairs)[1] == 2):
        P = <cnp.ndarray>pairs
    else:
        P = _validation.as_pairs(pairs)
    cdef size_t n_pairs = <size_t>cnp.PyArray_DIMS(P)[0]
    cdef int64_t bad = sk_check_pairs(<const int64_t *>cnp.PyArray_DATA(P), n_pairs, n_cand, n_ref)
    if bad >= 0:
        raise _validation.pairs_error(P, bad, n_cand, n_ref)
    cdef cnp.ndarray CW = None if cand_weights is None else _weights(cand_weights, "cand_weights", <size_t>dc[0], "cand")
    cdef cnp.ndarray RW = None if ref_weights is None else _weights(ref_weights, "ref_weights", <size_t>dr[0], "ref")

    cdef cnp.ndarray out_p = _empty1(<cnp.npy_intp>n_pairs)
    cdef cnp.ndarray out_r = _empty1(<cnp.npy_intp>n_pairs)
    cdef cnp.ndarray out_f = _empty1(<cnp.npy_intp>n_pairs)
    cdef size_t longest = sk_longest_segment(<const int64_t *>cnp.PyArray_DATA(RO), n_ref)
    cdef size_t max_parts = _num_threads if _num_threads < n_pairs else n_pairs
    if max_parts > SK_MAX_THREADS:
        max_parts = SK_MAX_THREADS
    if max_parts < 1:
        max_parts = 1
    cdef cnp.ndarray col_max = _empty1(<cnp.npy_intp>(max_parts * (longest if longest > 0 else 1)))
    cdef _GreedyJob job
    job.be = sk_active()
    job.cand = _data(C)
    job.cand_offsets = <const int64_t *>cnp.PyArray_DATA(CO)
    job.cand_weights = _data(CW) if CW is not None else NULL
    job.ref = _data(R)
    job.ref_offsets = <const int64_t *>cnp.PyArray_DATA(RO)
    job.ref_weights = _data(RW) if RW is not None else NULL
    job.pairs = <const int64_t *>cnp.PyArray_DATA(P)
    job.d = <size_t>dc[1]
    job.parts = max_parts
    job.col_max = _out(col_max)
    job.col_max_floats = longest
    job.out_p = _out(out_p)
    job.out_r = _out(out_r)
    job.out_f = _out(out_f)
    cdef double total = 0.0
    cdef size_t k
    for k in range(n_pairs):
        total += _pair_work(&job, k)
    if total < <double>GIL_FREE_FLOATS:
        _run_greedy(&job, n_pairs, total)
    else:
        with nogil:
            _run_greedy(&job, n_pairs, total)
    return out_p, out_r, out_f


# ---- backend and route control (used by simkernel.kernels) ----

def backend_names():
    """Names of the backends compiled into this build, best first (supported by this CPU or not)."""
    return [sk_backend_at(i).name.decode() for i in range(sk_backend_count())]


def backend_supported(str name):
    return bool(sk_backend_supported(name.encode()))


def active_backend():
    return sk_active().name.decode()


def select_backend(str name):
    """0: selected; -1: unknown name; -2: this CPU cannot run it (nothing changed)."""
    return sk_select_backend(name.encode())


def cpu_features():
    cdef sk_cpu_features f = sk_cpu()
    return {
        "avx2": bool(f.avx2),
        "fma": bool(f.fma),
        "avx512f": bool(f.avx512f),
        "neon": bool(f.neon),
        "avx512_bf16": bool(f.avx512_bf16),
        "amx_bf16": bool(f.amx_bf16),
    }


def blas_route():
    """(mode, min_work, min_rows): mode -1 chooses by shape, 0 always native, 1 always BLAS."""
    return _blas_mode, _blas_min_work, _blas_min_rows


def num_threads():
    return _num_threads


def set_num_threads(int n):
    global _num_threads
    if n < 1 or n > SK_MAX_THREADS:
        raise ValueError(f"number of kernel threads must be between 1 and {SK_MAX_THREADS}; got {n}")
    _num_threads = n


def set_blas_route(int mode):
    global _blas_mode
    if mode not in (-1, 0, 1):
        raise ValueError(f"BLAS route mode must be -1 (by shape), 0 (never) or 1 (always); got {mode}")
    _blas_mode = mode
