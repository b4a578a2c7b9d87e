"""Measurements on the testbed: step times per placement, and slowdowns under contention.

:func:`measure_placements` runs each job kind of an instance alone on the
cluster, on every placement its GPU counts allow (one server; two servers; one
GPU per server), and writes rows in the step-time layout ``sjfbco calibrate``
reads (``model, placement, local_bsz, step_time, sync_time``) with the known
``gradient_mb`` and ``compute_seconds`` beside them, and ``link_mb_per_s``, the rate
the uplinks are shaped to (``calibrate`` flags a fitted ``bandwidth_inter`` above it).
``local_bsz`` is 1: the emulated compute is a fixed sleep, not a batch.

:func:`measure_contention` runs ``p = 1..4`` identical split jobs at once, each
with one GPU on each of the same two servers (so all ``p`` share both uplinks
and the cost model's contention count is ``p``), at compute shares from 0 to
:data:`SHARES`\\ [-1] of the iteration alone (and, on three servers or more, ``p``
jobs that share one server only), and writes the *slowdown* layout:
``jobs, compute_share, slowdown`` (the form papers publish) with the measured
seconds beside them. Those rows leave the ``neighbours`` columns empty: the
neighbours are copies of the job.

:func:`measure_mixed` runs pairs and triples of jobs of *different* kinds
together (issue 43), in the same layout, each row naming its own kind and its
neighbours' (kind, compute share, transfer time, GPUs on the shared server); with three
servers of two GPUs or more, also triples on a *triangle* (:func:`triangle`: each job's
ring pair has a different neighbour at each end), and with four servers triples in a
*chain* (:func:`chain`: only the middle job is squeezed, between two ends that are not:
the pattern of the testbed's worst job, ``docs/testbed.md``), the squeeze term's rows;
and where a server holds three GPUs beside another of two or more, pairs in the *wide*
layout (:func:`wide`: a job of one GPU on each of two servers beside a ring of four GPUs,
one on the shared server and three on a third), the ring term's rows.

Each figure is the median over iterations of one run, the first
:data:`WARMUP` iterations left out (TCP slow start, phases settling).
"""

from __future__ import annotations

import csv
import io
import itertools
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sjfbco.files import atomic_write_text
from sjfbco.problem import largest_first
from sjfbco.testbed.launcher import JobProcess, wait_ready
from sjfbco.testbed.net import TestbedError

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from sjfbco.problem import ProblemData
    from sjfbco.testbed.launcher import Hosts

#: Compute shares of the iteration alone measured under contention.
SHARES: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75)
#: Compute shares of the ``star`` layout (jobs sharing one server only).
STAR_SHARES: tuple[float, ...] = (0.0, 0.5)
#: Iterations left out at the start of every run.
WARMUP = 2
#: Numbers the runs of one process, so that no two share a folder.
_RUNS = itertools.count()
#: Largest number of jobs sharing the two servers.
MAX_P = 4
#: Sizes of the groups of different kinds measured together (pairs and triples).
MIXED_GROUPS = (2, 3)

STEP_HEADER = (
    "model", "placement", "local_bsz", "step_time", "sync_time", "gradient_mb", "compute_seconds",
    "link_mb_per_s",
)  # fmt: skip
SLOWDOWN_HEADER = (
    "model", "layout", "jobs", "compute_share", "slowdown", "seconds", "alone_seconds",
    "gradient_mb", "compute_seconds", "workers", "servers",
    "neighbours", "neighbour_shares", "neighbour_transfer", "neighbour_gpus",
    "neighbour_workers",
)  # fmt: skip


@dataclass(frozen=True)
class Timing:
    """Median step and all-reduce (sync) time of one job, seconds."""

    step: float
    sync: float


def run_together(
    hosts: Hosts,
    folder: Path,
    jobs: Sequence[tuple[Sequence[tuple[int, int]], float, float]],
    iterations: int,
    linger: bool = False,
) -> list[Timing]:
    """Run jobs ``(servers, gradient MB, compute s)`` all released at once; their timings.

    ``linger``: a job that has its iterations goes on loading the links until every job
    has them (jobs of different kinds, whose iterations differ in length)."""
    run = next(_RUNS)
    procs = [
        JobProcess(
            hosts,
            f"m{k}",
            servers,
            mb,
            iterations,
            compute,
            folder / f"run{run:04d}-{k:02d}",
            linger=linger,
        ).launch()
        for k, (servers, mb, compute) in enumerate(jobs)
    ]
    try:
        wait_ready(procs, 120.0)
        for p in procs:
            p.go()
        while not all(p.is_done() for p in procs):
            time.sleep(0.01)
        out = []
        for p in procs:
            rows = p.result()["iterations"][WARMUP:] or p.result()["iterations"]
            out.append(
                Timing(
                    step=statistics.median(r[2] - r[0] for r in rows),
                    sync=statistics.median(r[2] - r[1] for r in rows),
                )
            )
        return out
    finally:
        for p in procs:
            p.finish()


def placements(gpus_per_server: Sequence[int], workers: int) -> list[tuple[tuple[int, int], ...]]:
    """Placements of ``workers`` GPUs as ``(server, GPUs there)``: one server, two, one GPU each.

    Only placements the cluster holds, on its fullest servers (lowest index
    first among equals); duplicates removed.
    """
    order = largest_first(gpus_per_server)
    candidates: list[tuple[int, ...]] = [(workers,)]
    for n in range(2, min(workers, len(order)) + 1):  # as even as it goes on n servers
        candidates.append(tuple(workers // n + (1 if i < workers % n else 0) for i in range(n)))
    out: list[tuple[tuple[int, int], ...]] = []
    for counts in candidates:
        if len(counts) > len(order):
            continue
        servers = tuple(zip(order, counts, strict=False))
        if all(c <= gpus_per_server[s] for s, c in servers) and servers not in out:
            out.append(servers)
    return out


def _placement_text(counts: Sequence[int]) -> str:
    return ("-" if max(counts) >= 10 else "").join(str(c) for c in counts)


def kinds(data: ProblemData) -> dict[str, tuple[float, float]]:
    """Job kinds of an instance: model name -> (gradient MB, compute s) of its first job."""
    out: dict[str, tuple[float, float]] = {}
    for job in data.jobs:
        if job.compute_seconds is None:
            raise TestbedError(f"job {job.id}: the testbed needs compute_seconds")
        name = job.model or f"m{job.gradient_mb:g}-c{job.compute_seconds:g}"
        out.setdefault(name, (job.gradient_mb, job.compute_seconds))
    return out


def measure_placements(
    hosts: Hosts, data: ProblemData, folder: Path, iterations: int = 12
) -> list[dict[str, object]]:
    """Step-time rows of every job kind alone on every placement (see the module docstring)."""
    caps = data.cluster.gpus_per_server[: hosts.num_servers]
    rate = data.cluster.bandwidth_inter  # the stated (emulated: shaped) rate, a limit
    rows: list[dict[str, object]] = []
    for name, (mb, compute) in sorted(kinds(data).items()):
        for w in (1, 2, 3, 4):
            for servers in placements(caps, w):
                (t,) = run_together(hosts, folder / "alone", [(servers, mb, compute)], iterations)
                counts = [c for _, c in servers]
                rows.append({
                    "model": name, "placement": _placement_text(counts), "local_bsz": 1,
                    "step_time": t.step, "sync_time": t.sync, "gradient_mb": mb,
                    "compute_seconds": compute, "link_mb_per_s": rate,
                })  # fmt: skip
    return rows


def measure_contention(
    hosts: Hosts,
    data: ProblemData,
    folder: Path,
    iterations: int = 12,
    shares: Sequence[float] = SHARES,
) -> list[dict[str, object]]:
    """Slowdown rows of ``p = 1..4`` split jobs sharing servers (module docstring).

    Layout ``pair``: every job holds one GPU on each of the same two servers.
    Layout ``star`` (with three servers or more, at :data:`STAR_SHARES`): job
    ``k`` holds one GPU on the fullest server (the hub) and one on server ``k``,
    so the jobs share the hub only; eq. 6 counts ``p`` for each, as in ``pair``.
    """
    caps = data.cluster.gpus_per_server[: hosts.num_servers]
    if len(caps) < 2:
        raise TestbedError("contention needs at least two servers")
    order = largest_first(caps)
    hub = order[0]
    mb = statistics.median(job.gradient_mb for job in data.jobs) if data.jobs else 2.0
    pair = [(hub, 1), (order[1], 1)]
    (alone,) = run_together(hosts, folder / "c", [(pair, mb, 0.0)], iterations)
    layouts: list[tuple[str, Sequence[float], list[list[tuple[int, int]]]]] = [
        ("pair", shares, [pair] * min(MAX_P, caps[order[1]]))
    ]
    if len(caps) >= 3:
        spokes = [[(hub, 1), (s, 1)] for s in order[1 : 1 + MAX_P]]
        layouts.append(("star", [s for s in shares if s in STAR_SHARES], spokes))
    rows: list[dict[str, object]] = []
    for layout, layout_shares, placements_ in layouts:
        for share in layout_shares:
            compute = alone.sync * share / (1.0 - share)
            base: float | None = None
            for p in range(1, len(placements_) + 1):
                jobs = [(placements_[k], mb, compute) for k in range(p)]
                times = run_together(hosts, folder / "c", jobs, iterations)
                seconds = statistics.mean(t.step for t in times)
                base = seconds if base is None else base
                rows.append({
                    "model": f"m{mb:g}", "layout": layout, "jobs": p, "compute_share": share,
                    "slowdown": seconds / base, "seconds": seconds, "alone_seconds": base,
                    "gradient_mb": mb, "compute_seconds": compute, "workers": 2, "servers": 2,
                })  # fmt: skip
    return rows


def measure_mixed(
    hosts: Hosts,
    data: ProblemData,
    folder: Path,
    iterations: int = 12,
    grid: Mapping[str, tuple[float, float]] | None = None,
) -> list[dict[str, object]]:
    """Slowdown rows of jobs of *different* kinds sharing servers (module docstring).

    Kinds: the instance's (:func:`kinds`), and those of ``grid`` (name -> gradient MB,
    compute s) beside them. Every pair and triple of distinct kinds runs together, with
    :data:`MIXED_GROUPS` as the cap fits, in two layouts: ``pair`` (each job one GPU on
    each of the two fullest servers: they share both uplinks) and ``intra`` (each job
    two GPUs of the fullest server: they share its inside); with three servers of two
    GPUs or more every triple also runs in the ``triangle`` layout (:func:`triangle`), and
    with four servers, the two fullest of two GPUs or more, in the ``chain`` layout with
    each of its kinds in the middle (:func:`chain`; rows ``chain`` for the middle job,
    ``chain-end`` for the ends), bases from the pair layout's runs alone (the same
    shape). Each kind also runs alone
    in each layout (a ``jobs`` 1 row): the base of its slowdowns, its compute share
    ``s`` = 1 - sync/step alone, and its transfer time, which the rows beside it divide
    by. One row per job of a group; ``neighbours``, ``neighbour_shares``,
    ``neighbour_transfer`` and ``neighbour_gpus`` list the other jobs of its group
    (semicolon-separated, one entry each): their kind, compute share alone, transfer
    time alone over this job's, and GPUs on the shared server. Jobs linger
    (:func:`run_together`), so every measured iteration ran beside all its neighbours.
    """
    caps = data.cluster.gpus_per_server[: hosts.num_servers]
    if len(caps) < 2:
        raise TestbedError("contention needs at least two servers")
    every = {**kinds(data), **(grid or {})}
    order = largest_first(caps)
    hub, other = order[0], order[1]
    layouts: tuple[tuple[str, list[tuple[int, int]], int], ...] = (
        ("pair", [(hub, 1), (other, 1)], min(caps[hub], caps[other])),
        ("intra", [(hub, 2)], caps[hub] // 2),
    )
    rows: list[dict[str, object]] = []
    bases: dict[str, dict[str, Timing]] = {}
    for layout, servers, room in layouts:
        if room < 2:
            continue
        alone = bases[layout] = {}
        for name, (mb, compute) in sorted(every.items()):
            (alone[name],) = run_together(hosts, folder / "x", [(servers, mb, compute)], iterations)
            rows.append(_mixed_row(layout, servers, (name,), 0, every, alone, alone[name]))
        for size in MIXED_GROUPS:
            if size > room:
                continue
            for group in itertools.combinations(sorted(every), size):
                jobs = [(servers, *every[name]) for name in group]
                times = run_together(hosts, folder / "x", jobs, iterations, linger=True)
                rows += [
                    _mixed_row(layout, servers, group, k, every, alone, t)
                    for k, t in enumerate(times)
                ]
    if "pair" in bases and max(MIXED_GROUPS) >= 3:
        rows += _squeeze_rows(hosts, folder, caps, every, bases["pair"], iterations)
    if "pair" in bases:
        rows += _wide_rows(hosts, folder, caps, every, bases["pair"], iterations)
    return rows


def _wide_rows(
    hosts: Hosts,
    folder: Path,
    caps: Sequence[int],
    every: Mapping[str, tuple[float, float]],
    alone: Mapping[str, Timing],
    iterations: int,
) -> list[dict[str, object]]:
    """The ring term's rows (module docstring): every ordered pair of distinct kinds in the
    :func:`wide` layout, the first on the pair, the second the ring of four, one row for
    each; ``alone``: the kinds' runs alone on the pair (the pair layout's); each kind
    also runs alone as the ring (the base of its row and its share and transfer there)."""
    spots = wide(caps)
    if spots is None:
        return []
    pair, ring = spots
    rings = tuple(sum(c for _, c in spot) for spot in spots)  # each job's GPUs in all
    four = {
        name: run_together(hosts, folder / "x", [(ring, *every[name])], iterations)[0]
        for name in sorted(every)
    }
    rows: list[dict[str, object]] = []
    for x, y in itertools.permutations(sorted(every), 2):
        jobs = [(pair, *every[x]), (ring, *every[y])]
        times = run_together(hosts, folder / "x", jobs, iterations, linger=True)
        bases = (alone[x], four[y])
        rows += [
            _mixed_row("wide", spot, (x, y), k, every, alone, times[k], bases, rings)
            for k, spot in enumerate((pair, ring))
        ]
    return rows


def wide(
    gpus_per_server: Sequence[int],
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]] | None:
    """Two split placements sharing one server (the ``wide`` layout): a pair, one GPU on
    each of ``a`` and ``b``, and a ring of four, one GPU on ``b`` and three on ``c``
    (``b`` the fullest server, ``c`` the next, ``a`` the third); ``None`` unless there are
    three servers, ``b`` holding two GPUs or more and ``c`` three or more."""
    order = largest_first(gpus_per_server)[:3]
    if len(order) < 3 or gpus_per_server[order[1]] < 3:
        return None
    b, c, a = order
    return [(a, 1), (b, 1)], [(b, 1), (c, 3)]


def _squeeze_rows(
    hosts: Hosts,
    folder: Path,
    caps: Sequence[int],
    every: Mapping[str, tuple[float, float]],
    alone: Mapping[str, Timing],
    iterations: int,
) -> list[dict[str, object]]:
    """The squeeze layouts' rows (module docstring): every triple of distinct kinds on the
    :func:`triangle`, and on the :func:`chain` with each of its kinds in the middle, as
    the cluster holds them; ``alone``: the kinds' runs alone on one GPU of each of two
    servers (the pair layout's, the same shape)."""
    rows: list[dict[str, object]] = []
    spots = triangle(caps)
    if spots is not None:
        for group in itertools.combinations(sorted(every), 3):
            jobs = [(spot, *every[name]) for spot, name in zip(spots, group, strict=True)]
            times = run_together(hosts, folder / "x", jobs, iterations, linger=True)
            rows += [
                _mixed_row("triangle", spots[k], group, k, every, alone, t)
                for k, t in enumerate(times)
            ]
    line = chain(caps)
    if line is not None:
        for triple in itertools.combinations(sorted(every), 3):
            for middle in triple:
                left, right = (n for n in triple if n != middle)
                group = (left, middle, right)
                jobs = [(spot, *every[name]) for spot, name in zip(line, group, strict=True)]
                times = run_together(hosts, folder / "x", jobs, iterations, linger=True)
                # each row's neighbours: the middle job's, both ends; an end's, the middle
                # job, then the far end
                rows += [
                    _mixed_row("chain-end", line[0], group, 0, every, alone, times[0]),
                    _mixed_row("chain", line[1], group, 1, every, alone, times[1]),
                    _mixed_row("chain-end", line[2], group[::-1], 0, every, alone, times[2]),
                ]
    return rows


def triangle(
    gpus_per_server: Sequence[int],
) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]]] | None:
    """Three split placements, one GPU on each of two of the three fullest servers ``a``,
    ``b``, ``c``: ``(a, b)``, ``(b, c)``, ``(c, a)`` (the ``triangle`` layout: each job's
    ring pair has a different job at each end); ``None`` unless three servers hold two
    GPUs or more."""
    order = largest_first(gpus_per_server)[:3]
    if len(order) < 3 or gpus_per_server[order[2]] < 2:
        return None
    a, b, c = order
    return [(a, 1), (b, 1)], [(b, 1), (c, 1)], [(c, 1), (a, 1)]


def chain(
    gpus_per_server: Sequence[int],
) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]]] | None:
    """Three split placements, one GPU on each of two servers, in a row of four servers
    ``a``, ``b``, ``c``, ``d``: ``(a, b)``, ``(b, c)``, ``(c, d)`` (the ``chain`` layout:
    the middle job's ring pair has a different job at each end, the end jobs' one job at
    one end). ``b`` and ``c`` are the two fullest servers (they hold two jobs each), ``a``
    and ``d`` the next two; ``None`` unless there are four servers and the two fullest
    hold two GPUs or more."""
    order = largest_first(gpus_per_server)[:4]
    if len(order) < 4 or gpus_per_server[order[1]] < 2:
        return None
    b, c, a, d = order
    return [(a, 1), (b, 1)], [(b, 1), (c, 1)], [(c, 1), (d, 1)]


def _mixed_row(
    layout: str,
    servers: Sequence[tuple[int, int]],
    group: Sequence[str],
    k: int,
    every: Mapping[str, tuple[float, float]],
    alone: Mapping[str, Timing],
    t: Timing,
    bases: Sequence[Timing] | None = None,
    rings: Sequence[int] | None = None,
) -> dict[str, object]:
    """The row of job ``k`` of ``group`` (kind names) measured at ``t``.

    ``bases``: each job's run alone on its placement (default: its kind's in ``alone``,
    every job of the group on the same shape); ``rings``: each job's GPUs in all (default:
    the row's own)."""
    name = group[k]
    alone_of = list(bases) if bases is not None else [alone[n] for n in group]
    base = alone_of[k]
    workers = sum(c for _, c in servers)
    gpus = list(rings) if rings is not None else [workers] * len(group)
    others = [i for i in range(len(group)) if i != k]
    mb, compute = every[name]

    def share(i: int) -> float:
        return max(0.0, 1.0 - alone_of[i].sync / alone_of[i].step)

    def joined(values: Sequence[object]) -> str:
        return ";".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in values)

    return {
        "model": name, "layout": layout, "jobs": len(group), "compute_share": share(k),
        "slowdown": t.step / base.step, "seconds": t.step, "alone_seconds": base.step,
        "gradient_mb": mb, "compute_seconds": compute,
        "workers": workers, "servers": len(servers),
        "neighbours": joined([group[i] for i in others]),
        "neighbour_shares": joined([share(i) for i in others]),
        "neighbour_transfer": joined([alone_of[i].sync / max(base.sync, 1e-9) for i in others]),
        "neighbour_gpus": joined([servers[0][1]] * len(others)),
        "neighbour_workers": joined([gpus[i] for i in others]),
    }  # fmt: skip


def write_rows(path: str | os.PathLike[str], header: Sequence[str], rows: Sequence[dict]) -> None:
    """Write ``rows`` as CSV with ``header`` (atomically; floats with 6 significant digits)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(header), lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: f"{v:.6g}" if isinstance(v, float) else v for k, v in row.items()})
    atomic_write_text(path, buf.getvalue())
