#!/usr/bin/env python3
"""`trtplugins export-models`: export the tiny test models to ONNX (needs torch) (--help says more)."""
import sys

from _command import command

main = command("export-models")

if __name__ == "__main__":
    sys.exit(main())
