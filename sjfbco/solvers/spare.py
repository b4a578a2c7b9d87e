"""The spare core of the exact solver: the per-server time-indexed relaxation in a child process.

``exact`` (:mod:`sjfbco.solvers.exact`) runs its bound phases one after another on
CP-SAT, while the warm start is mostly single-threaded Python: one of the machine's
cores is idle for much of a run. Under a time limit, the per-server time-indexed
form of the contention-free relaxation (:meth:`sjfbco.relaxations.timeindexed.TimeIndexed.bound`,
HiGHS on one thread) runs on that core from the start, in a child process, and the run
reads its result between phases (``docs/exact.md``, "The spare core").

**A process, not a thread.** HiGHS releases the GIL while it solves, so a thread would
do, but it notices a cancel only at its own checkpoints (15 s late on the exact
benchmark's 14/4/7), and a run that has proven its optimum must not wait for that. A
child process is killed at once. It is a fresh interpreter (``python -m
sjfbco.solvers.spare IN OUT PID``), not a fork or a fork server: those re-import the
caller's ``__main__`` (a script, a notebook, ``python -``) and may not be started from
daemonic workers (Dask's). Input and result are pickles in a private temporary
directory; the result is written to a temporary name and renamed, so a killed child
leaves no half-written result.

**Failures never end the run.** A child that cannot start, dies, or raises is recorded
(:attr:`Spare.error`) and the run goes on without it, as without a time limit. A child
whose parent is killed (so that no ``stop`` comes) ends itself within half a second and
removes its temporary folder.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco import clock
from sjfbco.caps import DEFAULT_CAPS, SizeCaps
from sjfbco.relaxations.timeindexed import TimeIndexed, TimeIndexedBound

if TYPE_CHECKING:
    from sjfbco.problem import ProblemData

#: Seconds between two looks of the watcher thread at the child (the clock's).
POLL_S = clock.POLL_S
#: Seconds between two looks of the child at its parent (an orphan ends itself).
ORPHAN_POLL_S = 0.5


class Spare:
    """One solve of the per-server time-indexed relaxation in a child process.

    Parameters
    ----------
    data
        The instance.
    horizon
        The horizon ``H`` (slots): infeasible there proves every schedule ends after ``H``.
    seconds
        The child's time limit for build and solve.
    size_caps
        The caps the child's form is built under (the run's).

    Attributes
    ----------
    proved
        Set once the child has found no packing ending by ``horizon`` (the bound
        ``horizon + 1``); the exact solver stops its model on it.
    finished
        Set once the child has ended (result or error) or was stopped.
    result
        The child's :class:`~sjfbco.relaxations.timeindexed.TimeIndexedBound`, once in.
    error
        Why there is no result (a message), if so.
    """

    def __init__(
        self,
        data: ProblemData,
        horizon: int,
        seconds: float,
        size_caps: SizeCaps = DEFAULT_CAPS,
    ):
        self.horizon = horizon
        self.proved = threading.Event()
        self.finished = threading.Event()
        self.result: TimeIndexedBound | None = None
        self.error: str | None = None
        self.collected = False
        self._stop = threading.Event()
        self._dir = tempfile.TemporaryDirectory(prefix="sjfbco-spare-")
        folder = Path(self._dir.name)
        (folder / "in.pkl").write_bytes(pickle.dumps((data, horizon, seconds, size_caps)))
        self._out = folder / "out.pkl"
        self._log = folder / "stderr.txt"
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[2])  # this very package first
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        with open(self._log, "wb") as err:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "sjfbco.solvers.spare",
                    str(folder / "in.pkl"),
                    str(self._out),
                    str(os.getpid()),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )
        self._watcher = threading.Thread(target=self._watch, name="sjfbco-spare-core", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        try:
            while not self._stop.is_set():
                code = self._proc.poll()
                if code is None:
                    self._stop.wait(POLL_S)
                    continue
                try:
                    self._read(code)
                except Exception as err:  # a torn or foreign result file
                    self.error = f"the child's result could not be read: {err}"
                return
        finally:
            self.finished.set()

    def _read(self, code: int) -> None:
        if not self._out.exists():
            tail = self._log.read_text(errors="replace").strip().splitlines()[-1:]
            self.error = f"the child ended (exit code {code}) without a result" + (
                f": {tail[0]}" if tail else ""
            )
            return
        kind, value = pickle.loads(self._out.read_bytes())
        if kind == "error":
            self.error = f"the child raised {value}"
            return
        self.result = value
        if value.infeasible:
            self.proved.set()

    def alive(self) -> bool:
        """Whether the child is still at work (no result or error yet, not stopped)."""
        return not self.finished.is_set()

    def stop(self) -> None:
        """Kill the child if it is still at work, wait for it, and remove its files; a
        result already in is kept. Safe to call more than once."""
        self._stop.set()
        self._watcher.join()
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._dir.cleanup()


def main(argv: list[str] | None = None) -> int:
    """The child: ``python -m sjfbco.solvers.spare IN OUT PARENT_PID``; one solve, its
    result to ``OUT``."""
    src, dst, parent = (argv if argv is not None else sys.argv[1:])[:3]
    watch = threading.Thread(target=_orphan_watch, args=(int(parent), Path(src).parent))
    watch.daemon = True
    watch.start()
    data, horizon, seconds, size_caps = pickle.loads(Path(src).read_bytes())
    out: tuple[str, Any]
    try:
        deadline = clock.Deadline.start(seconds)  # the form's preparation counts
        form = TimeIndexed(data, horizon, size_caps=size_caps)
        out = ("result", form.bound(deadline=deadline, threads=1))
    except Exception as err:  # reported by the parent; the run goes on without it
        out = ("error", f"{type(err).__name__}: {err}")
    tmp = Path(dst).with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(out))
    tmp.replace(dst)
    return 0


def _orphan_watch(parent: int, folder: Path) -> None:
    """End the child as soon as its parent is gone (killed: no ``stop`` will come), rather
    than at the end of its time limit; a parent gone before the child started (its parent
    is then another process already) counts too. HiGHS releases the GIL, so this thread
    runs."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_POLL_S)
    shutil.rmtree(folder, ignore_errors=True)  # nobody else will remove it now
    os._exit(3)


if __name__ == "__main__":
    sys.exit(main())
