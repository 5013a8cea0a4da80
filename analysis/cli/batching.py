"""The command line's batch options: ``--batch COUNT`` and ``--shared-b``, taken by every command
that builds a GEMM family at its sizes (:mod:`simulator.kernels.batch`), and the storage
option ``--dtype float32|float16`` of every family (:mod:`simulator.kernels.storage`); kept,
as the other family options, in the click context's ``family_options``."""
from __future__ import annotations

import click


def _remember(ctx, param, value):
    if value is not None:
        ctx.meta.setdefault("family_options", {})[param.name] = value
    return value


def _remember_flag(ctx, param, value):
    if value:
        ctx.meta.setdefault("family_options", {})[param.name] = True
    return value


BATCH_HELP = ("Every GEMM family: compute COUNT independent products C[b] = A[b]·B[b] in "
              "one launch, NDRange dimension 2 selecting the matrix (A, B, C each COUNT x "
              "rows x columns, row-major) [default: 1, one product].")
SHARED_B_HELP = ("With --batch: one K x N matrix B for the whole batch (a layer's weights "
                 "applied to every input): C[b] = A[b]·B.")


DTYPE_HELP = ("Every GEMM and matrix-vector family: storage of its matrices and vectors, "
              "float32 (4 bytes) or float16 (half: 2 bytes, read with vload_half, "
              "computed in float32, rounded to half when stored) [default: float32].")


class Dtype(click.ParamType):
    """``float32`` or ``float16`` (``simulator.kernels.storage.DTYPES``); anything else a
    usage error naming the value and both."""

    name = "float32|float16"

    def convert(self, value, param, ctx):
        from tiletraffic.simulator.kernels.storage import DTYPES

        if value not in DTYPES:
            self.fail(f"{value!r} is not one of {', '.join(DTYPES)}", param, ctx)
        return value


def dtype_option(f):
    """--dtype float32|float16 (every family; :mod:`simulator.kernels.storage`)."""
    return click.option("--dtype", "dtype", type=Dtype(), default=None, metavar="float32|float16",
                        expose_value=False, callback=_remember, help=DTYPE_HELP)(f)


def batch_options(f):
    """--batch COUNT and --shared-b (every GEMM family; :mod:`simulator.kernels.batch`),
    with --dtype (every family)."""
    f = dtype_option(f)
    f = click.option("--shared-b", "shared_b", is_flag=True, default=False,
                     expose_value=False, callback=_remember_flag, help=SHARED_B_HELP)(f)
    return click.option("--batch", "batch", type=int, default=None, metavar="COUNT",
                        expose_value=False, callback=_remember, help=BATCH_HELP)(f)




def tune_batch_options(f):
    """--batch COUNT, --shared-b and --dtype as arguments of the command (``tune gemm``:
    every candidate is built with them)."""
    f = click.option("--shared-b", "shared_b", is_flag=True, help=SHARED_B_HELP)(f)
    f = click.option("--dtype", "dtype", type=Dtype(), default="float32", show_default=True,
                     metavar="float32|float16",
                     help="Storage of A, B and C: float32, or float16 (half: read with "
                          "vload_half, computed in float32, rounded to half when stored); "
                          "every candidate is built with it.")(f)
    return click.option("--batch", "batch", type=int, default=1, show_default=True,
                        metavar="COUNT", help=BATCH_HELP.split(" [default")[0])(f)
