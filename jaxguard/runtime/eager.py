"""Checks for code that runs outside any guarded jit (op-by-op, "eager" code),
and the markers that let the on-device checks tell explicit `mode=` from the default.

NaN/Inf are judged as the jitted path judges them: a NaN an op makes counts only if it
reaches a result. Eagerly, "a result" is a value the program reads (printed, converted
with `float()`/`np.asarray`, compared on the host, ...). So an eager op that makes a NaN
from NaN-free inputs marks its output; ops that take a marked array and still hold a NaN
pass the mark on; an op whose output holds no NaN (`jnp.where`, `sum(where=...)`,
`isnan`) ends it, and reading a marked array raises the error, naming the op and the
line that made the NaN. The arrays are followed by identity, only while they live.

Eager code reaches XLA two ways, both seen here without giving up JAX's C++ fast path:
- jitted functions (jax's own `jnp.log`, `x * 2`, ..., and `apply_primitive`'s jit for
  each primitive bound at top level): the C++ dispatch calls `_post_hook` after every
  fast-path call, and the first (Python-path) call goes through `_run_python_pjit`.
- index primitives bound at top level (`x[i]`, `x.at[i].set(v)`, `lax.dynamic_slice`):
  the hook on `EvalTrace.process_primitive` checks their bounds on the host before they
  run. jax's own jitted functions that index (`jnp.take`'s helper) run without the fast
  path so their bounds are checked on every call.
"""

from __future__ import annotations

__tracebackhide__ = True  # pytest: errors raised here show the user's frames only

import collections
import contextlib
import functools
import os
import sys
import threading
import weakref

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import api, config, core, pjit
from jax._src import array as array_impl
from jax._src import checkify as ck
from jax._src import source_info_util as siu
from jax._src.core import config_ext
from jax._src.numpy import array_methods

from jaxguard.runtime import checks
from jaxguard.runtime.errors import OutOfBoundsError, format_where, raise_unless_in_library, user_frame_here

_JAX_DIR = os.path.join(os.path.dirname(os.path.abspath(jax.__file__)), "")  # with the "/"
_local = threading.local()  # .busy: inside a hook (its own ops are not checked again)
_saved: dict[tuple, object] = {}
_settings = {"nans": False, "infs": False, "oob": False}

_INDEX_METHODS = ("get", "set", "apply", "add", "subtract", "multiply", "mul", "divide",
                  "power", "min", "max")
_NAN_PRIM_NAMES = frozenset(p.name for p in checks._NAN_PRIMS)
_ORIGINAL_VALUE = array_impl.ArrayImpl._value  # the property that reads an array to the host


# -- explicit mode markers ---------------------------------------------------------------

def _mark_explicit_mode(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs.get("mode") is None:
            return fn(*args, **kwargs)
        with jax.named_scope(checks.EXPLICIT_MODE_SCOPE):
            return fn(*args, **kwargs)
    return wrapper


# -- NaN/Inf marks -------------------------------------------------------------------------

_marked: dict[int, tuple] = {}  # id(array) -> (weakref to it, the GuardError to raise)
_marked_lock = threading.Lock()


def _host(x) -> np.ndarray:
    # numpy reads CPU arrays through the buffer protocol, without a copy; other arrays go
    # through `_value`, whose read check is off while a hook runs (`_local.busy`).
    return np.asarray(x)


@functools.cache
def _is_inexact(dtype) -> bool:
    return jnp.issubdtype(dtype, jnp.inexact)


def _is_float_array(value) -> bool:
    return isinstance(value, array_impl.ArrayImpl) and _is_inexact(value.dtype)


def _float_arrays(values):
    return [v for v in values if _is_float_array(v)]


def _host_floats(values) -> list[np.ndarray]:
    """The inexact values among a call's inputs, on the host: jax and NumPy arrays and
    Python floats (the `jnp.nan` of `jnp.where(mask, x, jnp.nan)` is an input NaN)."""
    return [_host(v) if isinstance(v, array_impl.ArrayImpl) else np.asarray(v)
            for v in values
            if isinstance(v, (float, complex)) or (isinstance(
                v, (array_impl.ArrayImpl, np.ndarray, np.generic)) and _is_inexact(v.dtype))]


def _bad_mask(value: np.ndarray) -> np.ndarray:
    return ~np.isfinite(value) if _settings["infs"] else np.isnan(value)


def _bad(value: np.ndarray) -> bool:
    return bool(_bad_mask(value).any())


def _mark_of(values):
    for v in values:
        entry = _marked.get(id(v))
        if entry is not None and entry[0]() is v:
            return entry[1]
    return None


def _mark(array, error) -> None:
    ident = id(array)

    def forget(_, ident=ident):
        with _marked_lock:
            entry = _marked.get(ident)
            if entry is not None and entry[0]() is None:
                del _marked[ident]

    with _marked_lock:
        _marked[ident] = (weakref.ref(array, forget), error)


def _judge(op: str | None, inputs, outputs, site, rerun) -> None:
    """Mark the outputs that hold a NaN (Inf) made here or passed on from a marked input.
    `op` None: the function only passes marks on (it is not one of jax's own)."""
    error = _mark_of(inputs) if _marked else None
    if op is None and error is None:
        return
    outs = [o for o in _float_arrays(outputs) if _bad(_host(o))]
    if not outs:
        return  # nothing bad came out (a marked NaN that came in was masked here)
    if error is None:
        error = _produced_error(op, _host_floats(inputs), outs, site)
        if error is None:
            return  # the NaN (Inf) came in with the inputs
    elif not _marked_values_reach(inputs, outputs, rerun):
        return  # masked here: what is bad in the outputs came from elsewhere (a constant)
    for o in outs:
        _mark(o, error)


def _marked_values_reach(inputs, outputs, rerun) -> bool:
    """Does a NaN (Inf) of a marked input reach the outputs? The call runs again with the
    marked inputs' bad values zeroed: outputs that are bad only in the real run hold it.
    (`where(a > 1, (a - 1) / (a - 1), nan)` at a=1: the NaN out is the constant's.)"""
    clean = [jnp.where(jnp.asarray(_bad_mask(_host(v))), 0, v) if _mark_of([v]) else v
             for v in inputs]
    try:
        again = rerun(clean)
    except Exception:  # noqa: BLE001 - cannot tell: the mark passes on, as it always did
        return True
    return any((_bad_mask(_host(o)) & ~_bad_mask(_host(a))).any()
               for o, a in zip(outputs, again) if _is_float_array(o))


def _call_site():
    """(innermost user frame, its line now): cheap to take on every call; the frames
    are read only if the call made a NaN."""
    frame = sys._getframe(2)
    while frame is not None and not siu.is_user_filename(frame.f_code.co_filename):
        frame = frame.f_back
    return frame, frame.f_lineno if frame is not None else 0


def _site_frames(site):
    frame, line = site
    if frame is None:
        return []
    frames = [(frame.f_code.co_filename, frame.f_code.co_name, line)]
    frame = frame.f_back
    while frame is not None:
        frames.append((frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno))
        frame = frame.f_back
    return frames


def _produced_error(op: str, host_ins, outs, site):
    host_outs = [_host(o) for o in outs]
    frames = checks._user_frames(_site_frames(site))
    if _settings["nans"] and any(np.isnan(o).any() for o in host_outs) \
            and not any(np.isnan(i).any() for i in host_ins):
        return checks.GuardNaN(frames, op).to_guard_error()
    if _settings["infs"] and any(np.isinf(o).any() for o in host_outs) \
            and all(np.isfinite(i).all() for i in host_ins):
        return checks.GuardInf(frames, op).to_guard_error()
    return None


# The jax.Array methods through which a program reads values (`float(x)`, `print(x)`,
# `x.tolist()`, iteration, pickling, `np.asarray` of a non-CPU array); jax's own reads
# (embedding a closed-over array as a constant of a jitted function) are not results.
_READERS = frozenset({"__bool__", "__float__", "__int__", "__complex__", "__hex__",
                      "__oct__", "__index__", "tobytes", "tolist", "__format__", "<genexpr>",
                      "__repr__", "__str__", "__array__", "__reduce__"})


def _checked_value(self):
    """`ArrayImpl._value` (every read of an array to the host): raise if a program read
    holds an eager NaN (Inf) that an op made."""
    if sys._getframe(1).f_code.co_name not in _READERS:
        return _ORIGINAL_VALUE.fget(self)
    if getattr(_local, "pending", None) and not getattr(_local, "busy", False):
        _local.busy = True
        try:
            _judge_pending()
        finally:
            _local.busy = False
    if _marked and not getattr(_local, "busy", False):
        with _marked_lock:
            entry = _marked.pop(id(self), None)
        if entry is not None and entry[0]() is self:
            raise _read_error(entry[1])
    return _ORIGINAL_VALUE.fget(self)


def _read_error(error):
    frame = user_frame_here()
    read = f"\n    the value was read at {format_where(frame[0], frame[1])}" if frame else ""
    return type(error)(str(error) + read, where=error.where, op=error.op)


# -- hook 1: index primitives bound at top level -----------------------------------------

def _process_primitive(self, primitive, args, params, /):
    original = _saved[("EvalTrace", "process_primitive")]
    if primitive in checks._OOB_MASKS and _settings["oob"] \
            and not getattr(_local, "busy", False):
        _local.busy = True
        try:
            checks.check_index_op_on_host(primitive, args, params, checks.python_frames(2))
        except OutOfBoundsError as error:
            raise_unless_in_library(error)
        finally:
            _local.busy = False
    out = original(self, primitive, args, params)
    if primitive is pjit.jit_p:
        # A jit bound at top level, not through its C++ entry: the forward part of an
        # eager grad (jax.grad(f) of a function calling jnp.sqrt, ...).
        library = checks.is_library_jaxpr(params["jaxpr"])
        _after_call(f"jnp.{params['name']}" if library else None, lambda: args,
                    lambda: out, lambda flat: primitive.bind(*flat, **params))
    return out


# -- hook 2: jitted functions called eagerly -----------------------------------------------

def _op_name(fun) -> str | None:
    """The name errors give an eager call of `fun`, or None if jaxguard does not judge
    what it makes (user code, jaxguard's own twins: only marks pass through those)."""
    if getattr(fun, "_apply_primitive", False):
        return fun.__name__ if fun.__name__ in _NAN_PRIM_NAMES else None
    if _is_library_function(fun):
        return f"jnp.{getattr(fun, '__name__', 'function')}"
    return None


_MAX_PENDING = 32


def _after_call(op: str | None, inputs, outputs, rerun) -> None:
    """Judge one eager call once its outputs are computed: reading them right after
    dispatch would wait for the computation on every op. Calls are judged in order, at a
    later call once done, or when any array is read. `inputs` and `outputs` give the
    flat values when called (most calls need neither: jax's non-NaN-making primitives
    while nothing is marked); `rerun(flat inputs)` calls the function again."""
    pending = getattr(_local, "pending", None)
    if (op is None and not _marked and not pending) or getattr(_local, "busy", False) \
            or not (_settings["nans"] or _settings["infs"]):
        return
    _local.busy = True
    try:
        if pending is None:
            pending = _local.pending = collections.deque()
        if op is not None or _marked:
            pending.append((op, inputs(), outputs(), _call_site(), rerun))
        _judge_pending(wait=len(pending) > _MAX_PENDING)
    finally:
        _local.busy = False


def _judge_pending(wait: bool = True) -> None:
    """Judge the pending calls in order: all (`wait`), or those whose outputs are done."""
    pending = getattr(_local, "pending", None)
    while pending:
        op, inputs, outputs, site, rerun = pending[0]
        if not wait and not all(o.is_ready() for o in outputs if hasattr(o, "is_ready")):
            return
        pending.popleft()
        # A value jaxguard cannot read (deleted by donation, on another host) stays unjudged.
        with contextlib.suppress(Exception):
            _judge(op, inputs, outputs, site, rerun)


def _post_hook(fun, args, kwargs, output):
    """Called by jax's C++ dispatch after each fast-path call of a jitted function."""
    if config.debug_nans.value or config.debug_infs.value:
        api._nan_check_posthook(fun, args, kwargs, output)  # the user's jax_debug_nans
    _after_call(_op_name(getattr(fun, "_fun", None)),
                lambda: jax.tree_util.tree_leaves((args, kwargs)),
                lambda: jax.tree_util.tree_leaves(output),
                functools.partial(_call_with_leaves, fun, (args, kwargs)))


def _call_with_leaves(fun, args_kwargs, leaves):
    args, kwargs = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(args_kwargs),
                                                leaves)
    return jax.tree_util.tree_leaves(fun(*args, **kwargs))


def _is_library_function(fun) -> bool:
    code = getattr(fun, "__code__", None)
    return code is not None and code.co_filename.startswith(_JAX_DIR)


def _run_python_pjit(p, args_flat, fun, args, kwargs):
    original = _saved[("pjit", "_run_python_pjit")]
    result = original(p, args_flat, fun, args, kwargs)
    if not core.trace_state_clean() or getattr(_local, "busy", False):
        return result  # traced (under a jit, vmap, grad): checked by what encloses it
    jaxpr = p.params["jaxpr"]
    # jax's own jitted functions that index lose the fast path, so that each call's
    # bounds are checked here.
    _local.no_fastpath = indexes = (_settings["oob"] and _is_library_function(fun)
                                    and _has_index_op(jaxpr.jaxpr)
                                    and id(jaxpr) not in _uncheckable)
    if indexes:
        _local.busy = True
        try:
            _check_bounds(jaxpr, args_flat)
        finally:
            _local.busy = False
    _after_call(_op_name(fun), lambda: args_flat, lambda: result[1],
                lambda flat: pjit.jit_p.bind(*flat, **p.params))
    return result


_uncheckable: set[int] = set()  # ids of library jaxprs checkify cannot instrument (pmap's)


def _check_bounds(jaxpr, args_flat) -> None:
    # Reuse the on-device rules on concrete operands (same filtering, same message), with
    # the Python stack pushed: traced tracebacks stop at the library function.
    with checks.outer_frames(checks.python_frames(3)):
        try:
            err, _ = ck.checkify(core.jaxpr_as_fun(jaxpr),
                                 errors=frozenset({checks.GuardOOB}))(*args_flat)
        except Exception:  # noqa: BLE001 - what checkify cannot instrument stays unchecked
            _uncheckable.add(id(jaxpr))  # and keeps its fast path
            _local.no_fastpath = False
            return
    exc = err.get_exception()
    if exc is not None:
        raise_unless_in_library(checks.to_guard_error(exc))


@functools.lru_cache(maxsize=256)
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

# jax keeps one post-call hook, set by its jax_debug_nans/infs flags: a global one and a
# thread-local one that every `with jax.debug_nans(False):` (used inside jax's own
# reductions) leaves set to None, hiding the global one. While guards are on, these flags
# switch jaxguard's hook in, which calls jax's NaN check itself when they are on.
_DEBUG_FLAGS = (config.debug_nans, config.debug_infs)


def _set_global_hook(_=None) -> None:
    api._post_hook_state.set_global(_post_hook)


def _set_thread_local_hook(_=None) -> None:
    api._post_hook_state.set_local(config_ext.unset)


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
    _patch(array_impl.ArrayImpl, "ArrayImpl", "_value", property(_checked_value))
    for flag in _DEBUG_FLAGS:
        _patch(flag, flag.name, "_update_global_hook", _set_global_hook)
        _patch(flag, flag.name, "_update_thread_local_hook", _set_thread_local_hook)
    _set_global_hook()
    _set_thread_local_hook()
    for name in _INDEX_METHODS:
        if hasattr(array_methods._IndexUpdateRef, name):
            _patch(array_methods._IndexUpdateRef, "_IndexUpdateRef", name,
                   _mark_explicit_mode(getattr(array_methods._IndexUpdateRef, name)))
    for name in ("take", "take_along_axis"):
        _patch(jnp, "jnp", name, _mark_explicit_mode(getattr(jnp, name)))
    # Functions already in the C++ dispatch cache would skip the Python path once.
    pjit._cpp_pjit_cache_fun_only.clear()
    pjit._cpp_pjit_cache_explicit_attributes.clear()


def uninstall() -> None:
    owners = {"EvalTrace": core.EvalTrace, "pjit": pjit, "ArrayImpl": array_impl.ArrayImpl,
              "_IndexUpdateRef": array_methods._IndexUpdateRef, "jnp": jnp,
              **{flag.name: flag for flag in _DEBUG_FLAGS}}
    for (owner_name, attr), value in _saved.items():
        setattr(owners[owner_name], attr, value)
    if _saved:
        config.debug_nans._update_global_hook(config.debug_nans.get_global())  # jax's hook back
        _set_thread_local_hook()
    _saved.clear()
    with _marked_lock:
        _marked.clear()
    _local.pending = None
    _settings.update(nans=False, infs=False, oob=False)
