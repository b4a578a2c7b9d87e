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
from typing import TYPE_CHECKING

from sjfbco.commands import COMMANDS
from sjfbco.cost import ConfigurationError
from sjfbco.problem import InputError

if TYPE_CHECKING:
    from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sjfbco",
        description="Schedule ring-all-reduce training jobs on GPU clusters (SJF-BCO and friends).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"sjfbco.commands.{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
