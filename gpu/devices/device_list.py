"""The OpenCL devices as ``tiletraffic devices`` lists them (and ``tiletraffic.devices()``
returns them): each with whether it is the default device and whether it can compile
kernels on this machine."""
from __future__ import annotations

from dataclasses import dataclass

from tiletraffic.gpu.devices.device import (DeviceInfo, TiletrafficGpuError, build_problem,
                                            list_devices, select_device)


@dataclass(frozen=True)
class DeviceEntry:
    """One OpenCL device of :func:`device_entries`.

    Attributes:
        info: what OpenCL reports (:class:`~tiletraffic.gpu.devices.device.DeviceInfo`: ``id``
            ``"P:D"``, names, type, limits).
        is_default: the device ``run``, ``calibrate``, ``report``, ... use without a
            ``device`` (:func:`~tiletraffic.gpu.devices.device.select_device` of ``None``).
        build_problem: why the device cannot compile kernels here (the compiler's first
            error line), or ``None`` when it can (:func:`~tiletraffic.gpu.devices.device.build_problem`).
    """

    info: DeviceInfo
    is_default: bool
    build_problem: str | None

    @property
    def id(self) -> str:
        """``"P:D"``: what ``device`` and ``--device`` take to choose it."""
        return self.info.id

    def line(self) -> str:
        """The device's line of ``tiletraffic devices``: ``*`` for the default, its
        description, and why it cannot compile kernels, if it cannot."""
        return (f"{'*' if self.is_default else ' '} {self.info.describe()}"
                + (f"  [cannot compile kernels here: {self.build_problem}]"
                   if self.build_problem else ""))


def device_entries() -> list[DeviceEntry]:
    """Every OpenCL device in ``"P:D"`` order (an empty list when there is none), each
    marked default or not and tried for a kernel build where it is PoCL's."""
    devices = list_devices()
    if not devices:
        return []
    try:
        default = select_device(None).info.id
    except TiletrafficGpuError:   # no device that can compile: none is the default
        default = None
    return [DeviceEntry(d, d.id == default, build_problem(d)) for d in devices]
