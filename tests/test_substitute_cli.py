"""The CLI and load_model on good and bad input: clear errors, non-zero exit, the input
file never modified."""

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from trtplugins.graph import GraphError, load_model, substitute

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "substitute_plugins.py"
sys.path.insert(0, str(SCRIPT.parent))
import substitute_plugins as cli  # noqa: E402


def digest(p):
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def gelu_model(opset=17, rank=True):
    x = h.make_tensor_value_info("x", T.FLOAT, ["b", 8] if rank else None)
    y = h.make_tensor_value_info("y", T.FLOAT, ["b", 8])
    c = [h.make_tensor(n, T.FLOAT, [], [v]) for n, v in (("r2", 2**0.5), ("one", 1.0), ("half", 0.5), ("bias", 0.0))]
    bias = h.make_tensor("b8", T.FLOAT, [8], [0.1 * i for i in range(8)])
    nodes = [
        h.make_node("Add", ["x", "b8"], ["xb"]),
        h.make_node("Div", ["xb", "r2"], ["d"]), h.make_node("Erf", ["d"], ["e"]),
        h.make_node("Add", ["e", "one"], ["a"]), h.make_node("Mul", ["xb", "a"], ["m"]),
        h.make_node("Mul", ["m", "half"], ["y"]),
    ]
    return h.make_model(h.make_graph(nodes, "g", [x], [y], c + [bias]), opset_imports=[h.make_opsetid("", opset)])


@pytest.fixture
def model_file(tmp_path):
    p = tmp_path / "in.onnx"
    onnx.save(gelu_model(), str(p))
    return p


def test_cli_writes_model_and_report(model_file, tmp_path, capsys):
    before = digest(model_file)
    out, rep = tmp_path / "out.onnx", tmp_path / "r.json"
    assert cli.main([str(model_file), "-o", str(out), "--report", str(rep)]) == 0
    text = capsys.readouterr().out
    assert "gelu_erf" in text and "1 matches" in text and "6 nodes removed" in text
    assert digest(model_file) == before
    m = onnx.load(str(out))
    onnx.checker.check_model(m, full_check=True)
    assert [n.op_type for n in m.graph.node] == ["BiasActivation"]
    assert json.loads(rep.read_text())["patterns"]["gelu_erf"]["matches"] == 1


def _versions(m):
    return [a.s.decode() for n in m.graph.node for a in n.attribute if a.name == "plugin_version"]


def test_cli_plugin_api(model_file, tmp_path, capsys):
    """Default: IPluginV3 nodes (plugin_version "2", what TensorRT-RTX imports); --plugin-api v2: "1"."""
    v2, v3 = tmp_path / "v2.onnx", tmp_path / "v3.onnx"
    assert cli.main([str(model_file), "-o", str(v2), "--plugin-api", "v2"]) == 0
    assert cli.main([str(model_file), "-o", str(v3)]) == 0
    assert _versions(onnx.load(str(v2))) == ["1"] and _versions(onnx.load(str(v3))) == ["2"]
    onnx.checker.check_model(onnx.load(str(v3)), full_check=True)
    with pytest.raises(GraphError, match="unknown plugin API 'v4'; expected one of v2, v3"):
        substitute(gelu_model(), plugin_api="v4")
    with pytest.raises(SystemExit) as e:
        cli.main([str(model_file), "-o", str(v3), "--plugin-api", "v4"])
    assert e.value.code == 2


def test_cli_dry_run_and_fp16(model_file, tmp_path, capsys):
    assert cli.main([str(model_file), "--dry-run"]) == 0
    assert "gelu_erf" in capsys.readouterr().out
    assert not list(tmp_path.glob("out*"))
    out = tmp_path / "out16.onnx"
    assert cli.main([str(model_file), "-o", str(out), "--fp16"]) == 0
    (node,) = [n for n in onnx.load(str(out)).graph.node if n.op_type == "BiasActivation"]
    assert node.attribute[1].t.data_type == T.FLOAT16 or node.attribute[0].t.data_type == T.FLOAT16


def test_cli_refuses_to_overwrite_input(model_file):
    before = digest(model_file)
    assert cli.main([str(model_file), "-o", str(model_file)]) == 2
    assert digest(model_file) == before


def bad_files(tmp_path):
    good = gelu_model().SerializeToString()
    files = {
        "garbage": b"this is not a model\n" * 10,
        "empty": b"",
        "truncated-half": good[: len(good) // 2],
        "truncated-tail": good[:-3],
        "opset9-unconvertible": h.make_model(h.make_graph(
            [h.make_node("Upsample", ["x"], ["y"])], "g", [h.make_tensor_value_info("x", T.FLOAT, ["b", 8])],
            [h.make_tensor_value_info("y", T.FLOAT, ["b", 8])]), opset_imports=[h.make_opsetid("", 9)]).SerializeToString(),
        "unknown-op": h.make_model(h.make_graph(
            [h.make_node("Frobnicate", ["x"], ["y"], name="frob")], "g", [h.make_tensor_value_info("x", T.FLOAT, ["b", 8])],
            [h.make_tensor_value_info("y", T.FLOAT, ["b", 8])]), opset_imports=[h.make_opsetid("", 17)]).SerializeToString(),
        "dynamic-rank": gelu_model(rank=False).SerializeToString(),
    }
    for name, data in files.items():
        (tmp_path / f"{name}.onnx").write_bytes(data)
    return files


EXPECTED = {
    "garbage": "ONNX model", "empty": "empty file", "truncated-half": "truncated",
    "truncated-tail": "truncated", "dynamic-rank": "dynamic rank",
    "opset9-unconvertible": "unsupported opset 9: supported 13..[0-9]+, and onnx.version_converter could not convert it",
    # the checker's own message naming the node; "corrupt" only for bytes that do not parse
    "unknown-op": r"invalid ONNX model: No Op registered for Frobnicate .*\(node 'frob', Frobnicate\)",
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_bad_input(tmp_path, name, capsys):
    bad_files(tmp_path)
    path = tmp_path / f"{name}.onnx"
    before = digest(path)
    with pytest.raises(GraphError, match=EXPECTED[name]):
        load_model(path)
    assert cli.main([str(path), "-o", str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err
    assert re.search(EXPECTED[name], err) and ("corrupt" not in err or name.startswith(("truncated", "garbage")))
    assert digest(path) == before and not (tmp_path / "out.onnx").exists()


def test_missing_file_and_unknown_op(tmp_path, model_file, capsys):
    assert cli.main([str(tmp_path / "nope.onnx"), "--dry-run"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert cli.main([str(model_file), "--dry-run", "--ops", "gelu7"]) == 2
    assert "unknown pattern or plugin 'gelu7'" in capsys.readouterr().err


def test_substitute_rejects_dynamic_rank_model():
    with pytest.raises(GraphError, match="dynamic rank"):
        substitute(gelu_model(rank=False))


def test_cli_subprocess_exit_code(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(b"\x00\x01garbage")
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "bad.onnx"), "-o", str(tmp_path / "o.onnx")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "error:" in r.stderr


def test_nothing_written_to_cwd(tmp_path, monkeypatch):
    """ORT's symbolic shape inference saves a temp model when it gives up: never here."""
    monkeypatch.chdir(tmp_path)
    out, _ = substitute(gelu_model())
    substitute(out)  # plugin nodes: the inference that would give up
    assert list(tmp_path.iterdir()) == []
