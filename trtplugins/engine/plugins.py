"""Loading the plugin library into a backend's registry, and checking every plugin node has a creator."""

from __future__ import annotations

from .. import loader, ops
from .backend import Backend
from .errors import BuildError
from .model import node_attr


def load_hint(be: Backend) -> str:
    try:
        where = str(loader.library_path(be.major))
    except loader.PluginLibraryError:
        where = loader.library_name(be.major)
    return f"load {where} (--plugins PATH, or trtplugins.load())"


def library_hint(be: Backend) -> str:
    """What to do when the parser refuses a plugin node of this suite."""
    if be.rtx:
        return (f"TensorRT-RTX imports only IPluginV3 plugins (IPluginCreatorV3One): plugin nodes need plugin_version "
                f"{ops.V3_VERSION!r} (--plugin-api v3, build_engine.py's default for --backend rtx), and "
                f"{load_hint(be)}")
    return load_hint(be)


def plugin_api(be: Backend, requested: str | None = None) -> str:
    """The plugin API the substitution writes for a backend: TensorRT-RTX imports only V3 nodes;
    full TensorRT takes both (default ops.DEFAULT_API)."""
    if requested is None:
        return "v3" if be.rtx else ops.DEFAULT_API
    if requested not in ops.VERSIONS:
        raise BuildError(f"--plugin-api: unknown plugin API {requested!r}; expected one of {', '.join(ops.VERSIONS)}")
    if be.rtx and ops.VERSIONS[requested] != ops.V3_VERSION:
        raise BuildError(f"--plugin-api {requested}: TensorRT-RTX imports only IPluginV3 plugins (use --plugin-api v3)")
    return requested


def check_plugins_arg(be: Backend, lib: str | None) -> None:
    """--plugins: a shared library of the backend's TensorRT major (checked before any work)."""
    if lib:
        try:
            loader.check_library_file(lib, be.trt)
        except loader.PluginLibraryError as e:
            raise BuildError(f"--plugins: {e}") from None


def load_plugins(be: Backend, lib: str | None = None, required: bool = True, log=print) -> str | None:
    """Load the plugin library into the backend's registry: `lib`, else trtplugins.load()'s default.
    A *autoreg* library is dlopen'ed, others go through registry.load_library. (TensorRT-RTX builds
    models with plugin nodes in a child process, which loads the returned library again.)"""
    try:
        path = loader.load(be.trt.get_plugin_registry(), lib, mod=be.trt)
    except loader.PluginLibraryError as e:
        if required or lib:
            raise BuildError(f"{'--plugins: ' if lib else 'plugin library not loaded: '}{e}"
                             f"{'' if lib else '; ' + load_hint(be)}") from None
        return None
    log(f"plugins: loaded {path}")
    return str(path)


def missing_creators(registry, nodes) -> list[str]:
    """One line per plugin node with no registered creator."""
    out = []
    for n in nodes:
        ver, ns = node_attr(n, "plugin_version", ops.VERSION), node_attr(n, "plugin_namespace", ops.NAMESPACE)
        if registry.get_creator(n.op_type, ver, ns) is None:
            out.append(f"node {n.name!r}: plugin {n.op_type} v{ver}{f' ns {ns!r}' if ns else ''} is not registered")
    return out
