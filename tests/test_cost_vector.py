"""The vector form of the best iteration time against the scalar cost model it mirrors.

:func:`sjfbco.cost.best_iteration_times` serves the elastic model curves
(one call for every GPU count); every entry must equal
:func:`sjfbco.cost.best_iteration_time` of the job resized to that count,
bit for bit, on mixed clusters and with every extension of the model on.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job
from sjfbco.cost import best_iteration_time, best_iteration_times
from sjfbco.elastic.speedup import model_speedup, one_gpu_time
from sjfbco.workloads.paper import paper_instance

JOB = Job("j", num_gpus=1, iterations=10, gradient_mb=97.5, compute_seconds=0.31)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from([1, 2, 3, 4, 8, 16, 32]), min_size=1, max_size=12),
    st.sampled_from([0.0, 0.4]),
    st.sampled_from([0.0, 0.3]),
    st.sampled_from([1.0, 2.5]),
    st.sampled_from(["linear", "power"]),
    st.floats(0.0, 0.05),
    st.sampled_from([0.0, 0.9]),
    st.sampled_from([0.0, 0.0, 0.5]),
)
def test_every_count_equals_the_scalar_call(
    caps: list[int],
    node: float,
    two: float,
    overlap: float,
    degradation: str,
    xi2: float,
    interleave: float,
    intra: float,
) -> None:
    cluster = Cluster(tuple(caps), bandwidth_intra=100.0, bandwidth_inter=10.0, gpu_speed=50.0)
    cost = CostParams(
        xi1=0.7,
        xi2=xi2,
        alpha=0.5,
        slot_seconds=10.0,
        node_sharing=node,
        two_server_sharing=two,
        overlap_exponent=overlap,
        degradation=degradation,
        interleave=interleave,
        ring_latency=1e-3 * (interleave > 0),
        intra_sharing=intra,
        intra_step_seconds=3.4e-3 * (node > 0),
    )
    ks = np.arange(1, cluster.num_gpus + 1)
    vector = best_iteration_times(JOB, cluster, cost, ks)
    scalar = [best_iteration_time(replace(JOB, num_gpus=int(k)), cluster, cost) for k in ks]
    assert vector.tolist() == scalar  # exact: the same shapes, the same formula


def test_counts_outside_the_cluster_are_refused() -> None:
    cluster = Cluster((4, 4), bandwidth_intra=100.0, bandwidth_inter=10.0, gpu_speed=50.0)
    cost = CostParams(xi1=1.0, xi2=0.01, alpha=0.5, slot_seconds=10.0)
    with pytest.raises(ValueError, match="asks for 9 GPUs; the cluster has 8"):
        best_iteration_times(JOB, cluster, cost, [1, 9])
    with pytest.raises(ValueError, match="asks for 0 GPUs"):
        best_iteration_times(JOB, cluster, cost, [0, 2])


@pytest.mark.parametrize("sharing", [0.0, 0.4])
def test_model_curves_equal_the_scalar_construction(sharing: float) -> None:
    # the curve as model_speedup built it before the vector call: one scalar cost-model
    # call per GPU count, running maximum of k tau(1) / tau(k)
    data = paper_instance(5, 3, 12)
    data = replace(data, cost=replace(data.cost, node_sharing=sharing, two_server_sharing=sharing))
    for j, job in enumerate(data.jobs):
        t1 = one_gpu_time(job, data.cluster, data.cost, 1)
        vals, best = [], 0.0
        for k in range(1, data.cluster.num_gpus + 1):
            best = max(best, k * t1 / one_gpu_time(job, data.cluster, data.cost, k))
            vals.append(best)
        assert model_speedup(data, j).values == tuple(vals)
