"""`trtplugins info` (also `trtplugins` and `python -m trtplugins` alone): what works here.

The graph tools, what native libraries were built, which TensorRT modules are installed and which
of them builds engines, and whether the plugin library loads into a TensorRT registry (full
TensorRT, else the lean runtime, else TensorRT-RTX) and registers every op.
Exit 0 when nothing installed is broken; 1 (with the reason) when a library is refused or missing
creators, or TRTPLUGINS_LIBRARY is wrong."""

from __future__ import annotations

import argparse
import os
import shutil

from . import __version__, loader, ops

ROLE = {"tensorrt": "builds and runs engines", "rtx": "builds engines (CPU is enough)", "lean": "runs engines"}
NO_NATIVE = ("none: the install found no TensorRT headers, so it built nothing native (the graph tools need none). "
             "For the plugin libraries reinstall with TRTPLUGINS_TENSORRT_ROOTS (or TENSORRT_ROOT) naming TensorRT "
             "roots holding include/NvInfer.h{nvcc}; for the kernel library alone with TRTPLUGINS_BUILD_KERNELS=1.")


def main(argv=None, prog: str = "trtplugins info") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                                 epilog="exit codes: 0 nothing installed is broken; 1 a library was refused, lacks "
                                        "creators, or TRTPLUGINS_LIBRARY is wrong")
    ap.parse_args(argv)
    print(f"trtplugins {__version__}: graph tools (substitute, FP16, validation on the CPU) ready: they need no "
          "TensorRT and no GPU")
    built = _native()
    modules = _modules()
    builders = [k for k in ("tensorrt", "rtx") if k in modules]
    if builders:
        mod = modules[builders[0]]
        why = "" if builders[0] == "tensorrt" else ": full TensorRT (module tensorrt) is not installed"
        print(f"engine builder: {_label(mod)} (trtplugins build picks it{why})")
    else:
        print(f"engine builder: none (pip install 'trtplugins[rtx]' for TensorRT-RTX, which builds on the CPU; "
              f"[trt] for full TensorRT)")
    plugin_libs = sorted(n for n in built if loader.major_of(n) is not None and "harness" not in n)
    if not plugin_libs and not os.environ.get(loader.LIBRARY_ENV):
        print("plugins: not loaded: no plugin library was built")
        print("OK: graph tools only")
        return 0
    kind = next((k for k in ("tensorrt", "lean", "rtx") if k in modules), None)
    if kind is None:
        print("plugins: not loaded: no TensorRT module is installed (pip install 'trtplugins[rtx]', or a TensorRT "
              "runtime)")
        print("OK: graph tools; plugin libraries built")
        return 0
    mod = modules[kind]
    try:
        path = loader.load(mod.get_plugin_registry(), mod=mod)
    except loader.PluginLibraryError as e:
        print(f"FAILED: load: {e}")
        return 1
    print(f"loaded into {_label(mod)}: {path}")
    found = loader.list_plugins(mod.get_plugin_registry())
    for name, version, namespace in found:
        print(f"  {name} v{version} namespace={namespace!r}")
    missing = sorted(set(ops.OPS) - {n for n, _, _ in found})
    if missing:
        print(f"FAILED: creators missing after loading: {missing}")
        return 1
    print("OK")
    return 0


def _native() -> set[str]:
    """Print the library search path and what it holds; return the library names found."""
    print("library search path:")
    built: set[str] = set()
    for d in loader.search_dirs():
        libs = sorted(p for p in d.glob("libtrtplugins*.so")) if d.is_dir() else []
        built.update(p.name for p in libs)
        print(f"  {d}: {', '.join(f'{p.name} ({p.stat().st_size / 2**20:.1f} MB)' for p in libs) if libs else '-'}")
    plugin_libs = sorted(n for n in built if loader.major_of(n) is not None and "harness" not in n)
    if built:
        print(f"built plugin libraries: {', '.join(plugin_libs) if plugin_libs else 'NONE (the kernel library only)'}")
    else:
        nvcc = "" if shutil.which("nvcc") else " and nvcc on PATH"
        print("native libraries: " + NO_NATIVE.format(nvcc=nvcc))
    return built


def _modules() -> dict:
    """The importable TensorRT modules by kind, each printed with its role."""
    found = {}
    for kind in ("tensorrt", "rtx", "lean"):
        try:
            found[kind] = loader.import_trt((kind,), need="get_plugin_registry")[0]
            print(f"TensorRT module: {_label(found[kind])} ({found[kind].__name__}): {ROLE[kind]}")
        except loader.PluginLibraryError:
            pass
    if not found:
        print("TensorRT module: none installed (engines need one: pip install 'trtplugins[rtx]', [trt] or a runtime)")
    return found


def _label(mod) -> str:
    return f"{'TensorRT-RTX' if loader.module_kind(mod) == 'rtx' else 'TensorRT'} {mod.__version__}"

