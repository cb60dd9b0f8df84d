"""The two kinds of failure the command line reports, each with its exit status.

Every message is one line that says what is wrong and how to fix it; ``main`` prints it as
``simkernel: error: <message>`` on stderr and returns the exit status.
"""

from __future__ import annotations

from simkernel.errors import SimkernelError

EXIT_OK = 0
EXIT_DATA = 1  # the data, a file or a model is wrong or missing
EXIT_USAGE = 2  # the command line itself is wrong (argparse uses 2 as well)


class CliError(SimkernelError):
    """A failure reported to the user as one line; ``exit_code`` is the process exit status."""

    exit_code = EXIT_DATA


class UsageError(CliError):
    """The command line is wrong (an option that does not apply, an unknown file format): exit status 2."""

    exit_code = EXIT_USAGE


class DataError(CliError):
    """The input file, one of its rows, or the model is wrong or missing: exit status 1."""

    exit_code = EXIT_DATA
