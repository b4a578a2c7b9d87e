"""The one clock of a solver run: a :class:`Deadline` built from the one time limit.

A run starts one deadline from its ``time_limit`` (:meth:`Deadline.start`) and hands it,
or a part of it, to every phase, relaxation and helper: a share of the limit
(:meth:`Deadline.share_of_limit`), a share of what is left (:meth:`Deadline.share`), the
same end less a reserve kept back for the work after it (:meth:`Deadline.reserve`), at
most a window of seconds (:meth:`Deadline.window`). A part never ends after the deadline
it was cut from, and every part answers the same questions: :meth:`Deadline.left` (never
below 0), :meth:`Deadline.expired`, and :meth:`Deadline.seconds` for the few libraries
that take seconds (CP-SAT's ``max_time_in_seconds``, HiGHS's ``time_limit``, CBC's
``timeLimit``). A deadline without a limit (:meth:`Deadline.never`) never expires on time
and its parts have no limit either, so a run with an iteration count stays
deterministic.

Ctrl-C: a deadline holds the ``stop`` test it was started with (``solve()``'s solvers pass
:func:`sjfbco.interrupt.requested`) and every part cut from it keeps it, so
:meth:`Deadline.expired` is true at once on the first Ctrl-C; :meth:`Deadline.interrupted`
says which of the two ended it. This module imports nothing of sjfbco (floor 0 of
``docs/design.md``), so the test is passed in rather than imported.

The time source is injectable too (``now``, default :func:`time.perf_counter`): tests
drive a deadline with a fake clock instead of sleeping.

Compared with PyVRP's ``pyvrp.stop`` and ALNS's ``alns.stop`` (stopping criteria called
once per iteration, each starting its own clock on its first call), a deadline here is
an absolute end fixed when the run starts and split into nested parts, because the
phases of ``best`` and ``exact`` run one after another inside one limit and hand
seconds to C libraries; the iteration count of ``best``'s walk is kept by the walk
(:class:`sjfbco.solvers.search.Tally`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from sjfbco.errors import InputError

#: Seconds between two checks of a stop request while a library runs (Ctrl-C, or the
#: spare core's proof): short enough that a stop is felt at once, long enough to cost
#: nothing measurable (untuned).
POLL_S = 0.05

#: The least useful slice of time (seconds): a model, a search or a bound phase is not
#: begun with less left, and a library is never handed less (so never a limit of 0 or
#: below). Source: chosen by hand with the first shared budget (issue 17, commit 5c0c04a)
#: and written as a literal in 12 places until issue 45 gathered them here; untuned.
MIN_SLICE = 0.05

#: Seconds a first (cold) import of OR-Tools' CP-SAT (``ortools.sat.python.cp_model``) is
#: taken to cost: nothing can interrupt an import, so a step that would import it is skipped
#: when less is left (:meth:`Deadline.fits_import`). Measured 0.31 to 0.33 s in fresh
#: processes at load 0.3 to 0.5 (0.47 s at load 1.3 to 1.9):
#: ``docs/benchmarks/2026-12-cold-imports.md``.
CP_SAT_IMPORT_S = 0.35

#: Seconds a first (cold) import of ``scipy.optimize`` (HiGHS's ``linprog``) is taken to
#: cost, as :data:`CP_SAT_IMPORT_S`. Measured 0.27 to 0.37 s in fresh processes at load 0.3
#: to 0.5: ``docs/benchmarks/2026-12-cold-imports.md``.
SCIPY_OPTIMIZE_IMPORT_S = 0.35

#: The module whose first import :data:`CP_SAT_IMPORT_S` prices.
CP_SAT = "ortools.sat.python.cp_model"
#: The module whose first import :data:`SCIPY_OPTIMIZE_IMPORT_S` prices.
SCIPY_OPTIMIZE = "scipy.optimize"


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Deadline:
    """When a run (or one part of it) must end.

    Parameters
    ----------
    end
        The end on the ``now`` clock (seconds), ``None``: no limit.
    limit
        The run's time limit in seconds (the whole of it, also in a part: shares of the
        limit are shares of this), ``None``: no limit.
    begun
        When the run started, on the ``now`` clock (:meth:`elapsed`).
    now
        The time source (default :func:`time.perf_counter`).
    stop
        A test that ends the deadline early when true (Ctrl-C: :func:`sjfbco.interrupt.requested`).
    """

    end: float | None
    limit: float | None = None
    begun: float = 0.0
    now: Callable[[], float] = field(default=time.perf_counter, repr=False, compare=False)
    stop: Callable[[], bool] = field(default=_never, repr=False, compare=False)

    @classmethod
    def start(
        cls,
        seconds: float | None,
        *,
        now: Callable[[], float] = time.perf_counter,
        stop: Callable[[], bool] = _never,
    ) -> Deadline:
        """A deadline ``seconds`` from now (``None``: none); bad seconds are an
        :class:`~sjfbco.errors.InputError` (a time limit must be a positive number)."""
        if seconds is not None and (
            isinstance(seconds, bool) or not math.isfinite(seconds) or seconds <= 0
        ):
            raise InputError(f"time limit: must be a positive number of seconds, got {seconds!r}")
        begun = now()
        if seconds is None:
            return cls(None, None, begun, now, stop)
        return cls(begun + seconds, seconds, begun, now, stop)

    @classmethod
    def after(
        cls,
        seconds: float | None,
        *,
        now: Callable[[], float] = time.perf_counter,
        stop: Callable[[], bool] = _never,
    ) -> Deadline:
        """The deadline ``seconds`` from now (``None``: none), unchecked (a part handed on
        may be empty or past): what a solver called with seconds by the registry's
        contract runs by; ``stop`` ends it too (Ctrl-C: ``sjfbco.interrupt.requested``)."""
        return replace(cls.since(now(), seconds, now=now), stop=stop)

    @classmethod
    def since(
        cls,
        started: float,
        seconds: float | None,
        *,
        now: Callable[[], float] = time.perf_counter,
    ) -> Deadline:
        """The deadline ``seconds`` after ``started`` on ``now``'s clock (``None``: none),
        for a model whose own clock started before it was handed the time; no check (a
        part may be empty)."""
        if seconds is None:
            return cls(None, None, started, now)
        return cls(started + seconds, seconds, started, now)

    @classmethod
    def never(
        cls, *, now: Callable[[], float] = time.perf_counter, stop: Callable[[], bool] = _never
    ) -> Deadline:
        """No time limit (Ctrl-C still ends it when ``stop`` is given)."""
        return cls(None, None, now(), now, stop)

    @property
    def unlimited(self) -> bool:
        """Whether this deadline has no end."""
        return self.end is None

    def left(self) -> float | None:
        """Seconds left, never below 0 (``None``: no limit)."""
        if self.end is None:
            return None
        return max(0.0, self.end - self.now())

    def elapsed(self) -> float:
        """Seconds since the run began."""
        return self.now() - self.begun

    def room(self) -> float:
        """Seconds left, possibly negative once passed (``inf``: no limit)."""
        return math.inf if self.end is None else self.end - self.now()

    def interrupted(self) -> bool:
        """Whether the stop test (Ctrl-C) has ended this deadline."""
        return self.stop()

    def expired(self) -> bool:
        """The end has come, or the stop test (Ctrl-C) is true."""
        return self.stop() or (self.end is not None and self.now() >= self.end)

    def too_short(self, least: float = MIN_SLICE) -> bool:
        """Less than ``least`` seconds left (the least useful slice): not worth starting
        a model or a phase; ``False`` without a limit."""
        return self.end is not None and self.end - self.now() < least

    def fits_import(self, module: str, seconds: float) -> bool:
        """Whether a step that imports ``module`` may start by this deadline (the step's
        own: its part of the run): ``module`` is imported already, there is no limit, or
        ``seconds`` (its cold import, e.g. :data:`CP_SAT_IMPORT_S`) are left. An import
        cannot be interrupted, so one begun with less left overruns the step, and the
        steps after it (``best``'s walk) would lose that time: a longer limit could then
        end worse than a shorter one that skipped the step."""
        return module in sys.modules or not self.too_short(seconds)

    def seconds(self, least: float = MIN_SLICE) -> float | None:
        """Seconds for a library that takes seconds: what is left but at least ``least``
        (never 0 or below), ``None`` without a limit."""
        if self.end is None:
            return None
        return max(least, self.end - self.now())

    def _ending(self, end: float | None) -> Deadline:
        if end is None or self.end is None:
            return replace(self, end=end if self.end is None else self.end)
        return replace(self, end=min(end, self.end))

    def share(self, fraction: float) -> Deadline:
        """A part ending after ``fraction`` of what is left (no limit: none)."""
        if self.end is None:
            return self
        now = self.now()
        return replace(self, end=now + fraction * max(0.0, self.end - now))

    def share_of_limit(
        self, fraction: float, *, keep: float = 0.0, unlimited: float | None = None
    ) -> Deadline:
        """A part of ``fraction`` of the limit, ending at the latest ``keep`` of the limit
        before this deadline (never before now). Without a limit: a part of ``unlimited``
        seconds (``None``: no limit either)."""
        if self.end is None or self.limit is None:
            return self.within(unlimited)
        now = self.now()
        left = max(0.0, min(self.end - now - keep * self.limit, fraction * self.limit))
        return replace(self, end=now + left)

    def from_start(self, fraction: float) -> Deadline:
        """A part ending once ``fraction`` of the limit has passed since the run began (no
        limit: none): the first step of a run, whatever ran before it was cut."""
        if self.end is None or self.limit is None:
            return self
        return self._ending(self.begun + fraction * self.limit)

    def earliest(self, other: Deadline) -> Deadline:
        """This deadline, ending no later than ``other`` (a part with two ends)."""
        return self._ending(other.end)

    def reserve(self, seconds: float) -> Deadline:
        """The same end less ``seconds`` kept back for the work after the part (no limit:
        none)."""
        if self.end is None:
            return self
        return replace(self, end=self.end - seconds)

    def window(self, seconds: float | None) -> Deadline:
        """A part of at most ``seconds`` from now (``None``: until this one ends). Without a
        limit there is no window either: an iteration count alone stays deterministic."""
        if self.end is None or seconds is None:
            return self
        return self._ending(self.now() + seconds)

    def within(self, seconds: float | None) -> Deadline:
        """A part of at most ``seconds`` from now, also when this deadline has no limit
        (``None``: this one), for a phase given its own seconds in a run without a limit."""
        if seconds is None:
            return self
        return self._ending(self.now() + seconds)
