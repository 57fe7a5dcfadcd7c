#!/usr/bin/env python3
"""Validate a plugin engine against ONNX Runtime with Polygraphy: see trtplugins/validate.py or --help."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from trtplugins.validate import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
