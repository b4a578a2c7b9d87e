"""Free GPUs of a cluster and the GPU-choice rules of the online simulator.

Rule for a job started whole (gang admission), ``fewest servers, best fit``:

1. If one server has enough free GPUs, take the server whose free count fits
   best (the smallest count that still holds the job; ties: lowest server
   index), its lowest-indexed free GPUs. A job that fits in one server is never
   split, and large holes stay whole for large jobs.
2. Otherwise split over the fewest servers: take whole servers in decreasing
   order of free GPUs (ties: lowest index) while the remainder does not fit in
   one of the servers left, then place the remainder by rule 1 among the
   servers left.

Rule of Slurm's ``select/cons_tres`` (the ``slurm`` policy, :meth:`FreePool.take_cons_tres`),
as observed on Slurm 22.05 (docs/slurm.md, "Slurm's behaviour in the simulated world"):
the gang rule above for a job of two GPUs or more; a one-GPU job takes the lowest-indexed
server with a free GPU (first fit; consistent with ``cons_tres``'s code, where a one-task
job may use one CPU on every node, so every node fits it exactly and the first is kept).

Rule for one worker of a partially admitted job (``partial`` admission): a free
GPU on the server where the job already holds the most GPUs; if none, on the
server with the most free GPUs (ties: lowest server index); lowest GPU index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from sjfbco.problem import Cluster


class FreePool:
    """The free GPUs of a cluster, per server, with the two choice rules above."""

    def __init__(self, cluster: Cluster, free: Iterable[int]):
        self.cluster = cluster
        server_of = cluster.server_of_gpu
        self._free: list[list[int]] = [[] for _ in range(cluster.num_servers)]
        for g in sorted(free):
            self._free[server_of[g]].append(g)
        self._count = sum(len(f) for f in self._free)

    def count(self) -> int:
        """Number of free GPUs."""
        return self._count

    def on_server(self, s: int) -> int:
        """Number of free GPUs on server ``s``."""
        return len(self._free[s])

    def _best_fit(self, need: int, among: Iterable[int]) -> int | None:
        fits = [s for s in among if len(self._free[s]) >= need]
        return min(fits, key=lambda s: (len(self._free[s]), s)) if fits else None

    def _pop(self, s: int, k: int) -> list[int]:
        got, self._free[s] = self._free[s][:k], self._free[s][k:]
        self._count -= k
        return got

    def take(self, g: int) -> list[int] | None:
        """Take ``g`` GPUs by the gang rule (fewest servers, best fit); ``None`` if too few."""
        if g > self._count:
            return None
        servers = range(len(self._free))
        s = self._best_fit(g, servers)
        if s is not None:
            return self._pop(s, g)
        left = sorted(servers, key=lambda s: (-len(self._free[s]), s))
        out: list[int] = []
        need = g
        while need > 0:
            s = self._best_fit(need, left)
            if s is not None:
                out += self._pop(s, need)
                break
            s = left.pop(0)
            need -= len(self._free[s])
            out += self._pop(s, len(self._free[s]))
        return out

    def take_cons_tres(self, g: int) -> list[int] | None:
        """Take ``g`` GPUs as Slurm's ``select/cons_tres`` does (module docstring); ``None``
        if too few are free."""
        if g != 1:
            return self.take(g)
        first = next((s for s, free in enumerate(self._free) if free), None)
        return None if first is None else self._pop(first, 1)

    def take_one(self, held_per_server: Mapping[int, int]) -> int | None:
        """Take one GPU for a worker by the partial rule; ``None`` if none is free."""
        if self._count == 0:
            return None
        here = [s for s in held_per_server if self._free[s]]
        if here:
            s = min(here, key=lambda s: (-held_per_server[s], s))
        else:
            s = min(
                (s for s in range(len(self._free)) if self._free[s]),
                key=lambda s: (-len(self._free[s]), s),
            )
        return self._pop(s, 1)[0]

    def take_exact(self, gpu_ids: Iterable[int]) -> bool:
        """Take exactly these GPUs if all are free (``True``), else take nothing (``False``)."""
        server_of = self.cluster.server_of_gpu
        wanted = list(gpu_ids)
        if any(g not in self._free[server_of[g]] for g in wanted):
            return False
        for g in wanted:
            self._free[server_of[g]].remove(g)
        self._count -= len(wanted)
        return True
