"""Suppression comments.

- `# noqa` / `# noqa: JG301, JG302` on any line of the reported statement (flake8's form);
- `# jaxguard: ignore` / `# jaxguard: ignore[JG301, JG302]` likewise (survives `ruff --fix`
  with RUF100 even when ruff is not told about the JG codes);
- `# jaxguard: noqa` / `# jaxguard: noqa: JG301` on a line of its own: the whole file
  (ruff's ERA001 knows `noqa` pragmas, so it does not take this for commented-out code);
  `# jaxguard: ignore-file` works too, but ERA001 reports it.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

_CODES = r"[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*"
NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODES}))?", re.IGNORECASE)
LINE_IGNORE = re.compile(rf"#\s*jaxguard:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
FILE_NOQA = re.compile(rf"#\s*jaxguard:\s*noqa(?::\s*(?P<codes>{_CODES}))?\s*$", re.IGNORECASE)
# The catalog's original spelling; accepted, but ruff's ERA001 takes it for commented-out code.
FILE_IGNORE = re.compile(r"#\s*jaxguard:\s*ignore-file\s*$", re.IGNORECASE)

ALL = None  # "every code"


def _codes(text: str | None) -> frozenset[str] | None:
    if text is None:
        return ALL
    return frozenset(c.upper() for c in re.split(r"[\s,]+", text.strip()) if c)


def comments(source: str) -> list[tuple[int, str, bool]]:
    """(line, comment text, whether the comment is alone on its line) for every comment."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                alone = not token.line[: token.start[1]].strip()
                found.append((token.start[0], token.string, alone))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return found


@dataclass
class Suppressions:
    by_line: dict[int, list[frozenset[str] | None]] = field(default_factory=dict)
    file_codes: list[frozenset[str] | None] = field(default_factory=list)
    use_noqa: bool = True

    @classmethod
    def from_source(cls, source: str, use_noqa: bool = True) -> Suppressions:
        found = cls(use_noqa=use_noqa)
        if "noqa" not in source.lower() and "jaxguard" not in source.lower():
            return found
        for line, text, alone in comments(source):
            file_match = FILE_NOQA.search(text)
            if file_match and alone:
                found.file_codes.append(_codes(file_match.group("codes")))
                continue
            if FILE_IGNORE.search(text) and alone:
                found.file_codes.append(ALL)
                continue
            for pattern in ((NOQA, LINE_IGNORE) if use_noqa else (LINE_IGNORE,)):
                for match in pattern.finditer(text):
                    if pattern is NOQA and text[: match.start()].rstrip().lower().endswith("jaxguard:"):
                        continue
                    found.by_line.setdefault(line, []).append(_codes(match.group("codes")))
        return found

    def suppressed(self, code: str, lines) -> bool:
        for codes in self.file_codes:
            if codes is ALL or code in codes:
                return True
        for line in lines:
            for codes in self.by_line.get(line, ()):
                if codes is ALL or code in codes:
                    return True
        return False
