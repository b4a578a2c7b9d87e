"""The instances bundled with the package, by name, from a clone or an installed package.

The folders of ``instances/`` (``paper``, ``small``, ``philly``, and the
benchmark set ``bench`` with its best-known makespans) ship inside the package
as ``sjfbco/instances`` (in a clone, a link to ``instances/``), found with
:mod:`importlib.resources`, so they work after ``pip install sjfbco`` in any
folder::

    sjfbco solve paper-s20-seed0 --solver all
    sjfbco.read_instance("paper-s20-seed0")   # or sjfbco.datasets.path(name) for the file

A name is a file's stem (``paper-s20-seed0``), optionally with its folder
(``bench/paper-s10-seed0``); a stem found in several folders is taken from the
first of :data:`FOLDERS`. Every command that reads an instance accepts a
bundled name where no file of that name exists.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

from sjfbco.errors import InputError, did_you_mean

#: The bundled folders, in the order a name is looked up.
FOLDERS: tuple[str, ...] = ("paper", "small", "philly", "bench")


def root() -> Path:
    """The folder of the bundled instances (``sjfbco/instances`` in the package)."""
    return Path(str(files("sjfbco") / "instances"))


def bench_dir() -> Path:
    """The benchmark set (``sjfbco bench``'s default): instances and ``best-known.csv``."""
    return root() / "bench"


def names(folder: str | None = None) -> list[str]:
    """The bundled instance names (``folder/stem``), of one folder or of all."""
    base = root()
    out = []
    for f in FOLDERS if folder is None else (folder,):
        out += [f"{f}/{p.stem}" for p in sorted((base / f).glob("*.json"))]
    return [n for n in out if not n.endswith("-schedule")]


def path(name: str) -> Path:
    """The file of the bundled instance ``name`` (``stem`` or ``folder/stem``)."""
    base = root()
    stem = name.removesuffix(".json")
    if "/" in stem:
        candidates = [base / f"{stem}.json"]
    else:
        candidates = [base / f / f"{stem}.json" for f in FOLDERS]
    for c in candidates:
        if c.is_file():
            return c
    raise InputError(
        f"no bundled instance {name!r}; sjfbco.datasets.names() lists them "
        f"(e.g. {', '.join(n.split('/')[1] for n in names('paper')[:2])})"
    )


def suggestion(given: str | os.PathLike[str]) -> str:
    """For a missing file given as a bare name: ``"; did you mean 'paper-s10-seed0'?"`` when
    a bundled instance's name is close (:func:`sjfbco.errors.close_names`), else ``""``."""
    text = str(given).removesuffix(".json")
    if os.sep in text.strip("/") and not text.startswith(FOLDERS):
        return ""
    every = names()
    return did_you_mean(text, every if "/" in text else [n.split("/", 1)[1] for n in every])


def resolve(given: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """``given`` if it names an existing file, else the bundled instance of that name,
    else ``given`` unchanged (its reader then says it is missing)."""
    text = str(given)
    if os.path.exists(text) or (os.sep in text.strip("/") and not text.startswith(FOLDERS)):
        return given
    try:
        return path(text)
    except InputError:
        return given
