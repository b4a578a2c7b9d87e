"""A Philly-derived online workload (Jeon et al., USENIX ATC 2019; CSV from Pollux).

:func:`philly_workload` turns a window of the trace into an instance with
arrivals, in a documented, seeded way:

- Window: jobs submitted in ``[start, start + hours)``; arrival slot =
  ``floor((submit - start) / slot_seconds)``.
- Dropped (counted in the returned stats): GPU counts that are not a power of
  two or exceed the cluster, durations that are missing, non-positive or
  longer than ``max_hours`` (the trace holds jobs of months that would
  dominate any window).
- ``max_jobs``: keep the first jobs by submit time (a smaller slice).
- Each job gets a DNN model drawn uniformly from
  :data:`sjfbco.workloads.models.MODELS` (``seed``) and ``F_j`` iterations so
  that, alone on its best placement, it runs its trace duration:
  ``F_j = max(1, round(duration / tau_j))`` with ``tau_j`` from eq. 8.
- Cluster: ``num_servers`` servers of ``gpus_per_server`` GPUs; cost constants
  the spec's preset (``b_inter`` 11,700 MB/s, ``b_intra`` 50,000 MB/s, ``C``
  20,000 MB/s, ``alpha`` 0.275, ``xi1`` 1, ``xi2`` 0.01 s) with a 60 s slot
  (the trace's times are minutes to hours).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from sjfbco.cost import best_iteration_time
from sjfbco.problem import Cluster, CostParams, Job, ProblemData
from sjfbco.workloads.models import MODELS

PHILLY_COST = CostParams(xi1=1.0, xi2=0.01, alpha=0.275, slot_seconds=60.0)


def philly_workload(path: str | Path, *, start: str = "2017-10-09", hours: float = 24.0,
                    num_servers: int = 16, gpus_per_server: int = 8,
                    max_hours: float = 24.0, max_jobs: int | None = None,
                    seed: int = 0) -> tuple[ProblemData, dict[str, Any]]:
    """Instance of the jobs submitted in a window of the Philly trace, and what was dropped."""
    import pandas as pd

    df = pd.read_csv(path)
    missing = {"timestamp", "duration", "num_gpus"} - set(df.columns)
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    ts = pd.to_datetime(df["timestamp"], errors="coerce")
    t0 = pd.Timestamp(start)
    window = df[(ts >= t0) & (ts < t0 + pd.Timedelta(hours=hours))].copy()
    window["submit"] = (ts[window.index] - t0).dt.total_seconds()
    window = window.sort_values(["submit"], kind="stable")
    cluster = Cluster((gpus_per_server,) * num_servers)
    g = window["num_gpus"]
    bad_gpus = ~((g >= 1) & (g <= cluster.num_gpus) & ((g.astype(int) & (g.astype(int) - 1)) == 0))
    dur = window["duration"]
    bad_dur = dur.isna() | (dur <= 0) | (dur > max_hours * 3600)
    stats: dict[str, Any] = {"in_window": len(window), "dropped_gpus": int(bad_gpus.sum()),
                             "dropped_duration": int((bad_dur & ~bad_gpus).sum())}
    keep = window[~bad_gpus & ~bad_dur]
    if max_jobs is not None:
        keep = keep.head(max_jobs)
    rng = np.random.default_rng(seed)
    cost = PHILLY_COST
    jobs = []
    for k, (submit, duration, gpus) in enumerate(
            zip(keep["submit"], keep["duration"], keep["num_gpus"], strict=True)):
        model = MODELS[int(rng.integers(len(MODELS)))]
        probe = Job(id=f"philly-{k}", gpus=int(gpus), iterations=1, **model.job_fields())
        tau = best_iteration_time(probe, cluster, cost)
        jobs.append(Job(id=probe.id, gpus=probe.gpus,
                        iterations=max(1, round(float(duration) / tau)),
                        arrival=int(math.floor(submit / cost.slot_seconds)),
                        **model.job_fields()))
    stats["jobs"] = len(jobs)
    name = f"philly-{start}-{hours:g}h"
    return ProblemData(cluster, tuple(jobs), cost, name=name), stats
