"""Old name of trtplugins.loader (kept so existing imports keep working)."""

from .loader import (  # noqa: F401
    LIBRARY_ENV,
    VARIANTS,
    PluginLibraryError,
    find_library,
    library_name,
    library_path,
    list_plugins,
    load,
    search_dirs,
    trt_major,
    trt_module,
)
