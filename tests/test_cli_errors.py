"""Issue 13's defects in the command-line tools: each is a one-line error with exit 2, checked
before any long work; a mismatch exits 1; nothing prints a traceback; no input is overwritten.
Real scripts in real subprocesses, real ONNX Runtime, real TensorRT-RTX / lean runtimes."""
import hashlib
import re
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"


def run(script, *args, env=None):
    return subprocess.run([sys.executable, str(SCRIPTS / script), *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def one_line_error(r, text, code=2):
    """Exit `code`, exactly one stderr line starting with error: that holds `text`, no traceback."""
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == code, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and text in errors[0], r.stderr
    return errors[0]


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def hidden_model(hidden_dim="hidden"):
    """x[batch, seq, hidden] @ W[64, 64]: a symbolic last dim that only 64 fits."""
    w = numpy_helper.from_array(np.eye(64, dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden_dim])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 64])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


# ---------------------------------------------------------------- build_engine.py


def test_build_refuses_to_overwrite_the_model(demo, tmp_path):
    """Defect 1: -o naming the input model replaced it with the plan."""
    m = tmp_path / "m.onnx"
    m.write_bytes(demo.read_bytes())
    before = digest(m)
    line = one_line_error(run("build_engine.py", m, "-o", m), "refusing to overwrite an input file")
    assert str(m) in line and digest(m) == before
    # --save-onnx / --summary-json onto the model are refused the same way
    one_line_error(run("build_engine.py", m, "--save-onnx", m), "--save-onnx")
    one_line_error(run("build_engine.py", m, "--summary-json", m), "--summary-json")
    assert digest(m) == before


@pytest.mark.parametrize("args, text", [
    (["-o", "{tmp}/missing/dir/x.plan"], "-o/--output {tmp}/missing/dir/x.plan: folder {tmp}/missing/dir does not exist"),
    (["-o", "{tmp}"], "-o/--output {tmp}: is a folder"),
    (["--summary-json", "{tmp}/missing/s.json"], "--summary-json {tmp}/missing/s.json: folder"),
    (["--save-onnx", "{tmp}/missing/p.onnx"], "--save-onnx {tmp}/missing/p.onnx: folder"),
    (["-o", "{tmp}/a.plan", "--summary-json", "{tmp}/a.plan"], "name the same file"),
    (["--shapes", "x:0x8x64"], "every dim must be >= 1"),
    (["--shapes", "x:1x8x64", "x:2x8x64"], "--shapes: input 'x' given more than once"),
    (["--ops", "GatedActivation", "swigl"], "--ops: unknown pattern or plugin 'swigl'"),
])
def test_build_bad_outputs_fail_before_work(demo, tmp_path, args, text):
    """Defects 3, 9: output paths are checked first (one line, exit 2), not after the build."""
    args = [a.format(tmp=tmp_path) for a in args]
    r = run("build_engine.py", demo, "--backend", "rtx", "--no-substitute", *args)
    one_line_error(r, text.format(tmp=tmp_path))
    assert "backend:" not in r.stdout  # nothing started
    assert list(tmp_path.iterdir()) == []


def test_build_input_messages(tmp_path):
    """Defect 8: a folder is not 'no such file'; an empty file's path is printed once."""
    line = one_line_error(run("build_engine.py", tmp_path, "--backend", "rtx"), "is a folder, not an ONNX file")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    line = one_line_error(run("build_engine.py", empty, "--backend", "rtx"), "empty file")
    assert line.count("empty.onnx") == 1


def test_build_says_which_backend_and_why(demo, tmp_path):
    """Defect 15: auto picks TensorRT-RTX without full TensorRT, and says so."""
    pytest.importorskip("tensorrt_rtx_bindings", reason="TensorRT-RTX (tensorrt-rtx-cu13-bindings) not installed")
    try:
        import tensorrt  # noqa: F401

        expected = "auto: full TensorRT found"
    except ImportError:
        expected = "auto: full TensorRT (module tensorrt) is not installed, so TensorRT-RTX builds"
    r = run("build_engine.py", demo, "--no-substitute", "-o", tmp_path / "d.plan")
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"({expected})" in r.stdout.splitlines()[0]


def test_build_plugins_not_a_library(demo, tmp_path):
    """Defect 8: --plugins naming an ONNX file under RTX said 'built for TensorRT 1'."""
    pytest.importorskip("tensorrt_rtx_bindings", reason="TensorRT-RTX (tensorrt-rtx-cu13-bindings) not installed")
    one_line_error(run("build_engine.py", demo, "--backend", "rtx", "--plugins", demo, "-o", tmp_path / "d.plan"),
                   "not a shared library (no ELF header)")
    one_line_error(run("build_engine.py", demo, "--backend", "rtx", "--plugins", tmp_path / "none.so",
                       "-o", tmp_path / "d.plan"), "no such file")
    assert not (tmp_path / "d.plan").exists()


# ---------------------------------------------------------------- validate.py


@pytest.mark.parametrize("args, text", [
    (["--iterations", "0"], "--iterations 0: must be >= 1"),  # defect 4
    (["--atol", "-1"], "--atol -1: must be a finite number >= 0"),  # defect 9
    (["--rtol", "nan"], "--rtol nan"),
    (["--input-shape", "y:2x8x64"], "--input-shape: 'y' is not a model input"),  # defect 8
    (["--input-shape", "x:2x8x64", "x:1x8x64"], "--input-shape: input 'x' given more than once"),  # defect 9
    (["--input-shape", "x:0x8x64"], "every dim must be >= 1"),
    (["--plugins", "/nonexistent.so"], "--plugins: plugin library /nonexistent.so: no such file"),  # defect 9
    (["--report", "{tmp}/missing/r.json"], "--report {tmp}/missing/r.json: folder"),  # defect 3
    (["--report", "{tmp}"], "is a folder"),
])
def test_validate_user_errors(demo, tmp_path, args, text):
    r = run("validate.py", demo, "--target", "cpu", *[a.format(tmp=tmp_path) for a in args])
    one_line_error(r, text.format(tmp=tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_validate_symbolic_hidden_dim(tmp_path):
    """Defect 5: a defaulted symbolic hidden dim (128) that the weights do not fit is a one-line
    error naming --input-shape, checked before any build; the right shape then passes."""
    m = tmp_path / "h.onnx"
    onnx.save(hidden_model(), m)
    one_line_error(run("validate.py", m, "--target", "cpu"), "--input-shape")
    r = run("validate.py", m, "--target", "cpu", "--input-shape", "x:2x8x64")
    assert r.returncode == 0 and "PASSED" in r.stdout, r.stderr[-2000:]


def test_validate_without_engine_says_so(demo, tmp_path):
    """Defect 15: without full TensorRT, auto compares the CPU plugin graph and says no engine was
    validated, in the verdict, the report and the exit code (3); --target cpu asks for exactly that."""
    try:
        import tensorrt  # noqa: F401

        pytest.skip("full TensorRT is installed: auto validates an engine")
    except ImportError:
        pass
    rep = tmp_path / "r.json"
    r = run("validate.py", demo, "--input-shape", "x:2x8x64", "--report", rep)
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "NO ENGINE VALIDATED" in r.stdout and "PASSED" not in r.stdout
    d = json.loads(rep.read_text())
    assert d["passed"] and d["engine_expected"] and not d["engine_compared"] and d["target"] == "cpu"
    r = run("validate.py", demo, "--target", "cpu", "--input-shape", "x:2x8x64")
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1].startswith("PASSED")


def test_validate_mismatch_exits_1_and_errors_exit_2(demo, tmp_path):
    """A numerical mismatch (1) and a user error (2) are told apart by the exit code."""
    r = run("validate.py", demo, "--target", "ort", "--fp16", "--atol", "0", "--rtol", "0", "--input-shape", "x:1x8x64")
    assert r.returncode == 1 and "FAILED" in r.stdout and "Traceback" not in r.stderr
    one_line_error(run("validate.py", tmp_path / "none.onnx"), "no such file")


# ---------------------------------------------------------------- substitute_plugins.py


def test_substitute_output_paths(demo, tmp_path):
    """Defect 3: -o onto a folder or into a missing folder is a one-line error; the model is untouched."""
    before = digest(demo)
    one_line_error(run("substitute_plugins.py", demo, "-o", tmp_path), "is a folder")
    one_line_error(run("substitute_plugins.py", demo, "-o", tmp_path / "no" / "x.onnx"), "does not exist")
    one_line_error(run("substitute_plugins.py", demo, "-o", tmp_path / "x.onnx", "--report", tmp_path / "no" / "r.json"),
                   "--report")
    one_line_error(run("substitute_plugins.py", tmp_path, "-o", tmp_path / "x.onnx"), "is a folder, not an ONNX file")
    assert digest(demo) == before and list(tmp_path.iterdir()) == []


def test_export_demo_output_paths(tmp_path):
    one_line_error(run("export_demo.py", "-o", tmp_path), "is a folder")
    one_line_error(run("export_demo.py", "-o", tmp_path / "no" / "d.onnx"), "does not exist")
    r = run("export_demo.py", "-o", tmp_path / "d.onnx")
    assert r.returncode == 0 and onnx.load(str(tmp_path / "d.onnx")).graph.node


def test_zero_size_model_dim_is_refused(tmp_path):
    """Defect 9: an input with a 0-size dim was accepted silently (taken as dynamic)."""
    m = tmp_path / "z.onnx"
    onnx.save(hidden_model(hidden_dim=0), m)
    one_line_error(run("validate.py", m, "--target", "cpu"), "input 'x': dim 2 has size 0")
    one_line_error(run("build_engine.py", m, "--backend", "rtx", "--no-substitute", "-o", tmp_path / "z.plan"),
                   "input 'x': dim 2 has size 0")


# ---------------------------------------------------------------- writing outputs (defect 6 of issue 32)


@pytest.fixture
def immutable(tmp_path):
    """immutable(path, data): an existing file nobody may replace (chattr +i), made mutable again after."""
    made = []

    def make(path: Path, data: bytes) -> Path:
        path.write_bytes(data)
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available here (needs root on ext4/xfs/btrfs)")
        made.append(path)
        return path

    yield make
    for p in made:
        subprocess.run(["chattr", "-i", str(p)], capture_output=True)


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_substitute_output_that_cannot_be_replaced(demo, tmp_path, immutable):
    """-o onto an immutable file ended in a traceback after the work; now one line, exit 2, file kept."""
    out = immutable(tmp_path / "out.onnx", b"keep me")
    one_line_error(run("substitute_plugins.py", demo, "-o", out), f"-o/--output {out}: not written: Operation not permitted")
    assert out.read_bytes() == b"keep me" and _leftovers(tmp_path) == []


def test_locked_report_loses_no_model(demo, tmp_path, immutable):
    """--report onto a locked file was written before the model, so the model was lost too: the model
    is written first, each file beside its target then renamed."""
    rep = immutable(tmp_path / "r.json", b"{}")
    out = tmp_path / "out.onnx"
    one_line_error(run("substitute_plugins.py", demo, "-o", out, "--report", rep), f"--report {rep}: not written")
    assert [n.op_type for n in onnx.load(str(out)).graph.node].count("SkipNorm") == 2  # both residual+LayerNorms
    assert rep.read_bytes() == b"{}" and _leftovers(tmp_path) == []


def test_build_plan_that_cannot_be_replaced(demo, tmp_path, immutable):
    pytest.importorskip("tensorrt_rtx_bindings", reason="TensorRT-RTX (tensorrt-rtx-cu13-bindings) not installed")
    plan = immutable(tmp_path / "d.plan", b"old plan")
    one_line_error(run("build_engine.py", demo, "--backend", "rtx", "--no-substitute", "-o", plan),
                   f"-o/--output {plan}: not written: Operation not permitted")
    assert plan.read_bytes() == b"old plan" and _leftovers(tmp_path) == []


def test_validate_report_that_cannot_be_replaced(demo, tmp_path, immutable):
    rep = immutable(tmp_path / "r.json", b"{}")
    one_line_error(run("validate.py", demo, "--target", "cpu", "--input-shape", "x:1x4x64", "--report", rep),
                   f"--report {rep}: not written")
    assert rep.read_bytes() == b"{}" and _leftovers(tmp_path) == []


def test_outputs_replace_existing_files_whole(demo, tmp_path):
    """An existing output is replaced by the new file in one rename (never truncated and rewritten)."""
    from trtplugins.paths import PathError, replacing, write_file

    out = tmp_path / "a.json"
    out.write_text("old")
    write_file(out, "new")
    assert out.read_text() == "new" and _leftovers(tmp_path) == []
    with pytest.raises(RuntimeError), replacing(out) as tmp:
        tmp.write_text("half")
        raise RuntimeError("the work failed")
    assert out.read_text() == "new" and _leftovers(tmp_path) == []
    with pytest.raises(PathError, match="cannot write beside it"):
        write_file(tmp_path / "missing" / "b.json", "x", "--report")


# ---------------------------------------------------------------- arguments (defect 9 of issue 32)


def test_ops_before_the_model(demo, tmp_path):
    """`--ops all demo.onnx` took demo.onnx as an op name and then missed the model."""
    r = run("substitute_plugins.py", "--ops", "all", demo, "-o", tmp_path / "p.onnx")
    assert r.returncode == 0, r.stderr
    assert [n.op_type for n in onnx.load(str(tmp_path / "p.onnx")).graph.node].count("BiasActivation") == 1
    from trtplugins import engine as B

    a = B.cli_args(["--ops", "default", "GatedActivation", str(demo)])
    assert a.model == str(demo) and a.ops == ["default", "GatedActivation"]


def test_op_names_in_any_case_and_the_nearest_suggested(demo):
    r = run("substitute_plugins.py", demo, "--dry-run", "--ops", "biasactivation")
    assert r.returncode == 0 and "-> BiasActivation" in r.stdout, r.stderr
    line = one_line_error(run("substitute_plugins.py", "--ops", "alll", demo, "--dry-run"),
                          "--ops: unknown pattern or plugin 'alll'; did you mean all?")
    assert "known: default, all, BiasActivation" in line
    one_line_error(run("build_engine.py", demo, "--ops", "gatedactivaton"), "did you mean GatedActivation")


def _undocumented_options(help_text: str) -> list[str]:
    """Options of an argparse --help with no description (neither beside them nor on the next line)."""
    lines = help_text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if re.match(r"^  -", line) and not re.match(r"^  \S.*?\s{2,}\S", line):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if not re.match(r"^ {8,}\S", nxt):
                out.append(line.strip())
    return out


@pytest.mark.parametrize("script", ["export_demo.py", "export_models.py", "substitute_plugins.py", "build_engine.py",
                                    "validate.py"])
def test_every_option_has_help(script):
    r = run(script, "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: trtplugins "), r.stderr
    assert _undocumented_options(r.stdout) == [], r.stdout


def test_validate_help_lists_every_exit_code():
    out = " ".join(run("validate.py", "--help").stdout.split())
    for text in ("0 matched", "1 outputs differ", "2 user error", "3 matched, but NO ENGINE was validated"):
        assert text in out, out
