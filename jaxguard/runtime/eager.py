"""Checks for code that runs outside any guarded jit (op-by-op, "eager" code),
and the markers that let the on-device checks tell explicit `mode=` from the default.

Eager code reaches XLA two ways, and both are hooked:
- a primitive bound at top level (`x[i]`, `x.at[i].set(v)`, `lax.*`): the hook on
  `EvalTrace.process_primitive` checks index bounds (with checkify, on the concrete
  operands) and NaN/Inf in the result.
- a jax-internal jitted function (`jnp.log`, `jnp.divide`, `jnp.take`, ...): the hook on
  the jit cache-miss path checks the outputs for NaN/Inf produced from clean inputs. For
  these library functions only, the C++ fast path is switched off while guards are on, so
  every eager call is checked (user jits keep their fast path).
"""

from __future__ import annotations

import functools
import os
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import checkify as ck
from jax._src import core, pjit
from jax._src.numpy import array_methods

from jaxguard.runtime import checks
from jaxguard.runtime.errors import InfError, NaNError, format_where, user_frame_here

_JAX_DIR = os.path.join(os.path.dirname(os.path.abspath(jax.__file__)), "")  # with the "/"
_local = threading.local()  # .busy: inside a hook (its own ops are not checked again)
_saved: dict[tuple, object] = {}
_settings = {"nans": False, "infs": False, "oob": False}

_INDEX_METHODS = ("get", "set", "apply", "add", "subtract", "multiply", "mul", "divide",
                  "power", "min", "max")


# -- explicit mode markers ---------------------------------------------------------------

def _mark_explicit_mode(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs.get("mode") is None:
            return fn(*args, **kwargs)
        with jax.named_scope(checks.EXPLICIT_MODE_SCOPE):
            return fn(*args, **kwargs)
    return wrapper


# -- NaN/Inf on concrete values ----------------------------------------------------------

def _float_arrays(values):
    out = []
    for v in values:
        if isinstance(v, jax.Array) and jnp.issubdtype(v.dtype, jnp.inexact) \
                and not jnp.issubdtype(v.dtype, jax.dtypes.prng_key):
            out.append(np.asarray(v))
    return out


def _check_produced(op: str, inputs, outputs) -> None:
    outs = _float_arrays(outputs)
    if not outs:
        return
    ins = _float_arrays(inputs)
    if _settings["nans"] and any(np.isnan(o).any() for o in outs) \
            and not any(np.isnan(i).any() for i in ins):
        where = _where()
        raise NaNError(f"{where}: NaN produced by `{op}` from inputs without NaNs",
                       where=where, op=op)
    if _settings["infs"] and any(np.isinf(o).any() for o in outs) \
            and all(np.isfinite(i).all() for i in ins):
        where = _where()
        raise InfError(f"{where}: Inf produced by `{op}` from finite inputs",
                       where=where, op=op)


def _where() -> str:
    frame = user_frame_here()
    return format_where(frame[0], frame[1]) if frame else "<unknown location>"


# -- hook 1: primitives bound at top level -------------------------------------------------

_NAN_PRIMS = frozenset(checks._NAN_PRIMS)


def _process_primitive(self, primitive, args, params, /):
    original = _saved[("EvalTrace", "process_primitive")]
    if getattr(_local, "busy", False):
        return original(self, primitive, args, params)
    _local.busy = True
    try:
        if _settings["oob"] and primitive in checks._OOB_MASKS:
            _check_index_op(primitive, args, params)
        out = original(self, primitive, args, params)
        if primitive in _NAN_PRIMS and (_settings["nans"] or _settings["infs"]):
            _check_produced(primitive.name, args,
                            out if primitive.multiple_results else [out])
        return out
    finally:
        _local.busy = False


def _check_index_op(primitive, args, params) -> None:
    _checkify_eagerly(lambda *a: primitive.bind(*a, **params), args,
                      frozenset({checks.GuardOOB}))


def _checkify_eagerly(fun, args, errors) -> None:
    # Reuse the on-device rules on concrete operands (same filtering, same message), with
    # the Python stack pushed: traced tracebacks stop at `fun`.
    with checks.outer_frames(checks.python_frames(2)):
        err, _ = ck.checkify(fun, errors=errors)(*args)
    exc = err.get_exception()
    if exc is not None:
        raise checks.to_guard_error(exc) from None


# -- hook 2: jax's own jitted functions called eagerly -----------------------------------

def _is_library_function(fun) -> bool:
    code = getattr(fun, "__code__", None)
    return code is not None and code.co_filename.startswith(_JAX_DIR)


def _run_python_pjit(p, args_flat, fun, args, kwargs):
    original = _saved[("pjit", "_run_python_pjit")]
    result = original(p, args_flat, fun, args, kwargs)
    library_eager = (_is_library_function(fun) and core.trace_state_clean()
                     and not getattr(_local, "busy", False))
    _local.no_fastpath = library_eager
    if not library_eager:
        return result
    _local.busy = True
    try:
        jaxpr = p.params["jaxpr"]
        if _settings["oob"] and _has_index_op(jaxpr.jaxpr):
            _checkify_eagerly(core.jaxpr_as_fun(jaxpr), args_flat,
                              frozenset({checks.GuardOOB}))
        if _settings["nans"] or _settings["infs"]:
            _check_produced(f"jnp.{getattr(fun, '__name__', 'function')}", args_flat,
                            result[1])
    finally:
        _local.busy = False
    return result


def _has_index_op(jaxpr) -> bool:
    return any(eqn.primitive in checks._OOB_MASKS
               or any(_has_index_op(sub) for sub in core.jaxprs_in_params(eqn.params))
               for eqn in jaxpr.eqns)


def _get_fastpath_data(*args, **kwargs):
    if getattr(_local, "no_fastpath", False):
        _local.no_fastpath = False
        return None  # keep calling Python so the next eager call is checked too
    return _saved[("pjit", "_get_fastpath_data")](*args, **kwargs)


# -- install / uninstall -----------------------------------------------------------------

def _patch(owner, owner_name: str, attr: str, new) -> None:
    _saved[(owner_name, attr)] = getattr(owner, attr)
    setattr(owner, attr, new)


def install(*, nans: bool, infs: bool, oob: bool) -> None:
    _settings.update(nans=nans, infs=infs, oob=oob)
    if _saved:
        return
    _patch(core.EvalTrace, "EvalTrace", "process_primitive", _process_primitive)
    _patch(pjit, "pjit", "_run_python_pjit", _run_python_pjit)
    _patch(pjit, "pjit", "_get_fastpath_data", _get_fastpath_data)
    for name in _INDEX_METHODS:
        if hasattr(array_methods._IndexUpdateRef, name):
            _patch(array_methods._IndexUpdateRef, "_IndexUpdateRef", name,
                   _mark_explicit_mode(getattr(array_methods._IndexUpdateRef, name)))
    for name in ("take", "take_along_axis"):
        _patch(jnp, "jnp", name, _mark_explicit_mode(getattr(jnp, name)))
    # Library functions already in the C++ dispatch cache would skip hook 2.
    pjit._cpp_pjit_cache_fun_only.clear()
    pjit._cpp_pjit_cache_explicit_attributes.clear()


def uninstall() -> None:
    owners = {"EvalTrace": core.EvalTrace, "pjit": pjit,
              "_IndexUpdateRef": array_methods._IndexUpdateRef, "jnp": jnp}
    for (owner_name, attr), value in _saved.items():
        setattr(owners[owner_name], attr, value)
    _saved.clear()
    _settings.update(nans=False, infs=False, oob=False)
