"""What a SPIR-V module's interface asks of a dispatch: its descriptors and constants.

Read from the module's binary words as the SPIR-V specification lays them out (a 5-word
header, then instructions of ``word count << 16 | opcode``): the ``(set, binding)`` of every
buffer variable (storage or uniform), the ``constant_id`` of every specialization constant,
and whether it has a push-constant block.
"""
from __future__ import annotations

from dataclasses import dataclass

MAGIC = 0x07230203
OP_DECORATE, OP_VARIABLE, OP_TYPE_POINTER = 71, 59, 32
DECORATION_SPEC_ID, DECORATION_BLOCK, DECORATION_BUFFER_BLOCK = 1, 2, 3
DECORATION_BINDING, DECORATION_DESCRIPTOR_SET = 33, 34
STORAGE_UNIFORM, STORAGE_PUSH_CONSTANT, STORAGE_STORAGE_BUFFER = 2, 9, 12


@dataclass(frozen=True)
class ShaderInterface:
    """The descriptors and constants a module declares.

    Attributes:
        storage_buffers: the ``(set, binding)`` of each storage buffer, sorted.
        uniform_buffers: the ``(set, binding)`` of each uniform buffer, sorted.
        spec_ids: the ``constant_id`` of each specialization constant, sorted.
        push_constants: the module has a push-constant block.
    """

    storage_buffers: tuple[tuple[int, int], ...]
    uniform_buffers: tuple[tuple[int, int], ...]
    spec_ids: tuple[int, ...]
    push_constants: bool


def _words(spirv: bytes) -> list[int]:
    if len(spirv) < 20 or len(spirv) % 4:
        raise ValueError(f"SPIR-V module of {len(spirv)} bytes: expected a 5-word header and "
                         "whole 32-bit words")
    order = "little" if int.from_bytes(spirv[:4], "little") == MAGIC else "big"
    if int.from_bytes(spirv[:4], order) != MAGIC:
        raise ValueError(f"not a SPIR-V module: magic number {spirv[:4].hex()}, "
                         f"expected {MAGIC:#010x}")
    return [int.from_bytes(spirv[i:i + 4], order) for i in range(0, len(spirv), 4)]


def interface(spirv: bytes) -> ShaderInterface:
    """The module's :class:`ShaderInterface`.

    Raises:
        ValueError: not a SPIR-V module (bad header, a truncated instruction).
    """
    words = _words(spirv)
    decorations: dict[int, dict[int, int]] = {}
    pointers: dict[int, tuple[int, int]] = {}
    variables: list[tuple[int, int, int]] = []
    i = 5
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or i + count > len(words):
            raise ValueError(f"SPIR-V module: instruction at word {i} runs past the end")
        op = words[i + 1:i + count]
        if opcode == OP_DECORATE and len(op) >= 2:
            decorations.setdefault(op[0], {})[op[1]] = op[2] if len(op) > 2 else 1
        elif opcode == OP_TYPE_POINTER and len(op) >= 3:
            pointers[op[0]] = (op[1], op[2])
        elif opcode == OP_VARIABLE and len(op) >= 3:
            variables.append((op[0], op[1], op[2]))
        i += count
    storage, uniform, push = [], [], False
    for type_id, var_id, storage_class in variables:
        if storage_class == STORAGE_PUSH_CONSTANT:
            push = True
            continue
        deco = decorations.get(var_id, {})
        if DECORATION_BINDING not in deco:
            continue
        key = (deco.get(DECORATION_DESCRIPTOR_SET, 0), deco[DECORATION_BINDING])
        pointee = decorations.get(pointers.get(type_id, (0, 0))[1], {})
        if storage_class == STORAGE_STORAGE_BUFFER or (
                storage_class == STORAGE_UNIFORM and DECORATION_BUFFER_BLOCK in pointee):
            storage.append(key)
        elif storage_class == STORAGE_UNIFORM:
            uniform.append(key)
    spec = sorted(d[DECORATION_SPEC_ID] for d in decorations.values()
                  if DECORATION_SPEC_ID in d)
    return ShaderInterface(tuple(sorted(set(storage))), tuple(sorted(set(uniform))),
                           tuple(spec), push)
