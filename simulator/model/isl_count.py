"""The number of points of an isl set as a piecewise quasi-polynomial of its parameters,
counted in a form Barvinok counts fast.

Barvinok's ``card()`` is exponential in the dimension of the set it counts and slows down
sharply with integer divisions (a work-item id split into rows and columns by ``/ 16`` and
``% 16``). A kernel's iteration domain usually is a product in disguise: the work-group
ids, the work-item ids and the loop counters of a tiled GEMM meet only through the sizes.
:func:`count_points` counts each disjoint basic set of the domain as follows:

1. its integer divisions become set variables (isl's ``lift``: each ``d = floor(e/m)``
   a variable with ``m·d <= e <= m·d + m - 1``; a bijection, so the count is unchanged);
2. a division of one variable, ``d = floor((x + c)/m)``, replaces that variable by the
   remainder ``r = x + c - m·d`` (``0 <= r < m``): a unimodular change of variables, which
   again keeps the count, after which ``x``'s row and column parts no longer meet;
3. the variables are split into independent groups (two variables are in one group where
   a constraint names both); the count is the product of each group's count (constraints
   on the parameters alone go with every group), each a set of a few dimensions.

A set with a variable that no constraint bounds, or a division isl cannot name, is counted
by ``card()`` as it is.
"""
from __future__ import annotations


def _isl():
    import islpy
    return islpy


class PastDeadline(Exception):
    """The deadline passed before the count was done (the message says where)."""


def count_points(domain, deadline: float | None = None):
    """The number of points of the isl set ``domain`` as an isl piecewise quasi-polynomial
    of its parameters (what ``domain.card()`` gives, counted per independent group of
    variables; see the module's description).

    Raises:
        PastDeadline: ``deadline`` (``time.monotonic()``) passed between two pieces.
    """
    import time

    parts = []
    for basic in domain.compute_divs().make_disjoint().get_basic_sets():
        if parts and deadline is not None and time.monotonic() > deadline:
            raise PastDeadline(f"counting a domain of {len(parts)}+ disjoint pieces")
        parts.append(_count_basic(basic))
    if not parts:
        return domain.card()
    return pairwise_sum(parts, lambda a, b: a.add(b).coalesce(), deadline,
                        lambda pairs: PastDeadline(
                            f"adding the counts of a domain's {len(pairs)} pieces"))


def pairwise_sum(forms: list, add, deadline: float | None, late):
    """The sum of the non-empty list ``forms`` by ``add(a, b)``, taken in pairs (sums of
    small forms first: isl's sum of two piecewise forms intersects every piece of one with
    every piece of the other).

    Raises:
        Exception: ``late(pairs)`` (``pairs``: the forms of the round under way) where
            ``deadline`` (``time.monotonic()``) passed before a sum.
    """
    import time

    while len(forms) > 1:
        pairs, forms = forms, []
        for i in range(0, len(pairs) - 1, 2):
            if deadline is not None and time.monotonic() > deadline:
                raise late(pairs)
            forms.append(add(pairs[i], pairs[i + 1]))
        forms += pairs[len(pairs) - len(pairs) % 2:]
    return forms[0]


def _count_basic(basic):
    isl = _isl()
    names = basic.get_space().get_var_names(isl.dim_type.param)
    n = basic.dim(isl.dim_type.set)
    divisions = [_one_variable_division(basic, i, n)
                 for i in range(basic.dim(isl.dim_type.div))]
    if any(d is False for d in divisions):
        return isl.Set.from_basic_set(basic).card()
    rows = _rows(basic.lift(), len(names), n + len(divisions))
    rows = _substituted(rows, _change_of_variables(divisions, n))
    groups = _groups(rows, n + len(divisions))
    if groups is None:
        return isl.Set.from_basic_set(basic).card()
    on_parameters = [row for row in rows if not any(row[1])]
    text = _SetText(names, n + len(divisions))
    counted = None
    for variables, group_rows in groups:
        part = isl.Set(text.set(variables, group_rows + on_parameters)).card()
        counted = part if counted is None else counted.mul(part)
    if counted is None:                        # no variable: the parameters' conditions
        counted = isl.Set(text.set([], on_parameters)).card()
    return counted


def _change_of_variables(divisions, n: int) -> dict[int, dict]:
    """Each lifted variable (the ``n`` set variables, then one per division) as an integer
    combination of the new variables (``{column: coefficient, "1": constant}``; a column
    left out is itself).

    The divisions of one variable ``x`` are taken by decreasing modulus ``m``: the first,
    ``d = floor((x + c)/m)``, writes ``x = m·d + r - c`` (``r`` in ``x``'s column); a next
    ``d' = floor((x + c')/m')`` whose ``m'`` divides the coefficients of ``x`` so far is
    ``d' = Σ (a/m')·u + e`` with ``x = Σ a·u + m'·e + r' - c'`` (``e`` in ``d'``'s
    column): triangular with ones on the diagonal, so integer points map one to one. A
    division that fits neither stays a variable of its own."""
    exprs: dict[int, dict] = {}
    by_variable: dict[int, list] = {}
    for i, division in enumerate(divisions):
        if division is not None:
            by_variable.setdefault(division[0], []).append((division[1], division[2], n + i))
    for x, found in by_variable.items():
        for modulus, offset, column in sorted(found, key=lambda f: -f[0]):
            current = exprs.get(x, {x: 1})
            parts = {k: a for k, a in current.items() if k not in (x, "1")}
            if any(a % modulus for a in parts.values()):
                continue
            exprs[column] = {**{k: a // modulus for k, a in parts.items()}, column: 1}
            exprs[x] = {**parts, column: modulus, x: 1, "1": -offset}
    return exprs


def _substituted(rows, exprs: dict[int, dict]) -> list[list]:
    """``rows`` with each variable replaced by its expression in ``exprs``."""
    out = []
    for parameters, coefficients, constant, equality in rows:
        new = [0] * len(coefficients)
        for k, amount in enumerate(coefficients):
            if not amount:
                continue
            for term, a in exprs.get(k, {k: 1}).items():
                if term == "1":
                    constant += amount * a
                else:
                    new[term] += amount * a
        out.append([parameters, new, constant, equality])
    return out


def _one_variable_division(basic, i: int, n: int):
    """``(x, m, c)`` where division ``i`` of ``basic`` is ``floor((x_x + c)/m)``; None for
    another division; False for one isl has no expression of."""
    isl = _isl()
    aff = basic.get_div(i)
    if aff.is_nan():
        return False
    denominator = aff.get_denominator_val()
    if any(not aff.get_coefficient_val(kind, k).is_zero()
           for kind in (isl.dim_type.param, isl.dim_type.div)
           for k in range(aff.dim(kind))):
        return None
    coefficients = [aff.get_coefficient_val(isl.dim_type.in_, j).mul(denominator)
                    for j in range(n)]
    named = [j for j, value in enumerate(coefficients) if not value.is_zero()]
    offset = aff.get_constant_val().mul(denominator)
    if len(named) != 1 or not coefficients[named[0]].is_one() or not offset.is_int():
        return None
    return named[0], denominator.to_python(), offset.to_python()


def _rows(basic, parameters: int, variables: int) -> list[list]:
    """Each constraint of a basic set without divisions as ``[parameter coefficients,
    variable coefficients, constant, is_equality]`` (integers)."""
    isl = _isl()
    rows = []
    for c in basic.get_constraints():
        rows.append([[c.get_coefficient_val(isl.dim_type.param, k).to_python()
                      for k in range(parameters)],
                     [c.get_coefficient_val(isl.dim_type.set, k).to_python()
                      for k in range(variables)],
                     c.get_constant_val().to_python(), c.is_equality()])
    return rows


def _groups(rows, variables: int):
    """The variables split into groups no constraint joins, each with its constraints;
    None where a variable is in no constraint (unbounded: ``card()`` says so)."""
    parent = list(range(variables))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    named = [[k for k, a in enumerate(row[1]) if a] for row in rows]
    for ks in named:
        for k in ks[1:]:
            parent[root(k)] = root(ks[0])
    if any(all(k not in ks for ks in named) for k in range(variables)):
        return None
    groups: dict[int, tuple[list[int], list]] = {}
    for k in range(variables):
        groups.setdefault(root(k), ([], []))[0].append(k)
    for row, ks in zip(rows, named):
        if ks:
            groups[root(ks[0])][1].append(row)
    return list(groups.values())


class _SetText:
    """isl's text of a set over some of the variables, with the parameters ``names``."""

    def __init__(self, names: list[str], variables: int):
        prefix = "v"
        while any(name.startswith(prefix) for name in names):
            prefix += "_"
        self.names = names
        self.variable = [f"{prefix}{k}" for k in range(variables)]

    def set(self, variables: list[int], rows) -> str:
        conditions = []
        for parameters, coefficients, constant, equality in rows:
            terms = [f"{a}*{self.names[k]}" for k, a in enumerate(parameters) if a]
            terms += [f"{coefficients[k]}*{self.variable[k]}" for k in variables
                      if coefficients[k]]
            terms.append(str(constant))
            conditions.append(" + ".join(terms) + (" = 0" if equality else " >= 0"))
        return (f"[{', '.join(self.names)}] -> {{ [{', '.join(self.variable[k] for k in variables)}]"
                f" : {' and '.join(conditions) or 'true'} }}")
