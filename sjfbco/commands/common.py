"""Conventions every subcommand shares (``docs/cli.md``).

- Output: ``-o/--output FILE`` for a file, ``-o/--output-dir DIR`` for a
  folder (:func:`add_output`); a command's older spellings are listed in its
  module's ``DEPRECATED`` mapping and still work, with a warning
  (:func:`sjfbco.cli.main` rewrites them before parsing).
- Progress: a tqdm bar on stderr for long work, shown when stderr is a
  terminal; ``-q/--quiet`` turns it off, ``--progress`` forces it
  (:func:`add_progress`, :class:`ProgressBar`).
- Plugins: ``--plugin MODULE_OR_FILE`` imports a module (e.g. one that
  registers a solver or defines a policy) before the command runs.
- Warnings and notes go to stderr as ``sjfbco: warning: ...``; stdout carries
  only the command's results (only JSON with ``--json``).

Imports here stay light: ``sjfbco --help`` loads this module.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from sjfbco.cost import ConfigurationError
from sjfbco.files import read_instance_and_schedule as read_pair
from sjfbco.plugins import import_plugin
from sjfbco.progress import listen
from sjfbco.solvers.contract import SOLVERS

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterator

    from sjfbco.problem import ProblemData
    from sjfbco.progress import Progress
    from sjfbco.schedule import Schedule


def warn(message: str) -> None:
    """One ``sjfbco: warning: ...`` line on stderr."""
    print(f"sjfbco: warning: {message}", file=sys.stderr, flush=True)


def add_output(
    p: Any, *, required: bool = False, folder: bool = False, metavar: str | None = None, **kw: Any
) -> None:
    """``-o/--output FILE``, or ``-o/--output-dir DIR`` with ``folder``; read as ``args.output``."""
    flags = ("-o", "--output-dir") if folder else ("-o", "--output")
    p.add_argument(
        *flags,
        dest="output",
        required=required,
        metavar=metavar or ("DIR" if folder else "FILE"),
        **kw,
    )


def add_progress(p: Any) -> None:
    """``-q/--quiet`` and ``--progress`` (read with :func:`progress_enabled`)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar on stderr (errors and warnings still show)",
    )
    g.add_argument(
        "--progress",
        action="store_true",
        help="show the progress bar even when stderr is not a terminal (default: only on one)",
    )


def progress_enabled(args: argparse.Namespace) -> bool:
    """Off with ``--quiet``, on with ``--progress``, else when stderr is a terminal."""
    if getattr(args, "quiet", False):
        return False
    if getattr(args, "progress", False):
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressBar:
    """Draws :mod:`sjfbco.progress` reports as one tqdm bar on stderr, while in a ``with`` block.

    A new task text resets the bar (its description, total and unit). The bar
    shows only after :data:`DELAY_S` seconds of work and is redrawn every
    :data:`REFRESH_S` seconds, so a phase without steps (an exact solver
    working) still shows its elapsed time. With ``enabled`` false nothing is
    drawn and no listener is installed. ``budget_s``: the whole command's expected
    seconds (e.g. the time limits of its anytime runs); the bar then also shows
    ``overall E s of ~B s`` across its phases and runs.
    """

    #: Seconds of work before a bar first shows (quick runs stay silent).
    DELAY_S = 0.5
    #: Seconds between redraws of a bar that gets no reports.
    REFRESH_S = 1.0

    def __init__(self, enabled: bool, prefix: str = "", budget_s: float | None = None):
        self.enabled = enabled
        self.prefix = prefix
        self.budget_s = budget_s
        self.started = time.monotonic()
        self.bar: Any = None
        self.task: str | None = None
        self._ctx: Any = None
        self._stop: threading.Event | None = None

    def __call__(self, p: Progress) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(file=sys.stderr, dynamic_ncols=True, leave=False, delay=self.DELAY_S)
        if p.task != self.task:
            self.task = p.task
            self.bar.set_description_str(f"{self.prefix}{p.task}", refresh=False)
            self.bar.unit = p.unit or "it"
            self.bar.reset(total=p.total)
        self.bar.update(p.done - self.bar.n)
        self._overall()

    def overall(self) -> str | None:
        """``"overall E s of ~B s"``: seconds since the start against ``budget_s`` (if any;
        an estimate: set-up and heuristics come on top of the time limits)."""
        if self.budget_s is None:
            return None
        return f"overall {time.monotonic() - self.started:.0f} s of ~{self.budget_s:.0f} s"

    def _overall(self) -> None:
        text = self.overall()
        if text is not None and self.bar is not None:
            self.bar.set_postfix_str(text, refresh=False)

    def _redraw(self, stop: threading.Event) -> None:
        while not stop.wait(self.REFRESH_S):
            bar = self.bar
            if bar is not None:
                self._overall()
                bar.refresh()

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            self._ctx = listen(self)
            self._ctx.__enter__()
            self._stop = threading.Event()
            threading.Thread(target=self._redraw, args=(self._stop,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        if self._ctx is not None:
            self._ctx.__exit__(*exc)
            self._ctx = None
        if self.bar is not None:
            self.bar.close()
            self.bar = None
            self.task = None


def note_unused_time_limit(solvers: list[str], time_limit: float | None) -> None:
    """One warning when ``--time-limit`` is given but none of ``solvers`` takes it: the
    heuristics (``ls``, ``sjf-bco``, ...) run to the end, in well under a second on the
    paper's instances; only anytime solvers (``best``, ``exact``) stop by the clock."""
    if time_limit is None or not solvers or any(not SOLVERS[s].heuristic for s in solvers):
        return
    which = ", ".join(solvers)
    warn(
        f"--time-limit {time_limit:g} is not used: {which} "
        f"{'is a heuristic' if len(solvers) == 1 else 'are heuristics'} and "
        f"{'runs' if len(solvers) == 1 else 'run'} to the end; it applies to anytime "
        "solvers (best, exact)"
    )


def add_param(p: Any) -> None:
    """``--param KEY=VALUE`` (repeatable; read with :func:`sjfbco.params.solver_params`)."""
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="solver parameter, repeatable (e.g. kappa=8, mode=timestepped); with several "
        "solvers KEY=V goes to each that has KEY, SOLVER.KEY=V to one",
    )


def add_plugin(p: Any, what: str = "a solver") -> None:
    """``--plugin MODULE`` (repeatable): import a module or ``.py`` file first."""
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help=f"import MODULE (a module name or a .py file) first, e.g. to register {what}; "
        "repeatable (see docs/solvers.md)",
    )


def load_plugins(specs: list[str]) -> None:
    """Import each ``--plugin``; a failure is one line naming the plugin."""

    for spec in specs:
        import_plugin(spec)


def read_instance_and_schedule(
    instance: str, schedule: str, command: str
) -> tuple[ProblemData, Schedule]:
    """Read ``INSTANCE SCHEDULE``; the swapped order works with a deprecation warning."""

    data, sched, swapped = read_pair(instance, schedule)
    if swapped:
        warn(
            f"'{command} SCHEDULE INSTANCE' is deprecated: the order is INSTANCE SCHEDULE "
            f"(read {schedule} as the instance and {instance} as the schedule)"
        )
    return data, sched


@contextlib.contextmanager
def naming(path: str) -> Iterator[None]:
    """Prefix a :class:`~sjfbco.cost.ConfigurationError` raised inside with ``path``: the
    one-line message then names the file whose schedule put a job past one slot per
    iteration."""

    try:
        yield
    except ConfigurationError as err:
        raise ConfigurationError(f"{path}: {err}") from err


def debugging(args: argparse.Namespace | None = None) -> bool:
    """Whether to show tracebacks (``--debug`` or ``SJFBCO_DEBUG=1``)."""
    return bool(getattr(args, "debug", False) or os.environ.get("SJFBCO_DEBUG"))


def slot_note(instances: list[ProblemData]) -> str:
    """A line saying how long a slot is, for tables whose times are in slots."""
    lengths = {d.cost.slot_seconds for d in instances}
    if len(lengths) == 1:
        (slot,) = lengths
        where = instances[0].name if len(instances) == 1 else "every instance"
        return f"one slot is {slot:g} s in {where}"
    return "one slot is " + ", ".join(f"{d.cost.slot_seconds:g} s in {d.name}" for d in instances)
