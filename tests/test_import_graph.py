"""The package's import graph has no cycle: every import of a trtplugins module (top-level or inside a
function) is an arrow, and following arrows never returns to where it started."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "trtplugins"


def module_of(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The trtplugins modules `path` imports (a name imported from a package counts as its module
    when it is one)."""
    here = module_of(path)
    package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for a in node.names:
                full = f"{base}.{a.name}"
                out.add(full if full in modules else base)
    return {m for m in out if m in modules and m != here}


def test_no_import_cycle():
    files = {module_of(p): p for p in PKG.rglob("*.py")}
    graph = {m: imports(p, set(files)) for m, p in files.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(path[path.index(n):] + [n] if n in path else path + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)
