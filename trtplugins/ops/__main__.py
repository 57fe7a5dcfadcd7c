"""python -m trtplugins.ops [--write | --docs]: the schema JSON as the built kernel library declares
it (printed, or written to trtplugins/schema.json); --docs writes docs/ops.md from it."""

from __future__ import annotations

import sys

from .. import kernels
from . import SCHEMA_PATH


def generate() -> str:
    """The schema JSON as the op declarations say (libtrtplugins_kernels.so: trtp_schema)."""
    return kernels.load().trtp_schema().decode()


if __name__ == "__main__":
    if sys.argv[1:] == ["--docs"]:
        from . import docs

        docs.PATH.write_text(docs.render())
        print(f"wrote {docs.PATH}")
    elif sys.argv[1:] == ["--write"]:
        SCHEMA_PATH.write_text(generate())
        print(f"wrote {SCHEMA_PATH}")
    else:
        print(generate(), end="")
