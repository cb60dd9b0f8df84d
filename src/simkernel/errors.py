"""Exceptions shared by every layer of simkernel.

Every message names the offending value and the fix. Exceptions subclass the built-in one a caller
would naturally catch (``ValueError``, ``ImportError``, ``FileNotFoundError``) so code written for the
peers' APIs keeps working.
"""

from __future__ import annotations


class SimkernelError(Exception):
    """Base class of simkernel's own exceptions."""


class ModelError(SimkernelError, ValueError):
    """A model could not be found, downloaded, exported or loaded.

    The message says which file and how to fix it.
    """


class ModelNotFoundError(ModelError, FileNotFoundError):
    """No way of resolving a model id or path worked; the message lists each attempt and why it failed."""


class MissingDependencyError(SimkernelError, ImportError):
    """An optional dependency is needed for this feature; the message names the ``pip install`` command."""


class PrecisionUnavailableError(SimkernelError, ValueError):
    """A precision this machine cannot really run (``bf16`` on a CPU without native bfloat16); the message
    says what the machine lacks and which precision to use instead."""


class QueueFullError(SimkernelError, RuntimeError):
    """A model's batching queue holds ``max_queue`` waiting calls; the message names the setting (a service
    answers 503 and the client retries). ``max_queue``: the queue's limit (None when not known)."""

    def __init__(self, message: str, max_queue: int | None = None) -> None:
        super().__init__(message)
        self.max_queue = max_queue


EXIT_OK = 0
EXIT_DATA = 1  # the data, a file or a model is wrong or missing
EXIT_USAGE = 2  # the settings themselves are wrong (the command line's argparse uses 2 as well)


class InputError(SimkernelError):
    """A failure of a batch job (``simkernel.score_file``, ``simkernel score``) that the user fixes: one line
    saying what is wrong and how to fix it. ``exit_code`` is the command line's exit status for it."""

    exit_code = EXIT_DATA


class UsageError(InputError, ValueError):
    """The job's settings are wrong (an option that does not apply, an unknown file format): exit status 2."""

    exit_code = EXIT_USAGE


class DataError(InputError):
    """The input file, one of its rows, or the model is wrong or missing: exit status 1."""

    exit_code = EXIT_DATA


class Interrupted(InputError):
    """Ctrl-C while scoring: exit status 130; what was committed is kept for ``resume``."""

    exit_code = 130
