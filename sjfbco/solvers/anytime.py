"""CP-SAT's solutions as it finds them: read, scored and handed on at once.

A long CP-SAT solve (``best``'s whole-instance model, :mod:`sjfbco.solvers.wholecp`)
must not hold the only copy of a schedule better than the run's incumbent until it
ends: a run stopped early (Ctrl-C, a deadline, a user who reads the progress) would
miss it. A :class:`Watch` is the solve's solution callback:

- in CP-SAT's thread, each solution is **read** at once (``read``: the values a caller
  needs copied out of the solver, e.g. each job's start and mode; cheap), and kept as
  *pending*: every one in order with ``every`` (a run that must repeat exactly, such as
  ``best`` with ``iterations`` and no time limit: which solutions a caller sees must not
  depend on the machine's speed), else only the latest (a later one replaces a waiting
  one: CP-SAT reports improving solutions only, so the last is the one that matters,
  and a backlog would delay it);
- it is **taken** (``take``: scored by the evaluator and handed on, e.g. offered to
  ``best``'s incumbent) in the callback itself while that is cheap (the last take cost
  at most :data:`INLINE_S`) or when nobody else would take it; otherwise the thread
  that called the solve takes it between its waits (:meth:`Watch.poll`, called by
  :func:`sjfbco.interrupt.run_stoppable` every :data:`sjfbco.clock.POLL_S`), so that
  CP-SAT searches on meanwhile;
- when the solve returns (at its end, its deadline, or a stop), :meth:`Watch.finish`
  takes what is still pending and the solver's final solution, so the last solution is
  always scored before the step returns.

A take runs in a copy of the caller's context (:mod:`contextvars`): progress reports
(:func:`sjfbco.progress.report`) reach the caller's listener from CP-SAT's thread too.
Takes never run at the same time (a lock), and an error in one is raised in the
caller's thread by :meth:`Watch.finish` (the search is stopped at once).

The stop test (``stop``, e.g. the run's :meth:`~sjfbco.clock.Deadline.interrupted`) is
read at every solution and every poll: a stop injected through a
:class:`~sjfbco.clock.Deadline` ends the search there, without a signal.
"""

from __future__ import annotations

import contextvars
import threading
import time
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

R = TypeVar("R")

#: A take that cost at most this many seconds is done in CP-SAT's callback (which holds up
#: one worker's search meanwhile); a dearer one is left to the caller's thread. A scored
#: schedule of the paper's 160 jobs costs about a millisecond; one of 5,000 jobs (the
#: whole-instance model's largest, ``wholecp.MAX_PAIRS``) a tenth of a second or more.
#: Untuned.
INLINE_S = 0.02


class Values(Protocol):
    """What a solution is read from: a CP-SAT solver after its solve, or its callback."""

    def value(self, expression: Any) -> Any: ...

    def boolean_value(self, literal: Any) -> Any: ...


def _never() -> bool:
    return False


class Watch(Generic[R]):
    """Reads each solution of a CP-SAT solve and hands it on (module docstring).

    Parameters
    ----------
    read
        Copies what the caller needs out of a solution (:class:`Values`): in CP-SAT's
        thread, so cheap and safe (it must not touch the caller's state).
    take
        Scores what ``read`` copied and hands it on (e.g. offers it to an incumbent).
    stop
        Ends the search when true (tested at each solution and each poll).
    every
        Take every solution in order (``True``), or only the latest waiting one.
    """

    def __init__(
        self,
        read: Callable[[Values], R],
        take: Callable[[R], None],
        stop: Callable[[], bool] = _never,
        every: bool = False,
    ):
        self.read = read
        self.take = take
        self.stop = stop
        self.every = every
        self.context = contextvars.copy_context()
        self.owner = threading.get_ident()
        self._pending: list[R] = []
        self._guard = threading.Lock()  # the pending solution
        self._taking = threading.Lock()  # one take at a time
        self._polled = False
        self._stop_search: Callable[[], None] | None = None
        #: solutions read, and taken (a pending one replaced by a later one is never taken)
        self.seen = 0
        self.taken = 0
        #: the last solution taken (as ``read`` copied it)
        self.last: R | None = None
        #: seconds the last take cost
        self.cost = 0.0
        self.error: BaseException | None = None

    def callback(self) -> Any:
        """A CP-SAT solution callback that reports to this watch."""
        from ortools.sat.python import cp_model

        watch = self

        class _Each(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                watch.found(self, self.stop_search)

        return _Each()

    def found(self, values: Values, stop_search: Callable[[], None]) -> None:
        """A solution (in CP-SAT's thread): read it, take it if cheap, stop if asked."""
        self._stop_search = stop_search
        try:
            raw = self.read(values)
        except BaseException as err:  # raised in the caller's thread by finish()
            self.error = err
            stop_search()
            return
        with self._guard:
            self._pending = [*self._pending, raw] if self.every else [raw]
            self.seen += 1
        here = threading.get_ident() == self.owner
        if here or not self._polled or self.cost <= INLINE_S:
            self._drain(here)
        if self.stop() or self.error is not None:
            stop_search()

    def poll(self) -> bool:
        """Between the caller's waits (its own thread): take the pending solution; whether
        the search must stop (the stop test, or a take's error), stopping it if a solution
        has given the means already (:func:`sjfbco.interrupt.run_stoppable` stops it
        otherwise)."""
        self._polled = True
        self._drain(True)
        ending = self.error is not None or self.stop()
        if ending and self._stop_search is not None:
            self._stop_search()
        return ending

    def finish(self, final: Values | None) -> R | None:
        """After the solve (the caller's thread): take what is pending, then ``final``'s
        solution (the solver's answer, ``None``: it has none) unless it was the last
        taken; raise a take's error. The final solution as read (``None``: none)."""
        self._drain(True)
        if self.error is not None:
            raise self.error
        if final is None:
            return None
        raw = self.read(final)
        if self.taken == 0 or raw != self.last:
            with self._guard:
                self._pending = [raw]
            self._drain(True)
            if self.error is not None:
                raise self.error
        return raw

    def _drain(self, here: bool) -> None:
        with self._taking:
            with self._guard:
                waiting, self._pending = self._pending, []
            for raw in waiting:
                if self.error is not None:
                    return
                tick = time.perf_counter()
                try:
                    if here:
                        self.take(raw)
                    else:
                        self.context.run(self.take, raw)
                except BaseException as err:  # raised in the caller's thread by finish()
                    self.error = err
                    return
                self.cost = time.perf_counter() - tick
                self.taken += 1
                self.last = raw


T = TypeVar("T")


class Beside(Generic[T]):
    """A step run on a thread of its own, beside the caller's work (``best``'s
    whole-instance CP-SAT step beside its walk: CP-SAT releases the interpreter while it
    searches, so the two use both cores).

    ``make`` is called on the new thread with the step's halt test (true once
    :meth:`halt` is called: the step must then end soon, e.g. by reading it in its
    deadline's stop test) and returns the step's result. The thread runs in a copy of
    the caller's context (:mod:`contextvars`: progress reports and CP-SAT's extra
    parameters reach it). A solve inside it is polled as the main thread's are
    (:func:`sjfbco.interrupt.run_stoppable`), so a halt or a Ctrl-C is felt within
    :data:`sjfbco.clock.POLL_S`. What the step hands on while it runs (e.g.
    :meth:`sjfbco.solvers.search.Engine.offer_outside`) must be safe beside the caller's
    work; :meth:`result` halts, waits and returns the result or raises the step's error.
    """

    def __init__(self, make: Callable[[Callable[[], bool]], T], name: str = "sjfbco-beside"):
        self._halt = threading.Event()
        self._box: dict[str, Any] = {}
        context = contextvars.copy_context()
        self.began = time.perf_counter()
        #: seconds the step ran (set when it ends)
        self.seconds: float | None = None
        self._thread = threading.Thread(
            target=context.run, args=(self._work, make), name=name, daemon=True
        )
        self._thread.start()

    def _work(self, make: Callable[[Callable[[], bool]], T]) -> None:
        try:
            self._box["value"] = make(self._halt.is_set)
        except BaseException as err:  # raised in the caller's thread by result()
            self._box["error"] = err
        finally:
            self.seconds = time.perf_counter() - self.began

    def halt(self) -> None:
        """Ask the step to end (at once if it reads its halt test)."""
        self._halt.set()

    def running(self) -> bool:
        """Whether the step has not ended yet."""
        return self._thread.is_alive()

    def result(self) -> T:
        """Halt the step, wait for it, and return its result (or raise its error)."""
        self.halt()
        self._thread.join()
        if "error" in self._box:
            raise self._box["error"]
        value: T = self._box["value"]
        return value
