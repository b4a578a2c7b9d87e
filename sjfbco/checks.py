"""The checks of parameter dataclasses: one-line errors that name the parameter.

A solver's (or a knob object's) ``__post_init__`` checks its fields with these; each
raises an :class:`~sjfbco.errors.InputError` worded ``parameter NAME: must be RULE, got
VALUE``, never a plain ``ValueError``.

This module imports only :mod:`sjfbco.errors` (floor 0 of ``docs/design.md``): every
solver needs it, and it needs nothing of the solvers (it used to live in
``sjfbco/params.py``, beside :func:`~sjfbco.params.make_params`, which needs the solver
registry: a loop between the folders).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args

from sjfbco.errors import InputError, did_you_mean, short

if TYPE_CHECKING:
    from collections.abc import Callable


def check_choice(name: str, value: object, literal: Any) -> None:
    """``value`` is one of the ``Literal`` type's options."""
    options = get_args(literal)
    if value not in options:
        hint = did_you_mean(value, options) if isinstance(value, str) else ""
        raise InputError(
            f"parameter {name}: must be one of {', '.join(options)}, got {short(value)}{hint}"
        )


def check_count(name: str, value: object) -> None:
    """``value`` is ``None`` or an integer ``>= 1`` (not a bool: ``true`` is no count)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InputError(f"parameter {name}: must be an integer >= 1, got {short(value)}")


def check_number(name: str, value: object, rule: str, ok: Callable[[float], bool]) -> None:
    """``value`` is a number (not a bool) for which ``ok`` holds; ``rule`` says it in
    words (``"> 0"``, ``"in (0, 1)"``)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not ok(value):
        raise InputError(f"parameter {name}: must be {rule}, got {short(value)}")
