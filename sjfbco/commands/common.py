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
import math
import re
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


#: An anytime solver's report of a new incumbent (``sjfbco.progress``'s convention, e.g.
#: best's ``"best: makespan 380 (list)"``, seconds against its time limit), with the
#: solver's lower bound when it has one (``"best: makespan 380, bound 351 (list)"``).
INCUMBENT = re.compile(
    r"^(?P<solver>[^:]+): makespan (?P<makespan>[0-9.eE+-]+)"
    r"(?:, bound (?P<bound>[0-9.eE+-]+))?(?: \((?P<source>.*)\))?$"
)


class ProgressBar:
    """Draws :mod:`sjfbco.progress` reports as one tqdm bar on stderr, while in a ``with`` block.

    A new task text resets the bar (its description, total and unit). The bar
    shows only after :data:`DELAY_S` seconds of work and is redrawn every
    :data:`REFRESH_S` seconds, so a phase without steps (an exact solver
    working) still shows its elapsed time. With ``enabled`` false nothing is
    drawn and no listener is installed. ``budget_s``: the whole command's expected
    seconds (e.g. the time limits of its anytime runs); the bar then also shows
    ``overall E s of ~B s`` across its phases and runs.

    An anytime run (:meth:`clock`) is drawn as a clock instead: elapsed over its
    time limit in whole seconds, moving every :data:`REFRESH_S`, and after it the
    incumbent (from the solver's ``"NAME: makespan M (source)"`` reports,
    :data:`INCUMBENT`), the lower bound given and the gap between them, and the
    phase the solver names (reports without a unit); the step bars of its inner
    work (placement passes, the evaluator) are not drawn, so nothing flickers.
    """

    #: Seconds of work before a bar first shows (quick runs stay silent).
    DELAY_S = 0.5
    #: Seconds between redraws of a bar that gets no reports.
    REFRESH_S = 1.0
    #: The clock's layout: whole seconds, no rate (a clock's rate is 1 s/s); the figures
    #: (:meth:`clock_text`) go in the unit's place.
    CLOCK_FORMAT = "{desc}{n_fmt}/{total_fmt} s |{bar}| {unit}"
    #: A task counting seconds against a limit outside a clock run.
    SECONDS_FORMAT = "{desc}: {n_fmt}/{total_fmt} s |{bar}|{postfix}"
    #: The clock without a time limit (a run bounded by iterations).
    OPEN_CLOCK_FORMAT = "{desc}{n_fmt} s, {unit}"

    def __init__(self, enabled: bool, prefix: str = "", budget_s: float | None = None):
        self.enabled = enabled
        self.prefix = prefix
        self.budget_s = budget_s
        self.started = time.monotonic()
        self.bar: Any = None
        self.task: str | None = None
        self._ctx: Any = None
        self._stop: threading.Event | None = None
        self._clock: dict[str, Any] | None = None
        #: The lower bound (slots) an anytime run found inside a library call is shown
        #: against (``compare`` sets it per instance).
        self.bound: float | None = None

    def clock(
        self, prefix: str, limit_s: float | None, bound: float | None, auto: bool = False
    ) -> None:
        """Draw the next run as a clock of ``limit_s`` seconds (``None``: no limit) with
        the lower bound ``bound`` (slots; ``None``: unknown), until :meth:`plain` (with
        ``auto``: also until a report of another run, or other work after the limit)."""
        self.prefix = prefix
        if not self.enabled:
            return
        self._clock = {"t0": time.monotonic(), "limit": limit_s, "bound": bound,
                       "incumbent": None, "phase": None, "auto": auto}  # fmt: skip
        self.task = None
        bar = self._bar()
        bar.bar_format = self.CLOCK_FORMAT if limit_s else self.OPEN_CLOCK_FORMAT
        bar.unit = ""
        bar.set_description_str(prefix, refresh=False)
        bar.reset(total=None if limit_s is None else max(1, math.ceil(limit_s)))
        self._tick()

    def plain(self, prefix: str = "") -> None:
        """Back to one bar per task (the next run is not an anytime one)."""
        self.prefix = prefix
        if self._clock is not None and self.bar is not None:
            self.bar.bar_format = None
            self.task = None
        self._clock = None

    def _bar(self) -> Any:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(file=sys.stderr, dynamic_ncols=True, leave=False, delay=self.DELAY_S)
        return self.bar

    def __call__(self, p: Progress) -> None:
        if self._clock is not None and self._clock_report(p):
            return
        found = INCUMBENT.match(p.task) if p.unit == "s" and p.total else None
        if found:
            # an anytime run inside a library call (compare): its clock, from its reports
            base = self.prefix
            self.clock(f"{base}{found.group('solver')}: ", p.total, self.bound, auto=True)
            assert self._clock is not None
            self._clock["t0"] = time.monotonic() - p.done
            self._clock["base"] = base
            self._clock_report(p)
            return
        bar = self._bar()
        if p.task != self.task:
            self.task = p.task
            bar.set_description_str(f"{self.prefix}{p.task}", refresh=False)
            bar.unit = p.unit or "it"
            # seconds against a limit: whole seconds, no rate ("s/s")
            bar.bar_format = self.SECONDS_FORMAT if p.unit == "s" and p.total else None
            bar.reset(total=p.total if p.unit != "s" or not p.total else math.ceil(p.total))
        bar.update((int(p.done) if p.unit == "s" else p.done) - bar.n)
        self._overall()

    def _clock_report(self, p: Progress) -> bool:
        """A report during a clock run: a new incumbent, a named phase, or inner steps
        (not drawn). ``False`` when it ends a clock that started by itself
        (``auto``): a new run (unit ``run``), or other work after the time limit."""
        c = self._clock
        assert c is not None
        found = INCUMBENT.match(p.task)
        if (
            c["auto"]
            and not found
            and (p.unit == "run" or time.monotonic() - c["t0"] >= (c["limit"] or 0))
        ):
            self.plain(c.get("base", self.prefix))
            return False
        if found:
            c["incumbent"] = float(found.group("makespan"))
            if found.group("bound") is not None:  # the solver's own bound, when it rises
                c["bound"] = max(c["bound"] or 0.0, float(found.group("bound")))
        elif not p.unit:
            c["phase"] = p.task
        else:
            return True  # the steps of inner work: not drawn
        self._tick()
        return True

    def clock_text(self) -> str:
        """The clock's figures: ``incumbent M, bound B, gap G`` (as known), the phase."""
        c = self._clock
        if c is None:
            return ""
        parts = []
        if c["incumbent"] is not None:
            parts.append(f"incumbent {c['incumbent']:g}")
        if c["bound"]:
            parts.append(f"bound {c['bound']:g}")
            if c["incumbent"] is not None:
                parts.append(f"gap {c['incumbent'] / c['bound']:.3f}")
        if c["phase"]:
            parts.append(c["phase"])
        overall = self.overall()
        return ", ".join([*parts, *([overall] if overall else [])])

    def _tick(self) -> None:
        """Move the clock to the seconds elapsed (whole, at most the limit) and redraw
        its figures."""
        c, bar = self._clock, self.bar
        if c is None or bar is None:
            return
        elapsed = int(time.monotonic() - c["t0"])
        if c["limit"]:
            elapsed = min(elapsed, bar.total)
        bar.update(elapsed - bar.n)
        bar.unit = self.clock_text()

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
                if self._clock is not None:
                    self._tick()
                else:
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
        self._clock = None


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


def slot_note(instances: list[ProblemData]) -> str:
    """A line saying how long a slot is, for tables whose times are in slots."""
    lengths = {d.cost.slot_seconds for d in instances}
    if len(lengths) == 1:
        (slot,) = lengths
        where = instances[0].name if len(instances) == 1 else "every instance"
        return f"one slot is {slot:g} s in {where}"
    return "one slot is " + ", ".join(f"{d.cost.slot_seconds:g} s in {d.name}" for d in instances)
