"""Jupyter notebooks: lint the code cells as one module, report per cell, fix in place.

- The code cells are joined in order (so an import in cell 1 is known in cell 5), with a
  marker comment between cells. IPython syntax is masked, not an error: a line magic
  (`%timeit f(x)`), a shell escape (`!pip install jax`), `x = !ls`, `x = %env`, help
  (`f?`, `?f`) become `pass` placeholders of the same indentation; a cell magic cell
  (`%%bash`, `%%time`...) is skipped as a whole.
- Findings are reported as `nb.ipynb:cell N:line:col`: N is the cell's 1-based position
  among the notebook's code cells, line is the line within the cell.
- `--fix` fixes the joined module, splits it back at the markers, restores the masked
  lines, and writes back only the `source` of the cells that changed: outputs, execution
  counts, metadata and the JSON layout (indent, key order) stay as they were. If a fix
  would disturb a marker or a masked line, nothing is written and the run says so.
- Plain json; no nbformat needed. Non-Python notebooks (kernelspec language) are skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from jaxguard.lint.diagnostic import Diagnostic
from jaxguard.lint.engine import LintSettings
from jaxguard.lint.registry import IO_ERROR

_MAGIC = re.compile(
    r"""^\s*(?:
        [%!?]                       # %magic, !shell, ?help
      | [\w.]+\?{1,2}\s*$           # obj? obj??
      | [\w.,\s\[\]()*]+=\s*[%!]    # x = !ls, x = %env
    )""",
    re.VERBOSE,
)
_CELL_MARKER = "#@@jaxguard-cell-{}@@"
_MAGIC_MARKER = "pass  #@@jaxguard-magic-{}@@"
_MARKER_LINE = re.compile(r"^#@@jaxguard-cell-(\d+)@@$")
_MAGIC_LINE = re.compile(r"^(\s*)pass  #@@jaxguard-magic-(\d+)@@$")


@dataclass
class _Cell:
    index: int  # position in nb["cells"]
    number: int  # 1-based among code cells
    text: str  # the cell's source as it is
    masked: list[str]  # the original lines that were masked, by placeholder number
    start: int = 0  # first line of the cell in the joined module (1-based)
    lines: int = 0


@dataclass
class NotebookOutcome:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: bool = False
    fixed: int = 0
    original: str | None = None
    fixed_text: str | None = None


def is_cell_marker(comment: str) -> bool:
    """The comment that starts each cell in the joined module the rules see."""
    return _MARKER_LINE.match(comment.strip()) is not None


def _source_text(cell: dict) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(str(part) for part in source)
    return str(source)


def _mask(text: str, masked: list[str]) -> str:
    out = []
    for line in text.split("\n"):
        if _MAGIC.match(line):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + _MAGIC_MARKER.format(len(masked)))
            masked.append(line)
        else:
            out.append(line)
    return "\n".join(out)


def _build(notebook: dict) -> tuple[str, list[_Cell]]:
    cells: list[_Cell] = []
    parts: list[str] = []
    line = 1
    number = 0
    for index, cell in enumerate(notebook.get("cells", [])):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        text = _source_text(cell)
        if text.lstrip().startswith("%%"):
            continue  # a cell magic: not Python
        masked: list[str] = []
        body = _mask(text, masked)
        body_lines = body.split("\n")
        if body_lines and body_lines[-1] == "":
            body_lines.pop()
        entry = _Cell(index, number, text, masked, start=line + 1, lines=len(body_lines))
        cells.append(entry)
        parts.append(_CELL_MARKER.format(len(cells) - 1) + "\n")
        parts.extend(part + "\n" for part in body_lines)
        line += 1 + len(body_lines)
    return "".join(parts), cells


def _locate(cells: list[_Cell], line: int) -> _Cell | None:
    found = None
    for cell in cells:
        if cell.start <= line:
            found = cell
        else:
            break
    return found


def _remap(diagnostic: Diagnostic, cells: list[_Cell], path: str) -> Diagnostic:
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
    return diagnostic


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
    first = _CELL_MARKER.format(0) + "\n"
    at = joined.find(first)
    if at <= 0:
        return None
    prefix, rest = joined[:at], joined[at + len(first) :]
    return _split(first + prefix + rest, cells)


def _dump(notebook: dict, original: str) -> str:
    """Serialize like the original file: same indent, key order kept, trailing newline."""
    match = re.match(r"\{\s*\n([ \t]+)\"", original)
    indent = match.group(1) if match else None
    if indent is not None and set(indent) == {" "}:
        indent = len(indent)
    text = json.dumps(notebook, indent=indent, ensure_ascii=False)
    if original.endswith("\n"):
        text += "\n"
    return text


def _set_source(cell: dict, text: str) -> None:
    if isinstance(cell.get("source"), list):
        cell["source"] = text.splitlines(keepends=True)
    else:
        cell["source"] = text


def _io(path: str, message: str) -> Diagnostic:
    code, name = IO_ERROR
    return Diagnostic(code, name, message, 1, 1, 1, 1, path=path)


def check_notebook_text(
    data: bytes | str, path: str, settings: LintSettings, fix: bool = False, unsafe: bool = False, prefilter: bool = True
) -> NotebookOutcome:
    """Lint (and with `fix`, fix) a notebook's JSON text. Never raises."""
    from jaxguard.lint.files import fix_text, lint_text

    outcome = NotebookOutcome()
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
        notebook = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        outcome.diagnostics = [_io(path, f"not a valid notebook (JSON): {str(error).splitlines()[0]}")]
        outcome.error = True
        return outcome
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        outcome.diagnostics = [_io(path, "not a valid notebook: no list of cells")]
        outcome.error = True
        return outcome
    outcome.original = outcome.fixed_text = text
    metadata = notebook.get("metadata") if isinstance(notebook.get("metadata"), dict) else {}
    language = (metadata.get("kernelspec") or {}).get("language") or (metadata.get("language_info") or {}).get("name")
    if isinstance(language, str) and language.lower() not in ("python", "python3", ""):
        return outcome
    joined, cells = _build(notebook)
    if not cells:
        return outcome
    if not fix:
        diagnostics, outcome.error = lint_text(joined, path, settings, prefilter)
        outcome.diagnostics = [_remap(d, cells, path) for d in diagnostics]
        return outcome
    new_joined, applied, remaining, outcome.error = fix_text(joined, path, settings, unsafe, prefilter)
    outcome.diagnostics = [_remap(d, cells, path) for d in remaining]
    if not applied or new_joined == joined:
        return outcome
    texts = _split(new_joined, cells)
    if texts is None:
        outcome.diagnostics.append(_io(path, "fix not written: it would cross a cell boundary or an IPython magic"))
        outcome.error = True
        return outcome
    for cell, new_text in zip(cells, texts):
        if new_text != cell.text:
            _set_source(notebook["cells"][cell.index], new_text)
    outcome.fixed = applied
    outcome.fixed_text = _dump(notebook, text)
    return outcome


def check_notebook(path: str, settings: LintSettings, fix: bool = False, unsafe: bool = False, write: bool = True, cache=None, prefilter: bool = True):
    """files.check_file for a .ipynb path."""
    from jaxguard.lint.files import ConcurrentChange, FileResult, _fixable, _has_crash, write_notebook

    result = FileResult(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except IsADirectoryError:
        result.diagnostics, result.error = [_io(path, "is a directory")], True
        return result
    except OSError as error:
        result.diagnostics, result.error = [_io(path, f"cannot read: {error.strerror or error}")], True
        return result
    key = None
    if cache is not None:
        from jaxguard.lint.cache import cache_key

        key = cache_key(path, data.decode("utf-8", "replace"), settings, mode="notebook")
        cached = cache.get(key, path)
        if cached is not None and not (fix and _fixable(cached, unsafe)):
            result.diagnostics, result.cached = cached, True
            result.error = any(d.code in ("JG001", "JG002", "JG003") for d in cached)
            return result
    for _attempt in range(5):
        outcome = check_notebook_text(data, path, settings, fix=fix, unsafe=unsafe, prefilter=prefilter)
        result.diagnostics, result.error, result.fixed = outcome.diagnostics, outcome.error, outcome.fixed
        result.original, result.fixed_source = outcome.original, outcome.fixed_text
        if not fix:
            if key is not None and not _has_crash(outcome.diagnostics):
                cache.put(key, outcome.diagnostics)
            return result
        if not (outcome.fixed and write and outcome.fixed_text != outcome.original):
            return result
        try:
            write_notebook(path, outcome.fixed_text, expected=data)
            return result
        except ConcurrentChange:
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError as error:
                result.diagnostics.append(_io(path, f"fix not written: {error}"))
                result.error, result.fixed = True, 0
                return result
        except (OSError, ValueError) as error:
            result.diagnostics.append(_io(path, f"fix not written: {error}"))
            result.error, result.fixed = True, 0
            return result
    result.diagnostics.append(_io(path, "fix not written: the file kept changing while it was being fixed"))
    result.error, result.fixed = True, 0
    return result
