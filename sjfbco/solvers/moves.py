"""The move mix of ``best``'s walk: one frozen object, :class:`Moves`.

How often each move of the global search (:mod:`sjfbco.solvers.search`) and of the
server search (:mod:`sjfbco.solvers.servers`) is drawn, how far a move reaches, the
late-acceptance look-back, and how many decodes of reserve the walk keeps before a step
no candidate count guards (:mod:`sjfbco.solvers.best`). Every field is a
:func:`sjfbco.knobs.knob` with its source; :class:`~sjfbco.solvers.best.BestParams`
holds one (``moves``, default :data:`DEFAULT_MOVES`) and hands it to the walk.

The draws are cumulative: one ``rng.random()`` per move, compared with the bounds in
order (``tail_insert`` < ``insert`` < ``near_swap`` < ``split_flip``: 35%, 25%, 20%,
10% and the rest ruin and recreate), so the random numbers a walk draws, and their
order, do not depend on the mix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sjfbco.checks import check_number
from sjfbco.knobs import UNTUNED, knob

if TYPE_CHECKING:
    from collections.abc import Callable

#: Where the walk's reserves were measured (the figures moved there from best.py).
_RESERVES = "docs/benchmarks/2026-12-best-paper.md#where-bests-parameters-came-from"


@dataclass(frozen=True)
class Moves:
    """The move mix, reach, look-back and reserves of ``best``'s walk.

    Invariants (checked): the global bounds rise within ``[0, 1]`` (``tail_insert`` <=
    ``insert`` <= ``near_swap`` <= ``split_flip``), so do the server bounds
    (``relocate`` <= ``swap``); ``first_ending``, ``late`` and the window within
    ``[0, 1]`` (``window_min`` <= ``window_max``); ``noise`` in ``[0, 1)``; reach and
    look-backs integers >= 1; the reserves >= 0.
    """

    # -- the global search (search.Engine.neighbour): r = rng.random() ----------------------
    #: r below it: *tail insert*, a job of the tail moves ahead (35%)
    tail_insert: float = knob(0.35, UNTUNED)
    #: r below it: *insert*, a random job to a random place (25%)
    insert: float = knob(0.6, UNTUNED)
    #: r below it: *near swap*, two jobs up to ``near`` places apart (20%)
    near_swap: float = knob(0.8, UNTUNED)
    #: r below it: *split flip* when a job's split permission can matter (10%); the rest
    #: *ruin and recreate*
    split_flip: float = knob(0.9, UNTUNED)
    #: the tail a *tail insert* takes its job from: the last this share of the makespan
    late: float = knob(0.1, UNTUNED)
    #: how many places apart a *near swap* reaches
    near: int = knob(10, UNTUNED)
    #: the window of *ruin and recreate*: a width drawn in ``[window_min, window_max]`` of
    #: the makespan
    window_min: float = knob(0.1, UNTUNED)
    #: (see ``window_min``)
    window_max: float = knob(0.4, UNTUNED)
    #: the largest noise of *ruin and recreate*'s priority rule (a relative spread drawn
    #: in ``[0, noise]``)
    noise: float = knob(0.3, UNTUNED)
    #: late-acceptance look-back of the global search (Burke and Bykov)
    history: int = knob(100, UNTUNED)
    # -- the server search (servers.ServerSearch.propose): r = rng.random() -----------------
    #: r below it: *relocate* a job of a server that ends last (45%)
    relocate: float = knob(0.45, UNTUNED)
    #: r below it: *swap* two jobs between servers (40%); the rest *re-order* one job
    swap: float = knob(0.85, UNTUNED)
    #: how often a relocated job goes to the eligible server that ends first (else a
    #: random one)
    first_ending: float = knob(0.5, UNTUNED)
    #: late-acceptance look-back of the server search
    server_history: int = knob(200, UNTUNED)
    # -- the walk's reserves (best.Walk) ----------------------------------------------------
    #: a step that costs several evaluations (the whole-instance model's hint, the server
    #: decomposition) starts only with this many of the walk's reserves left
    room_reserves: float = knob(4, _RESERVES)
    #: decodes a hand-out after a server or CP-SAT phase costs: the reserve is this many
    #: times the longest decode (once when no such phase follows)
    handout_decodes: float = knob(2, _RESERVES)

    def __post_init__(self) -> None:
        def rule(name: str, text: str, ok: Callable[[float], bool]) -> None:
            check_number(f"moves.{name}", getattr(self, name), text, ok)

        unit = "in [0, 1]"
        for name in ("tail_insert", "relocate", "first_ending", "late", "window_min"):
            rule(name, unit, lambda v: 0 <= v <= 1)
        rule("insert", "in [tail_insert, 1]", lambda v: self.tail_insert <= v <= 1)
        rule("near_swap", "in [insert, 1]", lambda v: self.insert <= v <= 1)
        rule("split_flip", "in [near_swap, 1]", lambda v: self.near_swap <= v <= 1)
        rule("swap", "in [relocate, 1]", lambda v: self.relocate <= v <= 1)
        rule("window_max", "in [window_min, 1]", lambda v: self.window_min <= v <= 1)
        rule("noise", "in [0, 1)", lambda v: 0 <= v < 1)
        for name in ("near", "history", "server_history"):
            rule(name, "an integer >= 1", lambda v: isinstance(v, int) and v >= 1)
        for name in ("room_reserves", "handout_decodes"):
            rule(name, ">= 0", lambda v: v >= 0)


#: The walk's move mix unless ``best`` is handed another (``BestParams.moves``).
DEFAULT_MOVES = Moves()
