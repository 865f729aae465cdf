"""jaxguard's runtime guards: `enable()`, `disable()`, `with guard(...)`. See docs/runtime.md.

The error classes are plain Python; `enable`, `disable`, `guard` and `is_enabled` import
jax on first use. Keeping this package light matters because pytest imports
`jaxguard.runtime.pytest_plugin` (and so this file) in every test run.
"""

from jaxguard.runtime.errors import (
    GuardCoverageWarning,
    GuardError,
    GuardWarning,
    InfError,
    KeyReuseError,
    LibraryGuardWarning,
    NaNError,
    OutOfBoundsError,
    RecompileWarning,
)

__all__ = [
    "GuardCoverageWarning",
    "GuardError",
    "GuardWarning",
    "InfError",
    "KeyReuseError",
    "LibraryGuardWarning",
    "NaNError",
    "OutOfBoundsError",
    "RecompileWarning",
    "disable",
    "enable",
    "flush",
    "guard",
    "is_enabled",
]

_FROM_API = ("enable", "disable", "flush", "guard", "is_enabled")


def __getattr__(name):
    if name in _FROM_API:
        from jaxguard.runtime import _api

        value = getattr(_api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'jaxguard.runtime' has no attribute {name!r}")
