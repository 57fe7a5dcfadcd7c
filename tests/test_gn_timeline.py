"""benchmarks/experiments/gn_timeline.py: the stamps gn_timeline.patch prints, split into launches and phases."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "experiments"))
import gn_timeline  # noqa: E402

# two launches of two CTAs (ns: start, copy landed, statistics done, barrier passed, merged, end), printf's order
LOG = """gntl 1 1100 3000 5200 6000 6400 12500
gntl 0 1000 3000 5000 6000 6500 12000
gntl 0 20000 23000 25000 26000 26500 32000
some other line
gntl 1 20100 23100 26100 27000 27500 32600
"""


def test_a_cta_seen_again_starts_the_next_launch():
    found = gn_timeline.launches(LOG)
    assert [sorted(launch) for launch in found] == [[0, 1], [0, 1]]
    assert found[1][1] == [20100, 23100, 26100, 27000, 27500, 32600]


def test_phases_of_the_last_launch_in_microseconds():
    rows = gn_timeline.phases(gn_timeline.launches(LOG)[-1])
    assert rows["start"] == [0.0, 0.1] and rows["copy"] == [3.0, 3.0] and rows["statistics"] == [2.0, 3.0]
    assert rows["barrier"] == [1.0, 0.9]
    assert rows["merge"] == [0.5, 0.5] and rows["normalize"] == [5.5, 5.1] and rows["end"] == [12.0, 12.6]
    text = gn_timeline.report("x", LOG)
    assert text.startswith("x: launch 2 of 2, 2 CTAs, span 12.60 us") and "| statistics | 2.00 | 2.50 | 3.00 |" in text
    assert gn_timeline.report("y", "nothing").startswith("y: no stamps")
