"""The one clock (sjfbco/clock.py): its arithmetic by hand on a fake time source, and
greps that keep the package on it (no literal 0.05 time slice, no other budget class)."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from sjfbco.clock import MIN_SLICE, Deadline
from sjfbco.errors import InputError

PACKAGE = Path(__file__).resolve().parent.parent / "sjfbco"


class FakeTime:
    """A time source that moves only when told to."""

    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_start_left_expired_by_hand():
    clock = FakeTime(100.0)
    d = Deadline.start(10.0, now=clock)
    assert (d.end, d.limit, d.begun) == (110.0, 10.0, 100.0)
    assert d.left() == 10.0 and not d.expired() and not d.unlimited
    clock.t = 107.5
    assert d.left() == 2.5 and d.elapsed() == 7.5 and d.room() == 2.5
    clock.t = 110.0  # at the end: expired, nothing left
    assert d.expired() and d.left() == 0.0
    clock.t = 111.0  # past it: left stays at 0, room goes below
    assert d.left() == 0.0 and d.room() == -1.0


def test_no_limit_never_expires_and_its_parts_have_none():
    clock = FakeTime()
    d = Deadline.start(None, now=clock)
    assert d.unlimited and d.left() is None and d.seconds() is None and d.room() == math.inf
    clock.t += 1e9
    assert not d.expired() and not d.too_short()
    # shares, reserves and windows of no limit are no limit (iteration runs stay
    # deterministic); only within() and share_of_limit(unlimited=) set an end
    for part in (d.share(0.5), d.share_of_limit(0.5), d.reserve(3.0), d.window(2.0)):
        assert part.end is None
    assert d.within(4.0).end == clock.t + 4.0
    assert d.share_of_limit(0.5, unlimited=60.0).end == clock.t + 60.0


def test_share_of_what_is_left():
    clock = FakeTime(0.0)
    d = Deadline.start(20.0, now=clock)
    clock.t = 4.0  # 16 s left: half of it ends at 4 + 8 = 12
    half = d.share(0.5)
    assert half.end == 12.0 and half.limit == 20.0
    assert d.share(1.0).end == 20.0
    clock.t = 25.0  # past the end: a share is empty, never negative
    assert d.share(0.5).end == 25.0 and d.share(0.5).left() == 0.0


def test_share_of_the_limit_keeps_the_reserve():
    clock = FakeTime(0.0)
    d = Deadline.start(100.0, now=clock)
    clock.t = 10.0
    # 0.3 of the limit is 30 s; 90 s left less keep 0.2 x 100 = 70 s: 30 s, ends at 40
    assert d.share_of_limit(0.3, keep=0.2).end == 40.0
    clock.t = 60.0
    # 40 s left less 20 kept = 20 s < 30 s: ends at 80
    assert d.share_of_limit(0.3, keep=0.2).end == 80.0
    clock.t = 85.0
    # 15 s left less 20 kept < 0: an empty part ending now
    part = d.share_of_limit(0.3, keep=0.2)
    assert part.end == 85.0 and part.expired()


def test_reserve_window_and_parts_never_outlast_their_deadline():
    clock = FakeTime(0.0)
    d = Deadline.start(10.0, now=clock)
    assert d.reserve(2.5).end == 7.5
    clock.t = 3.0
    assert d.window(2.0).end == 5.0
    assert d.window(50.0).end == 10.0  # capped by the deadline
    assert d.window(None).end == 10.0
    assert d.within(50.0).end == 10.0
    # a part of a part: 7 s left of the reserve's 7.5 - 3 = 4.5 s, half ends at 3 + 2.25
    assert d.reserve(2.5).share(0.5).end == 5.25


def test_from_start_earliest_after_and_since():
    clock = FakeTime(0.0)
    d = Deadline.start(10.0, now=clock)
    clock.t = 2.0  # a quarter of the limit after the run began: 2.5, whatever ran before
    assert d.from_start(0.25).end == 2.5
    assert d.from_start(2.0).end == 10.0  # never past the deadline
    assert d.reserve(1.0).earliest(d.window(3.0)).end == 5.0  # 9 and 2 + 3
    assert d.earliest(Deadline.never()).end == 10.0
    assert Deadline.after(4.0, now=clock).end == 6.0
    assert Deadline.after(-1.0, now=clock).expired()  # unchecked: may be past already
    assert Deadline.since(1.0, 0.5, now=clock).left() == 0.0
    assert Deadline.after(None, now=clock).unlimited
    assert Deadline.never().from_start(0.5).unlimited


def test_least_useful_slice_and_seconds_for_libraries():
    clock = FakeTime(0.0)
    d = Deadline.start(1.0, now=clock)
    clock.t = 1.0 - MIN_SLICE / 2  # half a slice left: too short, a library gets a slice
    assert d.too_short() and d.seconds() == MIN_SLICE
    clock.t = 0.5
    assert not d.too_short() and d.seconds() == 0.5
    assert d.too_short(least=0.6) and d.seconds(least=0.6) == 0.6
    assert MIN_SLICE == 0.05


def test_ctrl_c_ends_every_part():
    clock, asked = FakeTime(0.0), [False]
    d = Deadline.start(10.0, now=clock, stop=lambda: asked[0])
    parts = [d, d.share(0.5), d.reserve(1.0), d.window(2.0), Deadline.never(stop=d.stop)]
    assert not any(p.expired() or p.interrupted() for p in parts)
    asked[0] = True
    assert all(p.expired() and p.interrupted() for p in parts)
    assert d.left() == 10.0  # time itself is untouched


def test_bad_limits_are_refused():
    for bad in (0, -1.0, math.inf, math.nan, True):
        with pytest.raises(InputError, match="time limit"):
            Deadline.start(bad)


def test_frozen():
    d = Deadline.start(1.0)
    with pytest.raises(AttributeError):
        d.end = 5.0  # type: ignore[misc]


# -- the package stays on the clock -------------------------------------------------

#: Floors of the package where a literal 0.05 would be a time slice (solver, bound and
#: model code, the interrupt and MIP plumbing); elsewhere 0.05 is a model constant.
TIMED = (
    "solvers",
    "relaxations",
    "formulations",
    "bounds",
    "mip.py",
    "patterns.py",
    "interrupt.py",
)


def _modules(under: tuple[str, ...]) -> list[Path]:
    out = []
    for name in under:
        path = PACKAGE / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def _fraction_fields(tree: ast.Module) -> set[int]:
    """Lines of field defaults in a class named ``Shares``: fractions of the limit."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Shares":
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                    lines.add(stmt.value.lineno)
    return lines


def test_no_literal_time_slice_outside_the_clock():
    found = []
    for path in _modules(TIMED):
        tree = ast.parse(path.read_text())
        shares = _fraction_fields(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and type(node.value) is float
                and node.value == 0.05
                and node.lineno not in shares
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, f"0.05 written outside sjfbco/clock.py (use MIN_SLICE): {found}"


def test_no_time_budget_class_besides_the_deadline():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "clock.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                word in node.name.lower() for word in ("budget", "deadline", "timer", "clock")
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert not found, f"time-budget classes besides sjfbco.clock.Deadline: {found}"


def test_the_greps_find_what_they_look_for(tmp_path):
    # the checkers themselves work: a planted slice and a planted budget class are found
    tree = ast.parse("class Shares:\n    a: float = 0.05\nx = max(0.05, y)\nclass WalkBudget: ...")
    shares = _fraction_fields(tree)
    slices = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and n.value == 0.05 and n.lineno not in shares
    ]
    assert slices == [3]
    names = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    assert "WalkBudget" in names


def _absolute_ends(tree: ast.Module) -> list[int]:
    """Lines that add seconds to ``time.perf_counter()`` or ``time.monotonic()`` (an
    absolute end made outside the clock)."""

    def is_now(node: ast.expr) -> bool:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("perf_counter", "monotonic")
        )

    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Add)
        and (is_now(node.left) or is_now(node.right))
    ]


def test_no_absolute_end_outside_the_clock():
    """Solver, bound and model code makes no ``perf_counter() + seconds`` end of its own:
    it is handed a part of the run's Deadline."""
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in _modules(TIMED)
        for line in _absolute_ends(ast.parse(path.read_text()))
    ]
    assert not found, f"absolute ends made outside sjfbco/clock.py: {found}"
    planted = ast.parse("import time\nend = time.perf_counter() + 5\nx = 1 + time.monotonic()")
    assert _absolute_ends(planted) == [2, 3]


def test_fits_import_by_hand():
    """A step that imports a module may start when the module is imported already, when
    there is no limit, or when its cold cost is left (the import cannot be interrupted)."""
    clock = FakeTime(0.0)
    d = Deadline.start(1.0, now=clock)
    clock.t = 0.7  # 0.3 s left
    assert not d.fits_import("sjfbco_no_such_module", 0.35)  # 0.3 < 0.35: would overrun
    assert d.fits_import("sjfbco_no_such_module", 0.3)  # exactly enough
    assert d.fits_import("math", 0.35)  # imported already: costs nothing
    clock.t = 2.0  # past the end: an imported module still fits, a cold one never
    assert d.fits_import("math", 0.35) and not d.fits_import("sjfbco_no_such_module", 0.0)
    assert Deadline.start(None, now=clock).fits_import("sjfbco_no_such_module", 1e9)
    # a part is weighed by its own end: at 0.1 s of a 1 s run, a part of 0.5 s has 0.5 s
    # left for the import, a part of 0.3 s not (the step would overrun its share)
    clock.t = 0.1
    assert d.window(0.5).fits_import("sjfbco_no_such_module", 0.35)
    assert not d.window(0.3).fits_import("sjfbco_no_such_module", 0.35)
