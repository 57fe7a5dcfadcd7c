"""benchmarks/experiments/ptxas_spills.py: ptxas -v's lines read per kernel, and the archs the library ships."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "experiments"))
import ptxas_spills  # noqa: E402

LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1aPf' for 'sm_100'
ptxas info    : Function properties for _Z1aPf
    0 bytes stack frame, 400 bytes spill stores, 368 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers
ptxas info    : Compiling entry function '_Z1bPf' for 'sm_90a'
ptxas info    : Function properties for _Z1bPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 54 registers, used 1 barriers, 256 bytes smem
"""


def test_each_kernel_gets_its_registers_and_spills():
    got = ptxas_spills.parse(LOG)
    assert got == [{"kernel": "_Z1aPf", "arch": "100", "registers": 128, "spill_stores": 400, "spill_loads": 368},
                   {"kernel": "_Z1bPf", "arch": "90", "registers": 54, "spill_stores": 0, "spill_loads": 0}]


def test_the_default_archs_are_cmakes_real_ones():
    archs = ptxas_spills.default_archs()
    assert "90" in archs and "75" in archs and all(a.isdigit() for a in archs)
    assert len(archs) == len(set(archs))
