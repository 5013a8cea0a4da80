"""Reading a GLSL tree-sitter tree: children by kind, qualifiers, layout arguments,
attributes, and the value of a constant expression (literals, macros, constants, integer
operators, constructors; ``#if`` conditions with ``defined``)."""
from __future__ import annotations

from tiletraffic.frontend.glsl import syntax


FENCES = frozenset(("memoryBarrier", "memoryBarrierShared", "memoryBarrierBuffer",
                    "groupMemoryBarrier", "memoryBarrierImage", "memoryBarrierAtomicCounter"))
"""GLSL's memory barriers: fences that move no data."""


class NotConstant(Exception):
    """An expression that is not a constant; ``node`` is the part that is not."""

    def __init__(self, node):
        super().__init__()
        self.node = node


_OPERATORS = {"==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
              "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
              "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b),
              "&&": lambda a, b: int(bool(a) and bool(b)),
              "||": lambda a, b: int(bool(a) or bool(b)),
              "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
              "/": lambda a, b: (a / b if isinstance(a, float) or isinstance(b, float)
                                 else int(a / b)),
              "%": lambda a, b: a - int(a / b) * b, "<<": lambda a, b: a << b,
              ">>": lambda a, b: a >> b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
              "^": lambda a, b: a ^ b}


def evaluate(node, constants: dict, macros: dict, undefined_zero: bool = False):
    """The value of a constant GLSL expression (see :meth:`Translator._constant`);
    ``undefined_zero``: as in ``#if``, a name no macro or constant defines is 0 and
    ``defined(NAME)`` is read."""
    if node is None:
        raise NotConstant(node)
    kind = node.type
    text = node.text.decode()
    if undefined_zero and kind == "preproc_defined":
        return int(next(c for c in node.children if c.type == "identifier").text.decode()
                   in macros)
    if undefined_zero and kind == "identifier" and text not in constants and \
            text not in macros:
        return 0
    if kind == "unary_expression" and node.children[0].type in ("!", "~"):
        value = evaluate(node.children[1], constants, macros, undefined_zero)
        return int(not value) if node.children[0].type == "!" else ~value
    if kind == "number_literal":
        lower = text.lower().rstrip("u")
        try:
            if lower.startswith("0x"):
                return int(lower, 16)
            if "." in lower or "e" in lower:
                return float(lower.rstrip("f"))
            return int(lower, 8) if len(lower) > 1 and lower[0] == "0" else int(lower)
        except ValueError:
            raise NotConstant(node) from None
    if kind == "identifier":
        if text in constants:
            return constants[text]
        if macros.get(text) is not None:
            return evaluate(macros[text], constants, macros, undefined_zero)
        raise NotConstant(node)
    if kind == "field_expression" and node.children[0].text == b"gl_WorkGroupSize" and \
            "gl_WorkGroupSize" in constants:
        axis = "xyz".find(node.children[-1].text.decode())
        if axis < 0 or len(node.children[-1].text) != 1:
            raise NotConstant(node)
        return constants["gl_WorkGroupSize"][axis]
    if kind == "parenthesized_expression":
        return evaluate(node.named_children[0], constants, macros, undefined_zero)
    if kind == "unary_expression" and node.children[0].type in ("-", "+"):
        value = evaluate(node.children[1], constants, macros, undefined_zero)
        return -value if node.children[0].type == "-" else value
    if kind == "binary_expression" and node.children[1].type in _OPERATORS:
        a = evaluate(node.children[0], constants, macros, undefined_zero)
        b = evaluate(node.children[2], constants, macros, undefined_zero)
        if node.children[1].type in ("/", "%") and b == 0:
            raise NotConstant(node)
        return _OPERATORS[node.children[1].type](a, b)
    if kind == "function_call" and node.children[0].type == "type_specifier":
        args = child(node, "argument_list")
        if args is not None and len(args.named_children) == 1:
            value = evaluate(args.named_children[0], constants, macros)
            kind_ = node.children[0].text.decode()
            return float(value) if kind_ == "float" else int(value) if kind_ in (
                "int", "uint") else value
    raise NotConstant(node)


def expression(body: str):
    """``body`` (a macro's text) parsed as a GLSL expression, or None where it is not one."""
    wrapped = f"const int tiletraffic_macro_body = ({body});".encode()
    tree = syntax.parse(wrapped)
    if tree.root_node.has_error:
        return None
    found = [n for n in walk(tree.root_node) if n.type == "parenthesized_expression"]
    return found[0].named_children[0] if found else None


def walk(node):
    yield node
    for c in node.children:
        yield from walk(c)


def child(node, kind):
    if node is None:
        return None
    return next((c for c in node.children if c.type == kind), None)


def children(node, kind) -> list:
    return [] if node is None else [c for c in node.children if c.type == kind]


def storage(qualifier) -> list[str]:
    out = []
    for c in qualifier.children:
        if c.type in ("storage_qualifier", "precision_qualifier", "precise_qualifier",
                      "interpolation_qualifier", "invariant_qualifier", "memory_qualifier"):
            out.append(c.text.decode())
        elif c.type not in ("layout_qualifier",):
            out.append(c.text.decode())
    return out


def layout_args(qualifier) -> list:
    if qualifier is None:
        return []
    return [a for layout in children(qualifier, "layout_qualifier")
            for a in children(layout, "layout_argument")]


def is_attribute(node) -> bool:
    """Whether an ERROR node is an attribute the grammar does not know
    (``[[unroll]]``, ``[[dont_unroll]]``, ...)."""
    kinds = [c.type for c in node.children]
    return len(kinds) >= 4 and kinds[:2] == ["[", "["] and kinds[-2:] == ["]", "]"]


def is_fence(node) -> bool:
    call = node.named_children[0] if node.named_children else None
    return call is not None and call.type == "function_call" and \
        call.children[0].text.decode() in FENCES


def literal(value) -> str:
    return repr(float(value)) + "f" if isinstance(value, float) else str(value)


def shown(node, limit=60) -> str:
    text = " ".join(node.text.decode(errors="replace").split())
    return text if len(text) <= limit else text[:limit - 3] + "..."
