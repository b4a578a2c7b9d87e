"""One ``sbatch`` script per job of a launch plan, and the plan folder that holds them.

A job becomes a batch script with its nodes (``--nodelist``, ``--nodes``), one
task per GPU (``--ntasks-per-node``) and its GPUs per node (``--gres=gpu:N``).
A job that holds different GPU counts on different servers is a heterogeneous
job: one ``#SBATCH hetjob`` component per GPU count (Slurm 22.05 allocates
each component with its own ``--gres``; ``srun --het-group=0,...,K-1`` then
starts one MPI world across them, see ``docs/slurm.md``, "Decisions").

What depends on the submission is *not* in the script: the predecessors'
Slurm ids (``--dependency=afterany:...``) and the absolute ``--begin`` are
passed on the ``sbatch`` command line by :func:`sjfbco.slurm.submit.submit`
(command-line options apply to every component of a heterogeneous job). The
scripts are then final files an operator can read, diff and submit by hand.

The folder (:func:`write_plan`) holds ``plan.json`` (:class:`SlurmPlan`,
format ``sjfbco-slurm-plan/1``), ``index.md`` (a table of the jobs) and the
scripts ``NNN-<id>.sbatch``. Writing a plan removes the scripts of an earlier
plan there, so the folder holds exactly one plan. Paths in the scripts are
relative to the folder: ``submit`` runs ``sbatch`` from it (the working
directory of every job), and the jobs write ``out/``.
"""

from __future__ import annotations

import re
import shlex
import string
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sjfbco.errors import InputError, check_text, short
from sjfbco.files import atomic_write_text, check_format, json_text, load_json, read_text
from sjfbco.launch import file_stems, safe_name, server_name

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sjfbco.launch import LaunchPlan
    from sjfbco.problem import ProblemData

PLAN_FORMAT = "sjfbco-slurm-plan/1"
#: The file names of a plan folder (scripts are ``NNN-<id>.sbatch``).
PLAN_FILE, INDEX_FILE, SCRIPT_SUFFIX = "plan.json", "index.md", ".sbatch"
TIMER_SUFFIX = ".begin" + SCRIPT_SUFFIX
#: Where the jobs write: Slurm's output files and the worker's run folders (relative).
OUT_DIR = "out"
#: The testbed's MPI worker (run as a script; located, not imported: ``sjfbco.slurm`` sits
#: below ``sjfbco.testbed``).
WORKER = Path(__file__).resolve().parent.parent / "testbed" / "worker.py"
#: The default ``--command``: the testbed's worker, one MPI rank per GPU, started by ``srun``
#: with PMI-2 (also across the components of a heterogeneous job, where ``mpiexec -launcher
#: slurm`` fails), MPICH's ring all-reduce as on the testbed. ``go`` exists before the ranks
#: start, so the worker runs as soon as its ranks are connected.
DEFAULT_COMMAND = (
    "mkdir -p {dir} && touch {dir}/go && "
    "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=ring MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM=tsp_ring "
    "OMP_NUM_THREADS=1 {srun} {worker_cmd}"
)
#: The fields a ``--command`` template may use (``docs/slurm.md``).
FIELDS: dict[str, str] = {
    "job": "the sjfbco job id",
    "name": "the Slurm job name",
    "hosts": "the job's nodes, comma-separated",
    "nodes": "the number of nodes",
    "ranks": "the number of ranks (GPUs)",
    "srun": "'srun --mpi=pmi2' (with --het-group=0,...,K-1 for a heterogeneous job)",
    "python": "this Python",
    "worker": "the testbed's MPI worker script",
    "worker_cmd": "the worker with the job's arguments: {python} {worker} --mb ... --dir {dir}",
    "mb": "gradient size, MB",
    "iterations": "iterations",
    "compute": "compute phase per iteration, s",
    "dir": "the job's run folder, out/NNN-<id> (relative to the plan folder)",
}
#: --begin: "needed" where the plan's earliest start holds a job back (no predecessor
#: ends later in the prediction); "always" for every job whose earliest start is after 0.
BEGIN_MODES = ("needed", "always")
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_KEY = re.compile(r"s?(\d+)")


@dataclass(frozen=True)
class Component:
    """Nodes holding the same number of the job's GPUs: one (het) component of its script."""

    hosts: tuple[str, ...]
    gpus_per_node: int


@dataclass(frozen=True)
class SlurmJob:
    """One job as Slurm runs it.

    Attributes
    ----------
    id, name, script
        The sjfbco job id, the Slurm job name, the script's file name.
    components
        One per distinct GPU count per node; more than one: a heterogeneous job.
    after
        Ids of the jobs that must have ended first (``--dependency=afterany``).
    begin_s
        Earliest start, seconds after the plan's start (``--begin``), or None.
    start, end
        The evaluator's predicted start and end, slots.
    """

    id: str
    name: str
    script: str
    components: tuple[Component, ...]
    after: tuple[str, ...]
    begin_s: float | None
    start: float
    end: float

    @property
    def placement(self) -> dict[str, int]:
        """GPUs per node, by node name."""
        return {h: c.gpus_per_node for c in self.components for h in c.hosts}

    @property
    def timer(self) -> str | None:
        """The timer script of a heterogeneous job with an earliest start, else None.

        Slurm 22.05 left heterogeneous jobs with their own ``--begin`` pending
        30 to 83 s past it on an idle cluster (plain jobs started on time), so
        such a job depends on a one-task timer job that carries the ``--begin``
        instead (``docs/slurm.md``, "Decisions").
        """
        if self.begin_s is None or len(self.components) < 2:
            return None
        return self.script.removesuffix(SCRIPT_SUFFIX) + TIMER_SUFFIX


@dataclass(frozen=True)
class SlurmPlan:
    """The jobs of a launch plan as Slurm scripts, in launch order."""

    instance: str
    slot_seconds: float
    hosts: tuple[str, ...]
    jobs: tuple[SlurmJob, ...]

    @property
    def makespan(self) -> float:
        """The predicted makespan, slots."""
        return max((j.end for j in self.jobs), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": PLAN_FORMAT,
            "instance": self.instance,
            "slot_seconds": self.slot_seconds,
            "hosts": list(self.hosts),
            "jobs": [
                {
                    "id": j.id,
                    "name": j.name,
                    "script": j.script,
                    "components": [
                        {"hosts": list(c.hosts), "gpus_per_node": c.gpus_per_node}
                        for c in j.components
                    ],
                    "after": list(j.after),
                    "begin_s": j.begin_s,
                    "start": j.start,
                    "end": j.end,
                }
                for j in self.jobs
            ],
        }

    @classmethod
    def from_dict(cls, doc: Any) -> SlurmPlan:
        """Parse an ``sjfbco-slurm-plan/1`` document; :class:`InputError` names the field."""
        check_format(doc, PLAN_FORMAT)
        try:
            jobs = tuple(
                SlurmJob(
                    id=str(e["id"]),
                    name=str(e["name"]),
                    script=str(e["script"]),
                    components=tuple(
                        Component(tuple(str(h) for h in c["hosts"]), int(c["gpus_per_node"]))
                        for c in e["components"]
                    ),
                    after=tuple(str(a) for a in e["after"]),
                    begin_s=None if e["begin_s"] is None else float(e["begin_s"]),
                    start=float(e["start"]),
                    end=float(e["end"]),
                )
                for e in doc["jobs"]
            )
            plan = cls(
                instance=str(doc.get("instance", "")),
                slot_seconds=float(doc["slot_seconds"]),
                hosts=tuple(str(h) for h in doc["hosts"]),
                jobs=jobs,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"malformed plan ({type(exc).__name__}: {exc})", where="jobs"
            ) from None
        ids = [j.id for j in jobs]
        for k, j in enumerate(jobs):
            unknown = [a for a in j.after if a not in ids[:k]]
            if unknown:
                raise InputError(
                    f"job {short(j.id)} waits for {short(unknown[0])}, not an earlier job",
                    where="jobs",
                )
        return plan


def host_map(spec: str | None, num_servers: int) -> tuple[str, ...]:
    """Node names of servers ``0 .. num_servers-1``, from ``--hosts``.

    ``spec`` is None (``s0, s1, ...``), an inline map ``s0=node017,s1=node018``
    (keys ``sK`` or ``K``), or a file: lines ``sK=NAME`` or bare ``NAME`` (line k
    = server k; ``:slots`` and ``#`` comments ignored, as in a hostfile). Every
    server needs exactly one name, and names differ; an :class:`InputError`
    names ``--hosts`` (or the file and line) otherwise.
    """
    if spec is None:
        return tuple(server_name(s) for s in range(num_servers))
    if not Path(spec).is_file():
        if "=" not in spec:
            raise InputError(
                f"{short(spec)} is neither a file nor SERVER=NAME pairs (e.g. "
                "s0=node017,s1=node018)",
                where="--hosts",
            )
        return _complete(_pairs(spec.split(","), "--hosts", None), num_servers, "--hosts")
    lines = read_text(spec).splitlines()
    entries = [(n, ln.split("#")[0].strip()) for n, ln in enumerate(lines, 1)]
    entries = [(n, e) for n, e in entries if e]
    if any("=" in e for _, e in entries):
        where = [f"line {n}" for n, _ in entries]
        return _complete(_pairs([e for _, e in entries], spec, where), num_servers, spec)
    names = {k: (e.split(":")[0].strip(), f"line {n}") for k, (n, e) in enumerate(entries)}
    return _complete(names, num_servers, spec)


def _pairs(items: list[str], source: str, where: list[str] | None) -> dict[int, tuple[str, str]]:
    out: dict[int, tuple[str, str]] = {}
    for k, item in enumerate(items):
        at = where[k] if where else f"entry {k + 1}"
        key, eq, name = (p.strip() for p in item.partition("="))
        m = _KEY.fullmatch(key)
        if not eq or m is None:
            raise InputError(
                f"{short(item)} is not SERVER=NAME (e.g. s0=node017)", source=source, where=at
            )
        if int(m.group(1)) in out:
            raise InputError(f"server {key} is mapped twice", source=source, where=at)
        out[int(m.group(1))] = (name, at)
    return out


def _complete(names: dict[int, tuple[str, str]], num_servers: int, source: str) -> tuple[str, ...]:
    for k, (name, at) in names.items():
        if k >= num_servers:
            raise InputError(
                f"server s{k} is not in the instance (servers s0 to s{num_servers - 1})",
                source=source,
                where=at,
            )
        if not _HOST.fullmatch(name):
            raise InputError(
                f"{short(name)} is not a node name (letters, digits, '_', '.', '-')",
                source=source,
                where=at,
            )
    missing = [k for k in range(num_servers) if k not in names]
    if missing:
        raise InputError(f"no node name for server s{missing[0]}", source=source)
    hosts = tuple(names[k][0] for k in range(num_servers))
    twice = sorted({h for h in hosts if hosts.count(h) > 1})
    if twice:
        raise InputError(f"node {twice[0]!r} is given to two servers", source=source)
    return hosts


def slurm_plan(plan: LaunchPlan, hosts: tuple[str, ...], begin: str = "needed") -> SlurmPlan:
    """The Slurm jobs of ``plan``, with node names ``hosts[server]`` (see :func:`host_map`)."""
    if begin not in BEGIN_MODES:
        raise InputError(f"must be one of {', '.join(BEGIN_MODES)}, got {begin!r}", where="--begin")
    ends = {j.id: j.end for j in plan.jobs}
    out = []
    for stem, lj in zip(file_stems(plan), plan.jobs, strict=True):
        by_count: dict[int, list[str]] = {}
        for server, gpus in lj.hosts:  # by server: component order = first server's order
            by_count.setdefault(gpus, []).append(hosts[server])
        held_back = lj.not_before > max((ends[a] for a in lj.after), default=0.0) + 1e-9
        wanted = lj.not_before > 0 and (begin == "always" or held_back)
        out.append(
            SlurmJob(
                id=lj.id,
                name=safe_name(lj.id),
                script=stem + SCRIPT_SUFFIX,
                components=tuple(Component(tuple(h), n) for n, h in by_count.items()),
                after=lj.after,
                begin_s=lj.not_before * plan.slot_seconds if wanted else None,
                start=lj.start,
                end=lj.end,
            )
        )
    return SlurmPlan(plan.instance, plan.slot_seconds, hosts, tuple(out))


def check_command(template: str) -> str:
    """``template`` if every ``{field}`` is one of :data:`FIELDS`, else an :class:`InputError`."""
    check_text(template, "--command")
    try:
        parts = [(f, s, c) for _, f, s, c in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise InputError(
            f"{exc} (write a literal brace as {{{{ or }}}})", where="--command"
        ) from None
    for f, spec, conversion in parts:
        if f not in FIELDS:
            raise InputError(
                f"unknown field {{{f}}}; known: {', '.join('{' + k + '}' for k in FIELDS)}",
                where="--command",
            )
        if spec or conversion:
            raise InputError(
                f"field {{{f}}} takes no format or conversion (its value is shell text)",
                where="--command",
            )
    return template


def command_line(job: SlurmJob, data: ProblemData, template: str, run_dir: str) -> str:
    """``template`` filled in for ``job`` (values shell-quoted where they need it)."""
    spec = data.jobs[data.job_index[job.id]]
    q = shlex.quote
    python, worker = q(sys.executable), q(str(WORKER))
    args = (
        f"--mb {spec.gradient_mb!r} --iterations {spec.iterations} "
        f"--compute {spec.compute!r} --dir {q(run_dir)}"
    )
    het = len(job.components) > 1
    groups = ",".join(str(k) for k in range(len(job.components)))
    values = {
        "job": q(job.id),
        "name": q(job.name),
        "hosts": q(",".join(job.placement)),
        "nodes": str(len(job.placement)),
        "ranks": str(sum(job.placement.values())),
        "srun": "srun --mpi=pmi2" + (f" --het-group={groups}" if het else ""),
        "python": python,
        "worker": worker,
        "worker_cmd": f"{python} {worker} {args}",
        "mb": repr(spec.gradient_mb),
        "iterations": str(spec.iterations),
        "compute": repr(spec.compute),
        "dir": q(run_dir),
    }
    return template.format(**values)


def script_text(
    job: SlurmJob, k: int, plan: SlurmPlan, data: ProblemData, template: str, env: Mapping[str, str]
) -> str:
    """The batch script of ``job`` (the ``k``-th in launch order)."""
    stem = job.script.removesuffix(SCRIPT_SUFFIX)
    sec = plan.slot_seconds
    lines = [
        "#!/bin/sh",
        f"# sjfbco job {job.id!r}, {k + 1} of {len(plan.jobs)} in launch order, instance "
        f"{plan.instance!r}",
        "# planned on "
        + ", ".join(f"{h}:{n}" for h, n in job.placement.items())
        + f"; after: {', '.join(job.after) or '(none)'}"
        + (f"; not before {job.begin_s:g} s" if job.begin_s is not None else ""),
        f"# predicted start {job.start * sec:.2f} s, end {job.end * sec:.2f} s",
        "# sjfbco slurm submit adds --dependency and --begin on the sbatch command line",
        f"#SBATCH --job-name={job.name}",
        f"#SBATCH --output={OUT_DIR}/{stem}.%j.out",
    ]
    for c, comp in enumerate(job.components):
        if c:
            lines.append("#SBATCH hetjob")
        lines += [
            f"#SBATCH --nodelist={','.join(comp.hosts)}",
            f"#SBATCH --nodes={len(comp.hosts)}",
            f"#SBATCH --ntasks-per-node={comp.gpus_per_node}",
            f"#SBATCH --gres=gpu:{comp.gpus_per_node}",
        ]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines.append(command_line(job, data, template, f"{OUT_DIR}/{stem}"))
    return "\n".join(lines) + "\n"


def timer_text(job: SlurmJob) -> str:
    """The timer script of ``job`` (see :attr:`SlurmJob.timer`)."""
    return (
        "#!/bin/sh\n"
        f"# sjfbco: the earliest start of job {job.id!r} ({job.script}), a heterogeneous job\n"
        "# that depends on this one-task job; sjfbco slurm submit gives it the --begin\n"
        f"#SBATCH --job-name={job.name}.begin\n"
        "#SBATCH --output=/dev/null\n"
        "#SBATCH --ntasks=1\n"
        "true\n"
    )


def index_text(plan: SlurmPlan) -> str:
    """``index.md``: one row per job in launch order."""
    sec = plan.slot_seconds
    rows = [
        "| order | job | Slurm name | script | nodes (GPUs) | after | begin, s "
        "| predicted start-end, s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k, j in enumerate(plan.jobs):
        nodes = " ".join(f"{h}:{n}" for h, n in j.placement.items())
        het = f" (hetjob, {len(j.components)} components)" if len(j.components) > 1 else ""
        het += f"; --begin on {j.timer}" if j.timer else ""
        rows.append(
            f"| {k + 1} | {j.id} | {j.name} | {j.script} | {nodes}{het} | "
            f"{' '.join(j.after) or '-'} | {'-' if j.begin_s is None else f'{j.begin_s:g}'} | "
            f"{j.start * sec:.2f}-{j.end * sec:.2f} |"
        )
    return (
        f"# Slurm plan of {plan.instance or 'an instance'}\n\n"
        f"{len(plan.jobs)} jobs; nodes {', '.join(plan.hosts)}; one slot is {sec:g} s.\n"
        "Submit with `sjfbco slurm submit DIR` (from any folder): it runs `sbatch` in this "
        "folder, in this order, with `--dependency=afterany:<Slurm ids of 'after'>` and "
        "`--begin=<plan start + begin>` on the command line (for a heterogeneous job, on its "
        "timer `NNN-<id>.begin.sbatch`, which it depends on). See docs/slurm.md.\n\n"
        + "\n".join(rows)
        + "\n"
    )


def write_plan(
    plan: LaunchPlan,
    data: ProblemData,
    folder: str | Path,
    *,
    hosts: tuple[str, ...] | None = None,
    command: str | None = None,
    env: Mapping[str, str] | None = None,
    begin: str = "needed",
) -> SlurmPlan:
    """Write the scripts, ``index.md`` and ``plan.json`` of ``plan`` into ``folder``.

    Every file is written atomically; scripts of an earlier plan in ``folder``
    (``*.sbatch`` not in this plan) are removed after the new ones are written.
    ``hosts``: node names by server (default ``s0, s1, ...``); ``command``: a
    template over :data:`FIELDS` (default :data:`DEFAULT_COMMAND`); ``env``:
    variables each script exports before it.
    """
    names = hosts or host_map(None, data.cluster.num_servers)
    if len(names) != data.cluster.num_servers:
        raise InputError(
            f"{len(names)} node names for {data.cluster.num_servers} servers", where="--hosts"
        )
    template = check_command(command if command is not None else DEFAULT_COMMAND)
    for key in env or {}:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise InputError(f"{short(key)} is not a variable name", where="--env")
    splan = slurm_plan(plan, names, begin)
    root = Path(folder)
    keep = set()
    for k, job in enumerate(splan.jobs):
        atomic_write_text(root / job.script, script_text(job, k, splan, data, template, env or {}))
        keep.add(job.script)
        if job.timer is not None:
            atomic_write_text(root / job.timer, timer_text(job))
            keep.add(job.timer)
    for old in root.glob("*" + SCRIPT_SUFFIX):
        if old.name not in keep:
            old.unlink()
    atomic_write_text(root / INDEX_FILE, index_text(splan))
    atomic_write_text(root / PLAN_FILE, json_text(splan.to_dict()))
    return splan


def read_plan(folder: str | Path) -> SlurmPlan:
    """The :class:`SlurmPlan` of a plan folder; every script must be there."""
    path = Path(folder) / PLAN_FILE
    try:
        plan = SlurmPlan.from_dict(load_json(path))
    except InputError as err:
        raise err.located(str(path)) from None
    for j in plan.jobs:
        for name in (j.script, j.timer):
            if name is not None and not (Path(folder) / name).is_file():
                raise InputError(f"script {name} of job {short(j.id)} is missing", source=str(path))
    return plan
