"""The size caps of the models and bounds: one frozen object, :class:`SizeCaps`.

A model or bound that could exhaust memory or time on a large instance counts its size
first and is not built above its cap (it answers ``status="not built: ..."``, or no
bound, or fewer choices; never a wrong answer). Every such cap is a field here, named
after its model so that no name means two things, and declared with
:func:`sjfbco.knobs.knob` with its source.

The object is *passed in*, like :class:`~sjfbco.solvers.exact.params.Shares`: each
function or model class that counts against a cap takes ``size_caps: SizeCaps =
DEFAULT_CAPS`` (the exact solver takes it from ``Parts.size_caps`` and hands it to every
phase through its run state). A test builds one, ``replace(DEFAULT_CAPS,
whole_pairs=10)``, instead of patching a module. Input size limits (inputs refused
before anything runs, raised with an environment variable) are a different thing:
:mod:`sjfbco.limits`.

Floor 3, first room (``docs/design.md``): it imports only leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from sjfbco.checks import check_number
from sjfbco.knobs import UNTUNED, knob

#: The page where the 120 filled modes per job were chosen.
_ODD_SHAPES = "docs/benchmarks/2026-12-odd-shapes.md#what-failed-and-why"


@dataclass(frozen=True)
class SizeCaps:
    """The size caps of every model and bound (counts; each an integer >= 0).

    Invariant (checked): every field is an integer >= 0 (not a bool); 0 refuses every
    model of its kind (tests use it).
    """

    # -- the idle-GPU bound (sjfbco.bounds.idle) ------------------------------------------
    #: largest server capacity whose subset sums the idle bound enumerates (a boolean per
    #: GPU: 10^5 per size and capacity cost well under a millisecond); a larger server
    #: counts all its GPUs as usable (valid, only weaker)
    fill_capacity: int = knob(100_000, UNTUNED)

    # -- placement patterns (sjfbco.patterns.Patterns): the exact models' vocabulary --------
    #: most servers the exact models enumerate patterns over (a pattern holds one count per
    #: server, so enumerating costs servers x patterns)
    pattern_servers: int = knob(200, UNTUNED)
    #: most patterns one job may have before the exact models refuse the instance
    patterns_per_job: int = knob(5_000, UNTUNED)
    # -- bounds (sjfbco.bounds) ---------------------------------------------------------------
    #: most thresholds K of U^(e), release times r, and narrow clique members the packing
    #: bounds try (any subset gives a valid bound; the cap keeps them O(n log n))
    packing_choices: int = knob(64, UNTUNED)
    #: longest bin (slots) the cutting-stock knapsack's table is built for: 8 bytes a slot,
    #: 16 MB (10^12 iterations make makespans of 10^11 slots: a terabyte)
    cutting_stock_bin_slots: int = knob(2_000_000, UNTUNED)
    # -- relaxations (sjfbco.relaxations) -----------------------------------------------------
    #: most entries (job x mode x slot) of the contention-free relaxation
    relaxation_entries: int = knob(5_000_000, UNTUNED)
    #: most start variables of a time-indexed form (per-server or pooled)
    time_indexed_variables: int = knob(200_000, UNTUNED)
    #: most capacity-row entries of a time-indexed form (about 3 GB at the cap)
    time_indexed_entries: int = knob(20_000_000, UNTUNED)
    #: most configurations of the configuration bound (servers of many GPUs and many sizes)
    configurations: int = knob(20_000, UNTUNED)
    #: most variables of the configuration bound
    configuration_variables: int = knob(2_000_000, UNTUNED)
    #: most configurations of the grouped configuration bound (an LP of any size)
    grouped_configurations: int = knob(200_000, UNTUNED)
    #: most intervals of the pooled relaxation as intervals on CP-SAT
    pooled_intervals: int = knob(50_000, UNTUNED)
    # -- CP-SAT models of the solvers (sjfbco.solvers.wholecp, sjfbco.solvers.cprepack) -------
    #: jobs x servers above which the whole-instance model is not built (each pair is an
    #: optional interval; CP-SAT's presolve alone takes seconds near this size)
    whole_pairs: int = knob(50_000, UNTUNED)
    #: most modes per job in the whole-instance model's ``"filled"`` splits (the 120 pairs
    #: of 16 servers of 4 for an 8-GPU job)
    whole_filled: int = knob(120, _ODD_SHAPES)
    #: most split patterns per job in a CP-SAT re-packing (fewest servers first)
    repack_patterns: int = knob(24, UNTUNED)
    #: servers x subset sizes above which the subset walk stops looking for larger subsets
    #: (its table of reachable sums holds one integer per cell)
    repack_subset_cells: int = knob(1_000_000, UNTUNED)
    #: most server x slot cells (8 bytes each: 80 MB) a hint is laid out on
    #: (``paper-s20-seed0`` needs 391,420: 20 servers x 19,571 slots)
    retime_cells: int = knob(10_000_000, UNTUNED)

    def __post_init__(self) -> None:
        for f in fields(self):
            check_number(
                f"size_caps.{f.name}",
                getattr(self, f.name),
                "an integer >= 0",
                lambda v: isinstance(v, int) and v >= 0,
            )


#: The caps every model and bound uses unless it is handed others.
DEFAULT_CAPS = SizeCaps()
