"""benchmarks/bench_models.py runs through (tiny configs on the CPU, eager modes): its GPU run
(issue 33's whole-model table) must work the first time on the GPU machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the benchmark needs torch (pip install torch==2.13.0)")
pytest.importorskip("diffusers", reason="the benchmark's UNet needs diffusers (pip install diffusers)")

ROOT = Path(__file__).resolve().parents[1]


def test_bench_models_smoke(tmp_path):
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_models.py"), "--tiny", "--device", "cpu",
           "--compile-dtypes", "", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    every = json.loads((tmp_path / "bench_models.json").read_text())["results"]
    alt = [r for r in every if r["mode"].startswith("alt:")]
    assert [(r["model"], r["dtype"], r["mode"]) for r in alt] == [
        (m, d, f"alt:{mode}") for m, d in (("unet", "float16"), ("llama-1L", "float16"), ("llama-1L", "bfloat16"))
        for mode in ("eager", "eager+fuse")]
    assert all(len(r["rounds"]) == 8 and r["ms"] > 0 for r in alt)
    rows = [r for r in every if r not in alt]
    assert [(r["model"], r["dtype"], r["mode"]) for r in rows] == [
        ("unet", "float16", "eager"), ("unet", "float16", "eager+fuse"), ("llama-1L", "float16", "eager"),
        ("llama-1L", "float16", "eager+fuse"), ("llama-1L", "bfloat16", "eager"), ("llama-1L", "bfloat16", "eager+fuse")]
    assert all("ms" in r and "profile" in r and "error" not in r for r in rows)
    fused = [r for r in rows if r["mode"] == "eager+fuse"]
    assert all(r["rel_err"] < 2e-2 for r in fused)
    assert fused[0]["fused"]["GroupNorm -> FusedGroupNorm"] > 0 and fused[0]["silu_folded"] > 0
    assert fused[0]["fused"]["GEGLU -> FusedGatedLinear"] > 0 and fused[0]["skip_folded"] > 0
    assert fused[1]["fused"] == {"LlamaRMSNorm -> FusedRMSNorm": 3, "SiLUActivation -> FusedActivation": 1}
    assert fused[1]["products_folded"] == 1
    table = (tmp_path / "bench_models.md").read_text()
    assert table.count("\n| unet ") == 4 and "| eager+fuse |" in table and "| alt:eager+fuse |" in table
