"""The two ways x86-64 CPUs compute simkernel's int8 matrix products, on any x86-64 CPU.

simkernel's int8 graph multiplies uint8 activations (zero point 128) by int8 weights with onnxruntime's
``MatMulIntegerToFloat``. onnxruntime's MLAS picks the kernel by the CPU it runs on, and the kernels do not
give the same integers:

``"exact"``
    AVX512-VNNI, AVX-VNNI and AMX (VPDPBUSD, TDPBUSD), as on Intel Cascade Lake and later Xeons and AMD
    Zen 4 and later: every u8 x s8 product is summed in 32 bits.
``"pair-saturating"``
    AVX2 (AMD Zen 2 / Zen 3, Intel Haswell to Comet Lake) and AVX-512 without VNNI (Intel Skylake-SP):
    VPMADDUBSW adds the products of two adjacent k into a signed 16-bit value with saturation, then
    VPMADDWD widens those to 32 bits (MLAS's ``MultiplyAccumulateCellU8S8Avx512Core`` / the AVX2 kernel).
    A pair whose raw u8 x s8 sum leaves [-32768, 32767] is clipped.

onnxruntime has no option that turns VNNI off (``session.x64quantprecision`` goes the other way: it makes
x64 CPUs without VNNI use a slower u8 x u8 kernel without the overflow), so a test on one CPU cannot run
the other CPU's kernel. :func:`emulated_bundle` instead rewrites the int8 graph so that every product is
computed in the named way with operators whose results do not depend on the CPU: the exact integer sum
by float32 matrix products over chunks of K short enough that every partial sum is an exact float32
integer, then int32; for the pair-saturating kind, plus what the 16-bit saturation clips off each pair
(int32 arithmetic on the only pairs of weights that can overflow: same sign and
``|w[2j]| + |w[2j+1]| >= 129``, since raw activations are at most 255). The rest of the graph (fp32
attention, layer norms, the per-row scales) is the bundle's own, so the emulated model gives what that kind
of CPU gives, whatever CPU runs it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

KERNELS = ("exact", "pair-saturating")
INT16_MIN, INT16_MAX = -32768, 32767
U8_MAX = 255


def overflow_pairs(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pair index j, output column n) of the weight pairs ``(w[2j, n], w[2j+1, n])`` whose 16-bit pair sum
    ``a0 * w[2j, n] + a1 * w[2j+1, n]`` can leave the int16 range for some raw activations 0 <= a <= 255."""
    w = weights.astype(np.int64)
    if w.shape[0] % 2:
        w = np.concatenate([w, np.zeros((1, w.shape[1]), np.int64)])  # MLAS pads K with zeros
    even, odd = w[0::2], w[1::2]
    same_sign = np.sign(even) * np.sign(odd) > 0
    reach = U8_MAX * (np.abs(even) + np.abs(odd))
    can_overflow = same_sign & ((reach > INT16_MAX) | (-reach < INT16_MIN))
    return np.nonzero(can_overflow)


def pair_saturated_matmul(a_u8: np.ndarray, w_s8: np.ndarray, a_zero_point: int) -> np.ndarray:
    """numpy reference of the pair-saturating kernel: ``sum_j sat16(a[2j] w[2j] + a[2j+1] w[2j+1])`` over raw
    uint8 ``a`` (rows) and int8 ``w`` (K, N), minus the zero-point terms, as int64 (rows, N)."""
    a = a_u8.astype(np.int64)
    w = w_s8.astype(np.int64)
    if w.shape[0] % 2:
        a = np.concatenate([a, np.zeros((a.shape[0], 1), np.int64)], axis=1)
        w = np.concatenate([w, np.zeros((1, w.shape[1]), np.int64)])
    pairs = a[:, 0::2, None] * w[None, 0::2, :] + a[:, 1::2, None] * w[None, 1::2, :]
    raw = np.clip(pairs, INT16_MIN, INT16_MAX).sum(axis=1)
    return raw - a_zero_point * w.sum(axis=0)[None, :]


FP32_EXACT_K = 1024  # 1024 * 127 * 127 < 2**24: every partial sum of a chunk is an exact float32 integer


def _emulate_node(node, init: dict, kernel: str, prefix: str):
    """The nodes and initializers that replace one MatMulIntegerToFloat node: the int32 sum of the products
    as ``kernel`` forms it, then ``float(sum) * a_scale * b_scale (+ bias)`` as MLAS writes its output."""
    from onnx import TensorProto, helper, numpy_helper

    a, b, a_scale, b_scale, *rest = node.input
    a_zp, b_zp, bias = (list(rest) + ["", "", ""])[:3]
    weights = numpy_helper.to_array(init[b])
    if b_zp and np.any(numpy_helper.to_array(init[b_zp]) != 0):
        raise ValueError(f"{node.name}: weights with a zero point are not emulated")
    zero_point = int(numpy_helper.to_array(init[a_zp])) if a_zp else 0
    k, n = weights.shape
    (out,) = node.output

    def name(suffix: str) -> str:
        return f"{prefix}/{suffix}"

    def const(suffix: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name(suffix)))
        return name(suffix)

    inits: list = []
    nodes = [
        helper.make_node("Cast", [a], [name("a_f32")], to=TensorProto.FLOAT),
        helper.make_node(
            "Sub", [name("a_f32"), const("a_zp", np.array(zero_point, np.float32))], [name("a_c")]
        ),
    ]
    # the exact sum: float32 matrix products over chunks of K small enough to stay exact, added in int32
    chunk_sums = []
    for i, lo in enumerate(range(0, k, FP32_EXACT_K)):
        hi = min(lo + FP32_EXACT_K, k)
        part = name(f"a_c{i}")
        nodes.append(
            helper.make_node(
                "Slice",
                [name("a_c"), const(f"lo{i}", np.array([lo])), const(f"hi{i}", np.array([hi])),
                 const(f"slice_axis{i}", np.array([-1]))],
                [part],
            )
        )  # fmt: skip
        w_part = const(f"w{i}", weights[lo:hi].astype(np.float32))
        nodes += [
            helper.make_node("MatMul", [part, w_part], [name(f"sum{i}_f32")]),
            helper.make_node("Cast", [name(f"sum{i}_f32")], [name(f"sum{i}")], to=TensorProto.INT32),
        ]
        chunk_sums.append(name(f"sum{i}"))
    total = chunk_sums[0]
    for i, other in enumerate(chunk_sums[1:]):
        nodes.append(helper.make_node("Add", [total, other], [name(f"acc{i}")]))
        total = name(f"acc{i}")
    if kernel == "pair-saturating":
        pair, column = overflow_pairs(weights)
        order = np.argsort(column, kind="stable")
        pair, column = pair[order], column[order]
        w = np.concatenate([weights.astype(np.int32), np.zeros((k % 2, n), np.int32)])
        ends = np.cumsum(np.bincount(column, minlength=n))
        starts = ends - np.bincount(column, minlength=n)
        # pairs along axis 0 and the rows (batch x sequence) along axis 1: Gather copies whole rows
        nodes += [
            helper.make_node("Cast", [a], [name("a_i32")], to=TensorProto.INT32),
            helper.make_node("Reshape", [name("a_i32"), const("rows_k", np.array([-1, k]))], [name("a_2d")]),
            helper.make_node("Transpose", [name("a_2d")], [name("a_t")], perm=[1, 0]),
            helper.make_node(
                "Pad",
                [name("a_t"), const("pad", np.array([0, k % 2])), "", const("axis0", np.array([0]))],
                [name("a_even_k")],
            ),  # an odd K gets MLAS's zero padding
            helper.make_node("Gather", [name("a_even_k"), const("k_even", 2 * pair)], [name("a0")], axis=0),
            helper.make_node(
                "Gather", [name("a_even_k"), const("k_odd", 2 * pair + 1)], [name("a1")], axis=0
            ),
            helper.make_node(
                "Mul", [name("a0"), const("w_pair0", w[2 * pair, column][:, None])], [name("p0")]
            ),
            helper.make_node(
                "Mul", [name("a1"), const("w_pair1", w[2 * pair + 1, column][:, None])], [name("p1")]
            ),
            helper.make_node("Add", [name("p0"), name("p1")], [name("pair")]),
            helper.make_node(
                "Clip",
                [
                    name("pair"),
                    const("int16_min", np.array(INT16_MIN, np.int32)),
                    const("int16_max", np.array(INT16_MAX, np.int32)),
                ],
                [name("sat")],
            ),  # fmt: skip
            helper.make_node("Sub", [name("sat"), name("pair")], [name("clipped")]),
            # per output column: the clipped amounts of its pairs (sorted by column) summed by a running sum
            helper.make_node("CumSum", [name("clipped"), name("axis0")], [name("running")]),
            helper.make_node(
                "Pad",
                [name("running"), const("pad1", np.array([1, 0])), "", name("axis0")],
                [name("running0")],
            ),
            helper.make_node("Gather", [name("running0"), const("ends", ends)], [name("upto_end")], axis=0),
            helper.make_node(
                "Gather", [name("running0"), const("starts", starts)], [name("upto_start")], axis=0
            ),
            helper.make_node("Sub", [name("upto_end"), name("upto_start")], [name("saturation_t")]),
            helper.make_node("Transpose", [name("saturation_t")], [name("saturation_2d")], perm=[1, 0]),
            helper.make_node("Shape", [total], [name("out_shape")]),
            helper.make_node("Reshape", [name("saturation_2d"), name("out_shape")], [name("saturation")]),
            helper.make_node("Add", [total, name("saturation")], [name("total")]),
        ]
        total = name("total")
    nodes += [
        helper.make_node("Cast", [total], [name("total_f32")], to=TensorProto.FLOAT),
        helper.make_node("Mul", [a_scale, b_scale], [name("scale")]),
        helper.make_node("Mul", [name("total_f32"), name("scale")], [name("scaled") if bias else out]),
    ]
    if bias:
        nodes.append(helper.make_node("Add", [name("scaled"), bias], [out]))
    return nodes, inits


def _load_with_weights(path: Path):
    """The ONNX model at ``path`` with its external-data initializers read in (by hand: onnx refuses data
    files with several hard links, and a model store may hard-link identical files)."""
    import onnx
    from onnx import TensorProto

    model = onnx.load(str(path), load_external_data=False)
    for tensor in model.graph.initializer:
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        info = {entry.key: entry.value for entry in tensor.external_data}
        with open(Path(path).parent / info["location"], "rb") as handle:
            handle.seek(int(info.get("offset", 0)))
            tensor.raw_data = handle.read(int(info["length"])) if "length" in info else handle.read()
        del tensor.external_data[:]
        tensor.data_location = TensorProto.DEFAULT
    return model


def emulate_int8_graph(src: Path, dst: Path, kernel: str) -> int:
    """Write the int8 ONNX graph ``src`` to ``dst`` with every ``MatMulIntegerToFloat`` computed as
    ``kernel`` (one of :data:`KERNELS`) computes it; returns how many nodes were replaced."""
    import onnx

    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    model = _load_with_weights(src)
    init = {t.name: t for t in model.graph.initializer}
    nodes, replaced = [], 0
    for node in model.graph.node:
        if node.op_type != "MatMulIntegerToFloat":
            nodes.append(node)
            continue
        new_nodes, new_inits = _emulate_node(node, init, kernel, f"x86_int8/{replaced}")
        nodes += new_nodes
        model.graph.initializer.extend(new_inits)
        replaced += 1
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    used = {name for node in nodes for name in node.input}
    kept = [t for t in model.graph.initializer if t.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    dst.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(dst), save_as_external_data=True, location=f"{dst.name}_data")
    return replaced


def emulated_bundle(src: Path, dst: Path, kernel: str) -> Path:
    """A copy of the bundle folder ``src`` at ``dst`` whose ``model_int8.onnx`` computes its int8 products
    as ``kernel`` does."""

    def write(graph: Path, out: Path) -> None:
        if emulate_int8_graph(graph, out, kernel) == 0:
            raise ValueError(f"{graph} has no MatMulIntegerToFloat node to emulate")

    return bundle_with_int8_graph(src, dst, write)


def bundle_with_int8_graph(src: Path, dst: Path, write) -> Path:
    """A copy of the bundle folder ``src`` at ``dst`` whose ``model_int8.onnx`` is what ``write(graph, out)``
    writes to ``out`` (with or without an ``out.name + "_data"`` file) from the bundle's int8 ``graph``;
    the manifest's checksums of the rewritten files are updated, so the bundle loads."""
    from simkernel.runtime.store.manifest import file_sha256

    src, dst = Path(src), Path(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("model_int8.onnx*", ".*"))
    write(src / "model_int8.onnx", dst / "model_int8.onnx")
    manifest_path = dst / "simkernel.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    files = manifest["files"]
    files.pop("model_int8.onnx_data", None)
    entry = {k: v for k, v in files.get("model_int8.onnx", {}).items() if k != "external_data"}
    for name in ("model_int8.onnx", "model_int8.onnx_data"):
        path = dst / name
        if path.is_file():
            files[name] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
    files["model_int8.onnx"] = {**entry, **files["model_int8.onnx"]}
    if (dst / "model_int8.onnx_data").is_file():
        files["model_int8.onnx"]["external_data"] = "model_int8.onnx_data"
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    return dst


def dynamic_int8_bundle(src: Path, dst: Path) -> Path:
    """A copy of the bundle folder ``src`` at ``dst`` whose ``model_int8.onnx`` is onnxruntime's dynamic int8
    of the bundle's fp32 graph (one activation scale per tensor, over the whole batch): the regression the
    int8 bounds must catch."""
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    def write(graph: Path, out: Path) -> None:
        # from the copy's fp32 graph, never the store's: quantize_dynamic writes model-inferred.onnx beside
        # its input, and onnx refuses external data with several hard links (a concurrent test may link
        # the store's files)
        fp32 = out.parent / "model.onnx"
        quantize_dynamic(
            str(fp32),
            str(out),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul"],
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
        (out.parent / "model-inferred.onnx").unlink(missing_ok=True)

    return bundle_with_int8_graph(src, dst, write)


VNNI_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


def this_cpu_kernel(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The kernel onnxruntime picks on this x86-64 CPU, from its flags: ``"exact"`` with AVX512-VNNI,
    AVX-VNNI or AMX-INT8, ``"pair-saturating"`` with AVX2 and none of those; None for an x86-64 CPU without
    AVX2 (onnxruntime's SSE kernels, not emulated here) and where the flags cannot be read (not Linux, not
    x86-64)."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    line = next((x for x in text.splitlines() if x.startswith("flags")), None)
    if line is None:
        return None
    flags = set(line.split(":", 1)[1].split())
    if flags & set(VNNI_FLAGS):
        return "exact"
    return "pair-saturating" if "avx2" in flags else None
