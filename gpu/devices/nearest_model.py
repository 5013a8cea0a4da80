"""The nearest built-in model of a device that has none of its own, transferred to it.

A GPU without a built-in model (``gpu.devices.device_models.KNOWN_NAMES``) takes the
built-in model of the nearest device that has one: the same vendor, then the same
architecture (NVIDIA: the compute capability, queried or from the device's datasheet), then
the nearest compute capability, never one of another sub-group size. Its documented sizes
and rates are then replaced by the device's own: those of the device's datasheet
(``simulator.model.datasheet``: a shipped one that fits its name, or the one given), and
those OpenCL answers (compute units, clock, local memory, work-group size, and the L2 size
where the datasheet gives none). A value the base model's own device measured (a calibrated
base) is scaled by the ratio of the two datasheets' values instead, and marked a guess. A
device no built-in model is near (a CPU, a vendor none is built in for, another sub-group
size) takes ``generic-gpu``, completed with its datasheet's and queried values. Either way
the model's ``description`` is a one-line note saying which model it started from and which
values were replaced.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from tiletraffic.gpu.devices.device import DeviceInfo
from tiletraffic.simulator.model.datasheet import (DATASHEETS, Datasheet, datasheet_for,
                                                   datasheet_of_model)
from tiletraffic.simulator.model.device_model import (DEVICE_MODELS, GENERIC_GPU_MODEL,
                                                      DeviceModel, ValueSource)

VENDORS = (("nvidia", "NVIDIA"), ("advanced micro devices", "AMD"), ("amd", "AMD"),
           ("intel", "Intel"), ("apple", "Apple"), ("arm", "ARM"), ("qualcomm", "Qualcomm"),
           ("imagination", "Imagination"))
"""Part of a device's vendor or name (lowercase) -> the vendor, first match wins."""

QUERIES = {"compute_units": "CL_DEVICE_MAX_COMPUTE_UNITS",
           "local_mem_bytes_per_work_group": "CL_DEVICE_LOCAL_MEM_SIZE",
           "max_work_group_size": "CL_DEVICE_MAX_WORK_GROUP_SIZE",
           "l2_bytes": "CL_DEVICE_GLOBAL_MEM_CACHE_SIZE",
           "clock_hz": "CL_DEVICE_MAX_CLOCK_FREQUENCY"}
"""Model field -> the OpenCL device query that gives it."""


def vendor_of(info: DeviceInfo) -> str | None:
    """The GPU vendor of ``info`` (:data:`VENDORS`), from its device vendor, platform vendor
    and name; ``None`` when none of them names a known one."""
    for text in (info.device_vendor, info.platform_vendor, info.device_name):
        words = text.lower().replace("(r)", " ").replace(",", " ").split()
        for part, vendor in VENDORS:
            if (" " in part and part in text.lower()) or part in words or \
                    (part != "arm" and any(part in w for w in words)):
                return vendor
    return None


def nvidia_architecture(capability: tuple[int, int] | None) -> str:
    """NVIDIA's architecture of a compute capability (``(9, 0)`` -> ``"Hopper"``), ``""``
    when unknown."""
    if capability is None:
        return ""
    major, minor = capability
    names = {5: "Maxwell", 6: "Pascal", 7: "Turing" if minor == 5 else "Volta",
             8: "Ada Lovelace" if minor == 9 else "Ampere", 9: "Hopper", 10: "Blackwell",
             12: "Blackwell"}
    return names.get(major, "")


@dataclass(frozen=True)
class Traits:
    """What the nearest model is chosen by: vendor, architecture, compute capability,
    sub-group size (each ``None``/``""`` where unknown)."""

    vendor: str | None
    architecture: str = ""
    compute_capability: tuple[int, int] | None = None
    sub_group_size: int | None = None

    def words(self) -> str:
        cc = self.compute_capability
        return ", ".join(filter(None, (
            f"{self.vendor or 'unknown vendor'} {self.architecture}".strip(),
            f"compute capability {cc[0]}.{cc[1]}" if cc else "")))


def device_traits(info: DeviceInfo, sheet: Datasheet | None) -> Traits:
    """The traits of ``info``: what OpenCL answered, completed from its datasheet."""
    cc = info.compute_capability or (sheet.compute_capability if sheet else None)
    arch = nvidia_architecture(cc) or (sheet.architecture if sheet else "")
    return Traits(vendor_of(info) or (sheet.vendor if sheet else None), arch, cc,
                  info.sub_group_size or (sheet.sub_group_size if sheet else None))


def _sheet_traits(sheet: Datasheet) -> Traits:
    return Traits(sheet.vendor, sheet.architecture or nvidia_architecture(
        sheet.compute_capability), sheet.compute_capability, sheet.sub_group_size)


def nearest_built_in(info: DeviceInfo, sheet: Datasheet | None = None
                     ) -> tuple[str | None, str]:
    """(the nearest built-in model's name, why), or (``None``, why none is near).

    Candidates are the first built-in model of each shipped datasheet that names one
    (``Datasheet.models``). A candidate must be of the same vendor and, where both are
    known, of the same sub-group size; of those, one of the same architecture wins, then
    the nearest compute capability.
    """
    if not info.is_gpu:
        kind = "a simulator" if info.is_simulator else f"a {info.type.lower()} device"
        return None, f"{info.device_name} is {kind}, and every built-in model is a GPU's"
    mine = device_traits(info, sheet)
    bases = [(s.models[0], _sheet_traits(s)) for s in DATASHEETS.values() if s.models]
    if mine.vendor is None:
        return None, (f"the vendor of {info.device_name} ({info.device_vendor or '?'}) is "
                      "none that a built-in model is of (built in: "
                      + "; ".join(f"{n}: {t.words()}" for n, t in bases) + ")")
    same = [(n, t) for n, t in bases if t.vendor.lower() == mine.vendor.lower()]
    fits = [(n, t) for n, t in same if None in (t.sub_group_size, mine.sub_group_size)
            or t.sub_group_size == mine.sub_group_size]
    if not fits:
        why = (f"no built-in model is of an {mine.vendor} GPU" if not same else
               f"no built-in {mine.vendor} model has its sub-group size {mine.sub_group_size}")
        return None, why + " (built in: " + "; ".join(f"{n}: {t.words()}"
                                                         for n, t in bases) + ")"

    def distance(t: Traits) -> tuple:
        same_arch = bool(mine.architecture) and t.architecture == mine.architecture
        cc = (abs(10 * t.compute_capability[0] + t.compute_capability[1]
                  - 10 * mine.compute_capability[0] - mine.compute_capability[1])
              if t.compute_capability and mine.compute_capability else 1000)
        return (not same_arch, cc)

    name, traits = min(fits, key=lambda c: distance(c[1]))
    if not distance(traits)[0]:
        return name, f"the same architecture: {traits.words()}"
    return name, (f"the nearest {mine.vendor} GPU built in ({traits.words()}; this device: "
                  f"{mine.words()}): its per-compute-unit rates and granularities are "
                  f"{traits.architecture or name}'s")


def _from_datasheet(base: DeviceModel, sheet: Datasheet) -> tuple[dict, list, list, dict]:
    """(values, replaced fields, scaled fields, references) of ``sheet`` on ``base``: a
    documented (or guessed) value of ``base`` replaced by the sheet's; a measured one scaled
    by the sheet's value over the base device's datasheet's, where that gives it."""
    own = datasheet_of_model(base.name)
    refs = {f"{sheet.name}: {k}": v for k, v in sheet.references.items()}
    values, replaced, scaled = {}, [], []
    for key, (value, source) in sheet.values.items():
        was = base.value_sources.get(key)
        if was is not None and was.kind == "measured" and own is not None \
                and key in own.values:
            ratio = value / own.values[key][0]
            new = getattr(base, key) * ratio
            values[key] = (round(new) if isinstance(value, int) else new, ValueSource(
                "guessed", f"{base.name}'s measured value x {ratio:.4g}, the ratio of the "
                f"datasheets' values ({sheet.name}: {value:g}, {own.name}: "
                f"{own.values[key][0]:g})"))
            scaled.append(key)
        else:
            values[key] = (value, replace(source, ref=f"{sheet.name}: {source.ref}"))
            replaced.append(key)
    return values, replaced, scaled, refs


def queried_values(info: DeviceInfo, global_cache_bytes: int | None = None,
                   clock: bool = True) -> dict[str, int | float]:
    """Field -> value OpenCL gives for ``info`` (:data:`QUERIES`); the L2 size from
    ``global_cache_bytes`` or ``info.global_mem_cache_bytes``, the clock (Hz) from
    ``info.max_clock_mhz`` unless ``clock`` is False."""
    got = {"compute_units": info.compute_units,
           "local_mem_bytes_per_work_group": info.local_mem_bytes,
           "max_work_group_size": info.max_work_group_size}
    if global_cache_bytes or info.global_mem_cache_bytes:
        got["l2_bytes"] = global_cache_bytes or info.global_mem_cache_bytes
    if clock and info.max_clock_mhz:
        got["clock_hz"] = info.max_clock_mhz * 1e6
    return got


def transferred_model(info: DeviceInfo, base: DeviceModel, why: str,
                      sheet: Datasheet | None, global_cache_bytes: int | None = None,
                      name: str | None = None) -> DeviceModel:
    """``base`` with ``sheet``'s values (:func:`_from_datasheet`) and then the device's
    queried ones (:func:`queried_values`; the L2 size the driver answers only where
    ``sheet`` gives none, or as ``global_cache_bytes``) in place of its own, called
    ``name`` (default: after the device, ``info.slug``; ``opencl:<slug>`` for
    ``generic-gpu``), its ``description`` the one-line note (which model, ``why``, which
    values replaced).

    Raises:
        DeviceModelError: a queried value is not positive (a broken driver).
    """
    values, replaced, scaled, refs = (_from_datasheet(base, sheet) if sheet is not None
                                      else ({}, [], [], {}))
    note = f"{info.device_name} ({info.platform_name}, driver {info.driver_version})"
    queried = queried_values(info, global_cache_bytes)
    if "l2_bytes" in values and not global_cache_bytes:
        del queried["l2_bytes"]       # drivers' cache sizes differ from the L2 documented
    values.update({k: (v, ValueSource("queried", QUERIES[k], note))
                   for k, v in queried.items()})
    generic = base is GENERIC_GPU_MODEL
    model = base.with_values(values, name=name or (f"opencl:{info.slug}" if generic
                                                   else info.slug))
    from_sheet = [k for k in replaced if k not in queried]
    parts = [f"{', '.join(from_sheet)} from the datasheet {sheet.name}" if from_sheet else "",
             f"{', '.join(k for k in scaled if k not in queried)} scaled by the datasheets' "
             "ratio" if set(scaled) - set(queried) else "",
             f"{', '.join(queried)} from OpenCL queries"]
    start = (f"generic-gpu, every other value a guess ({why})" if generic else
             f"the {'built-in ' if base.name in DEVICE_MODELS else ''}model {base.name} "
             f"({why})")
    return replace(model, references={**base.references, **refs},
                   description=f"{info.device_name}: started from {start}; replaced: "
                   + "; ".join(filter(None, parts)) + ".")


def nearest_model(info: DeviceInfo, *, datasheet: Datasheet | None = None,
                  global_cache_bytes: int | None = None) -> DeviceModel:
    """The model of the OpenCL device ``info``, which has no built-in model of its own:
    the nearest built-in model (:func:`nearest_built_in`), else ``generic-gpu``, its values
    replaced by those of ``datasheet`` (default: the shipped datasheet that fits the
    device's name, if any) and then by the queried ones (:func:`transferred_model`). The
    note is the model's ``description``.

    Raises:
        DeviceModelError: a queried value is not positive (a broken driver).
    """
    sheet = datasheet or datasheet_for(info.device_name)
    name, why = nearest_built_in(info, sheet)
    chosen = DEVICE_MODELS[name] if name is not None else GENERIC_GPU_MODEL
    return transferred_model(info, chosen, why, sheet, global_cache_bytes)
