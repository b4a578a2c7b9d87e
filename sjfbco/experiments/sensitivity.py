"""Sensitivity of the paper's comparison to each Decision (docs/model.md sections 5 to 7).

Each :class:`Variant` changes one Decision or constant from the defaults and
reruns Fig. 6 (the four policies at 10, 15 and 20 servers; its 20-server
column is Fig. 4). :func:`sensitivity_table` reports, per variant, the ratio of
LS, FF and RAND to SJF-BCO (ratio of the mean makespans over seeds) at each
server count, the Fig. 4 mean-JCT ratios, and whether SJF-BCO stays the best
policy everywhere, so a reader sees which conclusions survive which choice.
``benchmarks/sensitivity.py`` runs it; ``docs/reproduction.md`` quotes it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sjfbco.experiments.reproduce import (
    SOLVERS,
    Settings,
    _md,
    aggregate,
    run_tasks,
    tasks_for,
)
from sjfbco.workloads.paper import PRESETS, Preset

BASELINES = ("ls", "ff", "rand")


@dataclass(frozen=True)
class Variant:
    """One alternative: a name, what it changes, and the settings it runs with."""

    name: str
    change: str
    preset: str | Preset = "paper"
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def settings(self, seeds: int) -> Settings:
        return Settings(seeds=seeds, preset=self.preset, options=self.options)


def _xi1(value: float) -> Preset:
    return replace(PRESETS["paper"], name=f"paper-xi1-{value:g}", xi1=value)


VARIANTS: tuple[Variant, ...] = (
    Variant(
        "defaults",
        "offline mode, fragment ties, baselines in input order, preset paper, T = sum of estimates",
    ),
    Variant(
        "timestepped",
        "assignment mode timestepped (every policy)",
        options={"*": {"mode": "timestepped"}},
    ),
    Variant(
        "plain ties",
        "FA-FFP ties (load, server, GPU) in SJF-BCO",
        options={"sjf-bco": {"ties": "plain"}},
    ),
    Variant(
        "baselines SJF order",
        "LS, FF and RAND take jobs smallest first",
        options={b: {"order": "sjf"} for b in BASELINES},
    ),
    Variant(
        "preset prototype",
        "docs/model.md section 7's starting constants: 11,700 MB/s links, xi2 0.01 s, 4 s slot",
        preset="prototype",
    ),
    Variant("preset 10gbe", "Wang et al.'s 10 GbE links (1,170 MB/s), 36 s slot", preset="10gbe"),
    Variant("xi1 = 0.5", "half the contention scale (preset paper otherwise)", preset=_xi1(0.5)),
    Variant(
        "T = 1500",
        "the paper's horizon for theta (SJF-BCO, LS, FF; RAND has no limit)",
        options={s: {"horizon": 1500} for s in ("sjf-bco", "ls", "ff")},
    ),
)


def run_sensitivity(
    seeds: int = 10,
    variants: Sequence[Variant] = VARIANTS,
    jobs: int | None = None,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Fig. 6's tasks under every variant; rows carry a ``variant`` field."""
    tasks, names = [], []
    for v in variants:
        ts = tasks_for("6", v.settings(seeds))
        tasks += ts
        names += [v.name] * len(ts)
    rows = run_tasks(tasks, jobs=jobs, progress=progress)
    return [{**r, "variant": n} for r, n in zip(rows, names, strict=True)]


def sensitivity_table(
    rows: Sequence[Mapping[str, Any]], variants: Sequence[Variant] = VARIANTS
) -> str:
    """Markdown: per variant, ``LS / FF / RAND`` ratios to SJF-BCO at each server count."""
    servers = sorted({int(r["servers"]) for r in rows})
    header = [
        "variant",
        "change",
        *[f"{n} servers" for n in servers],
        f"mean JCT, {servers[-1]} servers (Fig. 4)",
        "SJF-BCO best everywhere",
        "SJF-BCO < LS < FF < RAND everywhere",
    ]
    body = []
    for v in variants:
        vr = [r for r in rows if r["variant"] == v.name]
        if not vr:
            continue
        ms, jct = aggregate(vr), aggregate(vr, "mean_jct")
        cells, best, order = [], True, True
        for n in servers:
            means = [ms[(n, s, "")].mean for s in SOLVERS]
            cells.append(" / ".join(f"{m / means[0]:.2f}" for m in means[1:]))
            best &= means[0] <= min(means[1:])
            order &= all(a < b for a, b in itertools.pairwise(means))
        top = servers[-1]
        jm = [jct[(top, s, "")].mean for s in SOLVERS]
        body.append(
            [
                v.name,
                v.change,
                *cells,
                " / ".join(f"{m / jm[0]:.2f}" for m in jm[1:]),
                "yes" if best else "no",
                "yes" if order else "no",
            ]
        )
    seeds = len({int(r["seed"]) for r in rows})
    return (
        f"Ratios LS / FF / RAND to SJF-BCO (ratio of mean makespans over {seeds} seeds; "
        "mean JCT likewise).\n\n" + _md(header, body, left=2) + "\n"
    )
