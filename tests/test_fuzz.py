"""Fuzz suite: every command on mutated and hostile inputs keeps the CLI's contract.

The contract (``tests/fuzz.py``): no traceback (and no internal error), no hang,
one error line (exit 2) for bad input, valid JSON on stdout with ``--json``.
Three parts:

- the corpus: the minimal cases of issue 14 (``tests/fuzz_corpus/manifest.json``),
  each with its expected exit status and message;
- hostile files: a FIFO, ``/dev/zero`` behind a symlink, a huge declared size;
- hypothesis-driven mutations of valid instance and schedule files through the
  fast commands (a few seconds), and a larger run over every command (``slow``).

Runs go through :func:`sjfbco.cli.main` in this process (fast), each under a
time limit. ``benchmarks/bench_fuzz.py`` runs thousands of mutated files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import fuzz
from tests.conftest import INSTANCES, ROOT, SHARED_DATA

if TYPE_CHECKING:
    import random

CORPUS = Path(__file__).resolve().parent / "fuzz_corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
EXAMPLE = INSTANCES / "small" / "example.json"
SCHEDULE = INSTANCES / "small" / "example-schedule.json"
PHILLY = SHARED_DATA / "philly" / "philly.csv"
#: Seconds any single run may take here before it counts as a hang.
LIMIT = 15.0


def _fill(arg: str, tmp: Path) -> str:
    return (
        arg.replace("{root}", str(ROOT))
        .replace("{corpus}", str(CORPUS))
        .replace("{tmp}", str(tmp))
        .replace("{philly}", str(PHILLY))
    )


def _assert_contract(o: fuzz.Outcome) -> None:
    assert fuzz.problems(o) == [], (o.argv, o.code, o.err)


@pytest.mark.parametrize("case", MANIFEST["cases"], ids=[c["name"] for c in MANIFEST["cases"]])
def test_corpus_case(case: dict[str, Any], tmp_path: Path) -> None:
    if "--resume" in case["argv"]:  # the torn result file, keyed by the instance as given
        torn = (CORPUS / "torn-results.csv").read_text()
        instance = os.path.normpath(_fill(case["argv"][1], tmp_path))
        (tmp_path / "r.csv").write_text(torn.replace("{instance}", instance))
    argv = [_fill(a, tmp_path) for a in case["argv"]]
    o = fuzz.run_cli(argv, LIMIT)
    _assert_contract(o)
    assert o.code == case["exit"], (argv, o.err)
    if "stderr" in case:
        assert case["stderr"] in o.err
    if "stdout" in case:
        assert case["stdout"] in o.out
    for path in case.get("absent", []):
        assert not Path(_fill(path, tmp_path)).exists(), path


def _readers(path: Path, tmp: Path) -> list[list[Any]]:
    """Every command reading ``path`` as an instance (and one reading it as a schedule)."""
    return [
        ["evaluate", path, SCHEDULE],
        ["evaluate", EXAMPLE, path],
        ["solve", path, "--json"],
        ["online", path],
        ["elastic", path],
        ["formulate", path, "--kind", "paper-ilp", "-o", tmp / "m.lp"],
        fuzz._plot(EXAMPLE, path, tmp / "g.png"),
    ]


def test_fifo_and_dev_zero_are_refused_by_every_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # reading it would block: the issue saw solve and batch hang forever
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")  # the size check saw 0 bytes; the read ate all memory
    for path in (fifo, zero):
        for argv in _readers(path, tmp_path):
            o = fuzz.run_cli(argv, LIMIT)
            _assert_contract(o)
            assert o.code == 2 and f"{path}: is not a regular file" in o.err, (argv, o.err)
    out = tmp_path / "r.csv"
    o = fuzz.run_cli(["batch", fifo, "--solvers", "ls", "-o", out, "-q"], LIMIT)
    assert not fuzz.problems(o) and fuzz.batch_row_problems(out) == []
    assert "is not a regular file" in out.read_text()


def test_a_huge_declared_size_is_refused_before_work(tmp_path: Path) -> None:
    # 100,000 jobs of 4,096 GPUs each (the issue: a MemoryError after 20 s at 3.5 GB)
    doc = json.loads(EXAMPLE.read_text())
    doc["cluster"]["gpus_per_server"] = [4096] * 100
    job = {"gpus": 4096, "iterations": 10, "gradient_mb": 1.0, "compute_seconds": 0.1}
    doc["jobs"] = [{"id": f"j{k}", **job} for k in range(100_000)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    o = fuzz.run_cli(["solve", path], LIMIT)
    _assert_contract(o)
    assert o.code == 2
    assert "409,600,000 GPUs asked for by all jobs together" in o.err
    assert "SJFBCO_MAX_JOB_GPUS=N" in o.err


def _mutant(rng: random.Random, base: fuzz.Base, tmp: Path) -> tuple[Path, Path, str]:
    """Write a mutation of the instance or of the schedule of ``base``; which one was mutated."""
    target = rng.choice(["instance", "instance", "schedule"])
    inst_doc, sched_doc = base.instance, base.schedule
    if target == "instance":
        inst_doc = fuzz.mutate_doc(inst_doc, rng, rng.choice([1, 2]))
    else:
        sched_doc = fuzz.mutate_doc(sched_doc, rng, rng.choice([1, 2]))
    inst, sched = tmp / "i.json", tmp / "s.json"
    fuzz.write_text(inst, fuzz.dumps(inst_doc, rng))
    fuzz.write_text(sched, fuzz.dumps(sched_doc, rng))
    if rng.random() < 0.1:
        path = inst if target == "instance" else sched
        fuzz.write_text(path, fuzz.mutate_text(path.read_text(errors="replace"), rng))
    return inst, sched, target


FAST = ("example", "must-split", "deadlock", "two-split-contention")


@pytest.fixture(scope="module")
def bases() -> list[fuzz.Base]:
    return fuzz.load_bases(ROOT)


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rng=st.randoms(use_true_random=False))
def test_mutated_files_through_the_fast_commands(
    rng: random.Random, bases: list[fuzz.Base], tmp_path: Path
) -> None:
    base = rng.choice([b for b in bases if b.name in FAST])
    inst, sched, target = _mutant(rng, base, tmp_path)
    runs = (
        fuzz.schedule_runs(inst, sched, tmp_path, rng)
        if target == "schedule"
        else [
            ["evaluate", inst, sched, "--json"],
            ["solve", inst, "--solver", rng.choice(["ls", "ff", "sjf-bco"]), "--json"],
            ["online", inst, "--json"],
            ["elastic", inst, "--policy", rng.choice(fuzz.ELASTIC_POLICIES), "--json"],
        ]
    )
    for argv in runs:
        if argv[0] == "plot":
            continue  # the slow run covers plot
        o, found = fuzz.run_case(argv, LIMIT)
        assert found == [], (argv, o.code, o.err)


@pytest.mark.slow
@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rng=st.randoms(use_true_random=False))
def test_mutated_files_through_every_reader(
    rng: random.Random, bases: list[fuzz.Base], tmp_path: Path
) -> None:
    base = rng.choice(bases)
    inst, sched, target = _mutant(rng, base, tmp_path)
    if target == "schedule":
        runs = fuzz.schedule_runs(inst, sched, tmp_path, rng)
    else:
        runs = fuzz.instance_runs(inst, sched, tmp_path, rng, k=3)
    if rng.random() < 0.05:
        runs.append(["batch", inst, "--solvers", "ls", "-o", tmp_path / "r.csv", "-q"])
    for argv in runs:
        o, found = fuzz.run_case(argv, 20.0)
        assert found == [], (argv, o.code, o.err)


def test_a_csv_field_above_the_csv_limit_names_file_and_line(tmp_path: Path) -> None:
    """Issue 33: a field over the csv module's 128 KiB limit was an internal error (exit 1)
    in convert philly, batch --resume and reproduce --replot; now exit 2 naming the line
    (calibrate said bad input but named no line)."""
    huge = "a" * 200_000
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n" + huge + "\n")
    results = tmp_path / "r.csv"
    results.write_text("instance,solver,seed\nx.json,ls,0\n" + f"x.json,ls,{huge}\n")
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "fig7.csv").write_text(huge + "\n")
    steps = tmp_path / "steps.csv"
    steps.write_text(f"placement,local_bsz,step_time\n1,8,0.1\n1,16,{huge}\n")
    runs = [
        (["calibrate", steps], f"{steps}: line 3: malformed CSV"),
        (["convert", "philly", trace, "-o", tmp_path / "cv"], f"{trace}: line 2: malformed CSV"),
        (
            ["batch", EXAMPLE, "--solvers", "ls", "-o", results, "--resume", "-q"],
            f"{results}: line 3: malformed CSV",
        ),
        (
            ["reproduce", "--figure", "7", "--replot", "-o", rep],
            f"{rep / 'fig7.csv'}: line 1: malformed CSV",
        ),
    ]
    for argv, message in runs:
        o = fuzz.run_cli(argv, LIMIT)
        _assert_contract(o)
        assert o.code == 2 and message in o.err, (argv, o.err)
    assert not (tmp_path / "cv").exists()


def test_replot_of_a_damaged_figure_table_names_file_line_and_column(tmp_path: Path) -> None:
    """reproduce --replot read its CSV with int()/float() and dict lookups: a missing column,
    a word for a number or a run without its utilisation were internal errors."""
    from sjfbco.experiments.reproduce import TIDY_COLUMNS

    rep = tmp_path / "rep"
    rep.mkdir()
    good = dict.fromkeys(TIDY_COLUMNS, "1") | {"figure": "7", "params": "{}", "error": ""}
    cases = [
        ("a,b\n1,2\n", "no column 'figure'"),
        (",".join(TIDY_COLUMNS) + "\n" + ",".join({**good, "seed": "x"}.values()) + "\n", "line 2"),
        (
            ",".join(TIDY_COLUMNS) + "\n" + ",".join({**good, "utilisation": ""}.values()) + "\n",
            "line 2: utilisation: empty beside a makespan",
        ),
    ]
    for text, message in cases:
        (rep / "fig7.csv").write_text(text)
        o = fuzz.run_cli(["reproduce", "--figure", "7", "--replot", "-o", rep], LIMIT)
        _assert_contract(o)
        assert o.code == 2 and f"{rep / 'fig7.csv'}: " in o.err and message in o.err, o.err


@pytest.mark.parametrize("shape", fuzz.SHAPES, ids=[f.__name__.strip("_") for f in fuzz.SHAPES])
def test_issue_33_shapes_through_every_instance_reader(
    shape: Any, bases: list[fuzz.Base], tmp_path: Path
) -> None:
    """No jobs, a horizon of 10^12 slots, one GPU: every command keeps the contract, and
    successful --json runs print nothing but warnings on stderr (HiGHS's banner did)."""
    import random

    rng = random.Random(0)
    base = next(b for b in bases if b.name == "example")
    inst = tmp_path / "i.json"
    inst.write_text(json.dumps(shape(base.instance, rng)))
    runs = [
        *_readers(inst, tmp_path),
        ["solve", inst, "--solver", "all", "--json"],
        ["solve", inst, "--solver", "best", "--time-limit", "1", "--json", "-q"],
        ["elastic", inst, "--policy", "knee", "--json"],
        ["formulate", inst, "--kind", "ilp", "-o", tmp_path / "m.lp", "--lp-bound", "--json"],
    ]
    out = tmp_path / "r.csv"
    fuzz.plant_symlink(out, rng)
    runs.append(["batch", inst, "--solvers", "list,best", "--time-limit", "1", "-o", out, "-q"])
    for argv in runs:
        o, found = fuzz.run_case(argv, LIMIT)
        assert found == [], (argv, o.code, o.err)


def test_the_checker_flags_accepted_repeated_keys_and_control_characters(
    tmp_path: Path,
) -> None:
    """``fuzz.hostile`` finds what every reader must refuse (issue 42), and a run that exits
    0 on such a file is a problem of its own."""
    import random

    assert fuzz.hostile(EXAMPLE.read_text()) == []
    assert fuzz.hostile((CORPUS / "repeated-key.json").read_text()) == ["duplicate key"]
    for name in ("bidi-id", "bom-id", "blank-id"):
        assert fuzz.hostile((CORPUS / f"{name}.json").read_text()) == ["control character"]
    assert fuzz.hostile('{"a": 1, "a": 2}') == []  # not an sjfbco file: not judged
    rng = random.Random(3)
    for _ in range(20):  # a repeated key is always one
        assert fuzz.hostile(fuzz.repeat_key(SCHEDULE.read_text(), rng)) == ["duplicate key"]
    ok = fuzz.Outcome(["solve", str(CORPUS / "repeated-key.json")], 0, "", "", 0.1)
    assert fuzz.accepted_hostile(ok) == ["accepted duplicate key"]
    refused = fuzz.Outcome(ok.argv, 2, "", "sjfbco: error: ...", 0.1)
    assert fuzz.accepted_hostile(refused) == []
    for name in ("repeated-key", "bidi-id", "bom-id", "blank-id", "repeated-key-schedule"):
        path = CORPUS / f"{name}.json"
        argv = ["evaluate", EXAMPLE, path] if "schedule" in name else ["solve", path]
        o, found = fuzz.run_case(argv, LIMIT)
        assert o.code == 2 and found == [], (name, o.err)
