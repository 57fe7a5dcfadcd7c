#!/usr/bin/env python3
"""Export the tiny test models (random weights, no downloads) to ONNX.

  python scripts/export_models.py OUT_DIR [--kinds bert ...] [--opsets 14 17 20] [--dynamo]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trtplugins.graph import export  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--kinds", nargs="+", default=list(export.KINDS), choices=export.KINDS)
    ap.add_argument("--opsets", nargs="+", type=int, default=[17])
    ap.add_argument("--dynamo", action="store_true", help="use the dynamo exporter (opset >= 18)")
    args = ap.parse_args(argv)
    for kind in args.kinds:
        for opset in args.opsets:
            path = export.export(kind, args.out / f"{kind}_op{opset}{'_dynamo' if args.dynamo else ''}.onnx", opset, args.dynamo)
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
