"""Atomic file writes: a reader sees the old file or the whole new one, never a part.

Every writer writes a temporary file in the destination's folder and renames it over the
destination (``os.replace``, atomic on POSIX and Windows within one file system); the
temporary file is removed when writing fails. The file gets the permissions of a newly
created file (0o666 less the umask), not ``mkstemp``'s 0o600.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed over ``path`` when the block
    ends without an exception, removed otherwise. Creates ``path``'s folder.

    Args:
        suffix: ending of the temporary name, for writers that pick the format from it
            (matplotlib's ``savefig``: ``".png"``).

    Raises:
        OSError: the folder cannot be created or written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically, UTF-8 (see :func:`atomic_path`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def move_to_history(path: str | os.PathLike) -> Path | None:
    """Move an existing ``path`` to ``<its folder>/history/<stem>-<UTC mtime><suffix>``
    (``-1``, ``-2``, ... appended when that name is taken), so that a new file can be
    written at ``path`` without losing the old one. Returns where it went (None: there was
    no file).

    Raises:
        OSError: the history folder cannot be created or the file cannot be moved.
    """
    import datetime as _dt

    path = Path(path)
    if not path.exists():
        return None
    stamp = _dt.datetime.fromtimestamp(path.stat().st_mtime, _dt.timezone.utc).strftime(
        "%Y-%m-%dT%H%M%SZ")
    folder = path.parent / "history"
    folder.mkdir(parents=True, exist_ok=True)
    dest = folder / f"{path.stem}-{stamp}{path.suffix}"
    n = 1
    while dest.exists():
        dest = folder / f"{path.stem}-{stamp}-{n}{path.suffix}"
        n += 1
    os.replace(path, dest)
    return dest
