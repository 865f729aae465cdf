"""jaxguard: catch JAX's sharp bits statically, at run time, and in numerics.

`import jaxguard` stays light: it never imports jax. The runtime guards and the
precision tools import jax the first time one of their names is used.
"""

from jaxguard._version import __version__

# Public names that live in the jax-dependent subpackages, resolved on first use.
_LAZY = {
    "enable": "jaxguard.runtime",
    "disable": "jaxguard.runtime",
    "flush": "jaxguard.runtime",
    "guard": "jaxguard.runtime",
    "GuardError": "jaxguard.runtime",
    "NaNError": "jaxguard.runtime",
    "InfError": "jaxguard.runtime",
    "OutOfBoundsError": "jaxguard.runtime",
    "KeyReuseError": "jaxguard.runtime",
    "RecompileWarning": "jaxguard.runtime",
    "LibraryGuardWarning": "jaxguard.runtime",
    "GuardWarning": "jaxguard.runtime",
    "GuardCoverageWarning": "jaxguard.runtime",
    "assert_close": "jaxguard.precision",
    "check_ops": "jaxguard.precision",
    "check_grads": "jaxguard.precision",
    "divergence": "jaxguard.precision",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'jaxguard' has no attribute {name!r}")
    import importlib

    try:
        value = getattr(importlib.import_module(module_name), name)
    except ModuleNotFoundError as error:
        if error.name not in ("jax", "jaxlib", "numpy", "ml_dtypes"):
            raise
        part = "runtime guards" if module_name.endswith("runtime") else "precision tools"
        raise ModuleNotFoundError(
            f"jaxguard.{name} is part of jaxguard's {part}, which need {error.name}: "
            f"pip install 'jaxguard[runtime]' (the linter works without it)", name=error.name
        ) from None
    globals()[name] = value
    return value
