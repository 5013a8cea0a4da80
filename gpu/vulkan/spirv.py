"""What a SPIR-V module's interface asks of a dispatch: its descriptors and constants.

Read from the module's binary words as the SPIR-V specification lays them out (a 5-word
header, then instructions of ``word count << 16 | opcode``): the ``(set, binding)`` of every
buffer variable (storage or uniform), the ``constant_id`` of every specialization constant
with its name, and the members of the push-constant block and of each uniform block (name,
byte offset, scalar type) as the compiler laid them out.
"""
from __future__ import annotations

from dataclasses import dataclass, field

MAGIC = 0x07230203
OP_DECORATE, OP_VARIABLE, OP_TYPE_POINTER = 71, 59, 32
OP_NAME, OP_MEMBER_NAME, OP_MEMBER_DECORATE = 5, 6, 72
OP_TYPE_INT, OP_TYPE_FLOAT, OP_TYPE_STRUCT, OP_TYPE_BOOL = 21, 22, 30, 20
OP_SPEC_CONSTANT_TRUE, OP_SPEC_CONSTANT_FALSE, OP_SPEC_CONSTANT = 48, 49, 50
DECORATION_SPEC_ID, DECORATION_BLOCK, DECORATION_BUFFER_BLOCK = 1, 2, 3
DECORATION_BINDING, DECORATION_DESCRIPTOR_SET, DECORATION_OFFSET = 33, 34, 35
STORAGE_UNIFORM, STORAGE_PUSH_CONSTANT, STORAGE_STORAGE_BUFFER = 2, 9, 12


@dataclass(frozen=True)
class ShaderInterface:
    """The descriptors and constants a module declares.

    Attributes:
        storage_buffers: the ``(set, binding)`` of each storage buffer, sorted.
        uniform_buffers: the ``(set, binding)`` of each uniform buffer, sorted.
        spec_ids: the ``constant_id`` of each specialization constant, sorted.
        push_constants: the module has a push-constant block.
        push_members: the push-constant block's members, ``(name, byte offset, kind)`` in
            offset order; kind ``uint``, ``int``, ``float`` (32-bit scalars), ``uint64``,
            ``int64``, ``double``, else ``other`` (vectors, arrays, structs).
        uniform_members: ``(set, binding) -> members`` of each uniform block, as above.
        spec_names: ``name -> (constant_id, kind)`` of each named specialization constant
            (kind ``bool``, ``uint``, ``int``, ``float``, ...).
    """

    storage_buffers: tuple[tuple[int, int], ...]
    uniform_buffers: tuple[tuple[int, int], ...]
    spec_ids: tuple[int, ...]
    push_constants: bool
    push_members: tuple[tuple[str, int, str], ...] = ()
    uniform_members: dict = field(default_factory=dict)
    spec_names: dict = field(default_factory=dict)


def _words(spirv: bytes) -> list[int]:
    if len(spirv) < 20 or len(spirv) % 4:
        raise ValueError(f"SPIR-V module of {len(spirv)} bytes: expected a 5-word header and "
                         "whole 32-bit words")
    order = "little" if int.from_bytes(spirv[:4], "little") == MAGIC else "big"
    if int.from_bytes(spirv[:4], order) != MAGIC:
        raise ValueError(f"not a SPIR-V module: magic number {spirv[:4].hex()}, "
                         f"expected {MAGIC:#010x}")
    return [int.from_bytes(spirv[i:i + 4], order) for i in range(0, len(spirv), 4)]


def _string(words: list[int]) -> str:
    """A SPIR-V literal string (UTF-8, NUL-terminated, packed little-end first)."""
    raw = b"".join(w.to_bytes(4, "little") for w in words)
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


class _Module:
    """The instructions :func:`interface` needs, by result id."""

    def __init__(self, words: list[int]):
        self.decorations: dict[int, dict[int, int]] = {}
        self.member_offsets: dict[tuple[int, int], int] = {}
        self.names: dict[int, str] = {}
        self.member_names: dict[tuple[int, int], str] = {}
        self.types: dict[int, str] = {}
        self.structs: dict[int, list[int]] = {}
        self.pointers: dict[int, tuple[int, int]] = {}
        self.variables: list[tuple[int, int, int]] = []
        self.spec_types: dict[int, int] = {}
        i = 5
        while i < len(words):
            count, opcode = words[i] >> 16, words[i] & 0xFFFF
            if count == 0 or i + count > len(words):
                raise ValueError(f"SPIR-V module: instruction at word {i} runs past the end")
            self._read(opcode, words[i + 1:i + count])
            i += count

    def _read(self, opcode: int, op: list[int]) -> None:
        if opcode == OP_DECORATE and len(op) >= 2:
            self.decorations.setdefault(op[0], {})[op[1]] = op[2] if len(op) > 2 else 1
        elif opcode == OP_MEMBER_DECORATE and len(op) >= 4 and op[2] == DECORATION_OFFSET:
            self.member_offsets[(op[0], op[1])] = op[3]
        elif opcode == OP_NAME and len(op) >= 2:
            self.names[op[0]] = _string(op[1:])
        elif opcode == OP_MEMBER_NAME and len(op) >= 3:
            self.member_names[(op[0], op[1])] = _string(op[2:])
        elif opcode == OP_TYPE_INT and len(op) >= 3:
            self.types[op[0]] = ("int" if op[2] else "uint") + ("64" if op[1] == 64 else
                                                               "" if op[1] == 32 else "?")
        elif opcode == OP_TYPE_FLOAT and len(op) >= 2:
            self.types[op[0]] = {32: "float", 64: "double"}.get(op[1], "other")
        elif opcode == OP_TYPE_BOOL and op:
            self.types[op[0]] = "bool"
        elif opcode == OP_TYPE_STRUCT and op:
            self.structs[op[0]] = op[1:]
        elif opcode == OP_TYPE_POINTER and len(op) >= 3:
            self.pointers[op[0]] = (op[1], op[2])
        elif opcode == OP_VARIABLE and len(op) >= 3:
            self.variables.append((op[0], op[1], op[2]))
        elif opcode in (OP_SPEC_CONSTANT, OP_SPEC_CONSTANT_TRUE, OP_SPEC_CONSTANT_FALSE) \
                and len(op) >= 2:
            self.spec_types[op[1]] = op[0]

    def members(self, struct_id: int) -> tuple[tuple[str, int, str], ...]:
        """``(name, byte offset, kind)`` of each member of a block, in offset order."""
        found = []
        for index, type_id in enumerate(self.structs.get(struct_id, ())):
            kind = self.types.get(type_id, "other")
            kind = kind if kind in ("uint", "int", "float", "uint64", "int64",
                                    "double") else "other"
            found.append((self.member_names.get((struct_id, index), f"member{index}"),
                          self.member_offsets.get((struct_id, index), 0), kind))
        return tuple(sorted(found, key=lambda m: m[1]))


def interface(spirv: bytes) -> ShaderInterface:
    """The module's :class:`ShaderInterface`.

    Raises:
        ValueError: not a SPIR-V module (bad header, a truncated instruction).
    """
    module = _Module(_words(spirv))
    decorations, pointers = module.decorations, module.pointers
    storage, uniform, push = [], [], False
    push_members, uniform_members = (), {}
    for type_id, var_id, storage_class in module.variables:
        if storage_class == STORAGE_PUSH_CONSTANT:
            push = True
            push_members = module.members(pointers.get(type_id, (0, 0))[1])
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
            uniform_members[key] = module.members(pointers.get(type_id, (0, 0))[1])
    spec = sorted({d[DECORATION_SPEC_ID] for d in decorations.values()
                   if DECORATION_SPEC_ID in d})
    spec_names = {module.names[i]: (d[DECORATION_SPEC_ID],
                                    module.types.get(module.spec_types.get(i), "other"))
                  for i, d in decorations.items()
                  if DECORATION_SPEC_ID in d and i in module.names}
    return ShaderInterface(tuple(sorted(set(storage))), tuple(sorted(set(uniform))),
                           tuple(spec), push, push_members, uniform_members, spec_names)
