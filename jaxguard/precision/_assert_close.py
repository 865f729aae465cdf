"""assert_close: torch.testing.assert_close's contract for JAX, numpy, scalars and pytrees."""

import sys

import jax
import ml_dtypes
import numpy as np

from jaxguard.precision._inputs import _short
from jaxguard.precision._shadow import is_key
from jaxguard.precision._tolerance import is_inexact, tolerance


def _is_torch_tensor(x) -> bool:
    # Only look for torch if the user already imported it: we never import it ourselves.
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _torch_to_numpy(t) -> np.ndarray:
    t = t.detach().cpu()
    try:
        return t.numpy()
    except TypeError:
        # numpy has no bfloat16/float8: go through float32 (exact) and back to ml_dtypes.
        name = str(t.dtype).removeprefix("torch.")
        return t.float().numpy().astype(getattr(ml_dtypes, name))


def _to_numpy(x) -> np.ndarray:
    if _is_torch_tensor(x):
        return _torch_to_numpy(x)
    return np.asarray(x)


def _lists_as_tuples(tree):
    """Like torch, a list and a tuple (or namedtuple) of equal leaves are equal sequences."""
    if isinstance(tree, (list, tuple)):
        return tuple(_lists_as_tuples(x) for x in tree)
    if isinstance(tree, dict):
        return {k: _lists_as_tuples(v) for k, v in tree.items()}
    return tree


def _leaves_with_paths(tree):
    # torch tensors are not registered pytrees, so they come out as leaves.
    flat, treedef = jax.tree_util.tree_flatten_with_path(_lists_as_tuples(tree))
    return [(jax.tree_util.keystr(path), leaf) for path, leaf in flat], treedef


def _fmt_index(flat_index: int, shape) -> str:
    if not shape:
        return "()"
    return str(tuple(int(i) for i in np.unravel_index(flat_index, shape)))


def _exact_integers(x):
    """Integers (and bools) as int64 when their differences cannot overflow, else as
    Python ints (object arrays), so that differences are exact."""
    if x.dtype == np.bool_ or (x.size and max(abs(int(x.min())), abs(int(x.max()))) >= 2**62):
        return x.astype(np.int64) if x.dtype == np.bool_ else x.astype(object)
    return x.astype(np.int64)


def _fmt_value(x) -> str:
    value = x.item() if hasattr(x, "item") else x
    if isinstance(value, float):
        return repr(value) if len(repr(value)) <= 12 else f"{value:.8g}"
    return repr(value) if isinstance(value, (bool, int)) else str(value)


def _fmt_number(x) -> str:
    # An exact integer difference prints in full (2**62 + 1 - 2**62 is 1, not 0).
    return str(x) if isinstance(x, (int, np.integer)) else f"{x:.6g}"


def _is_number_like(x) -> bool:
    return _is_torch_tensor(x) or isinstance(x, (jax.Array, np.ndarray, np.generic, bool, int, float, complex))


def _compare_leaf(actual, expected, rtol, atol, equal_nan, check_dtype):
    """Return None if close, else the lines of a failure message."""
    if is_key(actual) or is_key(expected):
        # typed PRNG keys: the same key has the same key data, bit for bit
        if not (is_key(actual) and is_key(expected)):
            return [f"A PRNG key is compared with a {type(expected if is_key(actual) else actual).__name__}."]
        if jax.random.key_impl(actual) != jax.random.key_impl(expected):
            return [f"The PRNG key implementations do not match: {jax.random.key_impl(actual)} != {jax.random.key_impl(expected)}."]
        actual, expected = jax.random.key_data(actual), jax.random.key_data(expected)
        rtol = atol = 0
    elif not (_is_number_like(actual) and _is_number_like(expected)):
        # strings, None and other objects: equal or not, as Python says
        if type(actual) is not type(expected) and not (_is_number_like(actual) or _is_number_like(expected)):
            return [f"The types do not match: {type(actual).__name__} != {type(expected).__name__}."]
        if actual == expected:
            return None
        return [f"The values are not equal: {_short(actual, 80)} != {_short(expected, 80)}."]
    a, e = _to_numpy(actual), _to_numpy(expected)
    if a.shape != e.shape:
        return [f"The values for attribute 'shape' do not match: {a.shape} != {e.shape}."]
    if check_dtype and a.dtype != e.dtype:
        return [f"The values for attribute 'dtype' do not match: {a.dtype} != {e.dtype}."]
    rtol, atol = tolerance(a.dtype, e.dtype, rtol=rtol, atol=atol)
    if not (is_inexact(a.dtype) or is_inexact(e.dtype)):
        # Integers and bools: exact by default, within rtol/atol when given (as torch),
        # with exact differences (float64 would round int64 above 2**53).
        a64, e64 = _exact_integers(a), _exact_integers(e)
        ok = np.abs(a64 - e64) <= atol + rtol * np.abs(e64)
    else:
        # The comparison itself is done in float64 (complex128 for complex inputs).
        wide = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(e) else np.float64
        a64, e64 = a.astype(wide), e.astype(wide)
        with np.errstate(invalid="ignore", over="ignore"):
            # Infinities must match exactly: inf <= atol + rtol * inf would pass anything.
            finite = np.isfinite(a64) & np.isfinite(e64)
            ok = (a64 == e64) | (finite & (np.abs(a64 - e64) <= atol + rtol * np.abs(e64)))
        if equal_nan:
            ok |= np.isnan(a64) & np.isnan(e64)
    ok = np.asarray(ok)
    if ok.all():
        return None
    n_bad, n = int((~ok).sum()), ok.size
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        abs_diff = np.abs(a64 - e64)  # exact Python ints for integers beyond 2**62
        rel_diff = abs_diff.astype(np.float64) / np.abs(e64).astype(np.float64)
    # Report the greatest differences among the mismatched elements; NaN mismatches rank first.
    abs_rank = np.where(ok, -1.0, np.nan_to_num(abs_diff.astype(np.float64), nan=np.inf))
    rel_rank = np.where(ok, -1.0, np.nan_to_num(rel_diff, nan=np.inf))
    i_abs, i_rel = int(np.argmax(abs_rank)), int(np.argmax(rel_rank))
    flat_abs, flat_rel = abs_diff.reshape(-1), rel_diff.reshape(-1)
    kind = "Tensor-likes" if a.ndim else "Scalars"
    # Like torch: with no tolerance at all the values must be equal, and nothing is "allowed".
    exact = rtol == 0 and atol == 0
    if not a.ndim:
        return [
            f"Scalars are not {'equal' if exact else 'close'}!",
            "",
            f"Expected {_fmt_value(e)} but got {_fmt_value(a)}.",
            f"Absolute difference: {_fmt_number(flat_abs[0])}" + ("" if exact else f" (up to {atol:g} allowed)"),
            f"Relative difference: {flat_rel[0]:.6g}" + ("" if exact else f" (up to {rtol:g} allowed)"),
        ]
    return [
        f"{kind} are not {'equal' if exact else 'close'}!",
        "",
        f"Mismatched elements: {n_bad} / {n} ({100.0 * n_bad / n:.1f}%)",
        f"Greatest absolute difference: {_fmt_number(flat_abs[i_abs])} at index {_fmt_index(i_abs, a.shape)}"
        + ("" if exact else f" (up to {atol:g} allowed)"),
        f"Greatest relative difference: {flat_rel[i_rel]:.6g} at index {_fmt_index(i_rel, a.shape)}"
        + ("" if exact else f" (up to {rtol:g} allowed)"),
        f"(actual dtype {a.dtype}, expected dtype {e.dtype}, shape {a.shape})",
    ]


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan=False, check_dtype=True, msg=None):
    """Raise AssertionError unless ``|actual - expected| <= atol + rtol * |expected|`` everywhere.

    Accepts JAX and numpy arrays, Python scalars, torch tensors (when the caller has
    imported torch) and nested pytrees of those. Default tolerances per dtype follow
    torch.testing.assert_close; mixed dtypes (with check_dtype=False) take the looser.
    """
    actual_leaves, actual_def = _leaves_with_paths(actual)
    expected_leaves, expected_def = _leaves_with_paths(expected)
    if actual_def != expected_def:
        raise AssertionError(_with_msg(msg, ["The pytree structures do not match: " + _structure_difference(
            _lists_as_tuples(actual), _lists_as_tuples(expected), actual_def, expected_def)]))
    for (path, a), (_, e) in zip(actual_leaves, expected_leaves):
        lines = _compare_leaf(a, e, rtol, atol, equal_nan, check_dtype)
        if lines is not None:
            if path:
                lines.append(f"The failure occurred for item {path}")
            raise AssertionError(_with_msg(msg, lines))


def _structure_difference(actual, expected, actual_def, expected_def, path: str = "", depth: int = 0) -> str:
    """Where two pytrees first differ, by path (the missing or extra key, the sequence of
    another length), not a dump of both tree definitions."""
    if isinstance(actual, dict) and isinstance(expected, dict):
        missing = [k for k in expected if k not in actual]
        extra = [k for k in actual if k not in expected]
        if missing or extra:
            parts = []
            if missing:
                parts.append("missing " + ", ".join(f"{path}[{k!r}]" for k in missing[:5]))
            if extra:
                parts.append("unexpected " + ", ".join(f"{path}[{k!r}]" for k in extra[:5]))
            return "; ".join(parts) + " in actual."
        for key in expected:
            found = _structure_difference(actual[key], expected[key], None, None, f"{path}[{key!r}]", depth + 1)
            if found:
                return found
        return "" if depth else _treedef_fallback(actual_def, expected_def)
    if isinstance(actual, tuple) and isinstance(expected, tuple) and type(actual) is type(expected):
        if len(actual) != len(expected):
            return f"{path or 'the sequence'} has {len(actual)} items in actual, {len(expected)} expected."
        for i, (a, e) in enumerate(zip(actual, expected)):
            found = _structure_difference(a, e, None, None, f"{path}[{i}]", depth + 1)
            if found:
                return found
        return "" if depth else _treedef_fallback(actual_def, expected_def)
    a_def, e_def = jax.tree_util.tree_structure(actual), jax.tree_util.tree_structure(expected)
    if a_def != e_def:
        return (f"{path or 'the tree'} is {_kind(actual)} in actual, {_kind(expected)} expected.")
    return "" if depth else _treedef_fallback(actual_def, expected_def)


def _kind(value) -> str:
    if isinstance(value, dict):
        return f"a dict with keys {_short(list(value), 80)}"
    if isinstance(value, tuple):
        return f"a sequence of {len(value)}"
    return f"a {type(value).__name__}"


def _treedef_fallback(actual_def, expected_def) -> str:
    return f"\n  actual:   {_short(actual_def, 300)}\n  expected: {_short(expected_def, 300)}"


def _with_msg(msg, lines) -> str:
    text = "\n".join(lines)
    if callable(msg):  # torch: msg(generated message) -> the message
        return str(msg(text))
    return f"{msg}\n\n{text}" if msg else text
