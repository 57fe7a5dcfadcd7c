"""benchmarks/experiments/ab.py: the pending kernel patches still apply, and the A/B table is right."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXP = Path(__file__).resolve().parents[1] / "benchmarks" / "experiments"
sys.path.insert(0, str(EXP))
import ab  # noqa: E402


def test_every_pending_patch_applies_to_the_tree():
    r = subprocess.run([sys.executable, str(EXP / "ab.py"), "--check", *ab.PENDING], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ab: every set applies: " + ", ".join(ab.PENDING)


def test_a_stale_or_missing_patch_is_one_line():
    r = subprocess.run([sys.executable, str(EXP / "ab.py"), "--check", "ring_skip_norm"], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.startswith("ab: ring_skip_norm.patch does not apply to the tree: ")
    r = subprocess.run([sys.executable, str(EXP / "ab.py"), "--check", "no_such"], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.startswith("ab: no such patch: ")


def test_table_takes_the_median_and_the_ratio_to_the_first_label():
    runs = {"base": [{"ln fp16 1x768": 2e-6}, {"ln fp16 1x768": 4e-6}, {"ln fp16 1x768": 3e-6}],
            "u1": [{"ln fp16 1x768": 1.5e-6, "gelu fp16 1x768": 1e-6}]}
    lines = ab.table(runs)
    assert lines[1].split() == ["gelu", "fp16", "1x768", "-", "1.00"]  # no base time: no ratio
    assert lines[2].split() == ["ln", "fp16", "1x768", "3.00", "1.50", "2.000x"]


def test_times_of_reads_results_and_sweeps(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps({"results": [
        {"op": "rms_norm", "dtype": "bf16", "rows": 4096, "hidden": 16384, "ours": 5e-5},
        {"op": "group_norm", "dtype": "bf16", "rows": 2, "hidden": 320, "ours": None}]}))
    assert ab.times_of(ab.read_run(tmp_path / "a")) == {"rms_norm bf16 4096x16384": 5e-5}
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "sweep.json").write_text(json.dumps([
        {"op": "layer_norm", "dtype": "fp16", "rows": 24576, "hidden": 2048, "chosen": 71, "times": {"70": 6e-5, "71": 7e-5}},
        {"op": "group_norm", "dtype": "fp16", "shape": "2x320x64x64", "chosen": "3", "times": {"3": 1e-5}}]))
    # a sweep: the fastest variant, not the picked one
    assert ab.times_of(ab.read_run(tmp_path / "b")) == {"layer_norm fp16 24576x2048": 6e-5, "group_norm fp16 2x320x64x64": 1e-5}
    assert ab.read_run(tmp_path / "none") is None and ab.times_of(None) == {}
