"""Small syntax helpers that several rule families share (literal values, bindings, subtrees).

Judgements about what a value is (traced or static, an array or a list) live in the facts
pass (`jaxguard.lint.facts`, `traced`, `kinds`); this module only reads the source.
"""

from __future__ import annotations

import contextlib

import libcst as cst

from jaxguard.lint.facts import FunctionInfo, Scope, all_params, attribute_stores, literal_str  # noqa: F401 - attribute_stores is read from here too
from jaxguard.lint.walk import descendants  # noqa: F401 - descendants is read from here too


def one_line(code: str, limit: int = 40) -> str:
    """Source text for a message: its whitespace (line breaks too) collapsed, and cut to `limit`."""
    text = " ".join(code.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def unrebound_param(ctx, name: str) -> bool:
    """`name`, read here, is a parameter of the function being checked that its body never
    rebinds: it holds what the caller passed."""
    function = ctx.function
    owner = ctx.scope.lookup(name)
    return function is not None and owner is function.scope and name in function.params and name not in owner.values


def number(node: cst.BaseExpression | None) -> float | None:
    """The value of an int or float literal (`1e-3`, `0x10`, `1_000`, `-2.5`), else None."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        value = number(node.expression)
        return None if value is None else -value
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return float(node.evaluated_value)
        except (ValueError, SyntaxError, OverflowError):
            return None
    return None


def single_binding(ctx, name: str) -> cst.BaseExpression | None:
    """The one value `name` is bound to where it is visible: its only assignment, or the
    default of a parameter that is never rebound; else None."""
    owner = ctx.scope.lookup(name)
    if owner is None:
        return None
    values = owner.values.get(name, [])
    if name in owner.params:
        function = owner.function
        if values or function is None or not isinstance(function.node, cst.FunctionDef):
            return None
        for param in all_params(function.node.params):
            if param.name.value == name:
                return param.default
        return None
    return values[0] if len(values) == 1 else None


def known_number(ctx, node: cst.BaseExpression | None) -> float | None:
    """A literal number, or a name bound once to one (`tol = 0.08`, `def f(r, cutoff=8.0)`)."""
    value = number(node)
    if value is None and isinstance(node, cst.Name):
        value = number(single_binding(ctx, node.value))
    return value


def environ_key(subscript: cst.Subscript) -> str | None:
    """"KEY" in `os.environ["KEY"]`."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    return literal_str(subscript.slice[0].slice.value)


def is_true_literal(node: cst.BaseExpression) -> bool:
    """`True`, a non-zero integer, or a string such as "1", "true", "on" (a flag's value)."""
    if isinstance(node, cst.Name):
        return node.value == "True"
    if isinstance(node, cst.Integer):
        return node.value != "0"
    text = literal_str(node)
    return text is not None and text.strip().lower() in ("1", "true", "yes", "on")


def names_in(node: cst.CSTNode) -> set[str]:
    return {n.value for n in descendants(node) if isinstance(n, cst.Name)}


def self_assignments(ctx, method: FunctionInfo | None, attribute: str) -> list[tuple[cst.BaseExpression | None, Scope]] | None:
    """The values the methods of `method`'s class assign to `self.<attribute>` (`self.w =
    np.ones(3)` in `setUp`, `self.lamb = popsize` in `__init__`; None for an augmented or
    unpacking assignment), each with the scope it is made in; None outside a class."""
    method = ctx.facts.enclosing_method(method)
    if method is None:
        return None
    return ctx.facts.attribute_values(method.parent).get(attribute, [])


@contextlib.contextmanager
def resolving_in(ctx, scope: Scope):
    """Resolve names as in `scope` (where a value was bound) while judging that value."""
    saved = ctx.scope_stack
    ctx.scope_stack = [scope]
    try:
        yield
    finally:
        ctx.scope_stack = saved


def is_docstring(statement) -> bool:
    """A statement line that is a string alone: a docstring."""
    return (
        isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
