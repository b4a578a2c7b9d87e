"""Hypothesis strategy for tiny instances the brute force can still enumerate."""

from __future__ import annotations

from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData


def extensions() -> st.SearchStrategy[dict[str, float]]:
    """Extended-form fields of ``CostParams``: overlap, sharing (``h <= 4``), interleave,
    ring latency, a fixed latency per ring step (at most 2 * 15 * 5 ms = 0.15 s)."""
    sharing = st.sampled_from([(0.0, 0.0), (0.5, 0.0), (1.0, 0.0), (0.0, 1.0), (0.5, 0.5)])
    return st.builds(
        lambda q, sr, w, lam, lam0: {
            "overlap_exponent": q,
            "node_sharing": sr[0],
            "two_server_sharing": sr[1],
            "interleave": w,
            "ring_latency": lam,
            "intra_step_seconds": lam0,
        },
        st.sampled_from([1.0, 1.0, 2.0, 8.0]),
        sharing,
        st.sampled_from([0.0, 0.0, 0.5, 1.0]),
        st.sampled_from([0.0, 0.0, 1e-4]),
        st.sampled_from([0.0, 0.0, 0.005]),
    )


@st.composite
def tiny_instances(
    draw: st.DrawFn,
    min_jobs: int = 2,
    max_jobs: int = 4,
    max_servers: int = 3,
    extended: bool = False,
) -> ProblemData:
    """2 to 4 jobs on 2 to 3 servers of 1 to 3 GPUs; every job runs 1 to about 4 slots.

    Gradients are large enough that contention slows split jobs (rates fall
    from about 10 to 3 iterations per slot with the level), so the optimum
    often depends on contention and on splitting. ``extended``: the cost
    model's extended form (:func:`extensions`), gradients up to 50 MB.
    """
    caps = tuple(draw(st.lists(st.integers(1, 3), min_size=2, max_size=max_servers)))
    cost = CostParams(
        xi1=draw(st.sampled_from([1.0, 0.5])),
        xi2=0.01,
        alpha=draw(st.sampled_from([0.0, 0.275, 1.0])),
        slot_seconds=2.5,
        **(draw(extensions()) if extended else {}),
    )
    gradients = [0.0, 25.0, 50.0] if extended else [0.0, 50.0, 100.0, 200.0]
    cluster = Cluster(caps, bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    n = draw(st.integers(min_jobs, max_jobs))
    jobs = tuple(
        Job(
            id=f"j{k}",
            num_gpus=draw(st.integers(1, min(4, sum(caps)))),
            iterations=draw(st.integers(1, 24)),
            gradient_mb=draw(st.sampled_from(gradients)),
            compute_seconds=draw(st.sampled_from([0.2, 0.3])),
            arrival=draw(st.sampled_from([0, 0, 0, 1])),
        )
        for k in range(n)
    )
    return ProblemData(cluster, jobs, cost, name="tiny")


@st.composite
def trap_instances(draw: st.DrawFn, max_jobs: int = 4) -> ProblemData:
    """Small servers and many jobs that must split: the big-M trap of issue 11.

    3 servers of 1 or 2 GPUs and 3 to ``max_jobs`` jobs, most of 3 GPUs, so
    every such job splits and more jobs may split on a server than it has GPUs
    (the level row's big-M must cover every split job that can share the server
    while the row's own job is elsewhere). 8 to 24 iterations (2 to 6 slots
    alone) make running two split jobs side by side pay, and gradients of 50 to
    200 MB make contention slow them. With the old big-M (``min(O_s, jobs) - 1``)
    HiGHS was wrong on 9 of 40 such instances.
    """
    # hypothesis favours the first option of sampled_from: put the trap first
    caps = tuple(draw(st.lists(st.sampled_from([2, 2, 2, 1]), min_size=3, max_size=3)))
    cluster, cost = _contended(draw, caps)
    n = draw(st.integers(3, max_jobs))
    jobs = tuple(
        Job(
            id=f"j{k}",
            num_gpus=draw(st.sampled_from([3, 3, 3, 2])),
            iterations=draw(st.sampled_from([20, 8, 12, 16, 24])),
            gradient_mb=draw(st.sampled_from([200.0, 100.0, 50.0])),
            compute_seconds=draw(st.sampled_from([0.2, 0.3])),
        )
        for k in range(n)
    )
    return ProblemData(cluster, jobs, cost, name="trap")


def _contended(draw: st.DrawFn, caps: tuple[int, ...]) -> tuple[Cluster, CostParams]:
    """A cluster of ``caps`` and cost constants under which contention slows split jobs."""
    cost = CostParams(
        xi1=draw(st.sampled_from([1.0, 0.5])),
        xi2=0.01,
        alpha=draw(st.sampled_from([0.275, 0.0, 1.0])),
        slot_seconds=2.5,
    )
    cluster = Cluster(caps, bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0)
    return cluster, cost


@st.composite
def fragment_instances(draw: st.DrawFn) -> ProblemData:
    """Job sizes that leave GPUs of a server idle unless a job splits (issue 44 item 3).

    Two servers of 2 to 4 GPUs, 2 to 4 jobs mostly of sizes that leave remainders
    (3 on 4, 2 on 3) or must split (5, as far as the cluster holds it), with
    gradients large enough that splitting and contention cost time.
    """
    cluster, cost = _contended(
        draw, (draw(st.sampled_from([4, 2, 3])), draw(st.sampled_from([2, 4, 3])))
    )
    jobs = tuple(
        Job(
            id=f"j{k}",
            num_gpus=min(cluster.num_gpus, draw(st.sampled_from([3, 2, 3, 5, 1]))),
            iterations=draw(st.integers(4, 20)),
            gradient_mb=draw(st.sampled_from([100.0, 50.0, 200.0])),
            compute_seconds=draw(st.sampled_from([0.2, 0.3])),
            arrival=draw(st.sampled_from([0, 0, 0, 1])),
        )
        for k in range(draw(st.integers(2, 4)))
    )
    return ProblemData(cluster, jobs, cost, name="fragments")
