"""The paper's experiments as constants: figures, policies, its values, and how we compare.

A leaf module (standard library only): the runner
(:mod:`sjfbco.experiments.reproduce`), the plots
(:mod:`sjfbco.experiments.plots`), the sensitivity study and the fit
(:mod:`benchmarks.lab.fit`) all read the paper from here, so that the
figure values, the labels, the aggregation over seeds, the residuals and the
qualitative claims exist once.

The experiments (Yu et al., MobiHoc 2022, section 6; ``docs/reproduction.md``):

- Fig. 4: SJF-BCO, LS, FF, RAND at 20 servers; makespan and mean/min/max JCT.
- Fig. 5: SJF-BCO with a fixed ``kappa`` in 1, 2, 4, 8, 10, 16, 32 (20 servers).
- Fig. 6: the four policies at 10, 15 and 20 servers.
- Fig. 7: SJF-BCO with ``kappa = 1`` and ``lambda`` in 1, 2, 4, 8 (20 servers).

Rows. Every function here takes *figure rows*: mappings with at least
``figure``, ``servers``, ``solver``, ``value`` (the swept parameter's value,
``""`` when none) and the metrics (``makespan``, ``mean_jct``, ...; slots).
Rows without a makespan (a failed run) are left out of every aggregate.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

FIGURES: tuple[str, ...] = ("4", "5", "6", "7")
#: The paper's policies, in its order (the first is the reference for ratios).
PAPER_POLICIES: tuple[str, ...] = ("sjf-bco", "ls", "ff", "rand")
#: Extra policies shown in Figs. 4 and 6 when registered; not in the paper.
EXTRA_POLICIES: tuple[str, ...] = ("best",)
LABELS: dict[str, str] = {"sjf-bco": "SJF-BCO", "ls": "LS", "ff": "FF", "rand": "RAND"}
#: How an extra policy is labelled in tables and plots.
EXTRA_LABEL = "{name} (not in the paper)"
KAPPAS: tuple[int, ...] = (1, 2, 4, 8, 10, 16, 32)
LAMBDAS: tuple[int, ...] = (1, 2, 4, 8)
SERVER_COUNTS: tuple[int, ...] = (10, 15, 20)
#: Servers of Figs. 4, 5 and 7.
SERVERS = 20
#: The paper's horizon ``T`` (slots) per figure: 1200, and 1500 in Fig. 6.
PAPER_HORIZON: dict[str, int] = {"4": 1200, "5": 1200, "6": 1500, "7": 1200}
#: Policies that search ``theta`` and so use a horizon (RAND has no limit).
THETA_POLICIES: tuple[str, ...] = ("sjf-bco", "ls", "ff")

#: The paper's values (slots), read from its plots, one run each.
PAPER: dict[str, Any] = {
    "4": {
        "makespan": {"sjf-bco": 535, "ls": 595, "ff": 719, "rand": 1128},
        "mean_jct": {"sjf-bco": 178, "ls": 187, "ff": 452, "rand": 261},
    },
    "5": {1: 626, 2: 564, 4: 541, 8: 535, 10: 700, 16: 749, 32: 736},
    "6": {
        "sjf-bco": {10: 939, 15: 715, 20: 535},
        "ls": {10: 1160, 15: 870, 20: 595},
        "ff": {10: 1404, 15: 963, 20: 719},
        "rand": {10: 1488, 15: 1260, 20: 1128},
    },
    "7": {1: 1043, 2: 882, 4: 730, 8: 538},
}

TITLES: dict[str, str] = {
    "4": "Fig. 4: makespan and JCT per policy",
    "5": "Fig. 5: SJF-BCO makespan against a fixed kappa",
    "6": "Fig. 6: makespan against the number of servers",
    "7": "Fig. 7: SJF-BCO makespan against lambda (kappa = 1)",
}

#: The criterion for shipping a reading as ``paper-fit``: Fig. 4's three ratios to
#: SJF-BCO within this of the paper's (absolute difference of ratios).
RATIO_TOLERANCE = 0.15
#: "The kappa minimum at 8 or near it": kappa = 8's mean within this share of the minimum.
KAPPA_NEAR = 0.03
#: "lambda falling": no step of the curve may rise by more than this share.
LAMBDA_RISE = 0.02


def label(policy: str) -> str:
    """The policy's label in tables and plots (extras say they are not in the paper)."""
    if policy in LABELS:
        return LABELS[policy]
    return EXTRA_LABEL.format(name=policy)


# ----------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class Stat:
    """Mean, sample standard deviation, min and max of one figure over seeds."""

    mean: float
    sd: float
    lo: float
    hi: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat:
        vals = [float(v) for v in values]
        sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
        return cls(statistics.fmean(vals), sd, min(vals), max(vals), len(vals))

    def text(self, digits: int = 0) -> str:
        if self.n > 1:
            return f"{self.mean:.{digits}f} ± {self.sd:.{digits}f}"
        return f"{self.mean:.{digits}f}"


def ok(row: Mapping[str, Any]) -> bool:
    """Whether a row has a finite makespan (a run that produced a schedule)."""
    v = row.get("makespan")
    return v is not None and v != "" and math.isfinite(float(v))


def aggregate(
    rows: Iterable[Mapping[str, Any]], metric: str = "makespan"
) -> dict[tuple[int, str, Any], Stat]:
    """``(servers, solver, value) -> Stat`` of ``metric`` over seeds (runs with a makespan)."""
    groups: dict[tuple[int, str, Any], list[float]] = defaultdict(list)
    for row in rows:
        if ok(row):
            groups[(int(row["servers"]), str(row["solver"]), row["value"])].append(
                float(row[metric])
            )
    return {k: Stat.of(v) for k, v in groups.items()}


def figure_rows(rows: Iterable[Mapping[str, Any]], figure: str) -> list[Mapping[str, Any]]:
    return [r for r in rows if str(r["figure"]) == figure]


# ----------------------------------------------------------------------------- the fit


@dataclass(frozen=True)
class Point:
    """One value of the paper: ``figure``, ``metric`` of ``solver`` at ``servers`` and
    swept ``value`` (``""`` when none), and the paper's number (slots)."""

    figure: str
    metric: str
    servers: int
    solver: str
    value: Any
    paper: float

    @property
    def name(self) -> str:
        """E.g. ``fig4 mean_jct ls``, ``fig6 ff s10``, ``fig5 kappa=8``."""
        if self.figure == "4":
            return f"fig4 {self.metric} {self.solver}"
        if self.figure == "6":
            return f"fig6 {self.solver} s{self.servers}"
        return f"fig{self.figure} {'kappa' if self.figure == '5' else 'lambda'}={self.value}"


def paper_points() -> list[Point]:
    """Every distinct value the paper gives: 27 points.

    Fig. 4's makespans are Fig. 6's 20-server points (same runs, same paper
    values), so they are listed once, under Fig. 4. Fig. 5's ``kappa = 1`` and
    Fig. 7's ``lambda = 1`` are the same run with two different paper values
    (626 and 1043): both are kept, and no reading can fit both.
    """
    pts = [
        Point("4", m, SERVERS, s, "", float(PAPER["4"][m][s]))
        for m in ("makespan", "mean_jct")
        for s in PAPER_POLICIES
    ]
    pts += [Point("5", "makespan", SERVERS, "sjf-bco", k, float(PAPER["5"][k])) for k in KAPPAS]
    pts += [
        Point("6", "makespan", n, s, "", float(PAPER["6"][s][n]))
        for n in SERVER_COUNTS
        if n != SERVERS
        for s in PAPER_POLICIES
    ]
    pts += [Point("7", "makespan", SERVERS, "sjf-bco", v, float(PAPER["7"][v])) for v in LAMBDAS]
    return pts


def residuals(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Per paper point, ``ln(ours / paper)`` with ours the mean over seeds.

    ``nan`` for a point without a run (missing or failed everywhere).
    """
    out: dict[str, float] = {}
    for fig in FIGURES:
        rs = figure_rows(rows, fig)
        means = {m: aggregate(rs, m) for m in ("makespan", "mean_jct")}
        for p in (p for p in paper_points() if p.figure == fig):
            st = means[p.metric].get((p.servers, p.solver, p.value))
            out[p.name] = math.log(st.mean / p.paper) if st and st.mean > 0 else math.nan
    return out


def distance(res: Mapping[str, float]) -> float:
    """Root mean square of the log-ratios (``inf`` if any is missing): the fit's objective.

    0.1 means ours are within about 10% of the paper's values on average.
    """
    vals = list(res.values())
    if not vals or any(not math.isfinite(v) for v in vals):
        return math.inf
    return math.sqrt(sum(v * v for v in vals) / len(vals))


def ratios(rows: Sequence[Mapping[str, Any]], servers: int = SERVERS) -> dict[str, float]:
    """Each paper policy's mean makespan over SJF-BCO's at ``servers`` (Fig. 6 rows)."""
    ms = aggregate(r for r in rows if str(r["figure"]) in ("4", "6"))
    ref = ms.get((servers, "sjf-bco", ""))
    out = {}
    for s in PAPER_POLICIES[1:]:
        st = ms.get((servers, s, ""))
        out[s] = st.mean / ref.mean if st and ref and ref.mean > 0 else math.nan
    return out


def paper_ratios(servers: int = SERVERS) -> dict[str, float]:
    """The paper's makespan ratios to SJF-BCO at ``servers``."""
    p = PAPER["6"]
    return {s: p[s][servers] / p["sjf-bco"][servers] for s in PAPER_POLICIES[1:]}


def claims(rows: Sequence[Mapping[str, Any]]) -> dict[str, bool]:
    """The paper's qualitative claims, each true or false for ``rows`` (means over seeds).

    - ``order s10``, ``order s15``, ``order s20``: SJF-BCO < LS < FF < RAND (Fig. 6);
    - ``kappa min near 8``: Fig. 5's minimum is interior and ``kappa = 8``'s mean is
      within :data:`KAPPA_NEAR` of it (``kappa = 10`` is the same run for this
      job mix, so "at 8" and "at 10" are one claim);
    - ``lambda falls``: Fig. 7 at ``lambda = 8`` below ``lambda = 1`` and no step up
      by more than :data:`LAMBDA_RISE`;
    - ``fig4 ratios within 0.15``: LS, FF and RAND over SJF-BCO at 20 servers within
      :data:`RATIO_TOLERANCE` of the paper's 1.11, 1.34, 2.11;
    - ``gaps widen``: each baseline's ratio to SJF-BCO at 10 servers at least its
      ratio at 20 (reported; not part of the shipping criterion).
    """
    out: dict[str, bool] = {}
    ms6 = aggregate(r for r in rows if str(r["figure"]) in ("4", "6"))
    for n in SERVER_COUNTS:
        means = [ms6.get((n, s, "")) for s in PAPER_POLICIES]
        out[f"order s{n}"] = all(m is not None for m in means) and all(
            a.mean < b.mean  # type: ignore[union-attr]
            for a, b in itertools.pairwise(means)
        )
    k = aggregate(figure_rows(rows, "5"))
    kc = [k[(SERVERS, "sjf-bco", v)].mean for v in KAPPAS if (SERVERS, "sjf-bco", v) in k]
    if len(kc) == len(KAPPAS):
        lo = min(kc)
        out["kappa min near 8"] = kc.index(lo) not in (0, len(kc) - 1) and kc[
            KAPPAS.index(8)
        ] <= lo * (1 + KAPPA_NEAR)
    else:
        out["kappa min near 8"] = False
    lam = aggregate(figure_rows(rows, "7"))
    lc = [lam[(SERVERS, "sjf-bco", v)].mean for v in LAMBDAS if (SERVERS, "sjf-bco", v) in lam]
    out["lambda falls"] = (
        len(lc) == len(LAMBDAS)
        and lc[-1] < lc[0]
        and all(b <= a * (1 + LAMBDA_RISE) for a, b in itertools.pairwise(lc))
    )
    ours, theirs = ratios(rows), paper_ratios()
    out["fig4 ratios within 0.15"] = all(
        math.isfinite(ours[s]) and abs(ours[s] - theirs[s]) <= RATIO_TOLERANCE for s in ours
    )
    far, near = ratios(rows, min(SERVER_COUNTS)), ratios(rows, max(SERVER_COUNTS))
    out["gaps widen"] = all(far[s] >= near[s] for s in far)
    return out


#: The claims a reading must keep to ship as ``paper-fit`` (with the Fig. 4 ratios).
CRITERION: tuple[str, ...] = (
    "order s10",
    "order s15",
    "order s20",
    "kappa min near 8",
    "lambda falls",
    "fig4 ratios within 0.15",
)


def meets_criterion(found: Mapping[str, bool]) -> bool:
    """Whether every claim of :data:`CRITERION` holds."""
    return all(found.get(c, False) for c in CRITERION)
