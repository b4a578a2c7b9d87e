"""Progress of long work: reported by the library, shown (or not) by the caller.

The library never prints. Code that can run for long (a solver's passes over
tens of thousands of jobs, the evaluator, the exact solver's phases) calls
:func:`report` or ticks a :class:`Ticker`; by default nothing listens and a
report costs one context-variable lookup. A caller that wants to show
progress installs a listener for a block of code::

    with sjfbco.progress.listen(lambda p: print(p.task, p.done, p.total)):
        sjfbco.solve("big.json", "sjf-bco")

``sjfbco``'s command line draws the reports as a tqdm bar on stderr (see
``docs/cli.md``). An anytime solver reports each new incumbent as the task
``"NAME: makespan M (source)"`` with ``done`` the seconds elapsed, ``total`` its
time limit and ``unit`` ``"s"`` (``best`` does); the command line draws its run
as a clock with that incumbent, and a report without a unit as the phase it is in.
Every report is also logged at DEBUG level on the logger
``sjfbco.progress``. A leaf module: it imports nothing from sjfbco.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Progress:
    """One progress report.

    Parameters
    ----------
    task
        What is being done, e.g. ``"sjf-bco pass 3: placing jobs"``; a new
        task text starts a new stretch of work.
    done
        How much of it is done, in ``unit``.
    total
        How much there is (``None``: unknown, e.g. a phase without steps).
    unit
        What ``done`` counts (``"job"``, ``"trial"``; ``""`` for a phase).
    """

    task: str
    done: float = 0
    total: float | None = None
    unit: str = ""


Listener = Callable[[Progress], None]

_listener: ContextVar[Listener | None] = ContextVar("sjfbco_progress_listener", default=None)


def listening() -> bool:
    """Whether a listener is installed (callers may skip preparing reports if not)."""
    return _listener.get() is not None


def report(task: str, done: float = 0, total: float | None = None, unit: str = "") -> None:
    """Tell the current listener (if any) how far ``task`` is."""
    listener = _listener.get()
    if listener is None:
        return
    progress = Progress(task, done, total, unit)
    log.debug("%s: %s/%s %s", task, done, total, unit)
    listener(progress)


@contextlib.contextmanager
def listen(listener: Listener) -> Iterator[None]:
    """Send the reports made inside the block (this thread or task) to ``listener``."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


class Ticker:
    """Reports a loop's progress every ``every`` items, cheaply when nobody listens.

    ``tick(k)`` after item ``k`` (1-based) of ``total``; a report goes out at
    ``k = every, 2 every, ...`` and at ``k = total``.
    """

    def __init__(self, task: str, total: int, unit: str = "", every: int | None = None):
        self.task, self.total, self.unit = task, total, unit
        self.every = every or max(1, total // 200)
        self.on = listening()
        if self.on:
            report(task, 0, total, unit)

    def tick(self, k: int) -> None:
        """Item ``k`` of ``total`` is done."""
        if self.on and (k % self.every == 0 or k == self.total):
            report(self.task, k, self.total, self.unit)
