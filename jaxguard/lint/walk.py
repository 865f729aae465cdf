"""A lean traversal of a libcst tree, for visitors that only read.

`module.visit(visitor)` rebuilds every node on the way back up (libcst's machinery is
made for transformers) and visits every whitespace and punctuation node; measured on
jax's sources it costs several times the parse. Reading the dataclass fields directly,
in declaration order, skipping layout-only fields, does the same `on_visit`/`on_leave`
dispatch for a fraction of that. Declaration order is source order except where libcst
declares a field after the body: a function's decorators and return annotation, a class's
bases, keywords and decorators.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import libcst as cst

# Fields that hold only whitespace, comments, punctuation or an operator token: no rule
# visits them (rules read an operator from its parent, e.g. BinaryOperation.operator).
_LAYOUT_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "semicolon", "header", "footer", "leading_lines",
        "lines_after_decorators", "trailing_whitespace", "equal", "star", "colon",
        "dot", "lbracket", "rbracket", "lbrace", "rbrace", "operator",
    }
)


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields of a node type that can hold nodes a rule looks at, in source order."""
    fields = _CHILD_FIELDS.get(node_type)
    if fields is None:
        fields = _CHILD_FIELDS[node_type] = tuple(
            f.name
            for f in dataclasses.fields(node_type)
            if f.name not in _LAYOUT_FIELDS and not f.name.startswith("whitespace") and f.type is not str
        )
    return fields


def _node_types() -> frozenset[type]:
    found: set[type] = set()
    pending = [cst.CSTNode]
    while pending:
        for subclass in pending.pop().__subclasses__():
            if subclass not in found:
                found.add(subclass)
                pending.append(subclass)
    return frozenset(found)


# Every libcst node class (all are defined once libcst is imported): a set lookup is much
# cheaper than isinstance() against libcst's abstract base classes.
NODE_TYPES = _node_types()


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Call `visitor.on_visit` / `on_leave` on `node` and its descendants, in field order
    (see the module docstring)."""
    kind = type(visitor)
    if kind.on_visit is Visitor.on_visit and kind.on_leave is Visitor.on_leave:
        _walk_dispatching(node, visitor, _dispatch_table(kind))
    else:
        _walk_generic(node, visitor)


def _walk_generic(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    # the child loop is written out, not a generator: this runs for every node of every module
    if visitor.on_visit(node) is not False:
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if type(value) in (list, tuple):  # a libcst sequence field holds only nodes
                for item in value:
                    _walk_generic(item, visitor)
            elif type(value) in NODE_TYPES:
                _walk_generic(value, visitor)
    visitor.on_leave(node)


_DISPATCH: dict[type, dict[type, tuple]] = {}


def _dispatch_table(visitor_type: type) -> dict[type, tuple]:
    """node type -> (child fields, visit_X or None, leave_X or None) for one Visitor class."""
    return _DISPATCH.setdefault(visitor_type, {})


def _walk_dispatching(node: cst.CSTNode, visitor: Visitor, table: dict[type, tuple]) -> None:
    # walk() for a Visitor: its visit_X / leave_X found once per node type, called directly
    entry = table.get(type(node))
    if entry is None:
        kind = type(node)
        entry = table[kind] = (
            child_fields(kind),
            _method(type(visitor), "visit_", kind),
            _method(type(visitor), "leave_", kind),
        )
    fields, visit, leave = entry
    if visit is None or visit(visitor, node) is not False:
        for name in fields:
            value = getattr(node, name)
            if type(value) in (list, tuple):
                for item in value:
                    _walk_dispatching(item, visitor, table)
            elif type(value) in NODE_TYPES:
                _walk_dispatching(value, visitor, table)
    if leave is not None:
        leave(visitor, node)


@lru_cache(maxsize=None)
def _method(visitor_type: type, prefix: str, node_type: type):
    name = prefix + node_type.__name__
    method = getattr(visitor_type, name, None)
    if method is not None and method is getattr(cst.CSTVisitor, name, None):
        return None  # libcst's do-nothing default: not worth a call per node
    return method


class Visitor(cst.CSTVisitor):
    """A CSTVisitor whose `visit_X`/`leave_X` lookup is cached per node type (libcst builds
    the method name and looks it up for every node)."""

    def on_visit(self, node: cst.CSTNode) -> bool:
        method = _method(type(self), "visit_", type(node))
        return method is None or method(self, node) is not False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        method = _method(type(self), "leave_", type(original_node))
        if method is not None:
            method(self, original_node)


def descendants(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node` and every node below it, in source order."""
    found: list[cst.CSTNode] = []

    class _Collect(Visitor):
        def on_visit(self, child: cst.CSTNode) -> bool:
            found.append(child)
            return True

    walk(node, _Collect())
    return found
