"""Shared fixtures and hypothesis strategies."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from sjfbco import Cluster, CostParams, Job, ProblemData, Schedule
from sjfbco.testbed.runs import TAG_VARIABLE, host_lock, own_runs, remove
from tests.tiny import extensions

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ROOT / "instances"
#: The benchmarks' stored measurements and presets (``benchmarks/results``).
RESULTS = ROOT / "benchmarks" / "results"
SHARED_DATA = ROOT.parent / "shared" / "data"

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else "default")


def example_doc(**changes: Any) -> dict[str, Any]:
    """``instances/small/example.json`` as a document, ``changes`` applied at dotted paths
    (``example_doc(**{"jobs.4.gpus": 2})``; a number is a list index)."""
    doc = json.loads((INSTANCES / "small" / "example.json").read_text())
    for path, value in changes.items():
        *parts, last = path.split(".")
        node: Any = doc
        for part in parts:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value
    return doc


def example_split_schedule() -> Schedule:
    """A schedule for ``instances/small/example.json``, by hand: resnet50-0 on server 0 (4
    GPUs), alexnet-0 on server 1 (8), vgg16-0 split 2 + 4, lstm-0 split 1 + 1 (GPUs 0:2 and
    1:4), googlenet-0 on server 1 alone."""
    return Schedule.build(
        [
            [(0, 0), (0, 1), (0, 2), (0, 3)],
            [(1, i) for i in range(8)],
            [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (1, 3)],
            [(0, 2), (1, 4)],
            [(1, 5)],
        ]
    )


@pytest.fixture
def example_path() -> Path:
    return INSTANCES / "small" / "example.json"


@st.composite
def instances(
    draw: st.DrawFn,
    max_servers: int = 4,
    max_gpus: int = 4,
    max_jobs: int = 6,
    time_model: str | None = None,
    max_iterations: int = 40,
    extended: bool = False,
) -> ProblemData:
    """Tiny random instances whose tau stays <= 1 slot under any contention.

    ``extended``: the cost model's extended form (``tests.tiny.extensions``) with
    gradients of at most 25 MB, so that tau still stays within one slot.
    """
    caps = draw(st.lists(st.integers(1, max_gpus), min_size=1, max_size=max_servers))
    n_gpus = sum(caps)
    cost = CostParams(
        xi1=draw(st.sampled_from([1.0, 0.5, 0.3])),
        xi2=draw(st.sampled_from([0.0, 0.01, 0.05])),
        alpha=draw(st.sampled_from([0.0, 0.275, 1.0])),
        slot_seconds=2.5,
        time_model=time_model or draw(st.sampled_from(["slotted", "continuous"])),
        **(draw(extensions()) if extended else {}),
    )
    gradients = [0.0, 10.0, 25.0] if extended else [0.0, 10.0, 50.0, 100.0]
    cluster = Cluster(
        tuple(caps), bandwidth_intra=5000.0, bandwidth_inter=1000.0, gpu_speed=20000.0
    )
    n_jobs = draw(st.integers(1, max_jobs))
    jobs = tuple(
        Job(
            id=f"j{k}",
            num_gpus=draw(st.integers(1, n_gpus)),
            iterations=draw(st.integers(1, max_iterations)),
            gradient_mb=draw(st.sampled_from(gradients)),
            compute_seconds=draw(st.sampled_from([0.05, 0.2, 0.5])),
            arrival=draw(st.sampled_from([0, 0, 0, 1, 3])),
        )
        for k in range(n_jobs)
    )
    return ProblemData(cluster, jobs, cost, name="random")


@st.composite
def schedules(draw: st.DrawFn, data: ProblemData, max_start: int = 6) -> Schedule:
    """Random GPU sets, planned starts and (sometimes) ranks for ``data``."""
    cl = data.cluster
    all_gpus = [cl.gpu_pair(g) for g in range(cl.num_gpus)]
    gpus = []
    for job in data.jobs:
        perm = draw(st.permutations(all_gpus))
        gpus.append(tuple(perm[: job.num_gpus]))
    start = [draw(st.integers(0, max_start)) for _ in data.jobs]
    order = None
    if draw(st.booleans()):
        order = draw(st.permutations(range(data.num_jobs)))
    return Schedule.build(gpus, start, order)


@st.composite
def instance_and_schedule(draw: st.DrawFn, **kw: object) -> tuple[ProblemData, Schedule]:
    data = draw(instances(**kw))  # type: ignore[arg-type]
    return data, draw(schedules(data))


@pytest.fixture(scope="module")
def toy_solvers() -> Iterator[None]:
    """Register the toy solvers of ``tests/batch_plugin.py`` for one module only (other tests
    iterate over SOLVERS); modules take it with ``pytest.mark.usefixtures("toy_solvers")``."""
    from sjfbco.solvers import SOLVERS
    from tests import batch_plugin

    yield
    for name in batch_plugin.NAMES:
        SOLVERS.pop(name, None)
    sys.modules.pop("tests.batch_plugin", None)


@pytest.fixture
def own_tag(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A testbed test's own tag (``SJFBCO_TESTBED_TAG``, inherited by the CLI processes it
    starts), the host-wide testbed lock held; afterwards no run of the tag may be left
    (whatever is left is removed, so a failure does not spill into later tests). Another
    suite's or a live measurement's runs are never looked at."""
    tag = f"pytest-{os.getpid()}-{secrets.token_hex(4)}"
    monkeypatch.setenv(TAG_VARIABLE, tag)
    with host_lock():
        yield tag
        left = own_runs(tag)
        for info in left:
            remove(info)
    assert not left, f"the test left runs behind: {[r.describe() for r in left]}"


def cli_process(*args: str) -> subprocess.Popen[str]:
    """``python -m sjfbco ARGS`` from this checkout, in a session of its own (a test may
    signal its whole process group)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "sjfbco", *args], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
    )  # fmt: skip


def fresh_python(code: str, *args: str) -> str:
    """The standard output of ``python -c CODE ARGS`` in a fresh interpreter from this
    checkout (nothing imported yet: what a first import costs, or whether one happens)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


#: What a fresh process has imported of the libraries whose first import nothing can
#: interrupt (``sjfbco.clock.CP_SAT_IMPORT_S``): appended to a probe, prints one JSON line.
LOADED_PROBE = """
print(json.dumps({m: m in sys.modules for m in ("ortools.sat.python.cp_model", "scipy.optimize")}))
"""


def processes() -> Iterator[tuple[int, list[str]]]:
    """Every process this one can read in ``/proc``: its id and the fields of its ``stat``
    after the command name (``[0]`` state, ``[1]`` parent, ``[2]`` process group, ...)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:  # gone meanwhile
                continue
            yield int(entry), stat.rsplit(")", 1)[1].split()
