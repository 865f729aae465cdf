"""Line and column of reported nodes, without generating code for the whole module.

libcst's PositionProvider generates the code of the entire module to learn where each
node is; on a large file with one finding that costs about as much as parsing it. A
top-level statement's text starts at column 0 of some line, so positions computed on a
module made of that statement alone are right up to a line offset, and Python's own
parser says on which line each top-level statement's first token is.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider


def _full(module: cst.Module):
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def _first_lines(module: cst.Module, source: str) -> list[int] | None:
    """The line of the first token of each statement in module.body, from Python's parser."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    nodes = iter(tree.body)
    lines = []
    for statement in module.body:
        # `a = 1; b = 2` is one libcst statement line and two ast statements
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        group = [next(nodes, None) for _ in range(count)]
        if group[0] is None or group[-1] is None:
            return None
        lines.append(group[0].lineno)
    if next(nodes, None) is not None:
        return None
    return lines


class Positions:
    """`positions[node]` -> CodeRange, for nodes inside the top-level statements asked for."""

    def __init__(self, module: cst.Module, source: str, tops: set[cst.CSTNode | None]) -> None:
        self.parts: list[tuple[dict, int]] = []
        self.module = module
        first_lines = _first_lines(module, source) if None not in tops else None
        if first_lines is None:
            self.parts.append((_full(module), 0))
            return
        for statement, line in zip(module.body, first_lines):
            if statement in tops:
                # the module's own indentation and newline settings, so columns match
                ranges = _full(module.with_changes(body=[statement], header=[], footer=[]))
                self.parts.append((ranges, line - ranges[statement].start.line))

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        for ranges, shift in self.parts:
            found = ranges.get(node)
            if found is not None:
                if not shift:
                    return found
                return CodeRange(
                    CodePosition(found.start.line + shift, found.start.column),
                    CodePosition(found.end.line + shift, found.end.column),
                )
        # a node outside the statements asked for: fall back to the whole module once
        self.parts.append((_full(self.module), 0))
        return self.parts[-1][0][node]
