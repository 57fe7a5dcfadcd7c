"""scripts/bench_report.py (bench_kernels.py's report): a report rewritten from its results keeps every section
it does not generate, so regenerating benchmarks/RESULTS.md loses none of the per-op runs or the history."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from bench_report import kept_sections, write_report  # noqa: E402


def test_the_committed_report_is_rewritten_unchanged(tmp_path):
    committed = ROOT / "benchmarks" / "RESULTS.md"
    data = json.loads((ROOT / "benchmarks" / "results.json").read_text())
    write_report(data, tmp_path, kept_sections(committed))
    assert (tmp_path / "RESULTS.md").read_text() == committed.read_text()


def test_sections_past_the_tables_are_kept_and_a_new_run_has_none(tmp_path):
    old = tmp_path / "old.md"
    old.write_text("# Kernel benchmark\n\n## Targets\n\n- x\n\n## Large points (x >= 96 MiB)\n\n| a |\n\n"
                   "## Small launches (device time in graphs)\n\n| b |\n\n## GroupNorm beside every peer\n\nrun 1\n\n"
                   "## Small launches, run 2\n\ntext\n\n## History\n\nv1\n")
    assert kept_sections(old) == ("## GroupNorm beside every peer\n\nrun 1\n\n## Small launches, run 2\n\ntext\n\n"
                                  "## History\n\nv1\n")
    assert kept_sections(tmp_path / "missing.md") == "" and kept_sections(None) == ""
    data = json.loads((ROOT / "benchmarks" / "norms" / "h100_v15_small.json").read_text())
    write_report(data, tmp_path, kept_sections(tmp_path / "RESULTS.md"))  # a fresh run directory
    text = (tmp_path / "RESULTS.md").read_text()
    assert text.startswith("# Kernel benchmark") and "## Small launches" in text and "## History" not in text
