"""The ``sjfbco`` command. Each subcommand lives in ``sjfbco/commands/<name>.py``.

A command module defines ``add_parser(subparsers)`` that registers its parser
and sets ``run=<function(args) -> int>``; it imports heavy libraries inside
``run`` so that ``sjfbco --help`` stays fast. Errors in the user's input end
in one line on stderr and a non-zero exit, never a traceback (set
``SJFBCO_DEBUG=1`` to see one).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from sjfbco.commands import COMMANDS
from sjfbco.cost import ConfigurationError
from sjfbco.problem import InputError

if TYPE_CHECKING:
    from collections.abc import Sequence


class HelpFormatter(argparse.HelpFormatter):
    """Help that states each option's default, unless its text already does."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            not action.option_strings
            or "default" in text
            or action.default in (None, False, argparse.SUPPRESS)
            or action.default == []
        ):
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """The parser class of ``sjfbco`` and its subcommands (defaults shown in help)."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    from sjfbco import __version__

    parser = Parser(
        prog="sjfbco",
        description="Schedule ring-all-reduce training jobs on GPU clusters (SJF-BCO and friends).",
        epilog="Conventions shared by every command (output flags, progress, JSON): docs/cli.md.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"sjfbco {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"sjfbco.commands.{name}").add_parser(sub)
    return parser


def rewrite_deprecated(argv: Sequence[str]) -> list[str]:
    """Old option spellings of the chosen command (its module's ``DEPRECATED``) -> new ones.

    Each rewrite prints a one-line deprecation warning on stderr.
    """
    from sjfbco.commands.common import warn

    out = list(argv)
    at = next((i for i, a in enumerate(out) if a in COMMANDS), None)
    if at is None:
        return out
    command = out[at]
    renames: dict[str, str] = getattr(
        importlib.import_module(f"sjfbco.commands.{command}"), "DEPRECATED", {}
    )
    for i in range(at + 1, len(out)):
        if out[i] == "--":
            break
        name, eq, value = out[i].partition("=")
        if name in renames:
            warn(f"'{command} {name}' is deprecated; use {renames[name]}")
            out[i] = renames[name] + eq + value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(rewrite_deprecated(sys.argv[1:] if argv is None else argv))
    try:
        return int(args.run(args) or 0)
    except BrokenPipeError:  # e.g. `sjfbco ... | head`: the reader left, not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (InputError, ConfigurationError) as err:
        return _fail(str(err))
    except (ValueError, OSError) as err:
        if os.environ.get("SJFBCO_DEBUG"):
            raise
        return _fail(str(err))
    except KeyboardInterrupt:
        return _fail("interrupted", code=130)


def _fail(message: str, code: int = 2) -> int:
    if os.environ.get("SJFBCO_DEBUG"):
        raise
    print(f"sjfbco: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
