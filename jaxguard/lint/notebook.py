"""Jupyter notebooks: lint the code cells as one module, report per cell, fix in place.

- The code cells are joined in order (so an import in cell 1 is known in cell 5), with a
  marker comment between cells. IPython syntax is masked, not an error: a line magic
  (`%timeit f(x)`), a shell escape (`!pip install jax`), `x = !ls`, `x = %env`, help
  (`f?`, `?f`) become `pass` placeholders of the same indentation, where a statement
  starts (a line going on with an open bracket or string is Python); a cell magic cell
  (`%%bash`, `%%time`..., also under Colab's `#@title` comments) is skipped as a whole. A cell whose first line is indented loses
  that indentation from every line that has it, as IPython runs it; its findings keep
  their columns, and fixes in it are not written.
- Findings are reported as `nb.ipynb:cell N:line:col`: N is the cell's 1-based position
  in the notebook, markdown cells counted (as ruff numbers them), line is the line within
  the cell.
- `--fix` fixes the joined module, splits it back at the markers, restores the masked
  lines, and replaces in the file's text only the `source` values of the cells that
  changed: every other byte (outputs, metadata, escapes such as `\u00e9`, CRLF line
  breaks, indentation, key order) stays. A fix that would disturb a marker or a masked
  line is skipped (its finding stays).
- Plain json; no nbformat needed. Non-Python notebooks (kernelspec language) are skipped.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass

from jaxguard.lint.diagnostic import Diagnostic
from jaxguard.lint.facts import CELL_MARKER
from jaxguard.lint.files import Outcome, io_error
from jaxguard.lint.settings import LintSettings

_MAGIC = re.compile(
    r"""^\s*(?:
        [%!?]                       # %magic, !shell, ?help
      | [\w.]+\?{1,2}\s*$           # obj? obj??
      | [\w.,\s\[\]()*]+=\s*[%!]    # x = !ls, x = %env
    )""",
    re.VERBOSE,
)
# IPython's line magics, which its automagic runs without the `%` (`pip install jax`,
# `timeit -n 5 f(x)`, `cd data`): masked when the line is not Python as written.
_AUTOMAGICS = frozenset(
    """aimport alias autoawait autocall automagic autoreload bookmark cd clear colors conda config
    cp debug dhist dirs doctest_mode ed edit env gui hist history killbgscripts ldir less load
    load_ext loadpy logoff logon logstart logstate logstop ls lsmagic lx macro magic man
    matplotlib mkdir more mv notebook page pastebin pdb pdef pdoc pfile pinfo pinfo2 pip popd
    pprint precision prun psearch psource pushd pwd pycat pylab quickref recall rehashx
    reload_ext rep rerun reset reset_selective rm rmdir run save sc set_env store sx system tb
    time timeit unalias unload_ext uv who who_ls whos xdel xmode""".split()
)
_AUTOMAGIC = re.compile(r"^\s*([A-Za-z_]\w*)\s+(\S)")
# A name followed by `=` or `,` is assigned to, never a magic (IPython's assignment check):
# `config = dict(` opens a statement that goes on below, so the line alone does not compile.
_ASSIGNED = frozenset("=,")
_LEADING_INDENT = re.compile(r"^[ \t]+")
_MAGIC_MARKER = "pass  #@@jaxguard-magic-{}@@"
_MARKER_LINE = re.compile(r"^#@@jaxguard-cell-(\d+)@@$")
_MAGIC_LINE = re.compile(r"^(\s*)pass  #@@jaxguard-magic-(\d+)@@$")


@dataclass
class _Cell:
    index: int  # position in nb["cells"]
    number: int  # 1-based position among all the notebook's cells (ruff's numbering)
    text: str  # the cell's source as it is
    masked: list[str]  # the original lines that were masked, by placeholder number
    indent: str = ""  # the leading indentation removed from the cell (IPython's leading_indent)
    start: int = 0  # first line of the cell in the joined module (1-based)
    lines: int = 0


def is_cell_marker(comment: str) -> bool:
    """The comment that starts each cell in the joined module the rules see."""
    return _MARKER_LINE.match(comment.strip()) is not None


def starts_cell(statement) -> bool:
    """A top-level statement of the joined module that a cell marker precedes."""
    return any(line.comment is not None and is_cell_marker(line.comment.value) for line in getattr(statement, "leading_lines", ()))


def _source_text(cell: dict) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(str(part) for part in source)
    return str(source)


def _is_magic(line: str) -> bool:
    if _MAGIC.match(line):
        return True
    automagic = _AUTOMAGIC.match(line)
    if automagic is None or automagic.group(1) not in _AUTOMAGICS or automagic.group(2) in _ASSIGNED:
        return False
    try:
        compile(line.strip(), "<cell>", "exec")
    except SyntaxError as error:
        # `pip install jax`: not Python, so IPython runs the magic; `time (a,` opens a
        # statement that the next lines close
        return "never closed" not in str(error) and "unexpected EOF" not in str(error)
    except (ValueError, RecursionError):
        return False
    return False  # `time = 5`, `run(x)`: Python as written


def _inside_open_statement(lines: list[str]) -> bool:
    """The lines so far leave a bracket, a string or a backslash open: the next line goes
    on with that statement (`out.write("%5d" \\n % (k,))`), IPython reads no magic there."""
    if not lines:
        return False
    try:
        compile("\n".join(lines) + "\n", "<cell>", "exec")
    except SyntaxError as error:
        message = str(error)
        return any(part in message for part in ("never closed", "unexpected EOF", "unterminated", "EOF while"))
    except (ValueError, RecursionError, MemoryError):
        return False
    return False


def _mask(text: str, masked: list[str]) -> str:
    """Each IPython line (magic, shell escape, help) becomes a placeholder of the same
    indentation; so do the lines a trailing backslash continues it onto (`!pip install \\`)."""
    out = []
    continued_indent = None
    for line in text.split("\n"):
        if continued_indent is None and (not _is_magic(line) or _inside_open_statement(out)):
            out.append(line)
            continue
        indent = continued_indent if continued_indent is not None else line[: len(line) - len(line.lstrip())]
        out.append(indent + _MAGIC_MARKER.format(len(masked)))
        masked.append(line)
        continued_indent = indent if line.rstrip().endswith("\\") else None
    return "\n".join(out)


def _without_leading_indent(text: str) -> tuple[str, str]:
    """(the cell as IPython runs it, the indentation removed): when the first line is
    indented, that indentation comes off every line that starts with it."""
    found = _LEADING_INDENT.match(text)
    if found is None:
        return text, ""
    indent = found.group(0)
    lines = text.split("\n")
    return "\n".join(line.removeprefix(indent) for line in lines), indent


def _cell_magic(text: str) -> bool:
    """The cell's first line that is not blank or a comment starts with `%%` (Colab puts
    form annotations, `#@title install`, above `%%bash`)."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return stripped.startswith("%%")
    return False


def _build(notebook: dict) -> tuple[str, list[_Cell]]:
    cells: list[_Cell] = []
    parts: list[str] = []
    line = 1
    for index, cell in enumerate(notebook.get("cells", [])):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number = index + 1
        text = _source_text(cell)
        if _cell_magic(text):
            continue  # a cell magic: not Python
        masked: list[str] = []
        runs, indent = _without_leading_indent(text)
        body = _mask(runs, masked)
        body_lines = body.split("\n")
        if body_lines and body_lines[-1] == "":
            body_lines.pop()
        entry = _Cell(index, number, text, masked, indent, start=line + 1, lines=len(body_lines))
        cells.append(entry)
        parts.append(CELL_MARKER.format(len(cells) - 1) + "\n")
        parts.extend(part + "\n" for part in body_lines)
        line += 1 + len(body_lines)
    return "".join(parts), cells


def notebook_source(data: bytes) -> str | None:
    """The module the rules see for a notebook's bytes (its code cells, magics masked)."""
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return None
    return _build(notebook)[0]


def _locate(cells: list[_Cell], line: int) -> _Cell | None:
    found = None
    for cell in cells:
        if cell.start <= line:
            found = cell
        else:
            break
    return found


def _remap(diagnostic: Diagnostic, cells: list[_Cell], path: str, sources: dict | None = None) -> Diagnostic:
    cell = _locate(cells, diagnostic.line)
    if cell is None:  # before any cell (an engine message on line 1)
        diagnostic.path = path if not cells else f"{path}:cell {cells[0].number}"
        diagnostic.line = diagnostic.end_line = 1
        return diagnostic
    diagnostic.path = f"{path}:cell {cell.number}"
    last = cell.start + max(cell.lines, 1) - 1
    diagnostic.line = max(1, diagnostic.line - cell.start + 1)
    if diagnostic.end_line > last:
        diagnostic.end_line, diagnostic.end_column = last, diagnostic.end_column
    diagnostic.end_line = max(diagnostic.line, diagnostic.end_line - cell.start + 1)
    if cell.indent:  # back to the columns of the cell as written
        written = cell.text.split("\n")
        shifted = [len(cell.indent) if text.startswith(cell.indent) else 0 for text in written]
        diagnostic.column += shifted[diagnostic.line - 1] if diagnostic.line <= len(shifted) else 0
        diagnostic.end_column += shifted[diagnostic.end_line - 1] if diagnostic.end_line <= len(shifted) else 0
    source = (sources or {}).get(cell.index)
    if source is not None:
        start = source.position(diagnostic.line, diagnostic.column)
        end = source.position(diagnostic.end_line, diagnostic.end_column)
        if start is not None and end is not None:
            diagnostic.file_region = (*start, *end)
    return diagnostic


class _SourceInFile:
    """Where each line of one cell's source lies in the notebook's JSON text: a list of
    strings (one per line, as Jupyter writes it) or one string."""

    def __init__(self, text: str, span: tuple[int, int], newlines: list[int]) -> None:
        self.newlines = newlines
        # (offset of the character before the line's text: the string's opening quote, or
        # the `n` of the escaped line break before it; the line's text)
        self.lines: list[tuple[int, str]] = []
        start, end = span
        if text.startswith("[", start):
            at = _skip(text, start + 1)
            while at < end and text.startswith('"', at):
                value, after = json.decoder.scanstring(text, at + 1)
                self._add(at, value)
                at = _skip(text, after)
                if text.startswith(",", at):
                    at = _skip(text, at + 1)
        elif text.startswith('"', start):
            self._add(start, json.decoder.scanstring(text, start + 1)[0])

    def _add(self, quote: int, value: str) -> None:
        pieces = value.split("\n")
        if pieces and pieces[-1] == "" and len(pieces) > 1:
            pieces.pop()
        for index, piece in enumerate(pieces):
            # a second line inside one JSON string sits on the string's line, past an escaped \n
            prefix = "\n".join(pieces[:index]) + ("\n" if index else "")
            self.lines.append((quote + len(json.dumps(prefix, ensure_ascii=False)) - 2, piece))

    def position(self, line: int, column: int) -> tuple[int, int] | None:
        """(line, column), both 1-based, in the file of a cell's (line, column)."""
        if not 1 <= line <= len(self.lines):
            return None
        quote, value = self.lines[line - 1]
        offset = quote + len(json.dumps(value[: max(0, column - 1)], ensure_ascii=False)) - 1
        file_line = bisect.bisect_right(self.newlines, quote) + 1
        line_start = self.newlines[file_line - 2] + 1 if file_line > 1 else 0
        return file_line, offset - line_start + 1


def _sources_in_file(text: str, spans: dict[int, tuple[int, int]]) -> dict[int, _SourceInFile]:
    newlines = [match.start() for match in re.finditer("\n", text)]
    try:
        return {index: _SourceInFile(text, span, newlines) for index, span in spans.items()}
    except (ValueError, IndexError):
        return {}


def _split(joined: str, cells: list[_Cell]) -> list[str] | None:
    """The fixed joined module back into cell texts (masked lines restored), or None."""
    pieces: list[list[str]] = []
    for line in joined.split("\n"):
        match = _MARKER_LINE.match(line)
        if match:
            if int(match.group(1)) != len(pieces):
                return None
            pieces.append([])
        elif pieces:
            pieces[-1].append(line)
        elif line.strip():
            pieces.append([line])  # a fix inserted text before the first cell: it belongs to it
            return None if not cells else _split_with_prefix(joined, cells)
    if len(pieces) != len(cells):
        return None
    texts = []
    for cell, lines in zip(cells, pieces):
        if lines and lines[-1] == "":
            lines.pop()
        restored = []
        used = set()
        for line in lines:
            match = _MAGIC_LINE.match(line)
            if match:
                number = int(match.group(2))
                if number >= len(cell.masked) or number in used:
                    return None
                used.add(number)
                restored.append(cell.masked[number])
            else:
                restored.append(line)
        if len(used) != len(cell.masked):
            return None
        text = "\n".join(restored)
        if cell.text.endswith("\n") or (restored and cell.text == ""):
            text += "\n"
        texts.append(text)
    return texts


def _split_with_prefix(joined: str, cells: list[_Cell]) -> list[str] | None:
    """A fix inserted lines above the first marker (e.g. an import): move them into cell 1."""
    first = CELL_MARKER.format(0) + "\n"
    at = joined.find(first)
    if at <= 0:
        return None
    prefix, rest = joined[:at], joined[at + len(first) :]
    return _split(first + prefix + rest, cells)


def _source_spans(text: str) -> dict[int, tuple[int, int]] | None:
    """Where each cell's "source" value is in the notebook's JSON text: cell index -> (start,
    end), found with json's own scanner (None if the layout is not an object with a list of
    cells). A fix replaces only those characters: every other byte of the file stays."""
    scan = json.JSONDecoder().scan_once
    spans: dict[int, tuple[int, int]] = {}

    def members(at: int, on_member) -> int:
        """Walk the object at `at` (a '{'), calling on_member(key, value start); its end."""
        at = _skip(text, at + 1)
        if text.startswith("}", at):
            return at + 1
        while True:
            key, at = json.decoder.scanstring(text, _skip(text, at) + 1)
            at = _skip(text, _skip(text, at) + 1)  # past the ':'
            at = _skip(text, on_member(key, at))
            if text.startswith("}", at):
                return at + 1
            at += 1  # the ','

    def value(at: int) -> int:
        return scan(text, at)[1]

    def cell_member(index: int):
        def on_member(key: str, at: int) -> int:
            end = value(at)
            if key == "source":
                spans[index] = (at, end)
            return end

        return on_member

    def top_member(key: str, at: int) -> int:
        if key != "cells" or not text.startswith("[", at):
            return value(at)
        at, index = _skip(text, at + 1), 0
        while not text.startswith("]", at):
            at = members(at, cell_member(index)) if text.startswith("{", at) else value(at)
            at, index = _skip(text, at), index + 1
            if text.startswith(",", at):
                at = _skip(text, at + 1)
        return at + 1

    try:
        start = _skip(text, 0)
        if not text.startswith("{", start):
            return None
        members(start, top_member)
    except (ValueError, IndexError, StopIteration, RecursionError):
        return None
    return spans


_WHITESPACE = re.compile(r"[ \t\n\r]*")


def _skip(text: str, at: int) -> int:
    return _WHITESPACE.match(text, at).end()


def _source_json(new_text: str, old_json: str, ascii_only: bool) -> str:
    """A cell's new "source" value, in the layout of the old one (a string, or a list of
    lines with the old list's line breaks and indentation)."""
    if not old_json.startswith("["):
        return json.dumps(new_text, ensure_ascii=ascii_only)
    lines = re.findall(r"[^\n]*\n|[^\n]+", new_text)  # split at \n only, as Jupyter does
    opening = re.match(r"\[(\s*)", old_json).group(1)
    closing = re.search(r"(\s*)\]$", old_json).group(1)
    items = ("," + opening).join(json.dumps(line, ensure_ascii=ascii_only) for line in lines)
    return "[" + opening + items + closing + "]" if items else "[]"


def _splice(text: str, changes: dict[int, str], spans: dict[int, tuple[int, int]]) -> str:
    """`text` with the "source" of the cells in `changes` replaced, nothing else touched."""
    ascii_only = text.isascii()
    pieces, last = [], 0
    for index in sorted(changes):
        start, end = spans[index]
        pieces += [text[last:start], _source_json(changes[index], text[start:end], ascii_only)]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _language(notebook: dict) -> object:
    metadata = notebook.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    for key, field_name in (("kernelspec", "language"), ("language_info", "name")):
        table = metadata.get(key)
        if isinstance(table, dict) and table.get(field_name):
            return table.get(field_name)
    return None


def check_notebook_text(
    data: bytes, path: str, settings: LintSettings, fix: bool = False, unsafe: bool = False, prefilter: bool = True
) -> Outcome:
    """Lint (and with `fix`, fix) a notebook's bytes. Never raises."""
    from jaxguard.lint.files import fix_text, lint_text

    outcome = Outcome()
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    try:
        text = data[len(bom) :].decode("utf-8")
        notebook = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        outcome.diagnostics = [io_error(path, f"not a valid notebook (JSON): {str(error).splitlines()[0]}")]
        outcome.error = True
        return outcome
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        outcome.diagnostics = [io_error(path, "not a valid notebook: no list of cells")]
        outcome.error = True
        return outcome
    outcome.original = outcome.fixed_text = text
    language = _language(notebook)
    if isinstance(language, str) and language.lower() not in ("python", "python3", ""):
        return outcome
    joined, cells = _build(notebook)
    if not cells:
        return outcome
    if not fix:
        diagnostics, outcome.error = lint_text(joined, path, settings, prefilter)
        # where in the file each finding lies: read from the JSON only when there is one
        sources = _sources_in_file(text, _source_spans(text) or {}) if diagnostics else {}
        outcome.diagnostics = [_remap(d, cells, path, sources) for d in diagnostics]
        return outcome
    spans = _source_spans(text) or {}

    def changes(candidate: str) -> dict[int, str] | None:
        """The new source of each cell the fixed module changes; None if it cannot be written
        (a fix across a cell boundary or a masked magic, a cell whose source is not found)."""
        texts = _split(candidate, cells)
        if texts is None:
            return None
        changed = {}
        for cell, new in zip(cells, texts):
            if new == _without_leading_indent(cell.text)[0]:
                continue
            if cell.indent or cell.index not in spans:
                return None  # a fix in a cell that lost its leading indentation is not written
            changed[cell.index] = new
        return changed

    def writable(candidate: str) -> bool:
        return changes(candidate) is not None  # else the fix is skipped; its finding stays

    new_joined, applied, remaining, outcome.error = fix_text(joined, path, settings, unsafe, prefilter, accept=writable)
    changed = changes(new_joined) if applied and new_joined != joined else None
    if changed:
        outcome.fixed = applied
        outcome.fixed_text = _splice(text, changed, spans)
        outcome.payload = bom + outcome.fixed_text.encode("utf-8")
        # the findings that remain are in the fixed cells (a fix may have added lines)
        text = outcome.fixed_text
        cells = _build(json.loads(text))[1]
        spans = _source_spans(text) or {}
    sources = _sources_in_file(text, spans) if remaining else {}
    outcome.diagnostics = [_remap(d, cells, path, sources) for d in remaining]
    return outcome
