"""The patched `jax.jit`: every function jitted while guards are on gets checked twins.

`GuardedPjitFunction` jits functions that run the user's function under `checkify` with
jaxguard's error classes, so the checks run on the device inside the same compiled
program (see the class docstring for the two twins). Each call reads back one flag; when
it is set, the error becomes a `GuardError` naming the user's line.
"""

from __future__ import annotations

__tracebackhide__ = True  # pytest: errors raised here show the user's frames only

import functools
import os
import sys
import threading
import time
import weakref
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import api, core, dtypes, traceback_util
from jax._src import checkify as ck
from jax._src.interpreters import partial_eval as pe

from jaxguard.runtime import checks, keys, recompile
from jaxguard.runtime.errors import (
    GuardCoverageWarning,
    GuardError,
    InfError,
    NaNError,
    format_where,
    raise_unless_in_library,
    warn_at_user,
    warnings_at_caller,
)

# Set by enable()/disable(). Twins read them at call time, so a function jitted under one
# enable() follows the options of the current one, and runs plain after disable().
active = False
errors: frozenset = frozenset()  # jaxguard checkify error classes to check
recompile_limit: int | None = None
# Read each call's alarm once the next guarded call is dispatched (one call late), so the
# host never waits for the device between steps; False reads it before the call returns.
deferred = True
# A function's first calls are read at once: a one-off call (a script's, a test's, a
# notebook cell's) raises where it is made; a loop's later calls run asynchronously.
_SYNC_CALLS = 10
# per thread (an error raises in the thread whose call made it): the last deferred call
# whose alarm is not read yet (a _Pending)
_unread = threading.local()
_epoch = 0  # calls are counted anew for each test (the pytest plugin)


def count_calls_anew() -> None:
    global _epoch
    _epoch += 1

# (fun, jit options) -> GuardedPjitFunction, held weakly: a guarded function (its twins and
# their compiled code) lives as long as the program holds it, as a plain jax.jit does. A
# cache that held them all kept every test's executables alive until XLA's compiler ran
# out of memory maps (a segfault after ~2,000 tests of optax). The most recent ones are
# held strongly, so that `jax.jit(f)(x)` in a loop finds its twin again.
_RECENT_SIZE = 64
_cache: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_recent: OrderedDict = OrderedDict()
_cache_lock = threading.Lock()


def _staged() -> bool:
    """True while jax traces into a jaxpr (a jit, a loop or cond body, checkify), also
    under a grad or vmap of such a trace; False in eager code, even under an eager grad
    or vmap (their values are concrete underneath)."""
    return any(isinstance(trace, pe.DynamicJaxprTrace)
               for trace in core.unsafe_get_trace_stack(core.unsafe_get_current_trace()))


# An error raised through a guarded call shows the user's frames, not jaxguard's (as jax
# hides its own internals; JAX_TRACEBACK_FILTERING=off shows everything).
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
traceback_util.register_exclusion(_OWN_DIR)


class GuardedPjitFunction:
    """Callable returned by the patched `jax.jit`; behaves like the jitted function, and
    looks like one to code that inspects it: `__wrapped__`, `__signature__`, and a type
    name holding "PjitFunction" (chex's `is_traceable` tests the type's name).

    Two compiled twins per error set:
    - the fast twin, run on every call: out-of-bounds checks on the device, and one
      `alarm` value that is set when a check failed or an output holds a NaN (Inf);
    - the locating twin, compiled and run only after an alarm, on the same arguments:
      checks every op for NaN/Inf so the error names the op and the user's line.
    Per-op NaN checks on every call would cost 1.5x and more on a training step.
    Both call the plain jit of the function (`_plain`, also what runs nested in other
    traces), so the Python function is traced once per argument signature, as by jax.
    """

    def __init__(self, fun, jit_kwargs, original_jit):
        self._fun = fun
        self._jit_kwargs = jit_kwargs
        self._original_jit = original_jit
        # per call signature (argument structure and static values): the flat positions of
        # the arguments that are keys the traced function consumed
        self._key_positions: dict[tuple, set[int]] = {}
        self._plain = original_jit(self._consuming_keys(fun), **jit_kwargs)
        self._twins: dict = {}  # (error classes, locating?) -> jitted twin
        # jax could not differentiate the checked twin: under eager transformations it runs
        # unchecked (said once), and the twin is not traced again
        self._unchecked_under_transforms = False
        # a per-op alarm turned out to be an installed package's out-of-bounds read (warned,
        # not raised): the fast twin then returns its error value, so that a read recurring
        # on every call does not re-run the whole function every call to find it again
        self._keep_err = False
        self._fast_traced: set[tuple] = set()  # argument types the fast twin was traced for
        self._calls = 0  # checked calls so far (the first _SYNC_CALLS are read at once) ...
        self._epoch = _epoch  # ... since this count began
        self._traces = recompile.Traces()
        self._donates = any(jit_kwargs.get(name) not in (None, (), [])
                            for name in ("donate_argnums", "donate_argnames"))
        functools.update_wrapper(self, fun, updated=())

    def _consuming_keys(self, fun):
        @functools.wraps(fun)
        def plain(*args, **kwargs):
            with warnings_at_caller():
                out = fun(*args, **kwargs)
            # Remember which arguments are keys the function consumes: passing the same
            # key object to it twice is key reuse too.
            self._key_positions.setdefault(self._signature(args, kwargs), set()).update(
                i for i, leaf in enumerate(jax.tree_util.tree_leaves((args, kwargs)))
                if isinstance(leaf, core.Tracer) and keys.is_consumed(leaf))
            return out
        return plain

    def _signature(self, args, kwargs) -> tuple:
        """What decides a trace, as far as keys go: the arguments' structure and the static
        ones' values (`train=False` traces a forward that draws nothing; a parameter list of
        another length moves the key to another flat position)."""
        options = self._jit_kwargs
        nums = options.get("static_argnums") or ()
        names = options.get("static_argnames") or ()
        nums = (nums,) if isinstance(nums, int) else tuple(nums)
        names = (names,) if isinstance(names, str) else tuple(names)
        static = tuple(args[i] for i in nums if -len(args) <= i < len(args)) + tuple(
            (name, kwargs[name]) for name in names if name in kwargs)
        try:
            hash(static)
        except TypeError:
            static = ()
        return jax.tree_util.tree_structure((args, kwargs)), static

    def _twin(self, errors_now, locating: bool, keep_err: bool = False):
        twin = self._twins.get((errors_now, locating, keep_err))
        if twin is None:
            # A fresh function (not a bound method) so functools.wraps can give it the
            # user's signature, which jit needs for static_argnames.
            traced = functools.wraps(self._fun)(
                lambda *args, **kwargs: self._traced(errors_now, locating, *args, keep_err=keep_err, **kwargs))
            twin = self._twins[errors_now, locating, keep_err] = self._original_jit(
                traced, **_twin_options(self._jit_kwargs))
        return twin

    def _traced(self, errors_now, locating, *args, keep_err=False, **kwargs):
        # Runs once per trace (= per compilation), never per call.
        avals = tuple(str(getattr(leaf, "aval", leaf)) for leaf in jax.tree_util.tree_leaves((args, kwargs)))
        if recompile_limit is not None and not locating and not (keep_err and avals in self._fast_traced):
            # (the twin that keeps its error value traces again what the fast one did: ours)
            recompile.record(self._traces, self._fun, self._jit_kwargs, args, kwargs,
                             recompile_limit)
        if not locating and not keep_err:
            self._fast_traced.add(avals)
        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        # Static arguments arrive as plain Python values; only tracers go through checkify.
        dyn_pos = [i for i, leaf in enumerate(leaves) if isinstance(leaf, core.Tracer)]
        per_op_errors = errors_now if locating else errors_now - _VALUE_ERRORS

        def body(dyn):
            full = list(leaves)
            for i, val in zip(dyn_pos, dyn):
                full[i] = val
            call_args, call_kwargs = jax.tree_util.tree_unflatten(tree, full)
            return self._plain(*call_args, **call_kwargs)

        # Ops whose recorded frames hold no user code (`jax.jit(jnp.log)`) are attributed
        # to the line that calls the compiled function.
        with checks.outer_frames(checks.CALL_SITE):
            dyn_args = [leaves[i] for i in dyn_pos]
            try:
                err, out = ck.checkify(body, errors=per_op_errors)(dyn_args)
            except GuardError:
                raise  # found while tracing (key reuse)
            except Exception as exc:
                if locating:
                    raise  # the locating call reports that it could not locate
                # checkify cannot transform everything (shard_map, pmap inside jit, a
                # while loop under vmap, on jax 0.10), even with no error classes: run
                # the function as jax would. A bug in the user's code raises again here,
                # unchanged.
                err, out = ck.init_error, body(dyn_args)
                if per_op_errors:
                    warn_at_user(f"jaxguard could not add on-device checks to "
                                 f"{self._name()}() ({type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0][:120]}); it runs with its "
                                 f"outputs checked for NaN only.", GuardCoverageWarning)
        # Outside checkify: jaxguard's own reductions are not the user's ops.
        if locating:
            # A NaN/Inf an op made counts only if one reached an output, not just any
            # NaN (a constant, an input): the function runs once more with what ops
            # produce zeroed, and the outputs that differ are those that ops reached.
            _, zeroed = ck.checkify(body, errors=frozenset({checks.ZeroProduced}))(dyn_args)
            reached = {cls: _reached(is_bad, out, zeroed) for cls, is_bad in
                       ((checks.GuardNaN, jnp.isnan), (checks.GuardInf, jnp.isinf))
                       if cls in errors_now}
            err = err._replace(_pred={
                effect: pred & reached[effect.error_type]
                if effect.error_type in _VALUE_ERRORS else pred
                for effect, pred in err._pred.items()})
            value_alarm = functools.reduce(jnp.logical_or, reached.values(), jnp.bool_(False))
        else:
            # Each output reduced to a sum: NaN also for +inf and -inf together, confirmed
            # on the host after an alarm.
            value_alarm = _value_alarm(errors_now, dyn_args, out, check_inputs=self._donates)
        op_alarm = functools.reduce(jnp.logical_or, err._pred.values(), jnp.bool_(False))
        alarm = value_alarm.astype(jnp.int32) + 2 * op_alarm.astype(jnp.int32)
        # The error value goes back to Python (~10 us per call to rebuild) only where a
        # re-run cannot recover it (the locating twin, functions that donate) or would be
        # paid on every call (a library's harmless out-of-bounds read that recurs).
        return alarm, (err if locating or self._donates or keep_err else None), out

    @traceback_util.api_boundary
    def __call__(self, *args, **kwargs):
        if not active or _staged():
            # Guards off, or inside a trace: a guarded jit (whose checkify covers this
            # call) or another one (an unguarded jit, a loop or cond body, the user's own
            # checkify) where no alarm can be read: run exactly as jax would.
            out = self._plain(*args, **kwargs)
        elif jax.config.jax_disable_jit:
            # jax.disable_jit(): the function runs op by op, as the user asked, with nothing
            # compiled to hold checks; its outputs are checked for NaN (Inf) on the host.
            out = self._plain(*args, **kwargs)
            if errors & _VALUE_ERRORS and _bad_on_host(errors, out) and not _bad_on_host(errors, (args, kwargs)):
                raise self._unlocated_error(out, "It ran under jax.disable_jit(), op by op: run it "
                                                 "jitted to see the operation and its line.")
        else:
            out = self._checked_call(args, kwargs)
        positions = self._key_positions.get(self._signature(args, kwargs)) if self._key_positions else None
        if positions:
            leaves = jax.tree_util.tree_leaves((args, kwargs))
            for i in sorted(positions):
                keys.consume(leaves[i], f"jitted {self._name()}")
        return out

    def _checked_call(self, args, kwargs):
        if self._unchecked_under_transforms and _has_tracers(args, kwargs):
            return self._plain(*args, **kwargs)  # known to fail: do not trace it again
        try:
            alarm, err, out = self._twin(errors, False, self._keep_err)(*args, **kwargs)
        except GuardError:
            raise
        except Exception as exc:
            if not _has_tracers(args, kwargs):
                raise
            # Under an eager grad/vjp/linearize, differentiating the checked twin can fail
            # where the plain function does not (jax 0.10's checkify with a custom_vjp that
            # scatters or slices). Run it as jax would; a bug of the user's raises again.
            out = self._plain(*args, **kwargs)
            if not self._unchecked_under_transforms:
                self._unchecked_under_transforms = True
                warn_at_user(f"jaxguard could not differentiate the checked version of {self._name()}() "
                             f"({type(exc).__name__}: {str(exc).splitlines()[0][:120]}); under this "
                             f"transformation it runs unchecked.", GuardCoverageWarning)
            return out
        if self._epoch != _epoch:
            self._epoch, self._calls = _epoch, 0
        self._calls += 1
        previous = take_unread()
        if deferred and self._calls > _SYNC_CALLS and not isinstance(alarm, core.Tracer):
            # (an eager transformation's tracer is read now, below)
            # This call is dispatched; the previous one has finished or nearly: read its
            # alarm now, this one's at the next call (or `jaxguard.flush()`, or exit).
            _unread.call = _Pending(self, alarm, err, out, args, kwargs, _outer_frames(), self._calls)
            if previous is not None:
                previous.settle()
            return out
        if previous is not None:
            previous.settle()
        try:
            alarmed = int(alarm)  # the one device-to-host read per call
        except jax.errors.ConcretizationTypeError:
            # Under an eager vmap the flags are batched: run the locating twin and let
            # checkify's check primitive raise per batch element.
            _, err, _ = self._twin(errors, True)(*args, **kwargs)
            raise_under_transform(err)
            return out
        if alarmed:
            self._raise(alarmed, err, out, args, kwargs)
        return out
    def _raise(self, alarm: int, err, out, args, kwargs, late: _Pending | None = None) -> None:
        """alarm: bit 0 = a NaN/Inf reached an output, bit 1 = a per-op check failed.
        `late`: the call was read one call late (said in the message)."""
        exc = err.get_exception() if err is not None else None
        if exc is None:  # re-run with every check to find the op
            leaves = jax.tree_util.tree_leaves((args, kwargs))
            if any(isinstance(leaf, jax.Array) and not isinstance(leaf, core.Tracer)
                   and leaf.is_deleted() for leaf in leaves):
                raise self._unlocated_error(
                    out, "Its arguments were donated (donate_argnums), so jaxguard could "
                         "not re-run it to find the operation: call it once without "
                         "donation to see the operation and its line.", late)
            if alarm == 1 and not _bad_on_host(errors, out):
                return  # the sum was NaN from +inf and -inf: no NaN in the outputs
            if alarm == 1 and not self._donates and bool(_bad_inputs(errors, leaves)):
                return  # the NaN came in with the arguments, it was not made here
            try:
                _, err, _ = self._locate(alarm, args, kwargs)
            except Exception as exc:
                raise self._unlocated_error(
                    out, f"jaxguard could not instrument it to find the operation "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0][:120]}).", late) from None
            exc = err.get_exception()
            if exc is None:  # no op made it from clean values (a NaN constant): fine
                return
        guard_error = checks.to_guard_error(exc)
        if guard_error is None:
            raise exc
        raise_unless_in_library(guard_error, late.note() if late is not None else "")
        if alarm & 2 and not self._keep_err:
            self._keep_err = True  # warned, not raised: it will recur, keep its value at hand
            # Compile the twin that keeps it now, in this call (slow already: it re-ran the
            # function to locate the read), not in the user's next call (equinox's timed
            # checkpointed-loop test took 2 s instead of 0.01 s).
            self._twin(errors, False, True)(*args, **kwargs)

    def _locate(self, alarm, args, kwargs):
        """Run the locating twin (every op checked) on the same arguments. Compiling it can
        take long on a big step (a train step under grad): said on stderr, with the time."""
        kind = "a NaN or Inf" if checks.GuardInf in errors else "a NaN"
        what = f"{kind} reached the outputs of" if alarm & 1 else "a check failed inside"
        sys.stderr.write(f"jaxguard: {what} {self._name()}(); "
                         f"re-running it with every operation checked to find where...\n")
        sys.stderr.flush()
        start = time.perf_counter()
        try:
            return self._twin(errors, True)(*args, **kwargs)
        finally:
            sys.stderr.write(f"jaxguard: checked re-run of {self._name()}() took "
                             f"{time.perf_counter() - start:.1f} s\n")

    def _unlocated_error(self, out, reason: str, late: _Pending | None = None):
        has_nan = any(np.isnan(np.asarray(leaf)).any() for leaf in _float_leaves(out))
        kind, cls = ("NaN", NaNError) if has_nan else ("Inf", InfError)
        if late is not None:
            where = late.call_site()
        else:
            frames = checks._user_frames(checks.python_frames(3))
            where = format_where(frames[0][0], frames[0][1]) if frames else "<unknown location>"
        note = f" {late.note()}" if late is not None else ""
        return cls(f"{where}: {kind} in the output of {self._name()}() although its inputs "
                   f"had none. {reason}{note}", where=where, op=self._name())

    def _name(self) -> str:
        return getattr(self, "__name__", "function")

    @property
    def __signature__(self):
        return self._plain.__signature__

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


_VALUE_ERRORS = frozenset({checks.GuardNaN, checks.GuardInf})


class _Pending:
    """A guarded call whose alarm is read later: what it needs to raise, then."""

    def __init__(self, function, alarm, err, out, args, kwargs, frames, number):
        self.function, self.alarm, self.err, self.out = function, alarm, err, out
        self.args, self.kwargs = args, kwargs
        self.frames, self.number = frames, number  # the calling frames, sorted out on error

    def settle(self) -> None:
        """Read the alarm (waiting for the call to finish); raise as the call would have."""
        __tracebackhide__ = True
        alarmed = int(self.alarm)
        if alarmed:
            self.function._raise(alarmed, self.err, self.out, self.args, self.kwargs, late=self)

    def call_site(self) -> str:
        found = checks._user_frames(self.frames)
        return format_where(found[0][0], found[0][1]) if found else "<unknown location>"

    def note(self) -> str:
        return (f"(Call {self.number} of {self.function._name()}(), made at {self.call_site()}; "
                f"jaxguard reads a call's checks when the next guarded call has started, so "
                f"this is raised one call late; jaxguard.enable(deferred=False) reads every call at once.)")


def _outer_frames(limit: int = 4) -> list:
    """(filename, function, line) of the frames calling the guarded function, innermost
    first: their lines now (a frame's line moves on after the call)."""
    frame, out = sys._getframe(2), []
    while frame is not None and frame.f_code.co_filename.startswith(_OWN_DIR):
        frame = frame.f_back  # jaxguard's own (__call__, jax's api boundary)
    while frame is not None and len(out) < limit:
        out.append((frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno))
        frame = frame.f_back
    return out


def take_unread():
    pending = getattr(_unread, "call", None)
    _unread.call = None
    return pending


def flush() -> None:
    """Read the check of the last guarded call, if it is still unread: raise its error now."""
    __tracebackhide__ = True
    pending = take_unread()
    if pending is not None:
        pending.settle()


def _has_tracers(args, kwargs) -> bool:
    """Called under an eager transformation (grad, vjp, linearize): its arguments are tracers."""
    return any(isinstance(leaf, core.Tracer) for leaf in jax.tree_util.tree_leaves((args, kwargs)))


def _twin_options(jit_kwargs: dict) -> dict:
    """The user's jit options for a twin, which returns `(alarm, err, out)`: `out_shardings`
    is a pytree prefix of the outputs, so the user's applies to `out` and the compiler places
    the flag and the error values (None). Every other option describes the arguments, which
    the twin takes unchanged."""
    options = dict(jit_kwargs)
    if options.get("out_shardings") is not None:
        options["out_shardings"] = (None, None, options["out_shardings"])
    return options


def _float_leaves(tree):
    return [x for x in jax.tree_util.tree_leaves(tree)
            if hasattr(x, "dtype") and dtypes.issubdtype(x.dtype, jnp.inexact)]


def _sum_is_nan(leaves):
    """A flag set when a leaf's sum is NaN: when it holds a NaN, and also for +inf and -inf
    together: a cheap test (about 4x cheaper than `isnan` over every value on CPU, and cheap
    to compile), confirmed by an exact test before anything is reported. Each leaf's sum is
    tested on its own, in its own dtype (widened to float32), so no two dtypes are ever
    combined: strict dtype promotion (`jax_numpy_dtype_promotion="strict"`) has no path
    between bfloat16 and float32, or float32 and float64."""
    flag = jnp.bool_(False)
    for x in leaves:
        if jnp.issubdtype(x.dtype, jnp.complexfloating):
            x = jnp.real(x) + jnp.imag(x)
        wide = jnp.float32 if x.dtype.itemsize < 4 else x.dtype  # no promote_types: strict mode refuses it
        flag = flag | jnp.isnan(jnp.sum(x.astype(wide)))
    return flag


def _bad_values(errors_now, leaves, exact: bool):
    """On-device flag: some leaf holds a NaN (or, when Infs are checked, an Inf). Not
    `exact`: may also be set by +inf and -inf in one output (see `_sum`)."""
    leaves = _float_leaves(leaves)
    if not leaves:
        return jnp.bool_(False)
    if checks.GuardInf in errors_now:
        leaves = [x * 0 for x in leaves]  # x * 0 is NaN exactly where x is NaN or Inf
    if exact:
        return functools.reduce(jnp.logical_or, [jnp.any(jnp.isnan(x)) for x in leaves])
    return _sum_is_nan(leaves)


def _reached(is_bad, out, zeroed):
    """Does an output hold a bad value where the run with produced values zeroed has none?"""
    pairs = zip(_float_leaves(out), _float_leaves(zeroed))
    return functools.reduce(jnp.logical_or, [jnp.any(is_bad(o) & ~is_bad(z)) for o, z in pairs],
                            jnp.bool_(False))


def _bad_on_host(errors_now, tree) -> bool:
    """The exact test, on the host, of a tree of arrays (True when it cannot tell: under
    an eager grad the outputs are tracers)."""
    leaves = _float_leaves(tree)
    if any(isinstance(x, core.Tracer) for x in leaves):
        return True
    test = (lambda v: not np.isfinite(v).all()) if checks.GuardInf in errors_now \
        else (lambda v: np.isnan(v).any())
    return any(test(np.asarray(x)) for x in leaves)


def _value_alarm(errors_now, inputs, out, check_inputs: bool):
    """On-device flag: an output holds a NaN (Inf) and, if `check_inputs`, no input did.
    NaNs masked before they reach an output do not count: the user never sees them.
    Inputs are checked here only for functions that donate them (exactly: they are gone
    after the call); the others are checked after an alarm, which saves a pass over the
    inputs on every call."""
    if not errors_now & _VALUE_ERRORS:
        return jnp.bool_(False)
    alarm = _bad_values(errors_now, out, exact=False)
    if check_inputs:
        alarm = alarm & ~_bad_values(errors_now, inputs, exact=True)
    return alarm


# jax's own jit (jax.jit itself may be patched): checks run as one compiled call.
_bad_inputs_jitted = api.jit(_bad_values, static_argnums=(0, 2))


def _bad_inputs(errors_now, leaves):
    return _bad_inputs_jitted(errors_now, [x for x in leaves
                                           if isinstance(x, (jax.Array, np.ndarray))], True)


def raise_under_transform(err) -> None:
    """Raise the GuardError of a batched error value through checkify's check primitive."""
    __tracebackhide__ = True
    try:
        ck.check_error(err)
    except ck.JaxRuntimeError as runtime_error:
        guard_error = checks.to_guard_error(runtime_error.__cause__)
        if guard_error is None:
            raise
        raise guard_error from None


def make_jit(original_jit):
    """The function enable() puts in place of `jax.jit`."""

    def jit(fun=None, /, **jit_kwargs):
        if fun is None:  # @jax.jit(static_argnums=...) decorator form
            return lambda f: jit(f, **jit_kwargs)
        if isinstance(fun, GuardedPjitFunction):
            fun = fun._fun
        # One twin per (function, options), like jax's own cache: jax.jit(f) called in a
        # loop must not retrace.
        try:
            key = (fun, tuple(sorted(jit_kwargs.items())))
            hash(key)
        except TypeError:
            return GuardedPjitFunction(fun, jit_kwargs, original_jit)
        with _cache_lock:
            guarded = _cache.get(key)
            if guarded is None:
                guarded = _cache[key] = GuardedPjitFunction(fun, jit_kwargs, original_jit)
            _recent[key] = guarded
            _recent.move_to_end(key)
            if len(_recent) > _RECENT_SIZE:
                _recent.popitem(last=False)
        return guarded

    functools.update_wrapper(jit, original_jit)
    return jit
