"""A GLSL compute shader's tree -> OpenCL C source of the same kernel, which the OpenCL C
front end (:mod:`tiletraffic.frontend.opencl.translate`) turns into the schedule IR.

The walk emits each construct as its OpenCL C equal, with a ``#line`` directive before each
statement so that every message of the OpenCL C front end names the place in the GLSL file:

- ``layout(local_size_x = ..., local_size_y_id = ...) in;``: the work-group size
  (:attr:`Shader.local_size`; a ``*_id`` form takes the specialization constant's value);
- buffer blocks (``readonly``/``writeonly``, one unsized array of ``float``, ``vec2`` or
  ``vec4`` each): ``__global`` pointer arguments named as :attr:`Binding.name` says;
- push constants and uniform blocks of ``int``/``uint``/``float`` members: scalar arguments
  named after their members (``pc.M`` is ``M``);
- specialization constants (``layout(constant_id = 0) const uint TS = 16;``) and other
  global constants: the value given (:class:`Translator`'s ``specialization``) or the
  shader's own;
- ``shared`` arrays: ``__local`` arrays of the kernel; ``barrier()``:
  ``barrier(CLK_LOCAL_MEM_FENCE)``; ``memoryBarrier*()``/``groupMemoryBarrier()`` (memory
  fences, which change no traffic) are left out;
- ``gl_GlobalInvocationID``, ``gl_LocalInvocationID``, ``gl_WorkGroupID``,
  ``gl_NumWorkGroups`` (``.x``/``.y``/``.z``), ``gl_WorkGroupSize`` and
  ``gl_LocalInvocationIndex``: the work-item functions as ``uint``; a ``uvec2/3`` or
  ``ivec2/3`` declared from one of them (or a swizzle) is read component by component;
- types ``float``, ``int``, ``uint``, ``bool``, ``vecN``/``ivecN``/``uvecN``; constructors as
  casts; ``.length()`` of a buffer's array: its element count from the launch;
- ``#define`` and ``#undef`` (passed to the C preprocessor, their bodies translated),
  ``#if``/``#ifdef``/``#ifndef``/``#elif``/``#else`` (the branch the macros above choose),
  ``#include`` (``GL_GOOGLE_include_directive``, read and translated in place),
  ``[[unroll]]`` and other attributes (ignored), helper functions (``in`` parameters; the
  buffers, push constants and shared arrays they read passed as extra parameters).

Refused by name with ``file:line:column``: ``out``/``inout`` parameters, structs,
matrices, doubles, images, atomics, sub-group operations and every built-in function
outside :data:`FUNCTIONS`, private globals, blocks of another shape.
"""
from __future__ import annotations

from pathlib import Path

from tiletraffic.frontend.glsl import syntax
from tiletraffic.frontend.glsl import tree as T
from tiletraffic.frontend.glsl.syntax import GlslError, fail
from tiletraffic.frontend.glsl.shader import (AXES, BUFFER_ELEMENTS, C_ONLY_WORDS, FUNCTIONS,
                                            LINE_KINDS, OVERLOADED, RENAMED, TYPES,
                                            WORK_ITEM, Binding, Shader)


class Translator:
    """One shader's walk: ``Translator(path, text, kernel, specialization, lengths)``, then
    :meth:`run` -> (OpenCL C source, :class:`Shader`).

    ``specialization``: values of specialization constants by name (others keep the
    shader's default); ``lengths(name)``: a buffer's float count by its name (None where
    unknown), for ``.length()``."""

    MAX_INCLUDE_DEPTH = 16

    def __init__(self, path, text: bytes, kernel: str, specialization=None, lengths=None):
        self.path, self.text, self.kernel = Path(path), text, kernel
        self.specialization = dict(specialization or {})
        self.lengths = lengths or (lambda name: None)
        self.shader = Shader()
        self.macros: dict[str, object] = {}       # name -> parsed body (or None)
        self.blocks: dict[str, str] = {}          # scalar block instance -> "scalar"
        self.buffer_instances: dict[str, Binding] = {}
        self.buffers: dict[str, Binding] = {}     # array member name -> binding
        self.shared: list[str] = []
        self.helpers: dict[str, object] = {}
        self.defines: list[str] = []
        self.functions: list[str] = []
        self.main = None
        self.file = self.path                     # the file being walked (includes)
        self.main_file = self.path
        self.depth = 0
        self.helper_uses: dict[str, list] = {}    # helper -> extra parameters, in order
        self.shared_arrays: dict[str, tuple] = {}    # name -> (C type, [dims])
        self.overloaded: set[str] = set()
        self.aliases: dict[str, tuple] = {}       # vector of work-item indices
        self.macro = None                         # the #define whose body is read
        self.local_names: set[str] = set()        # names the functions declare

    # ------------------------------------------------------------------ top level
    def run(self) -> tuple[str, Shader]:
        root = syntax.parse(self.text).root_node
        self.local_names = {i.text.decode() for f in root.children
                            if f.type == "function_definition" for d in T.walk(f)
                            if d.type in ("declarator", "parameter_declaration")
                            for i in T.children(d, "identifier")}
        self._unit(self.path, self.text)
        if self.main is None:
            raise GlslError(f"{self.path}: the shader has no main()")
        unknown = sorted(set(self.specialization) - set(self.shader.specialization))
        if unknown:
            raise GlslError(f"{self.path}: {', '.join(unknown)}: not a specialization "
                            "constant of the shader; its specialization constants: "
                            f"{', '.join(self.shader.specialization) or 'none'}")
        for d, name in self.shader.local_size_ids.items():
            self.shader.local_size[d] = self.shader.constants[name]
        self.shader.bindings.sort(key=lambda b: (b.set, b.binding))
        kernel = self._kernel()
        defines = [_text(d) for d in self.defines]
        prelude = [OVERLOADED[n] for n in sorted(self.overloaded)]
        return "\n".join([*prelude, *defines, *self.functions, kernel, ""]), self.shader

    def _unit(self, path: Path, text: bytes) -> None:
        tree = syntax.parse(text)
        saved, self.file = self.file, path
        for node in tree.root_node.children:
            self._top(node)
        self.file = saved

    def fail(self, node, message):
        if self.macro is not None:     # a node of a macro's body: the #define's place
            name = T.child(self.macro, "identifier").text.decode()
            fail(self.file, self.macro, f"in the body of #define {name}: {message}")
        fail(self.file, node, message)

    def _top(self, node) -> None:
        kind = node.type
        if kind in ("comment", "preproc_version", "preproc_extension", ";"):
            return
        if kind == "preproc_def":
            self._define(node)
        elif kind == "preproc_function_def":
            self._define(node, function=True)
        elif kind == "preproc_call":
            self._directive(node)
        elif kind in CONDITIONALS:
            for item in self._taken(node):
                self._top(item)
        elif kind == "declaration":
            self._declaration(node)
        elif kind == "function_definition":
            self._function(node)
        elif kind == "ERROR":
            self.fail(node, f"cannot be read as GLSL: {T.shown(node)}")
        else:
            self.fail(node, f"{kind.replace('_', ' ')} is not modelled at the top level of "
                            f"a shader: {T.shown(node)}")

    def _directive(self, node) -> None:
        directive = T.child(node, "preproc_directive").text.decode()
        arg = T.child(node, "preproc_arg")
        value = arg.text.decode().strip() if arg is not None else ""
        if directive == "#include":
            self._include(node, value)
        elif directive == "#undef":
            self.macros.pop(value, None)
            self.defines.append(f"#undef {value}")
        elif directive not in ("#pragma", "#line"):
            self.fail(node, f"the directive {directive} is not modelled")

    def _include(self, node, spelled: str) -> None:
        if len(spelled) < 2 or spelled[0] not in "\"<" or spelled[-1] not in "\">":
            self.fail(node, f"#include {spelled}: write #include \"file\"")
        target = self.file.parent / spelled[1:-1]
        if not target.is_file():
            self.fail(node, f"#include {spelled}: {target} is not a file")
        if self.depth >= self.MAX_INCLUDE_DEPTH:
            self.fail(node, f"#include {spelled}: more than {self.MAX_INCLUDE_DEPTH} nested "
                            "includes")
        self.depth += 1
        self._unit(target, target.read_bytes())
        self.depth -= 1

    def _define(self, node, function=False) -> None:
        name = T.child(node, "identifier").text.decode()
        arg = T.child(node, "preproc_arg")
        body = arg.text.decode().strip() if arg is not None else ""
        params = T.child(node, "preproc_params")
        parsed = T.expression(body) if body else None
        if not function and parsed is not None and parsed.type == "identifier" and \
                (parsed.text.decode() in WORK_ITEM or parsed.text == b"gl_WorkGroupSize"):
            self.aliases[name] = (parsed.text.decode(), "xyz", "uint")   # NAME.x, ...
            self.macros[name] = None
            self.defines.append(lambda: "")
            return
        self.macros[name] = None if function else parsed
        if not function and parsed is not None:
            value = self._constant(parsed, refuse=False)
            if isinstance(value, int):
                self.shader.constants[name] = value
        head = name + (params.text.decode() if params is not None else "")
        file = self.file

        def text() -> str:       # read once the whole shader is (pc.M of a later block)
            saved, self.file, self.macro = self.file, file, node
            try:
                return f"#define {head} {self.expr(parsed) if parsed is not None else body}"
            finally:
                self.file, self.macro = saved, None
        self.defines.append(text)

    def _taken(self, node) -> list:
        """The items of the branch a conditional directive (``#if``, ``#ifdef``,
        ``#ifndef``, ``#elif``, ``#else``) takes, as the preprocessor decides it from the
        macros defined above it (an undefined name in ``#if`` is 0)."""
        first = node.children[0].type
        branches = [c for c in node.named_children if c.type in CONDITIONALS]
        if node.type == "preproc_else":
            return [c for c in node.children[1:] if c.type != "comment"]
        if first in ("#ifdef", "#ifndef", "#elifdef", "#elifndef"):
            taken = (node.children[1].text.decode() in self.macros) == (
                first in ("#ifdef", "#elifdef"))
        else:
            try:
                taken = bool(T.evaluate(node.children[1], {},
                                       self.macros, undefined_zero=True))
            except T.NotConstant as err:
                self.fail(err.node or node, f"{first} {T.shown(node.children[1])}: not an "
                                            "integer constant expression")
        if taken:
            return [c for c in node.children[2:] if c not in branches
                    and c.type not in ("#endif", "comment")]
        return self._taken(branches[0]) if branches else []

    # ------------------------------------------------------------------ declarations
    def _declaration(self, node) -> None:
        qualifier = T.child(node, "type_qualifier")
        if T.child(node, "field_declaration_list") is not None:
            self._block(node, qualifier)
        elif T.child(node, "declarator_list") is not None:
            for declarator in T.children(T.child(node, "declarator_list"), "declarator"):
                self._global(declarator)
        elif node.children[0].type == "precision":
            return                     # precision statements: float is float32 here
        elif qualifier is not None and "in" in T.storage(qualifier):
            self._local_size(qualifier)
        elif qualifier is not None and node.named_children == [qualifier] and \
                set(T.storage(qualifier)) <= {"buffer", "uniform", "shared"}:
            return                     # a default layout (layout(std430) buffer;)
        else:
            self.fail(node, f"this declaration is not modelled: {T.shown(node)}")

    def _local_size(self, qualifier) -> None:
        for arg in T.layout_args(qualifier):
            name = arg.children[0].text.decode()
            value = arg.children[2] if len(arg.children) > 2 else None
            if value is None:
                self.fail(arg, f"layout({name}) without a value is not modelled")
            if name in ("local_size_x", "local_size_y", "local_size_z"):
                self.shader.local_size["xyz".index(name[-1])] = self._constant(value)
            elif name in ("local_size_x_id", "local_size_y_id", "local_size_z_id"):
                self.shader.local_size_ids["xyz".index(name[-4])] = \
                    self._constant_id_name(arg, self._constant(value))
            else:
                self.fail(arg, f"layout({name}) on the input is not modelled")

    def _constant_id_name(self, arg, constant_id: int) -> str:
        for name, (cid, _) in self.shader.specialization.items():
            if cid == constant_id:
                return name
        self.fail(arg, f"no specialization constant has constant_id = {constant_id}; "
                       "declare it before the layout that uses it")

    def _block(self, node, qualifier) -> None:
        storage = T.storage(qualifier) if qualifier is not None else []
        layout = {a.children[0].text.decode(): a for a in T.layout_args(qualifier)}
        names = [c for c in node.children if c.type == "identifier"]
        instance = names[1].text.decode() if len(names) > 1 else None
        members = []
        for decl in T.children(T.child(node, "field_declaration_list"), "field_declaration"):
            type_ = T.child(decl, "type_specifier")
            member = T.child(decl, "type_qualifier")
            storage += T.storage(member) if member is not None else []
            for d in T.children(T.child(decl, "field_declarator_list"), "field_declarator"):
                members.append((type_, d))
        if "buffer" in storage:
            self._buffer(node, storage, layout, instance, members)
        elif "uniform" in storage:
            block = "push_constant" if "push_constant" in layout else "uniform"
            names = []
            for type_, d in members:
                name, kind = d.children[0].text.decode(), type_.text.decode()
                if kind not in ("int", "uint", "float") or len(d.children) > 1:
                    self.fail(d, f"{name}: a {block.replace('_', ' ')} member of type {kind}"
                                 f"{'[]' if len(d.children) > 1 else ''} is not modelled "
                                 "(int, uint and float members are)")
                self._scalar(d, name, kind, instance)
                names.append(name)
            number = (lambda key: self._constant(layout[key].children[2]) if key in layout
                      else 0)
            self.shader.scalar_blocks.append((block, number("set"), number("binding"),
                                              tuple(names)))
            if instance is not None:
                self.blocks[instance] = "scalar"
        else:
            self.fail(node, f"a block of storage {' '.join(storage) or 'none'} is not "
                            "modelled (buffer, uniform and push_constant blocks are)")

    def _scalar(self, node, name, kind, instance) -> None:
        """A push-constant or uniform member: a scalar argument, named in C after the
        block's instance too (``pc_M``) where a function of the shader declares the
        member's name itself (``uint M = pc.M;``)."""
        if name in self.shader.scalars or name in self.buffers:
            self.fail(node, f"{name}: a second argument of this name")
        self.shader.scalars[name] = kind
        if instance is not None and name in self.local_names:
            c_name = f"{instance}_{name}"
            while c_name in self.local_names:
                c_name += "_"
            self.shader.c_names[name] = c_name
            self.shader.written[c_name] = f"{instance}.{name}"

    def _buffer(self, node, storage, layout, instance, members) -> None:
        if len(members) != 1 or len(members[0][1].children) != 2 or \
                members[0][1].children[1].text.decode().replace(" ", "") != "[]":
            self.fail(node, "a buffer block is modelled with exactly one member, an unsized "
                            "array (float data[];)")
        type_, declarator = members[0]
        element = type_.text.decode()
        if element not in BUFFER_ELEMENTS:
            self.fail(type_, f"a buffer of {element} is not modelled (float, vec2 and vec4 "
                             "are)")
        member = declarator.children[0].text.decode()
        access = "in" if "readonly" in storage else "out" if "writeonly" in storage else None
        number = (lambda key: self._constant(layout[key].children[2]) if key in layout else 0)
        binding = Binding(instance or member, number("set"), number("binding"), element, access)
        if binding.name in self.buffers or binding.name in self.shader.scalars:
            self.fail(node, f"{binding.name}: a second argument of this name")
        self.buffers[binding.name] = binding
        if instance is not None:
            self.buffer_instances[instance] = binding
        self.shader.bindings.append(binding)

    def _global(self, declarator) -> None:
        type_ = T.child(declarator, "type")
        qualifier = T.child(type_, "type_qualifier")
        storage = T.storage(qualifier) if qualifier is not None else []
        name = T.child(declarator, "identifier").text.decode()
        kind = self.type_name(T.child(type_, "type_specifier"))
        dims = T.children(declarator, "array_specifier")
        if "shared" in storage:
            shape = "".join(self.expr(d) for d in dims)
            self.shared_arrays[name] = (kind, [f"[{self.expr(e)}]" for d in dims
                                               for e in d.named_children
                                               if e.type != "comment"])
            self.shared.append(self._line(declarator) + f"__local {kind} {self.name(name)}{shape};")
            return
        if "const" not in storage or dims:
            self.fail(declarator, f"the global variable {name} is not modelled (global "
                                  "constants, shared arrays and blocks are); declare it in "
                                  "main()")
        initializer = declarator.children[-1]
        layout = {a.children[0].text.decode(): a for a in T.layout_args(qualifier)}
        if "constant_id" in layout:
            default = self._constant(initializer)
            cid = self._constant(layout["constant_id"].children[2])
            self.shader.specialization[name] = (cid, default)
            value = self.specialization.get(name, default)
            self.defines.append(f"#define {self.name(name)} (({kind}){T.literal(value)})")
        else:
            value = self._constant(initializer, refuse=False)
            self.defines.append(f"#define {self.name(name)} (({kind})({self.expr(initializer)}))")
        if value is not None:
            self.shader.constants[name] = value

    def _constant(self, node, refuse=True):
        """The value of a constant expression (literals, macros, constants, + - * / % <<
        >>, constructors, ``gl_WorkGroupSize.x``); None where it is not one and ``refuse``
        is false."""
        size = [self.shader.constants.get(self.shader.local_size_ids[d]) if d in
                self.shader.local_size_ids else n for d, n in enumerate(self.shader.local_size)]
        try:
            return T.evaluate(node, {**self.shader.constants, "gl_WorkGroupSize": size},
                              self.macros)
        except T.NotConstant as err:
            if refuse:
                part = T.shown(err.node) if err.node is not None else T.shown(node)
                self.fail(node, f"{T.shown(node)} is not a constant expression ({part} is "
                                "not a constant)" if part != T.shown(node) else
                                f"{T.shown(node)} is not a constant expression")
            return None

    # ------------------------------------------------------------------ functions
    def _function(self, node) -> None:
        declarator = T.child(node, "function_declarator")
        name = T.child(declarator, "identifier").text.decode()
        body = T.child(node, "compound_statement")
        if body is None:          # a prototype: the definition follows
            return
        if name == "main":
            self.main, self.main_file = node, self.file
            return
        self.helpers[name] = node
        params, declared = [], set()
        for p in T.children(T.child(declarator, "parameter_list"), "parameter_declaration"):
            qualifier = T.child(p, "type_qualifier")
            storage = T.storage(qualifier) if qualifier is not None else []
            if "out" in storage or "inout" in storage:
                self.fail(p, f"the {'inout' if 'inout' in storage else 'out'} parameter "
                             f"{T.shown(p)} of {name} is not modelled; return the value")
            type_ = self.type_name(T.child(p, "type_specifier"))
            pname = T.child(p, "identifier")
            declared |= {pname.text.decode()} if pname is not None else set()
            dims = "".join(self.expr(d) for d in T.children(p, "array_specifier"))
            const = "const " if "const" in storage else ""
            params.append(f"{const}{type_} {self.name(pname.text.decode()) if pname else ''}{dims}")
        text = self.stmt(body)
        declared |= {i.text.decode() for d in T.walk(body) if d.type == "declarator"
                     for i in T.children(d, "identifier")}
        extra = self._helper_arguments(node, body, declared)
        result = self.type_name(T.child(T.child(declarator, "type"), "type_specifier"))
        self.functions.append(self._line(node) + f"{result} {self.name(name)}("
                              f"{', '.join(params + extra) or 'void'})\n{text}")

    def _helper_arguments(self, node, body, declared: set) -> list[str]:
        """The kernel arguments and shared arrays a helper reads (itself or through the
        helpers it calls), as extra parameters of the same names; a name the helper
        declares itself (``declared``: parameters, variables) is its own."""
        used = {n.text.decode() for n in syntax.identifiers(body)} - declared
        used |= {f.children[-1].text.decode() for f in T.walk(body)      # pc.M
                 if f.type == "field_expression" and f.children[0].text.decode() in self.blocks}
        for callee in [n for n in used if n in self.helpers]:
            used |= set(self.helper_uses.get(callee, ()))
        names = [b for b in self._buffer_names() if b in used] + \
            [s for s in self.shader.scalars if s in used] + \
            [s for s in self.shared_arrays if s in used] + \
            [c for c, (member, _) in self.shader.converted.items() if member in used]
        self.helper_uses[T.child(T.child(node, "function_declarator"), "identifier")
                         .text.decode()] = names
        return [self._parameter(n) for n in names]

    def _buffer_names(self) -> list[str]:
        return list(self.buffers)

    def _parameter(self, name: str) -> str:
        if name in self.shader.converted:
            return f"const {self.shader.converted[name][1]} {name}"
        if name in self.shared_arrays:          # a pointer to its first row
            kind, dims = self.shared_arrays[name]
            inner = "".join(dims[1:])
            return (f"__local {kind} (*{self.name(name)}){inner}" if inner else
                    f"__local {kind} *{self.name(name)}")
        if name in self.buffers:
            b = self.buffers[name]
            const = "const " if b.access == "in" else ""
            element = "float" if b.element == "float" else TYPES[b.element]
            return f"__global {const}{element} *{self.name(name)}"
        return f"const {self.shader.scalars[name]} {self.c_name(name)}"

    def _kernel(self) -> str:
        body = T.child(self.main, "compound_statement")
        saved, self.file = self.file, self.main_file
        inner = "".join(self.stmt(c, body) for c in body.children
                        if c.type not in ("{", "}"))
        self.file = saved
        args = [self._parameter(b.name) for b in self.shader.bindings] + \
            [self._parameter(s) for s in self.shader.scalars] + \
            [self._parameter(s) for s in self.shader.converted]
        return (self._line(self.main) + f"__kernel void {self.kernel}({', '.join(args)})\n"
                + "{" + "".join(f"\n{s}" for s in self.shared) + inner + "\n}")

    # ------------------------------------------------------------------ statements
    def _line(self, node) -> str:
        """A ``#line`` directive for ``node``'s line, then spaces up to its column."""
        row, column = node.start_point
        file = str(self.file).replace("\\", "\\\\").replace('"', '\\"')
        return f"\n#line {row + 1} \"{file}\"\n" + " " * column

    def stmt(self, node, parent=None) -> str:
        """A statement (or anything inside one) as OpenCL C."""
        kind = node.type
        if kind == "comment":
            return ""
        if kind == "ERROR":
            if T.is_attribute(node):
                return ""
            self.fail(node, f"cannot be read as GLSL: {T.shown(node)}")
        if kind in CONDITIONALS:
            return "".join(self.stmt(c) for c in self._taken(node))
        if kind in ("preproc_def", "preproc_function_def"):
            self._define(node, function=kind == "preproc_function_def")
            return "\n" + _text(self.defines.pop()) + "\n"
        if kind == "preproc_call":
            count = len(self.defines)
            self._directive(node)
            return "".join("\n" + _text(self.defines.pop(count)) + "\n"
                           for _ in range(len(self.defines) - count))
        if kind == "expression_statement" and T.is_fence(node):
            return self._line(node) + ";"
        if kind in ("statement_list",):
            return "".join(self.stmt(c, node) for c in node.children)
        if kind == "local_declaration" and self._alias(node):
            return self._line(node) + ";"
        if kind in LINE_KINDS and not (parent is not None and parent.type == "for_statement"
                                       and kind != "compound_statement"
                                       and node is not parent.children[-1]):
            return self._line(node) + self._join(node)
        return self._join(node)

    def _alias(self, node) -> bool:
        """Whether ``node`` declares a vector of work-item indices (``uvec3 gid =
        gl_GlobalInvocationID;``, ``ivec2 p = ivec2(gl_GlobalInvocationID.xy);``): then it
        is recorded, and each component read later is the work-item function's value."""
        declarators = T.children(T.child(node, "declarator_list"), "declarator")
        if len(declarators) != 1 or declarators[0].children[-2].type != "=":
            return False
        type_ = T.child(declarators[0], "type")
        kind = T.child(type_, "type_specifier") if type_ is not None else None
        if kind is None or kind.text.decode() not in ("uvec2", "uvec3", "ivec2", "ivec3"):
            return False
        value = declarators[0].children[-1]
        if value.type == "function_call" and value.children[0].type == "type_specifier":
            args = T.child(value, "argument_list")
            if args is None or len(args.named_children) != 1:
                return False
            value = args.named_children[0]
        base, components = value.text.decode(), "xyz"
        if value.type == "field_expression":
            base, components = value.children[0].text.decode(), \
                value.children[-1].text.decode()
        if base not in WORK_ITEM and base != "gl_WorkGroupSize" or \
                not components or any(c not in AXES for c in components):
            return False
        name = T.child(declarators[0], "identifier").text.decode()
        self.aliases[name] = (base, components, "int" if kind.text.startswith(b"i") else "uint")
        return True

    def _join(self, node) -> str:
        if node.child_count == 0:
            return self.expr(node)
        if node.type in EXPRESSION_KINDS:
            return self.expr(node)
        return " ".join(t for t in (self.stmt(c, node) for c in node.children) if t)

    # ------------------------------------------------------------------ expressions
    def name(self, name: str) -> str:
        """An identifier of the shader as the C source spells it."""
        if name in C_ONLY_WORDS:     # an argument of this name may be renamed otherwise
            self.shader.c_names.setdefault(name, name + "_glsl")
            self.shader.written[name + "_glsl"] = name
            return name + "_glsl"
        return name

    def c_name(self, name: str) -> str:
        """A kernel argument's name in the C source (see :meth:`_scalar`)."""
        return self.shader.c_names.get(name) or self.name(name)

    def type_name(self, node) -> str:
        if node is None:
            return "void"
        text = node.text.decode()
        if text not in TYPES:
            self.fail(node, f"the type {text} is not modelled (float, int, uint, bool, "
                            "vec2/3/4, ivec2/3/4 and uvec2/3/4 are)")
        return TYPES[text]

    def expr(self, node) -> str:
        kind = node.type
        if kind == "identifier":
            return self._identifier(node)
        if kind == "number_literal":
            return self._number(node)
        if kind == "field_expression":
            return self._field(node)
        if kind == "function_call":
            return self._call(node)
        if kind == "type_specifier":
            return self.type_name(node)
        if kind == "comment":
            return ""
        if kind == "type_qualifier":
            storage = T.storage(node)
            if any(s not in ("const", "in", "highp", "mediump", "lowp", "precise")
                   for s in storage):
                self.fail(node, f"the qualifier {' '.join(storage)} is not modelled here")
            return "const" if "const" in storage else ""
        if kind == "ERROR":
            if T.is_attribute(node):
                return ""
            self.fail(node, f"cannot be read as GLSL: {T.shown(node)}")
        if node.child_count == 0:
            return node.text.decode()
        return " ".join(t for t in (self.stmt(c, node) for c in node.children) if t)

    def _identifier(self, node) -> str:
        text = node.text.decode()
        if text == "gl_LocalInvocationIndex":
            x, y, _ = self.shader.local_size
            return (f"((uint)(get_local_id(0) + {x} * (get_local_id(1) + {y} * "
                    "get_local_id(2))))")
        if text.startswith("gl_"):
            self.fail(node, f"{text} is not modelled here (its .x, .y and .z are)"
                      if text in WORK_ITEM or text == "gl_WorkGroupSize"
                      else f"the built-in {text} is not modelled")
        if text in self.blocks or text in self.buffer_instances:
            self.fail(node, f"the block {text} as a whole is not modelled; use its members")
        if text in self.aliases:
            self.fail(node, f"the vector {text} ({self.aliases[text][0]}) as a whole is not "
                            f"modelled; use {text}.x, {text}.y, ...")
        return self.name(text)

    def _number(self, node) -> str:
        text = node.text.decode()
        lower = text.lower()
        if lower.endswith("lf"):
            self.fail(node, f"the double literal {text} is not modelled (float is)")
        hex_ = lower.startswith("0x")
        if not hex_ and ("." in lower or "e" in lower) and not lower.endswith("f"):
            return text + "f"
        return text

    def _field(self, node) -> str:
        obj, field_ = node.children[0], node.children[-1].text.decode()
        if obj.type == "identifier":
            base = obj.text.decode()
            if base in WORK_ITEM and field_ in AXES:
                return f"((uint){WORK_ITEM[base]}({AXES[field_]}))"
            if base == "gl_WorkGroupSize" and field_ in AXES:
                return f"{self.shader.local_size[AXES[field_]]}u"
            if base in self.aliases and len(field_) == 1 and \
                    "xyzw".find(field_) in range(len(self.aliases[base][1])):
                builtin, components, kind = self.aliases[base]
                axis = components["xyzw".index(field_)]
                if builtin == "gl_WorkGroupSize":
                    return f"(({kind}){self.shader.local_size[AXES[axis]]})"
                return f"(({kind}){WORK_ITEM[builtin]}({AXES[axis]}))"
            if base in self.blocks:
                return self.c_name(field_)
            if base in self.buffer_instances:
                return self.name(base)
        return f"{self.expr(obj)}.{field_}"

    def _call(self, node) -> str:
        callee, args = node.children[0], T.child(node, "argument_list")
        values = [self.expr(a) for a in (args.named_children if args else ())
                  if a.type != "comment"]
        if callee.type == "type_specifier":
            kind = self.type_name(callee)
            if callee.text.decode() == "bool":
                return f"((int)(({values[0]}) != 0))"
            if (converted := self._converted(kind, args)) is not None:
                return converted
            return f"(({kind})({', '.join(values)}))"
        if callee.type == "field_expression" and callee.children[-1].text == b"length":
            return self._length(callee)
        name = callee.text.decode()
        if callee.type != "identifier":
            self.fail(callee, f"the call of {name} is not modelled")
        if name == "barrier":
            return "barrier(CLK_LOCAL_MEM_FENCE)"
        if name in self.helpers:
            extra = [self.c_name(n) for n in self.helper_uses.get(name, ())]
            return f"{self.name(name)}({', '.join(values + extra)})"
        if name == "clamp" and len(values) == 3:     # each operand once, as GLSL's
            return f"min(max({values[0]}, {values[1]}), {values[2]})"
        if name in OVERLOADED:
            self.overloaded.add(name)
            return f"glsl_{name}({', '.join(values)})"
        if name in RENAMED:
            return f"{RENAMED[name]}({', '.join(values)})"
        if name in FUNCTIONS:
            return f"{name}({', '.join(values)})"
        if name in self.macros:
            return f"{name}({', '.join(values)})"
        what = ("atomic operations are" if name.startswith("atomic") else
                "sub-group operations are" if name.startswith("subgroup") else
                f"the function {name} is")
        self.fail(callee, f"{name}: {what} not modelled")

    def _converted(self, kind: str, args) -> str | None:
        """``uint(pc.M)`` of a float push constant (or uniform): an integer argument of
        its own, whose value the launch converts (the value is known before the dispatch,
        so it is no data); None for any other conversion."""
        arg = args.named_children[0] if args is not None and \
            len(args.named_children) == 1 else None
        while arg is not None and arg.type == "parenthesized_expression":
            arg = arg.named_children[0]
        if kind not in ("int", "uint") or arg is None or arg.type != "field_expression" or \
                arg.children[0].text.decode() not in self.blocks:
            return None
        member = arg.children[-1].text.decode()
        if self.shader.scalars.get(member) != "float":
            return None
        name = f"{self.c_name(member)}_{kind}"
        self.shader.converted[name] = (member, kind)
        return name

    def _length(self, callee) -> str:
        obj = callee.children[0]
        target = obj.children[0].text.decode() if obj.type == "field_expression" else \
            obj.text.decode()
        binding = self.buffer_instances.get(target) or self.buffers.get(target)
        if binding is None:
            self.fail(callee, f"{obj.text.decode()}.length(): length() of a buffer's array "
                              "is modelled, not of this")
        floats = self.lengths(binding.name)
        if floats is None:
            self.fail(callee, f"{binding.name}.length(): the launch gives no shape for "
                              f"{binding.name}")
        return f"{floats // BUFFER_ELEMENTS[binding.element]}u"


CONDITIONALS = frozenset(("preproc_if", "preproc_ifdef", "preproc_elif", "preproc_elifdef",
                          "preproc_else"))
"""Conditional directives: the branch taken is read, the others are not."""

EXPRESSION_KINDS = frozenset((
    "identifier", "number_literal", "field_expression", "function_call", "type_specifier",
    "type_qualifier"))


def _text(define) -> str:
    """A line of :attr:`Translator.defines`: text, or a function that reads it."""
    return define() if callable(define) else define
