"""The checking of ``--engine ray`` while it scores (:mod:`simkernel.cli.survey`): the bound on the rows
that sizes the blocks, and an input without rows, which needs no cluster at all."""

from __future__ import annotations

import pytest

from simkernel.cli import main
from simkernel.cli.survey import rows_at_most


@pytest.mark.parametrize(
    ("data", "rows"),
    [
        (b"a,b\n", 0),
        (b"a,b", 0),
        (b"a,b\n1,2\n", 1),
        (b"a,b\n1,2", 1),
        (b"a,b\r\n1,2\r\n\r\n", 2),  # a blank line counts: the bound may be above, never below
        (b"a,b\r1,2\r3,4", 2),
        (b'a,b\n"two\nlines",2\n', 2),
    ],
)
def test_the_bound_is_never_below_the_rows(tmp_path, data, rows):
    (tmp_path / "in.csv").write_bytes(data)
    assert rows_at_most(str(tmp_path / "in.csv"), "csv") == rows


def test_a_csv_without_rows_is_written_without_starting_ray(tmp_path, monkeypatch):
    from simkernel.cli.ray_engine import RayEngine

    def no_cluster(self):
        raise AssertionError("the engine loaded for an input without rows")

    monkeypatch.setattr(RayEngine, "load", no_cluster)
    (tmp_path / "in.csv").write_text("predicted,ground_truth\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    assert main(["score", str(tmp_path / "in.csv"), "-o", str(out), "-q", "--engine", "ray"]) == 0
    assert out.read_text(encoding="utf-8") == "predicted,ground_truth,score\n"
