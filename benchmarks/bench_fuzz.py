"""Fuzz benchmark: thousands of mutated input files through every command; counts what breaks.

Run: ``PYTHONPATH=. python benchmarks/bench_fuzz.py [--files N] [--workers W] [--seed S]
[--trace PATH]`` (``--quick``: 300 files; the Philly trace of ``docs/data.md`` gives the
traces that ``convert`` reads). Each file is a mutation (``tests/fuzz.py``) of a valid
input, and is run through commands that read it:

- instances (the repository's small, two Philly and one paper instance):
  ``evaluate``, ``solve`` (each heuristic, ``all``, and ``best`` for 1 s),
  ``online``, ``elastic``, ``formulate`` (three kinds, ``--lp-bound``), ``plot``,
  ``compare``;
  every 20th also through ``batch`` (one in five with a symlink planted at its lock
  or journal, whose target must stay unwritten);
- shapes (issue 33): an instance with no jobs, a horizon of 10^12 slots, or one
  GPU (``tests/fuzz.py``'s ``SHAPES``), then mutated or not, through the same
  commands;
- schedules of those instances: ``evaluate`` (also ``--strict``), ``plot``;
- Philly CSV and SWF traces: ``convert``;
- measurement CSVs: ``calibrate``; preset files: ``generate --preset``;
- no file, mutated options: ``generate``, ``reproduce --replot``, ``solve``.

Every run is ``sjfbco.cli.main`` inside a worker process; a run that has not
ended when it has used ``--timeout`` seconds of CPU (default 20; the worker's
and its child processes', from ``/proc``), or ``WALL_FACTOR`` times that of
wall time, is a hang, and its worker is killed and replaced. CPU, not wall
time: on a shared machine a ``nice``d worker can wait most of a minute for a
run of one second of CPU (a Gantt chart took 22.7 s at load 9 and takes 1.3 s
of CPU); the runs past ``--timeout`` of wall time are counted apart
(``slow (wall)``), and where ``/proc`` is absent wall time decides. The
report counts runs by command and exit status, and the runs with a traceback
(an exception out of ``main``, an internal error, or a batch row whose solver
raised), a hang, an error message of more than one line, invalid JSON on
stdout under ``--json``, a line on stderr that is not a warning in a
successful ``--json`` run, a symlink's target written, or a run that succeeded on
a file naming a key twice in one object or holding a control, format or
bidirectional character or a blank string (``accepted duplicate key``,
``accepted control character``: one file in 20 gets a repeated key); the first few of
each are listed with their input kept in ``--keep``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.datasets import SHARED_DATA, add_trace_option, require  # noqa: E402
from tests import fuzz  # noqa: E402

#: A run is a hang past ``--timeout`` of CPU, or this many times ``--timeout`` of wall time.
WALL_FACTOR = 10

PROBLEMS = (
    "traceback",
    "hang",
    "multi-line error",
    "invalid json",
    "stray stderr",
    "symlink followed",
    "accepted duplicate key",
    "accepted control character",
)


# --------------------------------------------------------------------------- inputs


def _philly_excerpt(trace: Path, lines: int = 120) -> str:
    with open(trace, encoding="utf-8") as fh:
        return "".join(fh.readline() for _ in range(lines))


SWF = (
    "\n".join(
        ["; a tiny SWF log"]
        + [
            f"{j} {60 * j} 5 {3600 + 97 * j} {1 + j % 4} -1 -1 {1 + j % 4} -1 -1 1 1 1 1 1 -1 -1 -1"
            for j in range(1, 25)
        ]
    )
    + "\n"
)


def _measurements() -> list[str]:
    pollux = SHARED_DATA / "pollux_placements" / "ncf.csv"
    out = [(ROOT / "tests" / "data" / "contention_synthetic.csv").read_text()]
    if pollux.is_file():
        out.append(pollux.read_text())
    return out


def _preset() -> Any:
    from sjfbco.workloads.paper import PRESETS

    return PRESETS["paper"].to_dict()


class Inputs:
    """The valid inputs the mutations start from."""

    def __init__(self, trace: Path) -> None:
        self.bases = fuzz.load_bases(ROOT)
        self.philly = _philly_excerpt(trace)
        self.swf = SWF
        self.measurements = _measurements()
        self.preset = _preset()


# --------------------------------------------------------------------------- cases


def _text_mutant(doc: Any, rng: random.Random) -> str:
    """``doc`` as JSON text, one time in ten mutated as text, one in twenty with a key
    repeated (which every reader must refuse, issue 42)."""
    text = fuzz.dumps(doc, rng)
    if rng.random() < 0.1:
        text = fuzz.mutate_text(text, rng)
    if rng.random() < 0.05:
        text = fuzz.repeat_key(text, rng)
    return text


def _hostile_inputs(d: Path) -> list[str]:
    """What the files written into ``d`` hold that every reader must refuse
    (``fuzz.hostile``): counted, so that 0 accepted means something."""
    found: set[str] = set()
    for path in d.glob("*.json"):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            found.update(fuzz.hostile(path.read_text(encoding="utf-8")))
    return sorted(found)


def make_case(kind: str, rng: random.Random, inputs: Inputs, d: Path) -> list[list[Any]]:
    """Write one mutated file of ``kind`` into ``d``; the command lines that read it."""
    if kind in ("instance", "batch", "shape"):
        b = rng.choice(inputs.bases)
        doc = fuzz.shaped(b.instance, rng) if kind == "shape" else b.instance
        doc = fuzz.mutate_doc(
            doc, rng, rng.choice([0, 1, 1] if kind == "shape" else [1, 1, 1, 2, 3])
        )
        text = _text_mutant(doc, rng)
        inst, sched = d / f"{b.name}.json", d / "schedule.json"
        fuzz.write_text(inst, text)
        fuzz.write_text(sched, json.dumps(b.schedule))
        if kind == "batch":
            other = d / "other.json"
            fuzz.write_text(other, json.dumps(rng.choice(inputs.bases).instance))
            out = d / "r.csv"
            if rng.random() < 0.2:  # a symlink planted at the lock or the journal
                fuzz.plant_symlink(out, rng)
            return [["batch", inst, other, "--solvers", "ls,sjf-bco", "-o", out, "-q"]]
        return fuzz.instance_runs(inst, sched, d, rng, k=rng.choice([1, 2]))
    if kind == "schedule":
        b = rng.choice(inputs.bases)
        doc = fuzz.mutate_doc(b.schedule, rng, rng.choice([1, 1, 2]))
        text = _text_mutant(doc, rng)
        inst, sched = d / f"{b.name}.json", d / "schedule.json"
        fuzz.write_text(inst, json.dumps(b.instance))
        fuzz.write_text(sched, text)
        return fuzz.schedule_runs(inst, sched, d, rng)
    if kind == "philly":
        path = d / "trace.csv"
        fuzz.write_text(path, fuzz.mutate_csv(inputs.philly, rng))
        extra = rng.choice(
            [[], ["--n-jobs", "5"], ["--arrivals"], ["--instances", "2", "--n-jobs", "3"]]
        )
        return [["convert", "philly", path, "-o", d / "cv", *extra]]
    if kind == "swf":
        path = d / "trace.swf"
        fuzz.write_text(path, fuzz.mutate_csv(inputs.swf.replace(" ", ","), rng).replace(",", " "))
        return [["convert", "swf", path, "-o", d / "cv"]]
    if kind == "calibrate":
        path = d / "m.csv"
        fuzz.write_text(path, fuzz.mutate_csv(rng.choice(inputs.measurements), rng))
        return [["calibrate", path, "--folds", "2"] + (["--json"] if rng.random() < 0.5 else [])]
    if kind == "preset":
        path = d / "preset.json"
        fuzz.write_text(path, fuzz.dumps(fuzz.mutate_doc(inputs.preset, rng), rng))
        return [["generate", "paper", "--preset", path, "--jobs", "20", "--servers", "3"]]
    # options only; 1000001: one above the default limits on jobs and tasks (a million
    # jobs is a valid instance, 21.6 s of CPU to generate: past the hang line, not a hang;
    # bench_million times it)
    v = str(rng.choice([0, -1, 1, 3, "nan", "inf", "1e12", "1e9", "x", "2.5", "1e-320", "1000001"]))
    return [
        rng.choice(
            [
                ["generate", "paper", "--jobs", v, "--servers", "3"],
                ["generate", "paper", "--servers", v, "--jobs", "20"],
                ["generate", "paper", "--slot-seconds", v, "--jobs", "20", "--servers", "3"],
                ["reproduce", "--seeds", v, "--figure", "4", "-o", d / "rep", "--replot"],
                ["solve", ROOT / "instances" / "small" / "example.json", "--time-limit", v],
                ["solve", ROOT / "instances" / "small" / "example.json", "--seed", v],
                ["elastic", ROOT / "instances" / "small" / "example.json", "--knee-threshold", v],
            ]
        )
    ]


#: Kinds of mutated file and their shares of the files.
KINDS = (
    ("instance", 0.45),
    ("shape", 0.05),
    ("schedule", 0.2),
    ("batch", 0.03),
    ("philly", 0.08),
    ("swf", 0.04),
    ("calibrate", 0.05),
    ("preset", 0.05),
    ("options", 0.05),
)


# --------------------------------------------------------------------------- workers


def _worker(conn: Any) -> None:
    """Run the command lines it is sent; answer with (argv, code, seconds, problems, err)."""
    import faulthandler
    import signal

    os.environ.setdefault("MPLBACKEND", "Agg")
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # a hung run's stacks, on demand
    while True:
        job = conn.recv()
        if job is None:
            return
        o, found = fuzz.run_case(job, timeout=1e6)  # the parent enforces the time limit
        conn.send((o.code, o.seconds, found, o.err[-400:]))


def cpu_seconds(pid: int, descendants: bool = True) -> float | None:
    """CPU seconds (user + system) of process ``pid`` and its live descendants so far.

    From ``/proc/<pid>/stat`` (children already waited for are in the parent's
    ``cutime``/``cstime``); None without ``/proc`` or when ``pid`` is gone.
    ``descendants=False``: ``pid`` alone (one file read, not a scan of ``/proc``).
    """
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()] if descendants else [str(pid)]
    except OSError:
        return None
    for e in entries:
        try:
            with open(f"/proc/{e}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        # after the command name: state ppid ... utime(12) stime(13) cutime(14) cstime(15)
        parent[int(e)] = int(fields[1])
        ticks[int(e)] = sum(int(f) for f in fields[11:15])
    if pid not in ticks:
        return None
    tree, frontier = {pid}, [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parent.items() if pp == p and c not in tree]
        tree.update(kids)
        frontier.extend(kids)
    return sum(ticks[p] for p in tree) / tick


def is_hang(cpu: float | None, wall: float, timeout: float) -> bool:
    """A run not ended after ``timeout`` s of CPU, or ``WALL_FACTOR x timeout`` s of wall
    time (wall time alone when ``cpu`` is unknown)."""
    if cpu is None:
        return wall >= timeout
    return cpu >= timeout or wall >= WALL_FACTOR * timeout


class Pool:
    """Worker processes with a hard time limit per run (a hung worker is killed and replaced)."""

    def __init__(self, n: int, timeout: float):
        # forkserver: a fresh worker even when the parent has threads (a forked copy of a
        # threaded parent can deadlock); not daemonic, so that batch runs may start pools
        self.ctx = mp.get_context("forkserver")
        self.timeout = timeout
        self.procs: list[Any] = [self._spawn() for _ in range(n)]

    def _spawn(self) -> tuple[Any, Any]:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker, args=(child,), daemon=False)
        proc.start()
        return proc, parent

    def run(self, w: int, argv: list[Any]) -> tuple[int | None, float, list[str], str]:
        proc, conn = self.procs[w]
        start = cpu_seconds(proc.pid, descendants=False)  # an idle worker has no children
        conn.send(argv)
        t0 = time.perf_counter()
        ready = conn.poll(self.timeout)
        while not ready:  # past the timeout of wall time: working, or stuck?
            used = cpu_seconds(proc.pid)
            cpu = None if used is None or start is None else used - start
            if is_hang(cpu, time.perf_counter() - t0, self.timeout):
                break
            ready = conn.poll(1.0)
        if ready:
            try:
                return conn.recv()
            except EOFError:
                pass
        else:
            import signal

            print(f"hang: sjfbco {' '.join(map(str, argv))}; the worker's stacks:", flush=True)
            os.kill(proc.pid, signal.SIGUSR1)
            proc.join(2)
            proc.kill()
            proc.join()
            self.procs[w] = self._spawn()
            return None, time.perf_counter() - t0, ["hang"], ""
        proc.join()  # the worker died (a crash in native code)
        self.procs[w] = self._spawn()
        return None, time.perf_counter() - t0, ["traceback"], "worker process died"

    def close(self) -> None:
        for proc, conn in self.procs:
            conn.send(None)
            proc.join(5)
            if proc.is_alive():
                proc.kill()


def run(
    n_files: int, workers: int, seed: int, timeout: float, keep: Path, trace: Path
) -> dict[str, Any]:
    """Mutate ``n_files`` files, run them, and return the counts."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    inputs = Inputs(trace)
    rng = random.Random(seed)
    kinds, weights = zip(*KINDS, strict=True)
    plan = [(k, rng.randrange(2**32)) for k in rng.choices(kinds, weights, k=n_files)]
    pool = Pool(workers, timeout)
    lock = threading.Lock()
    stats: dict[str, Any] = {
        "files": Counter(),
        "runs": Counter(),
        "exit": Counter(),
        "problems": Counter(),
        "hostile": Counter(),
        "examples": [],
        "seconds": [],
        "slowest": [],
    }
    work = tempfile.mkdtemp(prefix="sjfbco-fuzz-")
    free = list(range(workers))
    t0 = time.perf_counter()

    def one(item: tuple[str, int]) -> None:
        kind, s = item
        with lock:
            w = free.pop()
        d = Path(work) / f"w{w}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        try:
            cases = make_case(kind, random.Random(s), inputs, d)
            found_in = _hostile_inputs(d)
            with lock:
                stats["hostile"].update(found_in)
            for argv in cases:
                code, secs, found, err = pool.run(w, [str(a) for a in argv])
                with lock:
                    stats["runs"][argv[0]] += 1
                    stats["exit"][str(code)] += 1
                    stats["seconds"].append(secs)
                    stats["slowest"] = sorted(
                        [*stats["slowest"], (round(secs, 2), [str(a) for a in argv])],
                        key=lambda t: -t[0],
                    )[:5]
                    for f in found:
                        stats["problems"][f] += 1
                    if found:
                        print(f"  {found}: sjfbco {' '.join(map(str, argv))}", flush=True)
                    if found and len(stats["examples"]) < 30:
                        kept = keep / f"case-{len(stats['examples'])}"
                        shutil.copytree(d, kept, dirs_exist_ok=True)
                        stats["examples"].append(
                            {
                                "problems": found,
                                "argv": [str(a) for a in argv],
                                "err": err,
                                "kept": str(kept),
                            }
                        )
            with lock:
                stats["files"][kind] += 1
                n = sum(stats["files"].values())
                if n % 250 == 0:  # a long run shows how it goes (and what broke, as it happens)
                    print(
                        f"  {n} files, {sum(stats['runs'].values())} runs, "
                        f"{time.perf_counter() - t0:.0f} s, problems: "
                        + (", ".join(f"{k} {v}" for k, v in stats["problems"].items()) or "none"),
                        flush=True,
                    )
        finally:
            with lock:
                free.append(w)

    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(one, plan))
    pool.close()
    shutil.rmtree(work, ignore_errors=True)
    stats["wall_s"] = time.perf_counter() - t0
    return stats


def report(stats: dict[str, Any], args: argparse.Namespace) -> None:
    secs = sorted(stats["seconds"])
    runs = sum(stats["runs"].values())
    load = os.getloadavg()[0]
    print(
        f"fuzz: {sum(stats['files'].values())} mutated files, {runs} runs, seed {args.seed}, "
        f"{args.workers} workers, {stats['wall_s']:.0f} s (load average {load:.1f})"
    )
    print("files by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(stats["files"].items())))
    print("runs by command: " + ", ".join(f"{k} {v}" for k, v in sorted(stats["runs"].items())))
    print("exit status: " + ", ".join(f"{k}: {v}" for k, v in sorted(stats["exit"].items())))
    print(
        f"run time: median {secs[len(secs) // 2]:.2f} s, p99 {secs[int(len(secs) * 0.99)]:.2f} s, "
        f"max {secs[-1]:.2f} s (hang: > {args.timeout:g} s of CPU, or "
        f"> {WALL_FACTOR * args.timeout:g} s)"
    )
    print(f"slow (wall): {sum(1 for t in secs if t > args.timeout)} ended past {args.timeout:g} s")
    hostile = stats["hostile"]
    print(
        f"files to refuse: {hostile['duplicate key']} with a repeated key, "
        f"{hostile['control character']} with a control or format character or blank text"
    )
    for p in PROBLEMS:
        print(f"{p}: {stats['problems'][p]}")
    for secs_, argv in stats["slowest"]:
        print(f"  slow: {secs_} s: sjfbco {' '.join(argv)}")
    for ex in stats["examples"][:10]:
        print(f"  {ex['problems']}: sjfbco {' '.join(ex['argv'])} -> {ex['err'].strip()[-200:]}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(ap)
    ap.add_argument("--files", type=int, default=5000, help="mutated files (default 5000)")
    ap.add_argument("--quick", action="store_true", help="300 files")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--timeout", type=float, default=20.0, help="seconds of CPU before a run is a hang"
    )
    ap.add_argument(
        "--keep", type=Path, default=Path("fuzz-failures"), help="where failing inputs go"
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the counts here")
    args = ap.parse_args(argv)
    trace = require(args.trace, "the Philly trace (its first lines are mutated for convert)")
    n = 300 if args.quick else args.files
    stats = run(n, args.workers, args.seed, args.timeout, args.keep, trace)
    report(stats, args)
    doc = {k: dict(v) if isinstance(v, Counter) else v for k, v in stats.items()}
    del doc["seconds"]
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


if __name__ == "__main__":
    main()
