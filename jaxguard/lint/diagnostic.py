"""The values the engine passes around: text edits, fixes and diagnostics."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Edit:
    """Replace source[start:end] (character offsets) with `text`."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Fix:
    """A rewrite of the source. `safe` fixes run with --fix, others need --unsafe-fixes."""

    edits: tuple[Edit, ...]
    safe: bool = True
    description: str = ""


@dataclass
class Diagnostic:
    code: str
    name: str
    message: str
    line: int  # 1-based
    column: int  # 1-based
    end_line: int
    end_column: int
    fix: Fix | None = None
    path: str = ""
    # Extra lines on which a `# noqa` also applies (the rest of a multi-line statement).
    noqa_lines: tuple[int, ...] = field(default=(), compare=False)
    # A notebook finding: (line, column, end line, end column) in the .ipynb file's JSON text,
    # where the cell's source holds it (GitHub annotations and SARIF point there).
    file_region: tuple[int, int, int, int] | None = field(default=None, compare=False)

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self):
        return (self.path, self.line, self.column, self.code)

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "fixable": self.fixable,
            "fix": None
            if self.fix is None
            else {"safe": self.fix.safe, "description": self.fix.description},
        }
