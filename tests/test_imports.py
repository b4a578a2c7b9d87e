"""No import cycle in the package: module-level imports form a directed acyclic graph.

A cycle among module-level imports works or fails depending on which module a
program imports first (a partially initialised module). Imports inside
functions and under ``if TYPE_CHECKING:`` run later or never, so they are not
edges. ``from package import name`` is an edge to ``package.name`` when that is
a module, else to ``package``.
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import pkgutil
from pathlib import Path

import sjfbco

ROOT = Path(sjfbco.__file__).parent


def _modules() -> dict[str, Path]:
    out = {"sjfbco": ROOT / "__init__.py"}
    for info in pkgutil.walk_packages([str(ROOT)], prefix="sjfbco."):
        path = ROOT.joinpath(*info.name.split(".")[1:])
        out[info.name] = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(tree: ast.Module, name: str, is_pkg: bool) -> list[str]:
    """Absolute names of the sjfbco modules imported at module level."""
    modules = _modules()
    found: list[str] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".")
                    keep = len(parts) - node.level + (1 if is_pkg else 0)
                    base = ".".join(parts[:keep] + ([base] if base else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    found.append(sub if sub in modules else base)
            elif isinstance(node, ast.If) and not _is_type_checking(node):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    return [m for m in found if m in modules and m != name]


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = set(_module_level_imports(tree, name, path.name == "__init__.py"))
    return graph


def test_module_level_imports_have_no_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 50  # every module was found
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:  # pragma: no cover - the failure message
        raise AssertionError(f"import cycle: {' -> '.join(err.args[1])}") from None
    assert set(order) == set(graph)


def test_the_contract_and_the_model_import_nothing_above_them() -> None:
    graph = import_graph()

    def closure(m: str) -> set[str]:
        seen, todo = set(), [m]
        while todo:
            for n in graph[todo.pop()] - seen:
                seen.add(n)
                todo.append(n)
        return seen

    # errors and limits are leaves too: they import nothing of sjfbco but each other
    leaf = {
        "sjfbco.problem",
        "sjfbco.schedule",
        "sjfbco.solvers.contract",
        "sjfbco.cost",
        "sjfbco.errors",
        "sjfbco.limits",
    }
    assert closure("sjfbco.errors") == set()
    assert closure("sjfbco.limits") == {"sjfbco.errors"}
    assert closure("sjfbco.solvers.contract") <= leaf
    assert closure("sjfbco.cost") <= leaf
    assert not any("sjfbco.commands" in m or m == "sjfbco.cli" for m in closure("sjfbco"))


def test_the_graph_sees_a_planted_cycle() -> None:
    tree = ast.parse("from sjfbco.solvers import api\nif TYPE_CHECKING:\n    import sjfbco.cli\n")
    assert _module_level_imports(tree, "sjfbco.cost", False) == ["sjfbco.solvers.api"]


def test_every_module_imports() -> None:
    for name in _modules():
        if name != "sjfbco.__main__":  # runs the CLI
            importlib.import_module(name)
