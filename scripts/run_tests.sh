#!/usr/bin/env bash
# Runs the whole test suite as two pytest processes side by side, each on half of the test folders, and
# fails if either fails. The suite spends much of its time waiting (child processes starting, loopback
# servers retrying with back-off, a Ray cluster starting), so on two or more cores two processes take
# about 60% of the time of one (16 minutes instead of 25 on the 2-core build machine). The halves share nothing: every test that writes a model store,
# a cluster or a mount makes its own under its own temporary folder.
# pytest's "no tests collected" (exit 5) is a failure, never a pass.
# Usage: scripts/run_tests.sh [python] [extra pytest args, given to both halves]
# One process over everything instead: SIMKERNEL_TEST_SERIAL=1 scripts/run_tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
shift || true

run_half() {  # run_half NAME FOLDER...: pytest on the folders; its output in $LOGS/NAME.log
    local name=$1
    shift
    set +e
    "$PY" -m pytest "$@" "${EXTRA[@]}" -p no:cacheprovider --basetemp="$LOGS/tmp-$name" \
        >"$LOGS/$name.log" 2>&1
    echo $? >"$LOGS/$name.rc"
}

EXTRA=("$@")
if [ "${SIMKERNEL_TEST_SERIAL:-0}" = 1 ]; then
    set +e
    "$PY" -m pytest tests "${EXTRA[@]}"
    rc=$?
    set -e
    if [ "$rc" -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi
    exit "$rc"
fi

LOGS=$(mktemp -d "${TMPDIR:-/tmp}/simkernel-tests.XXXXXX")
trap 'rm -rf "$LOGS"' EXIT
# the halves, about equal in time (12-13 minutes each on 2 cores): the command line, kernels, metrics and
# plugin; BERTScore, the evaluators, the runtime and Ray
FIRST=(tests/cli tests/calibration tests/docs tests/kernels tests/metrics tests/pytest_plugin tests/scoring tests/serve tests/spark
    tests/test_cpu_budget.py tests/test_layout.py tests/test_package.py)
SECOND=(tests/bertscore tests/components tests/integrations tests/peer tests/ray tests/runtime tests/stats)
# every test folder and top-level test file must be in a half: a new one is never silently left out
for path in tests/*/ tests/test_*.py; do
    path=${path%/}
    [ "$path" = tests/data ] || [ "$path" = tests/__pycache__ ] && continue
    case " ${FIRST[*]} ${SECOND[*]} " in
    *" $path "*) ;;
    *) echo "error: $path is in neither half of scripts/run_tests.sh; add it to FIRST or SECOND" >&2; exit 1 ;;
    esac
done
started=$(date +%s)
run_half first "${FIRST[@]}" &
first_pid=$!
run_half second "${SECOND[@]}" &
second_pid=$!
wait "$first_pid" "$second_pid" || true
status=0
for name in first second; do
    rc=$(cat "$LOGS/$name.rc")
    echo "===== pytest, $name half (exit status $rc) ====="
    cat "$LOGS/$name.log"
    if [ "$rc" -eq 5 ]; then echo "error: pytest collected no tests in the $name half" >&2; status=1; fi
    if [ "$rc" -ne 0 ]; then status=1; fi
done
echo "===== both halves done in $(($(date +%s) - started)) s (exit status $status) ====="
exit "$status"
