"""A persistent embedding cache shared by processes: SQLite (standard library) in WAL mode.

One file, ``<cache_dir>/embeddings.sqlite3``, holds the vectors of every model the encoders met, each
keyed by the model's key (:func:`simkernel.runtime.store.bundle_digest.bundle_digest`: the checksum of
the bundle's files for that precision, so a changed model never serves stale vectors) and the exact text.
Several processes may read and write at once: WAL lets readers run beside the one writer, writers queue
(``BEGIN IMMEDIATE``, 60 s busy timeout). Every row carries a CRC-32 of its text and vector, checked on
read: a damaged row is a miss (deleted), never a wrong vector.

Size: the payload (text + vector bytes) is bounded by ``max_bytes`` (default 1 GiB, or
``SIMKERNEL_CACHE_MAX_MB``); past it the least recently used rows go (use is recorded at most once a
minute per row, so warm reads rarely write). A file that is not such a cache (corrupt, or another
program's) is renamed ``embeddings.sqlite3.set-aside-<time>`` (kept, never deleted) and a new cache
started, with a warning; a cache that cannot be used at all (read-only folder, full disk) is switched off
for the process with a warning, and the encoder embeds as if there were none.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import time
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from simkernel.runtime.inference.cache_settings import default_max_bytes
from simkernel.runtime.store import file_lock
from simkernel.runtime.store.bundle_digest import file_sha256

DB_NAME = "embeddings.sqlite3"
FORMAT = "simkernel-embedding-cache/2"
PAGE_SIZE = 16384  # a 384-dim vector (1.5 KB) and its text fit a page: 3-5x faster than 4 KB pages
TOUCH_AFTER_NS = 60 * 10**9  # a row's last use is rewritten at most once a minute
BUSY_TIMEOUT_S = 60.0
_CHUNK = 500  # keys per SELECT / UPDATE (under SQLite's parameter limit)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE)",
    "CREATE TABLE IF NOT EXISTS vectors (id INTEGER PRIMARY KEY, model INTEGER NOT NULL,"
    " digest BLOB NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL, crc INTEGER NOT NULL,"
    " size INTEGER NOT NULL, used INTEGER NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS vectors_key ON vectors (model, digest)",
    "CREATE INDEX IF NOT EXISTS vectors_used ON vectors (used)",
    "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER,"
    " inode INTEGER, sha256 TEXT) WITHOUT ROWID",
)


def text_digest(text: str) -> bytes:
    """16 bytes that identify ``text`` (the start of its UTF-8 SHA-256; the same in every process)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


def _crc(text: str, blob: bytes) -> int:
    return zlib.crc32(blob, zlib.crc32(text.encode("utf-8", "surrogatepass")))


class CacheUnusable(Exception):
    """The cache cannot be used in this process (read-only folder, full disk, locked for too long)."""


class DiskEmbeddingCache:
    """The cache file of one folder. Thread-safe (one connection per process, under a lock); a forked
    child opens its own connection."""

    def __init__(self, folder: str | os.PathLike, max_bytes: int | None = None) -> None:
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME
        self.max_bytes = default_max_bytes() if max_bytes is None else int(max_bytes)
        if self.max_bytes <= 0:
            raise ValueError(f"max_bytes must be > 0, got {max_bytes!r}")
        self.hits = self.misses = self.writes = 0
        self.set_aside: list[Path] = []
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._disabled: str | None = None
        self._models: dict[str, int] = {}

    # -- connection -----------------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheUnusable(
                f"cannot create the cache folder {self.folder}: {exc.strerror or exc}"
            ) from None
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        attempt = 0
        while True:
            try:
                conn = self._open()
                break
            except sqlite3.DatabaseError as exc:
                # switching a new file to WAL while other processes open it can report "locked" at once,
                # without waiting for the busy timeout: try again until the timeout is spent
                if _is_busy(exc) and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                if _is_busy(exc) or attempt:
                    raise CacheUnusable(f"cannot open {self.path}: {exc}") from None
                attempt += 1
                self._set_aside(f"it is not a simkernel embedding cache ({exc})")
        self._conn, self._pid, self._models = conn, os.getpid(), {}
        return conn

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            found = _format_of(conn)  # first, read only: another program's file is left as it is
            if found not in (None, FORMAT):
                raise sqlite3.DatabaseError(f"format {found!r}, expected {FORMAT!r}")
            if found is None:
                conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # before the first table (and WAL)
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            conn.execute("PRAGMA synchronous=NORMAL")
            if found is None:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    if _format_of(conn) is None:  # another process may have created it meanwhile
                        for statement in _SCHEMA:
                            conn.execute(statement)
                        conn.execute("INSERT INTO meta VALUES ('format', ?), ('bytes', 0)", (FORMAT,))
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            return conn
        except BaseException:
            conn.close()
            raise

    def _set_aside(self, why: str) -> None:
        """Rename the damaged or foreign file (and its WAL / shared-memory files) aside, under the folder's
        lock, unless another process already replaced it; warn once."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        with file_lock.hold(self.folder / (DB_NAME + ".lock"), BUSY_TIMEOUT_S):
            if not self.path.exists():
                return
            try:
                with contextlib.closing(sqlite3.connect(self.path, timeout=1)) as probe:
                    if _format_of(probe) == FORMAT and _healthy(probe):
                        return  # another process replaced it meanwhile: keep the new one
            except sqlite3.DatabaseError:
                pass
            stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
            target = self.path.with_name(f"{DB_NAME}.set-aside-{stamp}")
            for suffix in ("", "-wal", "-shm"):
                source = Path(str(self.path) + suffix)
                if source.exists():
                    os.replace(source, Path(str(target) + suffix))
        self.set_aside.append(target)
        warnings.warn(
            f"the embedding cache {self.path} was set aside as {target.name} because {why}; a new, empty cache was started (the old file is kept; delete it when you no longer need it)",
            RuntimeWarning,
            stacklevel=4,
        )

    # -- public ---------------------------------------------------------------------------------------
    def lookup(self, model_key: str, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """(positions in ``texts`` found in the cache under ``model_key``, their vectors as one float32
        ``(found, dim)`` array, or None when none was found)."""
        hits: list = [[], []]  # positions, vector blobs
        if texts and self._disabled is None:
            self._guarded(self._read, model_key, texts, hits)
        positions, blobs = hits
        self.hits += len(positions)
        self.misses += len(texts) - len(positions)
        if not positions:
            return np.empty(0, dtype=np.int64), None
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
        return np.asarray(positions, dtype=np.int64), matrix

    def get_many(self, model_key: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        """The cached vector of each text under ``model_key``, or None (a miss)."""
        found: list[np.ndarray | None] = [None] * len(texts)
        positions, matrix = self.lookup(model_key, texts)
        if matrix is not None:
            for row, i in enumerate(positions):
                found[i] = matrix[row]
        return found

    def put_many(self, model_key: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store one float32 row of ``vectors`` per text; then evict to ``max_bytes``."""
        if texts and self._disabled is None:
            rows = np.ascontiguousarray(vectors, dtype="<f4")
            self._guarded(self._write, model_key, texts, rows)

    def file_hash(self, path: Path) -> str:
        """SHA-256 of the file ``path``, memoised in the cache by (path, size, mtime, inode)."""
        stat = path.stat()
        key, fingerprint = str(path.resolve()), (stat.st_size, stat.st_mtime_ns, stat.st_ino)
        known: list[str] = []
        if self._disabled is None:
            self._guarded(self._memo_read, key, fingerprint, known)
        if known:
            return known[0]
        digest = file_sha256(path)
        if self._disabled is None:
            self._guarded(self._memo_write, key, fingerprint, digest)
        return digest

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    # -- internals ------------------------------------------------------------------------------------
    def _guarded(self, operation, *args) -> None:
        with self._lock:
            for attempt in range(2):
                try:
                    operation(self._connection(), *args)
                    return
                except CacheUnusable as exc:
                    self._disable(str(exc))
                    return
                except sqlite3.DatabaseError as exc:
                    if _is_busy(exc) or isinstance(exc, sqlite3.OperationalError) and not _is_corrupt(exc):
                        self._disable(f"{self.path}: {exc}")
                        return
                    if attempt:
                        self._disable(f"{self.path}: {exc}")
                        return
                    self._set_aside(f"reading it failed ({exc})")

    def _disable(self, why: str) -> None:
        self._disabled = why
        warnings.warn(
            f"the embedding cache is off for this process: {why}; texts are embedded without it",
            RuntimeWarning,
            stacklevel=4,
        )

    def _memo_read(self, conn: sqlite3.Connection, key: str, fingerprint: tuple, out: list) -> None:
        row = conn.execute(
            "SELECT size, mtime_ns, inode, sha256 FROM files WHERE path = ?", (key,)
        ).fetchone()
        if row is not None and tuple(row[:3]) == fingerprint:
            out.append(str(row[3]))

    def _memo_write(self, conn: sqlite3.Connection, key: str, fingerprint: tuple, digest: str) -> None:
        conn.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", (key, *fingerprint, digest))

    def _model_id(self, conn: sqlite3.Connection, key: str, create: bool) -> int | None:
        model = self._models.get(key)
        if model is None:
            row = conn.execute("SELECT id FROM models WHERE key = ?", (key,)).fetchone()
            if row is None and create:
                conn.execute("INSERT OR IGNORE INTO models (key) VALUES (?)", (key,))
                row = conn.execute("SELECT id FROM models WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            model = self._models[key] = int(row[0])
        return model

    def _read(self, conn: sqlite3.Connection, key: str, texts: Sequence[str], hits: list) -> None:
        model = self._model_id(conn, key, create=False)
        if model is None:
            return
        wanted = {text_digest(t): i for i, t in enumerate(texts)}
        digests = list(wanted)
        positions, blobs, stale, damaged = [], [], [], []
        width = None  # every vector of one model has the same length
        now = time.time_ns()
        for start in range(0, len(digests), _CHUNK):
            part = digests[start : start + _CHUNK]
            marks = ",".join("?" * len(part))
            query = (
                f"SELECT digest, text, vector, crc, used FROM vectors WHERE model = ? AND digest IN ({marks})"
            )
            for digest, text, blob, crc, used in conn.execute(query, (model, *part)):
                i = wanted[digest]
                width = len(blob) if width is None else width
                if text != texts[i] or len(blob) != width or width % 4 or _crc(text, blob) != crc:
                    damaged.append(digest)
                    continue
                positions.append(i)
                blobs.append(blob)
                if now - used > TOUCH_AFTER_NS:
                    stale.append(digest)
        hits[:] = positions, blobs
        if stale or damaged:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "UPDATE vectors SET used = ? WHERE model = ? AND digest = ?",
                    [(now, model, d) for d in stale],
                )
                self._delete(conn, model, damaged)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _write(self, conn: sqlite3.Connection, key: str, texts: Sequence[str], rows: np.ndarray) -> None:
        now = time.time_ns()
        conn.execute("BEGIN IMMEDIATE")
        try:
            model = self._model_id(conn, key, create=True)
            added = 0
            for text, row in zip(texts, rows, strict=True):
                blob = row.tobytes()
                size = len(blob) + len(text.encode("utf-8", "surrogatepass"))
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO vectors (model, digest, text, vector, crc, size, used)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (model, text_digest(text), text, blob, _crc(text, blob), size, now),
                )
                added += size if cursor.rowcount == 1 else 0
            total = _add_bytes(conn, added)
            if total > self.max_bytes:
                self._evict(conn, total - int(self.max_bytes * 0.9))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            self._models.clear()  # an id created in the rolled-back transaction is gone
            raise
        self.writes += len(texts)

    def _evict(self, conn: sqlite3.Connection, excess: int) -> None:
        """Delete the least recently used rows until ``excess`` bytes are gone (inside a transaction)."""
        freed, doomed = 0, []
        for model, digest, size in conn.execute("SELECT model, digest, size FROM vectors ORDER BY used"):
            if freed >= excess:
                break
            doomed.append((model, digest))
            freed += size
        conn.executemany("DELETE FROM vectors WHERE model = ? AND digest = ?", doomed)
        _add_bytes(conn, -freed)

    def _delete(self, conn: sqlite3.Connection, model: int, digests: list) -> None:
        if not digests:
            return
        marks = ",".join("?" * len(digests))
        sizes = conn.execute(
            f"SELECT total(size) FROM vectors WHERE model = ? AND digest IN ({marks})", (model, *digests)
        ).fetchone()[0]
        conn.execute(f"DELETE FROM vectors WHERE model = ? AND digest IN ({marks})", (model, *digests))
        _add_bytes(conn, -int(sizes))


def _add_bytes(conn: sqlite3.Connection, delta: int) -> int:
    if delta:
        conn.execute("UPDATE meta SET value = value + ? WHERE name = 'bytes'", (delta,))
    return int(conn.execute("SELECT value FROM meta WHERE name = 'bytes'").fetchone()[0])


def _format_of(conn: sqlite3.Connection) -> str | None:
    """The format marker, None for an empty database; raises DatabaseError for a foreign one."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return None
    if "meta" not in tables:
        raise sqlite3.DatabaseError(f"it holds other tables ({', '.join(sorted(tables))})")
    row = conn.execute("SELECT value FROM meta WHERE name = 'format'").fetchone()
    if row is None:
        raise sqlite3.DatabaseError("its meta table has no format marker")
    return str(row[0])


def _healthy(conn: sqlite3.Connection) -> bool:
    return conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"


def _is_busy(exc: sqlite3.DatabaseError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def _is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc)
    return "malformed" in text or "not a database" in text or "corrupt" in text
