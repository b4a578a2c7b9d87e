"""The bound chain's room (sjfbco/solvers/chain/): the facts phases share name their
producers and consumers truly, ``best``'s preset of the shares, and each share's source."""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import fields
from pathlib import Path

import pytest

from sjfbco.clock import Deadline
from sjfbco.errors import InputError
from sjfbco.solvers.chain import Facts, Run, Shares, run_phases
from sjfbco.solvers.chain import phases as chain_phases
from sjfbco.solvers.common import serial_schedule
from tests.conftest import ROOT
from tests.solvers.test_exact import instance_b

REPO = ROOT
PACKAGE = ROOT / "sjfbco"
PHASES = Path(inspect.getsourcefile(chain_phases) or "")


# -- Facts: one typed object, each field's producer and consumers named ------------------------


def _named_in_docstring() -> dict[str, tuple[str, set[str]]]:
    """Each field of :class:`Facts` its docstring describes: (producer, consumers)."""
    doc = inspect.getdoc(Facts)
    assert doc is not None
    body = doc.split("----------\n", 1)[1]
    out = {}
    for block in re.split(r"\n(?=\w)", body):
        name, _, text = block.partition("\n")
        text = re.sub(r"\([^)]*\)", "", " ".join(text.split()))  # asides in brackets
        producer = re.search(r"Producer: (\w+)\.", text)
        consumers = re.search(r"Consumers: ([\w, ]+)\.", text)
        assert producer and consumers, f"{name}: no producer or consumers named"
        out[name.strip()] = (producer[1], {c.strip() for c in consumers[1].split(",")})
    return out


def _touched(tree: ast.Module) -> dict[str, dict[str, set[str]]]:
    """Per field of the facts: the classes that write it (``"store"``) and read it
    (``"load"``) as ``<...>.facts.<field>``."""
    out: dict[str, dict[str, set[str]]] = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "facts"
            ):
                how = "store" if isinstance(node.ctx, ast.Store) else "load"
                out.setdefault(node.attr, {"store": set(), "load": set()})[how].add(cls.name)
    return out


def _disagreements(named: dict[str, tuple[str, set[str]]], code: dict) -> list[str]:
    wrong = []
    for name in sorted(set(named) | set(code) | {f.name for f in fields(Facts)}):
        if name not in named:
            wrong.append(f"{name}: not described in Facts' docstring")
            continue
        producer, consumers = named[name]
        stores = code.get(name, {}).get("store", set())
        loads = code.get(name, {}).get("load", set())
        if stores != {producer}:
            wrong.append(f"{name}: written by {sorted(stores)}, the docstring says {producer}")
        if not consumers <= loads or not loads <= consumers | {producer}:
            wrong.append(f"{name}: read by {sorted(loads)}, the docstring says {sorted(consumers)}")
    return wrong


def test_facts_name_their_producers_and_consumers_truly() -> None:
    named = _named_in_docstring()
    assert set(named) == {f.name for f in fields(Facts)}  # five, each described
    code = _touched(ast.parse(PHASES.read_text(encoding="utf-8")))
    assert _disagreements(named, code) == []
    # the check sees a planted reader and a planted second writer
    code["relaxed"]["load"].add("WholePhase")
    code["packed_by"]["store"].add("RelaxationPhase")
    assert _disagreements(named, code) == [
        "packed_by: written by ['PackingPhase', 'RelaxationPhase'], the docstring says "
        "PackingPhase",
        "relaxed: read by ['PlanSearchPhase', 'TimeIndexedPhase', 'WholePhase'], the "
        "docstring says ['PlanSearchPhase', 'TimeIndexedPhase']",
    ]


def test_only_the_phases_write_the_facts() -> None:
    """No module of the package but the phases' writes a fact (a solver's recipe decides
    the order; the facts are the phases' own)."""
    writers = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PHASES:
            continue
        for field, touched in _touched(ast.parse(path.read_text(encoding="utf-8"))).items():
            if touched["store"]:
                writers.append(f"{path.relative_to(PACKAGE)}: {field}")
    assert writers == []


def test_a_fresh_run_knows_no_facts_and_keeps_its_incumbent_only_with_a_schedule() -> None:
    data = instance_b()
    run = Run(data, serial_schedule(data), 11, 10)
    assert run.facts == Facts() and run.keeps_incumbent and run.label == "exact"
    assert Run(data, None, 11, 10).facts is not run.facts  # one object per run
    chain = Run(data, None, 11, 10, label="")
    assert not chain.keeps_incumbent
    assert run_phases(chain, Deadline.never(), []) == []


# -- Shares: best's preset, and every figure's source ------------------------------------------


def test_best_preset_takes_shares_of_what_is_left() -> None:
    best = Shares.for_best()
    assert best.of_what_is_left and best.model_reserve == 0.0
    # grouped up to a quarter, configuration and pooled half each, the relaxation the rest
    assert (best.grouped, best.configuration, best.pooled, best.relaxation) == (
        0.25,
        0.5,
        0.5,
        1.0,
    )
    assert best == Shares.for_best()  # a value: the same each time
    assert not Shares().of_what_is_left and Shares().model_reserve == 0.2
    with pytest.raises(InputError, match=r"relaxation .* above what the model's reserve"):
        Shares(relaxation=1.0)  # exact's reserve of 0.2 leaves 0.8
