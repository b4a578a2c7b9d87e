"""Solver parameters: one syntax for keywords, ``--param`` strings and TOML files.

Solvers declare their parameters as frozen dataclasses that validate
themselves in ``__post_init__``. :func:`make_params` builds one from keyword
arguments (as :func:`sjfbco.solve` receives them) or from strings, converting
strings by the field's type and rejecting unknown names with the list of
known ones.

Every command that runs solvers (``solve``, ``batch``, ``reproduce``) reads
parameters the same way (:func:`solver_params`):

- ``--param KEY=VALUE`` applies to every selected solver that has ``KEY``
  (an error if none has it); ``--param SOLVER.KEY=VALUE`` to that solver only.
  Values are text, converted by the parameter's type (``true``/``false``,
  numbers, ``none``, a JSON object for mappings).
- ``--config FILE.toml``: top-level keys as unprefixed ``--param``; a table
  ``[SOLVER]`` (e.g. ``[sjf-bco]``) for one solver. TOML values keep their
  types. ``--param`` wins over the file.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from sjfbco.errors import InputError, did_you_mean, one_line
from sjfbco.files import RepeatedKeyError, read_text, unique_keys
from sjfbco.solvers.contract import SOLVERS, spec_of

if typing.TYPE_CHECKING:
    import os

P = TypeVar("P")


def parse_kv(items: Sequence[str] | None) -> dict[str, str]:
    """``["a=1", "s.b=x"]`` -> ``{"a": "1", "s.b": "x"}``; a missing ``=`` is a clear error.

    Dashes in the parameter name become underscores (``kappa-search`` is
    ``kappa_search``); a ``SOLVER.`` prefix is kept as written.
    """
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or key.endswith("."):
            raise InputError(f"--param {item!r}: expected KEY=VALUE or SOLVER.KEY=VALUE")
        prefix, dot, name = key.rpartition(".")
        out[f"{prefix}{dot}{name.replace('-', '_')}"] = value.strip()
    return out


def load_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a TOML parameter file; errors name the file (and the line, for bad TOML)."""

    try:
        doc = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not valid TOML ({one_line(str(err))})", source=str(path)) from None
    except RecursionError:
        raise InputError("not valid TOML (nested too deeply)", source=str(path)) from None
    return doc


def solver_params(
    solvers: Sequence[str],
    items: Sequence[str] | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    source: str = "--param",
) -> dict[str, dict[str, Any]]:
    """Per-solver parameter values from ``--param`` strings and a parsed TOML config.

    See the module docstring for the rules. Each solver's values are checked by
    building its parameter dataclass, so a typo or a bad value fails here,
    before anything runs, with one line naming the parameter.
    """
    specs = {name: spec_of(name) for name in solvers}
    known = {name: field_names(spec.params) for name, spec in specs.items()}
    out: dict[str, dict[str, Any]] = {name: {} for name in solvers}

    def put(key: str, value: Any, where: str) -> None:
        targets, name = _targets(key, solvers, known, where)
        for s in targets:
            out[s][name] = value

    for key, value in dict(config or {}).items():
        if isinstance(value, dict) and key in SOLVERS:
            if key not in specs:
                continue  # a table for a solver this run does not use
            for k, v in value.items():
                put(f"{key}.{k.replace('-', '_')}", v, "config")
        elif isinstance(value, dict) and not any(key in known[s] for s in solvers):
            raise InputError(
                f"config table [{key}]: no solver is named {key!r}; known: "
                f"{', '.join(sorted(SOLVERS))}"
            )
        else:
            put(key.replace("-", "_"), value, "config")
    for key, value in parse_kv(items).items():
        put(key, value, source)
    for name, values in out.items():
        try:
            make_params(specs[name].params, values)
        except ValueError as err:
            raise InputError(f"solver {name!r}: {err}") from None
    return out


def _targets(
    key: str, solvers: Sequence[str], known: Mapping[str, set[str]], where: str
) -> tuple[list[str], str]:
    """The selected solvers a parameter ``key`` (``name`` or ``solver.name``) goes to, and
    the parameter's name; an :class:`InputError` when none has it."""
    prefix, dot, name = key.rpartition(".")
    if dot:
        if prefix not in known:
            raise InputError(
                f"{where} {key!r}: {prefix!r} is not a selected solver ({', '.join(solvers)})"
            )
        if name not in known[prefix]:
            raise InputError(
                f"{where} {key!r}: solver {prefix!r} has no parameter {name!r}; known: "
                f"{', '.join(sorted(known[prefix])) or '(none)'}"
            )
        return [prefix], name
    targets = [s for s in solvers if name in known[s]]
    if not targets:
        every = sorted(set().union(*known.values()))
        raise InputError(
            f"{where} {key!r}: no selected solver has a parameter {name!r}; known: "
            f"{', '.join(every) or '(none)'}"
        )
    return targets, name


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
        raise InputError(errors[0] if errors else f"parameter {name}: cannot parse {text!r}")
    if origin is typing.Literal:
        if text in args:
            return text
        raise InputError(
            f"parameter {name}: must be one of {', '.join(map(str, args))}, got {text!r}"
        )
    if tp is bool:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise InputError(f"parameter {name}: must be true or false, got {text!r}")
    if tp is int:
        try:
            return int(text)
        except ValueError:
            raise InputError(f"parameter {name}: must be an integer, got {text!r}") from None
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise InputError(f"parameter {name}: must be a number, got {text!r}") from None
    if tp is str:
        return text
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        try:
            value = json.loads(text, object_pairs_hook=unique_keys)
        except RepeatedKeyError as err:
            raise InputError(f"parameter {name}: {err}") from None
        except json.JSONDecodeError:
            raise InputError(f"parameter {name}: must be a JSON object, got {text!r}") from None
        if not isinstance(value, dict):
            raise InputError(f"parameter {name}: must be a JSON object, got {text!r}")
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
            hint = did_you_mean(key, known) or ";"
            raise InputError(
                f"unknown parameter {key!r} for {cls.__name__}{hint} known: "
                + ", ".join(sorted(known))
            )
        kwargs[key] = _convert(key, value, hints[key]) if isinstance(value, str) else value
    return cls(**kwargs)
