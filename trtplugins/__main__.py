"""`python -m trtplugins`: what is built, which TensorRT is installed, what loads.

Exit 0 when the plugin library for the installed TensorRT loads and registers every op;
1 (with the reason) otherwise."""

from __future__ import annotations

import sys

from . import loader, ops


def main() -> int:
    print("library search path:")
    built = set()
    for d in loader.search_dirs():
        libs = sorted(p.name for p in d.glob("libtrtplugins*.so")) if d.is_dir() else []
        built.update(libs)
        print(f"  {d}: {', '.join(libs) if libs else '-'}")
    plugin_libs = sorted(n for n in built if loader.major_of(n) is not None and "harness" not in n)
    print(f"built plugin libraries: {', '.join(plugin_libs) if plugin_libs else 'NONE'}")
    if not plugin_libs:
        print("FAILED: no plugin library was built: the install found no nvcc or no TensorRT headers (pip install -v "
              "shows CMake's warning). Set TENSORRT_ROOT or TRTPLUGINS_TENSORRT_ROOTS to TensorRT roots holding "
              "include/NvInfer.h, put nvcc on PATH, and reinstall.")
        return 1
    try:
        mod = loader.trt_module()
    except loader.PluginLibraryError as e:
        print(f"FAILED: TensorRT: {e} (pip install 'trtplugins[trt]' or a TensorRT runtime)")
        return 1
    print(f"TensorRT: {mod.__name__} {mod.__version__} (plugin library for TensorRT {loader.trt_major(mod)})")
    try:
        path = loader.load(mod=mod)
    except loader.PluginLibraryError as e:
        print(f"FAILED: load: {e}")
        return 1
    print(f"loaded: {path}")
    found = loader.list_plugins()
    for name, version, namespace in found:
        print(f"  {name} v{version} namespace={namespace!r}")
    missing = sorted(set(ops.OPS) - {n for n, _, _ in found})
    if missing:
        print(f"FAILED: creators missing after loading: {missing}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
