"""A loaded model's memory on huge pages (simkernel.runtime.inference.huge_pages).

References: the spans' arithmetic against sets of 4 KiB page numbers (hypothesis); what the kernel did
against /proc/self/smaps, the kernel's own account of each mapping (AnonHugePages).
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simkernel.runtime.inference.huge_pages import (
    collapsed_while_loading,
    huge_page_aligned,
    huge_page_bytes,
    new_spans,
    thp_setting,
    wanted,
)

PAGE = 4096
HUGE_PAGE_BYTES = 2 << 20  # the tests' spans; the system's own size for real memory: huge_page_bytes()
linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux's /proc")


def pages(spans) -> set[int]:
    return {page for start, end in spans for page in range(start // PAGE, end // PAGE)}


def disjoint_spans(draw_pages: list[int]) -> list[tuple[int, int]]:
    """Sorted non-overlapping, non-touching spans covering exactly the given page numbers."""
    out: list[list[int]] = []
    for page in sorted(set(draw_pages)):
        if out and out[-1][1] == page:
            out[-1][1] = page + 1
        else:
            out.append([page, page + 1])
    return [(a * PAGE, b * PAGE) for a, b in out]


page_sets = st.lists(st.integers(0, 200), max_size=80)


@given(page_sets, page_sets)
def test_new_spans_are_exactly_the_pages_mapped_in_between(before_pages, after_pages):
    before, after = disjoint_spans(before_pages), disjoint_spans(after_pages)
    found = new_spans(before, after)
    assert pages(found) == pages(after) - pages(before)
    assert found == sorted(found) and all(a < b for a, b in found)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(found, found[1:], strict=False))


@given(st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 3000)), max_size=20))
def test_huge_page_aligned_keeps_every_whole_huge_page_and_nothing_else(raw):
    spans = [(start * PAGE, (start + length) * PAGE) for start, length in raw]
    for (start, end), aligned in zip(
        spans, [huge_page_aligned([span], HUGE_PAGE_BYTES) for span in spans], strict=True
    ):
        whole = [
            (k * HUGE_PAGE_BYTES, (k + 1) * HUGE_PAGE_BYTES)
            for k in range(start // HUGE_PAGE_BYTES, end // HUGE_PAGE_BYTES + 1)
            if start <= k * HUGE_PAGE_BYTES and (k + 1) * HUGE_PAGE_BYTES <= end
        ]
        assert pages(aligned) == pages(whole)
        assert all(a % HUGE_PAGE_BYTES == 0 and b % HUGE_PAGE_BYTES == 0 for a, b in aligned)


@pytest.mark.parametrize(
    "text, setting",
    [
        ("always [madvise] never\n", "madvise"),
        ("[always] madvise never\n", "always"),
        ("always madvise [never]\n", "never"),
    ],
)
def test_thp_setting_reads_the_bracketed_choice(tmp_path, text, setting):
    path = tmp_path / "enabled"
    path.write_text(text)
    assert thp_setting(path) == setting


def test_thp_setting_is_none_without_the_file(tmp_path):
    assert thp_setting(tmp_path / "missing") is None


def test_wanted_follows_the_system_and_the_switch(monkeypatch, tmp_path):
    monkeypatch.delenv("SIMKERNEL_HUGE_PAGES", raising=False)
    setting = tmp_path / "enabled"
    for text, expected in (
        ("always [madvise] never", True),
        ("[always] madvise never", True),
        ("always madvise [never]", False),
    ):
        setting.write_text(text)
        assert wanted(setting) is expected
    assert wanted(tmp_path / "missing") is False
    setting.write_text("always [madvise] never")
    monkeypatch.setenv("SIMKERNEL_HUGE_PAGES", "0")
    assert wanted(setting) is False


def vma_kib(address: int, field: str = "AnonHugePages") -> int:
    """A field of /proc/self/smaps (KiB) for the mapping that holds ``address``: the kernel's own account."""
    inside = False
    with open("/proc/self/smaps") as lines:
        for line in lines:
            fields = line.split()
            if "-" in fields[0] and len(fields[0].split("-")) == 2 and ":" not in fields[0]:
                try:
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                except ValueError:
                    continue
                inside = start <= address < end
            elif inside and fields[0] == f"{field}:":
                return int(fields[1])
    raise AssertionError(f"no mapping holds {address:#x}")


def anonymous_huge_kib(address: int) -> int:
    return vma_kib(address, "AnonHugePages")


def touched_mapping(size: int = 8 << 20, touched: int | None = None):
    """An anonymous mapping of ``size`` bytes whose first ``touched`` bytes (all by default) are written."""
    memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for offset in range(0, size if touched is None else touched, mmap.PAGESIZE):
        memory[offset] = 1  # faulted in on small pages, one at a time (no buffer of that size meanwhile)
    return memory, ctypes.addressof(ctypes.c_char.from_buffer(memory))


def kernel_collapses() -> bool:
    """Whether this kernel moves a touched anonymous mapping onto huge pages when asked (Linux 6.1+, THP
    not ``never``, a free huge page at hand)."""
    if not wanted():
        return False
    memory, address = touched_mapping(4 << 20)
    try:  # asked here, not through the code under test: a broken collapse() must fail, not skip
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        size = huge_page_bytes()
        start = -(-address // size) * size
        return libc.madvise(start, size, 25) == 0 and anonymous_huge_kib(start) * 1024 >= size
    finally:
        memory.close()


@linux_only
def test_the_memory_mapped_while_loading_is_collapsed_onto_huge_pages(monkeypatch):
    monkeypatch.delenv("SIMKERNEL_HUGE_PAGES", raising=False)
    if not kernel_collapses():
        pytest.skip(
            "this kernel does not collapse memory onto huge pages (Linux < 6.1, THP never, or none free)"
        )
    with collapsed_while_loading() as report:
        memory, address = touched_mapping()
    try:
        assert report.mapped >= 6 << 20  # 8 MiB mapped: at least three whole huge pages inside
        assert report.collapsed >= 6 << 20
        assert anonymous_huge_kib(address + (4 << 20)) >= 2048
        # and memory mapped before the block is left alone
        with collapsed_while_loading() as again:
            pass
        assert again.mapped == 0
    finally:
        memory.close()


def resident_pages(start: int, end: int) -> int:
    """Pages of [start, end) in memory, by the kernel's mincore (asked here, not through the code under test)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    page = os.sysconf("SC_PAGE_SIZE")
    start, end = start // page * page, -(-end // page) * page
    vector = ctypes.create_string_buffer((end - start) // page)
    assert libc.mincore(start, end - start, vector) == 0, ctypes.get_errno()
    return sum(flag & 1 for flag in vector.raw)


@linux_only
def test_memory_never_touched_is_not_collapsed(monkeypatch):
    """Half of a mapping written, half never: only huge pages at least half in memory are made, so the process
    does not grow by the half it never touched (a thread's stack, an arena's unused end)."""
    monkeypatch.delenv("SIMKERNEL_HUGE_PAGES", raising=False)
    if not kernel_collapses():
        pytest.skip(
            "this kernel does not collapse memory onto huge pages (Linux < 6.1, THP never, or none free)"
        )
    half = 8 << 20
    with collapsed_while_loading() as report:
        memory, address = touched_mapping(2 * half, touched=half)
    try:
        assert report.mapped >= 2 * half - (2 << 20)
        size = huge_page_bytes()
        # the written half's whole huge pages, not the rest (with THP always, the huge page the written half
        # ends in is whole from its first touch)
        assert 6 << 20 <= report.collapsed <= half + (size if thp_setting() == "always" else 0)
        assert anonymous_huge_kib(address) * 1024 >= 6 << 20
        untouched = -(-(address + half) // size) * size  # the first huge page past the written half
        assert resident_pages(untouched, address + 2 * half) == 0
    finally:
        memory.close()


@linux_only
def test_the_switch_leaves_the_pages_as_they_are(monkeypatch):
    monkeypatch.setenv("SIMKERNEL_HUGE_PAGES", "0")
    with collapsed_while_loading() as report:
        memory, address = touched_mapping()
    try:
        assert (report.mapped, report.collapsed) == (0, 0)
        if thp_setting() == "madvise":  # (where the system says always, the kernel gives huge pages itself)
            assert anonymous_huge_kib(address + (4 << 20)) == 0
    finally:
        memory.close()


LOAD = """
import json, sys
from simkernel.runtime import TextEncoder

def huge_kib():
    return sum(int(l.split()[1]) for l in open("/proc/self/smaps_rollup") if l.startswith("AnonHugePages:"))

encoder = TextEncoder(sys.argv[1], cache_size=0)
encoder.encode(["warm"])
loaded = huge_kib()
assert encoder.prepare_packed_passes(), encoder.packed_status
print(json.dumps({
    "session": encoder._session.huge_page_bytes,
    "stages": encoder.packed_huge_pages.collapsed,
    "stages_mapped": encoder.packed_huge_pages.mapped,
    "loaded_kib": loaded,
    "prepared_kib": huge_kib(),
}))
"""


@linux_only
@pytest.mark.parametrize("switch", ["1", "0"])
def test_a_fresh_process_gets_the_models_weights_on_huge_pages(default_bundle, switch):
    """In a process of its own (the memory a pytest process freed before could be reused by the load): the
    whole graph's session and the packed stages (about 42 MiB of repacked fp32 weights each) end up on
    huge pages, as the kernel reports them; with SIMKERNEL_HUGE_PAGES=0, none."""
    if switch == "1" and not kernel_collapses():
        pytest.skip(
            "this kernel does not collapse memory onto huge pages (Linux < 6.1, THP never, or none free)"
        )
    env = {**os.environ, "SIMKERNEL_HUGE_PAGES": switch}
    done = subprocess.run(
        [sys.executable, "-c", LOAD, str(default_bundle)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    if switch == "0":
        assert (found["session"], found["stages"], found["stages_mapped"]) == (0, 0, 0), found
        if thp_setting() == "madvise":  # where nobody asks, the kernel gives none
            assert found["prepared_kib"] == 0, found
        return
    # most of the 42 MiB each: the edges of the allocator's spans are not whole huge pages
    assert found["session"] >= 24 << 20, found
    assert found["stages"] >= 24 << 20, found
    assert found["loaded_kib"] * 1024 >= found["session"]
    assert (found["prepared_kib"] - found["loaded_kib"]) * 1024 >= found["stages"] - (4 << 20)
