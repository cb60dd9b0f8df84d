"""A loaded model's memory on 2 MiB pages (Linux transparent huge pages), so its weights cost fewer TLB misses.

onnxruntime copies a graph's weights at load, repacked for its matrix products, into memory it allocates
itself: about 42 MiB for all-MiniLM-L6-v2 fp32 per session (the stages of packed passes have their own
copy). A pass over a few short texts reads all of it once and does little arithmetic per byte; on 4 KiB
pages that is one TLB entry per 4 KiB, more than a core's TLB holds, and under a hypervisor each miss walks
two page tables. On 2 MiB pages the same weights take 21 entries.

Linux gives a process huge pages by default only where ``/sys/kernel/mm/transparent_hugepage/enabled`` is
``always``; the common default, ``madvise``, gives them where a program asks. simkernel asks for the
memory a session mapped while it loaded (:func:`collapsed_while_loading`): ``madvise(MADV_COLLAPSE)``
(Linux 6.1 and later) moves those pages onto huge pages at once, and nothing else changes (later
allocations, other memory of the process: no advice is left behind). Only huge pages of which at least half
the small pages are in memory already are collapsed (:data:`RESIDENT_SHARE`, counted with ``mincore``): the
weights, written whole at load, qualify; a thread's stack or an arena's unused end does not, so the process
grows by at most what it touched (RSS +4-13 MiB for the default model's sessions, +24 without the rule).
Measured on a 2-core AMD EPYC under KVM (``python benchmarks/studies/shared_passes.py --huge-pages``): a
chunk of a 16-thread pass (13 short texts, 75 tokens) 17.6-18.2 -> 17.0-17.1 ms; a chunk of one call (415
tokens), which does more arithmetic per weight read, and a lone text unchanged within the noise.

Nothing is done where the system says ``never``, on other systems, or with ``SIMKERNEL_HUGE_PAGES=0``; a
kernel that refuses (older than 6.1, no free huge page at hand) leaves the pages as they were: the same
results either way, only the speed differs.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import os
from collections.abc import Iterator
from pathlib import Path

MADV_COLLAPSE = 25  # <asm-generic/mman-common.h>, Linux 6.1
THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")
THP_SIZE = Path("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")  # bytes of a huge page
MAPS = Path("/proc/self/maps")
ENVIRONMENT_SWITCH = "SIMKERNEL_HUGE_PAGES"  # "0": leave the model's memory on the pages it got
# a huge page is made only where at least this share of its small pages is in memory already, so that the
# process grows by at most what it touched (khugepaged's own default fills a huge page from one small page:
# max_ptes_none = 511 of 512)
RESIDENT_SHARE = 0.5

Span = tuple[int, int]  # [start, end) in bytes of the address space


def thp_setting(path: Path = THP_SETTING) -> str | None:
    """The system's transparent huge page setting (``"always"``, ``"madvise"`` or ``"never"``), or None
    where the system has none (not Linux, or a kernel without THP)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else None


def wanted(setting: Path = THP_SETTING) -> bool:
    """True when simkernel should move a model's memory onto huge pages: the system has them and does not
    say ``never`` (``setting``: the file that says), and ``SIMKERNEL_HUGE_PAGES`` is not ``0``."""
    if os.environ.get(ENVIRONMENT_SWITCH, "1").strip() == "0":
        return False
    return thp_setting(setting) in ("always", "madvise")


def anonymous_spans(maps: Path = MAPS) -> list[Span]:
    """The private anonymous writable memory of this process (the heap included), as sorted spans."""
    spans = []
    with maps.open() as lines:
        for line in lines:
            fields = line.split()
            name = fields[5] if len(fields) > 5 else ""
            if name not in ("", "[heap]") or not fields[1].startswith("rw") or fields[1][3] != "p":
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            spans.append((start, end))
    return sorted(spans)


def new_spans(before: list[Span], after: list[Span]) -> list[Span]:
    """What ``after`` covers that ``before`` did not (both sorted, non-overlapping): memory mapped, or a
    mapping grown, in between."""
    out = []
    i = 0
    for start, end in after:
        cursor = start
        while i < len(before) and before[i][1] <= cursor:
            i += 1
        j = i
        while j < len(before) and before[j][0] < end:
            if before[j][0] > cursor:
                out.append((cursor, before[j][0]))
            cursor = max(cursor, before[j][1])
            j += 1
        if cursor < end:
            out.append((cursor, end))
    return out


def huge_page_bytes(path: Path = THP_SIZE) -> int:
    """The size of a huge page of this system (2 MiB on x86-64, and on arm64 with 4 KiB pages)."""
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return 2 << 20


def huge_page_aligned(spans: list[Span], size: int) -> list[Span]:
    """Each span shrunk to whole huge pages of ``size`` bytes; spans with none dropped."""
    out = []
    for start, end in spans:
        low = -(-start // size) * size
        high = end // size * size
        if high > low:
            out.append((low, high))
    return out


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library, with the signatures of the two calls this module makes."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    libc.mincore.restype = ctypes.c_int
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.madvise.restype = ctypes.c_int
    return libc


def resident(spans: list[Span], size: int, share: float = RESIDENT_SHARE) -> list[Span]:
    """The huge pages (of ``size`` bytes, ``spans`` aligned to them) of which at least ``share`` of the small
    pages are in memory, by ``mincore``; adjacent ones merged into spans."""
    mincore = _libc().mincore
    page = os.sysconf("SC_PAGE_SIZE")
    per_huge = size // page
    out: list[Span] = []
    for start, end in spans:
        pages = (end - start) // page
        vector = ctypes.create_string_buffer(pages)
        if mincore(start, end - start, vector) != 0:
            continue  # unmapped meanwhile: nothing to collapse
        flags = vector.raw
        for first in range(0, pages, per_huge):
            present = sum(flag & 1 for flag in flags[first : first + per_huge])
            if present < share * per_huge:
                continue
            low = start + first * page
            if out and out[-1][1] == low:
                out[-1] = (out[-1][0], low + size)
            else:
                out.append((low, low + size))
    return out


def collapse(spans: list[Span]) -> int:
    """``madvise(MADV_COLLAPSE)`` on each span (whole huge pages); the bytes the kernel collapsed. A span the
    kernel refuses (a thread's stack, memory it cannot find a huge page for, a kernel before 6.1) is
    left as it was."""
    madvise = _libc().madvise
    done = 0
    for start, end in spans:
        if madvise(start, end - start, MADV_COLLAPSE) == 0:
            done += end - start
    return done


@dataclasses.dataclass(slots=True)
class HugePageReport:
    """What :func:`collapsed_while_loading` did: ``mapped`` bytes of whole huge pages the block mapped,
    ``collapsed`` of them now on huge pages (those at least half in memory; both 0 when not :func:`wanted`)."""

    mapped: int = 0
    collapsed: int = 0


@contextlib.contextmanager
def collapsed_while_loading() -> Iterator[HugePageReport]:
    """Around the load of onnxruntime sessions: the anonymous memory the process mapped during the block
    (the sessions' weights and arenas; also whatever other threads mapped meanwhile) is collapsed onto
    huge pages at its end, where :func:`wanted`. Best effort: a kernel that refuses changes nothing."""
    report = HugePageReport()
    try:
        before = anonymous_spans() if wanted() else None
    except OSError:  # no /proc (not Linux, or a sandbox without it)
        before = None
    yield report
    if before is None:
        return
    size = huge_page_bytes()
    try:
        spans = huge_page_aligned(new_spans(before, anonymous_spans()), size)
    except OSError:
        return
    report.mapped = sum(end - start for start, end in spans)
    report.collapsed = collapse(resident(spans, size))
