"""Rewrite simkernel's per-row int8 graph so each activation's quantisation chain (Abs, ReduceMax, Max,
Mul, Shape, ConstantOfShape, QuantizeLinear: seven operators) becomes one ``ai.simkernel.RowQuantize``
custom operator (row_quantize_op.c). An experiment, not used by simkernel: see README.md here.

    python use_row_quantize_op.py BUNDLE/model_int8.onnx /tmp/model_rq.onnx
"""

from __future__ import annotations

import argparse

import onnx
from onnx import helper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src")
    parser.add_argument("dst")
    args = parser.parse_args()
    model = onnx.load(args.src)
    graph = model.graph
    chains = {  # "simkernel_q/x<i>/" -> the float tensor it quantises
        n.name.rsplit("/", 1)[0] + "/": n.input[0]
        for n in graph.node
        if n.op_type == "QuantizeLinear" and n.name.startswith("simkernel_q/x")
    }
    nodes, replaced = [], set()
    for node in graph.node:
        prefix = next((p for p in chains if node.name.startswith(p)), None)
        if prefix is None:
            nodes.append(node)
        elif prefix not in replaced:
            nodes.append(
                helper.make_node(
                    "RowQuantize",
                    [chains[prefix]],
                    [prefix + "x_uint8", prefix + "x_scale"],
                    name=prefix + "RowQuantize",
                    domain="ai.simkernel",
                )
            )
            replaced.add(prefix)
    del graph.node[:]
    graph.node.extend(nodes)
    model.opset_import.append(helper.make_opsetid("ai.simkernel", 1))
    onnx.save(model, args.dst, save_as_external_data=True, location=args.dst.rsplit("/", 1)[-1] + "_data")
    print(f"{len(replaced)} quantisation chains replaced")


if __name__ == "__main__":
    main()
