"""Sub-groups (``cl_khr_subgroups``, ``cl_khr_subgroup_shuffle``, ``cl_intel_subgroups``):
the work-group's work-items in the order of their flattened local id (dimension 0 fastest),
cut into sub-groups of the device model's sub-group size (:data:`SUB_GROUP_SIZE`, 32 work-items
in every built-in model), or of the whole work-group where it is smaller (a power of two).

- ``get_sub_group_local_id()``, ``get_sub_group_id()``, ``get_sub_group_size()``,
  ``get_max_sub_group_size()``, ``get_num_sub_groups()`` and
  ``get_enqueued_num_sub_groups()`` are integers of the flattened local id;
- ``sub_group_reduce_add``/``_min``/``_max`` of a float are a butterfly of
  :class:`~tiletraffic.simulator.ir.nodes.Shuffle` ``xor`` (lane distances ``size / 2`` down
  to 1), each followed by ``+``, ``fmin`` or ``fmax`` (log2(size) FLOPs per work-item);
- ``sub_group_broadcast``, ``sub_group_shuffle`` and ``intel_sub_group_shuffle`` of a float
  are a Shuffle ``index``; ``sub_group_shuffle_xor`` and ``intel_sub_group_shuffle_xor`` a
  Shuffle ``xor``; ``sub_group_shuffle_up``/``_down`` a Shuffle ``up``/``down``.

A kernel that uses sub-groups runs as the OpenCL C the schedule renders
(:func:`gpu.codegen.generate.generate`: each shuffle through local memory), since the
OpenCL platforms it is checked on (Oclgrind, PoCL) have no sub-groups.

Errors (:class:`~tiletraffic.frontend.opencl.clang_ast.FrontendError`): a work-group whose
size is not a multiple of the sub-group size (nor a power of two below it), a kernel whose
``intel_reqd_sub_group_size`` (or ``qcom_reqd_sub_group_size``) is not the device model's
sub-group size, a sub-group operation on an integer, ``sub_group_barrier`` and the other
sub-group built-ins (scans, votes).
"""
from __future__ import annotations

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.model.device_model import GENERIC_GPU_MODEL

from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import is_float_type
from tiletraffic.frontend.opencl.context import TranslationContext

SUB_GROUP_SIZE = GENERIC_GPU_MODEL.sub_group_size
"""Work-items per sub-group: the device model's (``sub_group_size``)."""

SUB_GROUP_INTEGERS = ("get_sub_group_local_id", "get_sub_group_id", "get_sub_group_size",
                      "get_max_sub_group_size", "get_num_sub_groups",
                      "get_enqueued_num_sub_groups")
"""The sub-group built-ins of integer value."""

SUB_GROUP_REDUCTIONS = {"sub_group_reduce_add": "+", "sub_group_reduce_min": "fmin",
                        "sub_group_reduce_max": "fmax"}
"""The sub-group reductions and how each combines two floats."""

SUB_GROUP_SHUFFLES = {"sub_group_broadcast": "index", "sub_group_shuffle": "index",
                      "intel_sub_group_shuffle": "index", "sub_group_shuffle_xor": "xor",
                      "intel_sub_group_shuffle_xor": "xor", "sub_group_shuffle_up": "up",
                      "sub_group_shuffle_down": "down"}
"""The sub-group shuffles and the :class:`~tiletraffic.simulator.ir.nodes.Shuffle` mode of
each."""


SUB_GROUP_BUILTINS = frozenset((*SUB_GROUP_INTEGERS, *SUB_GROUP_REDUCTIONS, *SUB_GROUP_SHUFFLES,
                                "sub_group_barrier"))
"""Every sub-group built-in the front end declares."""


def source_uses_sub_groups(tu) -> bool:
    """Whether the source of the translation unit ``tu`` (or a file it includes) names a
    sub-group built-in anywhere (in any kernel or helper): the OpenCL platforms without
    sub-groups cannot build it."""
    from clang import cindex
    return any(t.kind == cindex.TokenKind.IDENTIFIER and t.spelling in SUB_GROUP_BUILTINS
               for e in C.source_extents(tu) for t in tu.get_tokens(extent=e))


def is_sub_group_call(name: str) -> bool:
    """Whether ``name`` is a sub-group built-in (of any kind, accepted or not)."""
    return "sub_group" in name


class SubGroups(TranslationContext):
    """The sub-group built-ins (see the module docstring)."""

    uses_sub_groups = False

    def sub_group_width(self, at) -> int:
        """Work-items per sub-group of this launch's work-group (see the module
        docstring); :class:`FrontendError` where the work-group cannot be cut into
        sub-groups of one size."""
        items = 1
        for size in self.local_size:
            items *= size
        if items % SUB_GROUP_SIZE == 0:
            width = SUB_GROUP_SIZE
        elif items < SUB_GROUP_SIZE and items & (items - 1) == 0:
            width = items
        else:
            self.fail(at, f"{at.spelling}: a work-group of {items} work-items, not a multiple "
                          f"of the device model's sub-group size {SUB_GROUP_SIZE} (nor a power "
                          "of two below it): launch a multiple of it")
        self.uses_sub_groups = True
        return width

    def flat_local_id(self) -> S.IntExpr:
        """The work-item's flattened local id (dimension 0 fastest)."""
        flat: S.IntExpr = S.WorkItemId("local", len(self.local_size) - 1)
        for d in reversed(range(len(self.local_size) - 1)):
            flat = S.BinOp("+", S.WorkItemId("local", d),
                           S.BinOp("*", S.Const(self.local_size[d]), flat))
        return flat

    def sub_group_integer(self, s) -> S.IntExpr:
        """The value of the integer sub-group built-in call ``s``."""
        name = s.spelling
        if name not in SUB_GROUP_INTEGERS:
            self.fail(s, f"{name} of an integer: the simulator shuffles floats (an integer "
                         "shuffled would make indices depend on other work-items)")
        width = self.sub_group_width(s)
        items = 1
        for size in self.local_size:
            items *= size
        if name == "get_sub_group_local_id":
            return S.BinOp("%", self.flat_local_id(), S.Const(width))
        if name == "get_sub_group_id":
            return S.BinOp("/", self.flat_local_id(), S.Const(width))
        if name in ("get_sub_group_size", "get_max_sub_group_size"):
            return S.Const(width)
        return S.Const(items // width)

    def sub_group_float(self, s, out: list) -> S.FloatExpr:
        """The value of the float sub-group built-in call ``s`` (its statements appended
        to ``out``)."""
        name, args = s.spelling, C.children(s)[1:]
        if name not in SUB_GROUP_REDUCTIONS and name not in SUB_GROUP_SHUFFLES:
            self.fail(s, f"{name}: the sub-group built-ins read are "
                         f"{', '.join([*SUB_GROUP_INTEGERS, *SUB_GROUP_REDUCTIONS])} and the "
                         f"shuffles {', '.join(SUB_GROUP_SHUFFLES)}")
        if not is_float_type(C.strip(args[0]).type) and not is_float_type(args[0].type):
            self.fail(s, f"{name} of a {args[0].type.spelling}: the simulator shuffles floats")
        width = self.sub_group_width(s)
        value = self.float_expr(args[0], out)
        where = self.source_of(s)
        if name in SUB_GROUP_SHUFFLES:
            shuffled = self.fresh("shuffled")
            out += [S.DeclareFloat(shuffled, None),
                    S.Shuffle(shuffled, value, SUB_GROUP_SHUFFLES[name], self.exact(args[1]),
                              width, where)]
            return S.Private(shuffled)
        total = self.fresh("sub_group_total")
        out.append(S.DeclareFloat(total, None))
        out.append(S.Assign(total, value))
        distance = width // 2
        while distance >= 1:
            other = self.fresh("shuffled")
            combine = SUB_GROUP_REDUCTIONS[name]
            mine, theirs = S.Private(total), S.Private(other)
            out += [S.DeclareFloat(other, None),
                    S.Shuffle(other, mine, "xor", S.Const(distance), width, where),
                    S.Assign(total, S.FBinOp("+", mine, theirs) if combine == "+" else
                             S.FCall(combine, (mine, theirs)))]
            distance //= 2
        return S.Private(total)
