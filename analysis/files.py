"""Results files: atomic writes (a reader sees the old file or the whole new one, never a
part), a folder proved writable before work starts, and the error of a run interrupted after
saving what had finished.

Every writer writes a temporary file in the destination's folder and renames it over the
destination (``os.replace``, atomic on POSIX and Windows within one file system); the
temporary file is removed when writing fails. The file gets the permissions of a newly
created file (0o666 less the umask), not ``mkstemp``'s 0o600.
"""
from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import re
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
        OutputNotWritable: ``path`` is empty or names something other than a regular file
            (a folder, a device such as ``/dev/null``), which a rename would replace.
        OSError: the folder cannot be created or written.
    """
    refuse_non_file(path)
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


def refuse_non_file(path: str | os.PathLike) -> None:
    """Refuse an output path that is empty or names an existing non-regular file.

    Raises:
        OutputNotWritable: naming the path and why.
    """
    if not str(path):
        raise OutputNotWritable(errno.ENOENT, "an empty path is not a file's name", "")
    p = Path(path)
    if p.exists() and not p.is_file():
        what = "a folder" if p.is_dir() else "not a regular file (a device or a socket)"
        raise OutputNotWritable(errno.EEXIST, f"{p} is {what}: results are written to a "
                                "regular file", str(p))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically, UTF-8 (see :func:`atomic_path`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def archive_previous(path: str | os.PathLike, prefix: str | None = None) -> Path | None:
    """Move an existing result file ``path`` to ``<its folder>/history/<prefix>-<stamp><suffix>``
    (its own suffix, ``.json`` without one; ``prefix`` None: the file's own stem) before it is
    replaced, so earlier results are never
    lost; ``<stamp>`` is a JSON file's ``meta.created_utc`` without colons where that is a
    plain time of at most 40 letters, digits and ``.+_-`` (the file's modification time
    otherwise), with
    ``-1``, ``-2``, ... added when that name is taken. Returns the new path (``None``: no
    file to move).

    Raises:
        OSError: the history folder cannot be created or the file not moved.
    """
    old = Path(path)
    if not old.exists():
        return None
    prefix = old.stem if prefix is None else prefix
    try:
        stamp = json.loads(old.read_text())["meta"]["created_utc"].replace(":", "")
    except (ValueError, KeyError, TypeError, AttributeError):
        stamp = None
    if not isinstance(stamp, str) or not re.fullmatch(r"[0-9A-Za-z.+_-]{1,40}", stamp):
        # a stamp that is not a plain time (edited: a path, a NUL, too long): the file's time
        stamp = _dt.datetime.fromtimestamp(old.stat().st_mtime, _dt.timezone.utc).strftime(
            "%Y-%m-%dT%H%M%SZ")
    suffix = old.suffix or ".json"
    dest = old.parent / "history" / f"{prefix}-{stamp}{suffix}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    n = 1
    while dest.exists():
        dest = dest.with_name(f"{prefix}-{stamp}-{n}{suffix}")
        n += 1
    os.replace(old, dest)
    return dest


class ResultsFileError(ValueError):
    """A results file that is not a JSON object or lacks a field its reader needs; the
    message names the file and what is wrong."""


def read_json_object(path: str | os.PathLike, what: str) -> dict:
    """The JSON object in ``path`` (``what`` names the kind of file in messages, e.g.
    ``a results file of tiletraffic report``).

    Raises:
        FileNotFoundError: no such file.
        ResultsFileError: not JSON, or JSON but not an object.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise ResultsFileError(f"{path}: not a JSON file ({err})") from None
    if not isinstance(data, dict):
        raise ResultsFileError(f"{path}: not {what} (a JSON {type(data).__name__}, "
                               "expected an object)")
    return data


class OutputNotWritable(OSError):
    """An output directory that cannot be created or written: the user's argument is bad
    (the command line exits 2), found before any work."""


def ensure_writable(out_dir: Path) -> None:
    """Create ``out_dir`` and prove a file can be written there, before any work starts.

    Raises:
        OutputNotWritable: naming the directory and the reason (permission denied,
            read-only file system, a file in the way, ...).
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test.", dir=out_dir)
    except OSError as err:
        blocker = next((p for p in (out_dir, *out_dir.parents) if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            raise OutputNotWritable(errno.ENOTDIR, f"{blocker} is a file, not a folder",
                                    str(blocker)) from None
        raise OutputNotWritable(err.errno, err.strerror or str(err),
                                err.filename or str(out_dir)) from None
    os.close(fd)
    os.remove(probe)


def check_writable(folder: str | os.PathLike) -> None:
    """Prove that files can be written in ``folder`` (or, where it does not exist yet, that
    it could be created in the nearest folder above it that exists), creating nothing:
    the probe file is removed at once.

    Raises:
        OutputNotWritable: naming the folder in the way and the reason (permission denied,
            read-only file system, a file in the way, ...).
    """
    folder = Path(os.path.abspath(folder))
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        raise OutputNotWritable(errno.ENOTDIR, f"{existing} is a file, not a folder",
                                str(existing))
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-test.", dir=existing)
    except OSError as err:
        raise OutputNotWritable(err.errno, err.strerror or str(err),
                                err.filename or str(existing)) from None
    os.close(fd)
    os.remove(probe)


class SweepInterrupted(RuntimeError):
    """The sweep was interrupted; the counted cases and finished device runs are saved (``results.json``, and the
    report rendered from them)."""

    def __init__(self, out_dir: Path, done: int, total: int):
        self.out_dir, self.done, self.total = out_dir, done, total
        super().__init__(f"sweep interrupted after {done} of {total} device runs; " +
                         (f"the finished ones are saved in {out_dir / 'results.json'} and "
                          f"{out_dir / 'report.md'}" if done else "no device run had finished"))


def json_text(obj, indent: int | None = None) -> str:
    """``obj`` as standard JSON text (RFC 8259 has no infinity or NaN): a float that is not
    finite (an infinite error over tolerance, a NaN result) is written as ``null``."""
    import json
    import math

    def finite(value):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: finite(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [finite(v) for v in value]
        return value

    return json.dumps(finite(obj), indent=indent, allow_nan=False)
