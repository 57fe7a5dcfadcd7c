#!/usr/bin/env python3
"""Build a TensorRT engine with the trtplugins plugins: see trtplugins/build.py or --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from trtplugins.engine import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
