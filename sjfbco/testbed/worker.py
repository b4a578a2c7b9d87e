"""One GPU of an emulated job: an MPI rank that alternates a compute phase and an all-reduce.

Run by ``mpiexec`` as a script (not through the package, so a rank starts in
about 0.1 s). Each iteration is a compute phase of ``--compute`` seconds (a
sleep: the emulation has no GPUs) followed by a real ``MPI_Iallreduce`` of
``--mb`` MB of float32 (MPICH's ring algorithm, TCP), completed by polling
``Test`` every :data:`POLL_S` so that a waiting rank does not spin a core.

Protocol with the launcher, through files in ``--dir``: after ``MPI_Init`` and a
small warm-up all-reduce (connections set up) rank 0 writes ``ready``; every
rank then waits for ``go`` to exist, runs the iterations, and rank 0 writes
``result.json`` (``CLOCK_MONOTONIC`` times, shared by every process of the host:
``go`` seen, and per iteration compute start, all-reduce start, all-reduce end).

With ``--linger`` the job goes on after its measured iterations (same compute, same
all-reduce, nothing recorded) until ``stop`` exists in ``--dir``: jobs of different
lengths measured together (``sjfbco testbed contention``'s mixed rows) then keep loading
the links until every job has its iterations, so that no measured iteration ran beside
a neighbour that had already ended. Rank 0 looks for ``stop`` before each such iteration
and tells the others with a one-byte broadcast (so every rank stops at the same one).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

#: Sleep between two ``Test`` calls of a pending all-reduce, and between two looks for ``go``, s.
POLL_S = 0.001
GO_POLL_S = 0.002


def _wait(req: MPI.Request) -> None:
    while not req.Test():
        time.sleep(POLL_S)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, required=True)
    ap.add_argument("--iterations", type=int, required=True)
    ap.add_argument("--compute", type=float, required=True)
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--linger", action="store_true")
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    n = max(1, round(a.mb * 1e6 / 4))
    send = np.ones(n, dtype=np.float32)
    recv = np.empty_like(send)
    tiny, tiny_out = np.ones(1, dtype=np.float32), np.empty(1, dtype=np.float32)
    _wait(comm.Iallreduce(tiny, tiny_out))  # connections set up before the clock runs
    if comm.rank == 0:
        (a.dir / "ready").write_text(str(os.getpid()))
    go = a.dir / "go"
    while not go.exists():
        time.sleep(GO_POLL_S)
    seen = time.monotonic()
    rows = []

    def iteration() -> None:
        t0 = time.monotonic()
        if a.compute > 0:
            time.sleep(a.compute)
        t1 = time.monotonic()
        if comm.size > 1 and n > 0:
            _wait(comm.Iallreduce(send, recv))
        rows.append((t0, t1, time.monotonic()))

    for _ in range(a.iterations):
        iteration()
    if comm.rank == 0:
        tmp = a.dir / "result.json.tmp"
        tmp.write_text(json.dumps({"go_seen": seen, "size": comm.size, "iterations": rows}))
        tmp.replace(a.dir / "result.json")
    stop = a.dir / "stop"
    flag = np.zeros(1, dtype=np.uint8)
    while a.linger:
        flag[0] = comm.rank == 0 and stop.exists()
        _wait(comm.Ibcast(flag, root=0))
        if flag[0]:
            break
        iteration()


if __name__ == "__main__":
    main()
