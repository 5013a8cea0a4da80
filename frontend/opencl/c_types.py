"""C's types as libclang reports them, for the OpenCL C front end: which types are integers
(with their bits and signedness), floats and float vectors, the address space a type is
declared in, and C's conversion of a Python int into an integer type."""
from __future__ import annotations

from tiletraffic.simulator.ir.static import wrap_int

VECTOR_COMPONENTS = "xyzw"
"""The component names of a float vector, component 0 first (``v.x`` is component 0)."""


def component_name(k: int, width: int) -> str:
    """The name of component ``k`` of a vector of ``width`` floats: ``x`` .. ``w`` up to
    four components, ``s0`` .. ``s7`` for eight."""
    return VECTOR_COMPONENTS[k] if width <= 4 else f"s{k}"


def component_number(name: str) -> int | None:
    """The component a one-component selector names (``x``..``w``, or ``s0``..``s3``,
    ``S0``..``S3``: ``v.s2`` is ``v.z``), else ``None``."""
    if len(name) == 1 and name in VECTOR_COMPONENTS:
        return VECTOR_COMPONENTS.index(name)
    if len(name) == 2 and name[0] in "sS" and name[1] in "01234567":
        return int(name[1])
    return None

def swizzle_components(name: str, width: int) -> tuple[int, ...] | None:
    """The components of a ``width``-component vector a selector of several names
    (``lo``, ``hi``, ``even``, ``odd``, ``xy``, ``zw``, ``s01``, ``s23``, ...), else None."""
    half = width // 2
    named = {"lo": tuple(range(half)), "hi": tuple(range(half, width)),
             "even": tuple(range(0, width, 2)), "odd": tuple(range(1, width, 2))}
    if name in named:
        return named[name]
    if len(name) > 1 and name[0] in "sS" and all(c in "0123456789abcdefABCDEF"
                                                  for c in name[1:]):
        comps = tuple(int(c, 16) for c in name[1:])
    elif all(c in VECTOR_COMPONENTS for c in name):
        comps = tuple(VECTOR_COMPONENTS.index(c) for c in name)
    else:
        return None
    return comps if all(k < width for k in comps) else None


INT_KINDS = {"INT", "UINT", "LONG", "ULONG", "SHORT", "USHORT", "CHAR_S", "UCHAR", "SCHAR",
             "CHAR_U", "BOOL", "LONGLONG", "ULONGLONG"}
"""clang's canonical kinds of the integer types."""
CHAR_KINDS = ("CHAR_S", "SCHAR", "CHAR_U", "UCHAR", "VOID")
"""clang's canonical kinds of ``char``, ``uchar`` and ``void``, whose pointers count bytes."""
INT_TYPES = {"BOOL": (1, False), "CHAR_S": (8, True), "SCHAR": (8, True),
             "CHAR_U": (8, False), "UCHAR": (8, False), "SHORT": (16, True),
             "USHORT": (16, False),
             "INT": (32, True), "UINT": (32, False), "LONG": (64, True),
             "ULONG": (64, False), "LONGLONG": (64, True), "ULONGLONG": (64, False)}
"""(bits, signed) of each integer type (clang's canonical kind; ``size_t`` is ``ULONG``)."""


def type_kind(t) -> str:
    """clang's kind of the canonical type of ``t`` (``INT``, ``FLOAT``, ``POINTER``, ...)."""
    return t.get_canonical().kind.name


def is_int_type(t) -> bool:
    """Whether ``t`` is an integer type (``bool`` and ``char`` included)."""
    return type_kind(t) in INT_KINDS


def int_type(t) -> tuple[int, bool] | None:
    """(bits, signed) of the integer type ``t``; ``None`` for another type."""
    return INT_TYPES.get(type_kind(t))


def type_range(bits: int, signed: bool) -> tuple[int, int]:
    """The least and the greatest value of an integer type of ``bits`` bits."""
    return (-(1 << bits - 1), (1 << bits - 1) - 1) if signed else (0, (1 << bits) - 1)


def c_value(value: int, t) -> int:
    """The Python int ``value`` converted to the integer type ``t``, as C converts it."""
    info = int_type(t)
    if info is None or info[0] == 1:
        return value
    return wrap_int(value, *info)


def is_float_type(t) -> bool:
    """Whether ``t`` is ``float``."""
    return type_kind(t) == "FLOAT"


def is_vector_type(t) -> bool:
    """Whether ``t`` is a vector type (``float4``, ``int2``, ...)."""
    return type_kind(t) in ("VECTOR", "EXTVECTOR")


def vector_width(t) -> int:
    """The number of components of the vector type ``t``."""
    return t.get_canonical().element_count


def address_space(t) -> str:
    """The address space ``t`` is declared in, as written (``__global``, ``__local``,
    ``__constant``), else ``__private``."""
    words = t.spelling.replace("*", " ").split()
    for space in ("__global", "__local", "__constant", "__private"):
        if space in words:
            return space
    return "__private"
