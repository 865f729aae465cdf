"""A lean traversal of a libcst tree, for visitors that only read.

`module.visit(visitor)` rebuilds every node on the way back up (libcst's machinery is
made for transformers) and visits every whitespace and punctuation node; measured on
jax's sources it costs several times the parse. Reading the dataclass fields directly,
in declaration order (source order for everything the rules track), skipping layout-only
fields, does the same `on_visit`/`on_leave` dispatch for a fraction of that.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

import libcst as cst

# Fields that hold only whitespace, comments or punctuation: no rule looks at them.
_LAYOUT_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "semicolon", "header", "footer", "leading_lines",
        "lines_after_decorators", "trailing_whitespace", "equal", "star", "colon",
    }
)


@lru_cache(maxsize=None)
def _child_fields(node_type: type) -> tuple[str, ...]:
    return tuple(
        f.name
        for f in dataclasses.fields(node_type)
        if f.name not in _LAYOUT_FIELDS and not f.name.startswith("whitespace")
    )


_IS_NODE: dict[type, bool] = {}


def _is_node(value) -> bool:
    # isinstance() against libcst's abstract base classes is slow; the answer per type is not
    kind = type(value)
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return known


def children(node: cst.CSTNode):
    for name in _child_fields(type(node)):
        value = getattr(node, name)
        if type(value) in (list, tuple):
            for item in value:
                if _is_node(item):
                    yield item
        elif _is_node(value):
            yield value


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Call `visitor.on_visit` / `on_leave` on `node` and its descendants, in source order."""
    if visitor.on_visit(node) is not False:
        for child in children(node):
            walk(child, visitor)
    visitor.on_leave(node)
