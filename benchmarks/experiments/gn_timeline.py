"""Where a resident GroupNorm launch's time goes, CTA by CTA: reads the stamps gn_timeline.patch prints (a line
per CTA: `gntl CTA start copy_landed stats_done barrier_passed merged end`, global timer in ns) from gn_launch.py's
output and prints the last launch's phases, min / median / max over its CTAs (us):
    python3 benchmarks/experiments/gn_timeline.py LOG [LOG ...]"""

import statistics
import sys
from pathlib import Path

# copy: the staged range's copy into shared memory (and the shifts' loads) until it landed
PHASES = ("start", "copy", "statistics", "barrier", "merge", "normalize", "end")


def launches(text: str) -> list[dict[int, list[int]]]:
    """Each launch's stamps by CTA (a CTA seen again starts the next launch)."""
    out: list[dict[int, list[int]]] = [{}]
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != len(PHASES) + 1 or parts[0] != "gntl":
            continue
        cta, stamps = int(parts[1]), [int(p) for p in parts[2:]]
        if cta in out[-1]:
            out.append({})
        out[-1][cta] = stamps
    return [launch for launch in out if launch]


def phases(launch: dict[int, list[int]]) -> dict[str, list[float]]:
    """Per CTA: when it started and ended after the first CTA's start, and each phase's length (us)."""
    t0 = min(s[0] for s in launch.values())
    rows: dict[str, list[float]] = {p: [] for p in PHASES}
    for s in launch.values():
        rows["start"].append((s[0] - t0) / 1e3)
        for name, a, b in zip(PHASES[1:-1], s, s[1:]):
            rows[name].append((b - a) / 1e3)
        rows["end"].append((s[-1] - t0) / 1e3)
    return rows


def report(name: str, text: str) -> str:
    found = launches(text)
    if not found:
        return f"{name}: no stamps (was gn_timeline.patch applied?)\n"
    rows = phases(found[-1])
    lines = [f"{name}: launch {len(found)} of {len(found)}, {len(found[-1])} CTAs, "
             f"span {max(rows['end']):.2f} us", "| phase (us) | min | median | max |", "|---|---|---|---|"]
    lines += [f"| {p} | {min(v):.2f} | {statistics.median(v):.2f} | {max(v):.2f} |" for p, v in rows.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(report(Path(path).stem, Path(path).read_text(errors="replace")))
