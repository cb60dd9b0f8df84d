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

cosine_sources = ["csrc/dispatch.c", "csrc/parallel.c", "csrc/serial.c"]
define_macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
# Each SIMD file carries its own target attributes, so a baseline build contains every variant and the
# dispatcher picks one at import time by CPU detection (csrc/dispatch.c).
if machine in ("x86_64", "amd64", "i686", "x86"):
    cosine_sources += ["csrc/haswell.c", "csrc/skylake.c"]
    define_macros.append(("SK_HAVE_X86", "1"))
elif machine in ("aarch64", "arm64"):
    cosine_sources += ["csrc/neon.c"]
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


def native_module(
    name: str, sources: list[str], depends: list[str], extra: tuple[str, ...] = ()
) -> Extension:
    """``simkernel.<name>``: its Cython layer ``src/simkernel/<name>.pyx`` over the C files of csrc/, with the
    flags above (and ``extra`` ones, where the compiler takes them)."""
    return Extension(
        f"simkernel.{name}",
        sources=[f"src/simkernel/{name}.pyx", *sources],
        include_dirs=["csrc", np.get_include()],
        define_macros=define_macros,
        depends=depends,
        extra_compile_args=extra_compile_args + ([] if sys.platform == "win32" else list(extra)),
        extra_link_args=extra_link_args,
    )


modules = [
    # the cosine kernel's backends, picked at run time (csrc/dispatch.c)
    native_module(
        "_cosine",
        cosine_sources,
        ["src/simkernel/_cosine.pxd", "csrc/simkernel.h", "csrc/drivers.h", "csrc/parallel.h"],
    ),
    # The attention core of packed passes (csrc/attention.h): its x86 code carries its own target attributes;
    # on other machines it reports itself unsupported and the passes keep onnxruntime's attention.
    native_module("_attention", ["csrc/attention.c"], ["csrc/attention.h"]),
    # The bootstrap's sums (csrc/bootstrap.h): plain C, the same bits on every machine, for
    # simkernel.stats.intervals; no FMA contraction whatever the compiler's default
    native_module("_bootstrap", ["csrc/bootstrap.c"], ["csrc/bootstrap.h"], ("-ffp-contract=off",)),
]

setup(
    # the C file Cython generates is a build intermediate: the wheel ships the compiled extension (and the
    # .pyx/.pxd/.pyi of package-data), the sdist regenerates it
    exclude_package_data={"simkernel": [f"{module.name.split('.')[1]}.c" for module in modules]},
    ext_modules=cythonize(
        modules,
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
