#!/usr/bin/env python3
"""`trtplugins export-demo`: write the demo model as ONNX (--help says more)."""
import sys

from _command import command

main = command("export-demo")

if __name__ == "__main__":
    sys.exit(main())
