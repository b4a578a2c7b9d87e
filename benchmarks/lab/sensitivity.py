"""Sensitivity of the paper's comparison to each Decision (docs/model.md sections 5 to 7).

Each variant is a :class:`~sjfbco.experiments.readings.Reading` that changes
one Decision or constant of the all-offline reading (the model's Decisions);
all of them rerun Fig. 6 (the four policies at 10, 15 and 20 servers; its
20-server column is Fig. 4) together, through the batch engine.
:func:`sensitivity_table` reports, per variant, the ratio of LS, FF and RAND
to SJF-BCO (ratio of the mean makespans over seeds) at each server count, the
Fig. 4 mean-JCT ratios, and whether SJF-BCO stays the best policy everywhere,
so a reader sees which conclusions survive which choice. ``benchmarks/sensitivity.py`` runs it;
``docs/reproduction.md`` quotes it.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sjfbco.experiments.paper import PAPER_POLICIES, aggregate
from sjfbco.experiments.readings import OFFLINE, Reading
from sjfbco.experiments.reproduce import BatchEngine, Settings, md_table, run_tasks, tasks_for
from sjfbco.workloads.paper import PRESETS, Preset

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Mapping, Sequence

BASELINES = ("ls", "ff", "rand")


def _xi1(value: float) -> Preset:
    return replace(PRESETS["paper"], name=f"paper-xi1-{value:g}", xi1=value)


def _variant(name: str, change: str, **kwargs: Any) -> Reading:
    """One change from the all-offline reading (the model's Decisions)."""
    return replace(OFFLINE, name=name, description=change, **kwargs)


VARIANTS: tuple[Reading, ...] = (
    _variant(
        "defaults",
        "offline mode, fragment ties, baselines in input order, preset paper, T = sum of estimates",
    ),
    _variant(
        "timestepped",
        "assignment mode timestepped (every policy)",
        options={"*": {"mode": "timestepped"}},
    ),
    _variant(
        "plain ties",
        "FA-FFP ties (load, server, GPU) in SJF-BCO",
        options={"sjf-bco": {"ties": "plain"}},
    ),
    _variant(
        "baselines SJF order",
        "LS, FF and RAND take jobs smallest first",
        options={b: {"order": "sjf"} for b in BASELINES},
    ),
    _variant(
        "preset prototype",
        "a prototype's starting constants: 11,700 MB/s links, xi2 0.01 s, 4 s slot",
        preset=PRESETS["prototype"],
    ),
    _variant(
        "preset 10gbe",
        "Wang et al.'s 10 GbE links (1,170 MB/s), 36 s slot",
        preset=PRESETS["10gbe"],
    ),
    _variant("xi1 = 0.5", "half the contention scale (preset paper otherwise)", preset=_xi1(0.5)),
    _variant(
        "T = 1500",
        "the paper's horizon for theta (SJF-BCO, LS, FF; RAND has no limit)",
        options={s: {"horizon": 1500} for s in ("sjf-bco", "ls", "ff")},
    ),
)


def run_sensitivity(
    seeds: int = 10,
    variants: Sequence[Reading] = VARIANTS,
    out: str | os.PathLike[str] | None = None,
    engine: BatchEngine | None = None,
    on_row: Callable[[Any], None] | None = None,
) -> list[dict[str, Any]]:
    """Fig. 6's runs under every variant, in one batch; each row's ``reading`` names it."""
    settings = Settings(seeds=seeds, readings=tuple(variants))
    return run_tasks(tasks_for("6", settings), out, engine, on_row=on_row)


def sensitivity_table(
    rows: Sequence[Mapping[str, Any]], variants: Sequence[Reading] = VARIANTS
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
        vr = [r for r in rows if r["reading"] == v.name]
        if not vr:
            continue
        ms, jct = aggregate(vr), aggregate(vr, "mean_jct")
        cells, best, order = [], True, True
        for n in servers:
            means = [ms[(n, s, "")].mean for s in PAPER_POLICIES]
            cells.append(" / ".join(f"{m / means[0]:.2f}" for m in means[1:]))
            best &= means[0] <= min(means[1:])
            order &= all(a < b for a, b in itertools.pairwise(means))
        top = servers[-1]
        jm = [jct[(top, s, "")].mean for s in PAPER_POLICIES]
        body.append(
            [
                v.name,
                v.description,
                *cells,
                " / ".join(f"{m / jm[0]:.2f}" for m in jm[1:]),
                "yes" if best else "no",
                "yes" if order else "no",
            ]
        )
    seeds = len({int(r["seed"]) for r in rows})
    return (
        f"Ratios LS / FF / RAND to SJF-BCO (ratio of mean makespans over {seeds} seeds; "
        "mean JCT likewise).\n\n" + md_table(header, body, left=2) + "\n"
    )
