"""Imports in the open: no cycle, the leaves stay leaves, deferred imports on a short list.

A cycle among module-level imports works or fails depending on which module a
program imports first (a partially initialised module). Imports under ``if
TYPE_CHECKING:`` never run, so they are not edges. ``from package import name``
is an edge to ``package.name`` when that is a module, else to ``package``.

Imports of sjfbco modules inside functions (deferred imports) hide an edge from
a reader and from the module-level graph, so each must be on :data:`DEFERRED`
with its reason: a module that loads a heavy third-party library, a module
``sjfbco --help`` should not load, or an edge that would close a cycle. With
every deferred edge that is not on the list added, the graph still has no cycle.

No module takes another's private name (``from sjfbco.x import _y``, ``x._y``): a name
another module needs is public.
"""

from __future__ import annotations

import ast
import functools
import graphlib
import importlib
import pkgutil
from pathlib import Path

import sjfbco

ROOT = Path(sjfbco.__file__).parent


@functools.cache
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


def _imported(node: ast.Import | ast.ImportFrom, name: str, is_pkg: bool) -> list[str]:
    """Absolute names of the modules an import statement in module ``name`` imports."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = name.split(".")
        keep = len(parts) - node.level + (1 if is_pkg else 0)
        base = ".".join(parts[:keep] + ([base] if base else []))
    modules = _modules()
    return [
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
        for alias in node.names
    ]


def _module_level_imports(
    tree: ast.Module, name: str, is_pkg: bool, type_checking: bool = False
) -> list[str]:
    """Absolute names of the sjfbco modules imported at module level (with
    ``type_checking``, those under ``if TYPE_CHECKING:`` too)."""
    modules = _modules()
    found: list[str] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.extend(_imported(node, name, is_pkg))
            elif isinstance(node, ast.If) and (type_checking or not _is_type_checking(node)):
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


def _deferred_imports(tree: ast.Module, name: str, is_pkg: bool) -> list[tuple[str, int]]:
    """(module, line) of each sjfbco module imported inside a function of the module."""
    modules = _modules()
    found: list[tuple[str, int]] = []
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    found.extend((m, node.lineno) for m in _imported(node, name, is_pkg))
    return sorted({(m, line) for m, line in found if m in modules and m != name})


#: The deferred imports of sjfbco modules there may be, as (importer, imported) prefixes
#: ("sjfbco.commands" covers every command module) with the reason. Everything else is
#: imported at the top of its module.
DEFERRED: dict[tuple[str, str], str] = {
    ("sjfbco", "sjfbco.experiments.plots"): "loads matplotlib (about a second)",
    ("sjfbco", "sjfbco.formulations.ilp"): "loads PuLP and HiGHS",
    ("sjfbco", "sjfbco.calibration"): "loads SciPy and pandas",
    ("sjfbco.commands", "sjfbco.experiments"): "sjfbco --help: the paper as data, reproduce",
    ("sjfbco.commands", "sjfbco.formulations"): "sjfbco --help: the model builders",
    ("sjfbco.commands", "sjfbco.testbed"): "sjfbco --help: the emulated cluster",
    ("sjfbco.solvers.contract", "sjfbco.frames"): "Result.to_frame: a cycle at module level",
    ("sjfbco.commands", "sjfbco.calibration"): "sjfbco --help: loads SciPy",
}


#: The deferred edges that close a cycle (each also on :data:`DEFERRED`): the frames a
#: Result makes of itself (frames import the contract).
CYCLE_CLOSING: frozenset[tuple[str, str]] = frozenset(
    {("sjfbco.solvers.contract", "sjfbco.frames")}
)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _allowed(importer: str, imported: str) -> bool:
    return any(_within(importer, a) and _within(imported, b) for a, b in DEFERRED)


def deferred_edges() -> dict[str, list[tuple[str, int]]]:
    """Per module, the sjfbco modules it imports inside functions, with the line."""
    out = {}
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out[name] = _deferred_imports(tree, name, path.name == "__init__.py")
    return out


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


def test_calibration_has_no_circle_even_for_the_type_checker() -> None:
    """Issue 45 item 4: fit, identify, preset and contention imported each other in a
    circle held apart only by ``TYPE_CHECKING``; with the shared names in
    ``calibration/types.py`` the package is acyclic with those imports counted too."""
    graph = {}
    for name, path in _modules().items():
        if _within(name, "sjfbco.calibration"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found = _module_level_imports(tree, name, path.name == "__init__.py", True)
            graph[name] = {m for m in found if _within(m, "sjfbco.calibration")}
    assert {"sjfbco.calibration.fit", "sjfbco.calibration.types"} <= set(graph)
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:  # pragma: no cover - the failure message
        raise AssertionError(f"calibration circle: {' -> '.join(err.args[1])}") from None


def test_the_type_checking_graph_sees_a_planted_circle() -> None:
    tree = ast.parse("if TYPE_CHECKING:\n    from sjfbco.calibration import fit\n")
    assert _module_level_imports(tree, "sjfbco.calibration.types", False) == []
    found = _module_level_imports(tree, "sjfbco.calibration.types", False, True)
    assert found == ["sjfbco.calibration.fit"]


def test_deferred_imports_are_on_the_short_list() -> None:
    """An import of a sjfbco module inside a function is on :data:`DEFERRED` (move it to the
    top of its module, or add it with its reason)."""
    stray = [
        f"{importer} line {line} imports {imported}"
        for importer, found in deferred_edges().items()
        for imported, line in found
        if not _allowed(importer, imported)
    ]
    assert not stray, "deferred imports not on DEFERRED:\n" + "\n".join(stray)
    assert len(DEFERRED) <= 16
    edges = [(i, m) for i, found in deferred_edges().items() for m, _ in found]
    stale = [
        e for e in DEFERRED if not any(_within(i, e[0]) and _within(m, e[1]) for i, m in edges)
    ]
    assert not stale, f"entries of DEFERRED no import needs any more: {stale}"


def test_deferred_imports_close_no_cycle_but_the_listed_ones() -> None:
    """Module-level edges plus every deferred edge but :data:`CYCLE_CLOSING` still form a
    directed acyclic graph: a deferred import is never a quiet way round a cycle."""
    graph = import_graph()
    for importer, found in deferred_edges().items():
        graph[importer] |= {m for m, _ in found if (importer, m) not in CYCLE_CLOSING}
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as err:  # pragma: no cover - the failure message
        raise AssertionError(f"import cycle: {' -> '.join(err.args[1])}") from None
    assert all(_allowed(*edge) for edge in CYCLE_CLOSING)


def test_the_deferred_checker_sees_a_planted_import() -> None:
    tree = ast.parse(
        "import os\n"
        "def f():\n"
        "    from sjfbco.solvers import api\n"
        "    from . import tables\n"
        "    import json\n"
    )
    found = _deferred_imports(tree, "sjfbco.cost", False)
    assert found == [("sjfbco.solvers.api", 3), ("sjfbco.tables", 4)]
    assert not _allowed("sjfbco.cost", "sjfbco.solvers.api")
    assert _allowed("sjfbco.commands.plot", "sjfbco.experiments.plots")
    assert not _allowed("sjfbco.compare", "sjfbco.testbed")


def test_the_contract_and_the_model_import_nothing_above_them() -> None:
    graph = import_graph()

    def closure(m: str) -> set[str]:
        seen, todo = set(), [m]
        while todo:
            for n in graph[todo.pop()] - seen:
                seen.add(n)
                todo.append(n)
        return seen

    # errors, limits, clock, knobs and checks are leaves too: they import nothing of
    # sjfbco but errors
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
    assert closure("sjfbco.clock") <= {"sjfbco.errors", "sjfbco.limits"}
    assert closure("sjfbco.knobs") == set()
    assert closure("sjfbco.checks") == {"sjfbco.errors"}
    # the parameter checks every solver needs are in the leaf ``checks``; ``params``
    # (make_params, solver_params: the registry) is reached only by the entry point
    assert sorted(
        m for m in graph if "sjfbco.params" in graph[m] and m.startswith("sjfbco.solvers")
    ) == ["sjfbco.solvers.api"]
    assert closure("sjfbco.solvers.contract") <= leaf
    assert closure("sjfbco.cost") <= leaf
    assert not any("sjfbco.commands" in m or m == "sjfbco.cli" for m in closure("sjfbco"))


#: Floor 3 in its order (docs/design.md): a module imports only its own room or rooms
#: before it in this list, at module level or deferred.
FLOOR_3 = (
    ("sjfbco.caps", "sjfbco.patterns", "sjfbco.mip"),
    ("sjfbco.bounds",),
    ("sjfbco.formulations",),
    ("sjfbco.relaxations",),
    ("sjfbco.solvers",),
)


def test_floor_3_points_down_its_own_order() -> None:
    """caps, patterns and mip, then bounds/, formulations/, relaxations/, solvers/: no room
    imports one after it (bounds/ and formulations/ used to import each other)."""
    rank = {room: k for k, rooms in enumerate(FLOOR_3) for room in rooms}

    def rank_of(module: str) -> int | None:
        return next((r for room, r in rank.items() if _within(module, room)), None)

    graph = import_graph()
    for importer, found in deferred_edges().items():
        graph[importer] |= {m for m, _ in found}
    upward = [
        (a, b)
        for a, targets in graph.items()
        for b in targets
        if (ra := rank_of(a)) is not None and (rb := rank_of(b)) is not None and rb > ra
    ]
    assert upward == []


#: Rooms inside ``solvers/`` with an order of their own (docs/design.md): the bound chain
#: sits below both solvers that run it. It reaches neither (at module level or deferred,
#: directly or through another module); ``best`` imports nothing of ``exact``; each of them
#: imports the chain.
CHAIN = "sjfbco.solvers.chain"
ABOVE_CHAIN = ("sjfbco.solvers.exact", "sjfbco.solvers.best")


def _with_deferred() -> dict[str, set[str]]:
    graph = import_graph()
    for importer, found in deferred_edges().items():
        graph[importer] |= {m for m, _ in found}
    return graph


def _reach(graph: dict[str, set[str]], start: set[str]) -> set[str]:
    seen, todo = set(start), list(start)
    while todo:
        for n in graph[todo.pop()] - seen:
            seen.add(n)
            todo.append(n)
    return seen


def _chain_layering(graph: dict[str, set[str]]) -> list[str]:
    """What breaks the order of :data:`CHAIN` and :data:`ABOVE_CHAIN` in ``graph``."""
    wrong = []
    chain = {m for m in graph if _within(m, CHAIN)}
    wrong += [
        f"{CHAIN} reaches {m}"
        for m in sorted(_reach(graph, chain))
        if any(_within(m, room) for room in ABOVE_CHAIN)
    ]
    best = {m for m in graph if _within(m, "sjfbco.solvers.best")}
    wrong += [
        f"{a} imports {b}"
        for a in sorted(best)
        for b in sorted(graph[a])
        if _within(b, "sjfbco.solvers.exact")
    ]
    for room in ABOVE_CHAIN:
        mine = [m for m in graph if _within(m, room)]
        if not any(_within(b, CHAIN) for m in mine for b in graph[m]):
            wrong.append(f"{room} does not import {CHAIN}")
    return wrong


def test_the_bound_chain_sits_below_both_solvers() -> None:
    assert _chain_layering(_with_deferred()) == []


def test_the_chain_check_sees_a_planted_arrow_up() -> None:
    graph = _with_deferred()
    graph["sjfbco.solvers.chain.state"] = graph["sjfbco.solvers.chain.state"] | {
        "sjfbco.solvers.portfolio"
    }
    graph["sjfbco.solvers.portfolio"] = graph["sjfbco.solvers.portfolio"] | {
        "sjfbco.solvers.exact.params"
    }
    graph["sjfbco.solvers.best"] = graph["sjfbco.solvers.best"] | {"sjfbco.solvers.exact.warm"}
    assert _chain_layering(graph) == [
        f"{CHAIN} reaches sjfbco.solvers.exact.params",
        "sjfbco.solvers.best imports sjfbco.solvers.exact.warm",
    ]


def test_the_graph_sees_a_planted_cycle() -> None:
    tree = ast.parse("from sjfbco.solvers import api\nif TYPE_CHECKING:\n    import sjfbco.cli\n")
    assert _module_level_imports(tree, "sjfbco.cost", False) == ["sjfbco.solvers.api"]


def test_every_module_imports() -> None:
    for name in _modules():
        if name != "sjfbco.__main__":  # runs the CLI
            importlib.import_module(name)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_imports(tree: ast.Module, name: str, is_pkg: bool) -> list[tuple[str, int]]:
    """``(module.name, line)`` of each private name module ``name`` takes from another
    sjfbco module: ``from sjfbco.x import _y`` anywhere in the module, and ``x._y``
    where ``x`` is a sjfbco module it imported (``from sjfbco import x``, ``import
    sjfbco.x as x``)."""
    modules = _modules()
    found: list[tuple[str, int]] = []
    aliases: dict[str, str] = {}  # local name -> the sjfbco module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias, target in zip(node.names, _imported(node, name, is_pkg), strict=True):
                if target in modules and target.endswith(f".{alias.name}"):
                    aliases[alias.asname or alias.name] = target  # a module, not a name
                elif target in modules and target != name and _private(alias.name):
                    found.append((f"{target}.{alias.name}", node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and aliases[node.value.id] != name
            and _private(node.attr)
        ):
            found.append((f"{aliases[node.value.id]}.{node.attr}", node.lineno))
    return sorted(found)


def test_no_module_takes_a_private_name_of_another() -> None:
    # a leading underscore says "only this module uses it": a name another module needs
    # is public (or moves to the module that needs it)
    taken = [
        f"{name} line {line}: {what}"
        for name, path in _modules().items()
        for what, line in _private_imports(
            ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py"
        )
    ]
    assert taken == []


def test_the_private_import_checker_sees_planted_ones() -> None:
    tree = ast.parse(
        "from sjfbco.problem import _number, check_range\n"
        "from . import schedule\n"
        "import sjfbco.cost as cost\n"
        "from scipy.optimize._numdiff import _compute_absolute_step\n"
        "def f():\n"
        "    from sjfbco.errors import __name__, _hidden\n"
        "    return schedule._num(1), cost.tau, _own()\n"
    )
    assert _private_imports(tree, "sjfbco.tables", False) == [
        ("sjfbco.errors._hidden", 6),
        ("sjfbco.problem._number", 1),
        ("sjfbco.schedule._num", 7),
    ]
    # a module's own private names are its own business
    assert _private_imports(ast.parse("from sjfbco.cost import _x\n"), "sjfbco.cost", False) == []
