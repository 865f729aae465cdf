"""Key-reuse guard for typed (`jax.random.key`) and legacy (`PRNGKey`) keys.

JAX's own checker (`jax_debug_key_reuse`) only understands typed keys and switches off
fast dispatch for every jit call. jaxguard instead wraps the public `jax.random`
functions: each call consumes its key *object* (a concrete array eagerly, a tracer while
tracing), and a second consumption of the same object is an error. This costs nothing
per call of a compiled function: inside jit it runs once, at trace time.

Not consuming: `fold_in` (deriving many keys from one base key with different data is
the intended use), `clone`, `key_data`, `wrap_key_data`, `key_impl`, constructors.
"""

from __future__ import annotations

import functools
import threading
import weakref

import jax
import jax.random
from jax._src import core

from jaxguard.runtime.errors import KeyReuseError, format_where, user_frame_here

_NOT_CONSUMING = {"PRNGKey", "key", "key_data", "key_impl", "key_dtype", "wrap_key_data",
                  "clone", "fold_in", "random_gamma_p"}

_lock = threading.RLock()  # re-entrant: a weakref callback (GC) may run while it is held
_consumed: dict[int, tuple] = {}  # id(key) -> (weakref to key, where, what consumed it)
_local = threading.local()  # .inside: a wrapped function is running (inner calls ignored)
_originals: dict[str, object] = {}


def _is_key(value) -> bool:
    return isinstance(value, (jax.Array, core.Tracer))


def consume(key, what: str) -> None:
    """Mark `key` consumed by `what`; raise KeyReuseError if it was consumed before."""
    if not _is_key(key):
        return
    frame = user_frame_here()
    where = format_where(frame[0], frame[1]) if frame else "<unknown location>"
    ident = id(key)
    with _lock:
        previous = _consumed.get(ident)
        if previous is not None and previous[0]() is key:
            _, first_where, first_what = previous
            raise KeyReuseError(
                f"{where}: PRNG key reused by `{what}`: the same key was already consumed "
                f"by `{first_what}` at {first_where}, so both draw the same random bits. "
                f"Split it first: `key, subkey = jax.random.split(key)`.",
                where=where, op=what)
        _consumed[ident] = (weakref.ref(key, lambda _, i=ident: _forget(i)), where, what)


def is_consumed(key) -> bool:
    entry = _consumed.get(id(key))
    return entry is not None and entry[0]() is key


def _forget(ident: int) -> None:
    with _lock:
        entry = _consumed.get(ident)
        if entry is not None and entry[0]() is None:
            del _consumed[ident]


def _wrap(name: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(_local, "inside", False):
            return fn(*args, **kwargs)  # jax.random calling itself (bernoulli -> uniform)
        consume(args[0] if args else kwargs.get("key"), f"jax.random.{name}")
        _local.inside = True
        try:
            return fn(*args, **kwargs)
        finally:
            _local.inside = False
    return wrapper


def install() -> None:
    if _originals:
        return
    for name in dir(jax.random):
        fn = getattr(jax.random, name)
        if name.startswith("_") or name in _NOT_CONSUMING or not callable(fn) \
                or isinstance(fn, type):
            continue
        _originals[name] = fn
        setattr(jax.random, name, _wrap(name, fn))


def uninstall() -> None:
    for name, fn in _originals.items():
        setattr(jax.random, name, fn)
    _originals.clear()
    with _lock:
        _consumed.clear()
