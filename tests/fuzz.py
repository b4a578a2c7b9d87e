"""Mutations of valid input files and the contract every ``sjfbco`` run must keep.

Shared by the fuzz tests (``tests/test_fuzz.py``) and the fuzz benchmark
(``benchmarks/bench_fuzz.py``). A run is ``sjfbco.cli.main(argv)`` in this
process with stdout and stderr captured; :func:`problems` lists what it broke:

- ``traceback``: an exception escaped ``main`` or it reported an internal error
  (exit 1 with ``internal error`` or the ``rerun with --debug`` hint, which
  ``solve`` gives for a solver's exception; a batch row saying a solver
  ``failed`` with a Python exception counts too);
- ``hang``: the run took longer than its time limit;
- ``multi-line error``: a failing run printed more than its one error line
  (``sjfbco: warning:`` lines aside);
- ``invalid json``: with ``--json``, a stdout line that is not JSON, or no line
  at all on success;
- ``stray stderr``: a successful ``--json`` run printed a line on stderr that
  is not an ``sjfbco: warning:`` line (a solver library's banner, issue 33);
- ``symlink followed``: a run wrote to the target of a symlink planted at its
  lock or journal (:func:`plant_symlink`, issue 33);
- ``accepted duplicate key`` / ``accepted control character``: a run exited 0
  although an instance or schedule it read names a key twice in one object, or
  holds a string with a control, format or bidirectional character or of blank
  space only (:func:`hostile`, issue 42).

Besides mutations, :data:`SHAPES` turns a valid instance into one of the
hostile shapes issue 33 found (no jobs, a horizon of 10^12 slots, one job on
one GPU) before it is mutated.

Mutations work on the parsed JSON (a value replaced by one of
:data:`INTERESTING`, a key dropped or added, a list element dropped or
doubled, a container swapped for a scalar) or on the text (cut short, a byte
changed, garbage inserted). Every random choice takes a ``random.Random``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import signal
import sys
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Iterator, Sequence

#: Values that broke, or nearly broke, some command once (issue 14) and their neighbours.
INTERESTING: tuple[Any, ...] = (
    0,
    1,
    -1,
    2,
    3,
    7,
    4096,
    4097,
    10**12,
    10**12 + 1,
    2**53,
    2**53 + 1,
    2**62,
    2**62 + 1,
    2**63,
    10**20,
    10**400,
    0.0,
    -0.0,
    0.5,
    1.5,
    1e-9,
    1e-320,
    5e-324,
    1e10,
    1e300,
    1.7e308,
    "",
    "x",
    "\ud800",
    "\udfff",
    "$\\frac{a$",
    "a\nb",
    "\x00",
    "\u202e",  # right-to-left override: shows another id than the one stored (issue 42)
    "ab\ufeff",  # a byte-order mark inside a string
    "a\u2028b",  # a line separator
    " ",  # blank
    "é" * 3,
    "y" * 5000,
    "power",
    "continuous",
    None,
    True,
    False,
    [],
    {},
    [0, 0],
    [[0, 0]],
    {"a": 1},
)

#: Text-level tokens that are not JSON numbers or that break parsers.
TEXT_TOKENS: tuple[str, ...] = (
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "\ufeff",
    "\x00",
    "]",
    "}",
    "{",
    '"',
    ",",
    "[" * 5000,
    "1" * 5000,
)


# --------------------------------------------------------------------------- mutations


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``doc`` (dict keys and list indices), the root included."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:50]):  # long lists: the first elements are enough
            out.extend(_paths(v, (*prefix, i)))
    return out


def _get(doc: Any, path: Sequence[Any]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def mutate_doc(doc: Any, rng: random.Random, count: int = 1) -> Any:
    """A copy of the JSON document ``doc`` with ``count`` random structural mutations."""
    doc = copy.deepcopy(doc)
    for _ in range(count):
        paths = _paths(doc)
        path = rng.choice(paths)
        op = rng.randrange(8)
        if not path:  # the root: replace it, or mutate below it next time
            if op == 0:
                doc = rng.choice(INTERESTING)
            continue
        parent, key = _get(doc, path[:-1]), path[-1]
        value = parent[key]
        if op <= 2:  # replace with an interesting value (most common)
            parent[key] = copy.deepcopy(rng.choice(INTERESTING))
        elif op == 3 and isinstance(parent, dict):
            del parent[key]
        elif op == 3 and isinstance(parent, list):
            parent.pop(key)
        elif op == 4 and isinstance(parent, dict):
            parent[rng.choice(["extra", "gpus", "start", "id", "format"])] = rng.choice(INTERESTING)
        elif op == 5 and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(value))  # a doubled element (a repeated id)
        elif op == 6 and isinstance(value, int | float) and not isinstance(value, bool):
            parent[key] = rng.choice([value * 10**6, -value, value + 1, value / 7, float(value)])
        elif op == 7 and isinstance(value, list) and value:
            parent[key] = value * rng.choice([2, 50]) if rng.random() < 0.3 else value[:1]
        else:
            parent[key] = copy.deepcopy(rng.choice(INTERESTING))
    return doc


#: A key and its colon in JSON text (for :func:`repeat_key`).
_KEY = re.compile(r'"([A-Za-z_]+)"\s*:\s*')


def repeat_key(text: str, rng: random.Random) -> str:
    """``text`` with one key given twice in its object (``"gpus": 0, "gpus": 4``), the first
    time with an interesting value; ``text`` itself when it has no key."""
    keys = list(_KEY.finditer(text))
    if not keys:
        return text
    m = rng.choice(keys)
    value = json.dumps(rng.choice([0, 1, 7, "x", None, [], 10**12]))
    return text[: m.start()] + f'"{m.group(1)}": {value}, ' + text[m.start() :]


def mutate_text(text: str, rng: random.Random) -> str:
    """``text`` cut short, with a character changed, with a token inserted or a key repeated."""
    if not text:
        return rng.choice(TEXT_TOKENS)
    at = rng.randrange(len(text))
    op = rng.randrange(5)
    if op == 4:
        return repeat_key(text, rng)
    if op == 0:
        return text[:at]
    if op == 1:
        return (
            text[:at]
            + chr(rng.choice([0, 10, 34, 44, 48, 91, 93, 123, 125, 0xFFFD]))
            + text[at + 1 :]
        )
    if op == 2:
        return text[:at] + rng.choice(TEXT_TOKENS) + text[at:]
    return text.replace("0", rng.choice(["NaN", "-1", "1e999", "0.0", ""]), rng.randint(1, 3))


def mutate_csv(text: str, rng: random.Random) -> str:
    """A CSV with one field of one line replaced, a line dropped or doubled, or cut short."""
    lines = text.splitlines()
    if not lines:
        return rng.choice(["", "a,b\n", "\x00"])
    i = rng.randrange(len(lines))
    op = rng.randrange(5)
    if op == 0:
        cells = lines[i].split(",")
        j = rng.randrange(len(cells))
        cells[j] = rng.choice(
            [
                *["", "nan", "inf", "-1", "0", "1e300", "1e-320", "x", "2**53", "\ud800", '"'],
                *["9" * 400, "a" * 200_000],  # over the csv module's 128 KiB field limit
            ]
        )
        lines[i] = ",".join(cells)
    elif op == 1:
        del lines[i]
    elif op == 2:
        lines.insert(i, lines[i])
    elif op == 3:
        lines[i] = lines[i] + "," + lines[i]
    else:
        return "\n".join(lines)[: rng.randrange(len(text) + 1)]
    return "\n".join(lines) + "\n"


def _no_jobs(doc: Any, rng: random.Random) -> Any:
    """``"jobs": []``: valid, makespan 0 everywhere."""
    return {**doc, "jobs": []}


def _huge_horizon(doc: Any, rng: random.Random) -> Any:
    """One job of 10^12 iterations at one iteration per slot (issue 33's reproducer: a dense
    timeline of that many slots asked for 29 TiB), beside the others or alone."""
    cost = {**doc.get("cost", {}), "slot_seconds": 0.011, "xi2": 0.01}
    job = {"id": "huge", "gpus": 1, "iterations": 10**12, "gradient_mb": 0}
    job["compute_seconds"] = 0
    jobs = [job] + (list(doc.get("jobs", []))[:3] if rng.random() < 0.5 else [])
    return {**doc, "cost": cost, "jobs": jobs}


def _one_gpu(doc: Any, rng: random.Random) -> Any:
    """The smallest cluster: one server of one GPU, every job cut to one GPU."""
    cluster = {**doc.get("cluster", {}), "gpus_per_server": [1]}
    jobs = [{**j, "gpus": 1} for j in doc.get("jobs", []) if isinstance(j, dict)]
    return {**doc, "cluster": cluster, "jobs": jobs}


#: Hostile shapes of a valid instance (issue 33), applied before mutation.
SHAPES: tuple[Callable[[Any, random.Random], Any], ...] = (_no_jobs, _huge_horizon, _one_gpu)


def shaped(doc: Any, rng: random.Random) -> Any:
    """``doc`` in one of :data:`SHAPES`, chosen by ``rng``."""
    return rng.choice(SHAPES)(copy.deepcopy(doc), rng)


def plant_symlink(out: Any, rng: random.Random) -> Any:
    """A symlink at ``out``'s batch lock or journal pointing at a new file holding
    ``"V"``; the file (whose text must stay ``"V\\n"``)."""
    out = Path(out)
    victim = out.with_name("victim.txt")
    victim.write_text("V\n")
    suffix = rng.choice([".lock", ".journal.jsonl"])
    out.with_name(out.name + suffix).symlink_to(victim)
    return victim


def write_text(path: Any, text: str) -> None:
    """Write ``text`` as UTF-8, lone surrogates as the bytes Python would use (invalid UTF-8)."""
    with open(path, "wb") as fh:
        fh.write(text.encode("utf-8", "surrogatepass"))


def dumps(doc: Any, rng: random.Random) -> str:
    """JSON text of ``doc`` (sometimes with NaN or Infinity tokens, which are not JSON)."""
    try:
        return json.dumps(doc, ensure_ascii=rng.random() < 0.7)
    except (ValueError, TypeError):
        return json.dumps(str(doc))


# --------------------------------------------------------------------------- running


class Hang(BaseException):
    """Raised in a run that outlives its time limit (a BaseException: ``main`` cannot eat it)."""


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise Hang

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Outcome:
    """One run: its argv, exit status, captured output and wall time (seconds)."""

    argv: list[str]
    code: int | None
    out: str
    err: str
    seconds: float
    escaped: str | None = None  # an exception that escaped main, by name
    hung: bool = False
    notes: list[str] = field(default_factory=list)


def run_cli(argv: Sequence[Any], timeout: float = 20.0) -> Outcome:
    """``sjfbco.cli.main(argv)`` in this process, output captured, under a time limit."""
    from sjfbco.cli import main

    args = [str(a) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    escaped = None
    hung = False
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            with _alarm(timeout):
                code = main(args)
        except Hang:
            hung = True
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 2
        except BaseException as exc:  # KeyboardInterrupt would be ours: let it go
            if isinstance(exc, KeyboardInterrupt):
                raise
            escaped = type(exc).__name__
    return Outcome(
        args, code, out.getvalue(), err.getvalue(), time.perf_counter() - t0, escaped, hung
    )


def problems(o: Outcome) -> list[str]:
    """What ``o`` broke of the CLI's contract (an empty list: nothing)."""
    found = []
    if o.hung:
        found.append("hang")
    if o.escaped is not None or any(
        # the hint comes with every error that is a bug: internal errors and a solver's
        # exception in a run of several (solve's error row, exit 1)
        mark in o.err
        for mark in ("Traceback", "internal error", "rerun with --debug")
    ):
        found.append("traceback")
    if o.code not in (None, 0):
        lines = [ln for ln in o.err.splitlines() if not ln.startswith("sjfbco: warning:")]
        if len(lines) != 1:
            found.append("multi-line error")
    if o.code == 0 and "--json" in o.argv:
        noise = [ln for ln in o.err.splitlines() if not ln.startswith("sjfbco: warning:")]
        if noise:
            found.append("stray stderr")
    if "--json" in o.argv and not o.hung:
        lines = [ln for ln in o.out.splitlines() if ln.strip()]
        try:
            for ln in lines:
                json.loads(ln)
        except ValueError:
            found.append("invalid json")
        else:
            if o.code == 0 and not lines:
                found.append("invalid json")
    found.extend(o.notes)
    return found


def hostile(text: str) -> list[str]:
    """What an instance or schedule text holds that every reader must refuse (issue 42):
    ``duplicate key`` (a key twice in one object) and ``control character`` (a string,
    key or value, with a character of ``sjfbco.errors.UNPRINTABLE_CATEGORIES`` or of
    blank space only). Empty for text that is not JSON or not one of these two formats."""
    from sjfbco.errors import UNPRINTABLE_CATEGORIES

    found: set[str] = set()

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in items}) != len(items):
            found.add("duplicate key")
        return dict(items)

    try:
        doc = json.loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return []
    if not (isinstance(doc, dict) and str(doc.get("format", "")).startswith("sjfbco-")):
        return []

    def bad(s: str) -> bool:
        blank = bool(s) and not s.strip()
        return blank or any(unicodedata.category(c) in UNPRINTABLE_CATEGORIES for c in s)

    stack: list[Any] = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if any(bad(k) for k in item):
                found.add("control character")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and bad(item):
            found.add("control character")
    return sorted(found)


def accepted_hostile(o: Outcome) -> list[str]:
    """``accepted duplicate key`` / ``accepted control character`` when ``o`` succeeded on a
    ``.json`` argument that holds one (:func:`hostile`)."""
    if o.code != 0:
        return []
    found: set[str] = set()
    for arg in o.argv:
        if arg.endswith(".json") and Path(arg).is_file():
            with contextlib.suppress(OSError, UnicodeDecodeError):
                found.update(hostile(Path(arg).read_text(encoding="utf-8")))
    return [f"accepted {f}" for f in sorted(found)]


def batch_row_problems(csv_path: Any) -> list[str]:
    """``traceback`` if a batch output has a row whose solver failed with a Python exception."""
    import csv

    try:
        with open(csv_path, encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, ValueError):
        return []
    bad = [r for r in rows if " failed: " in (r.get("error") or "")]
    return ["traceback"] if bad else []


def python_flags() -> str:
    """The interpreter, for the benchmark's report."""
    return sys.version.split()[0]


# --------------------------------------------------------------------------- scenarios

#: Solvers, policies and options the scenarios pick from.
SOLVE_CHOICES = ("sjf-bco", "ls", "ff", "rand", "lwf", "fifo-gang", "list", "all")
ONLINE_POLICIES = ("fcfs-gang", "smallest-need-first", "sjf-bco-online")
ELASTIC_POLICIES = ("hesrpt", "equi", "srpt", "hell", "knee", "constant-share")
SPEEDUPS = ("power:0.7", "model", "table:1,1.6,2.1,2.4")


@dataclass(frozen=True)
class Base:
    """A valid instance (parsed) and a schedule for it (parsed), by name."""

    name: str
    instance: Any
    schedule: Any


def load_bases(root: Any, names: Sequence[str] | None = None) -> list[Base]:
    """The repository's small, Philly and one paper instance, each with an SJF-BCO schedule."""
    from sjfbco import read_instance, solve

    root = Path(root)
    files = sorted((root / "instances" / "small").glob("*.json"))
    files += sorted((root / "instances" / "philly").glob("*.json"))[:2]
    files += [root / "instances" / "paper" / "paper-s10-seed0.json"]
    out = []
    for f in files:
        doc = json.loads(f.read_text())
        if doc.get("format") != "sjfbco-instance/1" or (names and f.stem not in names):
            continue
        data = read_instance(f)
        sched = solve(data, "ls").schedule
        assert sched is not None
        out.append(Base(f.stem, doc, sched.to_dict(data)))
    return out


def _plot(instance: Any, schedule: Any, out: Any) -> list[Any]:
    """``plot`` with its arguments in the order the parser takes (INSTANCE SCHEDULE or the old
    SCHEDULE INSTANCE)."""
    from sjfbco.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices["plot"]  # type: ignore[union-attr]
    first = next(a.dest for a in sub._actions if not a.option_strings)
    pair = [instance, schedule] if first == "instance" else [schedule, instance]
    return ["plot", *pair, "-o", out]


def instance_runs(
    inst: Any, sched: Any, tmp: Any, rng: random.Random, k: int = 2
) -> list[list[Any]]:
    """``k`` command lines that read the (mutated) instance ``inst``; ``sched`` is a schedule."""
    choices = [
        lambda: ["evaluate", inst, sched, "--json"],
        lambda: ["evaluate", inst, sched, "--strict"],
        lambda: ["solve", inst, "--solver", rng.choice(SOLVE_CHOICES), "--json"],
        lambda: ["solve", inst, "--solver", rng.choice(SOLVE_CHOICES), "--time-limit", "5"],
        lambda: ["solve", inst, "--solver", "best", "--time-limit", "1", "--json", "-q"],
        lambda: ["compare", inst, "--solvers", "list,sjf-bco", "--json", "-q"],
        lambda: [
            "online",
            inst,
            "--policy",
            rng.choice(ONLINE_POLICIES),
            "--admission",
            rng.choice(["gang", "gang", "partial"]),
            "--json",
        ],
        lambda: [
            "elastic",
            inst,
            "--policy",
            rng.choice(ELASTIC_POLICIES),
            "--speedup",
            rng.choice(SPEEDUPS),
            "--mode",
            rng.choice(["continuous", "integer"]),
            "--json",
        ],
        lambda: ["formulate", inst, "--kind", "paper-ilp", "-o", tmp / "m.lp", "--json"],
        lambda: ["formulate", inst, "--kind", "ilp", "-o", tmp / "m.lp", "--lp-bound", "--json"],
        lambda: [
            "formulate",
            inst,
            "--kind",
            rng.choice(["ilp", "nonconvex"]),
            "-o",
            tmp / "m.txt" if rng.random() < 0.5 else tmp / "m.lp",
        ],
        lambda: _plot(inst, sched, tmp / "g.png"),
    ]
    return [rng.choice(choices)() for _ in range(k)]


def schedule_runs(inst: Any, sched: Any, tmp: Any, rng: random.Random) -> list[list[Any]]:
    """Command lines that read the (mutated) schedule ``sched`` of a valid instance."""
    if rng.random() < 0.2:
        return [_plot(inst, sched, tmp / "g.png")]
    return [["evaluate", inst, sched, "--json"] + (["--strict"] if rng.random() < 0.3 else [])]


def run_case(argv: list[Any], timeout: float = 20.0) -> tuple[Outcome, list[str]]:
    """One run and its problems (a batch's error rows included)."""
    o = run_cli(argv, timeout)
    found = problems(o) + accepted_hostile(o)
    if argv and argv[0] == "batch" and "-o" in argv:
        out = argv[argv.index("-o") + 1]
        found += batch_row_problems(out)
        victim = Path(out).with_name("victim.txt")
        if victim.exists() and victim.read_text(errors="replace") != "V\n":
            found.append("symlink followed")
    return o, found
