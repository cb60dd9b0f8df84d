#!/usr/bin/env bash
# Runs the whole test suite as two queues of pytest processes side by side, and fails if any part fails.
# The suite spends much of its time waiting (child processes starting, loopback servers retrying with
# back-off, a Ray cluster starting), so two queues on two or more cores take about 60% of the time of one.
# The parts share nothing: every test that writes a model store, a cluster or a mount makes its own under
# its own temporary folder.
#
# Why tests/docs is a part of its own, after Ray's: docs/ray.md's example ends with `ray stop`, which stops
# every Ray process on the machine, so it must never run beside a test that holds a Ray cluster (tests/ray,
# tests/bertscore's Ray engine run); and the Ray pages' Python examples start Ray inside the pytest process,
# which a later driver of the loopback cluster in the same process does not survive. So queue B runs the Ray
# parts, then tests/docs, then the rest, each in its own process, and queue A holds no test that starts Ray.
#
# So that a hang is never a silent timeout: the whole run has a budget (SIMKERNEL_TEST_BUDGET_S, 3,600 s by
# default, counted from the start, so that it ends well inside CI's 90 minutes together with the set-up; the
# suite takes 17 minutes on the 2-core build machine). A part still running at the deadline prints every
# thread's stack (SIGUSR1, registered in tests/conftest.py), then gets SIGINT and prints its summary; a part
# not started by then is not started. A stop from outside (CI's limit, Ctrl-C) does the same to every running part
# and prints what they wrote. Each part's log is printed as soon as the part ends, with its 25 slowest tests.
#
# pytest's "no tests collected" (exit 5) is a failure, never a pass.
# Usage: scripts/run_tests.sh [python] [extra pytest args, given to every part]
# One process over everything but tests/docs, then tests/docs: SIMKERNEL_TEST_SERIAL=1 scripts/run_tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
shift || true
EXTRA=("$@")
BUDGET_S=${SIMKERNEL_TEST_BUDGET_S:-3600}
# torch's OpenMP threads (the bert_score and sentence-transformers references) spin while they wait, taking
# the cores the other queue needs: a bert_score reference run took 27 s beside a copy of itself, 13 s with
# PASSIVE. It changes no result.
export OMP_WAIT_POLICY=PASSIVE

if [ "${SIMKERNEL_TEST_SERIAL:-0}" = 1 ]; then  # one process, then tests/docs in its own (see above)
    set +e
    "$PY" -m pytest tests --ignore=tests/docs "${EXTRA[@]}"
    rc=$?
    "$PY" -m pytest tests/docs "${EXTRA[@]}"
    docs_rc=$?
    set -e
    if [ "$rc" -eq 5 ] || [ "$docs_rc" -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi
    if [ "$rc" -ne 0 ]; then exit "$rc"; fi
    exit "$docs_rc"
fi

# the parts, in two queues of about equal time (queue A: the command line, kernels, metrics, plugin,
# server, Spark, components, integrations; queue B: Ray's parts, the documentation, then the rest)
QUEUE_A=("cli-to-spark:tests/cli tests/calibration tests/kernels tests/metrics tests/pytest_plugin tests/scoring tests/serve tests/spark tests/components tests/integrations tests/test_cpu_budget.py tests/test_layout.py tests/test_package.py")
QUEUE_B=("ray:tests/bertscore tests/ray" "docs:tests/docs" "runtime:tests/runtime tests/stats tests/peer")
# every test folder and top-level test file must be in a part: a new one is never silently left out
# shellcheck disable=SC2086  # a part's folders are words
all_parts=" $(for p in "${QUEUE_A[@]}" "${QUEUE_B[@]}"; do printf '%s ' ${p#*:}; done)"
for path in tests/*/ tests/test_*.py; do
    path=${path%/}
    [ "$path" = tests/data ] || [ "$path" = tests/__pycache__ ] && continue
    case "$all_parts" in
    *" $path "*) ;;
    *) echo "error: $path is in no part of scripts/run_tests.sh; add it to a part of QUEUE_A or QUEUE_B" >&2; exit 1 ;;
    esac
done

LOGS=$(mktemp -d "${TMPDIR:-/tmp}/simkernel-tests.XXXXXX")
started=$(date +%s)

run_part() {  # run_part NAME FOLDER...: pytest on the folders until the deadline; output in $LOGS/NAME.log
    local name=$1 pid watchdog rc left
    shift
    left=$((started + BUDGET_S - $(date +%s)))
    if [ "$left" -le 0 ]; then
        echo "error: the $name part was not started: the test run passed its budget of $BUDGET_S s (SIMKERNEL_TEST_BUDGET_S)" >&2
        echo 1 >"$LOGS/$name.rc"
        return
    fi
    set +e
    : >"$LOGS/$name.log"  # appended to by pytest and by the watchdog below
    SIMKERNEL_TEST_STACKS="$LOGS/$name.log" "$PY" -m pytest "$@" "${EXTRA[@]}" -p no:cacheprovider --durations=25 --basetemp="$LOGS/tmp-$name" \
        >>"$LOGS/$name.log" 2>&1 &
    pid=$!
    echo "$pid" >"$LOGS/$name.pid"
    (  # the watchdog: one-second sleeps, so that killing it leaves no long sleep behind
        for ((waited = 0; waited < left; waited++)); do sleep 1; done
        echo "error: the test run passed its budget of $BUDGET_S s (SIMKERNEL_TEST_BUDGET_S) in the $name part: its threads' stacks follow, then its summary" >>"$LOGS/$name.log"
        kill -USR1 "$pid" 2>/dev/null
        sleep 5
        kill -INT "$pid" 2>/dev/null
        for ((waited = 0; waited < 120; waited++)); do sleep 1; done
        kill -KILL "$pid" 2>/dev/null
    ) >/dev/null 2>&1 &
    watchdog=$!
    wait "$pid"
    rc=$?
    kill "$watchdog" 2>/dev/null
    wait "$watchdog" 2>/dev/null
    rm -f "$LOGS/$name.pid"
    echo "$rc" >"$LOGS/$name.rc"
    {
        echo "===== pytest, part $name: ${*} (exit status $rc, $(($(date +%s) - started)) s since the start) ====="
        cat "$LOGS/$name.log"
    } | (flock 9; cat) 9>"$LOGS/print.lock"
    set -e
}

run_queue() {  # run_queue "NAME:FOLDERS" ...: the parts one after another
    local part
    for part in "$@"; do
        # shellcheck disable=SC2086  # the folders are words
        run_part "${part%%:*}" ${part#*:}
    done
}

stop_from_outside() {  # CI's limit or Ctrl-C: every running part prints its stacks and summary, then its log
    trap - TERM INT
    echo "error: the test run was stopped from outside after $(($(date +%s) - started)) s; the running parts' stacks and logs follow" >&2
    kill "${queue_a:-}" "${queue_b:-}" 2>/dev/null  # no further part starts
    for pidfile in "$LOGS"/*.pid; do
        [ -e "$pidfile" ] && kill -USR1 "$(cat "$pidfile")" 2>/dev/null
    done
    sleep 3
    for pidfile in "$LOGS"/*.pid; do
        [ -e "$pidfile" ] && kill -INT "$(cat "$pidfile")" 2>/dev/null
    done
    sleep 10
    for pidfile in "$LOGS"/*.pid; do
        [ -e "$pidfile" ] || continue
        name=$(basename "$pidfile" .pid)
        echo "===== pytest, part $name, stopped from outside ====="
        cat "$LOGS/$name.log"
    done
    exit 1
}
trap stop_from_outside TERM INT
trap 'rm -rf "$LOGS"' EXIT

run_queue "${QUEUE_A[@]}" &
queue_a=$!
run_queue "${QUEUE_B[@]}" &
queue_b=$!
wait "$queue_a" "$queue_b" || true

status=0
for part in "${QUEUE_A[@]}" "${QUEUE_B[@]}"; do
    name=${part%%:*}
    rc=$(cat "$LOGS/$name.rc" 2>/dev/null || echo missing)
    echo "part $name: exit status $rc"
    if [ "$rc" = 5 ]; then echo "error: pytest collected no tests in the $name part" >&2; fi
    if [ "$rc" != 0 ]; then status=1; fi
done
echo "===== every part done in $(($(date +%s) - started)) s (exit status $status) ====="
exit "$status"
