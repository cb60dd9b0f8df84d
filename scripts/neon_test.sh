#!/usr/bin/env bash
# The kernel harness (csrc/tests/kernel_harness.c) on every backend: built natively and run on this CPU
# (serial, haswell, skylake on x86-64), then cross-compiled for aarch64 and run under user-mode emulation
# (serial, neon). Installs nothing: a missing cross compiler, aarch64 C library or emulator stops it with the
# apt-get command that provides it. On an aarch64 machine the native run covers neon and nothing is emulated.
#
# Usage: scripts/neon_test.sh [--python]    (without arguments: the Makefile's `make neon`, about 20 s)
#   --python  then also the Python package on aarch64 under emulation (about 5 min; not in CI): a Debian 12
#             arm64 root (python3, python3-numpy, python3-pytest, python3-hypothesis, fetched by
#             `debootstrap --foreign` into build/neon/arm64root, reused on later runs; needs root, debootstrap
#             and the Debian archive), the extension cythonized here (the venv's cython) and cross-compiled
#             against that root's Python and numpy headers, then `pytest tests/kernels` on the emulated
#             python3.11 (its subprocesses emulated too, through a wrapper named as sys.executable).
# Environment: CC (native compiler, default gcc), CROSS_CC (default aarch64-linux-gnu-gcc),
#              QEMU (default qemu-aarch64, else qemu-aarch64-static), AARCH64_SYSROOT (default
#              /usr/aarch64-linux-gnu), HARNESS_ARGS (extra harness arguments, e.g. "--fuzz 5000").
set -euo pipefail
cd "$(dirname "$0")/.."
# everything this run prints, dated, also into build/neon/last-run.log (its record: the docs state what is checked, not when)
mkdir -p "$(dirname build/neon/last-run.log)"
exec > >(tee build/neon/last-run.log) 2>&1
echo "== $0 $*: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -m), $(nproc) cores"

OUT=build/neon
CC=${CC:-gcc}
CROSS_CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
SYSROOT=${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}
APT="apt-get install -y --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
# the flags setup.py builds the extension with, and no warning allowed
CFLAGS=(-std=c11 -O3 -Wall -Wextra -Werror -Wno-unused-function -fno-strict-aliasing -Icsrc)
HARNESS=(csrc/tests/kernel_harness.c csrc/dispatch.c csrc/serial.c)
read -r -a EXTRA <<<"${HARNESS_ARGS:-}"
PYTHON_STAGE=0
for arg in "$@"; do
    case "$arg" in
    --python) PYTHON_STAGE=1 ;;
    *)
        echo "usage: scripts/neon_test.sh [--python]" >&2
        exit 2
        ;;
    esac
done

die() {
    echo "neon_test.sh: $*" >&2
    exit 1
}

mkdir -p "$OUT"
start=$(date +%s)

case "$(uname -m)" in
x86_64 | amd64)
    echo "== native $(uname -m): $CC, backends serial, haswell, skylake (those this CPU runs)"
    "$CC" "${CFLAGS[@]}" -DSK_HAVE_X86=1 "${HARNESS[@]}" csrc/haswell.c csrc/skylake.c -lm -o "$OUT/harness-native"
    "$OUT/harness-native" --require serial "${EXTRA[@]}"
    ;;
aarch64 | arm64)
    echo "== native aarch64: $CC, backends serial, neon"
    "$CC" "${CFLAGS[@]}" -DSK_HAVE_NEON=1 "${HARNESS[@]}" csrc/neon.c -lm -o "$OUT/harness-native"
    "$OUT/harness-native" --require serial --require neon "${EXTRA[@]}"
    echo "== neon_test.sh: passed in $(($(date +%s) - start)) s (native aarch64, nothing emulated)"
    exit 0
    ;;
*)
    echo "== native $(uname -m): $CC, backend serial"
    "$CC" "${CFLAGS[@]}" "${HARNESS[@]}" -lm -o "$OUT/harness-native"
    "$OUT/harness-native" --require serial "${EXTRA[@]}"
    ;;
esac

command -v "$CROSS_CC" >/dev/null ||
    die "the aarch64 cross compiler $CROSS_CC is not installed; install it (as root) with: $APT"
if [[ -z ${QEMU:-} ]]; then
    QEMU=$(command -v qemu-aarch64 || command -v qemu-aarch64-static || true)
fi
[[ -n $QEMU ]] && command -v "$QEMU" >/dev/null ||
    die "the aarch64 emulator (${QEMU:-qemu-aarch64 or qemu-aarch64-static}) is not installed; install it (as root) with: $APT"
[[ -d $SYSROOT/lib ]] ||
    die "the aarch64 C library is missing ($SYSROOT/lib not found); install it (as root) with: $APT"
printf '#include <math.h>\nint main(void) { return 0; }\n' >"$OUT/probe.c"
"$CROSS_CC" "$OUT/probe.c" -o "$OUT/probe" 2>"$OUT/probe.log" ||
    die "$CROSS_CC cannot build a program ($(head -n 3 "$OUT/probe.log" | tr '\n' ' ')); the aarch64 C headers come with: $APT"

echo "== aarch64 under $(basename "$QEMU") ($("$QEMU" --version | head -n 1)): $CROSS_CC, backends serial, neon"
"$CROSS_CC" "${CFLAGS[@]}" -DSK_HAVE_NEON=1 "${HARNESS[@]}" csrc/neon.c -lm -o "$OUT/harness-aarch64"
emu_start=$(date +%s)
"$QEMU" -L "$SYSROOT" "$OUT/harness-aarch64" --require serial --require neon "${EXTRA[@]}"
echo "== harness passed in $(($(date +%s) - start)) s ($(($(date +%s) - emu_start)) s under emulation)"
[[ $PYTHON_STAGE == 1 ]] || exit 0

# ---- --python: the package and tests/kernels on an emulated aarch64 Python ----
ROOT=$PWD/$OUT/arm64root
CYTHON=${CYTHON:-$(command -v .venv/bin/cython || command -v cython || true)}
[[ -n $CYTHON ]] || die "--python needs cython on this machine (make setup provides .venv/bin/cython)"
py_start=$(date +%s)
if [[ ! -e $ROOT/.unpacked ]]; then
    command -v debootstrap >/dev/null || die "--python needs debootstrap; install it (as root) with: apt-get install -y debootstrap"
    [[ $(id -u) == 0 ]] || die "--python needs root (debootstrap unpacks a root filesystem)"
    rm -rf "$ROOT"
    echo "== fetching a Debian 12 arm64 root into $OUT/arm64root"
    debootstrap --foreign --arch=arm64 --variant=minbase \
        --include=python3,python3-numpy,python3-pytest,python3-hypothesis,libpython3.11-dev bookworm "$ROOT" \
        >"$OUT/debootstrap.log" 2>&1 || die "debootstrap failed; its log: $OUT/debootstrap.log"
    # --foreign unpacks the base system only; the rest is unpacked here (no maintainer scripts run)
    for deb in "$ROOT"/var/cache/apt/archives/*.deb; do dpkg-deb -x "$deb" "$ROOT"; done
    # the links update-alternatives would make for numpy's BLAS and LAPACK
    ln -sf blas/libblas.so.3 "$ROOT/usr/lib/aarch64-linux-gnu/libblas.so.3"
    ln -sf lapack/liblapack.so.3 "$ROOT/usr/lib/aarch64-linux-gnu/liblapack.so.3"
    touch "$ROOT/.unpacked"
fi
NUMPY_DIR=$ROOT/usr/lib/python3/dist-packages
PKG=$OUT/pkg
rm -rf "$PKG" && mkdir -p "$PKG"
cp -r src/simkernel "$PKG/simkernel"
rm -f "$PKG"/simkernel/*.so "$PKG"/simkernel/_cosine.c
echo "== building the extension for aarch64 against the root's Python and numpy headers"
# the directives of setup.py; numpy's .pxd from the root (the emulated numpy's C API, not the venv's)
"$CYTHON" -3 -X boundscheck=False -X wraparound=False -X cdivision=True -X initializedcheck=False \
    -X embedsignature=True -I "$NUMPY_DIR" -I csrc -I src src/simkernel/_cosine.pyx -o "$PKG/_cosine.c"
"$CROSS_CC" -shared -fPIC -pthread "${CFLAGS[@]}" -Wno-error -DSK_HAVE_NEON=1 \
    -DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION -I"$ROOT/usr/include/python3.11" -idirafter "$ROOT/usr/include" \
    -I"$NUMPY_DIR/numpy/core/include" "$PKG/_cosine.c" csrc/dispatch.c csrc/parallel.c csrc/serial.c csrc/neon.c \
    -o "$PKG/simkernel/_cosine.cpython-311-aarch64-linux-gnu.so"
# sys.executable: a wrapper that runs the emulated interpreter, so that tests starting `sys.executable`
# get an emulated child too (the machine has no binfmt registration for aarch64)
mkdir -p "$OUT/bin"
printf '#!/bin/sh\nexec %q -L %q -0 %q %q "$@"\n' "$QEMU" "$ROOT" "$PWD/$OUT/bin/python3" "$ROOT/usr/bin/python3.11" \
    >"$OUT/bin/python3"
chmod +x "$OUT/bin/python3"
echo "== pytest tests/kernels on aarch64 under emulation"
PYTHONPATH=$PWD/$PKG "$OUT/bin/python3" -c 'import platform, simkernel.kernels as k
assert platform.machine() == "aarch64", platform.machine()
assert k.available_backends() == ["neon", "serial"], k.available_backends()
import numpy, sys
print(platform.machine(), "Python", sys.version.split()[0], "numpy", numpy.__version__, "backends", k.available_backends())'
PYTHONPATH=$PWD/$PKG "$OUT/bin/python3" -m pytest tests/kernels -q -p no:cacheprovider
echo "== neon_test.sh: passed in $(($(date +%s) - start)) s (the Python stage $(($(date +%s) - py_start)) s)"
