"""Build description of the native extension only; metadata lives in pyproject.toml.

Environment switches:
  SIMKERNEL_NATIVE=1     add -march=native (non-portable; off by default so wheels run anywhere).
  SIMKERNEL_DEBUG=1      -O0 -g and Cython bounds checks on.
  SIMKERNEL_SANITIZE=1   build with AddressSanitizer/UBSan
                         (run with LD_PRELOAD=$(gcc -print-file-name=libasan.so)).
"""

import os
import platform
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

debug = os.environ.get("SIMKERNEL_DEBUG") == "1"
sanitize = os.environ.get("SIMKERNEL_SANITIZE") == "1"
machine = platform.machine().lower()

sources = ["src/simkernel/_cosine.pyx", "csrc/dispatch.c", "csrc/parallel.c", "csrc/serial.c"]
define_macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
# Each SIMD file carries its own target attributes, so a baseline build contains every variant and the
# dispatcher picks one at import time by CPU detection (csrc/dispatch.c).
if machine in ("x86_64", "amd64", "i686", "x86"):
    sources += ["csrc/haswell.c", "csrc/skylake.c"]
    define_macros.append(("SK_HAVE_X86", "1"))
elif machine in ("aarch64", "arm64"):
    sources += ["csrc/neon.c"]
    define_macros.append(("SK_HAVE_NEON", "1"))

extra_compile_args: list[str] = []
extra_link_args: list[str] = []
if sys.platform != "win32":
    extra_compile_args += ["-std=c11", "-Wall", "-Wextra", "-Wno-unused-function", "-fno-strict-aliasing"]
    extra_compile_args += ["-O0", "-g"] if debug else ["-O3"]
    extra_compile_args.append("-pthread")
    extra_link_args.append("-pthread")
    if os.environ.get("SIMKERNEL_NATIVE") == "1":
        extra_compile_args.append("-march=native")
    if sanitize:
        extra_compile_args += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
        extra_link_args += ["-fsanitize=address,undefined"]

extension = Extension(
    "simkernel._cosine",
    sources=sources,
    include_dirs=["csrc", np.get_include()],
    define_macros=define_macros,
    depends=["src/simkernel/_cosine.pxd", "csrc/simkernel.h", "csrc/drivers.h", "csrc/parallel.h"],
    extra_compile_args=extra_compile_args,
    extra_link_args=extra_link_args,
)

# The attention core of packed passes (csrc/attention.h): its x86 code carries its own target attributes; on
# other machines it reports itself unsupported and the passes keep onnxruntime's attention.
attention = Extension(
    "simkernel._attention",
    sources=["src/simkernel/_attention.pyx", "csrc/attention.c"],
    include_dirs=["csrc", np.get_include()],
    define_macros=define_macros,
    depends=["csrc/attention.h"],
    extra_compile_args=extra_compile_args,
    extra_link_args=extra_link_args,
)

# The bootstrap's sums (csrc/bootstrap.h): plain C, the same on every machine, for simkernel.stats.intervals.
bootstrap = Extension(
    "simkernel._bootstrap",
    sources=["src/simkernel/_bootstrap.pyx", "csrc/bootstrap.c"],
    include_dirs=["csrc", np.get_include()],
    define_macros=define_macros,
    depends=["csrc/bootstrap.h"],
    # no FMA contraction whatever the compiler's default: the sums round the same on every CPU
    extra_compile_args=extra_compile_args + ([] if sys.platform == "win32" else ["-ffp-contract=off"]),
    extra_link_args=extra_link_args,
)

setup(
    # the C file Cython generates is a build intermediate: the wheel ships the compiled extension (and the
    # .pyx/.pxd/.pyi of package-data), the sdist regenerates it
    exclude_package_data={"simkernel": ["_cosine.c", "_attention.c", "_bootstrap.c"]},
    ext_modules=cythonize(
        [extension, attention, bootstrap],
        language_level=3,
        compiler_directives={
            "boundscheck": debug,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": debug,
            "embedsignature": True,
        },
    ),
)
