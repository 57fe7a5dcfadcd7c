#!/usr/bin/env python3
"""Compare the SASS of every kernel in two sets of CUDA objects (or libraries): per function, its
instructions and their encodings; the anonymous-namespace hash (it names the source file) is
normalized. A pure move of kernel code must leave every one identical:

  CUOBJDUMP=.../cuobjdump python3 scripts/compare_sass.py OLD_A.o,OLD_B.o NEW_A.o,NEW_B.o

(cuobjdump needs nvdisasm beside it or on PATH; the PyPI wheels nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm carry both.) Exits 1 when a function differs or is missing on one side.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

CUOBJDUMP = os.environ.get("CUOBJDUMP", "cuobjdump")


def _normal(text: str) -> str:
    return re.sub(r"_GLOBAL__N__[0-9a-f_]+", "_GLOBAL__N_", text)


def functions(objs: list[str]) -> dict[str, list[str]]:
    """Function name -> its SASS lines (instruction and encoding), over every object."""
    out: dict[str, list[str]] = {}
    for obj in objs:
        text = subprocess.run([CUOBJDUMP, "-sass", obj], check=True, capture_output=True, text=True).stdout
        name = None
        for line in text.splitlines():
            m = re.match(r"\s*Function : (\S+)", line)
            if m:
                name = _normal(m.group(1))
                out[name] = []
            elif name and re.search(r"/\*[0-9a-f]{4}\*/|/\* 0x", line):
                out[name].append(_normal(line.strip()))
    return out


def main() -> int:
    before, after = (functions(arg.split(",")) for arg in sys.argv[1:3])
    differ = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
    lines = sum(len(v) for v in before.values())
    print(f"{len(before)} functions ({lines} SASS lines) before, {len(after)} after")
    for name in differ[:10]:
        print(f"differs: {name}")
    print("identical" if not differ and before else f"{len(differ)} differ")
    return 1 if differ or not before else 0


if __name__ == "__main__":
    sys.exit(main())
