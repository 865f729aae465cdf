"""`enable()`, `disable()` and `guard()`: switch the guards on and off, restoring exactly."""

from __future__ import annotations

import atexit
import contextlib
import gc
import sys
import threading
from dataclasses import dataclass, field

import jax
from jax._src import core

from jaxguard.runtime import checks, eager, jitwrap, keys, recompile
from jaxguard.runtime import errors as errors_module
from jaxguard.runtime.errors import GuardCoverageWarning, GuardError, _is_library_file, warn_at_user

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


_DEFAULTS = dict(x64=None, nans=True, infs=False, oob=True, key_reuse=True, recompiles=3,
                 tracer_leaks=False, transfers=None, rank_promotion=None, precision=None,
                 libraries="warn", deferred=True)
_lock = threading.RLock()
_active: _Active | None = None


def _validate(options: dict) -> None:
    for name in ("nans", "infs", "oob", "key_reuse", "tracer_leaks", "deferred"):
        if not isinstance(options[name], bool):
            raise ValueError(f"jaxguard.enable: {name}= must be True or False, "
                             f"got {options[name]!r}")
    if options["x64"] not in (None, True, False):
        raise ValueError(f"jaxguard.enable: x64= must be None, True or False, "
                         f"got {options['x64']!r}")
    limit = options["recompiles"]
    if limit not in (None, False) and (isinstance(limit, bool) or not isinstance(limit, int)
                                       or limit < 1):
        raise ValueError(f"jaxguard.enable: recompiles= must be a positive int, or None or 0 to "
                         f"switch the recompile guard off, got {limit!r}")
    if options["transfers"] not in (None, *_TRANSFER_LEVELS):
        raise ValueError(f"jaxguard.enable: transfers= must be None or one of "
                         f"{', '.join(_TRANSFER_LEVELS)}; got {options['transfers']!r}")
    if options["rank_promotion"] not in (None, *_RANK_PROMOTION):
        raise ValueError(f"jaxguard.enable: rank_promotion= must be None or one of "
                         f"{', '.join(_RANK_PROMOTION)}; got {options['rank_promotion']!r}")
    libraries = options["libraries"]
    if not (libraries in ("warn", "raise") or (
        isinstance(libraries, dict) and all(v in ("warn", "raise") for v in libraries.values())
    )):
        raise ValueError("jaxguard.enable: libraries= must be 'warn', 'raise', or a dict of package "
                         f"name -> 'warn' | 'raise'; got {libraries!r}")
    precision = options["precision"]
    if precision not in (None, True, False) and not isinstance(precision, dict):
        raise ValueError(f"jaxguard.enable: precision= must be None, True, False or a dict of "
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


def _warn_late(options: dict, *, check_existing_jits: bool) -> None:
    if not core.trace_state_clean():
        x64 = (" x64 was left unchanged (switching it inside a trace breaks it)."
               if options["x64"] is not None else "")
        warn_at_user("jaxguard.enable() was called inside a jit/vmap/grad trace: the "
                     "function being traced now is not guarded; only functions jitted "
                     f"after this call are.{x64} Call enable() once at program start, "
                     "or use `jaxguard run script.py`.", GuardCoverageWarning)
        return
    if not check_existing_jits:
        return
    names = _user_jits_created_before()
    if names:
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        warn_at_user(f"jaxguard.enable() was called after {len(names)} function(s) were "
                     f"already wrapped with jax.jit ({shown}): those run without NaN, "
                     "out-of-bounds and recompile guards. Call enable() before importing "
                     "your model code, or use `jaxguard run script.py`.", GuardCoverageWarning)


def _user_jits_created_before() -> list[str]:
    """Names of live jax.jit functions made from user code (jax's own are ignored)."""
    ours = {id(twin._plain) for twin in list(jitwrap._cache.values())}
    names = []
    for obj in gc.get_objects():
        if type(obj).__name__ != "PjitFunction" or id(obj) in ours:
            continue
        code = getattr(getattr(obj, "_fun", None), "__code__", None)
        if code is not None and not _is_library_file(code.co_filename):
            names.append(getattr(obj, "__qualname__", code.co_name))
    return names


def enable(*, x64=None, nans=True, infs=False, oob=True, key_reuse=True, recompiles=3,
           tracer_leaks=False, transfers=None, rank_promotion=None, precision=None, libraries="warn",
           deferred=True):
    """Switch jaxguard's runtime guards on (see docs/runtime.md).

    Call once at program start, before model code is imported or jitted. Calling it again
    with the same options does nothing; with other options it reconfigures.
    """
    options = dict(x64=x64, nans=nans, infs=infs, oob=oob, key_reuse=key_reuse,
                   recompiles=recompiles, tracer_leaks=tracer_leaks, transfers=transfers,
                   rank_promotion=rank_promotion, precision=precision, libraries=libraries,
                   deferred=deferred)
    _validate(options)
    _enable(options, warn_late=True)


def _enable(options: dict, *, warn_late: bool) -> None:
    pending = None
    with _lock:
        if _active is not None:
            if _active.options == options:
                return
            pending = jitwrap.take_unread()  # read once the new options are in place
            disable()
        _switch_on(options, warn_late)
    if pending is not None:
        pending.settle()


def _switch_on(options: dict, warn_late: bool) -> None:
    """Install the guards for `options` (the caller holds the lock, guards are off)."""
    global _active
    _warn_late(options, check_existing_jits=warn_late)
    nans, infs, oob = options["nans"], options["infs"], options["oob"]
    errors_module.libraries_policy = options["libraries"]
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
            jax.jit = jitwrap.make_jit(jax.jit)
            jitwrap.errors = frozenset(
                cls for flag, cls in (("nans", checks.GuardNaN), ("infs", checks.GuardInf),
                                      ("oob", checks.GuardOOB)) if options[flag])
            jitwrap.recompile_limit = options["recompiles"] or None
            jitwrap.deferred = options["deferred"]
            jitwrap.active = True
            _flush_at_exit_once()
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
    errors_module.libraries_policy = "warn"
    keys.uninstall()
    eager.uninstall()
    if state.original_jit is not None:
        jax.jit = state.original_jit
    checks.uninstall()
    recompile.reset()
    for flag, value in state.saved_config.items():
        jax.config.update(flag, value)


def disable() -> None:
    """Switch every guard off and restore each jax setting to its value before enable().
    The check of the last guarded call, if still unread, is read first: its error raises here."""
    global _active
    with _lock:
        if _active is None:
            return
        state, _active = _active, None
        pending = jitwrap.take_unread()
        try:
            if pending is not None:
                pending.settle()  # while the checks that name the op are still in place
        finally:
            _undo(state)


def flush() -> None:
    """Read the check of the last guarded call now (jaxguard reads each call's check once the
    next guarded call has started): its NaN, Inf or out-of-bounds error raises here."""
    jitwrap.flush()


_exit_hook_registered = False


def _flush_at_exit_once() -> None:
    """At interpreter exit, the last guarded call's check is read and its error reported;
    in IPython and Jupyter, after every cell (the error is shown under the cell that made it)."""
    global _exit_hook_registered
    if not _exit_hook_registered:
        _exit_hook_registered = True
        atexit.register(_flush_at_exit)
        shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
        if shell is not None:
            shell.events.register("post_run_cell", lambda *_: jitwrap.flush())


def _flush_at_exit() -> None:
    try:
        jitwrap.flush()
    except GuardError as error:  # too late to raise: said on stderr
        sys.stderr.write(f"jaxguard: the last guarded call failed its check: {type(error).__name__}: {error}\n")


def is_enabled() -> bool:
    return _active is not None


def guard(**options):
    """`with jaxguard.guard(...):` enables the guards inside the block only.

    Takes the keywords of `enable()`. On exit the previous state comes back: off if
    guards were off, or the options of an enclosing `enable()`/`guard()`.
    """
    return guarded(options, warn_late=False)


# Open guard() blocks of all threads, oldest first, after the state before the first one
# (None: guards off). Blocks may close out of order across threads: on exit a block
# removes itself and the newest block still open (or that first state) applies again.
_guard_stack: list = []


@contextlib.contextmanager
def guarded(options: dict, *, warn_late: bool):
    """`guard()` with control over the warning about functions jitted before it. Scoped
    guards (guard(), the pytest fixture and marker) do not give it: there, jitted
    functions made earlier are expected, and documented to stay unguarded."""
    full = dict(_DEFAULTS, **options)
    unknown = set(options) - set(_DEFAULTS)
    if unknown:
        raise TypeError(f"jaxguard.guard: unknown option(s) {', '.join(sorted(unknown))}; "
                        f"expected some of {', '.join(_DEFAULTS)}")
    _validate(full)
    token = object()
    with _lock:
        if not _guard_stack:
            _guard_stack.append((None, dict(_active.options) if _active else None))
        _guard_stack.append((token, full))
        _enable(full, warn_late=warn_late)
    try:
        yield
    except BaseException:
        jitwrap.take_unread()  # the block failed already: its last call's check is moot
        raise
    finally:
        with _lock:
            _guard_stack.remove(next(e for e in _guard_stack if e[0] is token))
            options_now = _guard_stack[-1][1]
            if len(_guard_stack) == 1:
                _guard_stack.clear()
            if options_now is None:
                disable()
            else:
                _enable(options_now, warn_late=False)
