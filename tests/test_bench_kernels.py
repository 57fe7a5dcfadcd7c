"""scripts/bench_timing.py (bench_kernels.py's measuring): the check that ours computes what the
eager chain does before it is timed."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs torch (the benchmark's tensors)")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import bench_timing as bk  # noqa: E402


def test_outputs_within_a_few_units_in_the_last_place_match():
    want = torch.linspace(-6, 6, 1001).to(torch.float16)
    got = (want.float() * (1 + 2**-10)).to(torch.float16)  # one unit in the last place, or a rounding of it
    assert bk.mismatch(got, want) is None
    assert bk.mismatch((got, want), (want, want)) is None


def test_one_element_off_is_named():
    want = torch.ones(4, 8, dtype=torch.float16)
    got = want.clone()
    got[2, 3] = 1.25
    assert bk.mismatch(got, want) == "output 0: 1 of 32 elements off, first at 19: 1.25 vs 1"


def test_nan_where_the_chain_has_none_is_off():
    want = torch.zeros(10)
    got = want.clone()
    got[7] = float("nan")
    assert bk.mismatch(got, want).startswith("output 0: 1 of 10 elements off, first at 7: nan vs 0")


def test_second_output_and_its_dtype_tolerance():
    y = torch.full((16,), 2.0, dtype=torch.bfloat16)
    s = torch.full((16,), 2.0, dtype=torch.bfloat16)
    assert bk.mismatch((y, s + 0.0625), (y, s)) is None  # 2 + 1/16: within BF16's 3e-2 * (1 + 2)
    assert bk.mismatch((y, s + 0.125), (y, s)).startswith("output 1: 16 of 16 elements off")
    assert bk.mismatch(y.float() + 1e-3, y.float()).startswith("output 0: 16 of 16")  # FP32: 1e-4 * 3


def test_shape_and_count_differences():
    a = torch.zeros(4, 8)
    assert bk.mismatch(a, torch.zeros(8, 4)) == "output 0: shape (4, 8), the chain's (8, 4)"
    assert bk.mismatch(a, (a, a)) == "ours gives 1 output(s), the chain 2"
