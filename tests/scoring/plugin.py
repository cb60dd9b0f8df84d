"""Installs :mod:`tests.scoring.length_ratio_metric` as a plugin: a ``*.dist-info`` folder whose
``entry_points.txt`` names its ``METRIC`` in the ``simkernel.metrics`` group, in a folder put on the path
of this process and of the processes it starts (``PYTHONPATH``), as ``pip install`` of a plugin would."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY = "length_ratio = tests.scoring.length_ratio_metric:METRIC"
# the two-column metric, a plugin of its own (tests/scoring/test_multi_column_metric.py)
PAIR_ENTRY = "length_pair = tests.scoring.length_pair_metric:METRIC"


def write_plugin(folder: Path, entry: str = ENTRY) -> Path:
    name = entry.split("=")[0].strip()
    info = folder / f"simkernel_{name}-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    dashed = name.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: simkernel-{dashed}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[simkernel.metrics]\n{entry}\n")
    return folder


def plugin_path(folder: Path) -> str:
    """``PYTHONPATH`` for a process that should see the plugin (and the ``tests`` package it names)."""
    return os.pathsep.join([str(folder), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])


def install_here(folder: Path) -> None:
    """The plugin visible to this process (the registry scans for plugins again)."""
    from simkernel.scoring import registry

    for entry in (str(folder), str(ROOT)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    registry._plugins_loaded = False


def uninstall_here(folder: Path) -> None:
    from simkernel.scoring import registry

    if str(folder) in sys.path:
        sys.path.remove(str(folder))
    registry._registered.pop("length_ratio", None)
    registry._registered.pop("length_pair", None)
    registry._plugins_loaded = False
