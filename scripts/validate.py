#!/usr/bin/env python3
"""`trtplugins validate`: compare an engine or the plugin graph with ONNX Runtime (--help says more)."""
import sys

from _command import command

main = command("validate")

if __name__ == "__main__":
    sys.exit(main())
