"""Reading, checking and fixing one file on disk, without ever losing what the user had.

- Only regular files are read (a FIFO named `x.py` would block forever, a symlink to
  `/dev/zero` would never end), and only up to a size limit; anything else is JG002.
- A fix is written only if the fixed text parses, compiles and can be encoded in the file's
  own encoding (a fix that cannot is skipped, the others are applied); the file is replaced
  atomically, through a symlink onto its target, and only if it still holds what was read.
- If a fix cannot be written, the file's findings are reported as if no fix had been asked
  for, plus one JG002 line that says why.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass, field

from jaxguard.lint.diagnostic import Diagnostic
from jaxguard.lint.prefilter import needs_libcst, python_guard
from jaxguard.lint.registry import INTERNAL_ERROR, IO_ERROR
from jaxguard.lint.settings import LintSettings

# Larger files are reported as JG002, not read. A notebook's limit is higher: its outputs
# (images) are most of it, and only its code cells are checked.
MAX_SOURCE_BYTES = 16 * 2**20
MAX_NOTEBOOK_BYTES = 128 * 2**20
FIX_ATTEMPTS = 5  # re-reads of a file that changes while it is being fixed


@dataclass
class FileResult:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    fixed: int = 0  # fixes applied (or that would be, with --diff)
    original: str | None = None
    fixed_source: str | None = None
    error: bool = False  # unreadable / unparsable: exit code 2
    cached: bool = False


@dataclass
class Outcome:
    """Checking (and maybe fixing) one file's bytes: what to report, and what to write."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: bool = False
    fixed: int = 0
    original: str | None = None  # the text as read (for --diff)
    fixed_text: str | None = None
    payload: bytes | None = None  # the fixed file's bytes, if a fix changed it


def io_error(path: str, message: str) -> Diagnostic:
    code, name = IO_ERROR
    return Diagnostic(code, name, message, 1, 1, 1, 1, path=path)


def size_limit(path: str) -> int:
    return MAX_NOTEBOOK_BYTES if path.endswith(".ipynb") else MAX_SOURCE_BYTES


def read_bytes(path: str, limit: int | None = None) -> bytes:
    """The content of a regular file of at most `limit` bytes. ValueError with a one-line reason."""
    limit = size_limit(path) if limit is None else limit
    try:
        info = os.stat(path)  # before open: opening a FIFO blocks until a writer comes
        if stat.S_ISDIR(info.st_mode):
            raise ValueError("is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("not a regular file")
        check_size(info.st_size, limit)
        with open(path, "rb", opener=_open_nonblocking) as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ValueError("not a regular file")  # swapped in since the stat
            data = handle.read(limit + 1)
    except IsADirectoryError:
        raise ValueError("is a directory") from None
    except OSError as error:
        raise ValueError(f"cannot read: {error.strerror or error}") from None
    check_size(len(data), limit)
    return data


def _open_nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))


def check_size(size: int, limit: int) -> None:
    if size > limit:
        raise ValueError(f"file too large ({size / 2**20:.1f} MiB; jaxguard reads at most {limit // 2**20} MiB)")


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
        from jaxguard.lint.engine import lint_source

        linted = lint_source(source, path, settings)
        return linted.diagnostics, linted.parse_error or _has_engine_error(linted.diagnostics)
    except Exception as error:  # report, never a traceback
        return [_internal(path, error)], True


def fix_text(
    source: str, path: str, settings: LintSettings, unsafe: bool = False, prefilter: bool = True, accept=None
) -> tuple[str, int, list[Diagnostic], bool]:
    """(new source, fixes applied, remaining diagnostics, error). Never raises.

    `accept(text)`, if given, must also hold for a fixed text (see engine.fix_source).
    """
    try:
        skip, decided = _screen(source, path, settings, prefilter)
        if skip:
            return source, 0, decided, _has_engine_error(decided)
        from jaxguard.lint.engine import fix_source

        new_source, applied, remaining = fix_source(source, path, settings, unsafe=unsafe, accept=accept)
        return new_source, applied, remaining, _has_engine_error(remaining)
    except Exception as error:
        return source, 0, [_internal(path, error)], True


def check_source_data(
    data: bytes, path: str, settings: LintSettings, fix: bool = False, unsafe: bool = False, prefilter: bool = True
) -> Outcome:
    """Check (and with `fix`, fix) a Python file's bytes. Never raises."""
    try:
        source, encoding = decode_source(data)
    except ValueError as error:
        return Outcome([io_error(path, str(error))], error=True)
    if not fix:
        diagnostics, error = lint_text(source, path, settings, prefilter)
        return Outcome(diagnostics, error, original=source, fixed_text=source)

    def encodable(text: str) -> bool:
        try:
            text.encode(encoding)
        except UnicodeEncodeError:
            return False  # e.g. a fix that would need '€' in a latin-1 file: skipped
        return True

    new_source, applied, remaining, error = fix_text(source, path, settings, unsafe, prefilter, accept=encodable)
    outcome = Outcome(remaining, error, original=source, fixed_text=new_source)
    if applied and new_source != source:
        outcome.fixed, outcome.payload = applied, new_source.encode(encoding)
    return outcome


def check_data(
    data: bytes, path: str, settings: LintSettings, fix: bool = False, unsafe: bool = False, prefilter: bool = True
) -> Outcome:
    """Check (and with `fix`, fix) the bytes of the file `path` names: a notebook or Python source."""
    if path.endswith(".ipynb"):
        from jaxguard.lint.notebook import check_notebook_text

        return check_notebook_text(data, path, settings, fix, unsafe, prefilter)
    return check_source_data(data, path, settings, fix, unsafe, prefilter)


def _fixable(diagnostics: list[Diagnostic], unsafe: bool) -> bool:
    return any(d.fix is not None and d.fix.edits and (d.fix.safe or unsafe) for d in diagnostics)


def cache_mode(path: str) -> str:
    return "notebook" if path.endswith(".ipynb") else "lint"


def cached_result(path: str, data: bytes, settings: LintSettings, fix: bool, unsafe: bool, cache) -> tuple[FileResult | None, str]:
    """(the cached result for this content, if usable; the cache key). With `fix`, a cached
    result is usable only if it has nothing to fix."""
    from jaxguard.lint.cache import cache_key

    key = cache_key(path, data, settings, cache_mode(path))
    cached = cache.get(key, path)
    if cached is None or (fix and _fixable(cached, unsafe)):
        return None, key
    return FileResult(path, cached, error=_has_engine_error(cached), cached=True), key


def check_file(
    path: str,
    settings: LintSettings,
    fix: bool = False,
    unsafe: bool = False,
    write: bool = True,
    cache=None,
    prefilter: bool = True,
) -> FileResult:
    """Check (and with `fix`, fix) one file (.py, .pyi or .ipynb). Never raises; problems are diagnostics."""
    result = FileResult(path)
    try:
        data = read_bytes(path)
    except ValueError as error:
        result.diagnostics, result.error = [io_error(path, str(error))], True
        return result
    key = None
    if cache is not None:
        hit, key = cached_result(path, data, settings, fix, unsafe, cache)
        if hit is not None:
            return hit
    for _attempt in range(FIX_ATTEMPTS):
        outcome = check_data(data, path, settings, fix, unsafe, prefilter)
        result.diagnostics, result.error, result.fixed = outcome.diagnostics, outcome.error, outcome.fixed
        result.original, result.fixed_source = outcome.original, outcome.fixed_text
        if not fix:
            if key is not None and not _has_crash(outcome.diagnostics):
                cache.put(key, outcome.diagnostics)
            return result
        if outcome.payload is None or not write:
            return result
        try:
            write_atomically(path, outcome.payload, expected=data)
            return result
        except ConcurrentChange:
            # Another run (or the user) changed the file: fix what is there now.
            try:
                data = read_bytes(path)
            except ValueError as error:
                return _not_written(result, check_data(data, path, settings, prefilter=prefilter), str(error))
        except (OSError, ValueError) as error:
            return _not_written(result, check_data(data, path, settings, prefilter=prefilter), str(error))
    return _not_written(result, check_data(data, path, settings, prefilter=prefilter), "the file kept changing while it was being fixed")


def _not_written(result: FileResult, unfixed: Outcome, reason: str) -> FileResult:
    """The file's findings as they are on disk, and one line saying why the fix was not written."""
    result.diagnostics = unfixed.diagnostics + [io_error(result.path, f"fix not written: {reason}")]
    result.error, result.fixed = True, 0
    result.original = result.fixed_source = unfixed.original
    return result


def _has_engine_error(diagnostics: list[Diagnostic]) -> bool:
    return any(d.code in ("JG001", "JG002", "JG003") for d in diagnostics)


def _has_crash(diagnostics: list[Diagnostic]) -> bool:
    return any(d.code in ("JG002", "JG003") for d in diagnostics)


class ConcurrentChange(ValueError):
    """The file on disk is no longer the text that was fixed."""


def write_atomically(path: str, payload: bytes, expected: bytes) -> None:
    """Replace the file at `path` with `payload` via a temporary file and rename, keeping its mode.

    A symlink is followed: its target is replaced, the link stays. Runs under an exclusive
    lock on the file, and only if the file still holds `expected` (else ConcurrentChange):
    two runs fixing the same tree never interleave their writes and never overwrite each
    other's result with a fix of an older text.
    """
    target = os.path.realpath(path)
    with _locked(target):
        try:
            current = read_bytes(target, len(expected))
        except ValueError:
            current = None
        if current != expected:
            raise ConcurrentChange("the file changed while it was being fixed; run again")
        mode = stat.S_IMODE(os.stat(target).st_mode)
        fd, temporary = tempfile.mkstemp(prefix=".jaxguard-", suffix=".tmp", dir=os.path.dirname(target))
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, mode)
            os.replace(temporary, target)
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
        handle = open(path, "rb", opener=_open_nonblocking)
    except OSError:
        yield
        return
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield
    finally:
        handle.close()  # releases the lock
