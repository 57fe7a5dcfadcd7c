#!/usr/bin/env python3
"""`trtplugins substitute`: replace fusable subgraphs of an ONNX model with plugin nodes (--help says more)."""
import sys

from _command import command

main = command("substitute")

if __name__ == "__main__":
    sys.exit(main())
