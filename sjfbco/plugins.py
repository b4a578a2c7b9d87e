"""Importing user plugins: modules that register solvers or define online policies.

A plugin is named like a Python module (``my_solvers``, ``pkg.mod``) or given
as the path of a ``.py`` file. Module names are looked up on ``sys.path`` and
then in the current folder (what ``python -m`` would see), so a plugin beside
your instance files works from the ``sjfbco`` command too. ``docs/solvers.md``
shows how to write one.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sjfbco.errors import InputError

if TYPE_CHECKING:
    from types import ModuleType


#: How the module of a plugin given as a ``.py`` file is named in ``sys.modules``.
PLUGIN_FILE_PREFIX = "sjfbco_plugin_"


def import_plugin(spec: str) -> ModuleType:
    """Import the plugin ``spec`` (a module name or a ``.py`` path) once; errors name it.

    Raises
    ------
    InputError
        The module or file cannot be found, or importing it raised: the message
        names the plugin and the exception in one line.
    """
    try:
        if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
            return _from_file(spec)
        return _from_name(spec)
    except InputError:
        raise
    except Exception as err:  # the plugin's own code failed while importing
        raise InputError(
            f"importing it failed: {type(err).__name__}: {err}", where=f"--plugin {spec}"
        ) from err
    except SystemExit as stop:  # one line naming the plugin, not a silent exit with its code
        raise InputError(
            f"importing it called sys.exit({stop.code!r})", where=f"--plugin {spec}"
        ) from None


def _from_name(name: str) -> ModuleType:
    top = name.split(".")[0]
    for attempt in range(2):
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != top:
                raise  # the plugin itself imports something missing
            if attempt or os.getcwd() in sys.path:
                break
        sys.path.append(os.getcwd())  # as `python -m` would have it
    raise InputError(
        "no such module on the Python path or in the current folder "
        "(give a module name or the path of a .py file)",
        where=f"--plugin {name}",
    )


def _from_file(spec: str) -> ModuleType:
    path = Path(spec).resolve()
    if not path.is_file():
        raise InputError("no such file", where=f"--plugin {spec}")
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    name = f"{PLUGIN_FILE_PREFIX}{path.stem}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise InputError("cannot be imported as a Python module", where=f"--plugin {spec}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
