"""The patched `jax.jit`: every function jitted while guards are on gets a checked twin.

`GuardedJit` jits a function that runs the user's function under `checkify` with
jaxguard's error classes, so NaN/Inf/out-of-bounds checks run on the device inside the
same compiled program. The call returns the user's outputs only after the (tiny) error
value has been read back; a set error becomes a `GuardError` naming the user's line.
"""

from __future__ import annotations

import functools
import threading

import jax
import jax.numpy as jnp
from jax._src import checkify as ck
from jax._src import core, dtypes

from jaxguard.runtime import checks, recompile

_local = threading.local()  # .depth: how many guarded functions are being traced
active = False  # set by enable()/disable(): after disable() twins behave like plain jit


def _tracing_guarded() -> bool:
    return getattr(_local, "depth", 0) > 0


class GuardedJit:
    """Callable returned by the patched `jax.jit`; behaves like the jitted function."""

    def __init__(self, fun, jit_kwargs, original_jit, errors, recompile_limit):
        self._fun = fun
        self._errors = errors
        self._recompile_limit = recompile_limit
        self._plain = original_jit(fun, **jit_kwargs)
        self._checked = original_jit(functools.wraps(fun)(self._traced_fn()), **jit_kwargs)
        functools.update_wrapper(self, fun, updated=())

    def _traced_fn(self):
        # A fresh function (not a bound method) so functools.wraps can give it the user's
        # signature, which jit needs for static_argnames.
        return lambda *args, **kwargs: self._traced(*args, **kwargs)

    def _traced(self, *args, **kwargs):
        # Runs once per trace (= per compilation), never per call.
        if self._recompile_limit is not None:
            recompile.record(self._fun, args, kwargs, self._recompile_limit)
        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        # Static arguments arrive as plain Python values; only tracers go through checkify.
        dyn_pos = [i for i, leaf in enumerate(leaves) if isinstance(leaf, core.Tracer)]

        def body(dyn):
            full = list(leaves)
            for i, val in zip(dyn_pos, dyn):
                full[i] = val
            call_args, call_kwargs = jax.tree_util.tree_unflatten(tree, full)
            out = self._fun(*call_args, **call_kwargs)
            return out, _has_nan(out)

        _local.depth = getattr(_local, "depth", 0) + 1
        try:
            err, (out, out_has_nan) = ck.checkify(body, errors=self._errors)(
                [leaves[i] for i in dyn_pos])
        finally:
            _local.depth -= 1
        return err, out, out_has_nan

    def __call__(self, *args, **kwargs):
        if not active or _tracing_guarded():
            # Guards off, or nested inside a guarded jit whose checkify covers this call.
            return self._plain(*args, **kwargs)
        err, out, out_has_nan = self._checked(*args, **kwargs)
        raise_if_error(err, out_has_nan)
        return out

    def __get__(self, instance, owner=None):
        # `@jax.jit` on a method: bind like a function does.
        if instance is None:
            return self
        return functools.partial(self, instance)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_plain", "_fun"):
            raise AttributeError(name)
        # .lower, .trace, .eval_shape, .clear_cache, ... of the unguarded jit.
        return getattr(self._plain, name)

    def __repr__(self):
        return f"<jaxguard-guarded {self._plain!r}>"


def _has_nan(out):
    leaves = [x for x in jax.tree_util.tree_leaves(out)
              if hasattr(x, "dtype") and dtypes.issubdtype(x.dtype, jnp.inexact)]
    if not leaves:
        return jnp.bool_(False)
    return functools.reduce(jnp.logical_or, [jnp.any(jnp.isnan(x)) for x in leaves])


def raise_if_error(err, out_has_nan) -> None:
    try:
        exc = err.get_exception()
    except jax.errors.ConcretizationTypeError:
        # Called under an eager vmap/grad: let checkify's own check primitive raise.
        try:
            ck.check_error(err)
        except ck.JaxRuntimeError as runtime_error:
            exc = runtime_error.__cause__
            if checks.to_guard_error(exc) is None:
                raise
        else:
            return
    if exc is None:
        return
    if isinstance(exc, checks.GuardNaN) and not isinstance(exc, checks.GuardInf):
        # A NaN that was masked (jnp.where, nan-aware reductions) before reaching any
        # output is not a bug the user can see.
        try:
            if not bool(out_has_nan):
                return
        except jax.errors.ConcretizationTypeError:
            pass
    guard_error = checks.to_guard_error(exc)
    if guard_error is None:
        raise exc
    raise guard_error from None
