"""The one place that finds TensorRT's Python module, names the plugin libraries and loads them.

Libraries are built per TensorRT major (the V2 plugin ABI differs between 10 and 11) in two
variants:
  libtrtplugins_trt<N>.so          for IPluginRegistry::loadLibrary (registry.load_library)
  libtrtplugins_trt<N>_autoreg.so  registers itself on dlopen (ctypes, Polygraphy --plugins, Triton)

TensorRT modules, by kind:
  tensorrt  full TensorRT 10.x / 11.x (builder + runtime)
  rtx       TensorRT-RTX (builder + runtime; the TensorRT 11 library is its default)
  lean      the lean runtime (runtime only)
"""

from __future__ import annotations

import ctypes
import importlib
import os
import re
import sys
from pathlib import Path
from typing import Iterable

from . import schema

LIBRARY_ENV = "TRTPLUGINS_LIBRARY"  # a library file, or a folder holding the libraries
VARIANTS = ("loadlib", "autoreg")
#: importable module names per kind, in the order they are tried
MODULES = {
    "tensorrt": ("tensorrt",),
    "rtx": ("tensorrt_rtx", "tensorrt_rtx_bindings"),
    "lean": ("tensorrt_lean_bindings", "tensorrt_lean"),
}
#: TensorRT-RTX 1.x implements the TensorRT 11 plugin ABI
RTX_PLUGIN_MAJOR = 11
#: the split PyPI wheels put TensorRT-RTX's shared libraries in this package
RTX_LIBS_MODULE = "tensorrt_rtx_libs"
_PACKAGE_DIR = Path(__file__).resolve().parent
_loaded: dict[tuple[int, str], object] = {}


class PluginLibraryError(RuntimeError):
    """The plugin library (or TensorRT itself) is missing, mismatched or was refused."""


def import_trt(kinds: Iterable[str] = ("tensorrt", "lean"), need: str = "get_plugin_registry"):
    """(module, kind) of the first importable TensorRT module of `kinds` that has attribute `need`.

    Raises PluginLibraryError naming every module tried and why it did not qualify.
    """
    errors = []
    for kind in kinds:
        if kind not in MODULES:
            raise PluginLibraryError(f"unknown TensorRT kind {kind!r}; expected one of {sorted(MODULES)}")
        for name in MODULES[kind]:
            try:
                mod = importlib.import_module(name)
            except ImportError as e:
                errors.append(f"{name}: {e}")
                continue
            if hasattr(mod, need):
                return mod, kind
            errors.append(f"{name}: has no {need}")
    raise PluginLibraryError("no TensorRT Python module found (" + "; ".join(errors) + ")")


def rtx_runtime_library(mod=None) -> Path:
    """libtensorrt_rtx.so.<N> of the installed TensorRT-RTX: in its libs wheel, else beside its module."""
    mod = mod or import_trt(("rtx",), need="Builder")[0]
    dirs = []
    try:
        dirs.append(Path(importlib.import_module(RTX_LIBS_MODULE).__file__).parent)
    except ImportError:
        pass
    dirs.append(Path(mod.__file__).parent)
    for d in dirs:
        found = sorted(d.glob("libtensorrt_rtx.so.*"))
        if found:
            return found[0]
    raise PluginLibraryError(f"libtensorrt_rtx.so.* not found in {', '.join(map(str, dirs))}")


def module_kind(mod) -> str:
    """'tensorrt', 'rtx' or 'lean' for an imported TensorRT module."""
    for kind, names in MODULES.items():
        if mod.__name__.split(".")[0] in names:
            return kind
    return "tensorrt"


def trt_module(name: str | None = None):
    """The installed TensorRT Python module: `name` if given, else `tensorrt`, else the lean runtime's."""
    if name is not None:
        try:
            return importlib.import_module(name)
        except ImportError as e:
            raise PluginLibraryError(f"no TensorRT Python module found ({name}: {e})") from None
    return import_trt()[0]


def trt_major(mod=None) -> int:
    """The TensorRT major whose library a module loads by default (TensorRT-RTX: 11)."""
    mod = mod or trt_module()
    if module_kind(mod) == "rtx":
        return RTX_PLUGIN_MAJOR
    return int(str(mod.__version__).split(".")[0])


def library_name(major: int, variant: str = "loadlib") -> str:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return f"libtrtplugins_trt{major}{'' if variant == 'loadlib' else '_autoreg'}.so"


def _env_library() -> Path | None:
    """TRTPLUGINS_LIBRARY when it names a file; a folder is a search dir; anything else is an error."""
    env = os.environ.get(LIBRARY_ENV)
    if not env:
        return None
    p = Path(env)
    if p.is_file():
        return p
    if p.is_dir():
        return None
    raise PluginLibraryError(f"{LIBRARY_ENV}={env}: no such file or folder (unset it to use the built libraries)")


def search_dirs() -> list[Path]:
    """Where libraries are looked for, in order."""
    dirs = []
    env = os.environ.get(LIBRARY_ENV)
    if env and Path(env).is_dir():
        dirs.append(Path(env))
    dirs += build_dirs(_PACKAGE_DIR.parent)
    # installed wheel; editable installs put the libraries beside the package's other path entries
    dirs += [Path(p) / "lib" for p in sys.modules[__package__].__path__]
    return dirs


def build_dirs(root: Path) -> list[Path]:
    """A source checkout's build folders: build/<wheel tag>/ (pip install builds there). Other
    folders under build/ (experiments, examples) are never searched."""
    build = root / "build"
    if not build.is_dir():
        return []
    tag = re.compile(r"(py|cp|pp)\d+\w*-[\w.]+-[\w.]+")
    return sorted(p for p in build.iterdir() if p.is_dir() and tag.fullmatch(p.name))


def find_library(name: str) -> tuple[Path | None, list[str]]:
    """`name` in the TRTPLUGINS_LIBRARY folder if it is there, else the newest file called `name` in
    search_dirs() (the freshest build wins); and every path tried."""
    tried = [d / name for d in search_dirs()]
    env = os.environ.get(LIBRARY_ENV)
    if env and (Path(env) / name).is_file():
        return Path(env) / name, [str(p) for p in tried]
    found = [p for p in tried if p.is_file()]
    return (max(found, key=lambda p: p.stat().st_mtime) if found else None), [str(p) for p in tried]


def library_path(major: int | None = None, variant: str = "loadlib") -> Path:
    """Path of the library for a TensorRT major (default: the installed one)."""
    env = _env_library()
    if env is not None:
        return env
    major = trt_major() if major is None else major
    name = library_name(major, variant)
    path, tried = find_library(name)
    if path is None:
        raise PluginLibraryError(
            f"{name} not found. Tried: {', '.join(tried)}. Build it with `pip install -e .` on a machine with nvcc and "
            f"TensorRT {major} headers (TENSORRT_ROOT or TRTPLUGINS_TENSORRT_ROOTS), or set {LIBRARY_ENV}."
        )
    return path


def major_of(path: Path) -> int | None:
    """The TensorRT major a library was built for, from its name."""
    m = re.search(r"trtplugins_trt(\d+)", Path(path).name)
    return int(m.group(1)) if m else None


def check_library_file(path: str | os.PathLike, mod=None) -> Path:
    """A plugin library path that exists, is a shared library and matches the module's major."""
    p = Path(path)
    if not p.exists():
        raise PluginLibraryError(f"plugin library {p}: no such file")
    if not p.is_file():
        raise PluginLibraryError(f"plugin library {p}: is a folder, not a library file")
    with open(p, "rb") as f:
        if f.read(4) != b"\x7fELF":
            raise PluginLibraryError(f"plugin library {p}: not a shared library (no ELF header)")
    if mod is not None and module_kind(mod) != "rtx":  # RTX's plugin ABI is not TensorRT's major
        built_for, major = major_of(p), trt_major(mod)
        if built_for is not None and built_for != major:
            raise PluginLibraryError(
                f"{p.name} is built for TensorRT {built_for}, but {mod.__name__} {mod.__version__} needs the TensorRT "
                f"{major} plugin ABI: load {library_name(major, 'autoreg' if 'autoreg' in p.name else 'loadlib')} "
                f"instead (the plugin ABI differs between majors)"
            )
    return p


def load(registry=None, path: str | os.PathLike | None = None, mod=None) -> Path:
    """Load the plugin library into a registry (default: the installed TensorRT's).

    path: default library_path() for the module's major (TRTPLUGINS_LIBRARY honoured). A
    `*autoreg*` library is dlopen'ed (it registers itself), any other goes through
    registry.load_library. Idempotent; refuses a library built for another TensorRT major.
    """
    mod = mod or trt_module()
    registry = registry if registry is not None else mod.get_plugin_registry()
    lib = check_library_file(path if path is not None else library_path(trt_major(mod), "loadlib"), mod)
    key = (id(registry), str(lib.resolve()))
    if key in _loaded:
        return lib
    if _registered(registry):  # e.g. the autoreg variant was dlopen'ed already
        _loaded[key] = None
        return lib
    if "autoreg" in lib.name:
        try:
            handle = ctypes.CDLL(str(lib.resolve()), mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            raise PluginLibraryError(f"plugin library {lib}: dlopen failed: {e}") from None
    else:
        handle = registry.load_library(str(lib.resolve()))
    if handle is None or not _registered(registry):
        how = ("registers on dlopen only in a process that loaded libnvinfer" if "autoreg" in lib.name else
               "loadLibrary needs the exports getCreators and setLoggerFinder")
        raise PluginLibraryError(f"{mod.__name__} {mod.__version__} refused {lib}: its creators were not registered "
                                 f"({how}; build and TensorRT major must match)")
    _loaded[key] = handle
    return lib


def _registered(registry) -> bool:
    names = {c.name for c in registry.all_creators}
    return all(name in names for name in schema.OPS)


def list_plugins(registry=None) -> list[tuple[str, str, str]]:
    """(name, version, namespace) of this suite's creators in the registry."""
    registry = registry if registry is not None else trt_module().get_plugin_registry()
    return sorted(
        (c.name, c.plugin_version, c.plugin_namespace) for c in registry.all_creators if c.name in schema.OPS
    )
