"""Error classes and the helper that finds the user's own frame.

Kept free of jax imports so the pytest plugin and the CLI can name them cheaply.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sys
import sysconfig
import warnings

_JAXGUARD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STDLIB_DIR = sysconfig.get_paths()["stdlib"]
# Console-script launchers (bin/jaxguard, bin/pytest) are no user's line either.
_SCRIPTS_DIR = os.path.join(sysconfig.get_paths()["scripts"], "")


class GuardError(Exception):
    """Base class of every error jaxguard's runtime guards raise.

    `where` is "file.py:LINE" of the user's code (or None when unknown) and
    `op` the operation that failed; both also open the message.
    """

    def __init__(self, message: str, *, where: str | None = None, op: str | None = None):
        super().__init__(message)
        self.where = where
        self.op = op


class NaNError(GuardError, FloatingPointError):
    """A NaN was produced by an operation of the user's program."""


class InfError(GuardError, FloatingPointError):
    """An infinity was produced from finite inputs."""


class OutOfBoundsError(GuardError, IndexError):
    """An index was out of bounds: JAX would have clamped it or dropped the update."""


class KeyReuseError(GuardError):
    """A PRNG key was consumed twice."""


class GuardWarning(UserWarning):
    """Base class of jaxguard's runtime warnings: findings that do not stop the program
    (recompilations, alarms inside installed packages) and notes on what could not be
    checked. Under `pytest --jaxguard` they are shown, not turned into errors by a project's
    `filterwarnings = error` (`-W error::jaxguard.GuardWarning` does that)."""


class GuardCoverageWarning(GuardWarning):
    """Part of the program runs with fewer checks than asked (a transformation the checks
    cannot go through, a function jitted before `enable()`)."""


class LibraryGuardWarning(GuardWarning):
    """A key reuse or out-of-bounds access found inside an installed package, which the
    `libraries` option of `enable()` turns into this warning rather than an error (the
    default: the package's authors, not you, can fix it). `libraries="raise"` makes it an
    error again."""


class RecompileWarning(GuardWarning):
    """One function was traced (and compiled) more often than `recompiles` allows."""


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    # Located without importing jax: this module must stay importable without it.
    dirs = [_JAXGUARD_DIR]
    for name in ("jax", "jaxlib"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            dirs.extend(os.path.abspath(d) for d in spec.submodule_search_locations)
    return tuple(os.path.join(d, "") for d in dirs)  # "jax/" must not match "jaxtyping/"


def _is_library_file(filename: str) -> bool:
    """jax's, jaxlib's, jaxguard's and the standard library's files (contextlib wraps
    guard()), and launchers, are never "the user's line"."""
    if filename.startswith((*_library_dirs(), "<frozen", _SCRIPTS_DIR)):
        return True
    return filename.startswith(_STDLIB_DIR) and "-packages" not in filename


def _is_installed(filename: str) -> bool:
    """Installed packages' files (pytest's, a library's): user code, but not the user's
    own, so they are not shown as calling frames."""
    return ("site-packages" in filename or "dist-packages" in filename
            or _is_library_file(filename))


def user_stack(skip: int = 1, limit: int | None = None) -> tuple:
    """((filename, lineno, function), ...) of the calling frames that are user code,
    innermost first (all of them, or the innermost `limit`)."""
    frame, out = sys._getframe(skip), []
    while frame is not None and (limit is None or len(out) < limit):
        if not _is_library_file(frame.f_code.co_filename):
            out.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return tuple(out)


def user_frame_here(skip: int = 1):
    """(filename, lineno, function) of the innermost calling frame that is user code."""
    stack = user_stack(skip + 1, limit=1)
    return stack[0] if stack else None


def format_where(filename: str, lineno: int) -> str:
    return f"{os.path.relpath(filename) if _is_below_cwd(filename) else filename}:{lineno}"


def _is_below_cwd(filename: str) -> bool:
    try:
        return os.path.abspath(filename).startswith(os.getcwd() + os.sep)
    except OSError:
        return False


def warn_at_user(message: str, category: type[Warning]) -> None:
    """Issue a warning attributed to the user's innermost frame."""
    frame = user_frame_here(2)
    if frame is None:
        warnings.warn(message, category, stacklevel=3)
    else:
        warnings.warn_explicit(message, category, frame[0], frame[1])


# enable(libraries=...): "warn", "raise", or {package: "warn" | "raise"} (others warn)
libraries_policy: object = "warn"


def installed_package(filename: str | None) -> str | None:
    """The top-level package an installed file belongs to (`numpyro` for
    .../site-packages/numpyro/infer/util.py), None for the user's own files."""
    if not filename:
        return None
    for marker in ("site-packages", "dist-packages"):
        if marker in filename:
            rest = filename.split(marker, 1)[1].lstrip("/\\")
            top = rest.replace("\\", "/").split("/", 1)[0]
            return top[:-3] if top.endswith(".py") else top
    return None


_warned_in_libraries: set[str] = set()


def forget_library_warnings() -> None:
    """Warn again about library alarms already warned about (each test is a program)."""
    _warned_in_libraries.clear()


def library_site(error: GuardError) -> str | None:
    """The installed package an out-of-bounds error's site lies in, if its policy is to warn."""
    if not isinstance(error, OutOfBoundsError):
        return None
    filename = error.where.rsplit(":", 1)[0] if error.where else None
    package = installed_package(os.path.abspath(filename)) if filename else None
    return package if package is not None and warns_for({package}) else None


def raise_unless_in_library(error: GuardError, note: str = "") -> None:
    """Raise `error` (with `note` appended: where a call read late was made); an
    out-of-bounds access inside an installed package whose policy is to warn (equinox's
    checkpointed loop reads a clamped, discarded index) is the package's to fix: a
    LibraryGuardWarning at the user's own call that led there instead, once per access."""
    __tracebackhide__ = True  # pytest: the error shows the user's frames, not this one
    package = library_site(error)
    told = f"{error} {note}" if note else str(error)
    if package is None:
        raise type(error)(told, where=error.where, op=error.op) if note else error
    if str(error) in _warned_in_libraries:
        return  # one access seen by two checks, or by every call of a loop: said once
    _warned_in_libraries.add(str(error))
    warn_at_own_code(f"{told} (Inside {package}, not your code: "
                     f"jaxguard.enable(libraries='raise') makes this an error.)", LibraryGuardWarning)


def warns_for(packages) -> bool:
    """Do all of these installed packages get warnings rather than errors?"""
    packages = set(packages)
    if not packages or None in packages:
        return False
    policy = libraries_policy
    if isinstance(policy, str):
        return policy == "warn"
    return all(policy.get(package, "warn") == "warn" for package in packages)


_registries: dict[str, dict] = {}  # per file, as a module's __warningregistry__ ("once")


@contextlib.contextmanager
def warnings_at_caller():
    """Around the Python body of a jitted function, which jax (and jaxguard's wrapper)
    call: a warning it issues with a `stacklevel` that lands in those frames (a library's
    `warnings.warn(..., stacklevel=2)`, meant for its caller) is shown at the user's line
    that called the jitted function. Others are shown where they were issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            pending = list(caught)
    for w in pending:
        filename, lineno = w.filename, w.lineno
        if _is_library_file(filename):
            frame = user_frame_here(2)
            if frame is not None:
                filename, lineno = frame[0], frame[1]
        warnings.warn_explicit(w.message, w.category, filename, lineno,
                               registry=_registries.setdefault(filename, {}), source=w.source)


def warn_at_own_code(message: str, category: type[Warning]) -> None:
    """Issue a warning at the innermost frame of the user's own code (not an installed
    package's): the call that led into the library."""
    frame = sys._getframe(1)
    while frame is not None and _is_installed(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
    else:
        warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno)
