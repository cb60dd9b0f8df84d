# cython: language_level=3
"""Cython layer of the bootstrap's sums (csrc/bootstrap.h): per resample, the rows drawn, the moment sums
behind the mean and Pearson's r, and the rank sums behind Spearman's rho, in one pass over the sample's
rows (:mod:`simkernel.stats.intervals` builds the sample and turns the sums into statistics).

The arrays are checked here, shapes and index ranges both (a wrong one raises ``ValueError`` naming it),
so the native code never reads outside them. The native calls run without the GIL.
"""

import numpy as np

cimport numpy as cnp
from libc.stdint cimport uint16_t

cnp.import_array()


cdef extern from "bootstrap.h" nogil:
    int SK_BOOT_SUMS
    int SK_BOOT_NO_MEMORY
    ctypedef struct sk_boot_sample:
        size_t n
        const double *columns
        size_t n_columns
        const size_t *x_run_starts
        size_t x_runs
        const size_t *y_order
        const size_t *y_group_starts
        size_t y_groups
    int sk_bootstrap_sums(const sk_boot_sample *sample, const uint16_t *counts, size_t resamples, double *out)
    int SK_POISSON_EDGES
    void sk_poisson_counts(const uint16_t *uniform, size_t cells, const uint16_t *edges, uint16_t *counts)


# the sums written per resample: the rows drawn, sum w x; sum w xc, w yc, w xc^2, w yc^2, w xc yc; Spearman's
# sum w rx ry, w rx^2, w ry^2 (csrc/bootstrap.h)
SUMS = SK_BOOT_SUMS


cdef cnp.ndarray _array(object a, str name, int typenum, str dtype, int ndim):
    if not (
        isinstance(a, cnp.ndarray)
        and cnp.PyArray_TYPE(<cnp.ndarray>a) == typenum
        and cnp.PyArray_NDIM(<cnp.ndarray>a) == ndim
        and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a)
        and cnp.PyArray_ISALIGNED(<cnp.ndarray>a)
    ):
        raise ValueError(f"{name} must be a C-contiguous {dtype} numpy array of {ndim} dimension(s), got {type(a).__name__} {getattr(a, 'dtype', '')} {getattr(a, 'shape', '')}")
    return <cnp.ndarray>a


cdef const size_t *_starts(object starts, str name, Py_ssize_t stop) except? NULL:
    """``starts``: intp, ascending from 0 to ``stop`` (the first and last included); None gives NULL."""
    if starts is None:
        return NULL
    cdef cnp.ndarray a = _array(starts, name, cnp.NPY_INTP, "intp", 1)
    if a.shape[0] < 2 or starts[0] != 0 or starts[a.shape[0] - 1] != stop or (np.diff(starts) < 0).any():
        raise ValueError(f"{name} must ascend from 0 to {stop}, got {starts!r}")
    return <const size_t *>cnp.PyArray_DATA(a)


cdef class Sample:
    """A sample's rows, checked once, for the sums of any number of resamples (:meth:`sums`).

    ``columns``: float64 ``(1, n)`` (x) or ``(6, n)`` (x, xc, yc, xc^2, yc^2, xc yc), the rows sorted by x;
    ``x_run_starts``: intp, the starts of the runs of equal x and n, or None when every x is distinct;
    ``y_order``: intp, the rows by ascending y, and ``y_group_starts``: intp, the starts of its groups of equal
    y and n, or both None (no rank sums: those columns of :meth:`sums`' ``out`` are left as they were)."""

    cdef sk_boot_sample sample
    cdef object keep  # the arrays the sample points into

    def __init__(self, columns, x_run_starts=None, y_order=None, y_group_starts=None):
        cdef cnp.ndarray c = _array(columns, "columns", cnp.NPY_FLOAT64, "float64", 2)
        cdef Py_ssize_t n = c.shape[1]
        if c.shape[0] not in (1, 6):
            raise ValueError(f"columns must hold 1 or 6 columns, got {c.shape[0]}")
        if (y_order is None) != (y_group_starts is None):
            raise ValueError("y_order and y_group_starts go together: give both or neither")
        self.keep = (columns, x_run_starts, y_order, y_group_starts)
        self.sample.n = n
        self.sample.columns = <const double *>cnp.PyArray_DATA(c)
        self.sample.n_columns = c.shape[0]
        self.sample.x_run_starts = _starts(x_run_starts, "x_run_starts", n)
        self.sample.x_runs = 0 if x_run_starts is None else x_run_starts.shape[0] - 1
        self.sample.y_order = NULL
        self.sample.y_group_starts = NULL
        self.sample.y_groups = 0
        if y_order is not None:
            order = _array(y_order, "y_order", cnp.NPY_INTP, "intp", 1)
            if order.shape[0] != n or (n and (order.min() < 0 or order.max() >= n)):
                raise ValueError(f"y_order must hold {n} row indices in [0, {n}), got {y_order!r}")
            self.sample.y_order = <const size_t *>cnp.PyArray_DATA(order)
            self.sample.y_group_starts = _starts(y_group_starts, "y_group_starts", n)
            self.sample.y_groups = y_group_starts.shape[0] - 1

    def sums(self, counts, out):
        """Write into ``out`` (float64, ``(resamples, SUMS)``) the sums of each resample of ``counts`` (uint16,
        ``(resamples, n)``: how often each row was drawn, in the sample's order)."""
        cdef cnp.ndarray w = _array(counts, "counts", cnp.NPY_UINT16, "uint16", 2)
        cdef cnp.ndarray o = _array(out, "out", cnp.NPY_FLOAT64, "float64", 2)
        cdef size_t n = self.sample.n
        if <size_t>w.shape[1] != n or o.shape[0] != w.shape[0] or o.shape[1] != SK_BOOT_SUMS:
            raise ValueError(f"counts {counts.shape} and out {out.shape} must be (resamples, {n}) and (resamples, {SK_BOOT_SUMS})")
        if not cnp.PyArray_ISWRITEABLE(o):
            raise ValueError("out must be a writeable array")
        cdef const uint16_t *weights = <const uint16_t *>cnp.PyArray_DATA(w)
        cdef double *found = <double *>cnp.PyArray_DATA(o)
        cdef size_t resamples = w.shape[0]
        cdef int status
        with nogil:
            status = sk_bootstrap_sums(&self.sample, weights, resamples, found)
        if status == SK_BOOT_NO_MEMORY:
            raise MemoryError(f"the bootstrap's scratch of {n} int64 could not be allocated")


# the edges poisson_counts takes: Poisson(1)'s counts 0 .. POISSON_EDGES
POISSON_EDGES = SK_POISSON_EDGES


def poisson_counts(uniform, edges, counts):
    """Write into ``counts`` (uint16) each ``uniform`` value's Poisson count: how many of ``edges`` (uint16,
    ``POISSON_EDGES`` of them, ascending) it reaches; all three 1-d uint16, ``counts`` as long as
    ``uniform``."""
    cdef cnp.ndarray u = _array(uniform, "uniform", cnp.NPY_UINT16, "uint16", 1)
    cdef cnp.ndarray e = _array(edges, "edges", cnp.NPY_UINT16, "uint16", 1)
    cdef cnp.ndarray out = _array(counts, "counts", cnp.NPY_UINT16, "uint16", 1)
    if e.shape[0] != SK_POISSON_EDGES:
        raise ValueError(f"edges must hold {SK_POISSON_EDGES} values, got {e.shape[0]}")
    if out.shape[0] != u.shape[0] or not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError(f"counts must be a writeable array as long as uniform ({u.shape[0]}), got {out.shape[0]}")
    cdef const uint16_t *src = <const uint16_t *>cnp.PyArray_DATA(u)
    cdef const uint16_t *edge = <const uint16_t *>cnp.PyArray_DATA(e)
    cdef uint16_t *dst = <uint16_t *>cnp.PyArray_DATA(out)
    cdef size_t cells = u.shape[0]
    with nogil:
        sk_poisson_counts(src, cells, edge, dst)
