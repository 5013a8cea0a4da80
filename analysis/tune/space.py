"""Tuning spaces as data: parameters, derived values and constraints read from a TOML file.

The file (the built-in one is ``analysis/tune/spaces/gemm.toml``, whose comments document
the format) lists schedule families, each with the values of its parameters; every
combination is a :class:`Candidate`. Constraints are expressions (:mod:`frontend.expressions`,
parsed and checked when the file is read, evaluated by walking the tree, never ``eval``) over
the sizes ``M``, ``N``, ``K``, the parameters, the file's ``[constants]``, the family's
derived values and the device limits of :func:`limit_values`. :func:`check_candidate` gives
the reasons a candidate is invalid; the tuner (:mod:`analysis.tune.tuner`) rejects it before
building or launching anything.

Errors: :class:`SpaceError` (a ``ValueError``) names the file, the entry (``family 2
(gemm-vectorized), constraint 3``) and the problem: unreadable TOML, an unknown key or
family, a parameter the family's builder does not take, values that are not a non-empty
list of integers, a malformed expression or an unknown name in it.
"""
from __future__ import annotations

import hashlib
import itertools
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Iterator, Mapping

from tiletraffic.simulator.kernels import families as schedules
from tiletraffic.simulator.engine.limits import DeviceLimits
from tiletraffic.simulator.model.registers import with_register_budget

from tiletraffic.frontend.expressions import (BOOLEAN, NUMBER, Expression, ExpressionError,
                                              parse)
from tiletraffic.simulator.model.file_values import shown

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SIZE_NAMES = ("M", "N", "K")
LIMIT_NAMES = ("device_max_work_group_size", "device_max_work_item_size_0",
               "device_max_work_item_size_1", "device_local_mem_bytes",
               "device_register_budget")
"""Names of the device limits an expression may read (:func:`limit_values`)."""

OPERATION_FAMILIES = {"gemm": schedules.ALL_GEMM_FAMILIES + schedules.SEQUENCE_FAMILIES}
"""Operation -> the families a space of it may list."""

INTEGER_OPTIONS = {"gemm-naive": ("tile",), "gemm-tiled": ("tile", "padding"),
                   **{f: ("tile", "tm", "tn", "bk", "wg_rows")
                      for f in schedules.REGISTER_BLOCKED_FAMILIES},
                   "gemm-warp-tiled": ("tile", "tm", "tn", "bk", "wg_rows", "wn",
                                       "group_rows", "max_registers"),
                   "gemm-split-k": ("tile", "tm", "tn", "bk", "wg_rows", "wn", "group_rows",
                                    "splits", "max_registers")}
"""Family -> the integer arguments of its builder a space may tune (``max_registers``: the
register budget of :func:`tiletraffic.simulator.model.registers.with_register_budget`, 0 for
none)."""

_TOP_KEYS = ("description", "operation", "constants", "constraint", "family")
_FAMILY_KEYS = ("name", "parameters", "derived", "constraint")
_CONSTRAINT_KEYS = ("rule", "why")


class SpaceError(ValueError):
    """A tuning-space file is malformed; the message names the file, the entry and the
    problem."""


@dataclass(frozen=True)
class Constraint:
    """One rule: ``rule`` must be true for a valid candidate.

    Attributes:
        rule: the parsed expression (a truth value).
        why: the reason reported when it is false (default: the rule's text).
        where: the entry of the file it comes from, for messages.
    """

    rule: Expression
    why: str
    where: str

    def reason(self, values: Mapping[str, float]) -> str:
        """Why a candidate with ``values`` fails this rule (the rule, its values, why)."""
        shown = f"{self.rule.text} is false ({self.rule.values_shown(values)})"
        return shown if self.why == self.rule.text else f"{self.why}: {shown}"


@dataclass(frozen=True)
class Candidate:
    """One point of a space: a family and a value for each of its tuned parameters.

    Attributes:
        family: a schedule family (:data:`simulator.kernels.families.FAMILIES`).
        params: (parameter, value) pairs in the file's order.
    """

    family: str
    params: tuple

    @property
    def options(self) -> dict:
        """Parameter -> value."""
        return dict(self.params)

    @property
    def label(self) -> str:
        """``gemm-vectorized tile=8 wg_rows=8 tm=8 tn=8 bk=16``: unique within a space;
        ``max_registers`` is shown only where it is a budget (above 0: 0 means none, and
        the label of a candidate that differs only in it then lacks the field)."""
        return " ".join([self.family] + [f"{k}={v}" for k, v in self.params
                                         if not (k == "max_registers" and v == 0)])

    def build(self, m: int, n: int, k: int, batch: int = 1, shared_b: bool = False,
              dtype: str = "float32"):
        """The candidate's schedule at M×K·K×N (:func:`simulator.kernels.families.build`), with
        its register budget where ``max_registers`` is a parameter above 0; ``batch``
        products in one launch (one B for all where ``shared_b``), stored as ``dtype``.

        Raises:
            ScheduleError: the builder refuses the parameters or sizes.
        """
        options = self.options
        tile = options.pop("tile", None)
        budget = options.pop("max_registers", 0)
        if batch != 1 or shared_b:
            options.update(batch=batch, shared_b=shared_b)
        if dtype != "float32":
            options.update(dtype=dtype)
        return with_register_budget(schedules.build(self.family, m, k, n, tile, **options),
                                    budget or None)


@dataclass(frozen=True)
class FamilySpace:
    """The part of a space for one family.

    Attributes:
        family: the family's name.
        parameters: parameter -> its values, in the file's order.
        derived: name -> expression (a number), evaluated in order.
        constraints: the common constraints, then the family's own.
    """

    family: str
    parameters: dict
    derived: dict
    constraints: tuple

    def candidates(self) -> Iterator[Candidate]:
        """Every combination of the parameters' values (the last parameter varies fastest)."""
        names = list(self.parameters)
        for values in itertools.product(*self.parameters.values()):
            yield Candidate(self.family, tuple(zip(names, values)))


@dataclass(frozen=True)
class TuningSpace:
    """A parsed tuning-space file.

    Attributes:
        path: where it was read from.
        operation: what it tunes (``"gemm"``).
        description: the file's description.
        constants: name -> number (``[constants]``).
        families: one :class:`FamilySpace` per ``[[family]]``, in file order.
        sha256: digest of the file's bytes (a resumed tuning must use the same space).
    """

    path: str
    operation: str
    description: str
    constants: dict
    families: tuple
    sha256: str

    def candidates(self) -> Iterator[tuple[FamilySpace, Candidate]]:
        """Every candidate of every family, in file order, with its family's space."""
        for fam in self.families:
            for cand in fam.candidates():
                yield fam, cand

    @property
    def size(self) -> int:
        """Number of candidates before constraints."""
        total = 0
        for fam in self.families:
            count = 1
            for values in fam.parameters.values():
                count *= len(values)
            total += count
        return total


def default_space_path() -> Path:
    """The built-in space of GEMM, ``analysis/tune/spaces/gemm.toml``."""
    return Path(str(resources.files("tiletraffic.analysis.tune").joinpath("spaces/gemm.toml")))


def limit_values(limits: DeviceLimits) -> dict:
    """The device limits an expression may read (:data:`LIMIT_NAMES`), from ``limits``
    (``device_register_budget``: 1 where the device takes a register budget, else 0)."""
    sizes = tuple(limits.max_work_item_sizes) + (1, 1)
    return {"device_max_work_group_size": limits.max_work_group_size,
            "device_max_work_item_size_0": sizes[0], "device_max_work_item_size_1": sizes[1],
            "device_local_mem_bytes": limits.local_mem_bytes,
            "device_register_budget": int(limits.register_budget)}


def check_candidate(space: TuningSpace, fam: FamilySpace, cand: Candidate,
                    m: int, n: int, k: int, limits: DeviceLimits) -> list[tuple[str, str]]:
    """Why ``cand`` is invalid for C = A·B with A M×K and B K×N on ``limits``: one pair
    (the constraint's ``why``, the full reason with the rule and its values) per false
    constraint, in the space's order (empty: valid).

    Raises:
        SpaceError: a derived value or constraint cannot be evaluated (division by zero),
            naming the file and the entry.
    """
    values = {"M": m, "N": n, "K": k, **space.constants, **limit_values(limits),
              **cand.options}
    for name, expr in fam.derived.items():
        values[name] = _evaluate(space, expr, values, f"family {fam.family}, derived {name}")
    return [(c.why, c.reason(values)) for c in fam.constraints
            if not _evaluate(space, c.rule, values, c.where)]


def _evaluate(space, expr, values, where):
    try:
        return expr.evaluate(values)
    except ExpressionError as err:
        raise SpaceError(f"{space.path}: {where}: {err}") from None


def load_space(path: str | Path | None = None, operation: str = "gemm") -> TuningSpace:
    """Read and check a tuning-space file (default: :func:`default_space_path`).

    Raises:
        SpaceError: the file cannot be read or is not valid TOML; ``operation`` differs
            from the file's; an unknown key; no family; an unknown family or one the
            operation cannot use; a family listed twice; a parameter its builder does not
            take (or not an integer option); values that are not a non-empty list of
            distinct integers; a constant that is not a number; a malformed expression, an
            unknown name in it, or a number where a truth value is needed (or the reverse).
            Every message names the file and the entry.
    """
    path = Path(default_space_path() if path is None else path)
    try:
        data_bytes = path.read_bytes()
    except OSError as err:
        raise SpaceError(f"{path}: cannot read the tuning space: {err.strerror}") from None
    try:
        data = tomllib.loads(data_bytes.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise SpaceError(f"{path}: not a valid TOML file: {err}") from None

    def fail(where, problem):
        raise SpaceError(f"{path}: {where}: {problem}")

    _unknown_keys(data, _TOP_KEYS, "top level", fail)
    file_operation = data.get("operation", operation)
    if file_operation != operation:
        fail("operation", f"the file tunes {file_operation!r}, not {operation!r}")
    allowed = OPERATION_FAMILIES[operation]
    constants = data.get("constants", {})
    if not isinstance(constants, dict):
        fail("constants", f"must be a table of numbers, got {shown(constants)}")
    reserved = set(SIZE_NAMES) | set(LIMIT_NAMES)
    for key, value in constants.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            fail(f"constants.{key}", f"must be a number, got {shown(value)}")
        if key in reserved:
            fail(f"constants.{key}", f"{key!r} is a size or device limit, not a constant")
    common_raw = _table_list(data.get("constraint", []), "constraint", fail)
    families_raw = _table_list(data.get("family", []), "family", fail, strings=False)
    if not families_raw:
        fail("family", "no [[family]] entry: the space is empty")
    families, seen = [], set()
    for number, entry in enumerate(families_raw, 1):
        name = entry.get("name")
        where = f"family {number}" + (f" ({name})" if isinstance(name, str) else "")
        _unknown_keys(entry, _FAMILY_KEYS, where, fail)
        if name is None:
            fail(where, f"needs a name, one of the families of {operation}: "
                        f"{', '.join(allowed)}")
        if name not in allowed:
            fail(where, "unknown family " + (repr(name) if isinstance(name, str) else
                                              shown(name))
                 + f" for {operation}; the families: {', '.join(allowed)}")
        if name in seen:
            fail(where, f"{name} is listed twice")
        seen.add(name)
        params = _parameters(entry.get("parameters"), name, where, fail)
        names = set(SIZE_NAMES) | set(LIMIT_NAMES) | set(constants) | set(params)
        derived = {}
        raw_derived = entry.get("derived", {})
        if not isinstance(raw_derived, dict):
            fail(f"{where}, derived", f"must be a table name = \"expression\", got "
                                      f"{shown(raw_derived)}")
        for key, text in raw_derived.items():
            if key in names:
                fail(f"{where}, derived {key}", f"{key!r} is already a size, limit, constant "
                                                "or parameter")
            derived[key] = _parse(text, names, NUMBER, f"{where}, derived {key}", fail)
            names.add(key)
        constraints = [_constraint(c, names, f"{where}, common constraint {i} (top-level "
                                             f"[[constraint]] {i})", fail)
                       for i, c in enumerate(common_raw, 1)]
        constraints += [_constraint(c, names, f"{where}, constraint {i}", fail)
                        for i, c in enumerate(_table_list(entry.get("constraint", []),
                                                          f"{where}, constraint", fail), 1)]
        families.append(FamilySpace(name, params, derived, tuple(constraints)))
    description = data.get("description", "")
    if not isinstance(description, str):
        fail("description", f"must be a string, got {shown(description)}")
    return TuningSpace(str(path), operation, description, dict(constants), tuple(families),
                       hashlib.sha256(data_bytes).hexdigest())


def _unknown_keys(table, known, where, fail):
    extra = [k for k in table if k not in known]
    if extra:
        fail(where, f"unknown key(s) {', '.join(map(repr, extra))}; allowed: "
                    f"{', '.join(known)}")


def _table_list(value, where, fail, strings=True):
    if not isinstance(value, list) or not all(
            isinstance(v, dict) or (strings and isinstance(v, str)) for v in value):
        fail(where, f"must be a list of tables ([[{where.split(',')[-1].strip()}]] entries)"
                    + (" or strings" if strings else "") + f", got {shown(value)}")
    return value


def _parameters(raw, family, where, fail) -> dict:
    if not isinstance(raw, dict) or not raw:
        fail(f"{where}, parameters", "needs a [family.parameters] table with at least one "
                                     "parameter")
    allowed = INTEGER_OPTIONS[family]
    params = {}
    for key, values in raw.items():
        if key not in allowed:
            fail(f"{where}, parameters.{key}", f"{family} does not take {key!r}; its integer "
                                               f"parameters: {', '.join(allowed)}")
        if not isinstance(values, list) or not values or any(
                isinstance(v, bool) or not isinstance(v, int) for v in values):
            fail(f"{where}, parameters.{key}", f"must be a non-empty list of integers, got "
                                               f"{values!r}")
        if len(set(values)) != len(values):
            fail(f"{where}, parameters.{key}", f"lists a value twice: {values!r}")
        params[key] = tuple(values)
    return params


def _parse(text, names, kind, where, fail) -> Expression:
    try:
        return parse(text, names, kind)
    except ExpressionError as err:
        fail(where, str(err))


def _constraint(raw, names, where, fail) -> Constraint:
    if isinstance(raw, str):
        raw = {"rule": raw}
    _unknown_keys(raw, _CONSTRAINT_KEYS, where, fail)
    if "rule" not in raw:
        fail(where, "needs a rule (an expression that is true for valid candidates)")
    why = raw.get("why", raw["rule"])
    if not isinstance(why, str):
        fail(where, f"why must be a string, got {shown(why)}")
    return Constraint(_parse(raw["rule"], names, BOOLEAN, where, fail), why, where)
