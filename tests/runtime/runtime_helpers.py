"""Helpers of the runtime tests (a unique module name: tests/ has several conftest.py)."""

import inspect
import os


def line_of(marker: str) -> str:
    """"<file>:<line>" of the unique line of the calling test file containing `marker`."""
    filename = inspect.stack()[1].filename
    with open(filename) as handle:
        hits = [i for i, text in enumerate(handle, 1) if marker in text]
    assert len(hits) == 2, f"marker {marker!r} must appear once besides this lookup"
    line = next(i for i in hits if f'line_of("{marker}")' not in _line(filename, i))
    return f"{os.path.basename(filename)}:{line}"


def _line(filename, number):
    with open(filename) as handle:
        return handle.readlines()[number - 1]


def assert_where(error, marker_where: str) -> None:
    """The error names the user's file:line first, in `where` and at the message start."""
    assert error.where is not None, str(error)
    assert error.where.endswith(marker_where), (error.where, marker_where)
    first = str(error).split(":", 2)
    assert f"{os.path.basename(first[0])}:{first[1]}" == marker_where, str(error)
