"""One parameter syntax for solve, batch and reproduce: --param, SOLVER.KEY and TOML files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from sjfbco.params import _convert, load_config, parse_kv, solver_params
from sjfbco.problem import InputError

if TYPE_CHECKING:
    from pathlib import Path


def test_unprefixed_keys_go_to_every_solver_that_has_them() -> None:
    got = solver_params(
        ["sjf-bco", "ls"], ["kappa=4", "sjf-bco.lam=2.5", "mode=timestepped", "ls.order=sjf"]
    )
    # kappa is SJF-BCO's only; mode is every list scheduler's; prefixes pick one solver
    assert got == {
        "sjf-bco": {"kappa": "4", "lam": "2.5", "mode": "timestepped"},
        "ls": {"mode": "timestepped", "order": "sjf"},
    }


def test_unknown_keys_and_bad_values_fail_before_running() -> None:
    with pytest.raises(ValueError, match=r"no selected solver has a parameter 'kapa'"):
        solver_params(["sjf-bco", "ls"], ["kapa=3"])
    with pytest.raises(ValueError, match=r"solver 'ls' has no parameter 'kappa'"):
        solver_params(["sjf-bco", "ls"], ["ls.kappa=3"])
    with pytest.raises(ValueError, match=r"'ff' is not a selected solver"):
        solver_params(["ls"], ["ff.order=sjf"])
    with pytest.raises(ValueError, match=r"solver 'sjf-bco': parameter kappa: must be an integer"):
        solver_params(["sjf-bco"], ["kappa=four"])
    with pytest.raises(ValueError, match=r"expected KEY=VALUE"):
        parse_kv(["kappa"])


def test_dashes_in_names_become_underscores_but_not_in_solver_prefixes() -> None:
    assert parse_kv(["kappa-search=all", "fifo-gang.order=sjf"]) == {
        "kappa_search": "all",
        "fifo-gang.order": "sjf",
    }


def test_config_file_tables_and_precedence(tmp_path: Path) -> None:
    cfg = tmp_path / "p.toml"
    cfg.write_text(
        'mode = "timestepped"\n[sjf-bco]\nkappa = 8\nlam_per_job = {j00 = 2.0}\n'
        '[exact]\nbackend = "cpsat"\n'
    )
    doc = load_config(cfg)
    got = solver_params(["sjf-bco", "ls"], ["sjf-bco.kappa=2"], doc)
    # the [exact] table is ignored (exact not selected); --param beats the file
    assert got == {
        "sjf-bco": {"mode": "timestepped", "kappa": "2", "lam_per_job": {"j00": 2.0}},
        "ls": {"mode": "timestepped"},
    }
    (tmp_path / "bad.toml").write_text("kappa = \n")
    with pytest.raises(InputError, match=r"bad.toml: not valid TOML"):
        load_config(tmp_path / "bad.toml")
    (tmp_path / "typo.toml").write_text("[sjf-bcoo]\nkappa = 1\n")
    with pytest.raises(ValueError, match=r"no solver is named 'sjf-bcoo'"):
        solver_params(["sjf-bco"], [], load_config(tmp_path / "typo.toml"))


def test_a_json_parameter_with_a_repeated_key_is_refused() -> None:
    # a --param value read as a JSON object kept the last of two equal keys silently
    assert _convert("shares", '{"a": 1, "b": 2}', dict[str, Any]) == {"a": 1, "b": 2}
    with pytest.raises(InputError, match=r"parameter shares: key 'a' appears twice"):
        _convert("shares", '{"a": 1, "a": 2}', dict[str, Any])
