"""The ``tiletraffic`` command line (click): one module per command, registered in
:data:`COMMANDS`.

    tiletraffic simulate SCHEDULE --m M --k K [--n N] [--tile B] [--json]
    tiletraffic model SCHEDULE --m M --k K [--n N] [--tile B] [--device-model D]
                               [--registers R] [--json]
    tiletraffic run SCHEDULE --m M --k K [--n N] [--tile B] [--device D] [--repeat R] [--json]
    tiletraffic explain SCHEDULE --m M --k K [--n N] [--tile B] [--device-model D] --out PAGE
    tiletraffic check SCHEDULE [...] | --all;  tiletraffic crosscheck SCHEDULE [...] | --all
    tiletraffic devices;  tiletraffic device-model [MODEL | --device D]
    tiletraffic calibrate [--device D] [--out FILE]
    tiletraffic report [--device D] [--out DIR] [--quick]
    tiletraffic tune gemm --m M --n N --k K [--device D] [--device-model D] [--top T]
                          [--recheck R] [--out F]
    tiletraffic instructions SCHEDULE [sizes] [--arch sm_90] [--ptx FILE] [--out FILE]
    tiletraffic validate [--device D] [--device-model M] [--quick] [--predictions F] | --predict-only

SCHEDULE is any form :mod:`tiletraffic.frontend.resolver` knows (the one resolver, shared
with ``tiletraffic.build``): a built-in name (a family, a demo, a faulty variant
``family:variant``) or ``FILE.py:FUNCTION``, a function of the user's Python file that
returns a ``Schedule``, called with the sizes given (``--m``, ``--k``, ``--n``, ``--tile``,
only those given, as keyword arguments). The result of such a schedule is checked against
the user's numpy reference: ``--reference FILE.py:FUNCTION``, else the function ``reference``
of the schedule's file; without one, ``simulate`` skips the value check (saying so) and
``run`` refuses.

Errors a user can cause (bad sizes, limits, missing device, build failures, wrong results)
are printed as one clear line and exit with status 2 (usage) or 1 (runtime), never as a
traceback.

A new command is a module of this package with a click command named ``command``, added to
:data:`COMMANDS`; shared options live in :mod:`.options`, shared checks in :mod:`.common`.
"""
from __future__ import annotations

import errno
import io
import os
import sys
import warnings

import click
from click.exceptions import NoArgsIsHelpError

from tiletraffic.analysis.cli import (calibrate, check, crosscheck, device_model, devices,
                                      explain, instructions, model, report, run, simulate,
                                      tune, validate)

COMMANDS = (simulate, model, run, explain, check, crosscheck, devices, device_model, calibrate,
            report, tune, validate, instructions)
"""The command modules, in the order ``--help`` lists them."""


class OneLineUsageError(click.ClickException):
    """A usage error (bad input, exit status 2) printed as one line that names the command
    whose ``--help`` lists the options, instead of click's usage block."""

    exit_code = 2

    def __init__(self, err: click.UsageError, path: str | None = None):
        if path is None:
            path = err.ctx.command_path if err.ctx is not None else "tiletraffic"
        super().__init__(f"{err.format_message()} (options: {path} --help)")

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})
"""OS errors that mean the output could not be written (a full disk, a quota, a file size
limit, a device error, a read-only file system), wherever the command was writing: stdout
redirected to a full disk or ``/dev/full``, or a file a command did not catch itself."""

OUTPUT_EXIT = 2
"""The exit status when the output cannot be written: the place given for it cannot take it
(as an --out that cannot be written is refused with 2), never 1, which says a fault was
found."""


CLOSED_PIPE_EXIT = 0
"""The exit status when the reader of stdout closes it first (``| head``): the reader took
what it wanted, which is neither a fault found (1) nor bad input (2)."""


def _flush_stdout() -> None:
    """Flush stdout; on failure, point its descriptor at /dev/null so that the
    interpreter's own flush at exit raises nothing more."""
    try:
        sys.stdout.flush()
    except OSError:
        _silence_stdout()
        raise


def _silence_stdout() -> None:
    """Point stdout's descriptor at /dev/null (what is still buffered is dropped there)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass


class _Ordered(click.Group):
    def list_commands(self, ctx):
        return list(self.commands)

    def main(self, *args, **kwargs):
        """Run the command; an output that cannot be written (:data:`OUTPUT_ERRNOS`, while
        the command writes or when stdout is flushed at its end) is one line on stderr
        and exit status :data:`OUTPUT_EXIT`, not a traceback. A closed pipe (``| head``:
        the reader has what it wanted) ends quietly with :data:`CLOSED_PIPE_EXIT`."""
        try:
            try:
                return super().main(*args, **kwargs)
            finally:
                _flush_stdout()
        except OSError as err:
            if err.errno == errno.EPIPE:
                sys.exit(CLOSED_PIPE_EXIT)
            if err.errno not in OUTPUT_ERRNOS:
                raise
            from tiletraffic.analysis.cli.outputs import cannot_write

            click.echo(f"error: {cannot_write('the output', err, 'stdout')}", err=True)
            sys.exit(OUTPUT_EXIT)

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent, **extra)
        except NoArgsIsHelpError:
            raise   # no arguments at all: click prints the help
        except click.UsageError as err:
            raise OneLineUsageError(err) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # the reader of stdout is gone: stop writing (click would end with 1, a fault)
            _silence_stdout()
            raise click.exceptions.Exit(CLOSED_PIPE_EXIT) from None
        except NoArgsIsHelpError:
            raise
        except click.UsageError as err:
            # an option error of a command is raised in this group's context: name the command
            path, name = None, ctx.invoked_subcommand
            if (err.ctx is None or err.ctx.command is self) and name in self.commands:
                path = f"{ctx.command_path} {name}"
            raise OneLineUsageError(err, path) from None


@click.group(cls=_Ordered, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tiletraffic")
def main() -> None:
    """tiletraffic: count, predict and measure the memory traffic of naive and tiled
    matrix kernels (GEMM, matrix-vector) in OpenCL's execution model.

    SCHEDULE is a built-in name, or your own kernel: FILE.py:FUNCTION, a function of your
    Python file that returns a tiletraffic Schedule (docs/tutorial.md), or LAUNCH.toml, a
    launch file of an OpenCL C kernel (docs/opencl.md) or of a GLSL compute shader
    (docs/glsl.md)."""
    warnings.showwarning = _show_warning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning a command did not catch itself, as one ``warning: ...`` line on stderr
    (not Python's file:line and source line)."""
    text = " ".join(str(message).split())
    click.echo(f"warning: {text}", err=True)


for _module in COMMANDS:
    main.add_command(_module.command)

if __name__ == "__main__":
    main()
