"""Fixtures of the statistics tests."""

from __future__ import annotations

import pytest

from simkernel.cli import main


@pytest.fixture
def cli(capsys):
    """``cli(*argv)`` runs ``simkernel ARGV`` in this process: (exit code, stdout, stderr) of that run."""

    def run(*argv):
        capsys.readouterr()
        code = main([str(a) for a in argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run
