"""The Triton SkipNorm kernels (plugin_src/ops/skip_norm/skip_norm_triton.py) and their ahead-of-time
build (plugin_src/triton_aot.py), on a CPU: the kernels run in Triton's interpreter against the op's
numpy reference (every form, FP32 and FP16, both kernel shapes, rows and sizes that are not powers of
two, values far from 0), and compile to cubins for sm_90 with ptxas's resources recorded, no spills.
Tolerances: tests/gpu/test_kernels.py's (scale-relative: |out - ref| <= atol * max(max|ref|, 1) +
rtol * |ref|). On a GPU: benchmarks/experiments/triton_aot_check.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton", reason="needs Triton (pip install triton)")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugin_src"))
import triton_aot  # noqa: E402

INTERPRETED = r"""
import json, sys
import numpy as np, torch
sys.path.insert(0, "plugin_src")
import triton_aot
from trtplugins.ops.skip_norm import reference
TOL = {"float32": (1e-5, 0.0), "float16": (2e-3, 2e-3)}
mod, worst = triton_aot.kernels(), {}
rng = np.random.default_rng(7)
for form, sw in triton_aot.FORMS.items():
    for dtype in TOL:
        for hidden, rows, cfg in ((96, 5, dict(kernel="rows", RBLOCK=128, XBLOCK=2, num_warps=4)),
                                  (100, 3, dict(kernel="rows", RBLOCK=128, XBLOCK=4, num_warps=4)),
                                  (100, 3, dict(kernel="looped", RBLOCK=32, XBLOCK=1, num_warps=4))):
            t = getattr(torch, dtype)
            x = torch.from_numpy(rng.standard_normal((rows, hidden)) * 3 + 40).to(t)  # far from 0
            skip = torch.from_numpy(rng.standard_normal((rows, hidden))).to(t)
            g, b = (torch.from_numpy(rng.standard_normal(hidden).astype(np.float32)) for _ in range(2))
            y, s = torch.empty_like(x), torch.empty_like(x)
            fn = mod.rows_kernel if cfg["kernel"] == "rows" else mod.looped_kernel
            fn[(-(-rows // cfg["XBLOCK"]),)](x, skip, g, g, b, y, s, rows, 1e-5, HIDDEN=hidden, RBLOCK=cfg["RBLOCK"],
                                             XBLOCK=cfg["XBLOCK"], **sw)
            f64 = lambda a: a.double().numpy()
            want = reference(f64(x), f64(skip) if sw["SKIP"] else None, gamma=g.numpy(),
                             beta=b.numpy() if sw["BETA"] else None, norm="rms" if sw["RMS"] else "layer",
                             epsilon=1e-5, output_sum=True)
            outs = [(y, want[0])] + ([(s, want[1])] if sw["SUM"] else [])
            atol, rtol = TOL[dtype]
            for got, ref in outs:
                scale = max(float(np.abs(ref).max()), 1.0)
                ratio = float((np.abs(f64(got) - ref) / (atol * scale + rtol * np.abs(ref))).max())
                key = f"{form} {dtype} {cfg['kernel']} {hidden}"
                worst[key] = max(worst.get(key, 0.0), ratio)
print(json.dumps(worst))
"""


def test_kernels_match_the_reference_in_the_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", INTERPRETED], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    worst = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(worst) == len(triton_aot.FORMS) * 2 * 3
    bad = {k: v for k, v in worst.items() if not v <= 1.0}
    assert not bad, f"err/bound > 1: {bad}"


def test_each_architecture_of_the_default_build_compiles_and_reports_its_resources():
    """Triton writes the sm_90/100/120 PTX for their 'a' targets (sm_120a: ptxas refuses it as sm_120); a
    build for the default CUDA architectures (CMakeLists.txt: 75 to 120) compiles each."""
    mod = triton_aot.kernels()
    for cc in (75, 80, 86, 89, 90, 100, 120):
        k, _ = triton_aot.compile_one(mod, "skip_layer_norm_no_sum", "float16", 768, cc)
        res = triton_aot.ptxas_resources(k.asm["ptx"], cc)
        assert 0 < res["registers"] <= 255 and res["spill_stores"] == 0, (cc, res)


def test_every_form_compiles_for_sm90_without_spills(tmp_path):
    """Each shape twice: for large launches and (small) for launches of a few rows (8192: the widest
    small-launch rows kernel)."""
    manifest = triton_aot.build(tmp_path, archs=(90,), hiddens=(768, 8192, 16384))
    assert len(manifest) == len(triton_aot.FORMS) * len(triton_aot.DTYPES) * 3 * 2
    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest
    assert sum(m["small"] for m in manifest) == len(manifest) // 2 and len({m["name"] for m in manifest}) == len(manifest)
    for m in manifest:
        cubin = (tmp_path / m["cubin"]).read_bytes()
        assert cubin[:4] == b"\x7fELF", m["name"]
        assert m["kernel"] == ("looped" if m["hidden"] > triton_aot.LOOPED_FROM else "rows")
        if m["small"]:
            assert m["XBLOCK"] == 1 and {k: m[k] for k in ("kernel", "RBLOCK", "num_warps")} == {
                k: v for k, v in triton_aot.small_config(m["hidden"]).items() if k != "XBLOCK"}
        assert 16 <= m["registers"] <= 255 and m["spill_stores"] == 0 and m["stack"] == 0, m
        assert m["shared"] <= 227 * 1024 and m["global_scratch_size"] == 0 and m["profile_scratch_size"] == 0, m
        assert m["params"] == list(triton_aot.PARAMS)


def test_configs_cover_every_hidden_size():
    for dtype in triton_aot.DTYPES:
        for hidden in (1, 7, 768, 8192, 8193, 65536):
            c = triton_aot.config(hidden, dtype)
            assert c["RBLOCK"] >= (hidden if c["kernel"] == "rows" else 1) and c["RBLOCK"] & (c["RBLOCK"] - 1) == 0
            assert c["num_warps"] in (4, 8, 16) and c["XBLOCK"] >= 1
    # small launches: a row per program, 4 values a thread up to 32 warps (768: 8 warps, as Inductor's)
    assert triton_aot.small_config(768) == dict(kernel="rows", RBLOCK=1024, XBLOCK=1, num_warps=8)
    assert triton_aot.small_config(100) == dict(kernel="rows", RBLOCK=128, XBLOCK=1, num_warps=4)
    assert triton_aot.small_config(8192)["num_warps"] == 32 and triton_aot.small_config(8193)["kernel"] == "looped"


def test_the_embedded_table_compiles(tmp_path):
    """--emit-cpp: the table plugin_src/cubins/cubins.h declares, each cubin a byte array, as the
    kernel library compiles it (TRTPLUGINS_TRITON_AOT=ON)."""
    import shutil

    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not Path(nvcc).exists():
        pytest.skip("needs nvcc (the CUDA toolkit's headers)")
    manifest = triton_aot.build(tmp_path, archs=(90,), forms=("rms_norm", "skip_layer_norm"), dtypes=("float16",),
                                hiddens=(768,))
    cpp = tmp_path / "cubins_triton.cpp"
    picked = {"sm_90": {triton_aot.key("rms_norm", "float16", 768): {}, triton_aot.key("skip_layer_norm", "float16", 768, True): {}},
              "sm_80": {triton_aot.key("skip_layer_norm", "float16", 768): {}}}
    triton_aot.emit_cpp(manifest, tmp_path, cpp, picked)
    text = cpp.read_text()
    assert "const int32_t kCubinCount = 4;" in text and text.count("kCubinSkipNorm, ") == 4
    # {op, form, dtype, hidden, small, arch, xblock, warps, shared, picked, ...}: only the sm_90 picks are picked
    entries = re.findall(r"\{kCubinSkipNorm, (\d+), 1, 768, (\d), 90, \d+, \d+, \d+, (\d), ", text)
    assert sorted(entries) == [("1", "0", "1"), ("1", "1", "0"), ("2", "0", "0"), ("2", "1", "1")]
    done = subprocess.run([nvcc, "-std=c++17", f"-I{ROOT / 'plugin_src' / 'cubins'}", "-c", str(cpp), "-o",
                           str(tmp_path / "cubins_triton.o")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_measured_table_overrides_the_rule_and_candidates_compile(tmp_path):
    """triton_aot_check.py --autotune writes {key: config}; the build takes it where it has the shape.
    Every candidate the autotune may pick compiles (sm_90, FP16 LayerNorm at 768 and 16384)."""
    cfg = dict(kernel="looped", RBLOCK=1024, XBLOCK=1, num_warps=4)
    table = {triton_aot.key("rms_norm", "float16", 768): cfg}
    assert triton_aot.config(768, "float16", "rms_norm", table) == cfg
    assert triton_aot.config(768, "float16", "layer_norm", table) == triton_aot.config(768, "float16")
    (m,) = triton_aot.build(tmp_path, archs=(90,), forms=("rms_norm",), dtypes=("float16",), hiddens=(768,), table=table,
                            small=False)
    assert (m["kernel"], m["RBLOCK"], m["num_warps"]) == ("looped", 1024, 4)
    mod = triton_aot.kernels()
    for hidden in (768, 16384):
        cands = triton_aot.candidates(hidden, "float16")
        assert cands and all(c["kernel"] in ("rows", "looped") for c in cands)
        for c in cands[::3]:
            _, entry = triton_aot.compile_one(mod, "layer_norm", "float16", hidden, 90, c)
            assert entry["XBLOCK"] == c["XBLOCK"]


def test_picks_are_the_measured_wins_and_the_committed_table_is_the_committed_run():
    rows = [dict(form="rms_norm", dtype="float16", hidden=768, aot_us=9.8, ours_us=10.0),    # 2% faster: picked
            dict(form="rms_norm", dtype="float16", hidden=1024, aot_us=9.95, ours_us=10.0),  # within the margin
            dict(form="layer_norm", dtype="float32", hidden=768, mismatch="no cubin for this device in the library")]
    assert triton_aot.picks(rows, 90) == {"sm_90": {"rms_norm/float16/768": {"aot_us": 9.8, "ours_us": 10.0}}}
    # against the hand-written kernels with the weights' 16-bit copies: that column
    io_rows = [dict(rows[0], ours_io_us=9.5), dict(rows[1], ours_io_us=10.5)]
    assert triton_aot.picks(io_rows, 90, against="ours_io_us") == {
        "sm_90": {"rms_norm/float16/1024": {"aot_us": 9.95, "ours_io_us": 10.5}}}
    # plugin_src/ops/skip_norm/triton_picks.json is the table of the runs committed beside the benchmarks
    assert json.loads(triton_aot.PICKS.read_text()) == triton_aot.committed_picks(ROOT / "benchmarks" / "triton_aot")


def test_the_committed_table_says_which_weights_each_kernel_won_against(tmp_path):
    """A key won in the FP32-weight run, the 16-bit-weight run or both says so; small launches are latency-bound,
    picked whatever the weights; emit_cpp writes the weights as Cubin::picked's bits."""
    row = lambda h, aot, ours, io=None, n=None: dict(form="rms_norm", dtype="float16", hidden=h, rows=n, aot_us=aot,  # noqa: E731
                                                     ours_us=ours, **({} if io is None else {"ours_io_us": io}))
    (tmp_path / "triton_aot.json").write_text(json.dumps([row(768, 9.0, 10.0), row(1024, 9.0, 10.0)]))
    (tmp_path / "triton_aot_io.json").write_text(json.dumps([row(768, 9.0, 10.0, 8.0), row(4096, 9.0, 10.0, 9.5)]))
    (tmp_path / "triton_aot_small.json").write_text(json.dumps([row(768, 1.5, 2.0, n=1)]))
    table = triton_aot.committed_picks(tmp_path)["sm_90"]
    assert {k: v["weights"] for k, v in table.items()} == {
        "rms_norm/float16/768": ["fp32"], "rms_norm/float16/1024": ["fp32"], "rms_norm/float16/4096": ["io"],
        "small/rms_norm/float16/768": ["fp32", "io"]}
    assert table["rms_norm/float16/4096"] == {"aot_us": 9.0, "ours_io_us": 9.5, "weights": ["io"]}
    manifest = []
    for i, (hidden, small) in enumerate([(768, 0), (768, 1), (1024, 0), (2048, 0), (4096, 0)]):
        (tmp_path / f"c{i}.cubin").write_bytes(bytes([i]))
        manifest.append(dict(form="rms_norm", dtype="float16", hidden=hidden, small=small, arch="sm_90", XBLOCK=1,
                             num_warps=4, shared=0, symbol=f"s{i}", cubin=f"c{i}.cubin"))
    cpp = tmp_path / "t.cpp"
    triton_aot.emit_cpp(manifest, tmp_path, cpp, {"sm_90": table})
    bits = re.findall(r'\{kCubinSkipNorm, 1, 1, (\d+), (\d), 90, 1, 4, 0, (\d), "s', cpp.read_text())
    assert bits == [("768", "0", "1"), ("768", "1", "3"), ("1024", "0", "1"), ("2048", "0", "0"), ("4096", "0", "2")]


def test_a_new_run_replaces_its_keys_rows_and_the_picks_follow(tmp_path, monkeypatch):
    """merge_run: a run's keys replace theirs (the io file's several runs of a key become the new one), a key whose
    launch mismatched keeps its old rows, keys it did not measure are untouched; `--merge-run` rewrites the picks.
    Merging the committed retune checks (runs 14, 17) into the committed runs changes not a byte, tables (.md)
    included."""
    row = lambda h, aot, ours, io=None, mismatch=None, dtype="float16": dict(  # noqa: E731
        form="rms_norm", dtype=dtype, hidden=h, mismatch=mismatch, aot_us=aot, ours_us=ours,
        **({} if io is None else {"ours_io_us": io}))
    (tmp_path / "triton_aot.json").write_text(json.dumps([row(768, 9.0, 10.0, 10.0), row(1024, 10.0, 9.0, 9.0),
                                                          row(768, 9.0, 10.0, dtype="float32")]))
    (tmp_path / "triton_aot_io.json").write_text(json.dumps([row(768, 9.0, 10.0, 10.0), row(1024, 10.0, 9.0, 9.0),
                                                             row(768, 9.5, 10.0, 10.0), row(1024, 10.0, 9.0, 9.0)]))
    run = [row(1024, 8.0, 9.0, 9.0), row(768, 9.0, 10.0, 10.0, mismatch="max err 1e-1"), row(2048, 8.0, 9.0, 9.0),
           row(2048, 8.0, 9.0, dtype="float32")]
    merged = triton_aot.merge_run(run, tmp_path)
    assert merged == ["rms_norm/float16/1024", "rms_norm/float16/2048", "rms_norm/float32/2048"]
    big, io = (json.loads((tmp_path / n).read_text()) for n in ("triton_aot.json", "triton_aot_io.json"))
    assert big == [row(768, 9.0, 10.0, 10.0), run[0], row(768, 9.0, 10.0, dtype="float32"), run[2], run[3]]
    assert io == [row(768, 9.0, 10.0, 10.0), run[0], row(768, 9.5, 10.0, 10.0), run[2]]
    io_table = (tmp_path / "triton_aot_io.md").read_text().splitlines()
    assert io_table[3].startswith("| rms_norm | float16 | 1024 |  | 8.00 |")
    monkeypatch.setattr(triton_aot, "RUNS", tmp_path)
    monkeypatch.setattr(triton_aot, "PICKS", tmp_path / "picks.json")
    (tmp_path / "run.json").write_text(json.dumps(run))
    assert triton_aot.main(["--merge-run", str(tmp_path / "run.json")]) == 0
    assert set(json.loads((tmp_path / "picks.json").read_text())["sm_90"]) == {
        "rms_norm/float16/768", "rms_norm/float16/1024", "rms_norm/float16/2048", "rms_norm/float32/768",
        "rms_norm/float32/2048"}
    assert triton_aot.main(["--merge-run", str(tmp_path / "missing.json")]) == 2  # a bad path: one line, no trace
    committed = ROOT / "benchmarks" / "triton_aot"
    names = [f"triton_aot{io}.{ext}" for io in ("", "_io") for ext in ("json", "md")]
    for name in names:
        (tmp_path / name).write_bytes((committed / name).read_bytes())
    for check in ("h100_v14_retune_check", "h100_v17_retune_fp32_check", "h100_v17_retune_skip_ln_check"):
        triton_aot.merge_run(json.loads((committed / f"{check}.json").read_text()), tmp_path)
    for name in names:
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), name


def test_small_picks_win_at_every_row_count():
    row = lambda h, n, aot, ours: dict(form="layer_norm", dtype="float16", hidden=h, rows=n, aot_us=aot, ours_us=ours)  # noqa: E731
    rows = [row(768, 1, 1.6, 2.0), row(768, 64, 1.8, 2.2),    # both faster: picked (the slower of the two kept)
            row(4096, 1, 2.0, 2.4), row(4096, 64, 2.7, 2.7),  # level at 64 rows: not picked
            dict(form="rms_norm", dtype="float16", hidden=768, mismatch="no cubin for this device in the library")]
    assert triton_aot.picks(rows, 90, small=True) == {"sm_90": {"small/layer_norm/float16/768": {"aot_us": 1.8, "ours_us": 2.2}}}


def test_the_embedded_table_is_sorted_as_find_cubin_searches_it(tmp_path):
    """findCubin binary-searches kCubins by (arch, op, form, dtype, hidden, small): emit_cpp writes it in
    that order whatever order the manifest is in."""
    manifest = []
    for i, (arch, form, dtype, hidden) in enumerate([(90, "skip_rms_norm", "float16", 768), (80, "layer_norm", "float32", 4096),
                                                     (90, "layer_norm", "bfloat16", 768), (90, "layer_norm", "float32", 16384),
                                                     (90, "layer_norm", "float32", 768), (80, "rms_norm", "float16", 768)]):
        (tmp_path / f"c{i}.cubin").write_bytes(bytes([i]))
        manifest.append(dict(form=form, dtype=dtype, hidden=hidden, small=int(i == 4), arch=f"sm_{arch}", XBLOCK=1,
                             num_warps=4, shared=0, symbol=f"s{i}", cubin=f"c{i}.cubin"))
    manifest.append({**manifest[4], "small": 0, "symbol": "s6"})  # layer_norm float32 768 sm_90 for large launches
    cpp = tmp_path / "t.cpp"
    triton_aot.emit_cpp(manifest, tmp_path, cpp)
    rows = re.findall(r"\{kCubinSkipNorm, (\d+), (\d+), (\d+), (\d), (\d+), ", cpp.read_text())
    keys = [(int(a), int(f), int(d), int(h), int(sm)) for f, d, h, sm, a in rows]
    assert keys == sorted(keys) and len(keys) == 7
    assert keys[0] == (80, 0, 0, 4096, 0) and keys[-1] == (90, 3, 1, 768, 0)
    assert keys[2:4] == [(90, 0, 0, 768, 0), (90, 0, 0, 768, 1)]


def test_find_cubin_finds_each_entry_of_a_sorted_table(tmp_path):
    """findCubin's binary search over a table as emit_cpp writes it, run on this machine: without a GPU
    the device's architecture reads as 0, so the table's entries are arch 0 here."""
    import shutil

    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    main = tmp_path / "main.cpp"
    main.write_text(r'''
#include "cubins.h"
#include <cstdio>
namespace trtp {
const unsigned char k[1] = {0};
const Cubin kCubins[5] = {{0, 0, 1, 768, 0, 0, 1, 4, 0, 1, "a", k, 1}, {0, 0, 1, 768, 1, 0, 1, 8, 0, 0, "s", k, 1},
                          {0, 0, 1, 4096, 0, 0, 1, 4, 0, 0, "b", k, 1}, {0, 1, 0, 768, 0, 0, 1, 4, 0, 0, "c", k, 1},
                          {0, 3, 2, 16384, 0, 0, 1, 4, 0, 1, "d", k, 1}};
const int32_t kCubinCount = 5;
}
int main() {
    using trtp::findCubin;
    const trtp::Cubin* hits[5] = {findCubin(0, 0, 1, 768), findCubin(0, 0, 1, 768, true), findCubin(0, 0, 1, 4096),
                                  findCubin(0, 1, 0, 768), findCubin(0, 3, 2, 16384)};
    for (const auto* h : hits) std::printf("%s ", h ? h->symbol : "-");
    std::printf("| %d %d %d %d\n", findCubin(0, 0, 1, 1024) == nullptr, findCubin(0, 2, 1, 768) == nullptr,
                findCubin(1, 0, 1, 768) == nullptr, findCubin(0, 0, 1, 4096, true) == nullptr);
}
''')
    exe = tmp_path / "find"
    done = subprocess.run([nvcc, "-std=c++17", f"-I{ROOT / 'plugin_src' / 'cubins'}", f"-I{ROOT / 'plugin_src' / 'device'}",
                           str(main), str(ROOT / "plugin_src" / "cubins" / "cubins.cpp"), "-o", str(exe)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["a", "s", "b", "c", "d", "|", "1", "1", "1", "1"], out


def test_the_forms_are_numbered_as_the_library_reads_them():
    """cubins.h CubinSkipNormForm numbers triton_aot.FORMS in its order (emit_cpp writes a form's index)."""
    text = (ROOT / "plugin_src" / "cubins" / "cubins.h").read_text()
    body = re.search(r"enum CubinSkipNormForm : int32_t \{(.*?)\};", text, re.S).group(1)
    numbered = {int(n): name for name, n in re.findall(r"kCubin(\w+) = (\d+)", body)}
    camel = lambda form: "".join(p.capitalize() for p in form.split("_"))  # noqa: E731
    assert [numbered[i] for i in range(len(numbered))] == [camel(f) for f in triton_aot.FORMS]
