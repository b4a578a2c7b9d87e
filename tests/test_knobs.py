"""The knob convention (sjfbco/knobs.py): a field's source is a page or "untuned"."""

from __future__ import annotations

import ast
import random
import re
from collections import Counter
from dataclasses import dataclass, fields, replace
from pathlib import Path

import pytest

from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.errors import InputError
from sjfbco.knobs import UNTUNED, anchor, knob, sources
from sjfbco.solvers.best import BestParams
from sjfbco.solvers.chain import Shares
from sjfbco.solvers.moves import DEFAULT_MOVES, Moves


@dataclass(frozen=True)
class _Example:
    measured: float = knob(0.5, "docs/benchmarks/2026-12-exact.md#shares")
    guessed: int = knob(3, UNTUNED)
    bare: int = 1


def test_sources_read_back_each_field() -> None:
    assert sources(_Example) == {
        "measured": "docs/benchmarks/2026-12-exact.md#shares",
        "guessed": "untuned",
        "bare": None,
    }
    assert _Example().measured == 0.5 and _Example(guessed=4).guessed == 4


@pytest.mark.parametrize("source", ["", "measured by hand", "benchmarks/x.md", "docs/x.md"])
def test_a_source_names_a_page_or_untuned(source: str) -> None:
    with pytest.raises(ValueError, match="untuned"):
        knob(1, source)


# -- every tuning field has a home and a source (issue 45, item 3) -------------------------

ROOT = Path(__file__).resolve().parents[1]
#: A dated page of measurements: docs/benchmarks/YYYY-MM-name.md
DATED = re.compile(r"^docs/benchmarks/\d{4}-\d{2}-[\w.-]+\.md$")
#: The objects whose every field is a tuning number with its source.
KNOB_OBJECTS: tuple[type, ...] = (Shares, BestParams, SizeCaps, Moves)


def bad_sources(cls: type, root: Path = ROOT) -> list[str]:
    """The fields of ``cls`` whose source is neither "untuned" nor a dated page under
    ``docs/benchmarks/`` that exists (and has the ``#section`` heading, when one is given),
    each with why."""
    bad = []
    for name, source in sources(cls).items():
        if source == UNTUNED:
            continue
        if source is None:
            bad.append(f"{cls.__name__}.{name}: no source (declare it with knob())")
            continue
        page, _, section = source.partition("#")
        if not DATED.match(page):
            bad.append(f"{cls.__name__}.{name}: {page!r} is not a dated docs/benchmarks/ page")
        elif not (root / page).is_file():
            bad.append(f"{cls.__name__}.{name}: no page {page}")
        elif section:
            headings = {
                anchor(line)
                for line in (root / page).read_text(encoding="utf-8").splitlines()
                if line.startswith("#")
            }
            if section not in headings:
                bad.append(f"{cls.__name__}.{name}: {page} has no heading {section!r}")
    return bad


@pytest.mark.parametrize("cls", KNOB_OBJECTS, ids=lambda c: c.__name__)
def test_every_tuning_field_names_a_measured_page_or_untuned(cls: type) -> None:
    assert sources(cls), cls
    assert bad_sources(cls) == []


def test_the_source_check_catches_each_way_to_be_wrong(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "benchmarks" / "2026-12-x.md"
    page.parent.mkdir(parents=True)
    page.write_text("# x\n\n## Measured here\n\ntext\n")

    @dataclass(frozen=True)
    class Planted:
        fine: int = knob(1, "docs/benchmarks/2026-12-x.md#measured-here")
        whole_page: int = knob(1, "docs/benchmarks/2026-12-x.md")
        guessed: int = knob(1, UNTUNED)
        missing_page: int = knob(1, "docs/benchmarks/2026-12-y.md")
        missing_heading: int = knob(1, "docs/benchmarks/2026-12-x.md#not-here")
        undated: int = knob(1, "docs/benchmarks/notes.md")
        bare: int = 1

    found = bad_sources(Planted, tmp_path)
    assert [line.split(":")[0] for line in found] == [
        "Planted.missing_page",
        "Planted.missing_heading",
        "Planted.undated",
        "Planted.bare",
    ]


def test_the_cited_sections_are_the_measured_ones() -> None:
    """A few fields whose figures are known: they cite the page that holds them."""
    assert sources(BestParams)["whole_share"] == (
        "docs/benchmarks/2026-12-best-paper.md"
        "#why-the-whole-instance-step-found-nothing-and-the-fix-2026-12-04-later"
    )
    assert sources(Moves)["room_reserves"].endswith("#where-bests-parameters-came-from")
    assert sources(Shares)["whole"].startswith("docs/benchmarks/2026-12-exact.md#2026-12-04")
    assert sources(Moves)["tail_insert"] == UNTUNED


# -- the size caps: one object, passed in, never a module global or a patch ---------------

#: Solver and bound code: no module-level ``MAX_*`` cap here (they are SizeCaps' fields).
CAPPED = ("solvers", "bounds", "relaxations", "formulations", "patterns.py", "mip.py")


def _module_caps(tree: ast.Module) -> list[str]:
    """Names ``MAX_*`` (or ``_MAX_*``) assigned at a module's top level."""
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names += [t.id for t in targets if isinstance(t, ast.Name)]
    return [n for n in names if re.match(r"^_?MAX_", n)]


def _patched_caps(tree: ast.Module) -> list[int]:
    """Lines of ``setattr(x, "MAX_...", v)`` or of a patched ``SizeCaps`` field name."""
    caps = {f.name for f in fields(SizeCaps)}
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute | ast.Name)
        and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "setattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
        and (re.match(r"^_?MAX_", node.args[1].value) or node.args[1].value in caps)
    ]


def test_no_module_level_cap_in_solver_and_bound_code() -> None:
    package = ROOT / "sjfbco"
    found = []
    for name in CAPPED:
        path = package / name
        for module in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            found += [
                f"{module.relative_to(ROOT)}: {n}"
                for n in _module_caps(ast.parse(module.read_text()))
            ]
    assert found == []


def test_no_test_patches_a_cap() -> None:
    found = []
    for module in sorted((ROOT / "tests").glob("*.py")):
        found += [f"{module.name}:{n}" for n in _patched_caps(ast.parse(module.read_text()))]
    assert found == []


def test_the_cap_greps_find_what_they_look_for() -> None:
    tree = ast.parse(
        "MAX_A = 1\n_MAX_B: int = 2\nMAXIMUM = 3\ndef f():\n    MAX_C = 4\n"
        "monkeypatch.setattr(m, 'MAX_D', 0)\nsetattr(m, 'whole_pairs', 0)\nsetattr(m, 'x', 0)\n"
    )
    assert _module_caps(tree) == ["MAX_A", "_MAX_B"]
    assert _patched_caps(tree) == [6, 7]


def test_size_caps_are_checked_and_replaced() -> None:
    assert DEFAULT_CAPS.whole_pairs == 50_000 and DEFAULT_CAPS.patterns_per_job == 5_000
    # the four names reused with different values before are four pairs of fields now
    assert (DEFAULT_CAPS.patterns_per_job, DEFAULT_CAPS.repack_patterns) == (5_000, 24)
    assert (DEFAULT_CAPS.configurations, DEFAULT_CAPS.grouped_configurations) == (
        20_000,
        200_000,
    )
    assert (DEFAULT_CAPS.configuration_variables, DEFAULT_CAPS.time_indexed_variables) == (
        2_000_000,
        200_000,
    )
    assert (DEFAULT_CAPS.relaxation_entries, DEFAULT_CAPS.time_indexed_entries) == (
        5_000_000,
        20_000_000,
    )
    assert replace(DEFAULT_CAPS, whole_pairs=0).whole_pairs == 0
    for bad in (-1, 1.5, True, "10", None):
        with pytest.raises(InputError, match=r"^parameter size_caps.whole_pairs: must be an "):
            replace(DEFAULT_CAPS, whole_pairs=bad)


def test_a_cap_handed_in_is_the_one_counted() -> None:
    """The whole-instance model of the example (3 jobs on 2 servers: 6 pairs) is too
    large under a cap of 5 pairs, not under 6; ``whole_pack`` then builds nothing."""
    from sjfbco import read_instance
    from sjfbco.solvers.common import serial_schedule
    from sjfbco.solvers.portfolio import evaluated
    from sjfbco.solvers.wholecp import too_large, whole_pack

    data = read_instance(ROOT / "instances" / "small" / "example.json")
    pairs = data.num_jobs * data.cluster.num_servers
    assert not too_large(data, replace(DEFAULT_CAPS, whole_pairs=pairs))
    five = replace(DEFAULT_CAPS, whole_pairs=pairs - 1)
    assert too_large(data, five)
    base = evaluated(data, serial_schedule(data))
    assert whole_pack(data, base, deadline=None, size_caps=five) is None


# -- the walk's moves: one object held by BestParams ----------------------------------------


def test_moves_are_checked() -> None:
    assert DEFAULT_MOVES.history == 100 and DEFAULT_MOVES.server_history == 200
    assert (DEFAULT_MOVES.relocate, DEFAULT_MOVES.swap, DEFAULT_MOVES.first_ending) == (
        0.45,
        0.85,
        0.5,
    )
    with pytest.raises(InputError, match=r"^parameter moves.insert: must be in \[tail_insert"):
        Moves(insert=0.2)  # below tail_insert 0.35
    with pytest.raises(InputError, match=r"^parameter moves.history: must be an integer >= 1"):
        Moves(history=0)
    with pytest.raises(InputError, match=r"^parameter moves.window_max: must be in \[window_min"):
        Moves(window_min=0.5, window_max=0.4)
    with pytest.raises(InputError, match=r"^parameter moves.noise: must be in \[0, 1\)"):
        Moves(noise=1.0)
    assert BestParams().moves is DEFAULT_MOVES
    with pytest.raises(InputError, match=r"^parameter moves: must be a sjfbco.solvers.moves"):
        BestParams(moves="history=5")  # type: ignore[arg-type]


def test_the_walk_draws_by_the_mix_it_is_handed() -> None:
    """All bounds at 1: every move is a tail insert; all at 0: ruin and recreate. Bounds
    between: the share of each move is the gap between its bounds (2,000 draws)."""
    from sjfbco import read_instance
    from sjfbco.clock import Deadline
    from sjfbco.solvers.search import Engine, Genome, Tally
    from sjfbco.solvers.sgs import serial_sgs

    data = read_instance(ROOT / "instances" / "paper" / "paper-s10-seed0.json")
    order = tuple(range(data.num_jobs))
    cand = serial_sgs(data, list(order))
    genome = Genome("serial", order, (True,) * data.num_jobs)

    def drawn(moves: Moves, n: int) -> list[str]:
        engine = Engine(data, random.Random(0), Tally(Deadline.never(), None), 0.0, _quiet, moves)
        return [engine.neighbour(genome, cand)[1] for _ in range(n)]

    ones = Moves(tail_insert=1.0, insert=1.0, near_swap=1.0, split_flip=1.0)
    assert set(drawn(ones, 50)) == {"tail insert"}
    zeros = Moves(tail_insert=0.0, insert=0.0, near_swap=0.0, split_flip=0.0)
    assert set(drawn(zeros, 50)) == {"ruin and recreate"}
    half = Moves(tail_insert=0.0, insert=0.5, near_swap=0.5, split_flip=0.5)
    counts = Counter(drawn(half, 2_000))
    assert set(counts) == {"insert", "ruin and recreate"}
    assert 900 < counts["insert"] < 1_100  # 1,000 expected, sd about 22


def test_the_server_search_draws_by_the_mix_it_is_handed() -> None:
    from sjfbco import read_instance
    from sjfbco.solvers.servers import ServerSearch
    from sjfbco.solvers.sgs import serial_sgs

    data = read_instance(ROOT / "instances" / "paper" / "paper-s10-seed0.json")
    base = serial_sgs(data, list(range(data.num_jobs)))
    rng = random.Random(0)
    for mix, kinds in (
        (Moves(relocate=1.0, swap=1.0), {"relocate"}),
        (Moves(relocate=0.0, swap=1.0), {"swap"}),
        (Moves(relocate=0.0, swap=0.0), {"reorder"}),
    ):
        search = ServerSearch(data, base, 0.0, mix)
        found = {m.name for _ in range(200) if (m := search.propose(rng)) is not None}
        assert found == kinds, mix


def _quiet(cand: object, source: str) -> None:
    """An engine's ``on_improve`` that records nothing."""


def test_anchor_is_githubs() -> None:
    assert anchor("## Issue 31's long family (December 2026, session of the 4th)") == (
        "issue-31s-long-family-december-2026-session-of-the-4th"
    )
    assert anchor("# What failed, and why") == "what-failed-and-why"
