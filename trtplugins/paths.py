"""The files a command line names: checked before any long work, written without loss (one-line errors)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator


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


@contextlib.contextmanager
def replacing(path: str | os.PathLike, flag: str = "output") -> Iterator[Path]:
    """Write a user file without loss: yields a temporary path beside `path`; when the block ends
    without error that file replaces `path` in one rename. Otherwise `path` is left as it was,
    the temporary file is removed, and a failure to write or rename is a PathError naming `flag`."""
    p = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent if str(p.parent) else ".")
        os.close(fd)
    except OSError as e:
        raise PathError(f"{flag} {p}: cannot write beside it: {e.strerror or e}") from None
    tmp = Path(tmp)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, p)
    except OSError as e:
        raise PathError(f"{flag} {p}: not written: {e.strerror or e}") from None
    finally:
        tmp.unlink(missing_ok=True)


def write_file(path: str | os.PathLike, data: bytes | str, flag: str = "output") -> Path:
    """`data` into `path` through replacing()."""
    with replacing(path, flag) as tmp:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    return Path(path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
