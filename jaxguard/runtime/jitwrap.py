"""The patched `jax.jit`: every function jitted while guards are on gets a checked twin.

`GuardedJit` jits a function that runs the user's function under `checkify` with
jaxguard's error classes, so NaN/Inf/out-of-bounds checks run on the device inside the
same compiled program. The call returns the user's outputs only after the (tiny) error
value has been read back; a set error becomes a `GuardError` naming the user's line.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict

import jax
import jax.numpy as jnp
from jax._src import checkify as ck
from jax._src import core, dtypes

from jaxguard.runtime import checks, keys, recompile

_local = threading.local()  # .depth: how many guarded functions are being traced

# Set by enable()/disable(). Twins read them at call time, so a function jitted under one
# enable() follows the options of the current one, and runs plain after disable().
active = False
errors: frozenset = frozenset()  # jaxguard checkify error classes to check
recompile_limit: int | None = None

_CACHE_SIZE = 1024
_cache: OrderedDict = OrderedDict()  # (fun, jit options) -> GuardedJit
_cache_lock = threading.Lock()


def _tracing_guarded() -> bool:
    return getattr(_local, "depth", 0) > 0


class GuardedJit:
    """Callable returned by the patched `jax.jit`; behaves like the jitted function."""

    def __init__(self, fun, jit_kwargs, original_jit):
        self._fun = fun
        self._jit_kwargs = jit_kwargs
        self._original_jit = original_jit
        self._key_positions: set[int] = set()  # flat argument positions of consumed keys
        self._plain = original_jit(fun, **jit_kwargs)
        self._checked_by_errors: dict = {}  # error classes -> checked jitted function
        functools.update_wrapper(self, fun, updated=())

    def _checked(self, errors_now):
        checked = self._checked_by_errors.get(errors_now)
        if checked is None:
            # A fresh function (not a bound method) so functools.wraps can give it the
            # user's signature, which jit needs for static_argnames.
            traced = functools.wraps(self._fun)(
                lambda *args, **kwargs: self._traced(errors_now, *args, **kwargs))
            checked = self._original_jit(traced, **self._jit_kwargs)
            self._checked_by_errors[errors_now] = checked
        return checked

    def _traced(self, errors_now, *args, **kwargs):
        # Runs once per trace (= per compilation), never per call.
        if recompile_limit is not None:
            recompile.record(self._fun, args, kwargs, recompile_limit)
        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        # Static arguments arrive as plain Python values; only tracers go through checkify.
        dyn_pos = [i for i, leaf in enumerate(leaves) if isinstance(leaf, core.Tracer)]

        def body(dyn):
            full = list(leaves)
            for i, val in zip(dyn_pos, dyn):
                full[i] = val
            call_args, call_kwargs = jax.tree_util.tree_unflatten(tree, full)
            out = self._fun(*call_args, **call_kwargs)
            # Remember which arguments are keys the function consumes: passing the same
            # key object to it twice is key reuse too.
            self._key_positions.update(i for i, val in zip(dyn_pos, dyn)
                                       if keys.is_consumed(val))
            return out, _has_nan(out)

        _local.depth = getattr(_local, "depth", 0) + 1
        try:
            # Ops whose recorded frames hold no user code (`jax.jit(jnp.log)`) are
            # attributed to the line that calls the compiled function.
            with checks.outer_frames(checks.CALL_SITE):
                err, (out, out_has_nan) = ck.checkify(body, errors=errors_now)(
                    [leaves[i] for i in dyn_pos])
        finally:
            _local.depth -= 1
        return err, out, out_has_nan

    def __call__(self, *args, **kwargs):
        __tracebackhide__ = True  # pytest: show the user's line, not this wrapper
        if not active or _tracing_guarded():
            # Guards off, or nested inside a guarded jit whose checkify covers this call.
            return self._plain(*args, **kwargs)
        err, out, out_has_nan = self._checked(errors)(*args, **kwargs)
        raise_if_error(err, out_has_nan)
        if self._key_positions:
            leaves = jax.tree_util.tree_leaves((args, kwargs))
            for i in sorted(self._key_positions):
                keys.consume(leaves[i], f"jitted {getattr(self, '__name__', 'function')}")
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
    __tracebackhide__ = True
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


def make_jit(original_jit):
    """The function enable() puts in place of `jax.jit`."""

    def jit(fun=None, /, **jit_kwargs):
        if fun is None:  # @jax.jit(static_argnums=...) decorator form
            return lambda f: jit(f, **jit_kwargs)
        if isinstance(fun, GuardedJit):
            fun = fun._fun
        # One twin per (function, options), like jax's own cache: jax.jit(f) called in a
        # loop must not retrace.
        try:
            key = (fun, tuple(sorted(jit_kwargs.items())))
            hash(key)
        except TypeError:
            return GuardedJit(fun, jit_kwargs, original_jit)
        with _cache_lock:
            guarded = _cache.get(key)
            if guarded is not None:
                _cache.move_to_end(key)
                return guarded
            guarded = _cache[key] = GuardedJit(fun, jit_kwargs, original_jit)
            if len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
        return guarded

    functools.update_wrapper(jit, original_jit)
    jit._jaxguard_original = original_jit
    return jit
