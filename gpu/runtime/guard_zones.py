"""Guard zones around a launch's buffers, for a launch the check before launch found unsafe.

A kernel that stores out of bounds on a CPU device writes into whatever the driver or the
interpreter allocated next, and can abort the process after the run (``double free or
corruption``). ``run --unchecked`` (:func:`gpu.runtime.launch.run_kernel` with ``guard_zones=True``)
therefore gives each buffer a zone before and after it: one allocation of
``guard + nbytes + guard`` bytes, the kernel's argument a sub-buffer of its middle
(``clCreateSubBuffer``), both zones filled with :data:`GUARD_BITS`. Accesses up to
``guard`` bytes outside a buffer land in its own zones; after the launches the zones are
read back and every 4-byte word that no longer holds the pattern counts as a store outside
the buffer, which the result reports beside the simulator's out-of-bounds hazards. Accesses
farther out than a zone can still corrupt memory.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

GUARD_BITS = np.uint32(0x7FBADBAD)
"""The 32-bit pattern that fills the zones: a NaN that no float32 arithmetic produces."""

MIN_GUARD_BYTES = 1 << 16
"""Smallest zone on each side: 64 KiB."""

MAX_GUARD_BYTES = 1 << 26
"""Largest zone on each side: 64 MiB (a zone is the buffer's own size between the two)."""


def guard_bytes(nbytes: int, align_bytes: int) -> int:
    """The zone on each side of a buffer of ``nbytes``: its own size within
    [:data:`MIN_GUARD_BYTES`, :data:`MAX_GUARD_BYTES`], rounded up to ``align_bytes`` (the
    device's ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` in bytes, which a sub-buffer's origin must
    be a multiple of). Raises ValueError for ``align_bytes`` < 1."""
    if align_bytes < 1:
        raise ValueError(f"align_bytes must be at least 1, got {align_bytes}")
    size = min(max(int(nbytes), MIN_GUARD_BYTES), MAX_GUARD_BYTES)
    return -(-size // align_bytes) * align_bytes


@dataclass
class GuardedBuffer:
    """One buffer with its zones: ``parent`` (the whole allocation), ``buffer`` (the
    sub-buffer the kernel gets), ``guard`` (bytes on each side), ``size`` (the
    sub-buffer's bytes: the buffer's rounded up to whole 4-byte words, at least 4)."""

    parent: Any
    buffer: Any
    guard: int
    size: int

    def release(self) -> None:
        self.buffer.release()
        self.parent.release()


def allocate(cl, context, queue, nbytes: int, align_bytes: int,
             host: np.ndarray | None = None) -> GuardedBuffer:
    """A read-write buffer of ``nbytes`` (``host``'s bytes copied in when given) between two
    zones of :data:`GUARD_BITS`; ``cl`` is the ``pyopencl`` module. Raises ``cl.Error``
    where OpenCL refuses the allocation or the sub-buffer."""
    guard = guard_bytes(nbytes, align_bytes)
    size = max(-(-int(nbytes) // 4) * 4, 4)      # whole 4-byte words (halves: even)
    fill = np.full((2 * guard + size) // 4, GUARD_BITS, dtype=np.uint32)
    if host is not None:
        fill.view(np.uint8)[guard:guard + host.nbytes] = \
            np.ascontiguousarray(host).reshape(-1).view(np.uint8)
    mf = cl.mem_flags
    parent = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=fill)
    try:
        buffer = parent.get_sub_region(guard, size, mf.READ_WRITE)
    except cl.Error:
        parent.release()
        raise
    queue.finish()
    return GuardedBuffer(parent, buffer, guard, size)


def stores_outside(cl, queue, guarded: dict[str, GuardedBuffer]) -> dict[str, int]:
    """Buffer name -> 4-byte words of its zones that no longer hold :data:`GUARD_BITS`
    (stores outside the buffer, up to a zone away; names with none left out)."""
    found = {}
    for name, g in guarded.items():
        whole = np.empty((2 * g.guard + g.size) // 4, dtype=np.uint32)
        cl.enqueue_copy(queue, whole, g.parent).wait()
        words = g.guard // 4
        zones = np.concatenate([whole[:words], whole[len(whole) - words:]])
        changed = int(np.count_nonzero(zones != GUARD_BITS))
        if changed:
            found[name] = changed
    return found


def describe(found: dict[str, int]) -> str:
    """``stores outside the buffers (caught in their guard zones): C 1560 words`` or
    ``no store outside the buffers' guard zones``."""
    if not found:
        return "no store outside the buffers seen in their guard zones"
    return ("stores outside the buffers, caught in their guard zones: "
            + ", ".join(f"{name} {n} word{'s' if n != 1 else ''}"
                        for name, n in sorted(found.items())))
