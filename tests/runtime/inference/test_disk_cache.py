"""The persistent embedding cache: vectors served from disk equal fresh ones bit for bit, keyed by the
bundle's checksum, the precision and the exact text; real processes writing at once; LRU eviction within
the size bound; damaged, foreign and unusable files handled with a warning, never a crash or a wrong
vector; the environment variable and the switch-off."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from simkernel.runtime import TextEncoder
from simkernel.runtime.inference import disk_cache
from simkernel.runtime.inference.disk_cache import DB_NAME, DiskEmbeddingCache

TEXTS = [
    "Paris",
    "Paris ",
    "paris",
    "The capital of France is Paris.",
    "Москва — столица России.",
    "北京",
    "",
]


@pytest.fixture
def fresh(encoder):
    """Vectors of the store's default model without any cache."""
    return lambda texts: TextEncoder(encoder.model_path, cache_size=0, cache_dir="").encode(texts)


def rows_in(folder: Path) -> int:
    with sqlite3.connect(folder / DB_NAME) as conn:
        return conn.execute("SELECT count(*) FROM vectors").fetchone()[0]


def test_served_from_disk_bit_for_bit_without_loading_the_model(default_bundle, fresh, tmp_path):
    first = TextEncoder(default_bundle, cache_dir=tmp_path)
    assert first._runtime is None  # with a disk cache the session opens at the first miss
    written = first.encode(TEXTS)
    assert first.disk_cache.misses == len(TEXTS) and rows_in(tmp_path) == len(TEXTS)  # exact texts differ
    second = TextEncoder(default_bundle, cache_size=0, cache_dir=tmp_path)
    served = second.encode(TEXTS + TEXTS[:2])
    assert second._runtime is None and second.disk_cache.hits == len(TEXTS)
    assert np.array_equal(served[: len(TEXTS)], written)
    assert np.array_equal(served[: len(TEXTS)], fresh(TEXTS))
    # a miss loads the model and adds the text
    assert np.array_equal(second.encode(["Paris", "new text"]), fresh(["Paris", "new text"]))
    assert second._runtime is not None and rows_in(tmp_path) == len(TEXTS) + 1


def test_key_is_the_bundle_checksum_and_the_precision(default_bundle, tmp_path):
    fp32 = TextEncoder(default_bundle, cache_dir=tmp_path / "c")
    fp32.encode(["Paris"])
    int8 = TextEncoder(default_bundle, precision="int8", cache_dir=tmp_path / "c")
    assert int8._disk_key != fp32._disk_key and int8._disk_key.endswith("/int8")
    int8_vector = int8.encode(["Paris"])
    assert int8.disk_cache.misses == 1  # never the fp32 vector
    assert not np.array_equal(int8_vector, fp32.encode(["Paris"]))
    # a changed bundle (its manifest decides the session's optimisation level) is another model
    copy = tmp_path / "bundle"
    shutil.copytree(default_bundle, copy, copy_function=os.link)
    manifest = (copy / "simkernel.json").read_text("utf-8")
    (copy / "simkernel.json").unlink()  # hard links: write a new file, never through the link
    (copy / "simkernel.json").write_text(manifest.replace("{", '{"edited": true, ', 1), "utf-8")
    changed = TextEncoder(copy, cache_dir=tmp_path / "c")
    assert changed._disk_key != fp32._disk_key
    changed.encode(["Paris"])
    assert changed.disk_cache.misses == 1
    # a hidden file (a tool's stamp or lock) is not part of the model
    (copy / ".verified.json").write_text("{}", "utf-8")
    assert TextEncoder(copy, cache_dir=tmp_path / "c")._disk_key == changed._disk_key
    # rebuilding the int8 graph leaves the fp32 key alone
    int8_graph = (copy / "model_int8.onnx").read_bytes()
    (copy / "model_int8.onnx").unlink()
    (copy / "model_int8.onnx").write_bytes(int8_graph + b"")
    os.utime(copy / "model_int8.onnx", ns=(1, 1))
    assert TextEncoder(copy, cache_dir=tmp_path / "c")._disk_key == changed._disk_key


WORKER = """
import sys, numpy as np
from simkernel.runtime import TextEncoder
folder, cache, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
texts = [f"answer number {i}" for i in range(start, start + 120)] + ["shared text", "Общий текст"]
encoder = TextEncoder(folder, cache_dir=cache, threads=1)
for chunk in range(0, len(texts), 10):  # many small writes, interleaved with the other processes
    encoder.encode(texts[chunk : chunk + 10])
np.save(sys.argv[4], encoder.encode(texts))
"""


def test_processes_write_at_once(default_bundle, fresh, tmp_path):
    env = {**os.environ, "PYTHONWARNINGS": "error::RuntimeWarning"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WORKER,
                str(default_bundle),
                str(tmp_path / "c"),
                str(k * 60),
                str(tmp_path / f"{k}.npy"),
            ],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    for proc in procs:
        assert proc.wait(timeout=600) == 0, proc.stderr.read()
    texts = {f"answer number {i}" for i in range(0, 300)} | {"shared text", "Общий текст"}
    assert rows_in(tmp_path / "c") == len(texts)
    for k in range(4):
        mine = [f"answer number {i}" for i in range(k * 60, k * 60 + 120)] + ["shared text", "Общий текст"]
        assert np.array_equal(np.load(tmp_path / f"{k}.npy"), fresh(mine))


def test_least_recently_used_rows_go_first(tmp_path, monkeypatch):
    monkeypatch.setattr(disk_cache, "TOUCH_AFTER_NS", 0)  # record every use (normally once a minute)
    vectors = np.arange(40 * 8, dtype=np.float32).reshape(40, 8)
    texts = [f"text {i:02d}" for i in range(40)]  # 7 bytes + 32 bytes of vector each
    cache = DiskEmbeddingCache(tmp_path, max_bytes=20 * 39)
    for i in range(20):  # one at a time: each row its own time of use
        cache.put_many("m/fp32", texts[i : i + 1], vectors[i : i + 1])
    assert all(v is not None for v in cache.get_many("m/fp32", texts[:1]))  # text 00 used again
    cache.put_many("m/fp32", texts[20:25], vectors[20:25])  # over the bound: down to 90%
    kept = cache.get_many("m/fp32", texts)
    present = [t for t, v in zip(texts, kept, strict=True) if v is not None]
    assert present == [texts[0], *texts[8:25]]  # the 7 least recently used went: 975 -> 702 bytes
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        total = conn.execute("SELECT total(size) FROM vectors").fetchone()[0]
        recorded = conn.execute("SELECT value FROM meta WHERE name = 'bytes'").fetchone()[0]
    assert total == recorded <= 20 * 39 * 0.9
    for text, vector in zip(texts, kept, strict=True):
        if vector is not None:
            assert np.array_equal(vector, vectors[texts.index(text)])


@pytest.mark.parametrize("damage", ["garbage", "foreign", "wrong format"])
def test_a_file_that_is_not_a_cache_is_set_aside_and_rebuilt(default_bundle, fresh, tmp_path, damage):
    path = tmp_path / DB_NAME
    if damage == "garbage":
        path.write_bytes(b"not a database at all " * 100)
    else:
        with sqlite3.connect(path) as conn:
            if damage == "foreign":
                conn.execute("CREATE TABLE photos (name TEXT)")
            else:
                conn.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value)")
                conn.execute("INSERT INTO meta VALUES ('format', 'simkernel-embedding-cache/999')")
    before = path.read_bytes()
    warning = r"was set aside as embeddings\.sqlite3\.set-aside-.* new, empty cache"
    with pytest.warns(RuntimeWarning, match=warning):
        encoder = TextEncoder(default_bundle, cache_dir=tmp_path)  # found when reading the bundle's checksum
        vectors = encoder.encode(TEXTS)
    assert np.array_equal(vectors, fresh(TEXTS))
    (kept,) = encoder.disk_cache.set_aside
    assert kept.read_bytes() == before  # the user's file is kept as it was
    assert rows_in(tmp_path) == len(TEXTS)


def test_damaged_rows_and_pages_never_give_a_wrong_vector(default_bundle, fresh, tmp_path):
    texts = [f"sentence {i} about the weather" for i in range(400)]
    TextEncoder(default_bundle, cache_dir=tmp_path).encode(texts)
    with sqlite3.connect(tmp_path / DB_NAME) as conn:  # a row whose vector changed but not its checksum
        conn.execute("UPDATE vectors SET vector = zeroblob(length(vector)) WHERE text = ?", (texts[0],))
    encoder = TextEncoder(default_bundle, cache_size=0, cache_dir=tmp_path)
    assert np.array_equal(encoder.encode(texts), fresh(texts))
    assert encoder.disk_cache.misses == 1
    data = bytearray((tmp_path / DB_NAME).read_bytes())  # now scribble over the middle of the file
    data[len(data) // 2 : len(data) // 2 + 8192] = os.urandom(8192)
    (tmp_path / DB_NAME).write_bytes(bytes(data))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        again = TextEncoder(default_bundle, cache_size=0, cache_dir=tmp_path).encode(texts)
    assert np.array_equal(again, fresh(texts))


def test_an_unusable_cache_is_switched_off_with_a_warning(default_bundle, fresh, tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    with pytest.warns(RuntimeWarning, match="the embedding cache is off for this process: cannot create"):
        vectors = TextEncoder(default_bundle, cache_dir=blocker).encode(TEXTS)
    assert np.array_equal(vectors, fresh(TEXTS))


def test_environment_variable_and_switch_off(default_bundle, tmp_path, monkeypatch):
    assert TextEncoder(default_bundle).disk_cache is None  # off by default
    monkeypatch.setenv("SIMKERNEL_CACHE_DIR", str(tmp_path / "env"))
    encoder = TextEncoder(default_bundle)
    assert encoder.disk_cache is not None and encoder.disk_cache.folder == tmp_path / "env"
    encoder.encode(["Paris"])
    assert rows_in(tmp_path / "env") == 1
    assert TextEncoder(default_bundle, cache_dir="").disk_cache is None
    monkeypatch.setenv("SIMKERNEL_CACHE_MAX_MB", "many")
    with pytest.raises(ValueError, match="SIMKERNEL_CACHE_MAX_MB='many' is not a number of megabytes"):
        TextEncoder(default_bundle)
