"""How far the exact backends go: proofs, bounds, wall time against the limit, peak memory.

Run: ``PYTHONPATH=. python benchmarks/bench_exact.py [--sizes 10 14 20 30] [--servers 4]
[--time-limit 60] [--backends cpsat highs cbc] [--seeds 0] [--paper | --long] [--quick]``, or
``--instances 14/4/0 20/3/3 ...`` (``jobs/servers/seed``: the instances of the before/after
table in docs/exact.md).

Instances are paper-like jobs scaled down (docs/model.md section 7): models from the
shared model table, sizes 1, 2, 4 or 6 GPUs (the paper's mix, capped; a 6 must split),
iterations scaled so that a job runs a few slots alone; servers of 4 GPUs; the paper
preset of constants (slot 4 s, b_inter 11,700 MB/s); ``--paper`` takes ``sjfbco generate
paper``'s instances instead (the paper's workload: servers of 4 to 32 GPUs, full-length
jobs). Each run is a separate process (its peak resident memory is measured alone) of
``solve(data, "exact", backend=..., time_limit=...)``. Prints per instance and backend:
status, wall seconds against the limit, peak memory, model size, horizon, makespan and
bound (with the relaxation's and the closed-form bound); then per backend the largest
instance proven. ``--quick`` runs 6 and 8 jobs with a 10 s limit. Note the machine's
load (printed) next to any figure you quote.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from typing import Any

from sjfbco import Cluster, CostParams, Job, ProblemData, solve
from sjfbco.bounds import lower_bound
from sjfbco.tables import format_table
from sjfbco.workloads.models import MODELS

#: GPU counts drawn per job: the paper's powers of two up to a server, and a 6 that must split.
SIZES = [1, 2, 2, 4, 4, 6]


def make_instance(
    n_jobs: int,
    n_servers: int,
    seed: int,
    *,
    sizes: list[int] = SIZES,
    iterations: tuple[int, int] = (80, 300),
    family: str = "",
) -> ProblemData:
    """Paper-like jobs on servers of 4 GPUs, models from the shared table: by default scaled
    down (each runs about 3 to 10 slots alone); ``family`` names another family and salts
    its random draws (:func:`make_long_instance`)."""
    salt = 7 if family else 0
    rng = random.Random(seed * 1000 + n_jobs * 10 + n_servers + salt)
    cluster = Cluster((4,) * n_servers)
    jobs = []
    for k in range(n_jobs):
        model = rng.choice(MODELS)
        jobs.append(
            Job(
                id=f"{model.name}-{k}",
                num_gpus=rng.choice(sizes),
                iterations=rng.randint(*iterations),
                **model.job_fields(),
            )
        )
    name = f"{family}{'-' if family else ''}n{n_jobs}-s{n_servers}"
    return ProblemData(cluster, tuple(jobs), CostParams(), name=name)


def make_long_instance(n_jobs: int, n_servers: int, seed: int) -> ProblemData:
    """Issue 31's random family: sizes 1/2/4/8 (an 8 must split on 4-GPU servers),
    400 to 1,800 iterations (tens of slots alone)."""
    return make_instance(
        n_jobs, n_servers, seed, sizes=[1, 2, 4, 8], iterations=(400, 1800), family="long"
    )


def instance(n: int, servers: int, seed: int, kind: str) -> ProblemData:
    """The benchmark's scaled-down instance (``scaled``), issue 31's family (``long``) or
    ``sjfbco generate paper``'s (``paper``)."""
    if kind == "paper":
        from sjfbco.workloads.paper import paper_instance

        return paper_instance(servers, seed, n)
    if kind == "long":
        return make_long_instance(n, servers, seed)
    return make_instance(n, servers, seed)


def one(
    n: int, servers: int, seed: int, backend: str, limit: float, kind: str = "scaled"
) -> dict[str, Any]:
    """One exact run in this process; its figures (peak memory of this process)."""
    data = instance(n, servers, seed, kind)
    t0 = time.perf_counter()
    try:
        res = solve(data, "exact", backend=backend, time_limit=limit)
    except ValueError as err:  # a refusal (model above the memory cap)
        return {"status": "refused", "note": str(err).split(": ", 1)[-1][:60]}
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    peak += resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024  # CBC
    st = res.stats
    return {
        "status": res.status.value,
        "wall_s": round(wall, 1),
        "over_s": round(max(0.0, wall - limit), 1),
        "peak_mb": peak,
        "vars": st.get("model_size", {}).get("variables"),
        "H": st.get("horizon"),
        "makespan": res.makespan,
        "bound": res.lower_bound,
        "relax": st.get("relaxation", st.get("relaxation_quick", {})).get("bound"),
        "closed": lower_bound(data),
        "from": st.get("bound_from"),
        "note": (st.get("note") or "")[:40],
    }


def parse_spec(spec: str) -> tuple[int, int, int]:
    """``"14/4/0"`` -> ``(14, 4, 0)``: jobs, servers, seed."""
    parts = spec.split("/")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"instance {spec!r}: expected jobs/servers/seed")
    n, servers, seed = (int(p) for p in parts)
    return n, servers, seed


def run(
    sizes: list[int],
    servers: int,
    limit: float,
    backends: list[str],
    seeds: list[int],
    kind: str = "scaled",
    instances: list[tuple[int, int, int]] | None = None,
):
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores")
    rows: list[dict[str, Any]] = []
    largest: dict[str, int] = {}
    if instances is None:
        instances = [(n, servers, seed) for n in sizes for seed in seeds]
    for n, servers, seed in instances:
        for backend in backends:
            cmd = [sys.executable, __file__, "--one", str(n), str(servers), str(seed)]
            cmd += [backend, str(limit), kind]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            lines = proc.stdout.strip().splitlines()
            got = (
                json.loads(lines[-1])
                if proc.returncode == 0 and lines
                else {"status": f"crashed ({proc.returncode})"}
            )
            row = {"jobs": n, "servers": servers, "seed": seed, "backend": backend}
            row.update(got)
            row["load"] = round(os.getloadavg()[0], 1)
            rows.append(row)
            if row["status"] == "optimal":
                largest[backend] = max(largest.get(backend, 0), n)
            print(format_table([row], list(row)).splitlines()[-1], flush=True)
    cols = ["jobs", "servers", "seed", "backend", "status", "wall_s", "over_s", "peak_mb"]
    cols += ["vars", "H", "makespan", "bound", "relax", "closed", "from", "note", "load"]
    print("\n" + format_table(rows, cols))
    shape = "paper's workload" if kind == "paper" else "4 GPUs each"
    print(f"\nLargest instance proven optimal within {limit:g} s ({shape}):")
    for b in backends:
        print(f"  {b:6s} {largest.get(b, 0)} jobs")
    over = [r for r in rows if isinstance(r.get("over_s"), float)]
    if over:
        worst = max(over, key=lambda r: r["over_s"])
        print(
            f"largest overrun of the limit: {worst['over_s']} s ({worst['backend']}, "
            f"{worst['jobs']} jobs); largest peak memory: "
            f"{max(r.get('peak_mb', 0) for r in over)} MB"
        )
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 14, 20, 30])
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--backends", nargs="+", default=["cpsat", "highs", "cbc"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument(
        "--instances",
        type=parse_spec,
        nargs="+",
        metavar="JOBS/SERVERS/SEED",
        help="these instances instead of --sizes x --seeds (e.g. 14/4/0 20/3/3)",
    )
    ap.add_argument("--quick", action="store_true", help="6 and 8 jobs, 10 s")
    ap.add_argument(
        "--paper",
        action="store_true",
        help="instances of `sjfbco generate paper --jobs N --servers S --seed K` instead",
    )
    ap.add_argument(
        "--long",
        action="store_true",
        help="issue 31's family: sizes 1/2/4/8 on 4-GPU servers, 400 to 1,800 iterations",
    )
    ap.add_argument(
        "--one",
        nargs=6,
        metavar=("N", "S", "SEED", "BACKEND", "LIMIT", "KIND"),
        help=argparse.SUPPRESS,
    )
    args = ap.parse_args(argv)
    if args.one:
        n, s, seed, backend, limit, kind = args.one
        row = one(int(n), int(s), int(seed), backend, float(limit), kind)
        print(json.dumps(row))
        return {"rows": [row]}
    if args.quick:
        args.sizes, args.time_limit = [6, 8], 10.0
    rows = run(
        args.sizes,
        args.servers,
        args.time_limit,
        args.backends,
        args.seeds,
        "paper" if args.paper else "long" if args.long else "scaled",
        args.instances,
    )
    return {"rows": rows}


if __name__ == "__main__":
    main()
