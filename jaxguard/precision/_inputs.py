"""The user's function and arguments, checked and split into arrays and fixed values.

check_ops, check_grads and divergence all take ``fn, *args, static_argnums=...``: bad
input (a non-callable, a string argument, a static value traced as an array, an output
that is not an array) gets a one-line error naming the argument, not a trace from inside
jaxguard or jax.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxguard.precision._tolerance import is_inexact

_SCALARS = (bool, int, float, complex)


class ArrayFunction:
    """``fn`` as a function of some leaves of its arguments, the other leaves held fixed.

    ``tree`` flattens ``(args, kwargs)`` into ``leaves``; the leaves at ``positions`` are
    the call's arguments, the others (static arguments, Python values) are fixed. Equal
    for equal fixed parts, so a compiled program cached on it is reused across calls.
    """

    def __init__(self, fn, tree, leaves, positions):
        # Drop the arrays: a compiled-program cache keeps this object alive.
        self.leaves = [None if i in positions else x for i, x in enumerate(leaves)]
        self.fn, self.tree, self.positions = fn, tree, positions
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        fixed = tuple(x for i, x in enumerate(self.leaves) if i not in positions)
        self._key = (fn, tree, positions, fixed)

    def __call__(self, *arrays):
        filled = list(self.leaves)
        for i, x in zip(self.positions, arrays):
            filled[i] = x
        args, kwargs = jax.tree_util.tree_unflatten(self.tree, filled)
        return self.fn(*args, **kwargs)

    def __hash__(self):
        return hash(self._key)  # TypeError for unhashable fixed values: callers then skip their cache

    def __eq__(self, other):
        return isinstance(other, ArrayFunction) and self._key == other._key


@dataclasses.dataclass
class Inputs:
    """``fn``'s array leaves, where each came from, and ``fn`` as a function of them."""

    fn: ArrayFunction
    arrays: list
    labels: list  # "[i]path" of each array: argument i (counted among all arguments), pytree path
    argnums: list  # the argument each array belongs to
    scalars: dict  # argument index -> Python scalar it was given as (a static value, maybe)
    n_args: int


def _short(value, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _as_array(tool, value, label, argnum):
    if isinstance(value, jax.Array):
        return value
    hint = f"; pass static_argnums=({argnum},) if fn uses it as a fixed value"
    if not isinstance(value, (np.ndarray, np.generic, *_SCALARS)):
        raise TypeError(f"{tool}: argument {label} is a {type(value).__name__} ({_short(value)}), not an array{hint}")
    array = np.asarray(value)
    # ml_dtypes' bfloat16 and float8 formats are numbers too (numpy files them under kind "V")
    if array.dtype.kind not in "biufc" and not is_inexact(array.dtype):
        raise TypeError(f"{tool}: argument {label} has dtype {array.dtype} ({_short(value)}), not a number{hint}")
    # Outside x64, so Python scalars get the user's default (float32, int32) dtype.
    return jnp.asarray(value)


def positions(tool, name, nums, n_args) -> tuple:
    """``nums`` (an int or ints, negative counts from the end) as sorted argument positions."""
    nums = (nums,) if isinstance(nums, int) else tuple(nums)
    out = set()
    for n in nums:
        if not isinstance(n, int) or not -n_args <= n < n_args:
            raise ValueError(f"{tool}: {name} {n!r} is not one of the {n_args} positional argument(s)")
        out.add(n % n_args)
    return tuple(sorted(out))


def split(tool, fn, args, static_argnums=()) -> Inputs:
    """Check ``fn`` and ``args``; hold static arguments fixed; the rest become arrays."""
    if not callable(fn):
        raise TypeError(f"{tool}: fn must be callable, got {type(fn).__name__} {_short(fn)}")
    static = positions(tool, "static_argnums", static_argnums, len(args))
    leaves, dynamic = [], []
    arrays, labels, argnums, scalars = [], [], [], {}
    for i, arg in enumerate(args):
        if i in static:
            arg_leaves = [(None, x) for x in jax.tree_util.tree_leaves(arg)]
        else:
            arg_leaves = jax.tree_util.tree_flatten_with_path(arg)[0]
            if isinstance(arg, _SCALARS):
                scalars[i] = arg
        for path, leaf in arg_leaves:
            if path is not None:
                label = f"[{i}]{jax.tree_util.keystr(path)}"
                dynamic.append(len(leaves))
                leaf = _as_array(tool, leaf, label, i)
                arrays.append(leaf)
                labels.append(label)
                argnums.append(i)
            leaves.append(leaf)
    tree = jax.tree_util.tree_structure((tuple(args), {}))
    fn = ArrayFunction(fn, tree, leaves, tuple(dynamic))
    return Inputs(fn, arrays, labels, argnums, scalars, len(args))


def check_outputs(tool, out):
    """Raise a clear error unless ``out`` is a pytree of arrays and numbers."""
    for leaf in jax.tree_util.tree_leaves(out):
        if not isinstance(leaf, (jax.Array, np.ndarray, np.generic, *_SCALARS)):
            raise TypeError(f"{tool}: fn returned a {type(leaf).__name__} ({_short(leaf)}); it must return arrays")
    return out


def trace(tool, fn, arrays, scalars, *, check=check_outputs):
    """(closed jaxpr, output shapes) of ``fn`` on ``arrays`` (or their shapes), with errors
    that say which Python scalar argument (``scalars``: position -> value) probably had to
    be static."""

    def checked(*xs):
        return check(tool, fn(*xs))

    try:
        return jax.make_jaxpr(checked, return_shape=True)(*arrays)
    except (TypeError, IndexError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if first.startswith(f"{tool}:"):
            # Our own error from inside the trace: without the note jax appends to it.
            raise type(exc)(first) from None
        if not scalars:
            raise
        named = ", ".join(f"{i} ({v!r})" for i, v in scalars.items())
        nums = ", ".join(str(i) for i in scalars)
        raise TypeError(
            f"{tool}: fn cannot be traced with argument {named} as an array ({first}); "
            f"if fn uses it as a fixed value (a shape, a slice, a loop count), pass static_argnums=({nums},)"
        ) from None
