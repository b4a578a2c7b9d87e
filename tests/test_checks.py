"""The parameter checks (sjfbco/checks.py): one-line InputErrors naming the parameter."""

from __future__ import annotations

from typing import Literal

import pytest

from sjfbco.checks import check_choice, check_count, check_number
from sjfbco.errors import InputError
from sjfbco.solvers.exact.params import ExactParams


def test_a_choice_names_the_options_and_a_near_miss() -> None:
    check_choice("mode", "b", Literal["a", "b"])
    with pytest.raises(InputError, match=r"^parameter mode: must be one of a, bb, got 'b'"):
        check_choice("mode", "b", Literal["a", "bb"])


@pytest.mark.parametrize("bad", [0, -1, 1.0, "3", True])
def test_a_count_is_an_integer_from_one_not_a_bool(bad: object) -> None:
    check_count("n", None)
    check_count("n", 1)
    with pytest.raises(InputError, match=r"^parameter n: must be an integer >= 1, got "):
        check_count("n", bad)


@pytest.mark.parametrize("bad", [0, -0.5, True, "1", None])
def test_a_number_follows_its_rule(bad: object) -> None:
    check_number("x", 0.5, "> 0", lambda v: v > 0)
    with pytest.raises(InputError, match=r"^parameter x: must be > 0, got "):
        check_number("x", bad, "> 0", lambda v: v > 0)


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("horizon", 0, "an integer >= 1"),
        ("horizon", True, "an integer >= 1"),
        ("threads", 0, "an integer >= 1"),
        ("threads", True, "an integer >= 1"),
        ("threads", 2.0, "an integer >= 1"),
        ("max_memory_gb", 0, r"in \(0, 1e6\) GB"),
        ("max_memory_gb", 1e6, r"in \(0, 1e6\) GB"),
        ("max_memory_gb", "3", r"in \(0, 1e6\) GB"),
    ],
)
def test_exact_params_use_the_shared_checks(field: str, value: object, rule: str) -> None:
    with pytest.raises(InputError, match=rf"^parameter {field}: must be {rule}, got "):
        ExactParams(**{field: value})  # type: ignore[arg-type]
