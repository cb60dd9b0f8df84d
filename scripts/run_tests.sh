#!/usr/bin/env bash
# Runs the test suite; pytest's "no tests collected" (exit 5) is a failure, never a pass.
set -euo pipefail
PY=${1:-.venv/bin/python}
shift || true
set +e
"$PY" -m pytest tests "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi
exit "$rc"
