#!/usr/bin/env bash
# `make sanitize`: builds the native kernel with -fsanitize=address,undefined into a separate copy of the
# package (build/sanitize; the editable install keeps its optimised extension) and runs the kernel tests
# against it, with the sanitizer runtimes preloaded into the (uninstrumented) interpreter. Any
# AddressSanitizer or UndefinedBehaviorSanitizer report stops the run with a non-zero exit.
# Usage: scripts/sanitize.sh [python] [extra pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
# everything this run prints, dated, also into build/sanitize/last-run.log (its record: the docs state what is checked, not when)
mkdir -p "$(dirname build/sanitize/last-run.log)"
exec > >(tee build/sanitize/last-run.log) 2>&1
echo "== $0 $*: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -m), $(nproc) cores"
PY=${1:-.venv/bin/python}
shift || true
case "$PY" in /*) ;; */*) PY="$PWD/$PY" ;; esac  # the build runs in another folder
OUT=build/sanitize
rm -rf "$OUT"
mkdir -p "$OUT/src"
cp -r setup.py pyproject.toml csrc "$OUT/"
cp -r src/simkernel "$OUT/src/"
find "$OUT/src" \( -name '*.so' -o -name '_cosine.c' -o -name '_attention.c' -o -name '_bootstrap.c' -o -name __pycache__ \) -prune -exec rm -rf {} +
(cd "$OUT" && SIMKERNEL_SANITIZE=1 "$PY" setup.py -q build_ext --inplace >/dev/null)
SO=$(ls "$OUT"/src/simkernel/_cosine*.so)
# the build must really be instrumented: it links the sanitizer runtimes (ldd's whole output is read first:
# `ldd | grep -q` under pipefail fails at random when grep exits before ldd has written everything)
for EXT in "$SO" "$(ls "$OUT"/src/simkernel/_attention*.so)" "$(ls "$OUT"/src/simkernel/_bootstrap*.so)"; do
    LINKED=$(ldd "$EXT")
    grep -q libasan <<<"$LINKED" || { echo "error: $EXT is not linked against libasan" >&2; exit 1; }
    grep -q libubsan <<<"$LINKED" || { echo "error: $EXT is not linked against libubsan" >&2; exit 1; }
done
ASAN=$(gcc -print-file-name=libasan.so)
UBSAN=$(gcc -print-file-name=libubsan.so)
# detect_leaks=0: CPython itself keeps memory to exit on purpose; every other ASan check stays on.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# and it is the one the tests import
LOADED=$(LD_PRELOAD="$ASAN $UBSAN" ASAN_OPTIONS=detect_leaks=0 PYTHONPATH="$OUT/src" "$PY" -c \
    'import simkernel._cosine as c; print(c.__file__)')
[ "$(realpath "$LOADED")" = "$(realpath "$SO")" ] || { echo "error: tests would import $LOADED, not $SO" >&2; exit 1; }
# the GIL-release test times a slow instrumented loop against a thread; its point is not memory safety
LD_PRELOAD="$ASAN $UBSAN" PYTHONPATH="$OUT/src" SIMKERNEL_SANITIZED=1 \
    "$PY" -m pytest tests/kernels tests/stats/test_bootstrap_kernel.py tests/stats/test_intervals.py -q -p no:cacheprovider \
    -k "not gil_is_released" "$@"
