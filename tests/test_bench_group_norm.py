"""scripts/bench_group_norm.py's plans with more CTAs (the sweep of the fixed cost per piece) and its table."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_group_norm import TEMB, more_ctas, plot, table  # noqa: E402


def test_channels_first_cut_keeps_whole_packs_and_covers_the_tensor():
    # 1x1280x8x8 FP16: 81920 elements, 10 CTAs of 8192, all staged
    plan = more_ctas((10, 8192, 8192, True, False, 0), 4, 1, 1280, 64, "channels_first", 2, 132)
    assert plan == (40, 2048, 2048, True, False, 0)
    plan = more_ctas((10, 8200, 4000, True, False, 0), 4, 1, 1280, 64, "channels_first", 2, 132)
    assert plan[1] % 8 == 0 and plan[0] * plan[1] >= 81920 and plan[2] == 2048


def test_channels_last_cut_stays_inside_a_sample():
    # 3 does not divide 64
    assert more_ctas((11, 6, 6, True, False, 0), 2, 1, 1280, 64, "channels_last", 2, 132) is None
    assert more_ctas((16, 8, 8, True, True, 0), 2, 2, 1280, 64, "channels_last", 2, 132) == (32, 4, 4, True, True, 0)


def test_no_cut_past_the_sms_or_of_a_two_launch_plan():
    assert more_ctas((128, 64, 64, True, False, 0), 2, 2, 320, 4096, "channels_last", 2, 132) is None
    assert more_ctas((10, 8192, 0, False, False, 0), 2, 1, 1280, 64, "channels_first", 2, 132) is None


def test_table_has_a_cell_per_column():
    row = {"op": "group_norm", "dtype": "fp16", "shape": [1, 1280, 8, 8], "mb": 0.16, "copy": 1e-6, "ours_cf": 2e-6,
           "resident_cf_whole": 1.5e-6, "resident_cl_windows": 4e-6, "resident_cf_c4": 0.5e-6}
    head, rule, line = table([row])
    assert head.count("|") == rule.count("|") == line.count("|")
    # the whole-segment plans' % of copy, the fused ones, the cluster plans' (2, 4, 8 CTAs per group)
    assert line.endswith("| 67 / - | 25 / - | -, 200, - / -, -, - | - / - / - / - |")


def test_plot_draws_a_png_where_matplotlib_is(tmp_path):
    rows = [{"op": "group_norm", "dtype": "fp16", "shape": [1, 1280, 8, 8], "mb": 0.16, "copy": 1e-6, "ours_cf": 2e-6,
             "liger": 4e-6},
            {"op": "group_norm", "dtype": "fp16", "shape": [2, 320, 64, 64], "mb": 5.2, "copy": 3e-6, "ours_cf": 9e-6,
             "ours_cl": 1e-5}]
    drew = plot(rows, tmp_path / "group_norm.png")
    assert drew == (importlib.util.find_spec("matplotlib") is not None)
    assert (tmp_path / "group_norm.png").is_file() == drew


def test_a_time_embedding_row_has_ours_and_eager_only():
    row = {"op": TEMB, "dtype": "fp16", "shape": [2, 320, 64, 64], "mb": 5.2, "copy": 3e-6, "ours_cf": 6e-6,
           "ours_cl": 1.2e-5, "eager_cf": 3e-5}
    line = table([row])[-1]
    assert line.startswith(f"| {TEMB} | fp16 | 2x320x64x64 | 5.2 | 6.00 | 12.00 | 50 / 25 / - / - / - / -, - | "
                           "10 / - |")
    assert "| - | - | - | - | 5.00x | - |" in line  # no compile, Liger or TensorRT OSS; eager / ours 5x
