"""What jaxguard knows of JAX's API by qualified name: its transformations, lax bodies,
abstract evaluations and PRNG functions. Plain data, no libcst: the per-module facts and the
project index (which summarises modules without libcst) read the same tables."""

from __future__ import annotations

import re

# Transformations whose function argument is traced with abstract values.
# qualified name -> (keyword naming static positions, keyword naming static names)
TRACING_TRANSFORMS: dict[str, tuple[str | None, str | None]] = {
    "jax.jit": ("static_argnums", "static_argnames"),
    "jax.pmap": ("static_broadcasted_argnums", None),
    "jax.vmap": (None, None),
    "jax.checkpoint": ("static_argnums", None),
    "jax.remat": ("static_argnums", None),
    "jax.ad_checkpoint.checkpoint": ("static_argnums", None),
    "jax.shard_map": (None, None),
    "jax.experimental.shard_map.shard_map": (None, None),
    "jax.experimental.pjit.pjit": ("static_argnums", "static_argnames"),
    "jax.make_jaxpr": ("static_argnums", None),
    "jax.eval_shape": (None, None),
    "equinox.filter_jit": (None, None),
    "equinox.filter_vmap": (None, None),
    "flax.nnx.jit": ("static_argnums", "static_argnames"),
    "flax.nnx.vmap": (None, None),
    "flax.nnx.remat": (None, None),
}

# jax.random functions that only reorder what they are given: one key reorders paired
# arrays alike, on purpose.
REORDERINGS = ("permutation", "shuffle")


def is_reordering(name: str | None, without_replacement: bool) -> bool:
    """`jax.random.permutation`/`shuffle`, or `choice(..., replace=False)`, which takes the
    first items of a permutation (`permutation(key, n)[:k]`, jax 0.10.2): one key selects
    the same rows of paired arrays."""
    if name is None or not name.startswith("jax.random."):
        return False
    tail = name.rsplit(".", 1)[-1]
    return tail in REORDERINGS or (tail == "choice" and without_replacement)

# Attributes of an array that say its form, not its numbers: a value read only through them
# is a shape template (numbers drawn for it correlate with nothing).
SHAPE_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size"})

# Functions of numpy and jax.numpy whose result is Python metadata of arrays, never an array
# (a shape, a dtype, a number, a flag), whatever they are given.
_METADATA_FUNCTIONS = (
    "shape", "ndim", "size", "dtype", "result_type", "iinfo", "finfo", "issubdtype", "isdtype", "can_cast",
    "promote_types", "isscalar", "iscomplexobj", "isrealobj", "broadcast_shapes",
)
METADATA_CALLS = frozenset(
    {f"{module}.{name}" for module in ("numpy", "jax.numpy") for name in _METADATA_FUNCTIONS}
    | {
        "jax.lax.broadcast_shapes", "jax.dtypes.result_type", "jax.dtypes.issubdtype", "jax.dtypes.canonicalize_dtype",
        "jax.tree_util.tree_structure", "jax.tree.structure", "jax.core.is_concrete",
    }
)

# Transformations that compile: their results are "jitted callables".
JIT_TRANSFORMS = frozenset(
    {"jax.jit", "jax.pmap", "jax.experimental.pjit.pjit", "equinox.filter_jit", "flax.nnx.jit"}
)

# lax control flow: qualified name -> positions (or keyword names) of traced bodies.
LAX_BODIES: dict[str, tuple[tuple[int, str], ...]] = {
    "jax.lax.scan": ((0, "f"),),
    "jax.lax.fori_loop": ((2, "body_fun"),),
    "jax.lax.while_loop": ((0, "cond_fun"), (1, "body_fun")),
    "jax.lax.cond": ((1, "true_fun"), (2, "false_fun")),
    "jax.lax.switch": ((1, "branches"),),
    "jax.lax.map": ((0, "f"),),
    "jax.lax.associative_scan": ((0, "fn"),),
}
# Haiku's wrappers take the same arguments (and run lax's loops inside a transform).
LAX_BODIES.update({name.replace("jax.lax.", "haiku."): bodies for name, bodies in LAX_BODIES.items() if name != "jax.lax.associative_scan"})

# lax loops that carry a value: qualified name -> (the body's position and keyword, the
# initial carry's position and keyword, the body's parameter that receives the carry).
LAX_CARRIES: dict[str, tuple[tuple[int, str], tuple[int, str], int]] = {
    "jax.lax.scan": ((0, "f"), (1, "init"), 0),
    "jax.lax.fori_loop": ((2, "body_fun"), (3, "init_val"), 1),
    "jax.lax.while_loop": ((1, "body_fun"), (2, "init_val"), 0),
}
LAX_CARRIES.update({name.replace("jax.lax.", "haiku."): where for name, where in LAX_CARRIES.items()})

# The lax loops among them: their body runs once per iteration.
LAX_LOOPS = frozenset({
    "jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.map",
    "haiku.scan", "haiku.fori_loop", "haiku.while_loop", "haiku.map",
})

# Differentiation: traces, but Python control flow on values stays legal.
GRAD_TRANSFORMS = frozenset(
    {
        "jax.grad", "jax.value_and_grad", "jax.jacrev", "jax.jacfwd", "jax.hessian", "jax.vjp", "jax.jvp",
        "jax.linearize", "equinox.filter_grad", "equinox.filter_value_and_grad", "equinox.filter_vjp",
        "equinox.filter_jvp", "flax.nnx.grad", "flax.nnx.value_and_grad",
    }
)

# Abstract evaluations: they trace a function with abstract values (for shapes, or the
# jaxpr) and never run it: no random numbers are drawn and nothing is cached for later
# calls, so "runs only once, at trace time" does not apply either.
# (flax.linen.tabulate runs the module under jax.eval_shape to list its shapes)
ABSTRACT_TRACES = frozenset({
    "jax.eval_shape", "jax.make_jaxpr", "equinox.filter_eval_shape", "equinox.filter_make_jaxpr", "flax.nnx.eval_shape",
    "flax.linen.tabulate",
})
# `jax.jit(f).lower(x)`, `jitted.trace(x)`: staged out and compiled, not run;
# `jitted.eval_shape(x)`: shapes only; a Flax module's `model.tabulate(key, x)`, like
# `flax.linen.tabulate`, evaluates it under jax.eval_shape to print a table of shapes.
ABSTRACT_METHODS = frozenset({"lower", "trace", "eval_shape", "tabulate"})
# Helpers named for them: `fast_eval_shape(f, x)`, `abstract_to_dot(f)(x)`, and functions of
# a module named for jaxprs (`jaxpr_info.make_model_info(f)(x)`).
_ABSTRACT_FUNCTION = re.compile(r"eval_shape|make_jaxpr|^abstract")
_ABSTRACT_MODULE = re.compile(r"^(jaxpr|eval_shape)")


def names_abstract_trace(name: str) -> bool:
    """A function that evaluates what it is given abstractly (ABSTRACT_TRACES, and helpers
    named for them)."""
    if name in ABSTRACT_TRACES:
        return True
    *modules, tail = name.split(".")
    return bool(_ABSTRACT_FUNCTION.search(tail)) or any(_ABSTRACT_MODULE.match(part) for part in modules)

# Host callbacks: the functions they receive run in Python with concrete values, not traced.
CALLBACK_NAMES = frozenset({"pure_callback", "io_callback", "callback", "id_tap", "id_print"})


def is_host_callback(name: str) -> bool:
    """`jax.pure_callback`, `jax.debug.callback`, ...: the function it is given runs later, on the host."""
    return name.rsplit(".", 1)[-1] in CALLBACK_NAMES

FUNCTION_APPLYING_PREFIXES = ("jax.", "equinox.", "flax.", "optax.")
FUNCTION_APPLYING_BUILTINS = frozenset({"builtins.map", "builtins.filter", "functools.reduce"})

# Pallas: kernels (and run_scoped bodies) receive mutable Refs, not arrays.
REF_KERNEL_TAKERS = frozenset(
    {
        "jax.experimental.pallas.pallas_call",
        "jax.experimental.pallas.run_scoped",
        "jax.experimental.pallas.core_map",
        "jax.experimental.pallas.kernel",
        "jax.experimental.pallas.tpu.emit_pipeline",
        "jax.experimental.pallas.mosaic_gpu.emit_pipeline",
    }
)

# Functions whose derivative their author defines: autodiff never differentiates their bodies
# (custom_root/custom_linear_solve: the solvers passed in are differentiated implicitly).
CUSTOM_DERIVATIVES = frozenset(
    {
        "jax.custom_vjp", "jax.custom_jvp", "equinox.filter_custom_vjp", "equinox.filter_custom_jvp",
        "jax.lax.custom_root", "jax.lax.custom_linear_solve",
    }
)


# Decorators that run a function's body once per arguments.
MEMOIZERS = frozenset({"functools.cache", "functools.lru_cache", "functools.cached_property"})


# PRNG: functions that make or derive a key without drawing from the key they are given.
KEY_MAKERS = frozenset({"jax.random.key", "jax.random.PRNGKey"})
NOT_CONSUMING = frozenset(
    {
        "jax.random.fold_in", "jax.random.key_data", "jax.random.key_impl", "jax.random.clone",
        "jax.random.wrap_key_data", "jax.random.key", "jax.random.PRNGKey",
    }
)
# A parameter named like this may be a key (whether it is one is read from its uses).
KEY_PARAM = re.compile(r"^(key|rng|prng|prng_key|rng_key|seed_key|\w+_key|\w+_rng)$")
# An annotation a key may carry (`jax.Array`, `PRNGKeyArray`, `chex.PRNGKey`, `Key[Array, ""]`,
# `Any`); a parameter annotated otherwise (`rng: Variable`, `key: str`) is not a key.
KEY_ANNOTATION = re.compile(r"Array|Key|ndarray|PRNG|Any|Tensor|Tree")
# Calls that look at a key, or pass it through, without drawing from it: by qualified name
# (array and tree utilities, printing, logging, device transfers) and by what their name
# says (`is_prng_key(key)`, `check_key(key)`, `log(key)`, `_accepts_args(fn, key=key)`).
KEY_NEUTRAL_PREFIXES = (
    "builtins.", "jax.debug.", "jax.numpy.", "jax.tree_util.", "jax.tree.", "numpy.", "logging.",
    "jax.device_put", "jax.device_get", "jax.block_until_ready",
)
KEY_LOOKING = re.compile(r"^_?(is|has|check|assert|validate|print|log|accepts|supports|can)(_|[A-Z]|$)")

# Calls that tell the user something is wrong (`warnings.warn`, `logger.warning`), by the
# last part of their name: with a `raise`, how code says it needs x64.
TELLING_CALLS = frozenset({"warn", "warning", "error", "critical"})

# The x64 flag by name, or x64 mode in words ("for x64 enabled runs", "under x64"): a
# comment or docstring that says it tells the reader the code runs with x64 on.
NAMES_X64 = re.compile(r"enable_x64|\bx64[ _-]?(mode|enabled|is enabled|on)\b|\b(enable|enabled|enabling|with|under) x64\b", re.I)

# Methods of jax.Array that return one jax.Array.
ARRAY_RETURNING_METHODS = frozenset(
    {
        "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip",
        "compress", "conj", "conjugate", "copy", "cumprod", "cumsum", "diagonal", "dot",
        "flatten", "max", "mean", "min", "prod", "ptp", "ravel", "repeat", "reshape",
        "round", "searchsorted", "sort", "squeeze", "std", "sum", "swapaxes", "take", "trace",
        "transpose", "var", "view", "block_until_ready",
    }
)
# Methods of jax.Array (and of the pytree containers a traced argument is made of): on a
# traced receiver their result is traced. Other methods are unknown (`model.dofs()`).
ARRAY_METHODS = ARRAY_RETURNING_METHODS | {
    "nonzero", "__getitem__", "__array__",
    # x.at[i].set(v) and friends
    "set", "add", "subtract", "multiply", "divide", "power", "apply", "get",
    # leaves of a traced dict / list pytree
    "values", "items", "pop",
}

# shard_map: called eagerly (`jax.shard_map(f, mesh=...)(x)` outside any trace) it runs f on
# every call, per shard, with concrete values: nothing is traced once and cached.
SHARD_MAPS = frozenset({"jax.shard_map", "jax.experimental.shard_map.shard_map"})

# Functions that call their first argument once per leaf of a pytree.
TREE_MAPS = frozenset({
    "jax.tree.map", "jax.tree_util.tree_map", "jax.tree_map", "jax.tree_util.tree_map_with_path", "jax.tree.map_with_path",
})

# Calls that apply a function to what they are given (`jax.tree.map(lambda k: normal(k),
# keys)`, `map(draw, keys)`): keys given to one may be drawn from, though the call is
# otherwise key-neutral.
KEY_APPLYING = TREE_MAPS | FUNCTION_APPLYING_BUILTINS

# Sources of a different value at each call, whatever the arguments.
NONDETERMINISTIC = ("random.", "numpy.random.", "time.", "datetime.", "uuid.", "secrets.", "os.urandom")
