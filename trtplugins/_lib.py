"""Find and load the native plugin library that matches the installed TensorRT.

Libraries are built per TensorRT major (the V2 plugin ABI differs between 10
and 11) in two variants:
  libtrtplugins_trt<N>.so          for IPluginRegistry::loadLibrary (used here)
  libtrtplugins_trt<N>_autoreg.so  registers itself on dlopen (ctypes, Polygraphy --plugins)
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path

from . import ops

LIBRARY_ENV = "TRTPLUGINS_LIBRARY"  # a library file, or a folder holding the libraries
VARIANTS = ("loadlib", "autoreg")
_PACKAGE_DIR = Path(__file__).resolve().parent
_loaded: dict[tuple[int, str], object] = {}


class PluginLibraryError(RuntimeError):
    """The plugin library (or TensorRT itself) is missing, mismatched or was refused."""


def trt_module():
    """The installed TensorRT Python module: `tensorrt`, else the lean runtime's."""
    errors = []
    for name in ("tensorrt", "tensorrt_lean_bindings", "tensorrt_lean"):
        try:
            mod = importlib.import_module(name)
        except ImportError as e:
            errors.append(f"{name}: {e}")
            continue
        if hasattr(mod, "get_plugin_registry"):
            return mod
        errors.append(f"{name}: no get_plugin_registry (a stub package?)")
    raise PluginLibraryError("no TensorRT Python module found (" + "; ".join(errors) + ")")


def trt_major(mod=None) -> int:
    mod = mod or trt_module()
    return int(str(mod.__version__).split(".")[0])


def library_name(major: int, variant: str = "loadlib") -> str:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return f"libtrtplugins_trt{major}{'' if variant == 'loadlib' else '_autoreg'}.so"


def search_dirs() -> list[Path]:
    """Where libraries are looked for, in order."""
    dirs = []
    env = os.environ.get(LIBRARY_ENV)
    if env and Path(env).is_dir():
        dirs.append(Path(env))
    # a source checkout's build dirs (pip install -e . builds there too)
    build = _PACKAGE_DIR.parent / "build"
    if build.is_dir():
        dirs += sorted(p for p in build.iterdir() if p.is_dir()) + [build]
    # installed wheel; editable installs put the libraries beside the package's other path entries
    dirs += [Path(p) / "lib" for p in sys.modules[__package__].__path__]
    return dirs


def find_library(name: str) -> tuple[Path | None, list[str]]:
    """The newest file called `name` in search_dirs() (the freshest build wins), and every path tried."""
    tried = [d / name for d in search_dirs()]
    found = [p for p in tried if p.is_file()]
    return (max(found, key=lambda p: p.stat().st_mtime) if found else None), [str(p) for p in tried]


def library_path(major: int | None = None, variant: str = "loadlib") -> Path:
    """Path of the library for a TensorRT major (default: the installed one)."""
    major = trt_major() if major is None else major
    env = os.environ.get(LIBRARY_ENV)
    if env and Path(env).is_file():
        return Path(env)
    name = library_name(major, variant)
    path, tried = find_library(name)
    if path is None:
        raise PluginLibraryError(
            f"{name} not found. Tried: {', '.join(tried)}. Build it with `pip install -e .` on a machine with nvcc and "
            f"TensorRT {major} headers (TENSORRT_ROOT or TRTPLUGINS_TENSORRT_ROOTS), or set {LIBRARY_ENV}."
        )
    return path


def _major_of(path: Path) -> int | None:
    m = re.search(r"trtplugins_trt(\d+)", path.name)
    return int(m.group(1)) if m else None


def load(registry=None, path: str | os.PathLike | None = None) -> Path:
    """Load the plugin library into a registry (default: the installed TensorRT's).

    Idempotent; refuses a library built for another TensorRT major.
    """
    mod = trt_module()
    major = trt_major(mod)
    registry = registry if registry is not None else mod.get_plugin_registry()
    lib = Path(path) if path is not None else library_path(major, "loadlib")
    built_for = _major_of(lib)
    if built_for is not None and built_for != major:
        raise PluginLibraryError(
            f"{lib.name} is built for TensorRT {built_for}, but TensorRT {mod.__version__} is installed: load "
            f"{library_name(major)} instead (the plugin ABI differs between majors)"
        )
    key = (id(registry), str(lib.resolve()))
    if key in _loaded:
        return lib
    if _registered(registry):  # e.g. the autoreg variant was dlopen'ed already
        _loaded[key] = None
        return lib
    handle = registry.load_library(str(lib))
    if handle is None or not _registered(registry):
        raise PluginLibraryError(f"TensorRT refused {lib} (see the TensorRT log above for its reason)")
    _loaded[key] = handle
    return lib


def _registered(registry) -> bool:
    names = {c.name for c in registry.all_creators}
    return all(name in names for name in ops.OPS)


def list_plugins(registry=None) -> list[tuple[str, str, str]]:
    """(name, version, namespace) of this suite's creators in the registry."""
    registry = registry if registry is not None else trt_module().get_plugin_registry()
    return sorted(
        (c.name, c.plugin_version, c.plugin_namespace) for c in registry.all_creators if c.name in ops.OPS
    )
