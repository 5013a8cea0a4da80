"""Device model files: TOML in, TOML out (:func:`load_device_model`, :func:`to_toml`).

File shape (every field of :data:`simulator.model.device_model_schema.VALUE_FIELDS` is required, nothing
else is allowed; a field of :data:`simulator.model.device_model_schema.ADDED_FIELDS` that a file written
before it existed lacks gets that table's value as a guess; a field of
:data:`simulator.model.device_model_schema.OPTIONAL_FIELDS` may be left out: not measured)::

    name = "my-gpu"
    description = "what this model is"          # optional
    [references]                                # key -> full citation
    CPG = "CUDA C++ Programming Guide, Technical Specifications per Compute Capability (9.0)"
    [values.sub_group_size]
    value = 32
    source = "documented"                       # documented | queried | measured | guessed
    ref = "CPG"                                 # documented, measured: a [references] key;
                                                # queried: the OpenCL query; guessed: why
    note = "32 threads per warp"                # optional

``l2_associativity`` also takes ``"fully-associative"`` (``None``: a fully associative LRU).
The order of ``[values.*]`` is kept: it is the order of ``guessed`` and of the warnings.
"""
from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from typing import Any, Mapping

from tiletraffic.simulator.model import device_model_schema as dm
from tiletraffic.simulator.model.device_model_schema import DeviceModel, ValueSource
from tiletraffic.simulator.model.file_values import shown
from tiletraffic.simulator.model.issue_rates import IssueRates

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


_FILE_KEYS = ("name", "description", "references", "values")
_ENTRY_KEYS = ("value", "source", "ref", "note")


def _entry(key: str, entry: Any, references: Mapping[str, str], problems: list[str]
           ) -> tuple[Any, ValueSource] | None:
    """One ``[values.KEY]`` table -> (value, source), or None with the problems appended."""
    if not isinstance(entry, dict):
        problems.append(f"values.{key} must be a table with value, source and ref, "
                        f"got {shown(entry)}")
        return None
    before = len(problems)
    dm.check_fields(entry, _ENTRY_KEYS, problems, f"values.{key}: ")
    missing = [k for k in ("value", "source", "ref") if k not in entry]
    if missing:
        problems.append(f"values.{key}: missing {', '.join(missing)}")
        return None
    value = dm.check_value(key, entry["value"], problems)
    kind, ref, note = entry["source"], entry["ref"], entry.get("note", "")
    if kind not in dm.SOURCE_KINDS:
        problems.append(dm.bad_kind(key, kind))
    if not isinstance(ref, str) or not ref.strip():
        problems.append(f"values.{key}: ref must be a non-empty string, got {shown(ref)}")
    elif kind in ("documented", "measured") and ref not in references:
        known = ", ".join(references) or "none"
        problems.append(f"values.{key}: ref \"{ref}\" of a {kind} value is not a key of "
                        f"[references] (known: {known})")
    if not isinstance(note, str):
        problems.append(f"values.{key}: note must be a string, got {shown(note)}")
    if len(problems) > before:
        return None
    return value, dm.ValueSource(kind, ref, note)


def parse_device_model(data: Mapping[str, Any], origin: str) -> DeviceModel:
    """A :class:`DeviceModel` from the parsed TOML ``data`` of a model file.

    Args:
        origin: the file (or other source) named in messages and in ``sources``.

    Raises:
        DeviceModelError: naming ``origin`` and every problem found: a missing or unknown
            field (the known ones listed), a value of the wrong type, negative (or zero where
            it divides), a source not one of :data:`SOURCE_KINDS`, a missing ``ref``, a
            ``ref`` of a documented or measured value that ``[references]`` does not hold, or
            values no device has (:func:`_shape_problems`).
    """
    problems: list[str] = []
    dm.check_fields(data, _FILE_KEYS, problems)
    name, description = data.get("name"), data.get("description", "")
    if not isinstance(name, str) or not name.strip():
        problems.append("missing field 'name' (a non-empty string)" if name is None else
                        f"name must be a non-empty string, got {shown(name)}")
    if not isinstance(description, str):
        problems.append(f"description must be a string, got {shown(description)}")
    references = dm.read_references(data, problems)
    values = data.get("values")
    if not isinstance(values, dict):
        problems.append("missing table [values]" if values is None else
                        f"values must be a table, got {shown(values)}")
        values = {}
    parsed: dict[str, tuple[Any, ValueSource]] = {}
    for key, entry in values.items():
        if key not in dm.VALUE_FIELDS and key not in dm.OPTIONAL_FIELDS:
            problems.append(dm.unknown_value(key))
        elif (got := _entry(key, entry, references, problems)) is not None:
            parsed[key] = got
    for key, (value, why) in dm.ADDED_FIELDS.items():
        if key not in values:
            parsed[key] = (value, dm.ValueSource("guessed", why))
    missing = [k for k in dm.VALUE_FIELDS if k not in values and k not in dm.ADDED_FIELDS]
    if missing and isinstance(data.get("values"), dict):
        problems.append(f"missing value(s) {', '.join(missing)} (every one of "
                        f"{len(dm.VALUE_FIELDS)} values needs value, source and ref)")
    if not problems:
        problems += _shape_problems({k: v for k, (v, _) in parsed.items()})
    if problems:
        raise dm.DeviceModelError(f"device model file {origin}: " + "; ".join(problems))
    cited = " ".join(f"[{k}]" for k in references)
    return dm.DeviceModel(
        name=name, sources=f"{cited} in {origin}" if cited else origin,
        guessed=tuple(k for k, (_, s) in parsed.items() if s.kind == "guessed"),
        description=description, references=dict(references),
        value_sources={k: s for k, (_, s) in parsed.items()},
        **{k: v for k, (v, _) in parsed.items()})


def _power_of_two(x) -> bool:
    return isinstance(x, int) and x > 0 and x & (x - 1) == 0


def _shape_problems(v: Mapping[str, Any]) -> list[str]:
    """What makes the values no device's: sub-groups, sectors, lines and banks that are not
    powers of two in range, lines not whole sectors, vector widths other than 1, 2 and 4, and
    an associativity beyond any cache's (one message per problem)."""
    out = []
    for key, most in (("sub_group_size", 128), ("sector_bytes", 4096), ("line_bytes", 4096),
                      ("local_banks", 256), ("bank_bytes", 64)):
        if key in v and not (_power_of_two(v[key]) and v[key] <= most):
            out.append(f"values.{key}: {v[key]} must be a power of two of at most {most}")
    if _power_of_two(v.get("bank_bytes", 4)) and v.get("bank_bytes", 4) < 4:
        out.append(f"values.bank_bytes: {v['bank_bytes']} must be at least 4 (one float)")
    if "line_bytes" in v and "sector_bytes" in v and v["line_bytes"] % v["sector_bytes"]:
        out.append(f"values.line_bytes: {v['line_bytes']} must be a multiple of sector_bytes "
                   f"= {v['sector_bytes']} (a line is whole sectors)")
    if v.get("local_vector_words", 1) not in (1, 2, 4):
        out.append(f"values.local_vector_words: {v['local_vector_words']} must be 1, 2 or 4")
    ways = v.get("l2_associativity")
    if ways is not None and ways > 1024:
        out.append(f"values.l2_associativity: {ways} ways is beyond any cache's 1024; write "
                   f'"{dm.FULLY_ASSOCIATIVE}" for a fully associative L2')
    return out


def toml_data(text: str, what: str, origin: str) -> dict[str, Any]:
    """The TOML ``text`` of the ``what`` file (e.g. ``"device model"``) ``origin`` as tables.

    Raises:
        DeviceModelError: not TOML (the message names ``what``, ``origin`` and the error).
    """
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise dm.DeviceModelError(f"{what} file {origin} is not valid TOML: {err}") \
            from None


def file_text(path: str | os.PathLike, what: str) -> str:
    """The UTF-8 text of the ``what`` file (e.g. ``"device model"``) ``path``.

    Raises:
        DeviceModelError: the file cannot be read or is not UTF-8 (the message names
            ``what``, ``path`` and why).
    """
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
        raise dm.DeviceModelError(f"cannot read {what} file {path}: {why}") from None


def read_device_model(text: str, origin: str) -> DeviceModel:
    """The model in the TOML ``text`` (shape: this module's docstring).

    Raises:
        DeviceModelError: not TOML, or not a valid model (see :func:`parse_device_model`).
    """
    return parse_device_model(toml_data(text, "device model", origin), origin)


def load_device_model(path: str | os.PathLike) -> DeviceModel:
    """The model in the TOML file ``path`` (shape: this module's docstring).

    Raises:
        DeviceModelError: the file cannot be read (not UTF-8 included), is not TOML, or is
            not a valid model (see :func:`parse_device_model`).
    """
    return read_device_model(file_text(path, "device model"), str(path))


def _toml_str(text: str, indent: str = "") -> str:
    """A TOML basic string; a long plain one folded over lines ending in a backslash (TOML
    trims the backslash, the line break and the next line's leading spaces)."""
    quoted = json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string
    width = 88 - len(indent) - 2
    plain = text.replace('"', "")
    if len(quoted) <= width or json.dumps(plain, ensure_ascii=False)[1:-1] != plain or \
            '""' in text or text.endswith('"') or "  " in text or text != text.strip():
        return quoted
    lines = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)
    return '"""\\\n' + " \\\n".join(indent + "  " + line for line in lines) + '"""'


def _toml_key(key: str) -> str:
    """A bare key, or a quoted one on one line (TOML keys cannot be multi-line strings)."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: Any) -> str:
    """An int as it is; a float in its shortest exact form, large and small ones as
    ``4.8e12``, ``5.5e-7`` (TOML floats; ``float()`` of the text is ``value`` exactly)."""
    if value is None:
        return _toml_str(dm.FULLY_ASSOCIATIVE)
    if isinstance(value, IssueRates):
        return "{" + ", ".join(f"{k} = [{', '.join(_toml_value(x) for x in v)}]"
                               for k, v in value.to_table().items()) + "}"
    if isinstance(value, int) or 1e-3 <= abs(value) < 1e6 or value == 0:
        return repr(value)
    digits = next(p for p in range(17) if float(f"{value:.{p}e}") == value)
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def to_toml(model: DeviceModel) -> str:
    """``model`` as the text of a model file that :func:`load_device_model` reads back to an
    equal model with the same sources. A value without a recorded source is written as
    ``guessed`` ("no source recorded")."""
    lines = ["# tiletraffic device model: pass this file to --device-model FILE.",
             "# Every value needs a source: documented or measured (ref: a key of",
             "# [references]), queried (ref: the OpenCL query) or guessed (ref: why).",
             f"name = {_toml_str(model.name)}"]
    if model.description:
        lines.append(f"description = {_toml_str(model.description)}")
    if model.references:
        lines += ["", "[references]"]
        lines += [f"{_toml_key(k)} = {_toml_str(v)}" for k, v in model.references.items()]
    order = [*model.value_sources,
             *(k for k in (*dm.VALUE_FIELDS, *dm.OPTIONAL_FIELDS)
               if k not in model.value_sources)]
    for key in order:
        if key in dm.OPTIONAL_FIELDS and getattr(model, key) is None:
            continue
        source = model.value_sources.get(key, dm.ValueSource("guessed", "no source recorded"))
        lines += ["", f"[values.{key}]", f"value = {_toml_value(getattr(model, key))}",
                  f"source = {_toml_str(source.kind)}", f"ref = {_toml_str(source.ref)}"]
        if source.note:
            lines.append(f"note = {_toml_str(source.note)}")
    return "\n".join(lines) + "\n"
