"""The ``sjfbco`` command. Each subcommand lives in ``sjfbco/commands/<name>.py``.

A command module defines ``add_parser(subparsers)`` that registers its parser
and sets ``run=<function(args) -> int>``; it imports heavy libraries inside
``run`` so that ``sjfbco --help`` stays fast.

Exit status and stderr (``docs/formats.md``, "Errors"):

- 0: done. Warnings, if any, are one line each (``sjfbco: warning: ...``).
- 2: bad input or options (an :class:`~sjfbco.errors.InputError`, a file that
  cannot be read or written, a size limit): one line naming the file, the
  field or option and the problem.
- 1: an internal error, i.e. a bug in sjfbco: one line with the exception and
  a hint to rerun with ``--debug`` (or ``SJFBCO_DEBUG=1``), which shows the
  traceback instead.
- 130: interrupted (Ctrl-C).

With ``--json``, stdout carries only JSON; on an error it carries nothing
more than the objects printed before the error.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import errno
import importlib
import logging
import os
import re
import sys
import warnings
from typing import TYPE_CHECKING, Any, NoReturn

from sjfbco.commands import COMMANDS
from sjfbco.commands.common import warn
from sjfbco.errors import InputError, one_line, shorten_numbers, unknown_name
from sjfbco.stdio import STDOUT_NAME, NamedStdout, drop_stdout, named_stdout
from sjfbco.version import __version__

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

#: The hint every internal error ends with.
DEBUG_HINT = "rerun with --debug for the traceback, and please report it"


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
    """The parser of ``sjfbco`` and its subcommands: defaults shown in help, usage errors in
    one line (exit 2) like every other error."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        message = suggest_choice(message)
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops a failed write (--help > /dev/full exited 0); stdout's is reported
        if message and isinstance(file, NamedStdout):
            file.write(message)
        else:
            super()._print_message(message, file)


#: argparse's message for a value outside an option's (or the command's) choices.
_INVALID_CHOICE = re.compile(
    r"^(?P<head>.*)invalid choice: (?P<value>'.*?') \(choose from (?P<choices>.*)\)$"
)


def suggest_choice(message: str) -> str:
    """argparse's ``invalid choice: 'solv' (choose from 'solve', ...)`` in the words of every
    other misspelt name (:func:`sjfbco.errors.unknown_name`): ``invalid choice 'solv'; did
    you mean 'solve'? known: solve, ...``. Other messages are returned unchanged. (Newer
    Pythons list the choices without quotes: both forms are read.)"""
    m = _INVALID_CHOICE.match(message)
    if m is None:
        return message
    try:
        value = str(ast.literal_eval(m["value"]))
    except (ValueError, SyntaxError):
        return message
    try:
        choices = [str(c) for c in ast.literal_eval(f"[{m['choices']}]")]
    except (ValueError, SyntaxError):
        choices = [c.strip().strip("'\"") for c in m["choices"].split(",")]
    return m["head"] + unknown_name("choice", value, choices, sort=False).replace(
        "unknown choice", "invalid choice", 1
    )


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="sjfbco",
        description="Schedule ring-all-reduce training jobs on GPU clusters (SJF-BCO and friends).",
        epilog="Conventions shared by every command (output flags, progress, JSON, exit "
        "statuses): docs/cli.md.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"sjfbco {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on an internal error, show the traceback (also SJFBCO_DEBUG=1); may follow "
        "the command too",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"sjfbco.commands.{name}").add_parser(sub)
    return parser


def rewrite_deprecated(argv: Sequence[str]) -> list[str]:
    """Old option spellings of the chosen command (its module's ``DEPRECATED``) -> new ones.

    Each rewrite prints a one-line deprecation warning on stderr.
    """

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
    """Run the ``sjfbco`` command line; returns the exit status (see the module docstring)."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    cut = args_in.index("--") if "--" in args_in else len(args_in)
    debug = "--debug" in args_in[:cut] or bool(os.environ.get("SJFBCO_DEBUG"))
    args_in = [a for k, a in enumerate(args_in) if not (a == "--debug" and k < cut)]
    parser = build_parser()
    try:
        with named_stdout():
            args = parser.parse_args(rewrite_deprecated(args_in))
    except SystemExit as stop:  # --help, or a usage error already printed as one line
        return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
    except OSError as err:  # --help or --version to a stdout that cannot take it
        return _stdout_failed(err)
    args.debug = debug  # commands that go on after a failure re-raise with it
    with _one_line_warnings(), _debug_environment(debug):
        try:
            with named_stdout():
                return int(args.run(args) or 0)
        except KeyboardInterrupt as stop:  # a command may say how to go on
            if debug:
                raise
            return _fail(f"interrupted{'; ' + str(stop) if str(stop) else ''}", code=130)
        except InputError as err:  # bad input, options or a size limit: the user can fix it
            if debug:
                raise
            return _fail(str(err))
        except OSError as err:  # a file we cannot read or write (permissions, disk full)
            if err.filename == STDOUT_NAME and not (debug and err.errno != errno.EPIPE):
                return _stdout_failed(err)
            if debug:
                raise
            where = f"{err.filename}: " if err.filename else ""
            return _fail(f"{where}{err.strerror or err}")
        except MemoryError:
            if debug:
                raise
            return _fail(
                "out of memory; the input is too large for this machine (see the size "
                "limits in docs/formats.md)",
                code=1,
            )
        except Exception as err:  # a bug in sjfbco: say so, never dress it as bad input
            if debug:
                raise
            text = str(err)
            return _fail(
                f"internal error: {type(err).__name__}{': ' + text if text else ''} ({DEBUG_HINT})",
                code=1,
            )


def _stdout_failed(err: OSError) -> int:
    """Writing stdout failed: a reader that left (``sjfbco ... | head``) ends the run quietly
    with status 0, as it ends Unix tools; any other failure (a full disk, a closed stdout)
    is one line naming ``<stdout>``, status 2. What is still buffered is dropped."""
    drop_stdout()
    if isinstance(err, BrokenPipeError):
        return 0
    return _fail(f"{err.filename}: {err.strerror or err}")


def _fail(message: str, code: int = 2) -> int:
    print(f"sjfbco: error: {shorten_numbers(one_line(message))}", file=sys.stderr, flush=True)
    return code


@contextlib.contextmanager
def _debug_environment(debug: bool) -> Iterator[None]:
    """``SJFBCO_DEBUG=1`` for the run under ``--debug``: solver libraries may then print
    (:func:`sjfbco.stdio.library_output`), here and in the processes the run starts."""
    saved = os.environ.get("SJFBCO_DEBUG")
    if debug:
        os.environ["SJFBCO_DEBUG"] = "1"
    try:
        yield
    finally:
        if debug and saved is None:
            del os.environ["SJFBCO_DEBUG"]


@contextlib.contextmanager
def _one_line_warnings() -> Iterator[None]:
    """Show Python warnings and the library's logged warnings as one line each."""

    def show(message: Any, category: Any, *_: Any, **__: Any) -> None:
        print(f"sjfbco: warning: {one_line(str(message))}", file=sys.stderr, flush=True)

    class OneLine(logging.Handler):  # the library's logged warnings, the same way
        def emit(self, record: logging.LogRecord) -> None:
            show(record.getMessage(), None)

    handler = OneLine(logging.WARNING)
    logger = logging.getLogger("sjfbco")
    saved = warnings.showwarning
    warnings.showwarning = show
    logger.addHandler(handler)
    try:
        yield
    finally:
        warnings.showwarning = saved
        logger.removeHandler(handler)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
