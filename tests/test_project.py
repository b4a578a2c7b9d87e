"""The project's own files: licence, citation, the data page, benchmarks' data options."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

import sjfbco
from tests.conftest import ROOT, SHARED_DATA

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
PYPROJECT_TOOL = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]


def test_license_file_is_the_mit_licence_pyproject_declares() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert PYPROJECT["license"] == "MIT"  # an SPDX expression (PEP 639)
    assert PYPROJECT["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in PYPROJECT["classifiers"])  # PEP 639
    assert text.startswith("MIT License\n")
    assert "Permission is hereby granted, free of charge" in text


def test_citation_file_cites_the_paper_and_this_version() -> None:
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    assert cff["version"] == PYPROJECT["version"] == sjfbco.__version__
    assert cff["license"] == "MIT"
    paper = cff["preferred-citation"]
    assert [a["family-names"] for a in paper["authors"]] == ["Yu", "Ji", "Rajan", "Liu"]
    assert paper["year"] == 2022 and "MobiHoc" in paper["collection-title"]
    assert {"type": "other", "value": "arXiv:2207.07817"} in paper["identifiers"]
    assert paper["title"].startswith("On Scheduling Ring-All-Reduce Learning Jobs")


def test_data_page_covers_every_bundled_and_shared_data_set() -> None:
    page = (ROOT / "docs" / "data.md").read_text()
    for folder in sorted(p for p in (ROOT / "instances").iterdir() if p.is_dir()):
        assert f"`{folder.name}/`" in page, f"docs/data.md says nothing of instances/{folder.name}"
    if SHARED_DATA.is_dir():
        for folder in sorted(p for p in SHARED_DATA.iterdir() if p.is_dir()):
            assert f"`{folder.name}/" in page, f"docs/data.md says nothing of {folder.name}"
    for needle in ("CC BY 4.0", "Apache-2.0", "Jeon", "ATC 2019", "Pollux", "sha256sum"):
        assert needle in page


def test_data_page_checksums_match_the_shared_files() -> None:
    """The SHA-256 sums docs/data.md prints are those of the files the tests read."""
    import hashlib

    page = (ROOT / "docs" / "data.md").read_text()
    files = sorted(SHARED_DATA.glob("*/*.csv")) if SHARED_DATA.is_dir() else []
    if not files:
        pytest.skip("../shared/data is absent")
    for path in files:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert digest in page, f"docs/data.md lacks the checksum of {path.name}"


def _reads_data(path: Path) -> bool:
    text = path.read_text()
    return bool(re.search(r"philly_workload|read_philly|SHARED_DATA|shared/data|pollux", text))


DATA_BENCHMARKS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if _reads_data(p))


def test_benchmarks_take_data_paths_from_one_place() -> None:
    assert {p.name for p in DATA_BENCHMARKS} >= {"bench_online.py", "bench_elastic.py"}
    for path in DATA_BENCHMARKS:
        if path.name == "datasets.py":
            continue
        text = path.read_text()
        assert "tests.conftest" not in text, f"{path.name} reads the data path of the tests"
        has_option = "add_trace_option" in text or "add_pollux_option" in text
        assert has_option and "require(" in text, path.name


@pytest.mark.parametrize(
    "script", [p for p in DATA_BENCHMARKS if p.name != "datasets.py"], ids=lambda p: p.name
)
def test_benchmark_without_its_data_says_where_to_get_it(script: Path) -> None:
    option = "--pollux" if "add_pollux_option" in script.read_text() else "--trace"
    missing = ROOT / "no-such-folder" / ("pollux" if option == "--pollux" else "philly.csv")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(script), option, str(missing)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(missing) in lines[0] and "docs/data.md" in lines[0] and option in lines[0]


def test_install_hints_work_from_a_checkout_and_from_pip() -> None:
    """An extra's install hint works both ways a user has sjfbco: from its checkout
    (pip install -e '.[dist]') and from a plain pip install in any folder (pip install
    'sjfbco[dist]'); issue 42: the missing-MPI hint gave only the checkout's form. The
    fit is lab code of a checkout (benchmarks/lab), so its hint gives the checkout's form."""
    from benchmarks.lab.fit import OPTUNA_MISSING
    from sjfbco import batch

    texts = [*(ROOT / "sjfbco").rglob("*.py")]
    for path in texts:
        text = path.read_text()
        for extra in re.findall(r"pip install -e ['\"]?\.\[(\w+)\]", text):
            assert f"pip install 'sjfbco[{extra}]'" in text, (path, extra)
    hint = batch.DASK_MISSING
    assert "pip install 'sjfbco[dist]'" in hint and "pip install -e '.[dist]'" in hint
    assert "pip install -e '.[fit]'" in OPTUNA_MISSING and "sjfbco[fit]" not in OPTUNA_MISSING
    net = (ROOT / "sjfbco" / "testbed" / "net.py").read_text()
    assert net.count("pip install 'sjfbco[testbed]'") == 2  # mpiexec and mpi4py missing


def test_bundled_instances_ship_in_the_package_and_resolve_by_name() -> None:
    from importlib.resources import files

    from sjfbco import datasets

    # sjfbco/instances is what the wheel ships (a link to instances/ in a clone)
    assert (ROOT / "sjfbco" / "instances").resolve() == (ROOT / "instances").resolve()
    assert datasets.root() == Path(str(files("sjfbco") / "instances"))
    assert datasets.path("paper-s20-seed0") == datasets.root() / "paper" / "paper-s20-seed0.json"
    assert datasets.path("bench/paper-s10-seed0").parent == datasets.bench_dir()
    assert "small/example" in datasets.names() and "small/example-schedule" not in datasets.names()
    assert sjfbco.read_instance("paper-s20-seed0").num_jobs == 160
    patterns = PYPROJECT_TOOL["setuptools"]["package-data"]["sjfbco"]
    shipped = {p.relative_to(ROOT / "instances") for p in (ROOT / "instances").rglob("*")}
    wanted = {
        p
        for p in shipped
        if p.suffix in (".json", ".csv", ".md")
        and any(p.match(g.removeprefix("instances/")) for g in patterns)
    }
    data_files = {p for p in shipped if p.suffix in (".json", ".csv")}
    assert data_files <= wanted  # every instance, schedule and best-known file is packaged
    with pytest.raises(sjfbco.InputError, match="no bundled instance"):
        datasets.path("paper-s99-seed0")


def _layout_block(path: Path, heading: str) -> str:
    """The first fenced block after ``heading`` in a Markdown file."""
    text = path.read_text(encoding="utf-8")
    after = text[text.index(heading) :]
    start = after.index("```\n") + 4
    return after[start : after.index("```", start)]


@pytest.mark.parametrize(
    ("doc", "heading"), [("README.md", "## Layout"), ("docs/design.md", "## Which room owns what")]
)
def test_the_layout_matches_the_tree(doc: str, heading: str) -> None:
    """README's Layout and design.md's rooms name every module and folder of the package
    (as ``sjfbco/x.py``, ``sjfbco/x/`` or, inside a line, ``x.py``), and nothing that is
    not there."""
    block = _layout_block(ROOT / doc, heading)
    package = ROOT / "sjfbco"
    rooms = {
        p.name if p.is_dir() else p.stem
        for p in package.iterdir()
        if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))
        and p.name not in ("__init__.py", "__main__.py")
    }
    missing = sorted(
        r for r in rooms if not re.search(rf"(sjfbco/|\b){re.escape(r)}(\.py\b|/)", block)
    )
    assert not missing, f"{doc} does not name: {', '.join(missing)}"
    named = set(re.findall(r"sjfbco/([A-Za-z_]+)(?:\.py|/)", block))
    ghosts = sorted(
        n for n in named if not (package / n).exists() and not (package / f"{n}.py").exists()
    )
    assert not ghosts, f"{doc} names what is not in sjfbco/: {', '.join(ghosts)}"


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    """``.ci/run`` ends in the README's test command; its ``-n 2`` has pytest-xdist in the
    test extra; it installs the newest versions the registry serves (``--upgrade
    --upgrade-strategy eager``: what a newcomer's fresh environment gets, not what an older
    environment happens to hold)."""
    readme = (ROOT / "README.md").read_text().splitlines()
    (command,) = [line.strip() for line in readme if line.startswith("    { command -v tc")]
    assert (ROOT / ".ci" / "run").read_text().splitlines()[-1] == command
    assert command.endswith("python -m pytest -q -n 2")
    assert any(d.startswith("pytest-xdist") for d in PYPROJECT["optional-dependencies"]["test"])
    assert "--upgrade --upgrade-strategy eager" in command


def test_no_page_has_two_sections_of_one_title() -> None:
    # issue 42: docs/formats.md had two "Launch plan: `sjfbco-launch/1`" sections
    for page in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # not code blocks
        titles = re.findall(r"^#{1,4} (.+)$", text, flags=re.M)
        repeated = sorted({t for t in titles if titles.count(t) > 1})
        assert not repeated, (page.name, repeated)


def test_hostfiles_are_named_as_formats_md_says(tmp_path: Path) -> None:
    """docs/formats.md: hosts/<k>-<id>.txt, k from 0 in launch order, at least three digits
    (as many as the job count needs), the id's other characters as '_', cut at 64. It said
    NNN-<id>.txt: wrong for 1,000 jobs and more, and for ids such as 'a/b'."""
    from sjfbco import solve
    from sjfbco.launch import launch_plan, write_launch
    from sjfbco.workloads.paper import paper_instance

    doc = (ROOT / "docs" / "formats.md").read_text()
    assert "`DIR/hosts/<k>-<id>.txt`" in doc and "NNN-" not in doc
    data = paper_instance(servers=2, jobs=1000, seed=0)
    odd = "a/b c" + "x" * 70
    jobs = (replace(data.jobs[0], id=odd), *data.jobs[1:])
    data = replace(data, jobs=jobs)
    plan = launch_plan(data, solve(data, "ls").schedule)
    write_launch(plan, tmp_path)
    names = sorted(p.name for p in (tmp_path / "hosts").iterdir())
    expected = [f"{k:04d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', j.id)[:64]}.txt" for k, j in
                enumerate(plan.jobs)]  # fmt: skip
    assert names == expected  # sorted by name = launch order
    assert f"-a_b_c{'x' * 59}.txt" in " ".join(names)  # 5 + 59 = 64 characters


def test_the_other_clusters_files_are_not_called_unseen() -> None:
    """Issue 42: docs/calibration.md quotes figures and step times of the Sia artifact's
    files, yet it and the README described them as held back, read once, tuned on by
    nothing (unseen by the project). Both now say they were read, and since."""
    calibration = (ROOT / "docs" / "calibration.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for phrase in ("read once", "held back to check", "tuned nothing on them"):
        assert phrase not in calibration and phrase not in readme, phrase
    assert "no longer unseen data" in calibration and "0.478 s" in calibration
    assert "no longer unseen data" in readme


def test_the_solvers_tests_mirror_the_solvers() -> None:
    """tests/solvers/ is to sjfbco/solvers/ what tests/ is to sjfbco/ (docs/design.md,
    "Tests"): no test file named after a solver module sits flat in tests/, the folder is
    a package (its files import tests.conftest as every test does), and none of its files
    finds the repository from its own depth (Path(__file__).parents[1] is tests/ there)."""
    package = ROOT / "sjfbco" / "solvers"
    modules = {p.stem for p in package.glob("*.py")} | {
        p.name for p in package.iterdir() if (p / "__init__.py").is_file()
    }
    modules -= {"__init__"}
    assert {"api", "best", "exact", "sgs"} <= modules  # the walk found the solvers
    flat = {p.stem.removeprefix("test_") for p in (ROOT / "tests").glob("test_*.py")}
    assert sorted(flat & modules) == []
    folder = ROOT / "tests" / "solvers"
    assert (folder / "__init__.py").is_file()
    tests = sorted(folder.glob("test_*.py"))
    assert {p.stem.removeprefix("test_") for p in tests} >= {"api", "best", "exact", "sgs"}
    assert [p.name for p in tests if "__file__" in p.read_text()] == []
