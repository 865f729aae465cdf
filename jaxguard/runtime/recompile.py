"""Recompilation guard: warn when one jitted function is traced more than `limit` times.

Two counts, both kept per *scope* (the program, or one test under the pytest plugin,
which calls `reset()` before each test):
- per jitted function object (a function with its jit options), while it lives: its
  traces are compared to name the cause (a static argument's values, a shape, a pytree);
- per definition (file, line, name): how many distinct jitted objects of it were traced
  with the same options, arguments and captured values (closure, partial arguments;
  arrays by shape), which is the cost of `jax.jit(lambda ...)` re-created inside a loop.
  Objects with other options or settings are other programs (a factory called with other
  settings), not a wasted compile.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
from collections import deque

from jax._src import core

from jaxguard.runtime.errors import RecompileWarning, format_where, warn_at_own_code

_lock = threading.Lock()
_HISTORY = 16  # traces remembered per function, to name the values a static arg took
_scope = 0  # bumped by reset(): counts of an earlier scope are stale
_recreated: dict[tuple, int] = {}  # (definition, options, arguments) -> objects traced
_warned: set[tuple] = set()


class Traces:
    """The traces of one jitted function object (it holds this), in the current scope."""

    def __init__(self):
        self.scope = -1
        self.history: deque = deque(maxlen=_HISTORY)
        self.warned = False
        # functions carried by static arguments -> traces: each is another program (equinox's
        # filter_jit shares one jitted wrapper between user functions of one name)
        self.programs: dict[tuple, int] = {}


def reset() -> None:
    """Start a new scope (the pytest plugin calls this before each test)."""
    global _scope
    with _lock:
        _scope += 1
        _recreated.clear()
        _warned.clear()


def _unwrap(fun):
    """The user's function under partials, methods and wrappers (`jax.vmap(f)` is f)."""
    while isinstance(fun, functools.partial) or hasattr(fun, "__wrapped__"):
        fun = fun.func if isinstance(fun, functools.partial) else fun.__wrapped__
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


def _captured(fun) -> tuple:
    """What `fun` carries besides its code: partial arguments and closure values, arrays
    by shape and dtype, through every wrapper (`jax.custom_vjp`, `functools.wraps`). A
    closure over other settings or another function is another program; one over another
    batch of the same shape is the same program compiled again."""
    values = []
    for _ in range(8):
        if isinstance(fun, functools.partial):
            values += [*fun.args, *fun.keywords.values()]
            fun = fun.func
            continue
        for cell in getattr(getattr(fun, "__func__", fun), "__closure__", None) or ():
            try:
                values.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        if not hasattr(fun, "__wrapped__"):
            break
        fun = fun.__wrapped__
    return tuple(_describe(v) if hasattr(v, "shape") and hasattr(v, "dtype")
                 else repr(v) if isinstance(v, (int, float, complex, str, bytes, type(None)))
                 else f"{type(v).__qualname__} object {id(v)}" for v in values)


def _describe(value) -> str:
    if isinstance(value, core.Tracer):
        return value.aval.str_short(short_dtypes=True)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"array {value.dtype}{list(value.shape)}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _carried_functions(values, depth: int = 0) -> list:
    """User functions inside static argument values (tuples, lists, dicts of them)."""
    found = []
    for value in values:
        if isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
            found.append(value)
        elif depth < 4 and isinstance(value, (tuple, list)):
            found += _carried_functions(value, depth + 1)
        elif depth < 4 and isinstance(value, dict):
            found += _carried_functions(value.values(), depth + 1)
    return found


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
            functions = _carried_functions([value])
            # a function by its name (its repr shows an address, new for each re-created one)
            shown = ", ".join(_group(f)[2] for f in functions) if functions else _describe(value)
            sig[name] = ("static", shown, None)
        else:
            sig[name] = ("traced", ", ".join(_describe(leaf) for leaf in leaves), str(tree))
    return sig


def record(traces: Traces, fun, jit_options, args, kwargs, limit: int) -> None:
    """Count one trace of the jitted function that holds `traces`; warn past `limit`."""
    group = _group(fun)
    sig = _signature(fun, args, kwargs)
    static = [v for v in (*args, *kwargs.values()) if not isinstance(v, core.Tracer)]
    carried = _carried_functions(static)
    # a carried function is told apart by its code and what it captured, as a jitted one is
    program = tuple((_group(f), _captured(f)) for f in carried)
    if carried:
        group = _group(carried[0])  # name the user's function, not the library's wrapper
    with _lock:
        if traces.scope != _scope:
            traces.scope, traces.warned = _scope, False
            traces.history.clear()
            traces.programs.clear()
        traces.history.append(sig)
        traces.programs[program] = count = traces.programs.get(program, 0) + 1
        message = None
        if count > limit and not traces.warned:
            traces.warned = True
            cause, remedy = _explain(traces.history)
            message = f"was traced and compiled {count} times (limit {limit}): " \
                      f"{cause}. {remedy}"
        elif count == 1:
            key = (group, repr(jit_options), repr(sig), _captured(fun), program)
            objects = _recreated[key] = _recreated.get(key, 0) + 1
            if objects > limit and key not in _warned:
                _warned.add(key)
                message = (f"was jitted anew and compiled {objects} times with the same "
                           f"arguments (limit {limit}): the function object is re-created "
                           f"on each call (jax.jit of a new lambda/closure, or jax.jit "
                           f"inside a loop). Create the jitted function once, outside the "
                           f"loop, and reuse it.")
    if message is not None:
        filename, lineno, name = group
        warn_at_own_code(f"{name} (defined at {format_where(filename, lineno)}) {message}",
                         RecompileWarning)


def _explain(history) -> tuple[str, str]:
    prev, last = history[-2], history[-1]
    static_changes = [name for name in last
                      if last[name][0] == "static" and prev.get(name) != last[name]]
    if static_changes:
        name = static_changes[0]
        values = []
        for sig in history:
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
    return (("the arguments looked the same; a jax config setting, a weak type or a "
             "cleared cache (jax.clear_caches) changed"),
            "Avoid changing jax.config or clearing caches between calls.")
