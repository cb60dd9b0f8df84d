#!/usr/bin/env bash
# The kernel harness (csrc/tests/kernel_harness.c) on every backend: built natively and run on this CPU
# (serial, haswell, skylake on x86-64), then cross-compiled for aarch64 and run under user-mode emulation
# (serial, neon). Installs nothing: a missing cross compiler, aarch64 C library or emulator stops it with the
# apt-get command that provides it. On an aarch64 machine the native run covers neon and nothing is emulated.
#
# Usage: scripts/neon_test.sh           (the Makefile's `make neon`)
# Environment: CC (native compiler, default gcc), CROSS_CC (default aarch64-linux-gnu-gcc),
#              QEMU (default qemu-aarch64, else qemu-aarch64-static), AARCH64_SYSROOT (default
#              /usr/aarch64-linux-gnu), HARNESS_ARGS (extra harness arguments, e.g. "--fuzz 5000").
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=build/neon
CC=${CC:-gcc}
CROSS_CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
SYSROOT=${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}
APT="apt-get install -y --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
# the flags setup.py builds the extension with, and no warning allowed
CFLAGS=(-std=c11 -O3 -Wall -Wextra -Werror -Wno-unused-function -fno-strict-aliasing -Icsrc)
HARNESS=(csrc/tests/kernel_harness.c csrc/dispatch.c csrc/serial.c)
read -r -a EXTRA <<<"${HARNESS_ARGS:-}"

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
echo "== neon_test.sh: passed in $(($(date +%s) - start)) s ($(($(date +%s) - emu_start)) s under emulation)"
