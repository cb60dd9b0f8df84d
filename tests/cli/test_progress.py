"""The progress bar: drawn only on a terminal (and after its delay), erased when done."""

from __future__ import annotations

import io

from simkernel.batch.progress import ProgressBar, is_terminal


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_draws_on_a_terminal_and_erases_itself():
    stream = FakeTerminal()
    with ProgressBar(10, stream=stream, delay=0.0, interval=0.0, width=10) as bar:
        bar.update(5)
        assert "[#####-----]  50% 5/10 rows" in stream.getvalue()
        bar.update(5)
        assert "100% 10/10 rows" in stream.getvalue()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_silent_when_not_a_terminal_or_disabled():
    plain = io.StringIO()
    with ProgressBar(10, stream=plain, delay=0.0, interval=0.0) as bar:
        bar.update(10)
    assert plain.getvalue() == ""
    terminal = FakeTerminal()
    with ProgressBar(10, stream=terminal, enabled=False, delay=0.0, interval=0.0) as bar:
        bar.update(10)
    assert terminal.getvalue() == ""


def test_quick_runs_print_nothing():
    stream = FakeTerminal()
    with ProgressBar(10, stream=stream, delay=60.0) as bar:
        bar.update(10)
    assert stream.getvalue() == ""


def test_is_terminal_tolerates_closed_streams():
    closed = io.StringIO()
    closed.close()
    assert is_terminal(closed) is False
    assert is_terminal(FakeTerminal()) is True
