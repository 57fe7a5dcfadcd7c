"""`trtplugins demo`: the main job end to end on the built-in demo model, in one folder.

export the demo (demo.onnx) -> substitute plugin nodes (demo.plugins.onnx, demo.report.json) ->
validate on the CPU against ONNX Runtime, FP32 and FP16 -> build an engine (demo.plan) with the
builder that is installed (full TensorRT, else TensorRT-RTX), with the plugin layers when the plugin
library was built (else without, saying so), or say that no builder is installed.
Exit 0 when every step that ran passed, 1 when a validation failed, 2 on a user error or a
failed build."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import demo, engine, loader, paths, validate
from .graph import GraphError, io as graph_io, substitute


def main(argv=None, prog: str = "trtplugins demo") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                                 epilog="exit codes: 0 every step that ran passed; 1 a validation failed; "
                                        "2 user error or failed build")
    ap.add_argument("folder", nargs="?", default="trtplugins-demo",
                    help="where the demo's files go (made if missing; default trtplugins-demo)")
    a = ap.parse_args(argv)
    out = Path(a.folder)
    try:
        if out.exists() and not out.is_dir():
            raise paths.PathError(f"{out}: is a file, not a folder")
        out.mkdir(parents=True, exist_ok=True)
        return _run(out)
    except (engine.BuildError, paths.PathError, GraphError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _run(out: Path) -> int:
    model_path, plugins_path = out / "demo.onnx", out / "demo.plugins.onnx"
    print(f"[1/4] export: {model_path} (a transformer block, random weights)")
    paths.write_file(model_path, demo.make_model().SerializeToString())

    print(f"[2/4] substitute: {plugins_path}, {out / 'demo.report.json'}")
    subst, report = substitute(graph_io.load_model(model_path))
    graph_io.save_model(subst, plugins_path)
    paths.write_file(out / "demo.report.json", report.json())
    print("  " + str(report).replace("\n", "\n  "))

    failed = False
    validate.quiet()
    for precision in ("fp32", "fp16"):
        print(f"[3/4] validate on the CPU, {precision}: the plugin graph (numpy reference) vs ONNX Runtime")
        r = validate.validate(str(model_path), target="cpu", precision=precision, shapes={"x": (2, 16, 64)},
                              log=lambda *_: None)
        print("  " + r.table().replace("\n", "\n  "))
        failed |= not r.passed

    print("[4/4] build an engine")
    built = _build(model_path, out / "demo.plan")
    print(f"done: {'a validation FAILED' if failed else 'every step passed'}{'' if built else ' (no engine built)'}; "
          f"files in {out}/")
    return 1 if failed else 0


def _build(model_path: Path, plan: Path) -> bool:
    """Build `plan` with the installed builder, or say why not; True when built."""
    try:
        be = engine.backend()
    except engine.BuildError as e:
        print(f"  skipped: {e}")
        return False
    print(f"  backend: {be.label} ({be.why})")
    try:
        loader.library_path(be.major)
        plugins = True
    except loader.PluginLibraryError:
        plugins = False
        print(f"  WITHOUT plugin layers: no plugin library for {be.label} was built (an install without TensorRT "
              "headers builds none: reinstall with TRTPLUGINS_TENSORRT_ROOTS; `trtplugins info` says more)")
    res, _ = engine.build_file(model_path, be=be, substitute=plugins, log=lambda line: print(f"  {line}"),
                               progress=False)
    res.path = str(plan)
    paths.write_file(plan, res.plan)
    print("  " + res.summary().replace("\n", "\n  "))
    return True
