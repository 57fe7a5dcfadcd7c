"""Loading the plugin library into a backend's registry, and checking every plugin node has a creator."""

from __future__ import annotations

from .. import loader, ops
from .backend import Backend
from .errors import BuildError
from .model import node_attr


def library_hint(be: Backend) -> str:
    if be.rtx:
        return ("TensorRT-RTX imports only IPluginV3 plugins (IPluginCreatorV3One) from ONNX, and this suite's "
                "plugins are IPluginV2DynamicExt: build with --no-substitute for TensorRT-RTX")
    try:
        where = str(loader.library_path(be.major))
    except loader.PluginLibraryError:
        where = loader.library_name(be.major)
    return f"load {where} (--plugins PATH, or trtplugins.load())"


def check_plugins_arg(be: Backend, lib: str | None) -> None:
    """--plugins: a shared library of the backend's TensorRT major (checked before any work)."""
    if lib:
        try:
            loader.check_library_file(lib, be.trt)
        except loader.PluginLibraryError as e:
            raise BuildError(f"--plugins: {e}") from None


def load_plugins(be: Backend, lib: str | None = None, required: bool = True, log=print) -> str | None:
    """Load the plugin library into the backend's registry: `lib`, else trtplugins.load()'s default.
    A *autoreg* library is dlopen'ed, others go through registry.load_library."""
    if lib is None and be.rtx:
        if required:
            raise BuildError("model has plugin nodes: " + library_hint(be))
        return None
    try:
        path = loader.load(be.trt.get_plugin_registry(), lib, mod=be.trt)
    except loader.PluginLibraryError as e:
        if required or lib:
            raise BuildError(f"{'--plugins: ' if lib else 'plugin library not loaded: '}{e}"
                             f"{'' if lib else '; ' + library_hint(be)}") from None
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
