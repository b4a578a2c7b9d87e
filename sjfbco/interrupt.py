"""Stopping anytime solvers on Ctrl-C (SIGINT) with their incumbent.

While :func:`catching` is active (``solve()`` enters it for every solver that
is not a heuristic: ``best``, ``exact``), the first SIGINT does not raise
``KeyboardInterrupt``: it sets a flag that the search loops read
(:func:`requested`) and calls the stop hooks of the backends running at that
moment (:func:`stopping`: CP-SAT's ``stop_search``, HiGHS's ``cancelSolve``).
The solver then returns its incumbent and its bound, and ``solve()`` reports
the status ``interrupted``. A second SIGINT raises ``KeyboardInterrupt`` as
usual (a user who insists).

A backend that runs in C without calling back into Python would hold up the
Python-level signal handler until it returns; :func:`run_stoppable` therefore
runs such a call in a worker thread while the main thread waits in short
joins, handles the signal and stops the backend. CP-SAT and HiGHS release the
GIL while they solve, so this costs nothing measurable.

Signals are process-wide, so this module keeps process-wide state (a flag and
the list of hooks); it is only active in the main thread, and only when
SIGINT has Python's default handler (a program that installed its own keeps
it).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import TYPE_CHECKING, Any, TypeVar

from sjfbco import clock

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType

T = TypeVar("T")

#: Set by the first SIGINT inside :func:`catching`; cleared when the outermost one starts.
_STOP = threading.Event()
#: Stop hooks of the backends now running (:func:`stopping`).
_HOOKS: list[Callable[[], None]] = []
#: Whether a :func:`catching` block has its handler installed.
_ACTIVE = threading.Event()
#: Seconds between the main thread's checks while a backend runs (:func:`run_stoppable`).
POLL_S = clock.POLL_S


def requested() -> bool:
    """Whether a SIGINT asked the running solver to stop (inside :func:`catching` only)."""
    return _ACTIVE.is_set() and _STOP.is_set()


def request() -> None:
    """Ask the running solver to stop, as the first SIGINT does (also from another thread)."""
    _STOP.set()
    for hook in list(_HOOKS):
        hook()


def _handler(signum: int, frame: FrameType | None) -> None:
    if _STOP.is_set():
        raise KeyboardInterrupt  # the second Ctrl-C: stop now
    request()


@contextlib.contextmanager
def catching(enabled: bool = True) -> Iterator[None]:
    """Turn the first SIGINT into a stop request while inside (see the module docstring).

    Does nothing when ``enabled`` is false, outside the main thread, inside another
    :func:`catching` block, or when SIGINT does not have Python's default handler.
    """
    if (
        not enabled
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    _STOP.clear()
    previous = signal.signal(signal.SIGINT, _handler)
    _ACTIVE.set()
    try:
        yield
    finally:
        _ACTIVE.clear()
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def stopping(hook: Callable[[], None]) -> Iterator[None]:
    """Call ``hook`` on a stop request while inside (at once if one came already)."""
    _HOOKS.append(hook)
    try:
        if _STOP.is_set():
            hook()
        yield
    finally:
        _HOOKS.remove(hook)


def active() -> bool:
    """Whether a :func:`catching` block is listening for SIGINT."""
    return _ACTIVE.is_set()


def run_stoppable(
    call: Callable[[], T], stop: Callable[[], None], poll: Callable[[], bool | None] | None = None
) -> T:
    """``call()``, stopped by ``stop()`` on a stop request.

    While :func:`catching` listens (and in the main thread), ``call`` runs in a
    worker thread and the main thread waits in :data:`POLL_S` joins, so the
    SIGINT handler runs at once and calls ``stop``; ``call`` must then return
    soon with what it has. So does a caller outside the main thread that gives a
    ``poll`` (a step that runs beside the main thread's work, e.g. ``best``'s
    whole-instance step, :class:`sjfbco.solvers.anytime.Beside`): its polls come
    every :data:`POLL_S` all the same. A ``poll`` that returns true also calls
    ``stop`` (its own stop test: a caller that wants the backend to end early).
    Otherwise ``call()`` runs here, with ``stop`` as a hook.

    Once a stop is requested, ``stop`` is called again at every join: a backend
    that was not running yet when the request came (CP-SAT's ``stop_search``
    before ``solve`` has begun is lost, ``solve`` starts afresh) is stopped as
    soon as it runs, instead of searching to its own limit.
    """
    main = threading.current_thread() is threading.main_thread()
    threaded = active() if main else poll is not None
    if not threaded:
        with stopping(stop):
            return call()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = call()
        except BaseException as err:  # re-raised in the caller's thread
            box["error"] = err

    worker = threading.Thread(target=work, name="sjfbco-backend", daemon=True)
    with stopping(stop):
        worker.start()
        while worker.is_alive():
            worker.join(POLL_S)
            if _STOP.is_set():
                stop()
            if poll is not None and poll():
                stop()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def solve_cp(
    solver: Any, model: Any, callback: Any = None, poll: Callable[[], bool | None] | None = None
) -> Any:
    """``solver.solve(model, callback)`` of OR-Tools CP-SAT, stopped (``stop_search``) on a
    stop request, ``poll`` called as :func:`run_stoppable` says. CP-SAT's own SIGINT
    catching is turned off: it would swallow the Ctrl-C, stop only this solve and leave
    the solver around it searching on."""
    solver.parameters.catch_sigint_signal = False
    try:
        return run_stoppable(lambda: solver.solve(model, callback), solver.stop_search, poll)
    except IndexError:
        # OR-Tools 9.15's presolve can fail on a valid model with a feasible solution hint
        # ("absl::btree_map::at"; tests/solvers/test_best.py keeps such a model as an example): the
        # hint only guides the search, so the same model is solved once more without it
        if not model.proto.solution_hint.vars:
            raise
        model.clear_hints()
        return run_stoppable(lambda: solver.solve(model, callback), solver.stop_search, poll)


def run_highs(h: Any) -> None:
    """``h.run()`` of a ``highspy.Highs``, cancelled (``cancelSolve``) on a stop request.

    HiGHS checks for the cancel in its interrupt callbacks, which are switched on
    only while :func:`catching` listens (they cost a Python call each).
    """
    if not active():
        h.run()
        return
    h.HandleUserInterrupt = True
    try:
        run_stoppable(h.run, h.cancelSolve)
    finally:
        h.HandleUserInterrupt = False
