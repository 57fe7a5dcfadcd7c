"""`python -m trtplugins`: what is built, what TensorRT is installed, what loads."""

from __future__ import annotations

import sys

from . import _lib


def main() -> int:
    print("library search path:")
    for d in _lib.search_dirs():
        libs = sorted(p.name for p in d.glob("libtrtplugins*.so")) if d.is_dir() else []
        print(f"  {d}: {', '.join(libs) if libs else '-'}")
    try:
        mod = _lib.trt_module()
    except _lib.PluginLibraryError as e:
        print(f"TensorRT: {e}")
        return 1
    print(f"TensorRT: {mod.__name__} {mod.__version__}")
    try:
        path = _lib.load()
    except _lib.PluginLibraryError as e:
        print(f"load: {e}")
        return 1
    print(f"loaded: {path}")
    for name, version, namespace in _lib.list_plugins():
        print(f"  {name} v{version} namespace={namespace!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
