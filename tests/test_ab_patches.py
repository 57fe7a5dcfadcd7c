"""benchmarks/experiments/ab.py: the pending kernel patches still apply, and the A/B table is right."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXP = Path(__file__).resolve().parents[1] / "benchmarks" / "experiments"
sys.path.insert(0, str(EXP))
import ab  # noqa: E402


def check(tmp_path, *sets, patches: Path | None = None):
    env = dict(os.environ, AB_WORK=str(tmp_path))  # the trees' copies go there
    if patches is not None:
        env["AB_PATCHES"] = str(patches)
    return subprocess.run([sys.executable, str(EXP / "ab.py"), "--check", *sets], capture_output=True, text=True, env=env)


def test_every_pending_patch_applies_to_the_tree(tmp_path):
    r = check(tmp_path, *ab.PENDING)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ("ab: every set applies: " + ", ".join(ab.PENDING)).strip()


def test_every_tool_patch_applies_to_the_tree(tmp_path):
    r = check(tmp_path, *ab.TOOLS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ab: every set applies: " + ", ".join(ab.TOOLS)


def one_line_patch(folder: Path, name: str, line: str) -> None:
    """A patch set that replaces `line` as the first line of the SkipNorm kernel's source."""
    rel = "plugin_src/ops/skip_norm/skip_norm.cu"
    (folder / f"{name}.patch").write_text(f"--- a/{rel}\n+++ b/{rel}\n@@ -1,1 +1,1 @@\n-{line}\n+// changed\n")


def test_a_stale_or_missing_patch_is_one_line(tmp_path):
    sets = tmp_path.parent / f"{tmp_path.name}-patches"
    sets.mkdir()
    first = (EXP.parents[1] / "plugin_src/ops/skip_norm/skip_norm.cu").read_text().splitlines()[0]
    one_line_patch(sets, "fresh", first)
    one_line_patch(sets, "stale", first + " not in the tree")
    r = check(tmp_path, "fresh", patches=sets)
    assert r.returncode == 0 and r.stdout.strip() == "ab: every set applies: fresh", r.stderr
    r = check(tmp_path, "stale", patches=sets)
    assert r.returncode == 1
    assert r.stderr.startswith("ab: stale.patch does not apply to the tree: ")
    r = check(tmp_path, "no_such")
    assert r.returncode == 1 and r.stderr.startswith("ab: no such patch: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no copy left behind


def test_a_diff_applies_at_an_offset_and_only_whole(tmp_path):
    (tmp_path / "k.cu").write_text("// moved down\nint a;\nint b;\nint c;\n")
    diff = ("--- a/k.cu\n+++ b/k.cu\n@@ -1,3 +1,3 @@\n int a;\n-int b;\n+long b;\n int c;\n"
            "--- /dev/null\n+++ b/new/n.h\n@@ -0,0 +1 @@\n+#pragma once\n\\ No newline at end of file\n")
    assert ab.apply_diff(diff, tmp_path) is None
    assert (tmp_path / "k.cu").read_text() == "// moved down\nint a;\nlong b;\nint c;\n"
    assert (tmp_path / "new" / "n.h").read_text() == "#pragma once"
    # a second hunk that does not match: nothing is written, the reason is one line
    bad = diff.split("--- /dev/null")[0] + "@@ -9,1 +9,1 @@\n-int z;\n+int y;\n"
    (tmp_path / "k.cu").write_text("int a;\nint b;\nint c;\n")
    assert ab.apply_diff(bad, tmp_path) == "b/k.cu: a hunk at line 9 does not match"
    assert (tmp_path / "k.cu").read_text() == "int a;\nint b;\nint c;\n"


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


def test_times_of_reads_the_group_norm_benchmark(tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "group_norm.json").write_text(json.dumps({"env": {}, "rows": [
        {"op": "group_norm", "dtype": "fp16", "shape": [2, 1280, 8, 8], "ours_cl": 9e-6, "ours_cf": 3.7e-6,
         "resident_cl_whole": 7e-6, "resident_cl_windows": None, "copy": 1e-6}]}))
    assert ab.times_of(ab.read_run(tmp_path / "g")) == {"group_norm fp16 2x1280x8x8 ours_cl": 9e-6,
                                                       "group_norm fp16 2x1280x8x8 ours_cf": 3.7e-6,
                                                       "group_norm fp16 2x1280x8x8 resident_cl_whole": 7e-6}


def test_the_group_norm_table_times_only_the_compared_columns():
    assert ab.with_columns("group_norm", ["--quick"]) == ["--quick", "--only", *ab.GN_COLUMNS]
    assert ab.with_columns("group_norm", ["--only", "ours_cf"]) == ["--only", "ours_cf"]
    assert ab.with_columns("kernels", ["--ops", "bias_gelu"]) == ["--ops", "bias_gelu"]
