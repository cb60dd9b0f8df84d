"""Download a model's published ONNX files from the Hugging Face hub into the store.

What is fetched (``huggingface_hub.hf_hub_download``, one file at a time, all at one commit):
``onnx/model.onnx`` (required; saved as ``model.onnx``), ``tokenizer.json`` and ``config.json`` (required)
and the other configuration files when the repo has them.

``precision="int8"``: when the ``onnx`` package is installed (it comes with the ``export`` extra; no torch
needed), ``model_int8.onnx`` is made locally from the downloaded fp32 graph with simkernel's per-row
quantisation (batch-independent, :mod:`simkernel.runtime.acquisition.quantize`) and checked against the
fp32 graph on :data:`~simkernel.runtime.acquisition.export_probes.PROBE_TEXTS` (min cosine >=
:data:`~simkernel.runtime.acquisition.graph_passes.LOCAL_INT8_MIN_COSINE`;
:func:`~simkernel.runtime.acquisition.graph_passes.local_int8`). Otherwise, or when that check fails,
the first published quantised variant of :data:`simkernel.runtime.acquisition.registry.INT8_HUB_FILES` is
used, with a warning: those are onnxruntime's dynamic quantisation, whose embeddings depend on the
batch-mates.

Environment, read at call time (huggingface_hub itself reads some only at import):
``HF_ENDPOINT`` (mirror or test server), ``HF_HUB_CACHE``/``HF_HOME`` (its download cache),
``HF_HUB_OFFLINE=1`` (no network: only what the HF cache already holds), ``HF_TOKEN`` (sent as
``Authorization: Bearer``; needed for private or gated repos; a ``token=`` argument takes precedence).

The files land in huggingface_hub's cache first (resumable, shared with other tools), then are
hard-linked (or copied) into a staging folder of the store and published atomically under the model's
lock (:mod:`simkernel.runtime.store.bundles`): an interrupted download leaves no model in the store, and a
second process asking for the same model waits and reuses the first one's bundle.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from simkernel.errors import ModelError, ModelNotFoundError
from simkernel.runtime.acquisition.graph_passes import LOCAL_INT8_FILES, local_int8
from simkernel.runtime.acquisition.parity import ParityError
from simkernel.runtime.acquisition.registry import CONFIG_FILES, FP32_HUB_FILE, INT8_HUB_FILES, known_model
from simkernel.runtime.inference.bundle import check_precision
from simkernel.runtime.inference.config import read_model_config
from simkernel.runtime.store import bundles as store
from simkernel.runtime.store import workdirs
from simkernel.runtime.store.layout import PRECISIONS
from simkernel.runtime.store.manifest import package_versions, write_manifest

REQUIRED_FILES = ("config.json", "tokenizer.json")
DOWNLOAD_ATTEMPTS = 3  # tries of one file when the hub fails in a way that may pass (see _transient)
_RETRY_WAITS_S = (0.5, 2.0)  # before the second and third try
_TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
_TRUE = {"1", "on", "yes", "true"}
# what to do when HF_HUB_OFFLINE=1 and a model is in neither the store nor the HF cache
OFFLINE_FIX = (
    "HF_HUB_OFFLINE=1 is set, so nothing is downloaded: run once with the hub reachable (HF_HUB_OFFLINE unset, "
    "or HF_ENDPOINT set to a mirror) to fetch it, or export a local checkpoint with "
    "`simkernel models export CHECKPOINT DIR` and pass DIR as the model"
)


def hub_settings(token: str | None = None) -> dict:
    """The hub settings in effect now: endpoint, cache_dir, offline, token (``token`` if given, else
    ``HF_TOKEN``; None: huggingface_hub's own lookup)."""
    hf_home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return {
        "endpoint": (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/"),
        "cache_dir": os.environ.get("HF_HUB_CACHE") or os.path.join(os.path.expanduser(hf_home), "hub"),
        "offline": (os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or "").lower()
        in _TRUE,
        "token": token or os.environ.get("HF_TOKEN") or None,
    }


def fetch_file(repo: str, filename: str, revision: str, settings: dict) -> Path | None:
    """Download one file (or find it in the HF cache); None when the repo does not have it.

    huggingface_hub itself retries timeouts, refused and cut-short connections (resuming, 5 more tries a
    second apart) and HTTP 408/429 (5 more, backing off up to 8 s). What it gives up on at once and
    may pass (a connection reset, a body whose size does not match, HTTP 5xx) is tried again here,
    :data:`DOWNLOAD_ATTEMPTS` tries in all; each try writes a new temporary file, so nothing of a failed
    try is reused."""
    import time

    if not settings["offline"] and not hub_reachable(settings["endpoint"]):
        # huggingface_hub would retry the connection for about 23 s before falling back on its cache
        from huggingface_hub.errors import LocalEntryNotFoundError

        cached = _fetch_once(repo, filename, revision, {**settings, "offline": True})
        # a file the cached repo lacks is absent, as offline
        if cached is None and not repo_cached(repo, settings):
            raise LocalEntryNotFoundError(
                f"cannot connect to {settings['endpoint']}, and {repo}/{filename} is not in the HF cache"
            )
        return cached
    for attempt in range(DOWNLOAD_ATTEMPTS):
        try:
            return _fetch_once(repo, filename, revision, settings)
        except Exception as exc:
            if attempt + 1 == DOWNLOAD_ATTEMPTS or not _transient(exc):
                raise
            time.sleep(_RETRY_WAITS_S[min(attempt, len(_RETRY_WAITS_S) - 1)])
    raise AssertionError("unreachable")  # pragma: no cover


def repo_cached(repo: str, settings: dict) -> bool:
    """Whether huggingface_hub's cache holds anything of ``repo`` (a file it lacks is then known absent)."""
    return (Path(settings["cache_dir"]) / ("models--" + repo.replace("/", "--"))).is_dir()


def not_cached_offline(model: str, repo: str, settings: dict) -> ModelNotFoundError:
    """The error for a model that an offline run (HF_HUB_OFFLINE=1) finds neither in the store nor in the
    HF cache: what is missing, and the two ways to get it."""
    return ModelNotFoundError(
        f"cannot find model {model!r}: it is not prepared in simkernel's store and {repo} is not in the HF cache ({settings['cache_dir']}); {OFFLINE_FIX}"
    )


UNREACHABLE_TTL_S = 60.0  # how long an endpoint that could not be reached is not probed again
_unreachable: dict[str, float] = {}  # endpoint -> monotonic time of the failed probe


def hub_reachable(endpoint: str) -> bool:
    """Whether a connection to ``endpoint`` can be opened now (one HEAD request through huggingface_hub's
    own client, so its proxy settings apply; any HTTP answer counts). False when the connection is refused,
    the name does not resolve or connecting times out (``HF_HUB_ETAG_TIMEOUT``): then a download fails in
    well under a second instead of huggingface_hub's five retries (1 + 2 + 4 + 8 + 8 s). A failure is
    remembered for ``UNREACHABLE_TTL_S`` seconds per endpoint (a success is not: the network may go)."""
    import time

    now = time.monotonic()
    if now - _unreachable.get(endpoint, -UNREACHABLE_TTL_S) < UNREACHABLE_TTL_S:
        return False
    from huggingface_hub import constants
    from huggingface_hub.utils import get_session

    try:
        get_session().head(endpoint, timeout=constants.HF_HUB_ETAG_TIMEOUT, follow_redirects=False)
        reachable = True
    except Exception as exc:
        names = {cls.__name__ for cls in type(exc).__mro__}
        reachable = not (names & {"ConnectError", "ConnectTimeout"} or isinstance(exc, OSError))
    if not reachable:
        _unreachable[endpoint] = now
    return reachable


def _fetch_once(repo: str, filename: str, revision: str, settings: dict) -> Path | None:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    try:
        return Path(
            hf_hub_download(
                repo,
                filename,
                revision=revision,
                cache_dir=settings["cache_dir"],
                endpoint=settings["endpoint"],
                token=settings["token"],
                local_files_only=settings["offline"],
            )
        )
    except LocalEntryNotFoundError:
        if settings["offline"]:
            return None  # not cached: absent as far as an offline run can tell
        raise
    except EntryNotFoundError:
        return None


def _transient(exc: BaseException) -> bool:
    """Whether a failed download may succeed when tried again and huggingface_hub did not retry it:
    HTTP 5xx, a connection reset while reading (httpx's ReadError, matched by class name:
    huggingface_hub may bring its own copy of httpx), or its size check of a body that broke off. Not:
    what it has retried already (timeouts, cut-short connections, 408/429, a hub that cannot be reached
    at all), a missing repo, revision or file."""
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    if isinstance(exc, LocalEntryNotFoundError):
        return False
    if isinstance(exc, HfHubHTTPError):
        response = getattr(exc, "response", None)
        return getattr(response, "status_code", None) in _TRANSIENT_STATUSES
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"ReadError", "WriteError"}:
        return True
    return isinstance(exc, OSError) and "Consistency check failed" in str(exc)


def explain_failure(repo: str, revision: str, settings: dict, exc: Exception) -> ModelError:
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{settings['endpoint']}/{repo} (revision {revision})"
    if isinstance(exc, OSError) and (
        full := workdirs.write_failure(exc, Path(settings["cache_dir"]), "the download")
    ):
        return ModelError(f"downloading {where} failed: {full}")
    if isinstance(exc, GatedRepoError):
        hint = "the repo is gated: accept its terms on the hub and set HF_TOKEN"
    elif isinstance(exc, RepositoryNotFoundError):
        hint = "no such repo, or it is private (set HF_TOKEN to a token that can read it)"
    elif isinstance(exc, RevisionNotFoundError):
        hint = f"the repo has no revision {revision!r}"
    elif isinstance(exc, LocalEntryNotFoundError):
        hint = (
            f"the files are not in the HF cache; {OFFLINE_FIX}"
            if settings["offline"]
            else "the hub could not be reached and the files are not in the HF cache (no network? set "
            "HF_ENDPOINT to a mirror, or HF_HUB_OFFLINE=1 to skip the download and its retries; a local "
            "checkpoint can be exported with `simkernel models export SRC DST`)"
        )
    elif isinstance(exc, HfHubHTTPError):
        hint = f"the hub answered an error ({exc})"
    else:
        hint = f"{type(exc).__name__}: {exc}"
    if _transient(exc):
        hint += f" (after {DOWNLOAD_ATTEMPTS} tries; run the command again later)"
    # a missing repo or uncached files: not found, an OSError as transformers raises for them
    missing = isinstance(exc, (RepositoryNotFoundError, LocalEntryNotFoundError))
    return (ModelNotFoundError if missing else ModelError)(
        f"downloading {where} failed: {' '.join(hint.split())}"
    )


def place_file(src: Path, dest: Path) -> None:
    """Hard-link the cached blob into the bundle when on the same filesystem, else copy it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    real = src.resolve()
    try:
        os.link(real, dest)
    except OSError:
        shutil.copyfile(real, dest)


def commit_of(cached: Path, revision: str) -> str:
    """The commit of a file in huggingface_hub's cache (its snapshot folder), else ``revision``."""
    parts = cached.parts
    if "snapshots" in parts:
        return parts[parts.index("snapshots") + 1]
    return revision


class NoOnnxPublishedError(ModelError):
    """The repository publishes no ONNX graph (its checkpoint may still be exported: ``hub_checkpoint``)."""


def download_bundle(
    model_id: str,
    precision: str = "fp32",
    revision: str | None = None,
    token: str | None = None,
    force: bool = False,
) -> Path:
    """Fetch ``model_id``'s published ONNX bundle into the store; returns its folder.

    ``revision`` defaults to the registry's pinned commit (``"main"`` for unknown repos). ``token`` is the
    Hugging Face token sent as ``Authorization: Bearer`` (default: ``HF_TOKEN``). Returns at once
    when the store already has the bundle with the wanted precision, unless ``force``. Raises
    :class:`ModelError` explaining what failed (offline, private repo, ...); :class:`NoOnnxPublishedError`
    when the repository has no ``onnx/model.onnx``.
    """
    check_precision(precision)
    known = known_model(model_id)
    repo = known.hub_repo if known else model_id
    revision = revision or (known.revision if known else "main")
    int8_candidates = known.int8_files if known else INT8_HUB_FILES
    settings = hub_settings(token)
    folder = store.model_dir(model_id)
    with store.model_lock(model_id):
        if not force and (folder / PRECISIONS[precision]).is_file() and store.is_installed(model_id):
            return folder  # another process (or an earlier call) got there first
        try:
            onnx = fetch_file(repo, FP32_HUB_FILE, revision, settings)
            if onnx is None:
                where = " in the HF cache (HF_HUB_OFFLINE=1)" if settings["offline"] else ""
                raise NoOnnxPublishedError(
                    f"{settings['endpoint']}/{repo} (revision {revision}) publishes no {FP32_HUB_FILE}{where}"
                )
            commit = commit_of(onnx, revision)  # fetch the rest at exactly the same commit
            files: dict[str, tuple[Path, str]] = {"model.onnx": (onnx, FP32_HUB_FILE)}
            if precision == "int8" and not _can_quantize_locally():
                _warn_batch_dependent("the onnx package is not installed (pip install onnx)")
                files["model_int8.onnx"] = _published_int8(repo, revision, commit, int8_candidates, settings)
            # the external weights of big graphs
            data = fetch_file(repo, FP32_HUB_FILE + "_data", commit, settings)
            if data is not None:
                files["model.onnx_data"] = (data, FP32_HUB_FILE + "_data")
            for name in CONFIG_FILES:
                cached = fetch_file(repo, name, commit, settings)
                if cached is not None:
                    files[name] = (cached, name)
        except ModelError:
            raise
        except Exception as exc:  # huggingface_hub / httpx errors, OSError: explained, never swallowed
            raise explain_failure(repo, revision, settings, exc) from exc
        missing = [name for name in REQUIRED_FILES if name not in files]
        if missing:
            raise ModelError(
                f"{repo} (commit {commit}) has no {', '.join(missing)}; simkernel needs them beside the ONNX file. Export the checkpoint instead: simkernel models export {repo} DST"
            )
        with store.staged_bundle(model_id, locked=True) as staging:
            for name, (cached, _) in files.items():
                place_file(cached, staging / name)
            made_here = None
            if precision == "int8" and "model_int8.onnx" not in files:
                try:
                    made_here = local_int8(staging)
                except ParityError as exc:  # missed its accuracy check: the repo's own file, if any
                    _warn_batch_dependent(str(exc))
                    published = _published_int8(repo, revision, commit, int8_candidates, settings)
                    place_file(published[0], staging / "model_int8.onnx")
                    files["model_int8.onnx"] = published
                else:
                    for name in LOCAL_INT8_FILES:
                        files[name] = (staging / name, f"made locally from {FP32_HUB_FILE}")
            _write_manifest(staging, model_id, repo, revision, commit, settings["endpoint"], files, made_here)
        return folder


def _write_manifest(
    folder: Path,
    model_id: str,
    repo: str,
    revision: str,
    commit: str,
    endpoint: str,
    files: dict[str, tuple[Path, str]],
    int8_facts: dict | None = None,
) -> None:
    """Write the manifest: one entry per file of ``files`` (name -> (path, where it came from));
    ``int8_facts`` holds the facts of an int8 graph made here (quantisation, check against fp32)."""
    entries: dict[str, dict] = {}
    for name, (_, source_name) in files.items():
        entry: dict = {"source": source_name}
        if name == "model.onnx":
            entry["precision"] = "fp32"
        elif name == "model_int8.onnx":
            entry["precision"] = "int8"
            entry.update(int8_facts or {})
        entries[name] = entry
    write_manifest(
        folder,
        {
            "id": model_id,
            "kind": read_model_config(folder).kind,
            "source": {
                "type": "hub",
                "repo": repo,
                "endpoint": endpoint,
                "revision": revision,
                "commit": commit,
            },
            "revision": commit,
            "files": entries,
            "versions": package_versions("huggingface_hub"),
        },
    )


def _published_int8(repo: str, revision: str, commit: str, candidates, settings: dict) -> tuple[Path, str]:
    """The first published int8 file of ``candidates`` (cached path, repo file name); ModelError if none
    or if the download fails (explained like every hub failure)."""
    for candidate in candidates:
        try:
            cached = fetch_file(repo, candidate, commit, settings)
        except Exception as exc:
            raise explain_failure(repo, revision, settings, exc) from exc
        if cached is not None:
            return cached, candidate
    raise ModelError(
        f"{repo} (commit {commit}) publishes no int8 ONNX file (looked for {list(candidates)}) and simkernel could not make one (install onnx: pip install onnx). Export the checkpoint instead: `simkernel models export SRC DST --precision int8`, or use precision='fp32'."
    )


def _can_quantize_locally() -> bool:
    """Whether the ``onnx`` package (needed to rewrite the graph; not a run-time dependency) imports."""
    import importlib.util

    return importlib.util.find_spec("onnx") is not None


def _warn_batch_dependent(why: str) -> None:
    import warnings

    warnings.warn(
        f"{why}: using the repo's published int8 file, onnxruntime dynamic quantisation, whose embeddings change with the other texts in the batch (up to 0.04 per component). simkernel's own per-row int8 is batch-independent: pip install onnx, then delete the model from the store and load it again.",
        stacklevel=4,
    )
