"""GPU load states that the placement rules query (docs/model.md section 5).

Two implementations of one interface, giving identical answers:

- :class:`ArrayLoads`: loads in a numpy array, every query a vectorised pass
  over all GPUs (``O(N)`` per job). Supports an ``idle`` mask, so it serves the
  ``timestepped`` mode, and every rule (FF, RAND too).
- :class:`IndexedLoads`: loads grouped by value in heaps, so that a
  least-loaded query (FA-FFP, LS) or an LBSGF query costs about
  ``O(G log N)`` instead of ``O(N)``. This is what keeps an offline SJF-BCO
  trial near-linear in the number of jobs on large clusters. Offline only (no
  idle mask); an infeasible query leaves it unusable (the trial ends there).

Both take GPUs with load ``<= limit`` (``limit = theta - rho_hat_j / u``)
and add ``inc`` to the chosen GPUs' loads with :meth:`add`.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from sjfbco.evaluate import EPS

if TYPE_CHECKING:  # placement imports this module
    from sjfbco.problem import Cluster
    from sjfbco.solvers.placement import Placer

#: Chosen global GPU indices, as a list or a numpy array.
Chosen = Sequence[int] | np.ndarray


class LoadState(Protocol):
    """What a placement rule may ask of the GPU loads."""

    def least_loaded(self, g: int, limit: float, ties: str) -> Chosen | None: ...
    def lbsgf(self, g: int, limit: float, lam: float) -> Chosen | None: ...
    def first_fit(self, g: int, limit: float) -> Chosen | None: ...
    def random(self, g: int, limit: float, rng: np.random.Generator) -> Chosen | None: ...
    def add(self, gpu_ids: Chosen, inc: float) -> None: ...
    def peak(self, gpu_ids: Chosen) -> float: ...


class ArrayLoads:
    """Loads in a numpy array; qualifying GPUs by a vectorised mask (optionally idle only)."""

    def __init__(self, placer: Placer, loads: np.ndarray, idle: np.ndarray | None = None):
        self.placer = placer
        self.loads = loads
        self.idle = idle

    def _mask(self, limit: float) -> np.ndarray:
        mask = self.loads <= limit + EPS
        return mask & self.idle if self.idle is not None else mask

    def least_loaded(self, g: int, limit: float, ties: str) -> np.ndarray | None:
        return self.placer.least_loaded(self.loads, self._mask(limit), g, ties)  # type: ignore[arg-type]

    def lbsgf(self, g: int, limit: float, lam: float) -> np.ndarray | None:
        return self.placer.lbsgf(self.loads, self._mask(limit), g, lam)

    def first_fit(self, g: int, limit: float) -> np.ndarray | None:
        return self.placer.first_fit(self._mask(limit), g)

    def random(self, g: int, limit: float, rng: np.random.Generator) -> np.ndarray | None:
        return self.placer.random(self._mask(limit), g, rng)

    def add(self, gpu_ids: Chosen, inc: float) -> None:
        self.loads[np.asarray(gpu_ids, dtype=np.int64)] += inc

    def peak(self, gpu_ids: Chosen) -> float:
        """Largest load among ``gpu_ids``."""
        return float(self.loads[np.asarray(gpu_ids, dtype=np.int64)].max())


class IndexedLoads:
    """GPU loads indexed by value for fast least-loaded and LBSGF queries.

    Structures (all with lazy deletion: an entry is valid while it matches the
    current state):

    - ``_levels``: heap of distinct load values; ``_size[L]``: GPUs at load ``L``;
    - ``_gpus[L]``: heap of the GPUs at load ``L`` (plain ties: lowest index first);
    - ``_members[L][s]``: GPUs of server ``s`` at load ``L``;
    - ``_bycount[L][c]``: heap of servers with exactly ``c`` GPUs at load ``L``
      (fragment-aware ties: best fit by count);
    - ``_servers``: heap of ``(average load, server)`` (LBSGF).
    """

    def __init__(self, cluster: Cluster, initial: Sequence[float]):
        self.server = cluster.server_of_gpu
        self.caps = cluster.gpus_per_server
        self.offsets = cluster.offsets
        self.maxcap = max(self.caps)
        self.load = [float(x) for x in initial]
        self._levels: list[float] = []
        self._size: dict[float, int] = {}
        self._gpus: dict[float, list[int]] = {}
        self._members: dict[float, dict[int, list[int]]] = {}
        self._bycount: dict[float, dict[int, list[int]]] = {}
        self._total = [0.0] * len(self.caps)
        if not any(self.load):
            self._all_at_zero()
        else:
            for g, x in enumerate(self.load):
                self._enter(g, x)
                self._total[self.server[g]] += x
        self._servers = [(self._total[s] / c, s) for s, c in enumerate(self.caps)]
        heapq.heapify(self._servers)

    # -- bookkeeping -----------------------------------------------------------
    def _all_at_zero(self) -> None:
        """Bulk form of entering every GPU at load 0 (sorted lists are valid heaps)."""
        n = len(self.load)
        self._levels = [0.0]
        self._size[0.0] = n
        self._gpus[0.0] = list(range(n))
        self._members[0.0] = {
            s: list(range(o, o + c))
            for s, (o, c) in enumerate(zip(self.offsets, self.caps, strict=True))
        }
        bycount: dict[int, list[int]] = {}
        for s, c in enumerate(self.caps):
            bycount.setdefault(c, []).append(s)
        self._bycount[0.0] = bycount

    def _enter(self, g: int, level: float) -> None:
        s = self.server[g]
        if level not in self._size:
            self._size[level] = 0
            self._gpus[level] = []
            self._members[level] = {}
            self._bycount[level] = {}
            heapq.heappush(self._levels, level)
        self._size[level] += 1
        heapq.heappush(self._gpus[level], g)
        members = self._members[level].setdefault(s, [])
        members.append(g)
        heapq.heappush(self._bycount[level].setdefault(len(members), []), s)

    def _leave(self, g: int, level: float) -> None:
        s = self.server[g]
        members = self._members[level][s]
        members.remove(g)
        if members:
            heapq.heappush(self._bycount[level].setdefault(len(members), []), s)
        else:
            del self._members[level][s]
        self._size[level] -= 1
        if self._size[level] == 0:
            del self._size[level], self._gpus[level], self._members[level]
            del self._bycount[level]

    def _count(self, level: float, s: int) -> int:
        m = self._members[level].get(s)
        return len(m) if m else 0

    def _lowest_level(self) -> float | None:
        levels = self._levels
        while levels and levels[0] not in self._size:
            heapq.heappop(levels)
        return levels[0] if levels else None

    def add(self, gpu_ids: Chosen, inc: float) -> None:
        touched = set()
        for g in gpu_ids:  # leave every old level first: a whole level may be re-entered
            self._leave(g, self.load[g])
        for g in gpu_ids:
            new = self.load[g] + inc
            self._enter(g, new)
            self.load[g] = new
            s = self.server[g]
            self._total[s] += inc
            touched.add(s)
        for s in touched:
            heapq.heappush(self._servers, (self._total[s] / self.caps[s], s))

    def peak(self, gpu_ids: Chosen) -> float:
        """Largest load among ``gpu_ids``."""
        return max(self.load[int(g)] for g in gpu_ids)

    # -- queries ---------------------------------------------------------------
    def least_loaded(self, g: int, limit: float, ties: str) -> list[int] | None:
        """Same answer as :meth:`Placer.least_loaded` (as a set of GPUs)."""
        chosen: list[int] = []
        need = g
        while need > 0:
            level = self._lowest_level()
            if level is None or level > limit + EPS:
                return None
            size = self._size[level]
            if size <= need:  # the whole level is taken; it empties once the loads move
                while self._levels and self._levels[0] == level:  # with any duplicate entry
                    heapq.heappop(self._levels)
                for members in self._members[level].values():
                    chosen.extend(members)
                need -= size
                continue
            if ties == "plain":
                chosen.extend(self._lowest_gpus(level, need))
            else:
                chosen.extend(self._fragment_pick(level, need))
            need = 0
        return chosen

    def _lowest_gpus(self, level: float, need: int) -> list[int]:
        heap, load = self._gpus[level], self.load
        out: list[int] = []
        while len(out) < need:
            g = heapq.heappop(heap)
            if load[g] == level:
                out.append(g)
        for g in out:  # they are still at this level until add(); keep the heap whole
            heapq.heappush(heap, g)
        return out

    def _fragment_pick(self, level: float, need: int) -> list[int]:
        bycount = self._bycount[level]
        used: set[int] = set()
        out: list[int] = []
        while need > 0:
            s = self._best_fit(level, bycount, need, used)
            if s is not None:
                out.extend(sorted(self._members[level][s])[:need])
                return out
            for c in range(min(need - 1, self.maxcap), 0, -1):  # largest count first
                s = self._top(level, bycount.get(c), c, used)
                if s is not None:
                    break
            assert s is not None
            used.add(s)
            out.extend(self._members[level][s])
            need -= c
        return out

    def _best_fit(
        self, level: float, bycount: dict[int, list[int]], need: int, used: set[int]
    ) -> int | None:
        for c in range(need, self.maxcap + 1):
            s = self._top(level, bycount.get(c), c, used)
            if s is not None:
                return s
        return None

    def _top(self, level: float, heap: list[int] | None, c: int, used: set[int]) -> int | None:
        """Smallest server index with exactly ``c`` GPUs at ``level`` (not in ``used``)."""
        if not heap:
            return None
        skipped = []
        found = None
        while heap:
            s = heap[0]
            if self._count(level, s) != c:
                heapq.heappop(heap)  # stale
                continue
            if s in used:
                skipped.append(heapq.heappop(heap))
                continue
            found = s
            break
        for s in skipped:
            heapq.heappush(heap, s)
        return found

    def lbsgf(self, g: int, limit: float, lam: float) -> list[int] | None:
        """Same answer as :meth:`Placer.lbsgf`."""
        heap, total, caps = self._servers, self._total, self.caps
        kept: list[tuple[float, int]] = []
        seen: set[int] = set()
        cap = 0
        target = lam * g - EPS
        while heap and cap < target:
            avg, s = heapq.heappop(heap)
            if s in seen or avg != total[s] / caps[s]:
                continue  # stale or duplicate
            seen.add(s)
            kept.append((avg, s))
            cap += caps[s]
        for item in kept:
            heapq.heappush(heap, item)
        load, offsets = self.load, self.offsets
        cand = []
        for rank, (_, s) in enumerate(kept):
            for gpu in range(offsets[s], offsets[s] + caps[s]):
                if load[gpu] <= limit + EPS:
                    cand.append((load[gpu], rank, gpu))
        if len(cand) < g:
            return None
        return [gpu for _, _, gpu in heapq.nsmallest(g, cand)]

    def first_fit(self, g: int, limit: float) -> list[int] | None:
        out = [gpu for gpu, x in enumerate(self.load) if x <= limit + EPS][:g]
        return out if len(out) == g else None

    def random(self, g: int, limit: float, rng: np.random.Generator) -> list[int] | None:
        cand = np.flatnonzero(np.asarray(self.load) <= limit + EPS)
        if cand.size < g:
            return None
        return sorted(rng.choice(cand, size=g, replace=False).tolist())
