"""The package's import graph: no circle (each module's imports of other rmbench modules, at the
top or deferred inside a function, lead away from it), and the layers its folders name (the report
reads tables and knows no runtime or study; the plan loads neither PyTorch nor ONNX Runtime)."""

import ast
import subprocess
import sys
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
            for alias in node.names:  # `from rmbench.plan import cells` names rmbench.plan.cells
                found.add(
                    f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                )
    return found & modules - {name}


def import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imported_modules(p, modules) for p in paths}


def reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen


def test_the_package_imports_form_no_circle():
    graph = import_graph()
    assert graph["rmbench.runtimes.base"] >= {"rmbench.export.onnx_files"}  # the parser sees imports
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
    assert import_graph()["rmbench.export.onnx_files"] <= {"rmbench.errors"}


LAYERS = {"plan", "models", "export", "runtimes", "service", "studies", "probes", "stats", "report"}


def test_the_top_level_holds_the_errors_and_one_folder_per_layer():
    assert {p.stem for p in PACKAGE.glob("*.py")} == {"__init__", "errors"}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == LAYERS


def test_the_report_reaches_no_runtime_and_no_study():
    graph = import_graph()
    for module in (m for m in graph if m.startswith("rmbench.report.")):
        wrong = {m for m in reached(graph, module) if m.split(".")[1] in ("runtimes", "studies")}
        assert not wrong, f"{module} imports {sorted(wrong)}"


def test_the_plan_loads_neither_pytorch_nor_onnx_runtime():
    plan = sorted(module_name(p) for p in (PACKAGE / "plan").glob("*.py"))
    heavy = ("torch", "onnxruntime", "transformers", "onnx")
    for path in (PACKAGE / "plan").glob("*.py"):  # not even deferred inside a function
        named = {
            alias.name.split(".")[0]
            for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Import)
            for alias in n.names
        } | {
            n.module.split(".")[0]
            for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.ImportFrom) and n.module
        }
        assert not named & set(heavy), f"{path.name} imports {sorted(named & set(heavy))}"
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys, {', '.join(plan)}; print(sorted(set(sys.modules) & {set(heavy)!r}))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]", loaded.stdout
