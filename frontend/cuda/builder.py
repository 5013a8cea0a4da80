"""CUDA's constructs on the OpenCL C front end's translator: :class:`CudaKernelBuilder` is
:class:`~tiletraffic.frontend.opencl.translate.KernelBuilder` (declarations, statements, every
loop form, integers assigned again, pointers, helpers inlined, float vectors) with what
CUDA spells differently mapped onto the same IR:

- ``threadIdx``/``blockIdx`` (``.x``, ``.y``, ``.z``) are the local and the group id of
  that dimension, ``blockDim``/``gridDim`` the local size and the number of groups (for a
  dimension beyond the launch's: 0 and 1), ``warpSize`` 32;
- pointer arguments without an address space are global buffers; ``__shared__`` arrays are
  local arrays of static shape, declared anywhere in the kernel; ``extern __shared__`` arrays
  are one local array of the launch's ``shared_bytes``, every such name aliasing it; a
  ``__shared__ float`` is a local array of one element;
- ``__syncthreads()``, a thread block's ``sync()`` and ``cooperative_groups::sync(block)``
  are barriers of local and global memory, with their place in the source;
- the warp shuffles (``__shfl_sync``, ``__shfl_up_sync``, ``__shfl_down_sync``,
  ``__shfl_xor_sync``) of a float are :class:`~tiletraffic.simulator.ir.nodes.Shuffle`
  values;
- ``c ? a : b`` of floats with a load in a branch is an ``if``/``else`` (only the branch
  taken loads);
- ``__ldg(p)`` is a load through ``p``; ``make_float2``/``make_float4`` build vectors;
  ``reinterpret_cast``/``static_cast``/``const_cast`` of pointers are pointer casts and of
  numbers conversions, as C casts are; ``fmaxf``, ``fminf``, ``fabsf``, ``sqrtf``,
  ``rsqrtf``, ``expf``, ``__expf``, ``exp2f``, ``logf``, ``__logf``, ``log2f``, ``powf``,
  ``__powf``, ``sinf``, ``cosf``, ``tanhf``, ``erff``, ``fmaf``, ``__fmaf_rn``,
  ``__fmul_rn``, ``__fadd_rn``, ``__fdividef`` are the IR's float operations;
- namespace-scope ``const``/``constexpr`` integers and floats (and a template's
  parameters) are constants; ``true``/``false`` are 1 and 0; ``assert``, casts to
  ``void``, ``typedef``/``using`` and ``static_assert`` in the kernel do nothing.

Refused by name: atomics, ``__syncwarp``, the fences, ``__syncthreads_count``/``_and``/
``_or``, ``__ballot_sync``, ``__constant__`` memory and shuffles of integers.
"""
from __future__ import annotations

from tiletraffic.simulator.ir import nodes as S
from tiletraffic.simulator.ir.visitor import walk

from tiletraffic.frontend.cuda import clang_cuda as CC
from tiletraffic.frontend.opencl import clang_ast as C
from tiletraffic.frontend.opencl.c_types import (address_space, is_float_type, is_int_type,
                                                 is_vector_type, vector_width)
from tiletraffic.frontend.opencl.context import Binding, DATA_DEPENDENT, Pointer
from tiletraffic.frontend.opencl.translate import KernelBuilder

WARP_SIZE = 32
"""CUDA's ``warpSize``."""

_INDEX_VARIABLES = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_CASTS = ("CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR",
          "CXX_CONST_CAST_EXPR", "CSTYLE_CAST_EXPR")
_FLOAT_FUNCTIONS = {"fmaxf": "fmax", "fminf": "fmin", "fabsf": "fabs", "sqrtf": "sqrt",
                    "rsqrtf": "rsqrt", "__frsqrt_rn": "rsqrt", "expf": "exp", "__expf": "exp",
                    "exp2f": "exp2", "logf": "log", "__logf": "log", "log2f": "log2",
                    "powf": "pow", "__powf": "pow", "sinf": "sin", "cosf": "cos",
                    "tanhf": "tanh", "erff": "erf"}
"""CUDA's single-precision functions (and the intrinsics ``__expf``, ``__logf``, ``__powf``)
as the IR's float built-ins (:data:`~tiletraffic.simulator.ir.nodes.FLOAT_FUNCTIONS`)."""
_FLOAT_OPERATORS = {"__fmul_rn": "*", "__fadd_rn": "+", "__fsub_rn": "-",
                    "__fdividef": "/", "__fdiv_rn": "/"}
SHUFFLES = {"__shfl_sync": "index", "__shfl_up_sync": "up", "__shfl_down_sync": "down",
            "__shfl_xor_sync": "xor"}
"""CUDA's warp shuffles and the IR's :class:`~tiletraffic.simulator.ir.nodes.Shuffle` mode
of each."""
TILE_SHUFFLES = {"shfl": "index", "shfl_up": "up", "shfl_down": "down", "shfl_xor": "xor"}
"""Cooperative groups' shuffles of a ``thread_block_tile<Size>`` (over its ``Size`` lanes) and
the IR's Shuffle mode of each."""
_REFUSED = {
    "__syncwarp": "__syncwarp synchronises one warp, which the simulator's work-group "
                  "barriers do not model: use __syncthreads()",
    "__threadfence": "__threadfence orders memory without synchronising; use __syncthreads()",
    "__threadfence_block": "__threadfence_block orders memory without synchronising; use "
                           "__syncthreads()",
    "__syncthreads_count": "__syncthreads_count returns a count of the block's values, which "
                           "makes the traffic depend on the data: use __syncthreads()",
    "__syncthreads_and": "__syncthreads_and returns a value of the block's data: use "
                         "__syncthreads()",
    "__syncthreads_or": "__syncthreads_or returns a value of the block's data: use "
                        "__syncthreads()",
    "__ballot_sync": f"__ballot_sync gathers the warp's predicates: {DATA_DEPENDENT}",
    "__activemask": "__activemask depends on the device's scheduling of the warp",
}


class CudaKernelBuilder(KernelBuilder):
    """The translator of one CUDA kernel (see the module docstring).

    ``CudaKernelBuilder(cursor, path, global_size, local_size, args, sizes, shared_bytes)``:
    ``shared_bytes`` sizes the ``extern __shared__`` arrays (``None``: the launch gives
    none)."""

    def __init__(self, cursor, path, global_size, local_size, args, sizes, shared_bytes=None):
        super().__init__(cursor, path, global_size, local_size, args, sizes, None)
        self.shared_bytes = shared_bytes
        self.dynamic_shared: S.LocalArray | None = None

    # ------------------------------------------------------------------ declarations
    def pointer_space(self, pointee) -> str:
        space = address_space(pointee)
        return "__global" if space == "__private" else space

    def declare_argument(self, p):
        """A ``bool`` argument is an integer parameter of value 0 or 1 (``false``/``true``);
        any other as the OpenCL C front end declares it."""
        if p.type.get_canonical().kind.name != "BOOL":
            return super().declare_argument(p)
        name, value = p.spelling, self.args[p.spelling]
        if not isinstance(value, (bool, int)) or value not in (0, 1):
            raise C.FrontendError(f"argument {name} is a bool in the source; give true, false, "
                                f"0 or 1, not {value!r}", name)
        self.params[name] = int(value)
        self.arg_kinds.append((name, "int"))
        self.scopes[0].names[name] = Binding("int", S.Param(name), p)
        self.used_names.add(name)

    def declaration(self, d, kernel_level) -> list:
        from clang.cindex import CursorKind as K
        if d.kind.name in ("TYPEDEF_DECL", "TYPE_ALIAS_DECL", "STATIC_ASSERT",
                           "USING_DIRECTIVE", "USING_DECLARATION", "NAMESPACE_ALIAS"):
            return []        # names for clang: the parse has resolved them
        if d.kind == K.VAR_DECL:
            attrs = {k.kind.name for k in d.get_children() if k.kind.is_attribute()}
            if "CUDASHARED_ATTR" in attrs:
                return self.shared_declaration(d)
            if "CUDACONSTANT_ATTR" in attrs:
                self.fail(d, f"__constant__ {d.spelling}: constant memory is not modelled; "
                             "pass it as a const float * argument")
            if _is_thread_block(d.type):
                self.bind(d.spelling, Binding("thread_block", None, d))
                return []
            if tile_size(d.type) is not None:
                size = tile_size(d.type)
                if size < 1 or size > WARP_SIZE or size & (size - 1):
                    self.fail(d, f"thread_block_tile<{size}>: tiles of a power of two up to "
                                 f"{WARP_SIZE} threads (a warp or part of one) are modelled")
                return []    # its calls name the tile's size through its type
        return super().declaration(d, kernel_level)

    def int_declaration(self, d, init) -> list:
        """A ``const``/``constexpr`` integer whose value clang evaluates is that constant
        (no statement: the generated code writes the value); any other integer as the
        OpenCL C front end declares it."""
        if init is not None and d.type.is_const_qualified():
            value = C.evaluate(init)
            if isinstance(value, int) and not isinstance(value, bool):
                from tiletraffic.frontend.opencl.c_types import c_value
                self.bind(d.spelling, Binding("int", S.Const(c_value(value, d.type)), d))
                return []
        return super().int_declaration(d, init)

    def shared_declaration(self, d) -> list:
        """A ``__shared__`` array: a local array of its static shape, or for ``extern
        __shared__ float s[]`` the launch's ``shared_bytes`` of floats."""
        kind = d.type.get_canonical().kind.name
        if kind == "CONSTANTARRAY":
            return self.local_declaration(d, True)
        if kind == "INCOMPLETEARRAY":
            if not is_float_type(d.type.get_canonical().element_type):
                self.fail(d, f"extern __shared__ {d.spelling} of "
                             f"{d.type.get_canonical().element_type.spelling}: dynamic shared "
                             "memory holds float here (extern __shared__ float s[])")
            if self.shared_bytes is None:
                self.fail(d, f"extern __shared__ {d.spelling}: the launch gives no "
                             "shared_bytes (the dynamic shared memory's size, in bytes, as "
                             "<<<grid, block, shared_bytes>>> gives it)")
            if self.dynamic_shared is None:
                arr = S.LocalArray(self.bind(d.spelling, Binding("local", None, d)),
                                   (S.Const(self.shared_bytes // S.FLOAT_BYTES),))
                self.local_arrays.append(arr)
                self.dynamic_shared = arr
            else:                   # every extern __shared__ array is the same memory
                self.bind(d.spelling, Binding("local", None, d))
            self.lookup(d.spelling).value = self.dynamic_shared
            return []
        if is_float_type(d.type):           # one float of the block: a one-element array
            arr = S.LocalArray(self.bind(d.spelling, Binding("shared_scalar", None, d)),
                               (S.Const(1),))
            self.lookup(d.spelling).value = arr
            self.local_arrays.append(arr)
            return []
        self.fail(d, f"__shared__ {d.spelling} of type {d.type.spelling}: shared memory holds "
                     "float arrays and floats (__shared__ float tile[TS][TS])")

    def shared_scalar(self, s):
        """The one-element local array of a ``__shared__ float`` the cursor ``s`` names,
        else ``None``."""
        from clang.cindex import CursorKind as K
        if s.kind != K.DECL_REF_EXPR:
            return None
        b = self.lookup(s.spelling)
        return b.value if b is not None and b.kind == "shared_scalar" else None

    def target_of(self, lhs):
        arr = self.shared_scalar(C.strip(lhs))
        if arr is not None:
            return ("memory", arr, (S.Const(0),))
        return super().target_of(lhs)

    def reassigned(self, decl) -> bool:
        """As the OpenCL C front end's, and also where the function passes the variable to
        a helper's non-``const`` reference parameter (which may assign it)."""
        if super().reassigned(decl):
            return True
        from tiletraffic.frontend.opencl.context import _key
        function = decl.semantic_parent
        if function is None:
            return False
        cache = self.__dict__.setdefault("_by_reference", {})
        key = _key(function)
        if key not in cache:
            cache[key] = frozenset(_passed_by_reference(function))
        return _key(decl) in cache[key]

    def reference_argument(self, param, arg, bindings: dict) -> bool:
        """A helper's reference parameter (``float &acc``, ``float (&reg)[TM]``,
        ``float4 &v``, ``const int &n``): the variable it is bound to, under the
        parameter's name (assignments through it assign the variable); a ``const``
        reference to a value that is no variable: that value."""
        from clang.cindex import CursorKind as K
        t = param.type.get_canonical()
        if t.kind.name not in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
            return False
        target = C.strip(arg)
        if target.kind == K.DECL_REF_EXPR and self.lookup(target.spelling) is not None:
            bindings[param.spelling] = self.lookup(target.spelling)
            return True
        pointee = t.get_pointee()
        if not pointee.is_const_qualified():
            return False
        if is_int_type(pointee):
            bindings[param.spelling] = Binding("int", self.int_expr(arg), param)
            return True
        if is_float_type(pointee):
            out: list = []
            value = self.float_expr(arg, out)
            if not out:
                bindings[param.spelling] = ("float", value, param)
                return True
        return False

    # ------------------------------------------------------------------ integers
    def _int_expr(self, s) -> S.IntExpr:
        from clang.cindex import CursorKind as K
        if s.kind == K.MEMBER_REF_EXPR:
            value = self.index_variable(s)
            if value is not None:
                return value
        size = self.tile_call(s)
        if size is not None and s.spelling in ("thread_rank", "size"):
            if s.spelling == "size":
                return S.Const(size)
            return self.linear_local_id() % size
        if size is not None and s.spelling in TILE_SHUFFLES:
            self.fail(s, f"{s.spelling} of an integer: the simulator shuffles floats (an "
                         "integer shuffled would make indices depend on other lanes)")
        if s.kind == K.CALL_EXPR and s.spelling in SHUFFLES:
            self.fail(s, f"{s.spelling} of an integer: the simulator shuffles floats (an "
                         "integer shuffled would make indices depend on other lanes)")
        if s.kind.name == "CXX_BOOL_LITERAL_EXPR":
            return S.Const(int(bool(C.evaluate(s))))
        if s.kind.name in _CASTS and s.kind != K.CSTYLE_CAST_EXPR:
            inner = C.children(s)[-1]
            if not is_int_type(s.type) or not is_int_type(C.strip(inner).type):
                self.fail(s, f"an integer computed from a {C.strip(inner).type.spelling}: "
                             f"{DATA_DEPENDENT}")
            return self.convert(self.int_expr(inner), inner.type, s.type, inner)
        if s.kind == K.DECL_REF_EXPR and self.lookup(s.spelling) is None:
            value = self.namespace_constant(s)
            if isinstance(value, int):
                return S.Const(value, s.spelling)
            value = self.template_argument(s)
            if isinstance(value, int):
                return S.Const(value)
        return super()._int_expr(s)

    def index_variable(self, s) -> S.IntExpr | None:
        """``threadIdx.x`` and the other built-in index variables, else ``None``."""
        from clang.cindex import CursorKind as K
        kids = C.children(s)
        base = C.strip(kids[0]) if kids else None
        if base is None or base.kind != K.DECL_REF_EXPR or \
                base.spelling not in _INDEX_VARIABLES or base.referenced is None or \
                not CC.is_shipped(base.referenced):
            return None
        dim = "xyz".index(s.spelling)
        ndim = len(self.local_size)
        groups = [g // x for g, x in zip(self.global_size, self.local_size)]
        if base.spelling == "blockDim":
            return S.Const(self.local_size[dim] if dim < ndim else 1)
        if base.spelling == "gridDim":
            return S.Const(groups[dim] if dim < ndim else 1)
        if dim >= ndim:
            return S.Const(0)
        return S.WorkItemId("local" if base.spelling == "threadIdx" else "group", dim)

    def tile_call(self, s) -> int | None:
        """The size of the ``thread_block_tile`` whose member function the call ``s``
        calls (``g.shfl_down(v, 1)``), else ``None``."""
        from clang.cindex import CursorKind as K
        kids = C.children(s) if s.kind == K.CALL_EXPR else []
        if not kids or kids[0].kind != K.MEMBER_REF_EXPR:
            return None
        base = C.children(kids[0])
        return tile_size(C.strip(base[0]).type) if base else None

    def linear_local_id(self) -> S.IntExpr:
        """The thread's rank in its block: x first, then y and z."""
        rank: S.IntExpr = S.WorkItemId("local", len(self.local_size) - 1)
        for dim in range(len(self.local_size) - 2, -1, -1):
            rank = rank * self.local_size[dim] + S.WorkItemId("local", dim)
        return rank

    def template_argument(self, s):
        """The value of a helper template's parameter in the instance inlined (clang shows
        it as a reference to the parameter), else ``None``."""
        ref = s.referenced
        if s.spelling and (ref is None or ref.kind.name != "TEMPLATE_NON_TYPE_PARAMETER"):
            return None
        value = C.evaluate(s)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def namespace_constant(self, s):
        """The value of a name the kernel does not declare: ``warpSize``, a namespace-scope
        ``const``/``constexpr`` integer or float (a template parameter of the kernel among
        them), else ``None``."""
        from clang.cindex import CursorKind as K
        ref = s.referenced
        if ref is None or ref.kind != K.VAR_DECL:
            return None
        if s.spelling == "warpSize" and CC.is_shipped(ref):
            return WARP_SIZE
        if not ref.type.is_const_qualified() or \
                ref.semantic_parent.kind not in (K.TRANSLATION_UNIT, K.NAMESPACE):
            return None
        return C.evaluate(s)

    # ------------------------------------------------------------------ floats
    def float_expr(self, c, out: list) -> S.FloatExpr:
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if s.kind.name in _CASTS and s.kind != K.CSTYLE_CAST_EXPR and is_float_type(s.type):
            inner = C.children(s)[-1]
            if is_float_type(C.strip(inner).type):
                return self.float_expr(inner, out)
            if is_int_type(C.strip(inner).type):
                v = self.float_literal(inner)
                return S.FConst(v) if v is not None else S.IntToFloat(self.exact(inner))
            self.fail(s, f"a {C.strip(inner).type.spelling} converted to float")
        arr = self.shared_scalar(s)
        if arr is not None:
            return S.Load(arr, (S.Const(0),), self.access_source(s, arr, (S.Const(0),)))
        if s.kind == K.CONDITIONAL_OPERATOR and is_float_type(s.type):
            return self.conditional(s, out)
        if s.kind == K.DECL_REF_EXPR and self.lookup(s.spelling) is None and \
                is_float_type(s.type):
            value = self.namespace_constant(s)
            if isinstance(value, (int, float)):
                return S.FConst(float(value))
        return super().float_expr(c, out)

    def conditional(self, s, out: list) -> S.FloatExpr:
        """``c ? a : b`` of floats: a select where neither branch loads, else a private
        float assigned in an ``if``/``else`` (C loads only the branch taken)."""
        cond, then, orelse = C.children(s)
        test = self.condition(cond)          # refuses a condition on float values
        then_out: list = []
        else_out: list = []
        a, b = self.float_expr(then, then_out), self.float_expr(orelse, else_out)
        if not then_out and not else_out and not any(
                isinstance(n, S.Load) for e in (a, b) for n in walk(e)):
            return S.Select(test, a, b)
        name = self.fresh("selected")
        out += [S.DeclareFloat(name, None),
                S.If(test, tuple(then_out + [S.Assign(name, a)]),
                     tuple(else_out + [S.Assign(name, b)]))]
        return S.Private(name)

    def float_call(self, s, out) -> S.FloatExpr:
        name = s.spelling
        args = C.children(s)[1:]
        self.refuse_call(s)
        if name in _FLOAT_FUNCTIONS and len(args) == S.FLOAT_FUNCTIONS[_FLOAT_FUNCTIONS[name]]:
            return S.FCall(_FLOAT_FUNCTIONS[name], tuple(self.float_expr(a, out) for a in args))
        if name in ("fmaf", "__fmaf_rn") and len(args) == 3:
            a, b, c = (self.float_expr(x, out) for x in args)
            return S.FBinOp("+", S.FBinOp("*", a, b), c)
        if name in _FLOAT_OPERATORS and len(args) == 2:
            return S.FBinOp(_FLOAT_OPERATORS[name], self.float_expr(args[0], out),
                            self.float_expr(args[1], out))
        if name == "__ldg" and len(args) == 1:
            ptr = self.pointer_expr(args[0])
            if ptr.width != 1:
                self.fail(s, f"__ldg of a float{ptr.width} used as one float: take a "
                             "component of a float4 variable")
            array, index = self.resolve(ptr, s)
            return S.Load(array, index, self.access_source(s, array, index))
        if name in SHUFFLES:
            return self.shuffle(s, args, out)
        size = self.tile_call(s)
        if size is not None and name in TILE_SHUFFLES and len(args) == 2:
            value = self.float_expr(args[0], out)
            lane = self.exact(args[1])
            shuffled = self.fresh("shuffled")
            out += [S.DeclareFloat(shuffled, None),
                    S.Shuffle(shuffled, value, TILE_SHUFFLES[name], lane, size,
                              self.source_of(s))]
            return S.Private(shuffled)
        return super().float_call(s, out)

    def shuffle(self, s, args, out) -> S.FloatExpr:
        """A warp shuffle of a float (``__shfl_down_sync(mask, v, delta[, width])``): the
        IR's :class:`~tiletraffic.simulator.ir.nodes.Shuffle` of ``v`` in a private float."""
        if len(args) not in (3, 4):
            self.fail(s, f"{s.spelling} takes (mask, value, lane or delta[, width])")
        if not is_float_type(C.strip(args[1]).type) and not is_float_type(args[1].type):
            self.fail(s, f"{s.spelling} of a {args[1].type.spelling}: the simulator shuffles "
                         "floats")
        mask = C.evaluate(args[0])
        if not isinstance(mask, int) or mask & 0xFFFFFFFF != 0xFFFFFFFF:
            self.fail(args[0], f"{s.spelling} with a mask other than 0xffffffff: every lane "
                               "of the warp takes part in the shuffles the simulator models")
        width = WARP_SIZE
        if len(args) == 4:
            width = C.evaluate(args[3])
            if not isinstance(width, int) or width < 1 or width > WARP_SIZE or \
                    width & (width - 1):
                self.fail(args[3], f"{s.spelling} width {width!r}: a power of two from 1 to "
                                   f"{WARP_SIZE}, a constant")
        value = self.float_expr(args[1], out)
        lane = self.exact(args[2])
        name = self.fresh("shuffled")
        out += [S.DeclareFloat(name, None),
                S.Shuffle(name, value, SHUFFLES[s.spelling], lane, width,
                          self.source_of(s))]
        return S.Private(name)

    # ------------------------------------------------------------------ vectors, pointers
    def vector_values(self, c, width):
        from clang.cindex import CursorKind as K
        s = C.strip(c)
        if s.kind == K.CALL_EXPR and s.spelling in ("make_float2", "make_float4"):
            args = C.children(s)[1:]
            if len(args) != width:
                self.fail(s, f"{s.spelling} into a float{width}")
            out: list = []
            return tuple(self.float_expr(a, out) for a in args), out
        return super().vector_values(c, width)

    def vector_load_of(self, s, width):
        from clang.cindex import CursorKind as K
        if s.kind == K.CALL_EXPR and s.spelling == "__ldg":
            ptr = self.pointer_expr(C.children(s)[1])
            if ptr.width not in (1, width):
                self.fail(s, f"float{ptr.width} access read as float{width}")
            array, index = self.resolve(ptr, s)
            source = self.access_source(s, array, index)
            return lambda names: S.VectorLoad(tuple(names), array, index, aligned=True,
                                              source=source)
        return super().vector_load_of(s, width)

    def pointer_expr(self, c) -> Pointer:
        s = C.strip(c)
        if s.kind.name in _CASTS and s.kind.name != "CSTYLE_CAST_EXPR":
            inner = self.pointer_expr(C.children(s)[-1])
            pointee = s.type.get_pointee()
            if is_vector_type(pointee) and is_float_type(pointee.get_canonical().element_type):
                width = vector_width(pointee)
            elif is_float_type(pointee):
                width = 1
            else:
                self.fail(s, f"pointer cast to {s.type.spelling}: cast to float, float2 or "
                             "float4 pointers only")
            return Pointer(inner.target, inner.flat, inner.index, width)
        return super().pointer_expr(c)

    # ------------------------------------------------------------------ statements
    def expression_statement(self, c) -> list:
        """``assert(...)`` and ``(void)x`` are nothing; ``x /= y`` on a float is ``x = x /
        y``; any other statement as the OpenCL C front end reads it."""
        s = C.strip(c)
        if s.type.get_canonical().kind.name == "VOID" and s.kind.name in _CASTS:
            return []                    # assert(...) and (void)x
        if s.kind.name == "COMPOUND_ASSIGNMENT_OPERATOR" and C.binary_operator(s) == "/=":
            lhs, rhs = C.children(s)
            if self.integer_target(lhs) is None:
                return self.assign(lhs, rhs, "/", s)
        return super().expression_statement(c)

    def call_statement(self, c) -> list:
        name = c.spelling
        if name == "__syncthreads" or self.is_block_sync(c):
            return [S.Barrier(global_fence=True, source=self.source_of(c))]
        if name in _REFUSED:
            self.fail(c, _REFUSED[name])
        if name.startswith("atomic"):
            self.fail(c, f"{name}: atomics order updates by the device's timing, not by the "
                         "schedule; reduce through shared memory and __syncthreads(), one "
                         "store per element")
        return super().call_statement(c)

    def refuse_call(self, c) -> None:
        if c.spelling in _REFUSED:
            self.fail(c, _REFUSED[c.spelling])
        super().refuse_call(c)

    def is_block_sync(self, c) -> bool:
        """``block.sync()`` of a thread block, or ``cooperative_groups::sync(block)``."""
        from clang.cindex import CursorKind as K
        if c.spelling != "sync":
            return False
        kids = C.children(c)
        if kids and kids[0].kind == K.MEMBER_REF_EXPR:
            base = C.children(kids[0])
            return bool(base) and _is_thread_block(C.strip(base[0]).type)
        args = kids[1:]
        return len(args) == 1 and _is_thread_block(C.strip(args[0]).type)


def _passed_by_reference(function) -> set:
    """The declarations (keys of the translator's) that calls in ``function`` pass to a
    non-``const`` reference parameter."""
    from clang.cindex import CursorKind as K
    from tiletraffic.frontend.opencl.context import _key
    found = set()
    for c in function.walk_preorder():
        if c.kind != K.CALL_EXPR or c.referenced is None:
            continue
        params = [p for p in c.referenced.get_arguments() or ()]
        for p, a in zip(params, C.children(c)[1:]):
            t = p.type.get_canonical()
            if t.kind.name == "LVALUEREFERENCE" and not t.get_pointee().is_const_qualified():
                target = C.strip(a)
                if target.kind == K.DECL_REF_EXPR and target.referenced is not None:
                    found.add(_key(target.referenced))
    return found


def _is_thread_block(t) -> bool:
    """Whether ``t`` is cooperative groups' ``thread_block`` (a reference to one too)."""
    canonical = t.get_canonical()
    if canonical.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
        canonical = canonical.get_pointee().get_canonical()
    return canonical.spelling.replace("const ", "") == "cooperative_groups::thread_block"


def tile_size(t) -> int | None:
    """The ``Size`` of cooperative groups' ``thread_block_tile<Size>`` (a reference to one
    too), else ``None``."""
    canonical = t.get_canonical()
    if canonical.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
        canonical = canonical.get_pointee().get_canonical()
    decl = canonical.get_declaration()
    if decl is None or decl.spelling != "thread_block_tile" or \
            decl.semantic_parent is None or \
            decl.semantic_parent.spelling != "cooperative_groups" or \
            decl.get_num_template_arguments() != 1:
        return None
    return decl.get_template_argument_value(0)
