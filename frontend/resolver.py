"""SCHEDULE string -> :class:`~tiletraffic.simulator.ir.nodes.Schedule`: the one resolver that
``tiletraffic.build`` and every command of the command line use.

A SCHEDULE is one of the forms of :data:`SOURCES`, tried in order:

- ``FILE.py:FUNCTION``: a function of the user's Python file that returns a Schedule, called
  with the sizes given (``m``, ``k``, ``n``, ``tile``; those given only) as keyword arguments
  (:mod:`tiletraffic.frontend.user_schedule`); family options do not apply;
- a built-in name: a family (``gemm-tiled``, ...; :data:`~tiletraffic.simulator.kernels.families.FAMILIES`)
  with its sizes and options, a correct demo (``demo-shift``, ...) or a known-faulty variant
  (``family:variant``, ``gemm-tiled:no-first-barrier``); omitted sizes of a demo or variant,
  and with ``example_shape=True`` of a family too, default to its example shape
  (:data:`~tiletraffic.simulator.kernels.variants.CHECK_EXAMPLES`, ``Variant.example``).

- ``LAUNCH.toml``: an OpenCL C kernel or a GLSL compute shader with its launch file
  (:class:`LaunchFile`; the file's language picks the front end); sizes come from the file,
  replaced by the option ``set``.

Another form is one more :class:`ScheduleSource` added with :func:`register`: an object with
``form`` (how the form is written, for messages and help), ``matches(spec)`` (recognise the
form without reading any file) and ``build(spec, sizes, options, *, example_shape, spell)``.

Errors: :class:`~tiletraffic.simulator.kernels.families.ScheduleError` for a built-in name (unknown,
missing or inapplicable size, parameter out of range), :class:`UserScheduleError` for a user's
file; each a one-line message whose option names are spelled by ``spell`` (keywords for
Python, ``--flags`` for the command line).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from tiletraffic.simulator.model.registers import with_register_budget
from tiletraffic.simulator.ir.nodes import Schedule
from tiletraffic.simulator.kernels.families import ScheduleError

from tiletraffic.frontend import user_schedule
from tiletraffic.frontend.user_schedule import UserScheduleError


@dataclass(frozen=True)
class Sizes:
    """The sizes a SCHEDULE is built at: A is m x k, B is k x n (GEMM), x has k elements
    (matrix-vector); ``tile`` the tile width or work-items per work-group; ``chunk`` the
    elements of x per staged chunk (matvec-local). None: not given."""

    m: int | None = None
    k: int | None = None
    n: int | None = None
    tile: int | None = None
    chunk: int | None = None


def keyword(name: str) -> str:
    """How :func:`resolve`'s messages name an option for Python callers: its keyword."""
    return name


def flag(name: str) -> str:
    """How the command line names an option: ``a_tile`` -> ``--a-tile``."""
    return "--" + name.replace("_", "-")


def launch_only_problem(spec: str, options: dict, spell: Callable[[str], str],
                        sizes: str) -> str | None:
    """Why ``options`` cannot build ``spec``, a schedule other than a launch file, when they
    hold ``set`` (a launch file's size replaced: launch files only; ``sizes`` says how
    ``spec`` is given its sizes instead); None when they do not."""
    if options.get("set") is None:
        return None
    return (f"{spell('set')} NAME=VALUE applies to launch files (LAUNCH.toml) only, not to "
            f"{spec}; give its sizes with {sizes}")


class ScheduleSource(Protocol):
    """One form of SCHEDULE."""

    form: str

    def matches(self, spec: str) -> bool: ...

    def build(self, spec: str, sizes: Sizes, options: dict, *, example_shape: bool,
              spell: Callable[[str], str]) -> Schedule: ...


class UserFunction:
    """``FILE.py:FUNCTION``: the user's function called with the sizes given."""

    form = "FILE.py:FUNCTION"

    def matches(self, spec: str) -> bool:
        return user_schedule.is_file_spec(spec)

    def build(self, spec, sizes, options, *, example_shape, spell):
        if problem := launch_only_problem(spec, options, spell, ", ".join(
                spell(key) for key in ("m", "k", "n", "tile"))):
            raise UserScheduleError(problem)
        extra = [spell(key) for key, v in (("chunk", sizes.chunk), *options.items())
                 if v is not None]
        if extra:
            raise UserScheduleError(f"{', '.join(extra)} applies to built-in schedules only, "
                                    f"not to {spec}")
        return user_schedule.load(spec, m=sizes.m, k=sizes.k, n=sizes.n, tile=sizes.tile)


SIZE_NAMES = {"M": "m", "K": "k", "N": "n"}
"""The sizes as the builders' messages write them (the matrix dimensions), and the options
that give them."""

_NAMING = (" must be", " applies to", " does not apply", " = ", "=", " x ", " >= ",
           " to be ", " times ", " is above", " only", " (")
"""What follows an option's name where a builder's message names the option itself."""


def spelled(message: str, spell: Callable[[str], str]) -> str:
    """A builder's message (``schedules.build``, ``variants.build_any``: the sizes as M, K,
    N, the options by keyword) with each size or option it names as the option that sets it
    spelled by ``spell``: ``tile must be a positive integer, got 0`` -> ``--tile must be
    ...``; ``got K = 66`` -> ``got --k = 66``. A name in other words (``the tile 8``, ``K
    steps``, ``M*K``) is left as it is."""
    import re

    from tiletraffic.simulator.kernels import families as schedules

    names = {**SIZE_NAMES, "tile": "tile", "chunk": "chunk",
             **{key: key for keys in schedules.FAMILY_OPTIONS.values() for key in keys}}
    pattern = re.compile(r"(?<![\w*·/.\-])(" + "|".join(sorted(names, key=len, reverse=True))
                         + r")(?=" + "|".join(re.escape(s) for s in _NAMING) + ")")
    return pattern.sub(lambda match: spell(names[match.group(1)]), message)


class BuiltIn:
    """A family, a correct demo or a faulty variant, by name."""

    form = "a built-in name"

    def names(self) -> list[str]:
        from tiletraffic.simulator.kernels.variants import names
        return names()

    def matches(self, spec: str) -> bool:
        return spec in self.names()

    def build(self, spec, sizes, options, *, example_shape, spell):
        from tiletraffic.simulator.kernels import families as schedules

        m, k, n, tile, chunk = sizes.m, sizes.k, sizes.n, sizes.tile, sizes.chunk
        if problem := launch_only_problem(spec, options, spell, ", ".join(
                spell(key) for key in ("m", "k", "n", "tile"))):
            raise ScheduleError(problem)
        if options and spec not in schedules.FAMILY_OPTIONS:
            takers = _families_taking(options) or list(schedules.FAMILY_OPTIONS)
            raise ScheduleError(f"{', '.join(map(spell, options))} applies to "
                                f"{', '.join(takers)} only, not {spec}")
        allowed = schedules.FAMILY_OPTIONS.get(spec, ())
        if unknown := [key for key in options if key not in allowed]:
            takers = _families_taking(unknown)
            raise ScheduleError(
                f"{spec} does not take {', '.join(map(spell, unknown))}; its options: "
                f"{', '.join(map(spell, allowed))}" + (
                    f" ({', '.join(map(spell, unknown))} applies to {', '.join(takers)})"
                    if takers else ""))
        try:
            return self._build(spec, m, k, n, tile, chunk, options, example_shape, spell)
        except ScheduleError as err:   # the builders name sizes and options by keyword
            if spell is keyword:
                raise
            raise ScheduleError(spelled(str(err), spell)) from None

    @staticmethod
    def _build(spec, m, k, n, tile, chunk, options, example_shape, spell):
        from tiletraffic.simulator.kernels import families as schedules
        from tiletraffic.simulator.kernels.variants import CHECK_EXAMPLES, build_any

        if spec not in schedules.FAMILIES + schedules.SEQUENCE_FAMILIES:
            return build_any(spec, m, k, n, tile, chunk)   # a demo or variant
        matvec = spec in (schedules.MATVEC_FAMILIES + schedules.REDUCTION_MATVEC_FAMILIES
                          + schedules.EPILOGUE_FAMILIES)
        if example_shape and m is None and k is None and n is None:
            ex = CHECK_EXAMPLES[spec]   # no size given: the example's shape and tile
            m, k, n = ex[0], ex[1], ex[2]
            tile = ex[3] if tile is None else tile
        needed = {"m": m, "k": k} if matvec else {"m": m, "k": k, "n": n}
        if missing := [spell(key) for key, v in needed.items() if v is None]:
            raise ScheduleError(missing_sizes_message(spec, [spell(key) for key in needed],
                                                      missing))
        if n is not None and matvec:
            raise ScheduleError(f"{spec} computes y = A·x: {spell('n')} does not apply "
                                f"(got {n})")
        return schedules.build(spec, m, k, n, tile, chunk, **options)


def _families_taking(options) -> list[str]:
    """The built-in families whose options include every one of ``options`` (keys)."""
    from tiletraffic.simulator.kernels import families as schedules
    return [family for family, keys in schedules.FAMILY_OPTIONS.items()
            if set(options) <= set(keys)]


def missing_sizes_message(spec: str, needed: list[str], missing: list[str]) -> str:
    """``gemm-tiled needs its sizes: give --m, --k and --n``, naming what is missing when
    some of them were given."""
    def listed(names):
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"

    return (f"{spec} needs its sizes: give {listed(needed)}"
            + ("" if len(missing) == len(needed) else
               f" ({listed(missing)} {'is' if len(missing) == 1 else 'are'} missing)"))


class LaunchFile:
    """``LAUNCH.toml``: an OpenCL C kernel or a GLSL compute shader with its launch file
    (:mod:`tiletraffic.frontend.launch_file`); its sizes come from the file, replaced by the
    option ``set`` (``{"N": 2048}``; ``--set N=2048``), its macros by ``params``."""

    form = "LAUNCH.toml"

    def matches(self, spec: str) -> bool:
        from tiletraffic.frontend import launch_file
        return launch_file.is_launch_spec(spec)

    def build(self, spec, sizes, options, *, example_shape, spell):
        from tiletraffic.frontend import launch_file
        options = dict(options)
        sets, params = options.pop("set", None), options.pop("params", None)
        given = [spell(key) for key, v in (("m", sizes.m), ("k", sizes.k), ("n", sizes.n),
                                           ("tile", sizes.tile), ("chunk", sizes.chunk),
                                           *options.items()) if v is not None]
        if given:
            raise launch_file.LaunchFileError(
                f"{', '.join(given)}: a launch file gives its own sizes; replace them with "
                f"{spell('set')} NAME=VALUE ({spec})")
        return launch_file.load(spec, sets, params)


SOURCES: list[ScheduleSource] = [UserFunction(), BuiltIn(), LaunchFile()]
"""The forms of SCHEDULE, in the order they are tried."""


def register(source: ScheduleSource) -> None:
    """Add a form of SCHEDULE (tried after the built-in forms; its ``matches`` must not
    accept what theirs accept)."""
    if any(type(s) is type(source) for s in SOURCES):
        return
    SOURCES.append(source)


def source_of(spec: str) -> ScheduleSource | None:
    """The form ``spec`` is written in (None: none)."""
    return next((s for s in SOURCES if s.matches(spec)), None)


def unknown_message(spec: str) -> str:
    """The one-line error for a SCHEDULE of no known form."""
    others = [s.form for s in SOURCES if not isinstance(s, BuiltIn)]
    return (f"\"{spec}\" is neither a schedule name ({', '.join(BuiltIn().names())}) nor "
            + " nor ".join(others))


def resolve(spec: str, sizes: Sizes = Sizes(), options: dict | None = None, *,
            example_shape: bool = False, spell: Callable[[str], str] = keyword) -> Schedule:
    """The schedule ``spec`` names, at ``sizes``, with family ``options`` (``mapping``,
    ``padding``, ``a_tile``, ``tm``, ``tn``, ``bk``, ``wg_rows``; None values left out).
    The option ``max_registers`` applies to every form: the register budget of each kernel
    (:func:`tiletraffic.simulator.model.registers.with_register_budget`).

    ``example_shape``: a family given without sizes is built at its example shape (as
    demos and variants always are), as ``check`` and ``crosscheck`` do.

    Raises:
        ScheduleError: an unknown SCHEDULE, a built-in one's sizes or options are wrong, or
            ``max_registers`` is not a positive integer.
        UserScheduleError: the user's file or function cannot be loaded or built, or it was
            given a family option.
        tiletraffic.frontend.launch_file.LaunchFileError,
        tiletraffic.frontend.opencl.translate.FrontendError: a launch file or its kernel is wrong.
    """
    options = {key: v for key, v in (options or {}).items() if v is not None}
    max_registers = options.pop("max_registers", None)
    if max_registers is not None and (isinstance(max_registers, bool)
                                      or not isinstance(max_registers, int)
                                      or max_registers < 1):
        raise ScheduleError(f"{spell('max_registers')} must be a positive integer, got "
                            f"{max_registers!r}")
    source = source_of(spec)
    if source is None:
        raise ScheduleError(unknown_message(spec))
    built = source.build(spec, sizes, options, example_shape=example_shape, spell=spell)
    return with_register_budget(built, max_registers)
