"""Parameter dataclasses: building them from keyword arguments or ``key=value`` strings.

Solvers declare their parameters as frozen dataclasses that validate
themselves in ``__post_init__``. :func:`make_params` builds one from keyword
arguments (as :func:`sjfbco.solve` receives them) or from the CLI's
``--param key=value`` strings, converting strings by the field's type and
rejecting unknown names with the list of known ones.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

P = TypeVar("P")


def parse_kv(items: list[str] | None) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; a missing ``=`` is a clear error."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param {item!r}: expected key=value")
        out[key.strip().replace("-", "_")] = value.strip()
    return out


def field_names(cls: type) -> set[str]:
    """Names of a parameter dataclass's fields."""
    return {f.name for f in dataclasses.fields(cls)}


def _convert(name: str, text: str, tp: Any) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if text.lower() in ("none", "null", "") and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(name, text, arg)
            except ValueError as err:
                errors.append(str(err))
        raise ValueError(errors[0] if errors else f"parameter {name}: cannot parse {text!r}")
    if origin is typing.Literal:
        if text in args:
            return text
        raise ValueError(
            f"parameter {name}: must be one of {', '.join(map(str, args))}, got {text!r}"
        )
    if tp is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"parameter {name}: must be true or false, got {text!r}")
    if tp is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"parameter {name}: must be an integer, got {text!r}") from None
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"parameter {name}: must be a number, got {text!r}") from None
    if tp is str:
        return text
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"parameter {name}: must be a JSON object, got {text!r}") from None
        if not isinstance(value, dict):
            raise ValueError(f"parameter {name}: must be a JSON object, got {text!r}")
        return value
    return text


def make_params(cls: type[P], values: Mapping[str, Any] | None = None) -> P:
    """Build the parameter dataclass ``cls`` from ``values`` (typed values or strings).

    Raises ``ValueError`` naming an unknown parameter and listing the known ones.
    """
    values = dict(values or {})
    hints = typing.get_type_hints(cls)
    known = field_names(cls)
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        if key not in known:
            raise ValueError(
                f"unknown parameter {key!r} for {cls.__name__}; known: {', '.join(sorted(known))}"
            )
        kwargs[key] = _convert(key, value, hints[key]) if isinstance(value, str) else value
    return cls(**kwargs)
