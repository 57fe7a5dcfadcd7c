#!/usr/bin/env python3
"""Instructions per warp by source line: an ncu per-instruction CSV (`ncu -i R --page source --csv
--print-source sass`) joined with the line table of the library it profiled (cuobjdump -xelf, then
nvdisasm -g: the build has -lineinfo). The kernel is the function whose SASS matches the CSV's
instruction for instruction; warps = the executions of its first instruction. Beside each line, its
share of the warp stall samples (where the warps' time goes; --by samples ranks by it) and the
line's two main stall reasons.

  python3 benchmarks/experiments/sass_lines.py LIB CSV [--top 40] [--by samples]
"""
from __future__ import annotations

import argparse
import collections
import csv
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LINE = re.compile(r'//## File "([^"]+)", line (\d+)')
INSTR = re.compile(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?);")
FUNC = re.compile(r"^\.text\.(\S+):")


def tool(name: str) -> str:
    """CUDA's `name`, else the copy Triton bundles."""
    found = shutil.which(name)
    if not found:
        try:
            import triton
            bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
            found = str(bundled) if bundled.is_file() else None
        except ImportError:
            pass
    if not found:
        sys.exit(f"sass_lines: {name} not found (CUDA's bin, or Triton's bundled copy)")
    return found


def functions(lib: Path) -> dict[str, list[tuple[tuple[str, int] | None, str]]]:
    """Every function of the library's cubins: its instructions, each with the source line it came from."""
    out: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([tool("cuobjdump"), "-xelf", "all", str(lib.resolve())], cwd=tmp, check=True,
                       capture_output=True)
        for cubin in sorted(Path(tmp).glob("*.cubin")):
            text = subprocess.run([tool("nvdisasm"), "-g", "-c", str(cubin)], capture_output=True, text=True).stdout
            name, where = None, None
            for line in text.splitlines():
                if m := FUNC.match(line):
                    name, where = m.group(1), None
                    out[name] = []
                elif name and (m := LINE.search(line)):
                    where = (Path(m.group(1)).name, int(m.group(2)))
                elif name and (m := INSTR.match(line)):
                    out[name].append((where, m.group(1).strip()))
    return out


def opcode(text: str) -> str:
    return next(w for w in text.split() if not w.startswith("@")).split(".")[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lib", type=Path)
    ap.add_argument("csv", type=Path)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--by", choices=("instructions", "samples"), default="instructions")
    a = ap.parse_args()
    rows = list(csv.reader(a.csv.open()))
    head, data = rows[1], rows[2:]
    src, done = head.index("Source"), head.index("Instructions Executed")
    ops = [opcode(r[src]) for r in data]
    fns = functions(a.lib)
    match = [n for n, ins in fns.items() if len(ins) == len(data) and [opcode(t) for _, t in ins] == ops]
    if len(match) != 1:
        sys.exit(f"sass_lines: {len(match)} functions of {a.lib} match the CSV's {len(data)} instructions")
    warps = int(data[0][done] or 0)
    sampled = head.index("Warp Stall Sampling (All Samples)") if "Warp Stall Sampling (All Samples)" in head else None
    reasons = [(i, h[len("stall_"):]) for i, h in enumerate(head) if h.startswith("stall_") and "(" not in h]
    per, samples, why = collections.Counter(), collections.Counter(), collections.defaultdict(collections.Counter)
    for (where, _), r in zip(fns[match[0]], data):
        per[where] += int(r[done] or 0)
        if sampled is not None:
            samples[where] += int(r[sampled] or 0)
            for i, name in reasons:
                why[where][name] += int(r[i] or 0)
    total = max(sum(samples.values()), 1)
    print(f"{rows[0][1]}: {sum(per.values()) / max(warps, 1):.0f} instructions per warp ({warps} warps)"
          + (f", {sum(samples.values())} stall samples" if sampled is not None else ""))
    for where, n in (per if a.by == "instructions" else samples).most_common(a.top):
        text = f"  {where[0]}:{where[1]}" if where else "  ?"
        text += f" {per[where] / max(warps, 1):.1f}"
        if sampled is not None:
            top = ", ".join(f"{k} {v / max(samples[where], 1):.0%}" for k, v in why[where].most_common(2) if v)
            text += f"  {samples[where] / total:.1%} of samples ({top})"
        print(text)


if __name__ == "__main__":
    main()
