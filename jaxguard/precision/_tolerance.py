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


def _for_dtype(value, dtype):
    """A tolerance given per dtype (`{jnp.bfloat16: 1e-2, "float32": 1e-5}`): this dtype's
    entry, or None when the dict does not name it; a number applies to every dtype."""
    if not isinstance(value, dict):
        return value
    for key, entry in value.items():
        try:
            if np.dtype(key) == dtype:
                return entry
        except TypeError:
            continue
    return None


def tolerance(*dtypes, rtol=None, atol=None, rounding_floor=False) -> tuple[float, float]:
    """Tolerances for comparing values of these dtypes: the looser one wins.

    `rtol`/`atol` override the defaults: numbers for every dtype, or dicts by dtype (the
    dtypes a dict does not name keep their defaults). Like torch, passing only one of
    rtol/atol is an error: the pair belongs together. With `rounding_floor` (one op's
    result, rounded to its dtype) an override is never tighter than half a unit in the
    last place of the dtype: a correct bfloat16 cast passes a float32-minded rtol=1e-4.
    """
    if (rtol is None) != (atol is None):
        raise ValueError("pass both rtol and atol, or neither")
    pairs = []
    for dtype in dtypes:
        dtype = np.dtype(dtype)
        given = (_for_dtype(rtol, dtype), _for_dtype(atol, dtype))
        if given[0] is None or given[1] is None:
            pairs.append(default_tolerance(dtype))
            continue
        pair = (float(given[0]), float(given[1]))
        if rounding_floor and is_inexact(dtype):
            pair = (max(pair[0], float(finfo(dtype).eps) / 2), pair[1])
        pairs.append(pair)
    if not pairs:
        return (float(rtol), float(atol)) if rtol is not None and not isinstance(rtol, dict) else (0.0, 0.0)
    return (max(p[0] for p in pairs), max(p[1] for p in pairs))
