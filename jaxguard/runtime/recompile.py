"""Recompilation guard: warn when one function is traced more than `limit` times.

Traces are grouped by where the function is *defined* (file, line, name), not by the
function object, so `jax.jit(lambda ...)` re-created inside a loop counts as one function.
Each trace records what the arguments looked like; when the limit is passed, the last two
traces are compared to name the cause.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections import deque

from jax._src import core

from jaxguard.runtime.errors import RecompileWarning, format_where, warn_at_user

_lock = threading.Lock()
_HISTORY = 16  # traces remembered per function, to name the values a static arg took
_counts: dict[tuple, int] = {}  # group -> number of traces
_traces: dict[tuple, deque] = {}  # group -> last traces: (function id, signature)
_warned: set[tuple] = set()


def reset() -> None:
    with _lock:
        _counts.clear()
        _traces.clear()
        _warned.clear()


def _unwrap(fun):
    while isinstance(fun, functools.partial):
        fun = fun.func
    fun = getattr(fun, "__func__", fun)  # bound method -> function
    if not hasattr(fun, "__code__") and callable(fun):  # a callable object
        fun = getattr(type(fun).__call__, "__func__", type(fun).__call__)
    return fun


def _group(fun) -> tuple:
    base = _unwrap(fun)
    code = getattr(base, "__code__", None)
    name = getattr(base, "__qualname__", getattr(base, "__name__", repr(base)))
    if code is None:
        return ("<unknown>", 0, name)
    return (code.co_filename, code.co_firstlineno, name)


def _describe(value) -> str:
    if isinstance(value, core.Tracer):
        return value.aval.str_short(short_dtypes=True)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"array {value.dtype}{list(value.shape)}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_static(value) -> bool:
    return not isinstance(value, core.Tracer)


def _signature(fun, args, kwargs) -> dict:
    """{argument name: (kind, description, pytree structure)} of one trace."""
    import jax

    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
        named = dict(bound.arguments)
    except (TypeError, ValueError):
        named = {f"argument {i}": a for i, a in enumerate(args)} | dict(kwargs)
    sig = {}
    for name, value in named.items():
        leaves, tree = jax.tree_util.tree_flatten(value)
        if all(_is_static(leaf) for leaf in leaves) and not hasattr(value, "shape"):
            sig[name] = ("static", _describe(value), None)
        else:
            sig[name] = ("traced", ", ".join(_describe(leaf) for leaf in leaves), str(tree))
    return sig


def record(fun, args, kwargs, limit: int) -> None:
    group = _group(fun)
    sig = _signature(fun, args, kwargs)
    with _lock:
        history = _traces.setdefault(group, deque(maxlen=_HISTORY))
        history.append((id(_unwrap(fun)), sig))
        count = _counts[group] = _counts.get(group, 0) + 1
        if count <= limit or group in _warned:
            return
        _warned.add(group)
        cause, remedy = _explain(history)
    filename, lineno, name = group
    warn_at_user(f"{name} (defined at {format_where(filename, lineno)}) was traced and "
                 f"compiled {count} times (limit {limit}): {cause}. {remedy}",
                 RecompileWarning)


def _explain(history) -> tuple[str, str]:
    (prev_id, prev), (last_id, last) = history[-2], history[-1]
    static_changes = [name for name in last
                      if last[name][0] == "static" and prev.get(name) != last[name]]
    if static_changes:
        name = static_changes[0]
        values = []
        for _, sig in history:
            if name in sig and sig[name][1] not in values:
                values.append(sig[name][1])
        return (f"static argument '{name}' took the values {', '.join(values)}",
                (f"Pass '{name}' as a traced argument (drop it from static_argnums/"
                 f"static_argnames) if only its value changes, or keep it to a few values."))
    for name in last:
        if name in prev and last[name][0] == prev[name][0] == "traced":
            if last[name][2] != prev[name][2]:
                return (f"the pytree structure of argument '{name}' changed",
                        ("Keep containers (dicts, lists, dataclasses) the same shape "
                         "between calls."))
            if last[name][1] != prev[name][1]:
                return ((f"argument '{name}' changed shape or dtype: {prev[name][1]} -> "
                         f"{last[name][1]}"),
                        "Pad or bucket inputs to a few fixed shapes and keep dtypes fixed.")
    if set(last) != set(prev):
        return ("different arguments were passed",
                "Call the function with the same arguments each time.")
    if prev_id != last_id:
        return (("the function object is re-created on each call (jax.jit of a new "
                 "lambda/closure, or jax.jit inside a loop)"),
                "Create the jitted function once, outside the loop, and reuse it.")
    return ("the arguments looked the same; a jax config setting or a weak type changed",
            "Avoid changing jax.config between calls.")
