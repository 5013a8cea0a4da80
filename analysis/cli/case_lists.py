"""The case-list options of ``tiletraffic validate``: ``--quick``, ``--case-list NAME`` or
``--cases FILE``, and the options of a built-in list, ``--dtype float32|float16``,
``--batch COUNT`` and ``--shared-b`` (:func:`analysis.validation.cases.case_list`)."""
from __future__ import annotations

import click

from tiletraffic.analysis.cli.batching import BATCH_HELP, SHARED_B_HELP, Dtype


class CaseListName(click.Choice):
    """A built-in case list's name (``validation.cases.CASE_SIZES``), looked up when the
    option is used, so that the other commands do not import the validation."""

    def __init__(self):
        super().__init__([])

    @property
    def choices(self):
        from tiletraffic.analysis.validation.cases import CASE_SIZES

        return list(CASE_SIZES)

    @choices.setter
    def choices(self, value):
        pass


def case_list_options(f):
    """--dtype, --batch and --shared-b of a built-in case list, as arguments of the command
    (``dtype``, ``batch``, ``shared_b``)."""
    f = click.option("--shared-b", "shared_b", is_flag=True,
                     help="With --batch: " + SHARED_B_HELP.split(": ", 1)[1])(f)
    f = click.option("--batch", "batch", type=click.IntRange(min=1), default=None,
                     metavar="COUNT",
                     help="Every GEMM case of the built-in list a batch: "
                          + BATCH_HELP.split(": ", 1)[1].split(" [default")[0]
                          + ". The matrix-vector cases stay one product.")(f)
    return click.option("--dtype", "dtype", type=Dtype(), default=None,
                        metavar="float32|float16",
                        help="Storage of every case of the built-in list: float32 (the "
                             "default) or float16 (half: read with vload_half, computed in "
                             "float32, rounded to half when stored; checked against float64 "
                             "with half's tolerance).")(f)


def chosen_cases(quick, case_list_name, cases_file, options, predictions_file=None):
    """(cases or None, the list's recorded name or None, its plain name or None) from
    --quick / --case-list / --cases and the list ``options`` (dtype, batch, shared_b);
    every error a usage error (exit 2): the options refused with --cases and with
    ``predictions_file`` but no list (unused there) before their values are
    checked."""
    from tiletraffic.analysis.cli.common import refuse_unused
    from tiletraffic.analysis.validation.cases import (CaseError, case_list, case_list_label,
                                                       read_cases)

    given = [o for o, v in (("--quick", quick), ("--case-list", case_list_name),
                            ("--cases", cases_file)) if v]
    if len(given) > 1:
        raise click.UsageError(f"give one of {', '.join(given)}, not several")
    if cases_file:
        refuse_unused(("dtype", "batch", "shared_b"), "with --cases: each [[case]] of the "
                      "file carries its own (dtype = \"float16\", batch = 8)",
                      "set them in the file, or leave them out")
        try:
            return read_cases(cases_file), None, None
        except CaseError as err:
            raise click.UsageError(str(err)) from None
    name = "quick" if quick else case_list_name
    if predictions_file and not name:
        refuse_unused(("dtype", "batch", "shared_b"), "with --predictions and no case list: "
                      "the file's cases are measured", "give the list they were predicted "
                      "for (e.g. --quick --dtype float16), or leave them out")
    if options.get("shared_b") and (options.get("batch") or 1) < 2:
        raise click.UsageError(f"--shared-b applies to a batch of 2 or more products, got "
                               f"--batch {options.get('batch') or 1}; give --batch 2 or more")
    if not name:
        return None, None, None
    try:
        return case_list(name, **options), case_list_label(name, **options), name
    except CaseError as err:
        raise click.UsageError(str(err)) from None
