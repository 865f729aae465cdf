"""Key-reuse guard for typed (`jax.random.key`) and legacy (`PRNGKey`) keys.

JAX's own checker (`jax_debug_key_reuse`) only understands typed keys and switches off
fast dispatch for every jit call. jaxguard instead watches the key check that every
public `jax.random` function runs first (`_check_prng_key(name, key)`): each call
consumes its key *object* (a concrete array eagerly, a tracer while tracing), and a
second consumption of the same object is an error. This costs nothing per call of a
compiled function: inside jit it runs once, at trace time. Hooking that check, rather
than wrapping the public functions, adds no frame between the user and jax.random, so
jax's own warnings (a float64 dtype without x64) still name the user's line.

A key handed to `lax.scan`, `lax.fori_loop` or `lax.while_loop` as (part of) the carry
reaches the body as a new tracer; when the key was consumed before the loop, that tracer
starts consumed too, so a draw from the carry inside the body (its first iteration uses
the key itself) is reported as the reuse it is.

Not consuming: `fold_in` (deriving many keys from one base key with different data is
the intended use), `clone`, `key_data`, `wrap_key_data`, `key_impl`, constructors, and
jax.random functions calling each other (bernoulli -> uniform is one use). Nor is any use
while `jax.eval_shape` or `jax.make_jaxpr` traces: an abstract evaluation draws no numbers
(Haiku's summaries run the user's function twice under one, with one key).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import weakref

import jax
from jax._src import api, core
from jax._src.random import core as random_core

from jaxguard.runtime import errors as errors_module

from jaxguard.runtime.errors import (
    KeyReuseError,
    _is_installed,
    format_where,
    user_stack,
)

__tracebackhide__ = True  # pytest: errors raised here show the user's frames only

_NOT_CONSUMING = {"key_data", "key_impl", "fold_in", "clone", "wrap_key_data"}
_RANDOM_DIR = os.path.join(os.path.dirname(os.path.abspath(random_core.__file__)), "")

_lock = threading.RLock()  # re-entrant: a weakref callback (GC) may run while it is held
_consumed: dict[int, tuple] = {}  # id(key) -> (weakref to key, user stack, what consumed it)
_original_check = None


def _is_key(value) -> bool:
    return isinstance(value, (jax.Array, core.Tracer))


_API_FILE = api.__file__
_ABSTRACT_EVALUATIONS = frozenset({"eval_shape", "make_jaxpr_f"})  # the functions that trace


def _in_abstract_evaluation() -> bool:
    """Is this trace one of `jax.eval_shape` or `jax.make_jaxpr` (shapes only, nothing runs)?"""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name in _ABSTRACT_EVALUATIONS and code.co_filename == _API_FILE:
            return True
        frame = frame.f_back
    return False


def consume(key, what: str) -> None:
    """Mark `key` consumed by `what`; raise KeyReuseError if it was consumed before."""
    if not _is_key(key) or (isinstance(key, core.Tracer) and _in_abstract_evaluation()):
        return
    stack = user_stack()
    ident = id(key)
    with _lock:
        previous = _consumed.get(ident)
        if previous is not None and previous[0]() is key:
            error = _reuse_error(previous[1], previous[2], stack, what)
            # the library's doing only if the two uses part inside it (numpyro splitting one
            # key twice in one call), not when the user passes one key to it twice
            packages = {
                errors_module.installed_package(site[0][0]) if site[0] is not None else None
                for site in _call_sites(previous[1], stack)
            }
            if not errors_module.warns_for(packages):
                raise error
            # both uses inside installed packages: theirs to fix; said once per use site
            errors_module.warn_at_own_code(
                f"{error} (Inside {', '.join(sorted(packages))}, not your code: "
                f"jaxguard.enable(libraries='raise') makes this an error.)", errors_module.LibraryGuardWarning)
        _remember(key, stack, what)


def _remember(key, stack, what: str) -> None:
    """Record `key` as consumed (held weakly: forgotten when the key object goes)."""
    ident = id(key)
    _consumed[ident] = (weakref.ref(key, lambda _, i=ident: _forget(i)), stack, what)


def _reuse_error(first_stack, first_what: str, stack, what: str) -> KeyReuseError:
    first, second = _call_sites(first_stack, stack)
    where, via = _describe(second)
    first_where, first_via = _describe(first)
    return KeyReuseError(
        f"{where}: PRNG key reused by `{what}`{via}: the same key was already consumed by "
        f"`{first_what}` at {first_where}{first_via}, so both draw the same random bits. "
        f"Split it first: `key, subkey = jax.random.split(key)`.",
        where=None if second[0] is None else where, op=what)


def _call_sites(first, second):
    """The frames of each use that passed the key: where the two stacks part, seen from
    the outside (the user's lines that called into a library, not the library line that
    consumed the key for both). With no such frame (one line, twice), the innermost
    frame outside installed packages. Each: (site, innermost frame)."""
    outer_first, outer_second = first[::-1], second[::-1]
    common = 0
    while (common < min(len(first), len(second))
           and outer_first[common] == outer_second[common]):
        common += 1
    if common < len(first) and common < len(second):
        return ((outer_first[common], first[0] if first else None),
                (outer_second[common], second[0] if second else None))
    return _own_site(first), _own_site(second)


def _own_site(stack):
    if not stack:
        return None, None
    return next((f for f in stack if not _is_installed(f[0])), stack[0]), stack[0]


def _describe(site) -> tuple[str, str]:
    """("file:line", " (via the innermost frame)" or "") of one use."""
    frame, innermost = site
    if frame is None:
        return "<unknown location>", ""
    via = ""
    if innermost is not None and innermost != frame:
        via = f" (via {format_where(innermost[0], innermost[1])})"
    return format_where(frame[0], frame[1]), via


def is_consumed(key) -> bool:
    entry = _consumed.get(id(key))
    return entry is not None and entry[0]() is key


def _forget(ident: int) -> None:
    with _lock:
        entry = _consumed.get(ident)
        if entry is not None and entry[0]() is None:
            del _consumed[ident]


def _check_prng_key(name, key, *args, **kwargs):
    # Frame 1 is the public jax.random function; its caller in jax.random itself means
    # one function calling another (bernoulli -> uniform): the key was consumed once.
    if name not in _NOT_CONSUMING \
            and not sys._getframe(2).f_code.co_filename.startswith(_RANDOM_DIR):
        consume(key, f"jax.random.{name}")
    return _original_check(name, key, *args, **kwargs)


# lax loops: name, (position, keyword) of the initial carry and of the body, and the index
# of the carry among the body's arguments
_LOOPS = (
    ("scan", (1, "init"), (0, "f"), 0),
    ("fori_loop", (3, "init_val"), (2, "body_fun"), 1),
    ("while_loop", (2, "init_val"), (1, "body_fun"), 0),
)
_original_loops: dict[str, object] = {}


def _loop_wrapper(loop, init_at: tuple, body_at: tuple, carry_index: int):
    @functools.wraps(loop)
    def guarded_loop(*args, **kwargs):
        args = list(args)
        init = args[init_at[0]] if len(args) > init_at[0] else kwargs.get(init_at[1])
        consumed = [(i, _consumed[id(leaf)]) for i, leaf in enumerate(jax.tree_util.tree_leaves(init))
                    if is_consumed(leaf)]
        if consumed:
            if len(args) > body_at[0]:
                args[body_at[0]] = _body_with_consumed_carry(args[body_at[0]], carry_index, consumed)
            elif body_at[1] in kwargs:
                kwargs[body_at[1]] = _body_with_consumed_carry(kwargs[body_at[1]], carry_index, consumed)
        return loop(*args, **kwargs)

    return guarded_loop


def _body_with_consumed_carry(body, carry_index: int, consumed):
    @functools.wraps(body)
    def body_with_consumed_carry(*args):
        leaves = jax.tree_util.tree_leaves(args[carry_index])
        with _lock:
            for i, (_, stack, what) in consumed:
                if i < len(leaves) and _is_key(leaves[i]):
                    _remember(leaves[i], stack, what)
        return body(*args)

    return body_with_consumed_carry


def reset() -> None:
    """Forget every key use (pytest --jaxguard: each test starts from none, as a module-level
    `KEY` shared by two tests is drawn from once in each)."""
    with _lock:
        _consumed.clear()


def install() -> None:
    global _original_check
    if _original_check is None:
        _original_check = random_core._check_prng_key
        random_core._check_prng_key = _check_prng_key
    for name, init_at, body_at, carry_index in _LOOPS:
        if name not in _original_loops:
            _original_loops[name] = loop = getattr(jax.lax, name)
            setattr(jax.lax, name, _loop_wrapper(loop, init_at, body_at, carry_index))


def uninstall() -> None:
    global _original_check
    if _original_check is not None:
        random_core._check_prng_key = _original_check
        _original_check = None
    for name, loop in _original_loops.items():
        setattr(jax.lax, name, loop)
    _original_loops.clear()
    with _lock:
        _consumed.clear()
