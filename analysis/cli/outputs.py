"""The command line's output files: refusing an output that cannot be written before any
work (exit 2, one line), saying why a write failed, and re-rendering a results file."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click


def cannot_write(subject: str, err: OSError, fallback) -> str:
    """``cannot write <subject>: <reason>``, then the file in question in parentheses unless
    the reason already names it (``err.filename``, else ``fallback``; nothing when empty)."""
    reason, named = str(err.strerror or err), str(err.filename or fallback or "")
    return f"cannot write {subject}: {reason}" + \
        ("" if not named or named in reason else f" ({named})")


def write_failed(what: str, where, err: OSError) -> None:
    """Exit on an error writing ``what`` under the folder ``where`` (None: the file's own
    path): one line naming the file and exit status 2, whatever the OS error (an output path
    that cannot be a folder, :class:`analysis.files.OutputNotWritable`, a full disk, a
    read-only file system), as for an output that cannot be written on stdout
    (:data:`analysis.cli.OUTPUT_EXIT`): 1 says a fault was found in a kernel."""
    where = err.filename if where is None else where
    subject = what if where is None else f"{what} under {str(where)!r}"
    click.echo(f"error: {cannot_write(subject, err, where)}", err=True)
    sys.exit(2)


def check_out_file(path: str | None, option: str = "--out") -> None:
    """Refuse (usage error, exit 2) an output file whose folder cannot be created or
    written, before any work (creating nothing: a command that stops early leaves no
    folder behind)."""
    if path is None:
        return
    from tiletraffic.analysis.files import check_writable, refuse_non_file
    folder = os.path.dirname(os.path.abspath(path))
    try:
        refuse_non_file(path)
        check_writable(folder)
    except OSError as err:
        raise click.UsageError(cannot_write(f"{option} {path!r}", err,
                                             folder if path else "")) from None


def check_out_folder(folder: str, why: str, option: str = "--out") -> None:
    """Refuse (usage error, exit 2) an output folder that is a file (``why``: what the
    option names there) or cannot be written, before any work."""
    from tiletraffic.analysis.files import check_writable

    if os.path.exists(folder) and not os.path.isdir(folder):
        raise click.UsageError(f"{option} {folder!r}: {why}, and this is a file")
    try:
        check_writable(os.path.abspath(folder))
    except OSError as err:
        raise click.UsageError(cannot_write(f"{option} {folder!r}", err, folder)) from None


def render_results(render_fn, folder, results_name: str, writer: str):
    """``render_fn(folder)``, a re-rendering from the results file ``folder/results_name``;
    a file that is not a JSON object (:func:`analysis.files.read_json_object`, the
    renderer's reader) or lacks a field the rendering reads is bad input
    (exit 2, one line naming the file and the field; ``writer`` names the command that
    writes such files)."""
    from tiletraffic.analysis.files import ResultsFileError

    not_ours = f"{Path(folder) / results_name}: not a results file of {writer}"
    try:
        return render_fn(folder)
    except ResultsFileError as err:
        raise click.UsageError(str(err)) from None
    except KeyError as err:
        raise click.UsageError(f"{not_ours} (field {err} missing)") from None
    except (TypeError, IndexError, AttributeError):
        raise click.UsageError(f"{not_ours} (a field is of another type or shape)") from None
    except ValueError as err:
        raise click.UsageError(f"{not_ours} ({err})") from None
