"""On-device NaN/Inf and out-of-bounds checks, as checkify error rules.

jaxguard uses its own error classes (`GuardNaN`, `GuardInf`, `GuardOOB`) so its rules
never change what a user's own `checkify.checkify(...)` reports: each installed rule
first runs the rule it replaces, and only adds a jaxguard check when a jaxguard error
class is among the enabled errors.

Why not checkify's stock checks:
- stock nan checks flag every op whose output holds a NaN, so a deliberate NaN constant
  (`jnp.where(m, x, jnp.nan)`) makes every later op "generate" a NaN. Ours report an op
  only when its output has a NaN and none of its inputs has one.
- stock index checks flag JAX's own intentional out-of-bounds gathers (`jnp.bincount`,
  `jnp.where(size=)`, ...) and explicit `mode="fill"` / `"clip"`. Ours check only ops the
  user reached through an indexing API, with no explicit mode (see EXPLICIT_MODE_SCOPE).
"""

from __future__ import annotations

__tracebackhide__ = True  # pytest: errors raised here show the user's frames only

import contextlib
import functools
import os
import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax._src import checkify as ck
from jax._src import dtypes, pjit
from jax._src import source_info_util as siu

from jaxguard.runtime.errors import (
    InfError,
    NaNError,
    OutOfBoundsError,
    _is_installed,
    format_where,
)

# jaxguard's own frames are never the "user frame" JAX records for an equation.
_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
_JAX_DIR = os.path.join(os.path.dirname(os.path.abspath(jax.__file__)), "")  # with the "/"
siu.register_exclusion(_RUNTIME_DIR)

# Name scope that marks indexing calls where the user chose `mode=` explicitly.
EXPLICIT_MODE_SCOPE = "jaxguard_explicit_mode"

# The jax API a user frame must have called for an index op to be checked. Anything else
# (jnp.bincount, jnp.where(size=), jnp.nonzero, sorting, ...) indexes out of bounds on
# purpose and is left alone.
_INDEXING_APIS = {
    "op", "_getitem", "__getitem__", "rewriting_take",  # x[i] (via the dunder forwarder "op")
    "take", "take_along_axis",
    "get", "set", "add", "subtract", "mul", "multiply", "divide", "power", "min", "max", "apply",
    "dynamic_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
    "dynamic_update_slice", "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
    "gather", "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max",
}


# -- where an op comes from --------------------------------------------------------------
#
# JAX records an equation's traceback relative to the function being traced: inside a
# jitted library function (jnp.take -> _take) it holds no user frame at all. Callers that
# know the outer context (the rule for library jits below, the eager hooks) push their
# frames here, and rules complete the equation's frames with them.

_ctx = threading.local()  # .outer: stack of frame lists, innermost-first each


@contextlib.contextmanager
def outer_frames(frames):
    stack = _ctx.__dict__.setdefault("outer", [])
    stack.append(frames)
    try:
        yield
    finally:
        stack.pop()


def traceback_frames(tb):
    """[(filename, function, line)] innermost-first from an xla Traceback."""
    if tb is None:
        return []
    codes, lastis = tb.raw_frames()
    return [(c.co_filename, c.co_name, siu.raw_frame_to_frame(c, i).start_line)
            for c, i in zip(codes, lastis)]


def python_frames(skip: int = 1):
    """[(filename, function, line)] innermost-first of the running Python stack."""
    frame, out = sys._getframe(skip), []
    while frame is not None:
        out.append((frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno))
        frame = frame.f_back
    return out


# Pushed instead of real frames where the outer context is "whoever calls the compiled
# function": the trace is reused by later calls from other lines, so the call site is
# filled in when an error is raised (see `with_call_site`).
CALL_SITE = [("<call site>", "<call site>", 0)]


def _is_user(frame) -> bool:
    return siu.is_user_filename(frame[0])


def current_frames():
    """Frames of the op being checked, completed with the pushed outer context."""
    frames = traceback_frames(siu.current().traceback)
    stack = getattr(_ctx, "outer", None)
    if stack and not any(_is_user(f) for f in frames):
        frames = frames + stack[-1]
    return frames


def _called_api(frames):
    """Name of the jax function the first user frame called (None if no user frame)."""
    api_name = None
    for frame in frames:
        if _is_user(frame):
            return api_name
        # Skip jaxguard's own wrappers and jax's dispatch machinery (a jitted API such as
        # jnp.take_along_axis is entered through these).
        if not frame[0].startswith(_RUNTIME_DIR) and frame[1] not in _DISPATCH_FRAMES:
            api_name = frame[1]
    return None


_DISPATCH_FRAMES = {"current", "process_primitive", "bind_with_trace", "bind",
                    "_run_python_pjit", "_pjit_call_impl_python", "cache_miss",
                    "reraise_with_filtered_traceback"}


class _Frames(tuple):
    """User frames (file, line, function), innermost first: the `traceback_info` of
    jaxguard's checkify errors. checkify's own raising path asks it for a Python
    traceback; there is none to give."""

    def as_python_traceback(self):
        return None


def _user_frames(frames) -> _Frames:
    """The first user frame and up to two calling frames of the user's own code (not
    installed packages: pytest's or a launcher's frames are noise), innermost first."""
    user = [(f[0], f[2], f[1]) for f in frames if _is_user(f)]
    if user and user[0][0] == CALL_SITE[0][0]:
        return _Frames()
    callers = [f for f in user[1:] if not _is_installed(f[0])]
    return _Frames(user[:1] + callers[:2])


def with_call_site(exc, skip: int = 2):
    """Fill in the caller's frames for an error found in a trace with no user frame."""
    if isinstance(exc, _GuardException) and not exc.traceback_info:
        exc.traceback_info = _user_frames(python_frames(skip))
    return exc


class _GuardException(ck.JaxException):
    """Base of jaxguard's checkify errors; `to_guard_error` makes the user-facing error.

    `traceback_info` holds the user frames, computed when the rule ran.
    """

    def message(self, what: str, advice: str = "") -> tuple[str | None, str]:
        """(where, "file.py:LINE: <what> in f(). <advice>" + the calling user frames)."""
        frames = self.traceback_info
        if not frames:
            return None, f"<unknown location>: {what}. {advice}".rstrip()
        filename, line, function = frames[0]
        where = format_where(filename, line)
        context = "".join(f"\n    called from {format_where(f, n)} ({fn})"
                          for f, n, fn in frames[1:])
        return where, f"{where}: {what} in {function}(). {advice}".rstrip() + context


class GuardNaN(_GuardException):
    def __init__(self, traceback_info, prim):
        super().__init__(traceback_info)
        self.prim = prim

    def tree_flatten(self):
        return ([], (self.traceback_info, self.prim))

    @classmethod
    def tree_unflatten(cls, metadata, payload):
        return cls(*metadata)

    def get_effect_type(self):
        return ck.ErrorEffect(type(self), ())

    def __str__(self):
        return f"NaN produced by `{self.prim}`"

    def to_guard_error(self):
        where, msg = self.message(f"NaN produced by `{self.prim}` from inputs without NaNs")
        return NaNError(msg, where=where, op=self.prim)


class GuardInf(GuardNaN):
    def __str__(self):
        return f"Inf produced by `{self.prim}`"

    def to_guard_error(self):
        where, msg = self.message(f"Inf produced by `{self.prim}` from finite inputs")
        return InfError(msg, where=where, op=self.prim)


class GuardOOB(_GuardException):
    def __init__(self, traceback_info, prim, operand_shape, payload):
        super().__init__(traceback_info)
        self.prim = prim
        self.operand_shape = operand_shape
        self.payload = payload

    def tree_flatten(self):
        return ([self.payload], (self.traceback_info, self.prim, self.operand_shape))

    @classmethod
    def tree_unflatten(cls, metadata, payload):
        return cls(*metadata, payload=payload[0])

    def get_effect_type(self):
        return ck.ErrorEffect(GuardOOB, (ck.api.ShapeDtypeStruct((3,), np.int32),))

    def __str__(self):
        index, axis, size = (int(v) for v in np.asarray(self.payload))
        return (f"index {index} is out of bounds for axis {axis} with size {size} in "
                f"`{self.prim}` on an array of shape {tuple(self.operand_shape)}")

    def to_guard_error(self):
        # The advice names the API that takes a mode: `x[idx]` and `lax.dynamic_slice` take none.
        if self.prim.startswith("scatter"):
            consequence = "JAX drops such updates silently"
            advice = "If this is intended, say so: x.at[idx].set(v, mode='drop') (or mode='clip')."
        elif self.prim == "gather":
            consequence = "JAX clamps or fills such reads silently"
            advice = ("If this is intended, say so: x.at[idx].get(mode='clip') or mode='fill', "
                      "or jnp.take(x, idx, mode=...).")
        else:
            consequence = "JAX shifts such slices back in bounds silently"
            advice = ("If this is intended, say so: x.at[i].get(mode='clip') for one element, or "
                      "clamp the start index (jnp.clip) before lax.dynamic_slice.")
        where, msg = self.message(str(self), f"{consequence}. {advice}")
        return OutOfBoundsError(msg, where=where, op=self.prim)


def _float_leaves(vals):
    return [v for v in vals if hasattr(v, "dtype") and dtypes.issubdtype(v.dtype, np.inexact)]


def _any(pred_fn, vals):
    preds = [jnp.any(pred_fn(v)) for v in vals]
    return functools.reduce(jnp.logical_or, preds) if preds else jnp.bool_(False)


class ZeroProduced(_GuardException):
    """Not an error but a mode of the rules: with this class enabled, every NaN (Inf) an
    op produces from NaN-free (finite) inputs is replaced by 0. Comparing the outputs of
    such a run with the real ones tells whether a NaN an op made reaches an output, or
    only a NaN constant or input does (`where(a > 1, (a - 1) / (a - 1), nan)` at a=1)."""


def _nan_inf_rule(prim, base_rule, error, enabled, *in_vals, **params):
    error, out = base_rule(error, enabled, *in_vals, **params)
    outs = _float_leaves(out if prim.multiple_results else [out])
    if not outs or not enabled & {GuardNaN, GuardInf, ZeroProduced}:
        return error, out
    ins = _float_leaves(in_vals)
    # "Produced": a NaN from NaN-free inputs, an Inf from finite ones (constants pass).
    nan_free, finite = ~_any(jnp.isnan, ins), _all_finite(ins)
    if ZeroProduced in enabled:
        def zeroed(value):
            if not _float_leaves([value]):
                return value
            value = jnp.where(jnp.isnan(value) & nan_free, 0, value)
            return jnp.where(jnp.isinf(value) & finite, 0, value)
        return error, [zeroed(o) for o in out] if prim.multiple_results else zeroed(out)
    tb = _user_frames(current_frames())
    if GuardNaN in enabled:
        error = ck.assert_func(error, _any(jnp.isnan, outs) & nan_free, GuardNaN(tb, prim.name))
    if GuardInf in enabled:
        error = ck.assert_func(error, _any(jnp.isinf, outs) & finite, GuardInf(tb, prim.name))
    return error, out


def _all_finite(vals):
    return ~_any(lambda v: ~jnp.isfinite(v), vals)


def _user_called_indexing_api(frames) -> bool:
    """True if the op being checked came from a user call to an indexing API, without an
    explicit `mode=`."""
    if EXPLICIT_MODE_SCOPE in str(siu.current().name_stack):
        return False
    return _called_api(frames) in _INDEXING_APIS


def _oob_rule(prim_name, mask_fn, base_rule, error, enabled, *in_vals, **params):
    error, out = base_rule(error, enabled, *in_vals, **params)
    if GuardOOB not in enabled:
        return error, out
    frames = current_frames()
    if not _user_called_indexing_api(frames):
        return error, out
    oob_mask, indices, dims_map = mask_fn(*in_vals, **params)
    operand = in_vals[0]
    payload = ck.oob_payload(oob_mask, indices, dims_map, operand.shape)
    return ck.assert_func(
        error, jnp.any(oob_mask),
        GuardOOB(_user_frames(frames), prim_name, operand.shape, payload)), out


def is_library_jaxpr(closed_jaxpr) -> bool:
    info = closed_jaxpr.jaxpr.debug_info
    return info is not None and _JAX_DIR in (info.func_src_info or "")


def _library_jit_rule(base_rule, error, enabled, *in_vals, jaxpr, **params):
    # Check jax's own jitted helpers inline, with the caller's frames pushed, so their ops
    # are attributed to the user's line (their own tracebacks stop at the helper).
    if not (enabled & _OURS) or not is_library_jaxpr(jaxpr):
        return base_rule(error, enabled, *in_vals, jaxpr=jaxpr, **params)
    err_vals, err_tree = jax.tree_util.tree_flatten(error)
    with outer_frames(current_frames()):
        return ck.checkify_jaxpr_flat(jaxpr.jaxpr, jaxpr.consts, enabled, err_tree,
                                      *err_vals, *in_vals)


# Out-of-bounds masks of the index operations: (mask, indices, axis of each index
# column). `xp` is jax.numpy on the device (in jaxguard's checkify rule) or numpy on the
# host (eager checks, on concrete indices).

def _dynamic_slice_mask(operand, *start_indices, slice_sizes, xp=jnp):
    start = xp.stack(start_indices) if start_indices else xp.zeros(0, np.int32)
    sizes = np.array(slice_sizes, dtype=start.dtype)
    dims = np.array(operand.shape, dtype=start.dtype)
    return (start < 0) | (start + sizes > dims), start, range(operand.ndim)


def _dynamic_update_slice_mask(operand, update, *start_indices, xp=jnp):
    start = xp.stack(start_indices) if start_indices else xp.zeros(0, np.int32)
    dims = np.array(operand.shape, dtype=start.dtype)
    upd = np.array(update.shape, dtype=start.dtype)
    return (start < 0) | (start + upd > dims), start, range(operand.ndim)


def _gather_mask(operand, indices, *, dimension_numbers, slice_sizes, xp=jnp, **_):
    dnums = dimension_numbers
    index_map = np.array(dnums.start_index_map, dtype=int)
    upper = np.array(operand.shape)[index_map] - np.array(slice_sizes)[index_map]
    upper = upper.reshape((1,) * (indices.ndim - 1) + (-1,)).astype(indices.dtype)
    return (indices < 0) | (indices > upper), indices, dnums.start_index_map


def _scatter_mask(operand, indices, updates, *, dimension_numbers, xp=jnp, **_):
    dnums = dimension_numbers
    sizes, pos = [], 0
    for axis in range(operand.ndim):
        if axis in dnums.inserted_window_dims or axis in dnums.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(updates.shape[dnums.update_window_dims[pos]])
            pos += 1
    index_map = dnums.scatter_dims_to_operand_dims
    upper = np.array([operand.shape[a] - sizes[a] for a in index_map])
    upper = upper.reshape((1,) * (indices.ndim - 1) + (-1,)).astype(indices.dtype)
    return (indices < 0) | (indices > upper), indices, index_map


def oob_payload_host(oob_mask, indices, dims_map, shape):
    """checkify's `oob_payload` (first bad index, its axis, the axis size) in numpy."""
    flat = int(np.argmax(np.ravel(oob_mask)))
    column = np.unravel_index(flat, np.shape(indices))[-1]
    axis = list(dims_map)[column]
    return np.array([np.ravel(indices)[flat], axis, shape[axis]], dtype=np.int32)


def check_index_op_on_host(primitive, args, params, frames) -> None:
    """Raise OutOfBoundsError if an index operation run eagerly, from a user call to an
    indexing API, has an out-of-bounds index. `args` are concrete; only the integer ones
    (the indices) are copied to the host."""
    if not _user_called_indexing_api(frames):
        return
    host = [a if hasattr(a, "dtype") and not dtypes.issubdtype(a.dtype, np.integer)
            else np.asarray(a) for a in args]
    try:
        oob_mask, indices, dims_map = _OOB_MASKS[primitive](*host, xp=np, **params)
    except Exception:  # noqa: BLE001 - an index op these masks do not know: unchecked
        return
    if oob_mask.any():
        payload = oob_payload_host(oob_mask, indices, dims_map, args[0].shape)
        raise GuardOOB(_user_frames(frames), primitive.name, args[0].shape,
                       payload).to_guard_error()


_SCATTERS = [lax.scatter_p, lax.scatter_add_p, lax.scatter_mul_p, lax.scatter_min_p,
             lax.scatter_max_p]
_OOB_MASKS = {
    lax.dynamic_slice_p: _dynamic_slice_mask,
    lax.dynamic_update_slice_p: _dynamic_update_slice_mask,
    lax.gather_p: _gather_mask,
    **{p: _scatter_mask for p in _SCATTERS},
}
# Primitives that can turn NaN-free (finite) inputs into a NaN (an Inf): checkify's list.
_NAN_PRIMS = [*ck.nan_primitives, lax.div_p]


def _user_check_rule(base_rule, error, enabled, *args, err_tree, debug):
    # jaxguard's own checkify (its error classes only) leaves the user's `checkify.check`
    # in place, for the user's checkify around the call (or `debug_check`'s callback).
    if enabled <= _OURS:
        ck.check_p.bind(*args, err_tree=err_tree, debug=debug)
        return error, []
    return base_rule(error, enabled, *args, err_tree=err_tree, debug=debug)


def _bind_rule(prim):
    def rule(error, enabled, *in_vals, **params):
        return error, prim.bind(*in_vals, **params)
    return rule


_saved_rules: dict = {}
_OURS = frozenset({GuardNaN, GuardInf, GuardOOB, ZeroProduced})


def install() -> None:
    """Add jaxguard's rules to checkify's table (they defer to the rule they replace)."""
    if _saved_rules:
        return
    for prim in _NAN_PRIMS:
        _saved_rules[prim] = ck.error_checks.get(prim)
        base = _saved_rules[prim] or _bind_rule(prim)
        ck.error_checks[prim] = functools.partial(_nan_inf_rule, prim, base)
    for prim, mask_fn in _OOB_MASKS.items():
        _saved_rules[prim] = ck.error_checks.get(prim)
        base = _saved_rules[prim] or _bind_rule(prim)
        ck.error_checks[prim] = functools.partial(_oob_rule, prim.name, mask_fn, base)
    _saved_rules[ck.check_p] = ck.error_checks[ck.check_p]
    ck.error_checks[ck.check_p] = functools.partial(_user_check_rule,
                                                    _saved_rules[ck.check_p])
    _saved_rules[pjit.jit_p] = ck.error_checks.get(pjit.jit_p)
    ck.error_checks[pjit.jit_p] = functools.partial(_library_jit_rule,
                                                    _saved_rules[pjit.jit_p])


def uninstall() -> None:
    for prim, rule in _saved_rules.items():
        if rule is None:
            ck.error_checks.pop(prim, None)
        else:
            ck.error_checks[prim] = rule
    _saved_rules.clear()


def to_guard_error(exc):
    """The GuardError for a checkify exception (ours, or a batched one holding ours)."""
    if isinstance(exc, ck.BatchedError):
        exc = next(iter(exc.error_mapping.values()))
    if isinstance(exc, _GuardException):
        return with_call_site(exc, skip=3).to_guard_error()
    return None
