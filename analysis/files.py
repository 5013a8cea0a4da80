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


class FolderLock:
    """An exclusive lock on a results folder, held by one process at a time: a file
    ``.lock`` inside the folder, locked with ``flock`` (``fcntl``; ``msvcrt`` where there is
    none), naming its holder (process id and start time, UTC) while it is held, and removed
    when it is released. The lock goes with its process: one that dies releases it.

    A second process that asks for it waits until the first releases it; ``waiting``
    (called once, before the wait, with a sentence naming the holder) lets the caller say so.
    """

    NAME = ".lock"

    def __init__(self, folder: str | os.PathLike, name: str = NAME):
        self.path = Path(folder) / name
        self._fd: int | None = None

    @classmethod
    def of_file(cls, path: str | os.PathLike) -> "FolderLock":
        """The lock of one results file ``path`` (``.<file name>.lock`` beside it): runs
        writing other files of the folder (other shapes' tunings) go on at once."""
        path = Path(path)
        return cls(path.parent, f".{path.name}.lock")

    def holder(self) -> str:
        """The holder's line in the lock file (``process N since TIME``), or ``another
        process`` when it cannot be read."""
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            text = ""
        return text or "another process"

    def acquire(self, waiting=None) -> None:
        """Take the lock, waiting for its holder to release it (the folder is made where
        it does not exist: the results go there).

        Raises:
            OSError: the folder or the lock file cannot be created.
        """
        told = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666 & ~_umask())
            try:
                if not _try_lock(fd):
                    if waiting is not None and not told:
                        waiting(self.holder())
                        told = True
                    _lock(fd)
                # the holder before removed the file while this process waited on it: take
                # the lock on the file that is there now, not on the removed one
                if _same_file(fd, self.path):
                    break
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)
        os.ftruncate(fd, 0)
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        os.write(fd, f"process {os.getpid()} since {stamp}\n".encode())
        self._fd = fd

    def release(self) -> None:
        """Remove the lock file and release the lock (nothing when it is not held)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.remove(self.path)
        except OSError:
            pass
        os.close(fd)     # closing the descriptor releases the lock

    def __enter__(self) -> "FolderLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _same_file(fd: int, path: Path) -> bool:
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (here.st_dev, here.st_ino)


def _try_lock(fd: int) -> bool:
    """Lock ``fd`` exclusively if no other process holds it; False where one does."""
    try:
        import fcntl
    except ImportError:      # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _lock(fd: int) -> None:
    """Lock ``fd`` exclusively, waiting as long as another process holds it."""
    try:
        import fcntl
    except ImportError:      # Windows: msvcrt waits 10 s at most per call
        import time

        while not _try_lock(fd):
            time.sleep(0.5)
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


@contextmanager
def held(lock: "FolderLock | None", what: str, say=None):
    """Hold ``lock`` (nothing where None) while the block runs. ``say`` (a function taking a
    line, or None) is told once where another process holds it: ``waiting: process N since
    TIME is writing WHAT; this run starts when it has finished``."""
    if lock is None:
        yield
        return
    lock.acquire(waiting=None if say is None else (lambda holder: say(
        f"waiting: {holder} is writing {what}; this run starts when it has finished")))
    try:
        yield
    finally:
        lock.release()
