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
allocations, other memory of the process, a thread's stack: no advice is left behind). Measured on a
2-core AMD EPYC under KVM: the dense layers of a packed pass of 75 tokens 235 -> 224 us per token, one call's
chunks of 415 tokens 214 -> 210 (``python benchmarks/studies/shared_passes.py --huge-pages``); RSS +24 MiB
for the default model's sessions (a huge page is whole even where the allocator left some of it unused).

Nothing is done where the system says ``never``, on other systems, or with ``SIMKERNEL_HUGE_PAGES=0``; a
kernel that refuses (older than 6.1, no free huge page at hand) leaves the pages as they were: the same
results either way, only the speed differs.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path

HUGE_PAGE_BYTES = 2 << 20  # x86-64 and arm64 (4 KiB base pages): the size MADV_COLLAPSE makes
MADV_COLLAPSE = 25  # <asm-generic/mman-common.h>, Linux 6.1
THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")
MAPS = Path("/proc/self/maps")
ENVIRONMENT_SWITCH = "SIMKERNEL_HUGE_PAGES"  # "0": leave the model's memory on the pages it got

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


def huge_page_aligned(spans: list[Span]) -> list[Span]:
    """Each span shrunk to whole huge pages; spans with none dropped."""
    out = []
    for start, end in spans:
        low = -(-start // HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES
        high = end // HUGE_PAGE_BYTES * HUGE_PAGE_BYTES
        if high > low:
            out.append((low, high))
    return out


def collapse(spans: list[Span]) -> int:
    """``madvise(MADV_COLLAPSE)`` on each span (whole huge pages); the bytes the kernel collapsed. A span the
    kernel refuses (a thread's stack, memory it cannot find a huge page for, a kernel before 6.1) is
    left as it was."""
    libc = ctypes.CDLL(None, use_errno=True)
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    done = 0
    for start, end in spans:
        if madvise(start, end - start, MADV_COLLAPSE) == 0:
            done += end - start
    return done


@dataclasses.dataclass(slots=True)
class HugePageReport:
    """What :func:`collapsed_while_loading` did: ``mapped`` bytes of whole huge pages the block mapped,
    ``collapsed`` of them now on huge pages (both 0 when not :func:`wanted`)."""

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
    try:
        spans = huge_page_aligned(new_spans(before, anonymous_spans()))
    except OSError:
        return
    report.mapped = sum(end - start for start, end in spans)
    report.collapsed = collapse(spans)
