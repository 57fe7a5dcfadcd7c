"""Write a small transformer block as ONNX (random weights, onnx.helper only).

x[batch, seq, hidden] -> self-attention -> Add(x) -> LayerNormalization
-> MatMul -> Add(bias) -> GELU (erf form, as torch exports it) -> MatMul
-> Add(bias) -> Add(residual) -> LayerNormalization -> y

The bias+GELU and residual+LayerNorm patterns are what the substitution fuses
into BiasActivation and SkipNorm. batch and seq are dynamic.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def make_model(hidden: int = 64, heads: int = 4, ffn: int = 256, layers: int = 1, seed: int = 0) -> onnx.ModelProto:
    """A `layers`-deep stack of post-LN transformer blocks."""
    if hidden % heads:
        raise ValueError(f"hidden {hidden} not divisible by heads {heads}")
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def w(name, *shape, scale=None):
        scale = scale if scale is not None else 1.0 / math.sqrt(shape[0])
        return const(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    def node(op, ins, name, n_out=1, **attrs):
        outs = [name] if n_out == 1 else [f"{name}_{i}" for i in range(n_out)]
        nodes.append(helper.make_node(op, ins, outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def linear(x, p, n_in, n_out):
        return node("Add", [node("MatMul", [x, w(f"{p}.w", n_in, n_out)], f"{p}/matmul"),
                            w(f"{p}.b", n_out, scale=0.1)], f"{p}/bias")

    def layernorm(x, p):
        g = const(f"{p}.gamma", (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
        b = const(f"{p}.beta", (0.1 * rng.standard_normal(hidden)).astype(np.float32))
        return node("LayerNormalization", [x, g, b], f"{p}/ln", axis=-1, epsilon=1e-5)

    hd = hidden // heads
    const("split_heads", np.array([0, 0, heads, hd], np.int64))
    const("merge_heads", np.array([0, 0, hidden], np.int64))
    const("scale", np.array(1.0 / math.sqrt(hd), np.float32))
    const("sqrt2", np.array(math.sqrt(2.0), np.float32))
    const("one", np.array(1.0, np.float32))
    const("half", np.array(0.5, np.float32))

    x = "x"
    for i in range(layers):
        p = f"block{i}"

        def heads_of(t, perm, n):
            return node("Transpose", [node("Reshape", [t, "split_heads"], f"{p}/{n}/split")], f"{p}/{n}/t", perm=perm)

        q = heads_of(linear(x, f"{p}.q", hidden, hidden), [0, 2, 1, 3], "q")
        k = heads_of(linear(x, f"{p}.k", hidden, hidden), [0, 2, 3, 1], "k")
        v = heads_of(linear(x, f"{p}.v", hidden, hidden), [0, 2, 1, 3], "v")
        s = node("Mul", [node("MatMul", [q, k], f"{p}/qk"), "scale"], f"{p}/scaled")
        a = node("MatMul", [node("Softmax", [s], f"{p}/softmax", axis=-1), v], f"{p}/av")
        a = node("Reshape", [node("Transpose", [a], f"{p}/a/t", perm=[0, 2, 1, 3]), "merge_heads"], f"{p}/merge")
        h = layernorm(node("Add", [linear(a, f"{p}.o", hidden, hidden), x], f"{p}/res1"), f"{p}.ln1")
        f = linear(h, f"{p}.fc1", hidden, ffn)
        erf = node("Erf", [node("Div", [f, "sqrt2"], f"{p}/gelu/div")], f"{p}/gelu/erf")
        g = node("Mul", [node("Mul", [f, node("Add", [erf, "one"], f"{p}/gelu/add")], f"{p}/gelu/mul"), "half"],
                 f"{p}/gelu/mul_half")
        f = linear(g, f"{p}.fc2", ffn, hidden)
        x = layernorm(node("Add", [f, h], f"{p}/res2"), f"{p}.ln2")
    nodes.append(helper.make_node("Identity", [x], ["y"], name="output"))

    io = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "seq", hidden])  # noqa: E731
    graph = helper.make_graph(nodes, "demo_transformer_block", [io("x")], [io("y")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="trtplugins-demo")
    model.ir_version = 8  # readable by older runtimes (ORT >= 1.14, TensorRT 8.6+)
    onnx.checker.check_model(model, full_check=True)
    return model


def main(argv=None, prog: str = "trtplugins export-demo") -> int:
    """`trtplugins export-demo` (scripts/export_demo.py): write the demo model as ONNX."""
    import argparse
    import sys

    from .paths import output_file, write_file

    ap = argparse.ArgumentParser(prog=prog, description="Write the demo model (a small post-LN transformer block, "
                                                        "random weights, x[batch, seq, hidden] -> y) as ONNX.")
    ap.add_argument("-o", "--output", default="demo.onnx", help="the ONNX file to write (default demo.onnx)")
    ap.add_argument("--hidden", type=int, default=64, help="hidden size (default 64)")
    ap.add_argument("--heads", type=int, default=4, help="attention heads, dividing --hidden (default 4)")
    ap.add_argument("--ffn", type=int, default=256, help="feed-forward width (default 256)")
    ap.add_argument("--layers", type=int, default=1, help="blocks stacked (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    a = ap.parse_args(argv)
    try:
        output_file(a.output, "-o/--output")
        m = make_model(a.hidden, a.heads, a.ffn, a.layers, a.seed)
        write_file(a.output, m.SerializeToString(), "-o/--output")
    except ValueError as e:  # PathError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {a.output}: {len(m.graph.node)} nodes, input x[batch, seq, {a.hidden}], output y")
    return 0
