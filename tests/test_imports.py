"""The package's import graph has no circle: each module's imports of other rmbench modules, at
the top or deferred inside a function, lead away from it (a deferred import that only hides a
circle counts too)."""

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "workflow" / "rmbench"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The rmbench modules `path` imports anywhere in it: `from .x import y` names module x, or
    x.y where that is a module."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rmbench"):
            found.add(node.module)
    return found & modules - {name}


def test_the_package_imports_form_no_circle():
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    graph = {module_name(p): imported_modules(p, modules) for p in paths}
    assert graph["rmbench.runtimes.base"] >= {"rmbench.onnx_files"}  # the parser sees imports
    circles = []

    def visit(node: str, path: list[str], done: set[str]) -> None:
        if node in path:
            circles.append(" -> ".join(path[path.index(node) :] + [node]))
            return
        if node in done:
            return
        for nxt in sorted(graph[node]):
            visit(nxt, [*path, node], done)
        done.add(node)

    done: set[str] = set()
    for module in sorted(graph):
        visit(module, [], done)
    assert not circles, "\n".join(circles)


def test_the_onnx_file_vocabulary_is_a_leaf():
    imports = imported_modules(PACKAGE / "onnx_files.py", {module_name(p) for p in PACKAGE.rglob("*.py")})
    assert imports <= {"rmbench.errors"}, imports
