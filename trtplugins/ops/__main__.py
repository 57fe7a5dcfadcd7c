"""python -m trtplugins.ops [--write]: the schema JSON as the built library declares it (printed,
or written to trtplugins/schema.json)."""

from __future__ import annotations

import subprocess
import sys

from ..loader import find_library
from . import SCHEMA_PATH


def generate() -> str:
    """The schema JSON as the built library declares it (needs a native build)."""
    for major in (11, 10):
        program = find_library(f"trtplugins_trt{major}_host_checks")[0]
        if program is not None:
            return subprocess.run([str(program), "schema"], check=True, capture_output=True, text=True).stdout
    raise FileNotFoundError("no trtplugins_trt<N>_host_checks built: build the native part first (pip install -e .)")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        SCHEMA_PATH.write_text(generate())
        print(f"wrote {SCHEMA_PATH}")
    else:
        print(generate(), end="")
