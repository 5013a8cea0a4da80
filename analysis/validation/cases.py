"""The cases ``tiletraffic validate`` runs: :class:`Case` (a family at sizes, with options and
the compiled registers per work-item the model uses), the built-in case lists
(:data:`CASE_SIZES`), case files (TOML ``[[case]]`` tables) read and written.

Pure data: nothing here needs a device or the model.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from tiletraffic.simulator.kernels import families as schedules
from tiletraffic.simulator.ir.nodes import Schedule

from tiletraffic.simulator.model.file_values import shown

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

BASELINES = {"gemm": "gemm-naive", "matvec": "matvec-naive"}
"""Kind of problem -> the family every other schedule of that problem is compared with."""

OPTION_KEYS = ("chunk", "mapping", "padding", "a_tile", "tm", "tn", "bk", "wg_rows", "wn",
               "group_rows", "splits", "batch", "shared_b", "dtype", "vec")
"""Keys a case may carry beside family, m, k, n and tile (``schedules.build``'s options)."""


_CASE_FAMILIES = schedules.FAMILIES + schedules.SEQUENCE_FAMILIES
"""Families a case may name: every schedule family and the sequences of kernels
(``gemm-split-k``: its kernels run and are timed one after the other, as one case)."""
_GEMM_FAMILIES = schedules.ALL_GEMM_FAMILIES + schedules.SEQUENCE_FAMILIES


class CaseError(ValueError):
    """A case (or a case file) is malformed; the message names the case and the field."""


@dataclass(frozen=True)
class Case:
    """One schedule at one size: what ``validate`` predicts, runs and compares.

    Attributes:
        family: a schedule family (``schedules.FAMILIES``).
        m, k, n: sizes (A is m×k, B k×n; ``n`` is ``None`` for a matrix-vector product).
        tile: the family's tile / work-group width (``schedules.DEFAULT_TILE`` when
            omitted in a file: always explicit here, so a case's id names it).
        options: ``(key, value)`` pairs of :data:`OPTION_KEYS`, sorted by key.
        registers: the compiled kernel's registers per work-item (what ``tiletraffic run``
            prints on NVIDIA), which the model's occupancy then uses instead of its
            estimate from the schedule; ``None``: estimated (warned). Not a schedule
            option: the kernel run is the same.
        instructions: an instructions file of the compiled kernel (``tiletraffic
            instructions``), whose counts the model's issue term then uses; ``None``: the
            simulator's count. Not a schedule option either.
    """

    family: str
    m: int
    k: int
    n: int | None
    tile: int
    options: tuple[tuple[str, Any], ...] = ()
    registers: int | None = None
    launch: str | None = None
    """A launch file (``LAUNCH.toml`` of an OpenCL C kernel) instead of a family; then
    ``options`` holds its ``set`` sizes and ``params`` macros as ``("set.N", 1024)``,
    ``("params.TS", 16)`` pairs, ``family`` is ``opencl:<kernel>``, m, k, n and tile 0."""
    instructions: str | None = None

    @property
    def kind(self) -> str:
        """``"gemm"``, ``"matvec"``, or for a launch file ``"opencl"`` (``"glsl"`` for a
        GLSL shader's)."""
        if self.launch is not None:
            return "glsl" if self.family.startswith("glsl:") else "opencl"
        return "gemm" if self.family in _GEMM_FAMILIES else "matvec"

    @property
    def problem(self) -> str:
        """The problem the case solves, e.g. ``"gemm 1024×1024×1024"`` (M×K×N),
        ``"gemm 64 × 128×128×128"`` (a batch of 64), ``"matvec 4096×4096"`` (M×K) or
        ``"matvec 4096×4096 float16"`` (half storage, ``dtype = "float16"``): cases
        of one problem are ranked against each other.
        Launch-file cases of one file and one ``set`` solve one problem (their macros
        differ)."""
        if self.launch is not None:
            sets = [f"{key[4:]}={v}" for key, v in self.options if key.startswith("set.")]
            return " ".join([f"{self.kind} {Path(self.launch).name}", *sets])
        sizes = (self.m, self.k) + ((self.n,) if self.kind == "gemm" else ())
        options = dict(self.options)
        batch = options.get("batch", 1)
        shared = " shared B" if options.get("shared_b") else ""
        prefix = f"{batch} × " if batch != 1 else ""
        storage = " float16" if options.get("dtype") == "float16" else ""
        return f"{self.kind} {prefix}{'×'.join(map(str, sizes))}{shared}{storage}"

    @property
    def id(self) -> str:
        """Unique text of the case: family, sizes, tile, options and ``registers`` (when
        given), e.g. ``"gemm-vectorized m=4096 k=4096 n=4096 tile=8 bk=16 tm=8 tn=8 wg_rows=8"``
        or ``"gemm-prefetch m=4096 k=4096 n=4096 tile=16 bk=16 tm=4 tn=4 registers=79"``;
        for a launch file ``"launch=mm_tiled.toml set.N=1024 params.TS=16"``."""
        if self.launch is not None:
            return " ".join([f"launch={self.launch}",
                             *(f"{key}={value}" for key, value in self.options),
                             *([f"registers={self.registers}"] if self.registers else [])])
        sizes = [f"m={self.m}", f"k={self.k}"] + ([f"n={self.n}"] if self.n is not None else [])
        return " ".join([self.family, *sizes, f"tile={self.tile}",
                         *(f"{key}={value}" for key, value in self.options),
                         *([f"registers={self.registers}"] if self.registers is not None else []),
                         *([f"instructions={self.instructions}"] if self.instructions else [])])

    @property
    def label(self) -> str:
        """Short label for tables and figures: the id without the sizes, the family's default
        tile and ``registers`` (the kernel is the same)."""
        if self.launch is not None:
            return Path(self.launch).stem + "".join(
                f" {key[7:]}={value}" for key, value in self.options
                if key.startswith("params."))
        extra = "" if self.tile == schedules.DEFAULT_TILE[self.family] else f" B={self.tile}"
        return self.family + extra + "".join(f" {key}={value}" for key, value in self.options)

    @property
    def is_baseline(self) -> bool:
        return self.family == BASELINES.get(self.kind)

    def reference_function(self):
        """The launch file's reference (None for a built-in family: it has its own)."""
        if self.launch is None:
            return None
        from tiletraffic.frontend import launch_file
        return launch_file.reference_function(self.launch)

    def build(self) -> Schedule:
        """The schedule. Raises ``schedules.ScheduleError`` for a parameter out of range
        (a launch file: ``LaunchFileError`` or ``FrontendError``)."""
        if self.launch is not None:
            from tiletraffic.frontend import launch_file
            sets = {key[4:]: v for key, v in self.options if key.startswith("set.")}
            params = {key[7:]: v for key, v in self.options if key.startswith("params.")}
            return launch_file.load(self.launch, sets, params)
        options = dict(self.options)
        chunk = options.pop("chunk", None)
        return schedules.build(self.family, self.m, self.k, self.n, self.tile, chunk, **options)

    def to_dict(self) -> dict:
        """JSON- and TOML-ready: ``family, m, k, [n,] tile`` and the options (a launch
        file: ``launch``, ``set`` and ``params`` tables)."""
        if self.launch is not None:
            out: dict = {"launch": self.launch}
            for table in ("set", "params"):
                values = {key.split(".", 1)[1]: v for key, v in self.options
                          if key.startswith(table + ".")}
                if values:
                    out[table] = values
            if self.registers is not None:
                out["registers"] = self.registers
            return out
        out = {"family": self.family, "m": self.m, "k": self.k}
        if self.n is not None:
            out["n"] = self.n
        out["tile"] = self.tile
        out.update(self.options)
        if self.registers is not None:
            out["registers"] = self.registers
        if self.instructions is not None:
            out["instructions"] = self.instructions
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "case") -> Case:
        """The case a dict describes (``to_dict``'s keys; ``tile`` optional).

        Raises:
            CaseError: a missing or unknown key, a size that is not a positive integer, an
                unknown family, ``n`` given for a matrix-vector family or missing for a GEMM,
                or a schedule that cannot be built at these sizes (the builder's message),
                or ``registers`` not a positive integer, or ``instructions`` not a path.
        """
        if not isinstance(data, Mapping):
            raise CaseError(f"{where}: a case is a table of family, m, k, n, tile, ..., "
                            f"got {shown(data)}")
        if "launch" in data:
            return _launch_case(cls, data, where)
        unknown = sorted(set(data) - {"family", "m", "k", "n", "tile", "registers",
                                      "instructions", *OPTION_KEYS})
        if unknown:
            raise CaseError(f"{where}: unknown key(s) {', '.join(unknown)} (known: family, m, "
                            f"k, n, tile, {', '.join(OPTION_KEYS)}, registers, instructions)")
        instructions = data.get("instructions")
        if instructions is not None and (not isinstance(instructions, str) or not instructions):
            raise CaseError(f"{where}: instructions (an instructions file's path) must be a "
                            f"text, got {shown(instructions)}")
        registers = data.get("registers")
        if registers is not None and (not isinstance(registers, int)
                                      or isinstance(registers, bool) or registers < 1):
            raise CaseError(f"{where}: registers (the compiled kernel's registers per "
                            f"work-item) must be a positive integer, got {shown(registers)}")
        family = data.get("family")
        if family not in _CASE_FAMILIES:
            said = "missing (one of" if family is None else \
                f"{family!r} is not one of" if isinstance(family, str) else \
                f"{shown(family)} is not one of"
            raise CaseError(f"{where}: family {said} {', '.join(_CASE_FAMILIES)}"
                            + (")" if family is None else ""))
        sizes = {}
        for key in ("m", "k", "n", "tile"):
            value = data.get(key)
            if value is None and key in ("n", "tile"):
                sizes[key] = None
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise CaseError(f"{where}: {key} " + ("missing (a positive integer)"
                                if value is None else
                                f"must be a positive integer, got {shown(value)}"))
            sizes[key] = value
        gemm = family in _GEMM_FAMILIES
        if gemm and sizes["n"] is None:
            raise CaseError(f"{where}: {family} needs n (columns of B and C)")
        if not gemm and sizes["n"] is not None:
            raise CaseError(f"{where}: {family} computes y = A·x: n does not apply "
                            f"(got {sizes['n']})")
        tile = schedules.DEFAULT_TILE[family] if sizes["tile"] is None else sizes["tile"]
        options = tuple(sorted((key, data[key]) for key in OPTION_KEYS if key in data))
        case = cls(family, sizes["m"], sizes["k"], sizes["n"], tile, options, registers,
                   instructions=instructions)
        try:
            case.build()
        except (schedules.ScheduleError, TypeError) as err:
            raise CaseError(f"{where} ({case.id}): {err}") from None
        return case


def _launch_case(cls, data: Mapping[str, Any], where: str) -> Case:
    """A launch-file case: ``launch`` (its path), optional ``set`` and ``params`` tables of
    integers, optional ``registers``.

    Raises:
        CaseError: an unknown key, a value that is not an integer, or a launch file that
            gives no schedule (its one-line message).
    """
    from tiletraffic.frontend.opencl.translate import FrontendError

    from tiletraffic.frontend import launch_file
    unknown = sorted(set(data) - {"launch", "set", "params", "registers"})
    if unknown:
        raise CaseError(f"{where}: unknown key(s) {', '.join(unknown)} (a launch case has "
                        "launch, set, params, registers)")
    options = []
    for table in ("set", "params"):
        values = data.get(table, {})
        if not isinstance(values, Mapping) or any(
                isinstance(v, bool) or not isinstance(v, int) for v in values.values()):
            raise CaseError(f"{where}: {table} must be a table of integers, got "
                            f"{shown(values)}" + ("" if not isinstance(values, Mapping) else
                                                  " with other values"))
        options += [(f"{table}.{key}", int(v)) for key, v in sorted(values.items())]
    registers = data.get("registers")
    if registers is not None and (not isinstance(registers, int)
                                  or isinstance(registers, bool) or registers < 1):
        raise CaseError(f"{where}: registers must be a positive integer, got "
                        f"{shown(registers)}")
    path = data["launch"]
    if not isinstance(path, str) or not launch_file.is_launch_spec(path):
        raise CaseError(f"{where}: launch must be the path of a .toml launch file")
    case = cls("", 0, 0, None, 0, tuple(options), registers, path)
    try:
        sch = case.build()
    except (launch_file.LaunchFileError, FrontendError, schedules.ScheduleError) as err:
        raise CaseError(f"{where}: {err}") from None
    return dataclasses.replace(case, family=sch.family)


def _cases(gemm_sizes: Sequence[int], matvec_sizes: Sequence[int]) -> tuple[Case, ...]:
    out = []
    for n in gemm_sizes:
        out += [Case.from_dict({"m": n, "k": n, "n": n, **spec}) for spec in GEMM_SCHEDULES]
    for n in matvec_sizes:
        out += [Case.from_dict({"m": n, "k": n, **spec}) for spec in MATVEC_SCHEDULES]
    return tuple(out)


GEMM_SCHEDULES = (
    {"family": "gemm-naive", "tile": 16},
    {"family": "gemm-tiled", "tile": 16},
    {"family": "gemm-tiled", "tile": 32},
    {"family": "gemm-register-blocked", "tile": 16, "tm": 4, "tn": 4, "bk": 16},
    {"family": "gemm-vectorized", "tile": 16, "tm": 4, "tn": 4, "bk": 16},
    {"family": "gemm-vectorized", "tile": 8, "wg_rows": 8, "tm": 8, "tn": 8, "bk": 16},
    {"family": "gemm-prefetch", "tile": 16, "tm": 4, "tn": 4, "bk": 16},
    {"family": "gemm-warp-tiled", "tile": 16, "tm": 8, "tn": 8, "bk": 16},
)
"""The GEMM schedules of every case list, at each GEMM size (M = K = N): the ladder naive ->
tiled -> register-blocked -> vectorized -> prefetch -> warp-tiled with each family's defaults, plus tiled
B = 32 and a hand-picked fast gemm-vectorized (TM = TN = 8, BK = 16, an 8×8
work-group)."""

MATVEC_SCHEDULES = (
    {"family": "matvec-naive", "tile": 256},
    {"family": "matvec-local", "tile": 256},
    {"family": "matvec-local-whole", "tile": 256},
    {"family": "matvec-rows-reduce", "tile": 32, "wg_rows": 8},
    {"family": "matvec-relu", "tile": 256},
)
"""The matrix-vector schedules of every case list, at each matvec size (M = K)."""

CASE_SIZES = {
    "quick": ((64, 128), (256, 1024)),
    "cpu": ((256, 512), (2048, 4096)),
    "gpu": ((1024, 4096), (4096, 8192)),
}
"""Case list name -> (GEMM sizes, matvec sizes). ``quick``: tiny, seconds on PoCL (CI);
``cpu``: a CPU OpenCL device (PoCL) without --quick; ``gpu``: what a performance engineer
checks on a GPU (its N = 4096 GEMMs dominate the kernels' time; the host's float64
reference checks of those GEMMs, A·B and |A|·|B| once per case and round, take longer than
the kernels)."""


LIST_OPTIONS = ("dtype", "batch", "shared_b")
"""Options a built-in case list may be given (:func:`case_list`): ``dtype`` (every case's
storage), ``batch`` and ``shared_b`` (every GEMM case's batch)."""


def list_options(dtype: str | None = None, batch: int | None = None,
                 shared_b: bool = False) -> dict:
    """The options of a built-in case list, checked, without those left at their defaults:
    ``dtype`` ``"float32"`` or ``"float16"`` (``None``: float32), ``batch`` a positive
    integer (``None``: 1), ``shared_b`` a bool (needs a batch of 2 or more).

    Raises:
        CaseError: a value outside these, naming it and the values allowed.
    """
    from tiletraffic.simulator.kernels.storage import DTYPES

    if dtype is not None and dtype not in DTYPES:
        raise CaseError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int)
                              or batch < 1):
        raise CaseError(f"batch must be a positive integer, got {batch!r}")
    if not isinstance(shared_b, bool):
        raise CaseError(f"shared_b must be true or false, got {shared_b!r}")
    if shared_b and (batch or 1) < 2:
        raise CaseError(f"shared_b applies to a batch of 2 or more products, got batch = "
                        f"{batch or 1}")
    out = {"dtype": dtype if dtype != "float32" else None,
           "batch": batch if batch != 1 else None, "shared_b": shared_b or None}
    return {key: value for key, value in out.items() if value is not None}


def with_list_options(cases: Iterable[Case], **options) -> tuple[Case, ...]:
    """``cases`` with :func:`list_options` ``options``: ``dtype`` given to every case,
    ``batch`` and ``shared_b`` to every GEMM case (a matrix-vector case stays one
    product). A case's own value of an option is replaced.

    Raises:
        CaseError: a bad option (:func:`list_options`), or a case that cannot be built with
            them (naming the case).
    """
    options = list_options(**options)
    out = []
    for case in cases:
        own = {key: value for key, value in options.items()
               if key == "dtype" or case.kind == "gemm"}
        if not own:
            out.append(case)
            continue
        merged = {**dict(case.options), **own}
        out.append(Case.from_dict({**case.to_dict(), **merged}, "case list"))
    return tuple(out)


def case_list_label(name: str, **options) -> str:
    """The name a built-in list with :func:`list_options` ``options`` is recorded under
    (``validation.json``, a predictions file): ``"quick"``, or the name followed by the
    options as the command line spells them, e.g. ``"quick --dtype float16 --batch 8"``.

    Raises:
        CaseError: a bad option.
    """
    options = list_options(**options)
    words = [name]
    if "dtype" in options:
        words += ["--dtype", options["dtype"]]
    if "batch" in options:
        words += ["--batch", str(options["batch"])]
    if options.get("shared_b"):
        words.append("--shared-b")
    return " ".join(words)


def case_list_folder(label: str) -> str:
    """The suffix of the default results folder of the list recorded as ``label``
    (:func:`case_list_label`): ``"-quick"`` for the quick list, ``""`` for ``cpu`` and
    ``gpu``, then ``-float16``, ``-batch8``, ``-shared-b`` for the options, so that a
    list in half storage or batched does not replace the float32 list's results."""
    words = label.split()
    suffix = "-quick" if words and words[0] == "quick" else ""
    for word, following in zip(words[1:], words[2:] + [""]):
        if word == "--dtype":
            suffix += f"-{following}"
        elif word == "--batch":
            suffix += f"-batch{following}"
        elif word == "--shared-b":
            suffix += "-shared-b"
    return suffix


def case_list(name: str, *, dtype: str | None = None, batch: int | None = None,
              shared_b: bool = False) -> tuple[Case, ...]:
    """The built-in case list ``name`` (a key of :data:`CASE_SIZES`): every case stored as
    ``dtype`` (``"float32"``, the default, or ``"float16"``: half storage), every GEMM case
    a batch of ``batch`` products (``shared_b``: one B for the batch); the matrix-vector
    cases stay one product.

    Raises:
        KeyError: an unknown name (the message lists the names).
        CaseError: a bad ``dtype``, ``batch`` or ``shared_b`` (naming the value and the
            values allowed).
    """
    if name not in CASE_SIZES:
        raise KeyError(f"unknown case list {name!r}; built-in: {', '.join(CASE_SIZES)}")
    return with_list_options(_cases(*CASE_SIZES[name]), dtype=dtype, batch=batch,
                             shared_b=shared_b)


def default_case_list_name(quick: bool, is_gpu: bool) -> str:
    """``quick`` with --quick, else ``gpu`` on a GPU and ``cpu`` on any other device."""
    return "quick" if quick else ("gpu" if is_gpu else "cpu")


def read_cases(path: str | Path) -> tuple[Case, ...]:
    """The cases of a TOML case file: one ``[[case]]`` table per case with ``family``, ``m``,
    ``k``, ``n`` (GEMM only), optional ``tile`` and options (:data:`OPTION_KEYS`), as
    :func:`cases_toml` writes them; or with ``launch`` (a launch file, relative to the case
    file), optional ``set = {N = 1024}`` and ``params = {TS = 16}``.

    Raises:
        CaseError: the file cannot be read, is not TOML, has no ``[[case]]``, a malformed
            case (its number and the field), or the same case twice.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise CaseError(f"{path}: cannot read the case file ({err.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise CaseError(f"{path}: not a TOML file ({err})") from None
    extra = sorted(set(data) - {"case"})
    if extra or not isinstance(data.get("case"), list) or not data["case"]:
        raise CaseError(f"{path}: a case file holds [[case]] tables only"
                        + (f" (found {', '.join(extra)})" if extra else " (none found)"))
    cases = [({**c, "launch": str(path.parent / c["launch"])}
              if isinstance(c, Mapping) and isinstance(c.get("launch"), str)
              and not Path(c["launch"]).is_absolute() else c) for c in data["case"]]
    return check_unique([Case.from_dict(c, f"{path}: case {i + 1}")
                         for i, c in enumerate(cases)], str(path))


def check_unique(cases: Iterable[Case], where: str) -> tuple[Case, ...]:
    """``cases`` as a tuple. Raises :class:`CaseError` naming a case listed twice."""
    cases = tuple(cases)
    seen = set()
    for c in cases:
        if c.id in seen:
            raise CaseError(f"{where}: case {c.id!r} is listed twice")
        seen.add(c.id)
    if not cases:
        raise CaseError(f"{where}: no cases")
    return cases


def _toml_value(value) -> str:
    """A TOML value: a number or string as JSON writes it, a dict as an inline table."""
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def cases_toml(cases: Iterable[Case]) -> str:
    """The case file of ``cases`` (read back by :func:`read_cases`)."""
    lines = ["# tiletraffic validate --cases FILE: one [[case]] per schedule and size"]
    for c in cases:
        lines += ["", "[[case]]"]
        lines += [f"{key} = {_toml_value(value)}" for key, value in c.to_dict().items()]
    return "\n".join(lines) + "\n"
