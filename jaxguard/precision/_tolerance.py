"""Default tolerances per dtype, shared by assert_close, check_ops and check_grads."""

import jax
import ml_dtypes
import numpy as np

# torch.testing.assert_close's defaults (rtol, atol), keyed by dtype name.
_DEFAULTS = {
    "bfloat16": (1.6e-2, 1e-5),
    "float16": (1e-3, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def is_inexact(dtype) -> bool:
    """True for every floating and complex dtype, including bfloat16 and the float8s."""
    return bool(jax.dtypes.issubdtype(dtype, np.inexact))


def finfo(dtype):
    return ml_dtypes.finfo(np.dtype(dtype))


def default_tolerance(dtype) -> tuple[float, float]:
    """(rtol, atol) for one dtype; integers and bools compare exactly.

    Formats narrower than 16 bits (float8_*, float4, float6) have no torch default:
    they get rtol = the format's machine epsilon (one unit in the last place) and
    atol = its smallest normal number.
    """
    dtype = np.dtype(dtype)
    if dtype.name in _DEFAULTS:
        return _DEFAULTS[dtype.name]
    if not is_inexact(dtype):
        return (0.0, 0.0)
    info = finfo(dtype)
    return (float(info.eps), float(info.tiny))


def tolerance(*dtypes, rtol=None, atol=None) -> tuple[float, float]:
    """Tolerances for comparing values of these dtypes: the looser default wins.

    Like torch, passing only one of rtol/atol is an error: the pair belongs together.
    """
    if (rtol is None) != (atol is None):
        raise ValueError("pass both rtol and atol, or neither")
    if rtol is not None:
        return (float(rtol), float(atol))
    pairs = [default_tolerance(d) for d in dtypes]
    return (max(p[0] for p in pairs), max(p[1] for p in pairs))
