"""Reading, checking and fixing one file on disk, without ever losing what the user had."""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass, field

from jaxguard.lint.diagnostic import Diagnostic
from jaxguard.lint.engine import LintSettings, fix_source, lint_source
from jaxguard.lint.prefilter import needs_libcst, python_guard
from jaxguard.lint.registry import INTERNAL_ERROR, IO_ERROR


@dataclass
class FileResult:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fixed: int = 0  # fixes applied (or that would be, with --diff)
    original: str | None = None
    fixed_source: str | None = None
    error: bool = False  # unreadable / unparsable: exit code 2
    cached: bool = False


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
    return decode_source(data)


def decode_source(data: bytes) -> tuple[str, str]:
    """(text, encoding) of raw bytes, honoring a BOM or coding cookie. ValueError with a one-line reason."""
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


def _internal(path: str, error: BaseException) -> Diagnostic:
    code, name = INTERNAL_ERROR
    if isinstance(error, RecursionError):
        return Diagnostic(code, name, "module too deeply nested to analyze", 1, 1, 1, 1, path=path)
    return Diagnostic(code, name, f"internal error: {type(error).__name__}: {error}".splitlines()[0], 1, 1, 1, 1, path=path)


def _screen(source: str, path: str, settings: LintSettings, prefilter: bool) -> tuple[bool, list[Diagnostic] | None]:
    """(skip libcst, diagnostics if decided already). See jaxguard.lint.prefilter."""
    parsed, too_complex = python_guard(source, path)
    if too_complex is not None:
        return True, [too_complex]
    if parsed and prefilter and not needs_libcst(source, settings):
        return True, []
    return False, None


def lint_text(source: str, path: str, settings: LintSettings, prefilter: bool = True) -> tuple[list[Diagnostic], bool]:
    """(diagnostics, error) for one module's text. Never raises."""
    try:
        skip, decided = _screen(source, path, settings, prefilter)
        if skip:
            return decided, _has_engine_error(decided)
        linted = lint_source(source, path, settings)
        return linted.diagnostics, linted.parse_error or _has_engine_error(linted.diagnostics)
    except Exception as error:  # RecursionError included: report, never a traceback
        return [_internal(path, error)], True


def fix_text(
    source: str, path: str, settings: LintSettings, unsafe: bool = False, prefilter: bool = True
) -> tuple[str, int, list[Diagnostic], bool]:
    """(new source, fixes applied, remaining diagnostics, error). Never raises."""
    try:
        skip, decided = _screen(source, path, settings, prefilter)
        if skip:
            return source, 0, decided, _has_engine_error(decided)
        new_source, applied, remaining = fix_source(source, path, settings, unsafe=unsafe)
        return new_source, applied, remaining, _has_engine_error(remaining)
    except Exception as error:
        return source, 0, [_internal(path, error)], True


def _fixable(diagnostics: list[Diagnostic], unsafe: bool) -> bool:
    return any(d.fix is not None and d.fix.edits and (d.fix.safe or unsafe) for d in diagnostics)


def check_file(
    path: str,
    settings: LintSettings,
    fix: bool = False,
    unsafe: bool = False,
    write: bool = True,
    cache=None,
    prefilter: bool = True,
) -> FileResult:
    """Check (and with `fix`, fix) one file. Never raises; problems are diagnostics."""
    if path.endswith(".ipynb"):
        from jaxguard.lint.notebook import check_notebook

        return check_notebook(path, settings, fix=fix, unsafe=unsafe, write=write, cache=cache, prefilter=prefilter)
    result = FileResult(path)
    try:
        source, encoding = read_source(path)
    except ValueError as error:
        result.diagnostics = [io_error(path, str(error))]
        result.error = True
        return result
    key = None
    if cache is not None:
        from jaxguard.lint.cache import cache_key

        key = cache_key(path, source, settings)
        cached = cache.get(key, path)
        if cached is not None and not (fix and _fixable(cached, unsafe)):
            result.diagnostics = cached
            result.error = _has_engine_error(cached)
            result.cached = True
            if fix:
                result.original = result.fixed_source = source
            return result
    if not fix:
        result.diagnostics, result.error = lint_text(source, path, settings, prefilter)
        if key is not None and not _has_crash(result.diagnostics):
            cache.put(key, result.diagnostics)
        return result
    for _attempt in range(5):
        new_source, applied, remaining, error = fix_text(source, path, settings, unsafe, prefilter)
        result.diagnostics, result.error = remaining, error
        result.original, result.fixed_source, result.fixed = source, new_source, applied
        if not (applied and write and new_source != source):
            break
        try:
            write_atomically(path, new_source, encoding, expected=source)
            break
        except ConcurrentChange:
            # Another run (or the user) changed the file: fix what is there now.
            try:
                source, encoding = read_source(path)
            except ValueError as error:
                result.diagnostics.append(io_error(path, f"fix not written: {error}"))
                result.error, result.fixed = True, 0
                break
        except (OSError, ValueError) as error:
            result.diagnostics.append(io_error(path, f"fix not written: {error}"))
            result.error = True
            result.fixed = 0
            break
    else:
        result.diagnostics.append(io_error(path, "fix not written: the file kept changing while it was being fixed"))
        result.error, result.fixed = True, 0
    return result


def _has_engine_error(diagnostics: list[Diagnostic]) -> bool:
    return any(d.code in ("JG001", "JG002", "JG003") for d in diagnostics)


def _has_crash(diagnostics: list[Diagnostic]) -> bool:
    return any(d.code in ("JG002", "JG003") for d in diagnostics)


class ConcurrentChange(ValueError):
    """The file on disk is no longer the text that was fixed."""


def write_atomically(path: str, text: str, encoding: str, expected: str) -> None:
    """Replace `path` with `text` via a temporary file and rename, keeping its mode.

    Runs under an exclusive lock on the file, and only if the file still holds `expected`
    (else ConcurrentChange): two runs fixing the same tree never interleave their writes
    and never overwrite each other's result with a fix of an older text.
    """
    def unchanged() -> bool:
        current, _ = read_source(path)
        return current == expected

    _replace(path, text.encode(encoding), unchanged)


def write_notebook(path: str, text: str, expected: bytes) -> None:
    """write_atomically for a notebook: `expected` is the file's bytes as they were read."""

    def unchanged() -> bool:
        with open(path, "rb") as handle:
            return handle.read() == expected

    _replace(path, text.encode("utf-8"), unchanged)


def _replace(path: str, payload: bytes, unchanged) -> None:
    with _locked(path):
        if not unchanged():
            raise ConcurrentChange("the file changed while it was being fixed; run again")
        directory = os.path.dirname(os.path.abspath(path))
        mode = stat.S_IMODE(os.stat(path).st_mode)
        fd, temporary = tempfile.mkstemp(prefix=".jaxguard-", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise


@contextlib.contextmanager
def _locked(path: str):
    """An exclusive advisory lock on the file being replaced (no-op where flock is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    try:
        handle = open(path, "rb")
    except OSError:
        yield
        return
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield
    finally:
        handle.close()  # releases the lock
