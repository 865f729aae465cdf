"""`enable()`, `disable()` and `guard()`: switch the guards on and off, restoring exactly."""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import jax
from jax._src import core, pjit

from jaxguard.runtime import checks, eager, jitwrap, keys, recompile
from jaxguard.runtime.errors import warn_at_user

_TRANSFER_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
_RANK_PROMOTION = ("allow", "warn", "raise")
_TRANSFER_FLAGS = ("jax_transfer_guard_host_to_device", "jax_transfer_guard_device_to_device",
                   "jax_transfer_guard_device_to_host")


@dataclass
class _Active:
    options: dict
    saved_config: dict = field(default_factory=dict)  # flag -> value before enable()
    original_jit: object = None
    precision_context: object = None


_JIT_CACHE_SIZE = 1024
_lock = threading.RLock()
_active: _Active | None = None


def _validate(options: dict) -> None:
    for name in ("nans", "infs", "oob", "key_reuse", "tracer_leaks"):
        if not isinstance(options[name], bool):
            raise ValueError(f"jaxguard.enable: {name}= must be True or False, "
                             f"got {options[name]!r}")
    if options["x64"] not in (None, True, False):
        raise ValueError(f"jaxguard.enable: x64= must be None, True or False, "
                         f"got {options['x64']!r}")
    limit = options["recompiles"]
    if limit not in (None, False) and (isinstance(limit, bool) or not isinstance(limit, int)
                                       or limit < 1):
        raise ValueError(f"jaxguard.enable: recompiles= must be a positive int, or None to "
                         f"switch the recompile guard off, got {limit!r}")
    if options["transfers"] not in (None, *_TRANSFER_LEVELS):
        raise ValueError(f"jaxguard.enable: transfers= must be None or one of "
                         f"{', '.join(_TRANSFER_LEVELS)}; got {options['transfers']!r}")
    if options["rank_promotion"] not in (None, *_RANK_PROMOTION):
        raise ValueError(f"jaxguard.enable: rank_promotion= must be None or one of "
                         f"{', '.join(_RANK_PROMOTION)}; got {options['rank_promotion']!r}")
    precision = options["precision"]
    if precision is not None and precision is not True and not isinstance(precision, dict):
        raise ValueError(f"jaxguard.enable: precision= must be None, True or a dict of "
                         f"jaxguard.precision.checking() options, got {precision!r}")


def _config_changes(options: dict) -> dict:
    changes = {}
    if options["x64"] is not None:
        changes["jax_enable_x64"] = options["x64"]
    if options["tracer_leaks"]:
        changes["jax_check_tracer_leaks"] = True
    if options["transfers"] is not None:
        changes.update({flag: options["transfers"] for flag in _TRANSFER_FLAGS})
    if options["rank_promotion"] is not None:
        changes["jax_numpy_rank_promotion"] = options["rank_promotion"]
    return changes


def _warn_late(options: dict) -> None:
    if not core.trace_state_clean():
        x64 = (" x64 was left unchanged (switching it inside a trace breaks it)."
               if options["x64"] is not None else "")
        warn_at_user("jaxguard.enable() was called inside a jit/vmap/grad trace: the "
                      "function being traced now is not guarded; only functions jitted "
                      f"after this call are.{x64} Call enable() once at program start, "
                      "or use `jaxguard run script.py`.", RuntimeWarning)
        return
    traced_before = pjit._infer_params_cached.cache_info().currsize
    if traced_before:
        warn_at_user(f"jaxguard.enable() was called after {traced_before} jitted "
                      "function(s) already ran: functions wrapped with jax.jit before this "
                      "call (e.g. decorated at import time) run without NaN, out-of-bounds "
                      "and recompile guards. Call enable() before importing your model "
                      "code, or use `jaxguard run script.py`.", RuntimeWarning)


def _guarded_jit_factory(original_jit, options):
    errors = frozenset(cls for flag, cls in (("nans", checks.GuardNaN),
                                             ("infs", checks.GuardInf),
                                             ("oob", checks.GuardOOB)) if options[flag])
    limit = options["recompiles"] or None
    cache: OrderedDict = OrderedDict()  # bounded, like jax's own dispatch cache

    def jit(fun=None, /, **jit_kwargs):
        if fun is None:  # @jax.jit(static_argnums=...) decorator form
            return lambda f: jit(f, **jit_kwargs)
        if isinstance(fun, jitwrap.GuardedJit):
            fun = fun._fun
        # One twin per (function, options), like jax's own cache: jax.jit(f) in a loop
        # must not retrace.
        try:
            key = (fun, tuple(sorted(jit_kwargs.items())))
            hash(key)
        except TypeError:
            key = None
        if key is not None and key in cache:
            cache.move_to_end(key)
            return cache[key]
        guarded = jitwrap.GuardedJit(fun, jit_kwargs, original_jit, errors, limit)
        if key is not None:
            cache[key] = guarded
            if len(cache) > _JIT_CACHE_SIZE:
                cache.popitem(last=False)
        return guarded

    jit.__doc__ = original_jit.__doc__
    jit._jaxguard_original = original_jit
    return jit


def enable(*, x64=None, nans=True, infs=False, oob=True, key_reuse=True, recompiles=3,
           tracer_leaks=False, transfers=None, rank_promotion=None, precision=None):
    """Switch jaxguard's runtime guards on (see docs/runtime.md).

    Call once at program start, before model code is imported or jitted. Calling it again
    with the same options does nothing; with other options it reconfigures.
    """
    options = dict(x64=x64, nans=nans, infs=infs, oob=oob, key_reuse=key_reuse,
                   recompiles=recompiles, tracer_leaks=tracer_leaks, transfers=transfers,
                   rank_promotion=rank_promotion, precision=precision)
    _validate(options)
    _enable(options, warn_late=True)


def _enable(options: dict, *, warn_late: bool) -> None:
    global _active
    with _lock:
        if _active is not None:
            if _active.options == options:
                return
            disable()
        if warn_late:
            _warn_late(options)
        nans, infs, oob = options["nans"], options["infs"], options["oob"]
        state = _Active(options=options)
        changes = _config_changes(options)
        if not core.trace_state_clean():
            changes.pop("jax_enable_x64", None)
        try:
            for flag, value in changes.items():
                state.saved_config[flag] = getattr(jax.config, flag)
                jax.config.update(flag, value)
            if nans or infs or oob or options["recompiles"]:
                checks.install()
                state.original_jit = jax.jit
                jax.jit = _guarded_jit_factory(jax.jit, options)
                jitwrap.active = True
            if nans or infs or oob:
                eager.install(nans=nans, infs=infs, oob=oob)
            if options["key_reuse"]:
                keys.install()
            if options["precision"] not in (None, False):
                state.precision_context = _enter_precision(options["precision"])
        except BaseException:
            _undo(state)
            raise
        _active = state


def _enter_precision(precision):
    try:
        from jaxguard.precision import checking
    except ImportError as exc:
        raise RuntimeError(f"jaxguard.enable(precision=...) needs "
                           f"jaxguard.precision.checking, which could not be imported: "
                           f"{exc}") from None
    context = checking(**(precision if isinstance(precision, dict) else {}))
    context.__enter__()
    return context


def _undo(state: _Active) -> None:
    if state.precision_context is not None:
        state.precision_context.__exit__(None, None, None)
    jitwrap.active = False
    keys.uninstall()
    eager.uninstall()
    if state.original_jit is not None:
        jax.jit = state.original_jit
    checks.uninstall()
    recompile.reset()
    for flag, value in state.saved_config.items():
        jax.config.update(flag, value)


def disable() -> None:
    """Switch every guard off and restore each jax setting to its value before enable()."""
    global _active
    with _lock:
        if _active is None:
            return
        state, _active = _active, None
        _undo(state)


def is_enabled() -> bool:
    return _active is not None


@contextlib.contextmanager
def guard(**options):
    """`with jaxguard.guard(...):` enables the guards inside the block only.

    On exit the previous state comes back: off if guards were off, or the options of an
    enclosing `enable()`/`guard()`.
    """
    with _lock:
        previous = dict(_active.options) if _active is not None else None
        enable(**options)
    try:
        yield
    finally:
        with _lock:
            disable()
            if previous is not None:
                _enable(previous, warn_late=False)
