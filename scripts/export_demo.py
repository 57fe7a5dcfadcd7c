#!/usr/bin/env python3
"""Write the demo model (trtplugins.demo: a small transformer block, random weights) as ONNX."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clean clone

import onnx  # noqa: E402

from trtplugins.demo import make_model  # noqa: E402
from trtplugins.paths import output_file  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-o", "--output", default="demo.onnx")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=256)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    try:
        output_file(a.output, "-o/--output")
        m = make_model(a.hidden, a.heads, a.ffn, a.layers, a.seed)
    except ValueError as e:  # PathError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        return 2
    onnx.save(m, a.output)
    print(f"wrote {a.output}: {len(m.graph.node)} nodes, input x[batch, seq, {a.hidden}], output y")
    return 0


if __name__ == "__main__":
    sys.exit(main())
