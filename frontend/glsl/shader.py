"""What the GLSL front end knows of the language and learns of a shader: GLSL's built-in
work-item vectors, types and functions with their OpenCL C spellings, the names OpenCL C
reserves, and the :class:`Shader` a walk describes (its work-group size, buffers, push
constants, specialization constants)."""
from __future__ import annotations

from dataclasses import dataclass, field

WORK_ITEM = {"gl_GlobalInvocationID": "get_global_id", "gl_LocalInvocationID": "get_local_id",
             "gl_WorkGroupID": "get_group_id", "gl_NumWorkGroups": "get_num_groups"}
"""GLSL's work-item vectors and the OpenCL C function of each component."""

AXES = {"x": 0, "y": 1, "z": 2}

SCALARS = {"float": "float", "int": "int", "uint": "uint", "bool": "int", "void": "void"}
VECTORS = {f"{p}vec{n}": f"{t}{n}" for p, t in (("", "float"), ("i", "int"), ("u", "uint"))
           for n in (2, 3, 4)}
TYPES = {**SCALARS, **VECTORS}
"""GLSL types and their OpenCL C spelling."""

BUFFER_ELEMENTS = {"float": 1, "vec2": 2, "vec4": 4}
"""The element types of a buffer's array and their floats per element."""

FUNCTIONS = frozenset((
    "fma", "min", "max", "dot", "sqrt", "exp", "exp2", "log", "log2", "pow",
    "floor", "ceil", "sin", "cos", "tanh", "mix", "step", "length", "sign"))
"""Built-in functions OpenCL C has with the same meaning (the OpenCL C front end says
which of them it models)."""

RENAMED = {"inversesqrt": "rsqrt"}
"""Built-in functions OpenCL C spells otherwise."""

OVERLOADED = {"abs": """\
static float __attribute__((overloadable)) glsl_abs(float v) { return fabs(v); }
static int __attribute__((overloadable)) glsl_abs(int v) { return max(v, -v); }"""}
"""Built-in functions whose OpenCL C spelling depends on the argument's type, written as
overloaded helpers named ``glsl_<name>`` at the top of the C source where used."""

C_ONLY_WORDS = frozenset((
    "global", "local", "constant", "private", "kernel", "char", "short", "long", "signed",
    "unsigned", "size_t", "half", "auto", "register", "static", "extern", "typedef",
    "goto", "restrict", "sizeof", "enum", "union", "volatile", "inline", "read_only",
    "write_only", "read_write", "ptrdiff_t", "intptr_t", "uintptr_t", "event_t",
    "sampler_t", "image2d_t", "image3d_t", "uchar", "ushort", "ulong", "global_id",
    *(f"{t}{n}" for t in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                          "float", "double", "half") for n in (2, 3, 4, 8, 16))))
"""Names GLSL allows that are OpenCL C words: such a name gets a suffix in the C source."""

LINE_KINDS = frozenset((
    "local_declaration", "expression_statement", "if_statement", "for_statement",
    "while_statement", "do_statement", "return_statement", "break_statement",
    "continue_statement", "switch_statement", "compound_statement"))


@dataclass(frozen=True)
class Binding:
    """One buffer of the shader.

    Attributes:
        name: its name for the launch: the array member's name, or the block's instance
            name where the block has one (``buffer A { float data[]; } a;`` is ``a``).
        set, binding: its descriptor set and binding number.
        element: ``float``, ``vec2`` or ``vec4``.
        access: ``in`` (``readonly``), ``out`` (``writeonly``) or None (either).
    """

    name: str
    set: int
    binding: int
    element: str
    access: str | None


@dataclass
class Shader:
    """What the walk learnt besides the source: the work-group size (its three
    dimensions, each an int), the buffers in (set, binding) order, the scalar arguments
    (name -> ``int``/``uint``/``float``, in the order declared), the blocks that hold them
    (``(kind, set, binding, member names)``, kind ``push_constant`` or ``uniform``), the
    specialization constants (name -> (constant_id, default)), the integer constants and
    ``#define`` values (name -> value), the names renamed in the C source (GLSL name -> C
    name) and how the user wrote each of them (C name -> ``local``, ``pc.M``), and the
    integer arguments that stand for a float member converted (``uint(pc.M)``: C name ->
    (member, ``int`` or ``uint``))."""

    local_size: list = field(default_factory=lambda: [1, 1, 1])
    local_size_ids: dict = field(default_factory=dict)
    bindings: list = field(default_factory=list)
    scalars: dict = field(default_factory=dict)
    scalar_blocks: list = field(default_factory=list)
    converted: dict = field(default_factory=dict)
    specialization: dict = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    c_names: dict = field(default_factory=dict)
    written: dict = field(default_factory=dict)
