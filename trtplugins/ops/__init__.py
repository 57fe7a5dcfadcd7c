"""The ops: their schemas (trtplugins.schema, read from schema.json, which the C++ declarations
generate) and one module per op beside this file (its reference, patterns drawn in its docstring,
kernel binding and EXAMPLE); registry.py is THE list of them."""

from ..schema import *  # noqa: F401,F403
from ..schema import __all__  # noqa: F401
