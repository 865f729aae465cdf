"""Reading, checking and fixing one file on disk, without ever losing what the user had."""

from __future__ import annotations

import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass, field

from jaxguard.lint.diagnostic import Diagnostic
from jaxguard.lint.engine import LintSettings, fix_source, lint_source
from jaxguard.lint.registry import IO_ERROR


@dataclass
class FileResult:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fixed: int = 0  # fixes applied (or that would be, with --diff)
    original: str | None = None
    fixed_source: str | None = None
    error: bool = False  # unreadable / unparsable: exit code 2


def io_error(path: str, message: str) -> Diagnostic:
    code, name = IO_ERROR
    return Diagnostic(code, name, message, 1, 1, 1, 1, path=path)


def read_source(path: str) -> tuple[str, str]:
    """(text, encoding), honoring a BOM or coding cookie. Raises ValueError with a one-line reason."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except IsADirectoryError:
        raise ValueError("is a directory") from None
    except OSError as error:
        raise ValueError(f"cannot read: {error.strerror or error}") from None
    if b"\0" in data:
        raise ValueError("binary file (contains NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "invalid or missing encoding declaration" not in str(error):
            raise ValueError(f"bad encoding declaration: {error}") from None
        encoding = "utf-8"  # no cookie, and not UTF-8: the decode below says where
    try:
        return data.decode(encoding), encoding
    except (UnicodeDecodeError, LookupError) as error:
        raise ValueError(f"not valid {encoding} text: {error.reason if hasattr(error, 'reason') else error}") from None


def check_file(path: str, settings: LintSettings, fix: bool = False, unsafe: bool = False, write: bool = True) -> FileResult:
    result = FileResult(path)
    try:
        source, encoding = read_source(path)
    except ValueError as error:
        result.diagnostics = [io_error(path, str(error))]
        result.error = True
        return result
    if not fix:
        linted = lint_source(source, path, settings)
        result.diagnostics = linted.diagnostics
        result.error = linted.parse_error or _has_engine_error(linted.diagnostics)
        return result
    new_source, applied, remaining = fix_source(source, path, settings, unsafe=unsafe)
    result.diagnostics = remaining
    result.error = _has_engine_error(remaining)
    result.original, result.fixed_source, result.fixed = source, new_source, applied
    if applied and write and new_source != source:
        try:
            write_atomically(path, new_source, encoding, expected=source)
        except (OSError, ValueError) as error:
            result.diagnostics.append(io_error(path, f"fix not written: {error}"))
            result.error = True
            result.fixed = 0
    return result


def _has_engine_error(diagnostics: list[Diagnostic]) -> bool:
    return any(d.code in ("JG001", "JG002", "JG003") for d in diagnostics)


def write_atomically(path: str, text: str, encoding: str, expected: str) -> None:
    """Replace `path` with `text` via a temporary file and rename, keeping its mode.

    If another process changed the file since we read it, nothing is written.
    """
    current, _ = read_source(path)
    if current != expected:
        raise ValueError("the file changed while it was being fixed; run again")
    directory = os.path.dirname(os.path.abspath(path))
    mode = stat.S_IMODE(os.stat(path).st_mode)
    fd, temporary = tempfile.mkstemp(prefix=".jaxguard-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode(encoding))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
