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
    answers 503 and the client retries)."""
