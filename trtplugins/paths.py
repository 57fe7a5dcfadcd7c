"""Checks of the files a command line names, run before any long work (one-line errors)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable


class PathError(ValueError):
    """A path argument that cannot work: the message is one line and names the option."""


def output_file(path: str | os.PathLike, flag: str, inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """An output path that can be written: not a folder, in a folder that exists and is
    writable, and not one of `inputs` (a user's input file is never overwritten)."""
    p = Path(path)
    if p.is_dir():
        raise PathError(f"{flag} {p}: is a folder; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise PathError(f"{flag} {p}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise PathError(f"{flag} {p}: folder {parent} is not writable")
    for i in inputs:
        if i is not None and p.exists() and Path(i).exists() and p.samefile(i):
            raise PathError(f"{flag} {p}: is the input {i}; refusing to overwrite an input file")
    return p


def distinct(named: dict[str, str | os.PathLike | None]) -> None:
    """No two output options name the same file."""
    seen: dict[str, str] = {}
    for flag, path in named.items():
        if path is None:
            continue
        key = os.path.abspath(path)
        if key in seen:
            raise PathError(f"{flag} and {seen[key]} name the same file {path}")
        seen[key] = flag
