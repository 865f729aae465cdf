"""jaxguard's runtime guards: `enable()`, `disable()`, `with guard(...)`.

Importing this package imports jax. See docs/runtime.md.
"""

from jaxguard.runtime.errors import (GuardError, InfError, KeyReuseError, NaNError,
                                     OutOfBoundsError, RecompileWarning)
from jaxguard.runtime._api import disable, enable, guard, is_enabled

__all__ = ["enable", "disable", "guard", "is_enabled", "GuardError", "NaNError", "InfError",
           "OutOfBoundsError", "KeyReuseError", "RecompileWarning"]
