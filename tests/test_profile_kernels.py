"""scripts/profile_kernels.py: which benchmark points it profiles, and how it reads ncu's CSV."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import profile_kernels as pk  # noqa: E402


def point(op, dtype, rows, hidden, ours, copy, compile=None, liger=None):
    return {"op": op, "dtype": dtype, "rows": rows, "hidden": hidden, "ours": ours, "copy": copy,
            "compile": compile, "liger": liger}


def test_missed_points():
    results = {"results": [
        point("layer_norm", "fp16", 12288, 4096, 76e-6, 50e-6, compile=51e-6),  # 66% of copy
        point("rms_norm", "fp32", 6144, 4096, 53e-6, 50e-6, liger=51e-6),       # 94%, 0.96x Liger
        point("skip_rms_norm", "fp32", 6144, 4096, 50e-6, 48e-6, liger=50e-6),  # 96%, 1.00x: met
        point("layer_norm", "fp16", 64, 4096, 3e-6, 1e-6),                      # small, no compiled time
        point("rms_norm", "fp16", 8, 4096, 3e-6, 1e-6, compile=2.5e-6),         # small, slower than compile
        point("rms_norm", "fp16", 1, 4096, 2e-6, 1e-6, compile=2.5e-6),         # small, faster: met
        point("bias_relu6", "fp16", 65536, 768, 60e-6, 57e-6, compile=58e-6),   # 0.97x compile
        point("group_norm", "fp16", 640, 4096, 10e-6, 2e-6),                    # not profiled
    ]}
    assert pk.missed(results) == ["layer_norm:fp16:12288x4096", "rms_norm:fp32:6144x4096", "rms_norm:fp16:8x4096",
                                  "bias_relu6:fp16:65536x768"]


@pytest.mark.parametrize("bad", ["layer_norm:fp16", "layer_norm:fp16:12x", "gelu:fp16:2x8"])
def test_bad_point(bad):
    with pytest.raises(SystemExit, match="bad point"):
        pk.parse_point(bad)


def test_reads_ncu_raw_csv():
    header = ["ID", "Kernel Name", "gpu__time_duration.sum", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
              "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
              "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
              "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"]
    quote = lambda r: ",".join(f'"{v}"' for v in r)  # noqa: E731
    text = "\n".join(["==PROF== Disconnected", quote(header),
                      quote(["", "", "usecond", "%", "%", "register/thread", "", ""]),
                      quote(["0", "rowKernel<__half, 8, 2>(Row<T>)", "91.84", "40.84", "46.29", "60", "2.5", "4.1"])])
    rows, units = pk.rows_of(text)
    (rec,) = pk.summarize(["layer_norm:fp16:12288x4096"], rows, units)
    assert rec["kernel"] == "rowKernel<__half, 8, 2>" and rec["us"] == pytest.approx(91.84)
    assert rec["DRAM %"] == pytest.approx(40.84) and rec["registers"] == 60
    assert list(rec["stalls"]) == ["long_scoreboard", "barrier"]
    assert "| layer_norm:fp16:12288x4096 |" in pk.table([rec])
    with pytest.raises(SystemExit, match="profiled 1 kernels for 2 points"):
        pk.summarize(["a", "b"], rows, units)


def test_variant_names():
    assert pk.describe(64 | 2) == "block x3" and pk.describe(64 | 16 | 128) == "warp x1 prefetch"
    assert pk.describe(64 | 32 | 1) == "block x2 hoisted weights"
    assert pk.describe(64 | 15) == "long" and pk.describe(15) == "long scalar"


def test_limits_table_joins_benchmark_and_sweep(tmp_path):
    r = point("layer_norm", "fp16", 12288, 4096, 80e-6, 50e-6, compile=52e-6, liger=60e-6)
    cols = pk.bench_cols(r)
    assert cols["% copy"] == pytest.approx(62.5) and cols["vs compile"] == pytest.approx(0.65)
    assert cols["vs liger"] == pytest.approx(0.75) and pk.bench_cols(None) == {}
    s = {"op": "layer_norm", "dtype": "fp16", "rows": 12288, "hidden": 4096, "copy": 50e-6, "chosen": 66,
         "times": {"66": 80e-6, "65": 100e-6, "67": 62.5e-6, "79": 200e-6}, "fp32_weights": {"66": 90e-6}}
    assert pk.designs(s) == "picked block x3: 62; block x4: 80; block x2: 50; picked, FP32 weights: 56"
    assert pk.designs(s, chosen=67).startswith("picked block x4: 80; block x3: 62; block x2: 50")
    rec = {"point": pk.key(r), "kernel": "rowKernel", "stalls": {"barrier": 2.0}, **cols, "designs": pk.designs(s)}
    rec.update({c: None for c in pk.COLUMNS.values()})
    text = pk.table([rec])
    assert "| % copy | vs compile | vs liger |" in text and "| 62.5 | 0.65x | 0.75x | rowKernel |" in text
    assert text.rstrip().endswith("picked, FP32 weights: 56 |")
    bad = tmp_path / "sweep.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit, match="cannot read"):
        pk.read_json(bad, list)


def test_table_again_from_ncu_json_with_earlier_designs(tmp_path, monkeypatch):
    """--ncu-json: the table from an earlier run's ncu numbers (no ncu), joined with the benchmark, the
    sweep and earlier designs' results."""
    now = point("rms_norm", "fp16", 3072, 16384, 80e-6, 60e-6, compile=50e-6)
    old = point("rms_norm", "fp16", 3072, 16384, 100e-6, 60e-6)
    ncu = [{"point": pk.key(now), "kernel": "rowKernel<__half, 8, 4>", "stalls": {"long_scoreboard": 5.6},
            **{c: 1.0 for c in pk.COLUMNS.values()}}]
    files = {"ncu.json": ncu, "res.json": {"results": [now]}, "old.json": {"results": [old]}}
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    assert pk.earlier(pk.key(now), {"v1": {pk.key(old): old}, "v2": {}}) == "v1: 60"
    monkeypatch.setattr(sys, "argv", ["profile_kernels.py", "--ncu-json", str(tmp_path / "ncu.json"), "--results",
                                      str(tmp_path / "res.json"), "--earlier", f"v1={tmp_path / 'old.json'}",
                                      "--out", str(tmp_path / "out"), "--ncu", "/nonexistent/ncu"])
    pk.main()
    text = (tmp_path / "out" / "ncu_norms.md").read_text()
    assert "| rms_norm:fp16:3072x16384 | 75.0 | 0.62x | rowKernel<__half, 8, 4> |" in text
    assert text.rstrip().endswith("long_scoreboard 5.6 | v1: 60 |")
    monkeypatch.setattr(sys, "argv", ["profile_kernels.py", "--ncu-json", "x", "--earlier", "no-equals-sign"])
    with pytest.raises(SystemExit, match="bad --earlier"):
        pk.main()


def test_later_sweep_file_gives_the_designs(tmp_path, monkeypatch):
    """--sweep A B: a point in both takes B's designs (a newer sweep of more variants)."""
    now = point("layer_norm", "fp16", 1, 768, 2e-6, 1e-6, compile=1.5e-6)
    ncu = [{"point": pk.key(now), "kernel": "rowKernel", "stalls": {}, **{c: 1.0 for c in pk.COLUMNS.values()}}]
    base = {"op": "layer_norm", "dtype": "fp16", "rows": 1, "hidden": 768, "copy": 1e-6}
    older = dict(base, chosen=82, times={"82": 4e-6})
    newer = dict(base, chosen=96, times={"96": 2e-6, "82": 4e-6})
    files = {"ncu.json": ncu, "res.json": {"results": [now]}, "a.json": [older], "b.json": [newer]}
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    monkeypatch.setattr(sys, "argv", ["profile_kernels.py", "--ncu-json", str(tmp_path / "ncu.json"), "--results",
                                      str(tmp_path / "res.json"), "--sweep", str(tmp_path / "a.json"),
                                      str(tmp_path / "b.json"), "--out", str(tmp_path / "out")])
    pk.main()
    text = (tmp_path / "out" / "ncu_norms.md").read_text()
    assert "picked block x1 hoisted weights: 50; warp x3: 25" in text


def test_earlier_numbers_kept_for_points_that_still_miss(tmp_path, monkeypatch):
    results = {"results": [
        point("layer_norm", "fp16", 12288, 4096, 76e-6, 50e-6),             # 66% of copy: missed
        point("rms_norm", "fp16", 8, 4096, 3e-6, 1e-6, compile=2.5e-6),     # small, slower than compile
        point("rms_norm", "fp16", 1, 4096, 2e-6, 1e-6, compile=2.5e-6),     # small, faster: met
    ]}
    earlier = [{"point": p, "kernel": "k", "stalls": {}, "us": 1.0}
               for p in ("rms_norm:fp16:1x4096", "rms_norm:fp16:8x4096", "layer_norm:fp16:12288x4096")]
    (tmp_path / "results.json").write_text(json.dumps(results))
    (tmp_path / "ncu.json").write_text(json.dumps(earlier))
    monkeypatch.setattr(sys, "argv", ["profile_kernels.py", "--results", str(tmp_path / "results.json"),
                                      "--ncu-json", str(tmp_path / "ncu.json"), "--out", str(tmp_path / "out")])
    pk.main()
    recs = json.loads((tmp_path / "out" / "ncu_norms.json").read_text())
    assert [r["point"] for r in recs] == ["layer_norm:fp16:12288x4096", "rms_norm:fp16:8x4096"]  # the met point dropped
    assert recs[0]["% copy"] == pytest.approx(100 * 50 / 76)
