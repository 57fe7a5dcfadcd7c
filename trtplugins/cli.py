"""The `trtplugins` command: every tool of the package behind one entry point.

  trtplugins [info]                       what works here: native libraries, TensorRT, plugins
  trtplugins demo [FOLDER]                the main job end to end on the built-in demo
  trtplugins export-demo -o demo.onnx     the demo model
  trtplugins substitute in.onnx -o out.onnx
  trtplugins build model.onnx             an engine with the plugins (TensorRT or TensorRT-RTX)
  trtplugins validate model.onnx          against ONNX Runtime
  trtplugins export-models FOLDER         the tiny test models (torch)

`python -m trtplugins ...` is the same; scripts/*.py run these commands. `trtplugins COMMAND
--help` describes each."""

from __future__ import annotations

import pkgutil
import sys


#: command -> (what it does, its main(argv, prog)); a module is imported only when its command runs
COMMANDS = {
    "info": ("what works here: native libraries, TensorRT modules, plugins", "info:main"),
    "demo": ("the main job end to end on the built-in demo model", "quickstart:main"),
    "export-demo": ("write the demo model as ONNX", "demo:main"),
    "substitute": ("replace fusable subgraphs with plugin nodes", "graph.cli:main"),
    "build": ("build an engine with the plugins (TensorRT or TensorRT-RTX)", "engine.cli:main"),
    "validate": ("compare an engine or the plugin graph with ONNX Runtime", "validate:main"),
    "export-models": ("export the tiny test models (needs torch)", "graph.export:main"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    return "\n".join(["usage: trtplugins [COMMAND] [ARGS ...]   (no command: info)", "", "commands:"]
                     + [f"  {name:<{width}}  {what}" for name, (what, _) in COMMANDS.items()]
                     + ["", "trtplugins COMMAND --help describes each."])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    name = argv.pop(0) if argv and not argv[0].startswith("-") else "info"
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}; commands: {', '.join(COMMANDS)} (trtplugins --help)", file=sys.stderr)
        return 2
    return pkgutil.resolve_name(f"{__package__}.{COMMANDS[name][1]}")(argv, f"trtplugins {name}")
