"""Dispatch a SPIR-V compute shader through Vulkan on numpy arrays, timed with timestamps.

Typical use::

    spirv = compile_glsl(path="gemm.comp")
    run = dispatch(spirv, {(0, 0): a, (0, 1): b, (0, 2): np.zeros((n, n), np.float32)},
                   workgroups=(n // 16, n // 16, 1),
                   push_constants=np.array([n, n, n], np.uint32).tobytes(),
                   specialization={0: 16})
    c = run.outputs[(0, 2)]; run.median_ns

Each binding is a storage buffer (``layout(set = S, binding = B) buffer``) holding one array's
bytes. Every dispatch starts from the arrays given (they are copied to the device before each
one, in a submission of their own), runs alone on the queue in its command buffer between two
timestamps (``vkCmdWriteTimestamp``, top and bottom of the pipe), and its outputs are read
back after it; the times are of the dispatch only, in nanoseconds (the device's
``timestampPeriod`` applied), never of copies.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from tiletraffic.gpu.vulkan.device import VulkanDevice, open_device
from tiletraffic.gpu.vulkan.errors import VulkanError
from tiletraffic.gpu.vulkan.spirv import ShaderInterface, interface

MAX_REPEAT = 10_000
STAGING_ALIGN_BYTES = 256
WAIT_TIMEOUT_NS = 600 * 10**9


@dataclass(frozen=True)
class VulkanRun:
    """The result of :func:`dispatch`.

    Attributes:
        outputs: ``(set, binding) -> array`` after the last dispatch, each of its input's
            dtype and shape (only the bindings asked for).
        times_ns: each timed dispatch's time in nanoseconds (from timestamp queries).
        median_ns: their median.
        device: the physical device's name.
        warmup: dispatches made before the timed ones (checked, not timed).
    """

    outputs: dict
    times_ns: tuple[float, ...]
    median_ns: float
    device: str
    warmup: int


def _spec_bytes(constant_id, value) -> bytes:
    """A specialization constant's bytes: a bool as a 32-bit VkBool32, an int as a 32-bit
    integer (unsigned when non-negative), a float as a float32, a numpy scalar as itself."""
    if isinstance(value, np.generic):
        data = value.tobytes()
        if value.dtype == np.bool_:
            data = np.uint32(bool(value)).tobytes()
    elif isinstance(value, bool):
        data = np.uint32(value).tobytes()
    elif isinstance(value, int):
        if not -2**31 <= value < 2**32:
            raise ValueError(f"specialization constant {constant_id} = {value}: outside "
                             "32 bits (pass a numpy int64/uint64 for a 64-bit constant)")
        data = (np.uint32(value) if value >= 0 else np.int32(value)).tobytes()
    elif isinstance(value, float):
        data = np.float32(value).tobytes()
    else:
        raise ValueError(f"specialization constant {constant_id} = {value!r}: expected a "
                         "bool, int, float or numpy scalar")
    if len(data) not in (4, 8):
        raise ValueError(f"specialization constant {constant_id} = {value!r}: {len(data)} "
                         "bytes; Vulkan takes 4 or 8")
    return data


def _check_interface(shader: ShaderInterface, arrays: dict, push: bytes) -> None:
    """Every buffer the shader declares given, none it does not, push constants given
    exactly when it has a push-constant block; else a ValueError naming the first miss."""
    declared = set(shader.storage_buffers) | set(shader.uniform_buffers)
    for s, b in sorted(declared - set(arrays)):
        raise ValueError(f"the shader declares a buffer at (set {s}, binding {b}): "
                         "no array given for it")
    for s, b in sorted(set(arrays) - declared):
        raise ValueError(f"buffer (set {s}, binding {b}): the shader declares no buffer there "
                         f"(it declares {sorted(declared)})")
    if shader.push_constants and not push:
        raise ValueError("the shader has a push-constant block: no push-constant bytes given")
    if push and not shader.push_constants:
        raise ValueError(f"push constants of {len(push)} bytes given: the shader has no "
                         "push-constant block")


def _check_args(dev: VulkanDevice, shader: ShaderInterface, buffers, push_constants,
                specialization, workgroups, repeat, warmup, outputs):
    """The arguments as :func:`dispatch` uses them, or a ValueError naming the bad one."""
    groups = tuple(int(g) for g in workgroups) + (1,) * (3 - len(tuple(workgroups)))
    if len(groups) != 3:
        raise ValueError(f"workgroups {tuple(workgroups)}: expected 1 to 3 counts")
    for axis, (g, limit) in enumerate(zip(groups, dev.max_workgroup_count)):
        if not 1 <= g <= limit:
            raise ValueError(f"workgroups {groups}: count {g} on axis {axis} outside "
                             f"1..{limit} ({dev.name})")
    if not buffers:
        raise ValueError("dispatch: no buffers")
    arrays = {}
    for key, array in buffers.items():
        if (not isinstance(key, tuple) or len(key) != 2 or
                not all(isinstance(k, (int, np.integer)) and k >= 0 for k in key)):
            raise ValueError(f"buffer key {key!r}: expected (set, binding), two integers >= 0")
        array = np.ascontiguousarray(array)
        if array.nbytes == 0:
            raise ValueError(f"buffer (set {key[0]}, binding {key[1]}): empty array")
        arrays[(int(key[0]), int(key[1]))] = array
    push = bytes(push_constants or b"")
    if len(push) % 4 or len(push) > dev.max_push_constants_bytes:
        raise ValueError(f"push constants of {len(push)} bytes: expected a multiple of 4 up "
                         f"to {dev.max_push_constants_bytes} ({dev.name})")
    _check_interface(shader, arrays, push)
    spec = {int(k): _spec_bytes(k, v) for k, v in (specialization or {}).items()}
    for cid in sorted(set(spec) - set(shader.spec_ids)):
        raise ValueError(f"specialization constant {cid}: the shader has none with that "
                         f"constant_id (it has {list(shader.spec_ids)})")
    if not 1 <= repeat <= MAX_REPEAT or not 0 <= warmup <= MAX_REPEAT:
        raise ValueError(f"repeat {repeat}, warmup {warmup}: expected 1..{MAX_REPEAT} "
                         f"and 0..{MAX_REPEAT}")
    read = sorted(arrays) if outputs is None else [(int(s), int(b)) for s, b in outputs]
    for key in read:
        if key not in arrays:
            raise ValueError(f"output (set {key[0]}, binding {key[1]}): no such buffer")
    return arrays, push, spec, groups, read


def _align(n: int) -> int:
    return -(-n // STAGING_ALIGN_BYTES) * STAGING_ALIGN_BYTES


class _Resources:
    """Every Vulkan object of one :func:`dispatch`, destroyed together by :meth:`close`."""

    def __init__(self, dev: VulkanDevice):
        self.dev, self.vk = dev, dev.vk
        self._destroy: list[Callable[[], None]] = []

    def add(self, destroy: Callable[[], None]) -> None:
        self._destroy.append(destroy)

    def close(self) -> None:
        for destroy in reversed(self._destroy):
            destroy()
        self._destroy.clear()

    def buffer(self, size: int, usage: int, memory_flags: int, fallback: int | None = None):
        """A buffer of ``size`` bytes bound to memory of ``memory_flags``: (buffer, memory)."""
        vk, d = self.vk, self.dev.device
        buf = vk.vkCreateBuffer(d, vk.VkBufferCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, size=size, usage=usage,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        self.add(lambda: vk.vkDestroyBuffer(d, buf, None))
        req = vk.vkGetBufferMemoryRequirements(d, buf)
        kind = self.dev.memory_type(req.memoryTypeBits, memory_flags, fallback=fallback)
        try:
            mem = vk.vkAllocateMemory(d, vk.VkMemoryAllocateInfo(
                sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, allocationSize=req.size,
                memoryTypeIndex=kind), None)
        except vk.VkError as err:
            raise VulkanError(f"{self.dev.name}: vkAllocateMemory of {req.size} bytes failed "
                              f"({type(err).__name__})") from None
        self.add(lambda: vk.vkFreeMemory(d, mem, None))
        vk.vkBindBufferMemory(d, buf, mem, 0)
        return buf, mem


def _pipeline(res: _Resources, spirv: bytes, kinds: dict, push: bytes, spec: dict):
    """Shader module, descriptor set layouts (one per set up to the highest; ``kinds``:
    ``(set, binding) -> descriptor type``), pipeline layout and compute pipeline:
    (pipeline, pipeline layout, set layouts)."""
    vk, d = res.vk, res.dev.device
    try:
        module = vk.vkCreateShaderModule(d, vk.VkShaderModuleCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, codeSize=len(spirv),
            pCode=spirv), None)
    except vk.VkError as err:
        raise VulkanError(f"{res.dev.name}: vkCreateShaderModule rejected the SPIR-V "
                          f"({type(err).__name__})") from None
    res.add(lambda: vk.vkDestroyShaderModule(d, module, None))
    set_layouts = []
    for s in range(max(k[0] for k in kinds) + 1):
        bindings = [vk.VkDescriptorSetLayoutBinding(
            binding=b, descriptorType=kind, descriptorCount=1,
            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
            for (ks, b), kind in sorted(kinds.items()) if ks == s]
        layout = vk.vkCreateDescriptorSetLayout(d, vk.VkDescriptorSetLayoutCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
            bindingCount=len(bindings), pBindings=bindings or None), None)
        res.add(lambda layout=layout: vk.vkDestroyDescriptorSetLayout(d, layout, None))
        set_layouts.append(layout)
    ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0,
                                     size=len(push))] if push else None
    layout = vk.vkCreatePipelineLayout(d, vk.VkPipelineLayoutCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, setLayoutCount=len(set_layouts),
        pSetLayouts=set_layouts, pushConstantRangeCount=len(ranges or ()),
        pPushConstantRanges=ranges), None)
    res.add(lambda: vk.vkDestroyPipelineLayout(d, layout, None))
    spec_info = None
    if spec:
        entries, data = [], b""
        for cid, raw in sorted(spec.items()):
            entries.append(vk.VkSpecializationMapEntry(constantID=cid, offset=len(data),
                                                       size=len(raw)))
            data += raw
        spec_data = vk.ffi.new("char[]", data)
        res.add(lambda: spec_data)   # kept alive until the pipeline exists
        spec_info = vk.VkSpecializationInfo(mapEntryCount=len(entries), pMapEntries=entries,
                                            dataSize=len(data), pData=spec_data)
    stage = vk.VkPipelineShaderStageCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
        stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module, pName="main",
        pSpecializationInfo=spec_info)
    try:
        pipeline = vk.vkCreateComputePipelines(d, vk.VK_NULL_HANDLE, 1, [
            vk.VkComputePipelineCreateInfo(sType=vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                           stage=stage, layout=layout)], None)[0]
    except vk.VkError as err:
        raise VulkanError(f"{res.dev.name}: vkCreateComputePipelines failed "
                          f"({type(err).__name__})") from None
    res.add(lambda: vk.vkDestroyPipeline(d, pipeline, None))
    return pipeline, layout, set_layouts


def _descriptor_sets(res: _Resources, set_layouts, device_buffers: dict, arrays: dict,
                     kinds: dict):
    """One descriptor set per set layout, each binding pointing at its whole buffer."""
    vk, d = res.vk, res.dev.device
    sizes = [vk.VkDescriptorPoolSize(type=kind, descriptorCount=list(kinds.values()).count(kind))
             for kind in sorted(set(kinds.values()))]
    pool = vk.vkCreateDescriptorPool(d, vk.VkDescriptorPoolCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, maxSets=len(set_layouts),
        poolSizeCount=len(sizes), pPoolSizes=sizes), None)
    res.add(lambda: vk.vkDestroyDescriptorPool(d, pool, None))
    sets = vk.vkAllocateDescriptorSets(d, vk.VkDescriptorSetAllocateInfo(
        sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, descriptorPool=pool,
        descriptorSetCount=len(set_layouts), pSetLayouts=set_layouts))
    writes = [vk.VkWriteDescriptorSet(
        sType=vk.VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, dstSet=sets[s], dstBinding=b,
        dstArrayElement=0, descriptorCount=1,
        descriptorType=kinds[(s, b)],
        pBufferInfo=[vk.VkDescriptorBufferInfo(buffer=device_buffers[(s, b)], offset=0,
                                               range=arrays[(s, b)].nbytes)])
        for (s, b) in sorted(arrays)]
    vk.vkUpdateDescriptorSets(d, len(writes), writes, 0, None)
    return [sets[i] for i in range(len(set_layouts))]


def _barrier(vk, cmd, src_stage, src_access, dst_stage, dst_access):
    vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, [vk.VkMemoryBarrier(
        sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER, srcAccessMask=src_access,
        dstAccessMask=dst_access)], 0, None, 0, None)


def _begin(vk, cmd) -> None:
    vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo(
        sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO))


def _record(res: _Resources, cmds, plan: dict) -> None:
    """One dispatch's three command buffers, submitted one after another (the host waits
    for each): the inputs copied in; the dispatch alone between two timestamps (nothing else
    runs on the queue then, so the first is not taken before earlier work ends); the outputs
    copied out. The barriers at the start of the second and third order them after the
    commands submitted before them."""
    vk = res.vk
    upload, timed, readback = cmds
    _begin(vk, upload)
    for key, (offset, size) in plan["in_regions"].items():
        vk.vkCmdCopyBuffer(upload, plan["staging_in"], plan["device_buffers"][key], 1,
                           [vk.VkBufferCopy(srcOffset=offset, dstOffset=0, size=size)])
    vk.vkEndCommandBuffer(upload)
    _begin(vk, timed)
    vk.vkCmdResetQueryPool(timed, plan["queries"], 0, 2)
    _barrier(vk, timed, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
             vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
             vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT |
             vk.VK_ACCESS_UNIFORM_READ_BIT)
    vk.vkCmdBindPipeline(timed, vk.VK_PIPELINE_BIND_POINT_COMPUTE, plan["pipeline"])
    vk.vkCmdBindDescriptorSets(timed, vk.VK_PIPELINE_BIND_POINT_COMPUTE, plan["layout"], 0,
                               len(plan["sets"]), plan["sets"], 0, None)
    if plan["push"]:
        vk.vkCmdPushConstants(timed, plan["layout"], vk.VK_SHADER_STAGE_COMPUTE_BIT, 0,
                              len(plan["push"]), plan["push_data"])
    vk.vkCmdWriteTimestamp(timed, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, plan["queries"], 0)
    vk.vkCmdDispatch(timed, *plan["groups"])
    vk.vkCmdWriteTimestamp(timed, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, plan["queries"], 1)
    vk.vkEndCommandBuffer(timed)
    _begin(vk, readback)
    _barrier(vk, readback, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
             vk.VK_ACCESS_SHADER_WRITE_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
             vk.VK_ACCESS_TRANSFER_READ_BIT)
    for key, (offset, size) in plan["out_regions"].items():
        vk.vkCmdCopyBuffer(readback, plan["device_buffers"][key], plan["staging_out"], 1,
                           [vk.VkBufferCopy(srcOffset=0, dstOffset=offset, size=size)])
    _barrier(vk, readback, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
             vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT)
    vk.vkEndCommandBuffer(readback)


def _submit(dev, fence, cmd, what: str) -> None:
    """Submit one command buffer and wait for it."""
    vk, d = dev.vk, dev.device
    vk.vkResetFences(d, 1, [fence])
    vk.vkQueueSubmit(dev.queue, 1, [vk.VkSubmitInfo(
        sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, commandBufferCount=1,
        pCommandBuffers=[cmd])], fence)
    try:
        vk.vkWaitForFences(d, 1, [fence], vk.VK_TRUE, WAIT_TIMEOUT_NS)
    except vk.VkError as err:
        raise VulkanError(f"{dev.name}: {what} did not complete ({type(err).__name__})") \
            from None


def _staging(res: _Resources, arrays: dict, keys) -> tuple:
    """A host-visible buffer holding ``keys``' arrays one after another: (buffer, memory,
    ``key -> (offset, size)``, total bytes)."""
    vk = res.vk
    regions, total = {}, 0
    for key in keys:
        regions[key] = (total, arrays[key].nbytes)
        total += _align(arrays[key].nbytes)
    buf, mem = res.buffer(max(total, 4), vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                          vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                          vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                          vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
    return buf, mem, regions, max(total, 4)


def dispatch(spirv: bytes, buffers: Mapping[tuple[int, int], np.ndarray], *,
             workgroups, push_constants: bytes = b"",
             specialization: Mapping[int, object] | None = None, repeat: int = 10,
             warmup: int = 1, outputs=None, device: str | None = None,
             check_output: Callable[[int, dict], None] | None = None) -> VulkanRun:
    """Dispatch a SPIR-V compute shader ``warmup + repeat`` times on copies of ``buffers``.

    Args:
        spirv: the SPIR-V module (:func:`gpu.vulkan.compile.compile_glsl`), entry ``main``.
        buffers: ``(set, binding) -> array``, one buffer each (storage or uniform, as the
            shader declares it), of the array's bytes (C order); exactly the bindings the
            shader declares.
        workgroups: the work-group counts ``(x, y, z)`` of ``vkCmdDispatch`` (1 to 3 counts).
        push_constants: the push-constant block's bytes (offset 0, a multiple of 4).
        specialization: ``constant_id -> value`` (bool, int and float as 32-bit; a numpy
            scalar as its own bytes).
        repeat: timed dispatches (at least 1); warmup: dispatches before them, not timed.
        outputs: the ``(set, binding)`` to read back (None: every buffer).
        device: part of the Vulkan physical device's name (:func:`gpu.vulkan.device.open_device`).
        check_output: called after every dispatch (warm-up included) as
            ``check_output(dispatch index from 0, {(set, binding): array})``; what it raises
            ends the run.

    Returns:
        :class:`VulkanRun`: the last dispatch's outputs, each timed dispatch's nanoseconds
        and their median.

    Raises:
        VulkanUnavailable: no Vulkan device (one line).
        ValueError: a bad argument (named, with its limit), a buffer the shader declares
            missing or one it does not declare given, a constant_id it lacks, push constants
            without a block or a block without them; before anything is created.
        VulkanError: Vulkan refused the SPIR-V or the pipeline, memory, or a submission.
    """
    shader = interface(bytes(spirv))
    dev = open_device(device)
    arrays, push, spec, groups, read = _check_args(dev, shader, buffers, push_constants,
                                                   specialization, workgroups, repeat,
                                                   warmup, outputs)
    with dev.lock:
        res = _Resources(dev)
        try:
            return _run(res, bytes(spirv), arrays, set(shader.uniform_buffers), push, spec,
                        groups, read, repeat, warmup, check_output)
        finally:
            res.close()


def _run(res, spirv, arrays, uniform, push, spec, groups, read, repeat, warmup, check_output):
    """:func:`dispatch` once its arguments are checked (``uniform``: the keys of uniform
    buffers; the others are storage buffers)."""
    dev, vk, d = res.dev, res.vk, res.dev.device
    keys = sorted(arrays)
    kinds = {key: vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER if key in uniform else
             vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER for key in keys}
    device_buffers = {}
    for key in keys:
        usage = (vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT if key in uniform else
                 vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT)
        device_buffers[key] = res.buffer(
            arrays[key].nbytes, usage | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
            vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
            vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, fallback=0)[0]
    staging_in, mem_in, in_regions, in_total = _staging(res, arrays, keys)
    staging_out, mem_out, out_regions, out_total = _staging(res, arrays, read)
    mapped = vk.vkMapMemory(d, mem_in, 0, in_total, 0)
    for key, (offset, size) in in_regions.items():
        mapped[offset:offset + size] = arrays[key].view(np.uint8).reshape(-1).tobytes()
    vk.vkUnmapMemory(d, mem_in)
    pipeline, layout, set_layouts = _pipeline(res, spirv, kinds, push, spec)
    sets = _descriptor_sets(res, set_layouts, device_buffers, arrays, kinds)
    queries = vk.vkCreateQueryPool(d, vk.VkQueryPoolCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=2), None)
    res.add(lambda: vk.vkDestroyQueryPool(d, queries, None))
    pool = vk.vkCreateCommandPool(d, vk.VkCommandPoolCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        queueFamilyIndex=dev.queue_family), None)
    res.add(lambda: vk.vkDestroyCommandPool(d, pool, None))
    allocated = vk.vkAllocateCommandBuffers(d, vk.VkCommandBufferAllocateInfo(
        sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=pool,
        level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=3))
    cmds = [allocated[i] for i in range(3)]
    fence = vk.vkCreateFence(d, vk.VkFenceCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO), None)
    res.add(lambda: vk.vkDestroyFence(d, fence, None))
    plan = {"queries": queries, "in_regions": in_regions, "out_regions": out_regions,
            "staging_in": staging_in, "staging_out": staging_out,
            "device_buffers": device_buffers, "pipeline": pipeline, "layout": layout,
            "sets": sets, "push": push, "push_data": vk.ffi.new("char[]", push or b"\0"),
            "groups": groups}
    _record(res, cmds, plan)
    stamps = vk.ffi.new("uint64_t[2]")
    mask = (1 << dev.timestamp_valid_bits) - 1 if dev.timestamp_valid_bits < 64 else 2**64 - 1
    times, last = [], {}
    for i in range(warmup + repeat):
        _submit(dev, fence, cmds[0], f"copying the inputs of dispatch {i + 1}")
        _submit(dev, fence, cmds[1], f"dispatch {i + 1}")
        _submit(dev, fence, cmds[2], f"reading back the outputs of dispatch {i + 1}")
        vk.vkGetQueryPoolResults(d, queries, 0, 2, 16, stamps, 8,
                                 vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        ticks = (int(stamps[1]) - int(stamps[0])) & mask
        mapped = vk.vkMapMemory(d, mem_out, 0, out_total, 0)
        last = {key: np.frombuffer(bytes(mapped[o:o + n]), dtype=arrays[key].dtype)
                .reshape(arrays[key].shape).copy() for key, (o, n) in out_regions.items()}
        vk.vkUnmapMemory(d, mem_out)
        if check_output is not None:
            check_output(i, last)
        if i >= warmup:
            times.append(ticks * dev.timestamp_period_ns)
    return VulkanRun(outputs=last, times_ns=tuple(times), median_ns=statistics.median(times),
                     device=dev.name, warmup=warmup)
