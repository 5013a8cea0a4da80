"""Safe arithmetic and logical expressions over named numbers, for tuning-space files.

A constraint such as ``tm * tn + tm + tn <= max_private_floats and K % 4 == 0`` is parsed
with Python's own parser (``ast.parse(..., mode="eval")``) and then checked node by node
against a whitelist; it is evaluated by walking that tree, never with ``eval``. Allowed:

- integer, float and boolean literals; names (every name must be one the caller declares);
- ``+ - * / // %`` and unary ``-``/``+`` on numbers (``**`` is refused: a space file never
  needs it and ``10 ** 10 ** 10`` would never finish);
- comparisons ``< <= > >= == !=`` of numbers, chained as in Python (``1 <= tm <= 8``);
- ``and``, ``or``, ``not`` of comparisons (or of other logical expressions);
- calls of ``min(a, b, ...)``, ``max(a, b, ...)`` and ``ceil_div(a, b)`` (the smallest
  integer >= a / b) with positional arguments.

Anything else (attributes, subscripts, strings, lambdas, other calls, keyword arguments) is
an :class:`ExpressionError` at parse time naming the construct, as is an unknown name, a
number used where a truth value is needed (``tm and tn``) or the reverse (``(a < b) + 1``).
"""
from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass
from typing import Mapping

MAX_LENGTH = 1000
"""Longest expression accepted, in characters (deeper nesting than a space file needs
would only risk Python's recursion limit)."""

NUMBER, BOOLEAN = "number", "truth value"


MAX_MAGNITUDE = 2**63
"""The largest magnitude an expression's arithmetic may reach (a 64-bit integer's)."""


class ExpressionError(ValueError):
    """An expression is malformed, uses something not allowed, or cannot be evaluated
    (division by zero, a name without a value); the message says which and where."""


def _ceil_div(a, b):
    if b == 0:
        raise ZeroDivisionError("ceil_div by zero")
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return math.ceil(a / b)


FUNCTIONS = {"min": (lambda *a: min(a), 1), "max": (lambda *a: max(a), 1),
             "ceil_div": (_ceil_div, 2)}
"""Callable names -> (function, argument count: 1 means one or more, 2 exactly two)."""

_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv,
               ast.Mod: operator.mod}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
           ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@"}


@dataclass(frozen=True)
class Expression:
    """A parsed, checked expression.

    Attributes:
        text: the source text.
        kind: :data:`NUMBER` or :data:`BOOLEAN`, what it evaluates to.
        names: the variable names it reads.
    """

    text: str
    kind: str
    names: frozenset
    _tree: ast.expr

    def evaluate(self, values: Mapping[str, float]) -> float | bool:
        """The value of the expression with ``values`` (name -> number).

        Raises:
            ExpressionError: a name without a value, division (or ``%``) by zero, or an
                intermediate value beyond :data:`MAX_MAGNITUDE`.
        """
        try:
            return _evaluate(self._tree, values)
        except ZeroDivisionError:
            raise ExpressionError(f"{self.text!r}: division by zero with "
                                  f"{_shown(self.names, values)}") from None
        except KeyError as err:
            raise ExpressionError(f"{self.text!r}: no value for {err.args[0]!r}") from None
        except OverflowError:
            raise ExpressionError(f"{self.text!r}: a value beyond 2^63 (the limit of a 64-bit "
                                  f"integer) with {_shown(self.names, values)}") from None

    def values_shown(self, values: Mapping[str, float]) -> str:
        """``name = value`` of every name the expression reads, for messages."""
        return _shown(self.names, values)


def _shown(names, values) -> str:
    return ", ".join(f"{n} = {values[n]}" for n in sorted(names) if n in values)


def names_read_through(text, names, definitions: Mapping) -> list[str]:
    """The names the expression ``text`` reads (it may read ``names``), then those that
    the definitions of these read (``definitions``: name -> an expression or a number),
    breadth first, each once; an entry that is not a valid expression reads none."""
    chain: list[str] = []
    pending = [text]
    while pending:
        raw = pending.pop(0)
        try:
            read = parse(raw, names).names if isinstance(raw, str) else ()
        except ExpressionError:
            read = ()
        for name in sorted(set(read) - set(chain)):
            chain.append(name)
            pending.append(definitions.get(name))
    return chain


def parse(text: str, names, kind: str | None = None) -> Expression:
    """Parse and check ``text``.

    Args:
        text: the expression.
        names: the variable names it may read (anything else is an error).
        kind: :data:`BOOLEAN` or :data:`NUMBER` to require that kind of result; ``None``
            accepts either.

    Raises:
        ExpressionError: not a string, too long, a syntax error (with its column), a
            construct outside the whitelist, an unknown name (the known ones listed), a
            misplaced truth value or number, or the wrong kind of result.
    """
    if not isinstance(text, str):
        raise ExpressionError(f"an expression must be a string, got {text!r}")
    if not text.strip():
        raise ExpressionError("empty expression")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression of {len(text)} characters, longer than the "
                              f"{MAX_LENGTH} allowed")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as err:
        # Python gives offset 0 when the input ends before the expression does
        where = f"at column {err.offset}" if err.offset else "at the end"
        raise ExpressionError(f"{text!r}: syntax error {where}: {err.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError(f"{text!r}: cannot be parsed (nested too deeply?)") from None
    known = frozenset(names)
    used: set[str] = set()
    try:
        got = _check(tree, known, used, text)
    except RecursionError:
        raise ExpressionError(f"{text!r}: nested too deeply") from None
    if kind is not None and got != kind:
        raise ExpressionError(f"{text!r} gives a {got}; a {kind} is needed here"
                              + (" (a comparison such as 'a <= b')" if kind == BOOLEAN else ""))
    return Expression(text, got, frozenset(used), tree)


def _check(node, known, used, text) -> str:
    """The kind of ``node``'s value; raises ExpressionError for anything not allowed."""
    def need(child, kind, what):
        got = _check(child, known, used, text)
        if got != kind:
            raise ExpressionError(f"{text!r}: {what} needs a {kind}, got "
                                  f"{ast.unparse(child)!r} (a {got})")

    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return BOOLEAN
        if isinstance(node.value, (int, float)):
            return NUMBER
        raise ExpressionError(f"{text!r}: only numbers and True/False are allowed as "
                              f"literals, not {node.value!r}")
    if isinstance(node, ast.Name):
        if node.id not in known:
            raise ExpressionError(f"{text!r}: unknown name {node.id!r}; " + (
                f"known names: {', '.join(sorted(known))}" if known else
                "no name is defined here: write a number (or define the name first)"))
        used.add(node.id)
        return NUMBER
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _ARITHMETIC:
            sym = _SYMBOL.get(type(node.op), type(node.op).__name__)
            raise ExpressionError(f"{text!r}: the operator {sym!r} is not allowed (use "
                                  "+ - * / // %)")
        sym = _SYMBOL[type(node.op)]
        need(node.left, NUMBER, f"'{sym}'")
        need(node.right, NUMBER, f"'{sym}'")
        return NUMBER
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            need(node.operand, BOOLEAN, "'not'")
            return BOOLEAN
        if isinstance(node.op, (ast.USub, ast.UAdd)):
            need(node.operand, NUMBER, "a sign")
            return NUMBER
        raise ExpressionError(f"{text!r}: the operator '~' is not allowed")
    if isinstance(node, ast.BoolOp):
        word = "and" if isinstance(node.op, ast.And) else "or"
        for value in node.values:
            need(value, BOOLEAN, f"'{word}'")
        return BOOLEAN
    if isinstance(node, ast.Compare):
        for op in node.ops:
            if type(op) not in _COMPARE:
                raise ExpressionError(f"{text!r}: the comparison {type(op).__name__} is not "
                                      "allowed (use < <= > >= == !=)")
        for operand in (node.left, *node.comparators):
            need(operand, NUMBER, "a comparison")
        return BOOLEAN
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS:
            raise ExpressionError(f"{text!r}: only the functions {', '.join(FUNCTIONS)} may "
                                  f"be called, not {ast.unparse(node.func)!r}")
        if node.keywords:
            raise ExpressionError(f"{text!r}: {name}() takes positional arguments only")
        count = FUNCTIONS[name][1]
        if (count == 2 and len(node.args) != 2) or not node.args:
            raise ExpressionError(f"{text!r}: {name}() takes "
                                  + ("exactly two arguments" if count == 2 else
                                     "one or more arguments") + f", got {len(node.args)}")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise ExpressionError(f"{text!r}: '*' arguments are not allowed")
            need(arg, NUMBER, f"{name}()")
        return NUMBER
    if isinstance(node, ast.IfExp):
        raise ExpressionError(f"{text!r}: 'x if c else y' is not allowed; use min/max or "
                              "split the constraint")
    raise ExpressionError(f"{text!r}: {type(node).__name__} ({ast.unparse(node)!r}) is not "
                          "allowed; use numbers, names, + - * / // %, comparisons, "
                          "and/or/not, min, max, ceil_div")


def _evaluate(node, values):
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, bool) and abs(node.value) > MAX_MAGNITUDE:
            raise OverflowError(node.value)
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.BinOp):
        value = _ARITHMETIC[type(node.op)](_evaluate(node.left, values),
                                           _evaluate(node.right, values))
        if abs(value) > MAX_MAGNITUDE:
            raise OverflowError(value)
        return value
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, values)
        if isinstance(node.op, ast.Not):
            return not value
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_evaluate(v, values) for v in node.values)
        return any(_evaluate(v, values) for v in node.values)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, values)
        for op, right_node in zip(node.ops, node.comparators):
            right = _evaluate(right_node, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id][0](*(_evaluate(a, values) for a in node.args))
    raise AssertionError(f"unchecked node {type(node).__name__}")  # parse() refuses these


def as_int_expr(expression: Expression, symbols: Mapping, values: Mapping[str, int]):
    """The number ``expression`` as an integer expression of the IR: a name in ``symbols``
    becomes its expression there (``Param("N")`` for a size N), any other name the
    constant of its value in ``values``; ``//`` and ``/`` become the IR's division (C's, equal to Python's floor
    division where both operands are not negative), ``%`` its remainder, ``min``, ``max``
    and ``ceil_div`` their IR forms.

    Raises:
        ExpressionError: a truth value, a number that is not an integer, a name without a
            value.
    """
    from tiletraffic.simulator.ir.nodes import Const, ceil_div, minimum

    def convert(node):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not float(node.value).is_integer():
                raise ExpressionError(f"{expression.text!r}: {node.value!r} is not an integer")
            return Const(int(node.value))
        if isinstance(node, ast.Name):
            if node.id in symbols:
                return symbols[node.id]
            if node.id not in values:
                raise ExpressionError(f"{expression.text!r}: no value for {node.id!r}")
            return Const(int(values[node.id]))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = convert(node.operand)
            return Const(0) - operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            a, b = convert(node.left), convert(node.right)
            op = type(node.op)
            return (a + b if op is ast.Add else a - b if op is ast.Sub else a * b
                    if op is ast.Mult else a % b if op is ast.Mod else a // b)
        if isinstance(node, ast.Call) and node.func.id in FUNCTIONS:
            args = [convert(a) for a in node.args]
            if node.func.id == "ceil_div":
                return ceil_div(*args)
            out = args[0]
            for arg in args[1:]:
                out = (minimum(out, arg) if node.func.id == "min"
                       else Const(0) - minimum(Const(0) - out, Const(0) - arg))
            return out
        raise ExpressionError(f"{expression.text!r}: {ast.unparse(node)!r} is no integer")

    return convert(expression._tree)
