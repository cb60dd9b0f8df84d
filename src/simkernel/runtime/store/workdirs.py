"""Folders a process builds in before it renames them into place, and that rename.

A work folder's name carries its owner's process id (``<prefix><pid>-[<label>-]<random>``), so a later run can
tell the leftovers of a killed process (SIGKILL, power loss) from the folder of a process still at work:
:func:`remove_orphans` deletes the ones whose owner no longer runs (or that are older than a day, for a
pid reused since, or written by another machine on a shared disk).

:func:`replace_dir` puts a finished folder at its destination atomically. POSIX cannot rename a folder
over a non-empty one; on Linux ``renameat2(RENAME_EXCHANGE)`` swaps the two in one step, so a reader
(or a crash) sees the old folder or the new one, never neither. Elsewhere the old folder is renamed aside
first, which leaves a moment without a destination.

:func:`write_failure` turns a write that failed for lack of room or permission into one clear line.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import tempfile
import time
from pathlib import Path

from simkernel.errors import ModelError

STALE_S = 24 * 3600  # a work folder this old is deleted whoever made it
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def make(parent: Path, prefix: str, label: str = "") -> Path:
    """A new empty folder ``<parent>/<prefix><pid>-[<label>-]<random>``."""
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-{label + '-' if label else ''}", dir=parent))


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (one owned by another user counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def owner(folder: Path, prefix: str) -> int | None:
    """The pid in a work folder's name, or None."""
    head = folder.name[len(prefix) :].split("-", 1)[0]
    return int(head) if head.isdigit() else None


def remove_orphans(parent: Path, prefix: str) -> list[Path]:
    """Delete the work folders ``<parent>/<prefix>*`` whose owner process is gone (or that are older than
    :data:`STALE_S`); returns them. The calling process's own folders are kept."""
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    now = time.time()
    for entry in parent.glob(f"{prefix}*"):
        pid = owner(entry, prefix)
        with contextlib.suppress(OSError):
            old = now - entry.stat().st_mtime > STALE_S
            if pid == os.getpid() and not old:
                continue
            if old or (pid is not None and not pid_alive(pid)):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where that is not available."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def replace_dir(new: Path, dest: Path) -> None:
    """Move the folder ``new`` to ``dest`` (same filesystem); an existing ``dest`` is swapped out in one
    step where the system allows it, then deleted."""
    if not dest.exists():
        os.rename(new, dest)
        return
    if _exchange(new, dest):
        shutil.rmtree(new, ignore_errors=True)  # ``new`` now holds the old folder
        return
    aside = dest.with_name(f".{dest.name}-old-{os.getpid()}")
    os.rename(dest, aside)
    os.rename(new, dest)
    shutil.rmtree(aside, ignore_errors=True)


_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
_READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}


def write_failure(exc: OSError, where: Path, what: str, need_bytes: int | None = None) -> ModelError | None:
    """A one-line :class:`ModelError` for a write that failed because the disk is full, the file size limit
    was reached or the folder is read-only: it names the folder ``where``, what was being written and
    what it needs. None for any other error (the caller re-raises it)."""
    need = f"about {need_bytes / 1e6:.0f} MB" if need_bytes else "room for the model's files"
    if exc.errno in _NO_SPACE:
        return ModelError(
            f"no space left on the disk of {where} for {what}: it needs {need} free; free some space, or point SIMKERNEL_HOME (the store) / HF_HOME (the download cache) at a larger disk"
        )
    if exc.errno == errno.EFBIG:
        return ModelError(
            f"writing {what} in {where} exceeds this process's file size limit (`ulimit -f`): it needs {need}; raise the limit"
        )
    if exc.errno in _READ_ONLY:
        return ModelError(
            f"{where} is not writable ({exc.strerror}): {what} needs a writable folder with {need} free; set SIMKERNEL_HOME to one (or choose another destination)"
        )
    return None
