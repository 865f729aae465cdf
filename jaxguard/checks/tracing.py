"""JG106-JG110 and JG701: tracing, control flow, recompilation (sharp bits: "Control Flow").

JG106-JG108 read the traced-ness dataflow of `jaxguard.lint.traced`: only values that are
traced on the path (derived from a non-static argument of a jit/vmap/pmap/lax body) are
flagged; `jax.grad` alone allows Python control flow.
"""

from __future__ import annotations

import os

import libcst as cst

from jaxguard.checks._common import (
    attribute_stores,
    descendants,
    names_in,
    one_line,
    resolving_in,
)
from jaxguard.lint import kinds
from jaxguard.lint.facts import (
    GRAD_TRANSFORMS,
    JIT_TRANSFORMS,
    LAX_LOOPS,
    TRACING_TRANSFORMS,
    FunctionInfo,
    argument,
    assigned_names,
    dotted_name,
    keyword,
    literal_int,
    positional,
)
from jaxguard.lint.jaxapi import ARRAY_METHODS
from jaxguard.lint.registry import Rule, register
from jaxguard.lint.traced import (
    NONE,
    TracedFlow,
    annotation_name,
    call_tail,
    describe,
    is_container,
    parameter_annotation,
    static_candidates,
    static_hint,
)
from jaxguard.lint.walk import Visitor, walk


def _short(ctx, node: cst.CSTNode, limit: int = 40) -> str:
    return one_line(ctx.code(node), limit)


def _by(ctx) -> str:
    function = ctx.function
    by = function.traced_by if function is not None and function.traced_by else "jax.jit"
    return by.rsplit(".", 1)[-1]


def _static_or(origins, ctx) -> str:
    names = static_candidates(origins, ctx.function, ctx.facts)
    if not names:
        return ""
    shown = ", ".join(f"'{n}'" for n in names)
    what = "is a Python value (not an array), make it" if len(names) == 1 else "are Python values (not arrays), make them"
    return f"; if {shown} {what} static: {static_hint(origins, ctx.function, ctx.facts)}"


def _constant(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.Imaginary)):
        return True
    if isinstance(node, cst.Name):
        return node.value in ("True", "False", "None")
    if isinstance(node, cst.UnaryOperation):
        return _constant(node.expression)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_constant(e.value) for e in node.elements)
    return False


class _TracedRule(Rule):
    """Shared: the origins of an expression in the current traced function."""

    def origins(self, node: cst.BaseExpression | None) -> frozenset[str]:
        if node is None or not self.ctx.in_traced:
            return NONE
        return TracedFlow.of(self.ctx).origins(node, self.ctx)


# JG106 -----------------------------------------------------------------------------------

_SUGGEST = {
    "if": "for arrays use jax.lax.cond(pred, true_fn, false_fn, ...) or jnp.where(pred, a, b)",
    "elif": "for arrays use jax.lax.cond / jax.lax.switch or jnp.where / jnp.select",
    "while": "for arrays use jax.lax.while_loop(cond_fn, body_fn, init)",
    "assert": "use jax.experimental.checkify.check (or equinox.error_if) for a run-time check",
    "conditional expression": "use jnp.where(pred, a, b) or jax.lax.select",
    "comprehension if": "filter with jnp.where / a mask instead",
    "and/or": "use jnp.logical_and / jnp.logical_or (or & and |)",
    "not": "use jnp.logical_not (or ~)",
    "bool()": "keep the predicate as an array and branch with jax.lax.cond or jnp.where",
    "for ... in range()": "use jax.lax.fori_loop(lower, upper, body_fn, init)",
}


@register
class PythonControlFlowOnTracer(_TracedRule):
    code = "JG106"
    name = "python-control-flow-on-tracer"
    default_on = False  # measured: mostly false on real code (see `what`)
    summary = "Python if/while/assert/and/or/not on a traced value raises ConcretizationTypeError"
    message = "Python control flow on a traced value: ConcretizationTypeError"
    fix_kind = "suggest"
    what = """
        Flags `if`, `elif`, `while`, `assert`, conditional expressions, `and`/`or`/`not`, `bool()`
        and `for i in range(n)` whose condition (or bound) depends on a traced, non-static argument
        of a function traced by `jit`, `vmap`, `pmap`, or a `lax` control-flow body. The message
        names every traced argument involved.

        Static values are not flagged: shapes, dtypes and dimension attributes (`x.ndim`,
        `v.data_shape`, `group.tangent_dim`, `u.ndim()`, `t.get_batch_axes()`), `is None` and
        `isinstance` tests (also inside `any(...)` over leaves), the truth value of a tuple, list
        or dict (a display, or a parameter annotated as one), comparisons with strings and pytree
        key paths, arguments with `in_axes=None` (also through `partial(jax.vmap, ...)`,
        `[0] + [None] * n` and bound methods; an `in_axes` entry computed at run time leaves its
        argument unjudged), the result of a module-local helper whose return value depends only
        on such values, code under `if not_jax_tracer(x):`, and `if p is None:` branches of a
        function that the module also calls eagerly (the eager path fills in what traced callers
        pass).

        Opt-in (select `JG106`): measured on real code, among the findings reviewers judged, 0
        real, 0 deliberate, 2 false on the 40-package tuning corpus (4 before values had to be
        proven traced), and 0 real, 1 deliberate, 30 false on packages and research code it was
        not tuned on (before that change): JAX raises ConcretizationTypeError at the first
        trace, so working code has none of these bugs left. A value counts as traced only when
        it comes from array operations on a traced argument (or a project function the index
        shows computes one); a call the linter cannot see (`model.dofs()`) gives an unknown
        value, which is not reported.
    """
    why = """
        While tracing, an argument is an abstract value: its shape and dtype are known, its value
        is not. Python needs a concrete `True`/`False` to pick a branch, so `if x < 3:` raises
        `ConcretizationTypeError` (or `TracerBoolConversionError`). Branches on shapes, dtypes,
        `is None` tests and static arguments are fine, and so is Python control flow under
        `jax.grad` alone. For arrays use `jax.lax.cond`, `jnp.where`, `jax.lax.select` or
        `jax.lax.while_loop`; declare an argument static (`static_argnames=("n",)`) only when it
        is a Python value that changes rarely (arrays cannot be static: the message suggests it
        only for arguments not annotated as arrays).
    """
    example = """
        import jax

        @jax.jit
        def f(x):
            if x < 3:
                return 3.0 * x**2
            return -4 * x
    """
    use_instead = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def f(x):
            return jnp.where(x < 3, 3.0 * x**2, -4 * x)
    """
    invalid = (
        # the sharp bits' jit example, through `jit` imported by name
        "from jax import jit\n@jit\ndef f(x):\n    if x < 3:\n        return 3. * x ** 2\n"
        "    else:\n        return -4 * x\n",
        # a loop over a traced bound: the seed's loop example without static_argnums
        "from jax import jit\ndef f(x, n):\n    y = 0.\n    for i in range(n):\n        y = y + x[i]\n"
        "    return y\nf = jit(f)\n",
        # derived values, while, and a vmap
        "import jax\nimport jax.numpy as jnp\ndef f(x):\n    total = jnp.sum(x)\n    while total > 1:\n"
        "        total = total / 2\n    return total\ng = jax.vmap(f)\n",
        # a conditional expression in a flax-style method under partial(jax.jit)
        "import jax\nfrom functools import partial\nclass Model:\n"
        "    @partial(jax.jit, static_argnums=(0,))\n    def __call__(self, x, scale):\n"
        "        return x * 2 if scale > 0 else x\n",
        # a lax.cond branch closing over the traced argument of its jitted parent
        "import jax\n@jax.jit\ndef f(x, y):\n    def branch(z):\n        assert y > 0\n        return z\n"
        "    return jax.lax.cond(x > 0, branch, lambda z: z, x)\n",
        # `and`, `not` and bool() on tracers in a lax.fori_loop body (the counter is traced)
        "from jax import lax\ndef body(i, acc):\n    keep = bool(acc > 0) and i\n    return acc + keep\n"
        "def run(x):\n    return lax.fori_loop(0, 10, body, x)\n",
    )
    valid = (
        # numpyro style: a branch taken only when the value is concrete
        "import jax\nfrom numpyro.util import not_jax_tracer\n@jax.jit\ndef f(x):\n"
        "    if not_jax_tracer(x):\n        print('concrete')\n    return x\n",
        # the seed's fixes: static_argnums, loops over constants and shapes, grad only
        "from jax import jit\ndef f(x):\n    if x < 3:\n        return 3. * x ** 2\n    else:\n"
        "        return -4 * x\nf = jit(f, static_argnums=(0,))\n",
        "from jax import jit\n@jit\ndef f(x):\n    for i in range(3):\n        x = 2 * x\n    return x\n",
        "from jax import jit\n@jit\ndef g(x):\n    y = 0.\n    for i in range(x.shape[0]):\n"
        "        y = y + x[i]\n    return y\n",
        "from jax import grad\ndef f(x):\n    if x < 3:\n        return 3. * x ** 2\n    else:\n"
        "        return -4 * x\nprint(grad(f)(2.))\n",
        "from jax import jit\ndef f(x, n):\n    y = 0.\n    for i in range(n):\n        y = y + x[i]\n"
        "    return y\nf = jit(f, static_argnums=(1,))\n",
        # shapes, dtypes, None checks, isinstance, len, static_argnames, defaults
        "import jax\nimport jax.numpy as jnp\nfrom functools import partial\n"
        "@partial(jax.jit, static_argnames=('training',))\n"
        "def apply(params, x, mask=None, training=False):\n"
        "    if x.ndim == 1 and x.shape[0] > 2:\n        x = x[None]\n"
        "    if mask is not None:\n        x = jnp.where(mask, x, 0.0)\n"
        "    if training:\n        x = x * 0.5\n    if isinstance(params, dict) and len(params) > 1:\n"
        "        x = x + 1\n    assert x.dtype == jnp.float32, x.dtype\n    return x\n",
        # optax style: an update function closed over concrete hyperparameters
        "import jax\ndef scale(step_size):\n    def update_fn(updates, state):\n"
        "        if step_size > 0:\n            updates = jax.tree.map(lambda g: g * step_size, updates)\n"
        "        return updates, state\n    return jax.jit(update_fn)\n",
        # equinox: filter_jit keeps non-arrays static
        "import equinox as eqx\n@eqx.filter_jit\ndef f(x, use_bias):\n    if use_bias:\n"
        "        return x + 1\n    return x\n",
        # vmap with in_axes=None for the flag; a helper whose arguments may be concrete
        "import jax\ndef f(x, flag):\n    return x if flag else -x\ng = jax.vmap(f, in_axes=(0, None))\n"
        "def helper(n):\n    return n if n > 0 else 0\n@jax.jit\ndef h(x):\n    return x * helper(3)\n",
        # a traced value that was overwritten by a concrete one
        "import jax\n@jax.jit\ndef f(x, n):\n    n = x.shape[0]\n    while n > 1:\n        n = n // 2\n"
        "    return x * n\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.covered: set[cst.CSTNode] = set()

    def _truth(self, test: cst.BaseExpression) -> frozenset[str]:
        """Origins of `bool(test)`: containers' truthiness is concrete."""
        if is_container(test, self.ctx.function):
            return NONE
        if isinstance(test, cst.BooleanOperation):
            return self._truth(test.left) | self._truth(test.right)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._truth(test.expression)
        return self.origins(test)

    def _check(self, node: cst.CSTNode, test: cst.BaseExpression, construct: str) -> None:
        if node in self.covered or not self.ctx.in_traced:
            return
        origins = self._truth(test)
        if not origins:
            return
        self.covered.update(descendants(test))
        self._report(node if construct not in ("if", "elif", "while") else test, test, construct, origins)

    def _report(self, node, shown, construct, origins) -> None:
        ctx = self.ctx
        message = (
            f"Python {construct} on a traced value: `{_short(ctx, shown)}` depends on {describe(origins)} "
            f"of a function traced by {_by(ctx)} (ConcretizationTypeError); {_SUGGEST[construct]}"
            f"{_static_or(origins, ctx)}"
        )
        self.report(node, message)

    def visit_If(self, node: cst.If) -> None:
        self._check(node.test, node.test, "elif" if node in self.covered else "if")

    def visit_Else(self, node: cst.Else) -> None:
        return None

    def visit_While(self, node: cst.While) -> None:
        self._check(node.test, node.test, "while")

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node.test, node.test, "assert")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node, node.test, "conditional expression")

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._check(node.test, node.test, "comprehension if")

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if node in self.covered or not self.ctx.in_traced:
            return
        origins = self._truth(node.left)
        if origins:
            self.covered.update(descendants(node))
            self._report(node, node.left, "and/or", origins)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._check(node, node.expression, "not")

    def visit_Call(self, node: cst.Call) -> None:
        if not self.ctx.in_traced or node in self.covered:
            return
        if self.ctx.qualname(node.func) == "builtins.bool" and len(node.args) == 1:
            self._check(node, node.args[0].value, "bool()")

    def visit_For(self, node: cst.For) -> None:
        it = node.iter
        if not self.ctx.in_traced or not isinstance(it, cst.Call):
            return
        if self.ctx.qualname(it.func) != "builtins.range":
            return
        origins = NONE
        for arg in it.args:
            origins |= self.origins(arg.value)
        if origins:
            self._report(it, it, "for ... in range()", origins)


# JG107 -----------------------------------------------------------------------------------

_CONVERTERS = {"builtins.float", "builtins.int", "builtins.complex", "operator.index"}
_CONCRETIZING_METHODS = {"item", "tolist", "__array__", "__float__", "__int__", "__index__"}
# numpy functions that are fine on a tracer (they only read its shape/dtype)
_NUMPY_OK = frozenset(
    {
        "numpy.shape", "numpy.ndim", "numpy.size", "numpy.dtype", "numpy.result_type",
        "numpy.issubdtype", "numpy.iinfo", "numpy.finfo", "numpy.promote_types", "numpy.isscalar",
        "numpy.can_cast", "numpy.iscomplexobj", "numpy.isrealobj", "numpy.broadcast_shapes",
    }
)


@register
class ConcretizeTracer(_TracedRule):
    code = "JG107"
    name = "concretize-tracer"
    default_on = False  # measured: mostly false on real code (see `what`)
    summary = "float()/int()/.item()/NumPy on a traced value raises ConcretizationTypeError"
    message = "a traced value converted to a Python or NumPy value"
    fix_kind = "suggest"
    what = """
        Flags `float()`, `int()`, `complex()`, `.item()`, `.tolist()`, `np.asarray()`,
        `np.array()` (and other NumPy or `math` functions) applied to a traced value inside a
        function traced by `jit`, `vmap`, `pmap` or a `lax` body. What JG106 knows to be static
        is not flagged; nor is a conversion under `if p is None:` in a function the module also
        calls eagerly, where the host computes what traced callers pass (`max_occupancy =
        int(occupancy * 1.25)` when no capacity was given).

        Opt-in (select `JG107`): measured on real code, among the findings reviewers judged, 0
        real, 0 deliberate, 1 false on the 40-package tuning corpus, and 0 real, 0 deliberate, 3
        false on packages and research code it was not tuned on: JAX raises at the first trace,
        so working code has none of these bugs left, and values the rule cannot prove static are
        taken for traced.
    """
    why = """
        A tracer has no value at trace time. Converting it to a Python number or a NumPy array
        raises `ConcretizationTypeError` or `TracerArrayConversionError`. Keep the value as a JAX
        array and use `jax.numpy` functions, use `jax.debug.print` to look at it, or declare the
        argument static (`static_argnames=...`) when it really is a Python value.
    """
    example = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def normalize(x, scale):
            return x / float(scale)
    """
    use_instead = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def normalize(x, scale):
            return x / jnp.asarray(scale, dtype=x.dtype)
    """
    invalid = (
        "import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return np.asarray(x) + 1\n",
        "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    loss = jnp.mean(x ** 2)\n"
        "    return loss.item()\n",
        "import jax\nfrom functools import partial\n@partial(jax.jit, static_argnames=('axis',))\n"
        "def f(x, n, axis=0):\n    return x.sum(axis) * int(n)\n",
        "import jax\nimport math\ndef step(carry, x):\n    return carry + math.sqrt(x), x.tolist()\n"
        "def run(xs):\n    return jax.lax.scan(step, 0.0, xs)\n",
    )
    valid = (
        "import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    n = int(np.prod(x.shape))\n"
        "    return x.reshape(n) * float(len(x))\n",
        "import jax\nimport numpy as np\ndef f(x):\n    return float(x) + np.asarray(x).sum()\n"
        "print(f(1.0), jax.grad(f))\n",
        "import jax\nfrom functools import partial\n@partial(jax.jit, static_argnums=(1,))\n"
        "def f(x, n):\n    return x * int(n)\n",
        "import jax\nclass Module:\n    def __init__(self, rate):\n        self.rate = rate\n"
        "    @jax.jit\n    def __call__(self, x):\n        return x * float(self.rate)\n",
        "import jax\nimport numpy as np\ndef loss(params, x, n_classes=10):\n"
        "    eye = np.eye(int(n_classes))\n    return (params * x).sum() + eye.sum()\n"
        "loss = jax.jit(loss)\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.inside_reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not ctx.in_traced:
            return
        func = node.func
        name = ctx.qualname(func)
        args = positional(node)
        origins = NONE
        what = ""
        if name in _CONVERTERS and len(args) == 1:
            origins = self.origins(args[0])
            what = f"{name.rsplit('.', 1)[-1]}()"
        elif name is not None and name.startswith("numpy.") and name not in _NUMPY_OK and args:
            if not name.startswith(("numpy.random.", "numpy.testing.")):
                origins = self.origins(args[0])
                what = f"np.{name[6:]}()"
        elif name is not None and name.startswith("math.") and args:
            for arg in args:
                origins |= self.origins(arg)
            what = f"{name}()"
        elif (
            name is None
            and isinstance(func, cst.Attribute)
            and func.attr.value in _CONCRETIZING_METHODS
            and not node.args
        ):
            origins = self.origins(func.value)
            what = f".{func.attr.value}()"
        if not origins or id(node) in self.inside_reported:
            return
        # `int(np.ceil(x))` is one finding, on the outer call
        self.inside_reported.update(id(n) for n in descendants(node) if isinstance(n, cst.Call))
        hint = static_hint(origins, ctx.function, ctx.facts)
        static = f"; if it is a Python value, make it static: {hint}" if hint else ""
        self.report(
            node,
            f"{what} needs a concrete value but `{_short(ctx, node)}` is traced (it depends on "
            f"{describe(origins)} of a function traced by {_by(ctx)}): ConcretizationTypeError / "
            f"TracerArrayConversionError; keep it a JAX array (jax.numpy), use jax.debug.print to "
            f"see it{static}",
        )


# JG108 -----------------------------------------------------------------------------------

# qualified name -> ((position, keyword), ...) of arguments that are shapes or sizes
_SHAPE_ARGS: dict[str, tuple[tuple[int, str], ...]] = {
    **{f"jax.numpy.{n}": ((0, "shape"),) for n in ("zeros", "ones", "empty", "full")},
    "jax.numpy.arange": ((0, "start"), (1, "stop"), (2, "step")),
    "jax.numpy.linspace": ((2, "num"),),
    "jax.numpy.logspace": ((2, "num"),),
    "jax.numpy.geomspace": ((2, "num"),),
    "jax.numpy.eye": ((0, "N"), (1, "M")),
    "jax.numpy.identity": ((0, "n"),),
    "jax.numpy.tri": ((0, "N"), (1, "M")),
    "jax.numpy.reshape": ((1, "shape"), (9, "newshape")),
    "jax.numpy.broadcast_to": ((1, "shape"),),
    "jax.numpy.tile": ((1, "reps"),),
    "jax.numpy.pad": ((1, "pad_width"),),
    "jax.numpy.split": ((1, "indices_or_sections"),),
    "jax.numpy.array_split": ((1, "indices_or_sections"),),
    "jax.lax.dynamic_slice": ((2, "slice_sizes"),),
    "jax.lax.iota": ((1, "size"),),
    "jax.lax.full": ((0, "shape"),),
    "jax.lax.broadcast": ((1, "sizes"),),
    "jax.lax.broadcast_in_dim": ((1, "shape"),),
    "jax.lax.reshape": ((1, "new_sizes"),),
    **{f"jax.random.{n}": ((1, "shape"),) for n in (
        "normal", "uniform", "randint", "bits", "gumbel", "laplace", "logistic", "exponential",
        "cauchy", "rademacher", "orthogonal", "ball")},
    **{f"jax.random.{n}": ((2, "shape"),) for n in ("bernoulli", "choice", "gamma", "poisson", "dirichlet")},
    **{f"jax.random.{n}": ((3, "shape"),) for n in ("categorical", "truncated_normal", "beta")},
}
_REPEAT = {"jax.numpy.repeat": (1, "repeats")}
# Functions whose output size depends on the values of their input, unless `size=` is given.
_VALUE_SIZED = {
    **{f"jax.numpy.{n}": "size" for n in (
        "nonzero", "flatnonzero", "argwhere", "unique", "unique_values", "unique_counts",
        "unique_inverse", "unique_all", "setdiff1d", "union1d", "intersect1d", "extract")},
    "jax.numpy.bincount": "length",
}
_METHOD_SHAPES = {"reshape", "broadcast_to"}


@register
class ValueDependentShape(_TracedRule):
    code = "JG108"
    name = "value-dependent-shape"
    default_on = False  # measured: mostly false on real code (see `what`)
    summary = "An array shape, size or boolean mask that depends on a traced value cannot be compiled"
    message = "an array shape depends on a traced value"
    fix_kind = "suggest"
    what = """
        Flags a traced (non-static) value used as a shape, size or slice bound inside a traced
        function: `jnp.zeros(n)`, `jnp.arange(n)`, `x[:n]`, `x.reshape(n, -1)`, random draws of
        shape `(n,)`, boolean-mask indexing `x[x > 0]` (also with the mask in a name: `keep = x > 0;
        x[keep]`, `x.at[jnp.isnan(x)]`), and `jnp.nonzero`/`jnp.unique`/`jnp.where(c)` without
        `size=`. Slicing a tuple of dimensions (`v.data_shape[:axis]`) is not flagged.

        Opt-in (select `JG108`): measured on real code, among the findings reviewers judged, 0
        real, 0 deliberate, 1 false on the 40-package tuning corpus, and 0 real, 3 deliberate,
        47 false on packages and research code it was not tuned on: JAX raises at the first
        trace, so working code has none of these bugs left, and sizes the rule cannot prove
        static (static dataclass fields of classes outside the project, helper results) are
        taken for traced.
    """
    why = """
        Under `jit` every array has a shape fixed at trace time. A shape that depends on an
        argument's value raises `ConcretizationTypeError` (or `NonConcreteBooleanIndexError`).
        Derive shapes from `x.shape` (specializing on shapes is fine), pass a static `size=`,
        use `jax.lax.dynamic_slice` for a moving window of fixed size, `jnp.where(mask, x, 0)`
        instead of a boolean mask, or declare the argument static (`static_argnames=("n",)`).
    """
    example = """
        import jax
        import jax.numpy as jnp

        def example_fun(length, val):
            return jnp.ones((length,)) * val

        bad_example_jit = jax.jit(example_fun)
    """
    use_instead = """
        import jax
        import jax.numpy as jnp

        def example_fun(length, val):
            return jnp.ones((length,)) * val

        good_example_jit = jax.jit(example_fun, static_argnums=(0,))
    """
    invalid = (
        "import jax\n@jax.jit\ndef f(x, n):\n    return x[:n]\n",
        "import jax\nimport jax.numpy as jnp\n@jax.vmap\ndef f(x):\n    return jnp.nonzero(x > 0)\n",
        "import jax\n@jax.jit\ndef f(x):\n    return x[x > 0].sum()\n",
        "import jax\nimport jax.numpy as jnp\nclass Layer:\n    def __call__(self, x, k):\n"
        "        return jnp.arange(k) + x.reshape(k, -1)\n    apply = jax.jit(__call__, static_argnums=0)\n",
        "import jax\nfrom jax import random\ndef body(i, key):\n    noise = random.normal(key, (i,))\n"
        "    return key\nout = jax.lax.fori_loop(0, 3, body, random.key(0))\n",
    )
    valid = (
        "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    n = x.shape[0] // 2\n"
        "    return x[:n] + jnp.zeros(n) + jnp.arange(len(x))[:n]\n",
        "import jax\nimport jax.numpy as jnp\nfrom functools import partial\n"
        "@partial(jax.jit, static_argnames=('n',))\ndef f(x, n):\n    return x[:n] * jnp.ones(n)\n",
        "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x, i):\n"
        "    return jax.lax.dynamic_slice(x, (i,), (2,)), x[i], jnp.nonzero(x, size=3)\n",
        "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x, start):\n"
        "    return jnp.linspace(start, 1.0, 5), jnp.where(x > 0, x, 0.0), x[x.shape[0] - 1:]\n",
        "import jax.numpy as jnp\ndef f(x, n):\n    return x[:n] + jnp.zeros(n)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if not ctx.in_traced:
            return
        name = ctx.qualname(node.func)
        if name in _SHAPE_ARGS or name in _REPEAT:
            specs = _SHAPE_ARGS.get(name) or (_REPEAT[name],)
            if name in _REPEAT and keyword(node, "total_repeat_length") is not None:
                return
            for index, kw in specs:
                value = argument(node, index, kw)
                origins = self.origins(value)
                if origins:
                    if name == "jax.numpy.arange" and kw == "start" and len(positional(node)) == 1 and keyword(node, "stop") is None:
                        kw = "stop"  # `arange(n)`: its one argument is the stop
                    self._report(node, value, origins, f"the {kw} of {name.replace('jax.numpy.', 'jnp.')}()")
                    return
        elif name in _VALUE_SIZED or name == "jax.numpy.where":
            args = positional(node)
            size_kw = _VALUE_SIZED.get(name, "size")
            if name == "jax.numpy.where" and (len(args) != 1 or keyword(node, "x") is not None):
                return
            if not args or keyword(node, size_kw) is not None:
                return
            origins = self.origins(args[0])
            if origins:
                short = name.replace("jax.numpy.", "jnp.")
                self.report(
                    node,
                    f"{short}() on a traced value has a value-dependent output size (it depends on "
                    f"{describe(origins)}): ConcretizationTypeError under {_by(ctx)}; pass a static "
                    f"`{size_kw}=` (with fill_value) or use jnp.where(cond, x, y)",
                )
        elif (
            name is None
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _METHOD_SHAPES
            and self.origins(node.func.value)
        ):
            origins = NONE
            for arg in node.args:
                if arg.keyword is None or arg.keyword.value in ("shape", "newshape"):
                    origins |= self.origins(arg.value)
            if origins:
                self._report(node, node, origins, f"the shape in .{node.func.attr.value}()")

    def visit_Subscript(self, node: cst.Subscript) -> None:
        ctx = self.ctx
        if not ctx.in_traced:
            return
        for element in node.slice:
            item = element.slice
            if isinstance(item, cst.Slice):
                origins = NONE
                for part in (item.lower, item.upper, item.step):
                    origins |= self.origins(part)
                if origins and self.origins(node.value):
                    hint = static_hint(origins, ctx.function, ctx.facts)
                    static = f", or make it static: {hint}" if hint else ""
                    self.report(
                        node,
                        f"slice bounds of `{_short(ctx, node)}` depend on {describe(origins)} (traced "
                        f"by {_by(ctx)}): slice sizes must be static; use jax.lax.dynamic_slice(x, "
                        f"(start,), (size,)) with a fixed size{static}",
                    )
                    return
            elif isinstance(item, cst.Index) and self._is_mask(item.value):
                origins = self.origins(item.value)
                if origins:
                    self.report(
                        node,
                        f"boolean mask index `{_short(ctx, node)}` on a traced value (it depends on "
                        f"{describe(origins)}) has a value-dependent shape: NonConcreteBooleanIndexError "
                        f"under {_by(ctx)}; use jnp.where(mask, x, 0) or a reduction with where=mask",
                    )
                    return

    def _report(self, node, value, origins, where) -> None:
        ctx = self.ctx
        hint = static_hint(origins, ctx.function, ctx.facts)
        static = f"; make it static: {hint}" if hint else "; derive it from x.shape or pass it as a static argument"
        self.report(
            node,
            f"{where} depends on {describe(origins)} (`{_short(ctx, value)}` is traced by {_by(ctx)}): "
            f"shapes must be known at trace time (ConcretizationTypeError){static}",
        )


    def _is_mask(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """A boolean array: a comparison, `~`/`&`/`|` of masks, `jnp.isnan(x)`, `jnp.logical_and`,
        or a name bound (only) to one of those (`keep = x > 0; x[keep]`)."""
        ctx = self.ctx
        if isinstance(node, cst.Comparison):
            return not all(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in node.comparisons)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
            return self._is_mask(node.expression, depth)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr)):
            return self._is_mask(node.left, depth) or self._is_mask(node.right, depth)
        if isinstance(node, cst.Call):
            return ctx.qualname(node.func) in _MASK_FUNCTIONS
        if isinstance(node, cst.Name) and depth < 3:
            owner = ctx.scope.lookup(node.value)
            if owner is None or owner.function is None or node.value in owner.params:
                return False
            values = owner.values.get(node.value, [])
            with resolving_in(ctx, owner):
                return bool(values) and all(v is not None and self._is_mask(v, depth + 1) for v in values)
        return False


_MASK_FUNCTIONS = frozenset(
    f"jax.numpy.{name}"
    for name in (
        "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isclose", "logical_and", "logical_or",
        "logical_not", "logical_xor", "greater", "greater_equal", "less", "less_equal", "equal",
        "not_equal", "signbit", "isin",
    )
)


# JG109 -----------------------------------------------------------------------------------


# Clocks: a loop that reads one times what it runs (a benchmark, an autotuner).
CLOCKS = frozenset({"time.perf_counter", "time.time", "time.monotonic", "time.perf_counter_ns", "time.time_ns", "timeit.default_timer"})


@register
class JitInLoop(Rule):
    code = "JG109"
    name = "jit-in-loop"
    summary = "jax.jit applied inside a loop: slow dispatch, and a retrace for each new function"
    message = "jax.jit built inside a loop or on every call: a new function object retraces and recompiles each time"
    fix_kind = "suggest"
    what = """
        Flags, inside a loop body: `jax.jit(...)` (or `pmap`, `equinox.filter_jit`,
        `flax.nnx.jit`) of a lambda, a `functools.partial`, a function defined in the loop or a
        method of an object the loop rebinds, and a jitted function defined in the loop (each a
        new function object every iteration: a retrace and recompile); and `jax.jit(f)(...)`
        of the same function every iteration (no retrace, but jit's slow dispatch path every
        time). `jax.jit(obj.method)(...)` is a bound method, new each time it is read, when
        `obj`'s module-local class defines `method`; a function the object stores (an
        attribute pinned in `__init__`, a static method) is the same object; when the class
        cannot be seen (`net.apply` of a Haiku transform, an object from another package) the
        message names both outcomes. The same outside loops, once per call of a function, is
        JG112 (opt-in).
    """
    why = """
        `jax.jit` caches compiled code per function object. A jit built around a lambda, a
        `functools.partial`, a function defined in the loop or a method of a new object is a new
        object each time: every iteration (or every call of the enclosing function) traces and
        compiles again, which can cost seconds per step. `jax.jit(f)(x)` of one module-level `f`
        in a loop finds `f`'s compiled code again (measured: one trace over five iterations),
        but re-wrapping and the slow dispatch path cost time on each iteration. Build the jitted
        function once, outside the loop (or at module level), and pass the changing values as
        arguments. Not flagged: a sweep over constant configurations (or any loop in a test,
        a benchmark or a tuning script: `benchmarks/`, `bench_*.py`, `tune_*.py`)
        where the function uses the loop variable (one compile per configuration is the point),
        a loop over anything whose value the function calls or names a collective's axis with
        (`transform.decompose(n)`, `psum(x, axes)`: the program itself changes, no argument
        can carry it),
        `jit(..., inline=True)` (inlined into the caller's trace), `jit(partial(lax.scan,
        step))` with `step` a closure (the scan would trace it on every call anyway),
        `jax.jit(f).lower(...).compile()` (an ahead-of-time compile, asked for each time), a
        jit (or a def jitted in the loop) whose calls in the loop all give a static argument
        (by position or by name, seen through `grad`/`vmap`) or an input shape from the loop
        (`jnp.linspace(a, b, n)`, also through `jnp.tile`, `concatenate` and the like: it
        compiles anyway), a
        jit rebuilt under an `if` whose test the loop changes (`if need_compile:`: rebuilt when
        something changed, not every iteration), a jit of each function of a collection the
        loop walks (`for f in fns: jax.jit(f)(x)`, or `f = getattr(module, name)` / `fns[name]`
        with `name` from the loop: a different function each time) or of a method of each
        object it walks (`for tester in testers: jax.pmap(tester.init)`), and
        `equinox.filter_jit` of an equinox transform made anew (equinox's wrappers are equal
        when their fields are, so its cache finds the first: only the slow path is reported).
    """
    example = """
        import jax
        import jax.numpy as jnp

        params = jnp.ones(3)
        for step in range(100):
            params = jax.jit(lambda p: p - 0.1 * p)(params)
    """
    use_instead = """
        import jax
        import jax.numpy as jnp

        update = jax.jit(lambda p: p - 0.1 * p)
        params = jnp.ones(3)
        for step in range(100):
            params = update(params)
    """
    invalid = (
        # a def jitted in the loop whose input changes values, not shape: the same program each time
        "import jax\nimport jax.numpy as jnp\nfor n in [64, 96, 128]:\n    x = jnp.linspace(-n, n, 64)\n    @jax.jit\n"
        "    def outer(r0):\n        return r0 * 2\n    r0s = jnp.tile(x[None], (10, 1))\n    outer(r0s)\n",
        # a window of one size moved along by the loop: the same shapes, re-wrapped each time
        "import jax\ndef decode_all(decode, z):\n    out = []\n    for i in range(0, z.shape[0], 64):\n"
        "        chunk = z[i:i + 64]\n        out.append(jax.pmap(decode)(chunk))\n    return out\n",
        # a guard the loop never changes: built again every iteration
        "import jax\nimport functools\ndef train(update, state, batches, use_jit):\n    n = 1\n"
        "    for batch in batches:\n        if use_jit:\n            step = jax.jit(functools.partial(update, n=n))\n"
        "        state = step(state, batch)\n    return state\n",
        # the same loop over what it is given, untimed: a compile per item
        "import jax\ndef run(make, items, x):\n    out = []\n    for cfg in items:\n        fn = make(cfg)\n"
        "        out.append(jax.jit(fn)(x))\n    return out\n",
        # a vmapped closure over nothing the loop changes: the same function made again
        "import jax\ndef sample(env_names, keys):\n    out = []\n    for env_name in env_names:\n"
        "        def one(key):\n            return key * 2\n"
        "        out.append(jax.jit(jax.vmap(one))(keys))\n    return out\n",
        # ... a closure over nothing the loop changes: the same function made again
        "import jax\ndef test_grads_finite(g, mus, xs):\n    for mu in mus:\n        f = g(mu)\n"
        "        def scalar(x):\n            return g(x).sum()\n        grad = jax.jit(jax.grad(scalar))\n"
        "        for x in xs:\n            assert grad(x) > f\n",
        # a factory makes a new function each iteration
        "import jax\nimport mylib\ndef check(t, names):\n    for name in names:\n"
        "        mine, ref = mylib.make(name), getattr(mylib, 'ref_' + name)\n"
        "        assert jax.jit(mine)(t) == jax.jit(ref)(t)\n",
        # a static argument the same every iteration: the new grad object is all that changes
        "import jax\ndef loss(x, mode):\n    return x * 2 if mode else x\ndef run(x, modes):\n    for mode in modes:\n"
        "        step = jax.jit(jax.grad(loss), static_argnames='mode')\n        x = step(x, True)\n    return x\n",
        # the same shardings every iteration: one program, wrapped again each time
        "import jax\ndef _shard(x):\n    return x\ndef place(modules, sharding):\n    for module in modules:\n"
        "        module.kernel = jax.jit(_shard, out_shardings=sharding)(module.kernel)\n",
        # a bound method is a new object every time it is read: jit's cache misses
        "import jax\ndef run(model, xs):\n    for x in xs:\n        y = jax.jit(model.step)(x)\n    return y\n",
        "import jax\ndef train(params, batches):\n    for batch in batches:\n"
        "        step = jax.jit(lambda p: p - batch)\n        params = step(params)\n    return params\n",
        # an array's method on the loop's value is data, which an argument carries
        "import jax\ndef train(params, batches):\n    for batch in batches:\n"
        "        step = jax.jit(lambda p: p - batch.mean())\n        params = step(params)\n    return params\n",
        "import jax\nfrom functools import partial\ndef loss(p, x):\n    return p * x\n"
        "def run(p, xs):\n    while xs:\n        p = jax.jit(loss)(p, xs.pop())\n    return p\n",
        "import jax\ndef run(batches, x):\n    for batch in batches:\n        @jax.jit\n        def f(x):\n"
        "            return x * batch\n        x = f(x)\n    return x\n",
        "import jax\ndef run(f, xs):\n    for x in xs:\n        x = jax.jit(jax.vmap(f))(x)\n    return x\n",
        # an equinox wrapper made anew, but equal to the last: no retrace, only the slow path
        "import equinox as eqx\ndef scan(test, chunks, y):\n    for chunk in chunks:\n"
        "        r = eqx.filter_jit(eqx.filter_vmap(test, in_axes=(None, 1)))(chunk, y)\n    return r\n",
        # a method its local class defines: a new bound method each time it is read
        "import jax\nclass Model:\n    def step(self, x):\n        return x\ndef run(xs):\n    m = Model()\n"
        "    for x in xs:\n        y = jax.jit(m.step)(x)\n    return y\n",
        # a method its class pins as an instance attribute: one object, only the slow path
        "import jax\nclass Loader:\n    def __init__(self):\n        self.next = self.next\n    def next(self, s):\n"
        "        return s\ndef run(xs):\n    m = Loader()\n    for x in xs:\n        y = jax.jit(m.next)(x)\n    return y\n",
        # a method of an object the loop rebinds: a new bound method every iteration
        "import jax\ndef fill(buffer, items):\n    for item in items:\n        buffer = jax.jit(buffer.insert)(item)\n"
        "    return buffer\n",
        # an object the loop makes anew from nothing that changes: a retrace every iteration
        "import jax\nclass Solver:\n    def __call__(self, x):\n        return x\ndef run(xs):\n    for x in xs:\n"
        "        solver = Solver()\n        y = jax.jit(solver)(x)\n    return y\n",
        # the same module-level function re-wrapped every iteration: slow dispatch
        "import jax\ndef step(x):\n    return x + 1\nx = 0.0\nfor _ in range(10):\n    x = jax.jit(step)(x)\n",
        # reshaped in the loop, but to one shape: the same compiled code every iteration
        "import jax\ndef f(x):\n    return x\ndef hot(xs):\n    for x in xs:\n        y = x.reshape(4, -1)\n"
        "        jax.jit(f)(y)\n",
    )
    valid = (
        # a vmapped closure over the environment the loop makes: each program differs
        "import jax\ndef sample(env_names, make, keys):\n    out = []\n    for env_name in env_names:\n"
        "        env = make(env_name)\n        def one(key, env=env):\n            return env.sample(key)\n"
        "        out.append(jax.jit(jax.vmap(one))(keys))\n    return out\n",
        # a sweep over functions of a module, named by the loop (an annotated assignment too)
        "import jax\nimport mylib\ndef check_all(x):\n    for name in ('sphere', 'rosenbrock'):\n"
        "        func: mylib.Fn = getattr(mylib, name)\n        @jax.jit\n        def target(v):\n"
        "            return func(v)\n        assert target(x) is not None\n",
        # each function of a table the loop walks: compiled once each, none wrapped again
        "import jax\ndef tag_all(fns, x):\n    out = {}\n    for name, fn in fns.items():\n"
        "        out[name] = jax.jit(fn)(x)\n    return out\n",
        # rebuilt only when the loop says it must (a fork changed the static sizes)
        "import jax\nimport functools\ndef train(update, state, batches):\n    need_compile, n = True, 1\n"
        "    for batch in batches:\n        if batch is None:\n            n += 1\n            need_compile = True\n"
        "        if need_compile:\n            step = jax.jit(functools.partial(update, n=n))\n            need_compile = False\n"
        "        state = step(state, batch)\n    return state\n",
        # ahead-of-time compilation: each `.lower(...).compile()` asks for a compile
        "import jax\ndef warm(engine, shapes):\n    out = {}\n    for n, shape in shapes.items():\n"
        "        out[n] = jax.jit(engine.prefill).lower(shape).compile()\n    return out\n",
        # an autotuner: it times one compile per candidate it is given
        "import time\nimport jax\ndef tune(make, candidates, x):\n    best = None\n    for cfg in candidates:\n"
        "        fn = make(cfg)\n        start = time.perf_counter()\n        jax.jit(fn)(x).block_until_ready()\n"
        "        best = min(best or 1e9, time.perf_counter() - start)\n    return best\n",
        # jit(grad(f)) remade each iteration, but its static argument is new each time anyway
        "import jax\ndef logl(model, kwargs):\n    return model(kwargs)\ndef test_models(models, kwargs):\n"
        "    for make in models:\n        model = make()\n"
        "        jax.jit(jax.grad(logl, argnums=1), static_argnums=0)(model, kwargs)\n",
        # another compiled program per iteration by design: the shardings come from the loop
        "import jax\ndef _shard(x):\n    return x\ndef place(modules, mesh):\n    for name, module in modules:\n"
        "        shardings = {'kernel': mesh[name]}\n"
        "        module.kernel = jax.jit(_shard, out_shardings=shardings['kernel'])(module.kernel)\n",
        # a test's sweep: the function closes over what the loop makes from its variable
        "import jax\ndef test_grads_finite(make, mus, xs):\n    for mu in mus:\n        f = make(mu)\n"
        "        def scalar(x):\n            return f(x).sum()\n        grad = jax.jit(jax.grad(scalar))\n"
        "        for x in xs:\n            assert grad(x) > 0\n",
        # each iteration looks up another existing function (jcm's test of its saturation formulas)
        "import jax\nimport mylib\ndef check(t, names):\n    for name in names:\n"
        "        mine, ref = getattr(mylib, name), getattr(mylib, 'ref_' + name)\n"
        "        assert jax.jit(mine)(t) == jax.jit(ref)(t)\n",
        # ... also built first and called after, the static argument given by name to jit
        # and by position to the call (ott's gradient test over `implicit`)
        "import jax\ndef loss(x, mode):\n    return x * 2 if mode else x\ndef run(x, modes):\n    for mode in modes:\n"
        "        step = jax.jit(jax.grad(loss), static_argnames='mode')\n        x = step(x, mode)\n    return x\n",
        # a sweep: each iteration has a new static value or a new shape, so it compiles anyway
        "import jax\nimport jax.numpy as jnp\ndef f(x, n):\n    return x * n\ndef sweep():\n    for n in range(3):\n"
        "        y = jax.jit(f, static_argnums=(1,))(jnp.ones(3), n)\n",
        "import jax\nimport jax.numpy as jnp\ndef f(x):\n    return x\ndef shapes():\n    for shape in ((1,), (3,)):\n"
        "        x = jnp.zeros(shape + (2,))\n        y = jax.jit(f)(x)\n",
        # a def jitted in the loop, given an input whose shape follows the loop (cosmocnc's grid sizes)
        "import jax\nimport jax.numpy as jnp\nfor n in [64, 96, 128]:\n    x = jnp.linspace(-5, 5, n)\n    @jax.jit\n"
        "    def outer(r0):\n        return r0 * 2\n    r0s = jnp.tile(x[None], (10, 1))\n    outer(r0s)\n",
        # ... or an input reshaped (or made by arange) with a shape from the loop
        "import jax\nimport jax.numpy as jnp\ndef f(x):\n    return x\ndef shapes():\n    for lead in ((1,), (3,), (2, 3)):\n"
        "        x = jnp.arange(6 * 4).reshape(lead + (-1,))\n        y = jax.jit(f)(x)\n",
        "import jax\nupdate = jax.jit(lambda p: p * 0.9)\nparams = 1.0\nfor _ in range(10):\n"
        "    params = update(params)\n",
        # a factory that returns the jitted step (flax/optax style): built once per call site
        "import jax\ndef make_train_step(model, tx):\n    @jax.jit\n    def step(state, batch):\n"
        "        return state\n    return step\n",
        # ... also when each is warmed up in the loop before it is kept (jax-fdm's constraints)
        "import jax\ndef build(constraints, x):\n    kept = []\n    for c in constraints:\n        def fun(p):\n"
        "            return p * c\n        fun_jit = jax.jit(fun)\n        fun_jit(x)\n"
        "        kept.append(dict(fun=fun_jit))\n    return kept\n",
        # a table of programs: each built in the loop, stored, and called later (jax-fem)
        "import jax\ndef make(i):\n    return lambda x: x * i\nclass Problem:\n    def __init__(self, n):\n"
        "        self.kernels = []\n        for i in range(n):\n            kernel = jax.jit(jax.vmap(make(i)))\n"
        "            self.kernels.append(kernel)\n",
        "import jax\ndef build(fns):\n    table = []\n    for f in fns:\n        @jax.jit\n        def g(x):\n"
        "            return f(x)\n        table.append(g)\n    return table\n",
        # compiling a table of distinct functions once
        "import jax\ndef compile_all(fns):\n    compiled = {}\n    for name, fn in fns.items():\n"
        "        compiled[name] = jax.jit(fn)\n    return compiled\n",
        # a method of each object the loop walks (turbozero's testers): another function each time
        "import jax\ndef start(testers, params):\n    states = []\n    for tester in testers:\n"
        "        states.append(jax.pmap(tester.init, axis_name='d')(params=params))\n    return states\n",
        # jit inside a traced function is inlined, not recompiled
        "import jax\n@jax.jit\ndef outer(x):\n    for i in range(3):\n        x = jax.jit(lambda v: v + i)(x)\n"
        "    return x\n",
        "def jit(f):\n    return f\nfor i in range(3):\n    y = jit(lambda v: v)(i)\n",
        # an autotuning sweep over constants compiles once per configuration on purpose
        "import jax\nimport itertools\nfor blocks, tile in itertools.product((4, 8), (128, 256)):\n"
        "    @jax.jit\n    def kernel(x):\n        return x.reshape(blocks, tile)\n    kernel(1.0)\n",
        # make_jaxpr traces on purpose
        "import jax\ndef show(f, x):\n    def g(v):\n        return f(v)\n    return jax.make_jaxpr(g)(x)\n",
        # once per call of a function, not per iteration: JG112 (opt-in)
        "import jax\ndef evaluate(model, x):\n    return jax.jit(lambda v: model(v) * 2)(x)\n",
        # inlined into the caller's trace
        "import jax\nfor i in range(3):\n    y = jax.jit(lambda x: x + 1, inline=True)(1.0)\n",
        # a test looping over configurations: one compile per configuration is the point
        "import jax\nimport jax.numpy as jnp\ndef test_dtypes(dtypes):\n    for dtype in dtypes:\n"
        "        def ones():\n            return jnp.ones(3, dtype)\n        assert jax.jit(ones)().dtype == dtype\n",
        # a sweep: the compiled function is built from something made from the loop variable
        "import jax\ndef make(smooth):\n    return lambda x: x * 2 if smooth else x\ndef trajectory(step, n):\n    return step\n"
        "for smooth in [True, False]:\n    step_fn = make(smooth)\n    rollout = jax.jit(trajectory(step_fn, 10))\n    rollout(1.0)\n",
        # a test's sweep: the object compiled is made from the loop variable (jaxns's tests)
        "import jax\nclass Search:\n    def __init__(self, model):\n        self.model = model\n"
        "    def __call__(self, key):\n        return self.model\ndef test_problems(a, b):\n"
        "    for name, model in [('a', a), ('b', b)]:\n        search = Search(model)\n"
        "        out = jax.jit(search)(key=jax.random.key(0))\n",
        # ... also when it is made from an outer loop's variable
        "import jax\ndef make(axes):\n    return lambda x: x.sum(axes)\ndef test_axes(xs):\n"
        "    for axes in [(0,), (1,)]:\n        for x in xs:\n            fn = make(axes)\n"
        "            fn = jax.jit(fn)\n            fn(x)\n",
        # an input sliced to a length from the loop: a new shape, so each iteration compiles anyway
        "import jax\ndef bench(scan_fn, uF, lengths):\n    for L in lengths:\n        u = uF[:L, :]\n"
        "        scan_fn = jax.jit(scan_fn)\n        scan_fn(u).block_until_ready()\n",
        # a timed sweep over models loaded by name (and unpacked from what loads them)
        "import time\nimport equinox as eqx\nfrom mylib import load_pretrained\ndef bench(ids):\n"
        "    for name in ['130m', '370m']:\n        model, _ = load_pretrained(name)\n        model = eqx.filter_jit(model)\n"
        "        start = time.time()\n        model(ids)\n        print(time.time() - start)\n",
        # a test's sweep: a jitted function defined in the loop reads the loop's case
        "import jax\ndef resample(x, scaled):\n    return x\ndef test_jit(cases, x):\n    for case in cases:\n"
        "        @jax.jit\n        def resampler(x):\n            return resample(x, scaled=case['scaled'])\n"
        "        assert resampler(x) is not None\n",
        # a sweep: the object whose method is compiled is made from the loop variable
        "import jax\nfrom functools import partial\ndef make(axis):\n    return axis\nfor axis_name in [None, 'i']:\n"
        "    model = make(partial(print, axis=axis_name))\n    out = jax.pmap(model.init, axis_name='i')(1.0)\n",
        # over what it is given: the loop's value is a collective's axis name, part of the program
        "import jax\ndef warm(mesh, groups, x):\n    for axes in groups:\n"
        "        jax.jit(jax.shard_map(lambda b, axes=axes: jax.lax.psum(b, axes), mesh=mesh))(x)\n",
        # ... or an object the compiled function calls, made from the loop's value
        "import jax\nimport mylib\ndef noise_levels(kinds, samples):\n    out = []\n    for kind in kinds:\n"
        "        transform = mylib.Transform(kind)\n        def propagate(n):\n            return transform.decompose(n)\n"
        "        out.append(jax.vmap(jax.jit(propagate))(samples))\n    return out\n",
    )

    per_call = False  # JG112 reports the per-call case this class finds

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # per function frame: loop depth, and defs/lambdas created inside a loop
        self.frames: list[list[int]] = [[0]]
        self.loop_defs: set[cst.CSTNode] = set()
        self.reported: set[cst.CSTNode] = set()
        self.loops: list[cst.CSTNode] = []
        self._assigned_in: dict[cst.CSTNode, set[str]] = {}

    @property
    def in_loop(self) -> bool:
        return self.frames[-1][0] > 0

    def visit_For(self, node: cst.For) -> None:
        self.frames[-1][0] += 1
        self.loops.append(node)

    def leave_For(self, original_node: cst.For) -> None:
        self.frames[-1][0] -= 1
        self.loops.pop()

    def visit_While(self, node: cst.While) -> None:
        self.frames[-1][0] += 1
        self.loops.append(node)

    def leave_While(self, original_node: cst.While) -> None:
        self.frames[-1][0] -= 1
        self.loops.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        info = self.ctx.facts.functions.get(node)
        if self.in_loop and info is not None and not self._outer_traced(info):
            self.loop_defs.add(node)
            for decorator in node.decorators:
                found = self.ctx.facts.transform_of(decorator.decorator, info.parent)
                if (
                    found is not None and found[0] in JIT_TRANSFORMS and self._called_in_loop(node.name.value)
                    and not self._inputs_reshaped_each_iteration(node.name.value)
                ):
                    self._report(decorator, "a jitted function defined inside a loop", function=node)
        self.frames.append([0])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.frames.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        if self.in_loop:
            self.loop_defs.add(node)
        self.frames.append([0])

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.frames.pop()

    def _outer_traced(self, info: FunctionInfo) -> bool:
        outer = self.ctx.facts.enclosing_function(info.parent)
        return outer is not None and outer.traced

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.in_traced:
            return
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and ctx.facts.is_abstract_trace(node, ctx.scope):
            self.reported.add(func.value)  # `jax.jit(f).lower(x).compile()`: an explicit compile, asked for each time
            return
        # jax.jit(f)(args): a jitted callable built and called in one expression
        if isinstance(node.func, cst.Call) and self._is_jit(node.func):
            built = node.func
            if keyword(built, "inline") is not None or self._traces_anyway(built):
                self.reported.add(built)  # judged here: not again as a jit built in a loop
                return
            if self.in_loop:
                if self._compiles_each_iteration(built, node):
                    # a new static value or shape every iteration: it compiles anyway (judged
                    # here: not again as a jit built in a loop)
                    self.reported.add(built)
                elif new_object := self._new_each_iteration(built):
                    self._report(
                        built,
                        f"{self._transform_name(built)} of {new_object} built and called inside a loop: "
                        "a new function object every iteration",
                        function=self._function_node(built),
                    )
                elif self._walks_functions(built):
                    pass  # `for f in fns: jax.jit(f)(x)`: each function compiled once, none again
                elif method := self._unknown_method(built):
                    self._report(
                        built,
                        f"{self._transform_name(built)}({method})(...) inside a loop wraps '{method}' again every "
                        f"iteration: if it is a bound method (a new object each time it is read) it retraces and "
                        "recompiles, and if not every call still goes through jit's slow path",
                        recompiles=False,
                    )
                else:
                    static = any(a.keyword is not None and a.keyword.value.startswith("static_") for a in built.args)
                    retrace = "no retrace unless its static arguments change" if static else "no retrace"
                    self._report(
                        built,
                        f"{self._transform_name(built)}(f)(...) inside a loop wraps the same function again every iteration: jit's cache "
                        f"finds the compiled code ({retrace}), but every call goes through jit's slow path",
                        recompiles=False,
                    )
                return
            fresh = self._fresh_function(built)
            if fresh and ctx.function is not None and not _in_test_or_main(ctx.function, ctx.path):
                self._report(
                    built,
                    f"{self._transform_name(built)} of {fresh} called straight away: a new function object on "
                    "every call of the enclosing function",
                    per_call=True,
                )
            return
        if (
            self._is_jit(node) and self.in_loop and self._used_in_loop(node) and not self._rebuilt_when_needed()
            and not self._compiled_anew_each_call(node)
        ):
            new_object = self._new_each_iteration(node)
            if new_object:
                self._report(
                    node,
                    f"{self._transform_name(node)} of {new_object} inside a loop: a new function object each iteration",
                    function=self._function_node(node),
                )

    def _used_in_loop(self, call: cst.Call) -> bool:
        """The jitted function is called in the loop: `step = jax.jit(...)` then `step(x)`. One
        stored for later (`table.append(jax.jit(f))`, `self.fns[i] = jax.jit(f)`) is built once
        per entry and compiled when first called: a table of programs, not a retrace per step."""
        statement = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
        if not isinstance(statement, cst.SimpleStatementLine):
            return True
        for small in statement.body:
            if isinstance(small, cst.Assign) and small.value is call:
                targets = [t.target for t in small.targets]
                if all(isinstance(t, cst.Name) for t in targets):
                    names = {t.value for t in targets}
                    return any(self._called_in_loop(n) for n in names) and not self._kept(names)
                return False
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and call in [a.value for a in small.value.args]:
                return False  # handed straight to a container or registry
        return True

    def _walks_functions(self, built: cst.Call) -> bool:
        """The jitted function is what the loop walks (`for name, f in fns.items():`), or a
        method of the object it walks (`for tester in self.testers: jax.pmap(tester.init)`):
        a different function each iteration, not the same one wrapped again."""
        args = positional(built)
        loop = self.loops[-1]
        target = args[0] if args else None
        while isinstance(target, cst.Attribute):
            target = target.value
        if not (isinstance(target, cst.Name) and isinstance(loop, cst.For)):
            return False
        walked = names_in(loop.target)
        if target.value in walked and target.value not in self._assigned_in_loop():
            return True
        if not isinstance(args[0], cst.Name):
            return False
        name = args[0].value
        # `f = getattr(module, name)` or `fns[name]`, `name` from the loop: an existing
        # function looked up, another one each iteration
        values = _values_assigned(loop.body, name)
        return bool(values) and all(_looked_up_by(value, walked) for value in values)

    def _rebuilt_when_needed(self) -> bool:
        """Built under an `if` whose test the loop changes (`if need_compile: step =
        jax.jit(partial(update, n=n)); need_compile = False`): a rebuild when something
        changed, not a new function every iteration."""
        loop = self.loops[-1]
        changed = self._assigned_in_loop()
        for statement in reversed(self.ctx.statement_stack):
            if statement is loop:
                return False
            if isinstance(statement, cst.If) and names_in(statement.test) & changed:
                return True
        return False

    def _assigned_in_loop(self) -> set[str]:
        """The names the innermost loop's body binds; once per loop."""
        loop = self.loops[-1]
        if loop not in self._assigned_in:
            self._assigned_in[loop] = assigned_names(loop.body)
        return self._assigned_in[loop]

    def _kept(self, names: set[str]) -> bool:
        """The loop stores the jitted function for later (`table.append(step)`,
        `out.append(Constraint(fun=step))`, `self.fns[i] = step`, `yield step`): one compiled
        program per entry, each warmed up or not, is what the loop is for."""
        kept = []

        class _Stores(Visitor):
            def visit_Call(self, node: cst.Call) -> None:
                if isinstance(node.func, cst.Attribute) and node.func.attr.value in _STORING:
                    if any(names_in(arg.value) & names for arg in node.args):
                        kept.append(node)

            def visit_Assign(self, node: cst.Assign) -> None:
                stored = any(isinstance(t.target, (cst.Attribute, cst.Subscript)) for t in node.targets)
                if stored and names_in(node.value) & names:
                    kept.append(node)

            def visit_Yield(self, node: cst.Yield) -> None:
                if node.value is not None and names_in(node.value) & names:
                    kept.append(node)

        walk(self.loops[-1].body, _Stores())
        return bool(kept)

    def _called_in_loop(self, name: str) -> bool:
        return bool(self._calls_in_loop(name))

    def _calls_in_loop(self, name: str) -> list[cst.Call]:
        found = []

        class _Calls(Visitor):
            def visit_Call(self, node: cst.Call) -> None:
                if isinstance(node.func, cst.Name) and node.func.value == name:
                    found.append(node)

        walk(self.loops[-1].body, _Calls())
        return found

    def _new_each_iteration(self, call: cst.Call) -> str:
        """Why the function `call` jits is a new object in every iteration of the loop, or ""."""
        fresh = self._fresh_function(call)
        if fresh == "a lambda" or fresh.endswith("(...)") or fresh == "a functools.partial":
            return fresh
        if self._defined_in_loop(call):
            return fresh or "a function defined in the loop"
        if self._walks_functions(call):
            return ""
        receiver = self._rebound_receiver(call)
        if receiver:
            args = positional(call)
            if isinstance(args[0], cst.Name):
                return f"'{receiver}' (the loop makes it anew)"
            return f"a method of '{receiver}', which the loop rebinds"
        return self._bound_method(call)

    def _bound_method(self, call: cst.Call) -> str:
        """`jax.jit(obj.step)` where `obj`'s class is known and `step` is a method it defines:
        reading `obj.step` makes a new bound method object each time, and jit's cache is keyed
        by the function object."""
        target = self._method_target(call)
        if target is None or self._method_kind(target) != "bound":
            return ""
        return f"the bound method '{self.ctx.code(target)}' (a new object each time it is read)"

    def _unknown_method(self, call: cst.Call) -> str:
        """`jax.jit(net.apply)` where what `net` is cannot be seen: a bound method (new each
        time) or a stored function (`hk.transform(f).apply`, an attribute pinned in `__init__`)."""
        target = self._method_target(call)
        return self.ctx.code(target) if target is not None and self._method_kind(target) == "unknown" else ""

    def _method_target(self, call: cst.Call) -> cst.Attribute | None:
        args = positional(call)
        target = args[0] if args else None
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)):
            return None
        if self.ctx.qualname(target) is not None:
            return None  # `module.function`
        owner = self.ctx.scope.lookup(target.value.value)
        if owner is not None and target.value.value in owner.classes:
            return None  # `Model.method`: the class's plain function
        return target

    def _method_kind(self, target: cst.Attribute) -> str:
        """"bound" when `target.value`'s class is a module-local class that defines the method
        (and no instance attribute of that name hides it), "stored" when the instance keeps a
        function of that name, "unknown" otherwise."""
        klass = self.ctx.facts.object_class(target.value, self.ctx.scope)
        if klass is None:
            return "unknown"
        name = target.attr.value
        stored = any(
            store.attr.value == name
            for method in klass.defs.values() if method.params
            for store in attribute_stores(method.node, {method.params[0]})
        )
        if stored:
            return "stored"  # `self.next = self.next` in `__post_init__`: one object, kept
        method = klass.defs.get(name)
        if method is None:
            return "unknown"  # inherited, or a class attribute
        if any(self.ctx.facts.decorator_name(d, klass) in ("staticmethod", "builtins.staticmethod") for d in method.decorators):
            return "stored"
        return "bound"

    def _compiles_each_iteration(self, built: cst.Call, call: cst.Call) -> bool:
        """`jax.jit(f, static_argnums=(2,))(a, b, j)` with `j` from the loop, or an argument
        made in the loop with a shape from the loop (`jnp.zeros(shape + (n,))` over shapes):
        every iteration traces and compiles anew, so wrapping `f` again costs nothing more."""
        varying = self._varying_in_loop()
        spec = self.ctx.facts.jit_calls.get(built)
        args = positional(call)
        params = self._jitted_params(built)
        positions = {*(spec.argnums if spec else ()), *(params.index(n) for n in (spec.argnames if spec else ()) if n in params)}
        static_args = [args[i] for i in positions if i < len(args)]
        static_args += [a.value for a in call.args if a.keyword is not None and spec and a.keyword.value in spec.argnames]
        if any(names_in(arg) & varying for arg in static_args):
            return True
        # `jax.jit(_shard, out_shardings=shardings["kernel"])` with shardings from the loop:
        # each iteration asks for another compiled program, which no hoisting can share
        configured = [a.value for a in built.args if a.keyword is not None and a.keyword.value in _COMPILE_OPTIONS]
        if any(names_in(value) & varying for value in configured):
            return True
        return any(self._made_in_loop_with_shape_from(arg, varying, 0) for arg in args)

    def _inputs_reshaped_each_iteration(self, name: str) -> bool:
        """Every call of the jitted def `name` in the loop gives it an input made in the loop
        with a shape from the loop: each iteration compiles anyway, defined there or not."""
        varying = self._varying_in_loop()
        calls = self._calls_in_loop(name)
        return bool(calls) and all(
            any(self._made_in_loop_with_shape_from(arg, varying, 0) for arg in positional(call)) for call in calls
        )

    def _varying_in_loop(self) -> set[str]:
        """The names whose value the innermost loop changes: those its body binds and its target."""
        loop = self.loops[-1]
        return self._assigned_in_loop() | (names_in(loop.target) if isinstance(loop, cst.For) else set())

    def _jitted_params(self, built: cst.Call) -> list[str]:
        """The parameters of the function `built` jits, seen through transforms that keep a
        signature (`jax.jit(jax.grad(loss), static_argnames="mode")`), when they are known."""
        args = positional(built)
        target = args[0] if args else None
        for _ in range(4):
            if isinstance(target, cst.Name) and target.value in self._assigned_in_loop():
                target = _assignment_in(self.loops[-1].body, target.value)
            if not (isinstance(target, cst.Call) and self.ctx.qualname(target.func) in _SIGNATURE_KEEPING):
                break
            inner = positional(target)
            target = inner[0] if inner else None
        info = self.ctx.facts.function_for(target, self.ctx.scope) if target is not None else None
        return list(info.params) if info is not None else []

    def _compiled_anew_each_call(self, built: cst.Call) -> bool:
        """`step = jax.jit(f, static_argnames="mode")` in a loop, and every call of `step`
        there gives it a static value from the loop: each iteration compiles anyway."""
        statement = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
        names = set()
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Assign) and small.value is built:
                names = {t.target.value for t in small.targets if isinstance(t.target, cst.Name)}
        calls = [c for name in names for c in self._calls_in_loop(name)]
        return bool(calls) and all(self._compiles_each_iteration(built, c) for c in calls)

    def _shape_from(self, made: cst.BaseExpression, varying: set[str], depth: int = 0) -> bool:
        """An array made with a shape that comes from the loop: `jnp.zeros(shape + (n,))`,
        `jnp.arange(n)`, `jnp.linspace(a, b, n)`, `x.reshape(leading_shape + (h, 2))`,
        `x[:L]`, or array code that keeps the shape of such an array made in the loop
        (`jnp.tile(x[None], (batch, 1))` with `x = jnp.linspace(-5, 5, n)`)."""
        if depth > 4:
            return False
        if isinstance(made, cst.Subscript):
            # `uF[:L]` changes its length with L; `x[i:i + 64]` moves a window of one size
            return any(_slice_length_varies(element.slice, varying) for element in made.slice) or (
                self._made_in_loop_with_shape_from(made.value, varying, depth)
            )
        if not isinstance(made, cst.Call):
            return False
        tail = (self.ctx.qualname(made.func) or "").rsplit(".", 1)[-1] or (call_tail(made.func) or "")
        args = positional(made)
        if tail == "linspace":
            num = keyword(made, "num") or (args[2] if len(args) > 2 else None)
            return num is not None and bool(names_in(num) & varying)
        if tail == "arange":
            return any(names_in(arg) & varying for arg in args)
        if tail in _SHAPED_CONSTRUCTORS and made.args:
            return bool(names_in(made.args[0].value) & varying)
        if isinstance(made.func, cst.Attribute) and made.func.attr.value in _RESHAPING_METHODS:
            return any(names_in(a.value) & varying for a in made.args)
        if tail in _SHAPE_KEEPING and args:
            first = args[0]
            inputs = [e.value for e in first.elements] if isinstance(first, (cst.List, cst.Tuple)) else [first]
            return any(self._made_in_loop_with_shape_from(value, varying, depth) for value in inputs)
        return False

    def _made_in_loop_with_shape_from(self, value: cst.BaseExpression, varying: set[str], depth: int) -> bool:
        """`value` (or the array it indexes: `x[None]`) is a name the loop binds to an array
        whose shape comes from the loop."""
        while isinstance(value, cst.Subscript):
            value = value.value
        if not (isinstance(value, cst.Name) and value.value in self._assigned_in_loop()):
            return False
        made = _assignment_in(self.loops[-1].body, value.value)
        return made is not None and self._shape_from(made, varying, depth + 1)

    def _rebound_receiver(self, call: cst.Call) -> str:
        """`jax.jit(buffer.insert)` where the loop body assigns `buffer`: a bound method of a
        new object each iteration; `jax.jit(solver)` where it assigns `solver`: a new object."""
        args = positional(call)
        target = args[0] if args else None
        while isinstance(target, cst.Attribute):
            target = target.value
        if not isinstance(target, cst.Name) or not self.loops:
            return ""
        return target.value if target.value in self._assigned_in_loop() else ""

    def _traces_anyway(self, call: cst.Call) -> bool:
        """`jit(partial(lax.scan, step))(...)` with `step` a closure (made anew by each call of
        the function that defines it): the lax loop would trace and compile it without jit too."""
        args = positional(call)
        partial = args[0] if args else None
        if not (isinstance(partial, cst.Call) and self.ctx.qualname(partial.func) == "functools.partial"):
            return False
        inner = positional(partial)
        if len(inner) < 2 or self.ctx.qualname(inner[0]) not in LAX_LOOPS:
            return False
        body = self.ctx.facts.function_for(inner[1], self.ctx.scope)
        return body is not None and (isinstance(body.node, cst.Lambda) or body.parent.kind == "function")

    def _function_node(self, call: cst.Call) -> cst.CSTNode | None:
        """The code that makes the jitted function (for `_sweep`): a lambda, partial or def,
        or the loop's assignment of the object whose method is jitted."""
        args = positional(call)
        if not args:
            return None
        if isinstance(args[0], cst.Call) and self.ctx.facts.transform_of(args[0].func, self.ctx.scope) is not None:
            return self._function_node(args[0]) or args[0]  # `jax.jit(jax.vmap(step))`: step's code
        if isinstance(args[0], (cst.Lambda, cst.Call)):
            return args[0]
        info = self.ctx.facts.function_for(args[0], self.ctx.scope)
        if info is not None:
            return info.node
        receiver = self._rebound_receiver(call)
        value = _assignment_in(self.loops[-1].body, receiver) if receiver else None
        if value is None or receiver in names_in(value):
            return None  # `buffer = jax.jit(buffer.insert)(x)`: state carried across iterations
        return value

    def _transform_name(self, call: cst.Call) -> str | None:
        """The transform `call` applies (`jax.jit`, `jax.pmap`, ...), as messages name it."""
        found = self.ctx.facts.transform_of(call.func, self.ctx.scope)
        return found[0] if found is not None else self.ctx.qualname(call.func)

    def _is_jit(self, call: cst.Call) -> bool:
        """A compiling transform applied to a function (not make_jaxpr, which traces on purpose)."""
        return call in self.ctx.facts.jit_calls and self._transform_name(call) in JIT_TRANSFORMS

    def _fresh_function(self, call: cst.Call) -> str:
        args = positional(call)
        if not args:
            return ""
        target = args[0]
        if isinstance(target, cst.Lambda):
            return "a lambda"
        if isinstance(target, cst.Call):
            inner = self.ctx.qualname(target.func) or ""
            if inner == "functools.partial":
                return "a functools.partial"
            if inner.startswith("equinox.filter_") and self.ctx.qualname(call.func) == "equinox.filter_jit":
                return ""  # equinox's wrappers are equal when their fields are: its jit cache finds the first
            return f"{_short(self.ctx, target.func, 30)}(...)"  # `jax.vmap(f)`: a new function per call
        info = self.ctx.facts.function_for(target, self.ctx.scope)
        if info is not None and self.ctx.function is not None and info.parent is self.ctx.function.scope:
            return f"the nested function '{info.name}'"
        return ""

    def _defined_in_loop(self, call: cst.Call) -> bool:
        args = positional(call)
        if not args:
            return False
        info = self.ctx.facts.function_for(args[0], self.ctx.scope)
        return info is not None and info.node in self.loop_defs

    def _report(self, node, what, recompiles: bool = True, function: cst.CSTNode | None = None, per_call: bool = False) -> None:
        """Report a finding of this rule: JG109 reports the loop cases, JG112 the per-call one."""
        if per_call != self.per_call:
            return
        if node in self.reported or (self.in_loop and self._sweep(function)):
            return
        self.reported.add(node)
        effect = "it retraces and recompiles each time" if recompiles else "it costs time on every iteration"
        self.report(node, f"{what}: {effect}; build it once, outside, and pass the changing values as arguments")

    def _sweep(self, function: cst.CSTNode | None) -> bool:
        """A loop around the call (in this function) runs over Python constants (a
        configuration sweep or autotuning), or is in a test, and the compiled function uses its
        loop variable: one compile per configuration is the point."""
        if function is None:
            return False
        owner = self.ctx.function
        if owner is not None and owner.node is function:
            owner = owner.parent.function  # a jitted `def` in the loop: the loop is its enclosing function's
        in_tests = owner is not None and _in_test_or_main(owner, self.ctx.path)
        depth = self.frames[-1][0]
        for loop in self.loops[len(self.loops) - depth:]:
            if not isinstance(loop, cst.For):
                continue
            varying = _loop_dependent_names(loop)
            if varying & self._program_parts(function):
                return True  # over any iterable: what makes the program changes, no argument can carry it
            if (in_tests or self._constant_iterable(loop.iter, 0) or self._timed(loop)) and varying & names_in(function):
                return True
        return False

    def _program_parts(self, function: cst.CSTNode) -> set[str]:
        """Names the compiled function calls (`step_fn(x)`, `wavelet.decompose(n)`; not an
        array's method) or gives as a mapped axis's name (`psum(x, axes)`): they make the
        program itself, which no array argument can carry."""
        parts: set[str] = set()
        for node in descendants(function):
            if not isinstance(node, cst.Call):
                continue
            func = node.func
            if isinstance(func, cst.Name):
                parts.add(func.value)
            elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value not in ARRAY_METHODS:
                parts.add(func.value.value)
            name = self.ctx.qualname(func) or ""
            axis = keyword(node, "axis_name")
            if axis is None and name in _AXIS_NAMING:
                args = positional(node)
                index = _AXIS_NAMING[name]
                axis = args[index] if len(args) > index else None
            if axis is not None:
                parts |= names_in(axis)
        return parts

    def _timed(self, loop: cst.For) -> bool:
        """The loop reads a clock: it benchmarks or autotunes what it compiles, one
        compile per candidate on purpose."""
        return any(
            isinstance(node, cst.Call) and self.ctx.qualname(node.func) in CLOCKS for node in descendants(loop.body)
        )

    def _constant_iterable(self, node: cst.BaseExpression, depth: int) -> bool:
        if depth > 4:
            return False
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            return all(_constant(e.value) for e in node.elements)
        if isinstance(node, cst.Call):
            name = self.ctx.qualname(node.func) or ""
            if name == "builtins.range":
                return all(literal_int(a.value) is not None for a in node.args)
            if name in ("itertools.product", "builtins.zip", "builtins.enumerate", "itertools.combinations"):
                return all(self._constant_iterable(a.value, depth + 1) or literal_int(a.value) is not None for a in node.args)
            return False
        if isinstance(node, cst.Name):
            owner = self.ctx.scope.lookup(node.value)
            values = owner.values.get(node.value) if owner is not None else None
            if values and len(values) == 1 and values[0] is not None:
                return self._constant_iterable(values[0], depth + 1)
            # imported from a project module that binds it to literals (the project index)
            project = self.ctx.facts.project
            return not values and project is not None and project.constant_collection(self.ctx.qualname(node))
        if isinstance(node, cst.Attribute):
            return False
        return False


@register
class JitPerCall(JitInLoop):
    code = "JG112"
    name = "jit-per-call"
    summary = "jax.jit of a new function called straight away compiles on every call of the enclosing function"
    message = "jax.jit of a new function called straight away: traces and compiles on every call of the enclosing function"
    default_on = False
    fix_kind = "suggest"
    what = """
        Flags `jax.jit(<lambda | nested function | partial(...) | transform(...)>)(args)` (or
        `pmap`, `equinox.filter_jit`, `flax.nnx.jit`) called straight away in a function,
        outside any loop, except in code that runs once (`main`, test functions and test
        modules), `jit(..., inline=True)`, and `jit(partial(lax.scan, step))` with `step` a
        closure. Opt-in: whether it matters depends on how often the function is called, which
        the linter cannot see. Measured on 38 real JAX packages it was worth fixing in 1 of 6
        findings (a `size()` method called every training step); the other 5 ran once or
        under an outer jit (setup, synchronization and evaluation utilities): an 83%
        false-alarm rate.
    """
    why = """
        The function object is new on every call of the enclosing function, so jit's cache never
        hits: every call traces and compiles again. In a function called once that costs one
        compile (often less than running op by op); in a function called every step it costs a
        compile per step. Build the jitted function once (at module level, in `__init__`, or
        cached) and pass the changing values as arguments.
    """
    example = """
        import jax

        def evaluate(model, x):
            return jax.jit(lambda v: model(v) * 2)(x)
    """
    use_instead = """
        import jax

        @jax.jit
        def evaluate(params, x):
            return params * x * 2
    """
    invalid = (
        "import jax\ndef evaluate(model, x):\n    return jax.jit(lambda v: model(v) * 2)(x)\n",
        "import equinox as eqx\nfrom functools import partial\ndef apply(model, xs):\n"
        "    return eqx.filter_jit(partial(model, key=None))(xs)\n",
        "import jax\nclass Buffer:\n    def size(self, state):\n        def psize(s):\n            return jax.lax.psum(s, 'x')\n"
        "        return jax.pmap(psize, axis_name='x')(state)[0]\n",
    )
    valid = (
        # functions that run once
        "import jax\ndef test_double():\n    assert jax.jit(lambda v: v * 2)(1.0) == 2.0\n",
        "import jax\ndef main():\n    def rollout(x):\n        return x + 1\n    print(jax.jit(rollout)(1.0))\n",
        # jit of a lax loop over a closure: the scan would trace it on every call anyway
        "import jax\nfrom functools import partial\ndef run(kernel, state, keys):\n    def one_step(s, k):\n"
        "        return kernel(k, s), s\n    return jax.jit(partial(jax.lax.scan, one_step))(state, keys)\n",
        # inlined into the caller's trace
        "import jax\ndef add(a, b):\n    return jax.jit(lambda x, y: x + y, inline=True)(a, b)\n",
        # a module-level function: jit's cache finds it again
        "import jax\ndef double(x):\n    return x * 2\ndef run(x):\n    return jax.jit(double)(x)\n",
        # in a loop: JG109
        "import jax\ndef run(xs):\n    for x in xs:\n        y = jax.jit(lambda v: v + 1)(x)\n    return y\n",
    )

    per_call = True


def _in_test_or_main(function: FunctionInfo, path: str) -> bool:
    """Code that runs once, or compiles each case on purpose: a program's `main`, a test
    function, any function of a test module (pytest's naming: `test_*.py`, `*_test.py`), or
    of a benchmark or tuning script (`benchmarks/`, `bench_*.py`, `tune_*.py`), which
    compiles each configuration it measures."""
    module = os.path.basename(path)
    folders = os.path.normpath(path).split(os.sep)[:-1]
    return (
        function.name == "main"
        or function.name.startswith("test")
        or module.startswith(("test_", "bench_", "benchmark_", "tune_"))
        or module in ("bench.py", "benchmark.py", "benchmarks.py")
        or module.endswith(("_test.py", "_bench.py", "_benchmark.py"))
        or any(folder in ("benchmark", "benchmarks") for folder in folders)
    )


def _loop_dependent_names(loop: cst.For) -> set[str]:
    """The loop variables, and names the loop body assigns from them (`step_fn = make(smooth)`),
    or a function it defines that reads them (a closure over `f = make(mu0)`), transitively;
    not state updated from itself (`total = total + x`)."""
    varying = names_in(loop.target)
    assignments: list[tuple[set[str], set[str]]] = []

    class _Collect(Visitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            targets = {name for t in node.targets for name in names_in(t.target)}
            assignments.append((targets, names_in(node.value)))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            if node.value is not None:  # `func: Target = getattr(functions, name)`
                assignments.append((names_in(node.target), names_in(node.value)))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            assignments.append(({node.name.value}, names_in(node.body)))
            return False

    walk(loop.body, _Collect())
    changed = True
    while changed:
        changed = False
        for targets, used in assignments:
            if used & varying and not targets <= varying and not targets & used:
                varying |= targets
                changed = True
    return varying


# Collectives and the position of the mapped axis's name they take.
_AXIS_NAMING = {
    **{f"jax.lax.{name}": 1 for name in ("psum", "pmean", "pmax", "pmin", "all_gather", "all_to_all", "ppermute", "psum_scatter")},
    "jax.lax.axis_index": 0,
}

# Container methods that keep what they are given.
_STORING = frozenset({"append", "extend", "insert", "add", "setdefault", "update", "put"})

# Array constructors whose first argument is the shape.
_SHAPED_CONSTRUCTORS = frozenset({"zeros", "ones", "empty", "full", "arange", "linspace", "eye"})
# jit options that select another compiled program when they change
_COMPILE_OPTIONS = frozenset({"in_shardings", "out_shardings", "device", "backend", "abstracted_axes", "compiler_options"})
_RESHAPING_METHODS = frozenset({"reshape", "broadcast_to", "resize"})
# jnp functions whose result keeps the shape of (or grows with) their first array argument
_SHAPE_KEEPING = frozenset({
    "tile", "repeat", "broadcast_to", "concatenate", "stack", "hstack", "vstack", "outer", "expand_dims",
    "atleast_1d", "atleast_2d", "transpose", "meshgrid",
})


def _values_assigned(block: cst.CSTNode, name: str) -> list[cst.BaseExpression] | None:
    """The values `block` assigns to `name` (`a, b = x, y` item by item); None where one
    cannot be read (an unpacked call, an augmented assignment)."""
    values: list[cst.BaseExpression] = []
    unreadable = []

    class _Collect(Visitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                target = target.target
                if isinstance(target, cst.Name) and target.value == name:
                    values.append(node.value)
                elif isinstance(target, (cst.Tuple, cst.List)) and name in names_in(target):
                    items = node.value.elements if isinstance(node.value, (cst.Tuple, cst.List)) else None
                    for i, element in enumerate(target.elements):
                        if isinstance(element.value, cst.Name) and element.value.value == name:
                            if items is None or len(items) != len(target.elements) or isinstance(items[i], cst.StarredElement):
                                unreadable.append(node)
                            else:
                                values.append(items[i].value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, cst.Name) and node.target.value == name:
                unreadable.append(node)

    walk(block, _Collect())
    return None if unreadable else values


def _looked_up_by(value: cst.BaseExpression, keys: set[str]) -> bool:
    """`getattr(obj, name)`, `table[name]`, `table.get(name)` with `name` among `keys`."""
    if isinstance(value, cst.Subscript):
        return bool(names_in(value.slice[0]) & keys) if len(value.slice) == 1 else False
    if isinstance(value, cst.Call):
        args = positional(value)
        if isinstance(value.func, cst.Name) and value.func.value == "getattr" and len(args) >= 2:
            return bool(names_in(args[1]) & keys)
        if isinstance(value.func, cst.Attribute) and value.func.attr.value == "get" and args:
            return bool(names_in(args[0]) & keys)
    return False


def _slice_length_varies(index: cst.BaseSlice, varying: set[str]) -> bool:
    """A slice one of whose ends (not both) comes from the loop: its length changes."""
    if not isinstance(index, cst.Slice):
        return False
    ends = [bool(end is not None and names_in(end) & varying) for end in (index.lower, index.upper)]
    return ends[0] != ends[1]


def _assignment_in(block: cst.CSTNode, name: str) -> cst.CSTNode | None:
    """The value of the first `name = ...` (or `name, other = ...`) in `block`."""
    found: list[cst.CSTNode] = []

    class _Collect(Visitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if not found and any(
                (isinstance(t.target, cst.Name) and t.target.value == name)
                or (isinstance(t.target, (cst.Tuple, cst.List)) and name in names_in(t.target))
                for t in node.targets
            ):
                found.append(node.value)

    walk(block, _Collect())
    return found[0] if found else None


# Transforms whose result takes the arguments of the function they transform.
_SIGNATURE_KEEPING = frozenset(
    {"jax.grad", "jax.value_and_grad", "jax.vmap", "jax.checkpoint", "jax.remat", "equinox.filter_grad", "equinox.filter_value_and_grad"}
)


# JG110 -----------------------------------------------------------------------------------

_UNHASHABLE_CALLS = {"builtins.list", "builtins.dict", "builtins.set", "builtins.bytearray"}


@register
class UnhashableStaticArg(Rule):
    code = "JG110"
    name = "unhashable-static-arg"
    summary = "An unhashable static argument of a jitted function (a list, dict, array, or a __hash__ over an array)"
    message = "an unhashable value passed at a static position of a jitted function"
    fix_kind = "none"
    what = """
        Flags a list, dict or set (literal, comprehension or `list(...)`/`dict(...)`/`set(...)`)
        or an array passed to a jitted function at a position declared static with
        `static_argnums` or `static_argnames` (matched positionally and by keyword); and a
        `__hash__` that hashes an array field (`hash((self.x, self.mul))` with `self.x` a JAX
        array), which makes every instance, e.g. a static `self`, unhashable. A parameter handed
        on is judged by what callers pass, not by its annotation (`size: list[int]` given
        `.shape` tuples), so it is not flagged.
    """
    why = """
        Static arguments are part of the compilation cache key, so they must be hashable:
        `jax.jit(f, static_argnums=1)(x, [1, 2])` raises `ValueError: Non-hashable static
        arguments are not supported`. Arrays are not hashable either. Pass a tuple (or a
        frozen dataclass), or make the argument non-static.
    """
    example = """
        import jax
        from functools import partial

        @partial(jax.jit, static_argnames=("axes",))
        def total(x, axes):
            return x.sum(axis=axes)

        total(1.0, axes=[0, 1])
    """
    use_instead = """
        import jax
        from functools import partial

        @partial(jax.jit, static_argnames=("axes",))
        def total(x, axes):
            return x.sum(axis=axes)

        total(1.0, axes=(0, 1))
    """
    invalid = (
        # ... over one axis, an array
        "import jax\nimport numpy as np\ndef f(x, n):\n    return x\ng = jax.jit(f, static_argnums=(1,))\ng(1.0, np.prod([[2, 3]], axis=0))\n",
        "import jax\ndef f(x, dims):\n    return x\ng = jax.jit(f, static_argnums=(1,))\ng(1.0, [1, 2])\n",
        "import jax\ndef f(x, cfg):\n    return x\njax.jit(f, static_argnums=1)(1.0, {'a': 1})\n",
        # `def f` then `f = jax.jit(f, ...)`: the jitted one is what the name holds
        "import jax\ndef fun(world, x):\n    return x\nfun = jax.jit(fun, static_argnums=0)\nfun({'a': 1}, 2)\n",
        # NumPy's elementwise math on an array is an array
        "import jax\nimport numpy as np\ndef f(x, s):\n    return x\ng = jax.jit(f, static_argnums=(1,))\n"
        "def run(n):\n    return g(1.0, 0.1 * np.power(np.arange(n), -0.25))\n",
        "import jax\nimport jax.numpy as jnp\nfrom functools import partial\n"
        "@partial(jax.jit, static_argnums=(1,))\ndef f(x, shape):\n    return x\nf(1.0, shape=jnp.array([2, 3]))\n",
        "import jax\n@jax.jit\ndef g(x):\n    return x\ndef f(x, opts):\n    return x\n"
        "h = jax.jit(f, static_argnames='opts')\nh(1.0, [i for i in range(3)])\n",
        # the Sharp Bits' "jit with methods": __hash__ over an array field of a static self
        "import jax\nimport jax.numpy as jnp\nfrom functools import partial\nclass Scaler:\n"
        "    def __init__(self, x: jnp.ndarray, mul: bool):\n        self.x = x\n        self.mul = mul\n"
        "    @partial(jax.jit, static_argnums=0)\n    def calc(self, y):\n        return self.x * y if self.mul else y\n"
        "    def __hash__(self):\n        return hash((self.x, self.mul))\n",
        # ... a NumPy array made in __init__
        "import jax\nimport numpy as np\nclass Spec:\n    def __init__(self, shape):\n        self.shape = np.asarray(shape)\n"
        "    def __hash__(self):\n        return hash(self.shape)\n",
    )
    valid = (
        # the name also bound by a plain `def` (a notebook's later cell): which one runs is not known
        "import jax\nfun = jax.jit(lambda world, x: x, static_argnums=0)\ndef fun(p):\n    return p\nfun({'a': 1})\n",
        # a NumPy reduction over every axis is a NumPy scalar: hashable
        "import jax\nimport numpy as np\ndef f(x, n):\n    return x\ng = jax.jit(f, static_argnums=(1,))\ng(1.0, np.prod([2, 3], dtype=int))\n",
        # ... and NumPy's elementwise math on numbers (ornax's default HMC step size)
        "import jax\nimport numpy as np\ndef f(x, s):\n    return x\ng = jax.jit(f, static_argnums=(1,))\n"
        "def run(n_dims, step=None):\n    if step is None:\n        step = 0.1 * np.power(n_dims, -0.25)\n    return g(1.0, step)\n",
        # a parameter annotated `list[int]` that callers give a `.shape` tuple (skrl's noises)
        "import jax\nfrom functools import partial\n@partial(jax.jit, static_argnames=('shape',))\ndef f(x, shape):\n"
        "    return x\ndef sample(x, size: list[int]):\n    return f(x, size)\n",
        # a parameter with a default that no caller passes keeps its (hashable) default
        "import jax\nfrom functools import partial\ndef train(x, use_exact):\n    def loss(v, exact=use_exact):\n"
        "        return _loss(v, exact)\n    @partial(jax.jit, static_argnums=(1,))\n    def _loss(v, exact):\n"
        "        return v.sum()\n    grad = jax.grad(loss)\n    return grad(x)\n",
        "import jax\ndef f(x, dims):\n    return x\ng = jax.jit(f, static_argnums=(1,))\ng([1.0, 2.0], (1, 2))\n",
        "import jax\nfrom functools import partial\n@partial(jax.jit, static_argnames=('axes',))\n"
        "def total(x, axes):\n    return x\ntotal([1.0], axes=(0,))\n",
        "import jax\n@jax.jit\ndef f(x, y):\n    return x\nf([1.0], {'a': 2.0})\n",
        "import jax\ndef f(x, n):\n    return x\ng = jax.jit(f, static_argnums=(1,))\ng({'w': 1.0}, 3)\n",
        # a hash over the static description only
        "import jax.numpy as jnp\nclass Scaler:\n    def __init__(self, x: jnp.ndarray, mul: bool):\n        self.x = x\n"
        "        self.mul = mul\n    def __hash__(self):\n        return hash((self.x.shape, self.mul))\n",
        # a NumPy dtype (etils' ArraySpec): hashable, no array
        "import jax\nimport numpy as np\nclass Spec:\n    def __init__(self, shape, dtype):\n        self.shape = tuple(shape)\n"
        "        self.dtype = np.dtype(dtype)\n    def __hash__(self):\n        return hash((self.shape, self.dtype))\n",
        # jax.numpy's shape arithmetic gives a tuple, not an array (fenbux's binomial)
        "import jax\nimport jax.numpy as jnp\nfrom functools import partial\n@partial(jax.jit, static_argnums=(1,))\n"
        "def draw(key, shape):\n    return jax.random.normal(key, shape)\ndef f(key, a, b):\n"
        "    return draw(key, jnp.broadcast_shapes(jnp.shape(a), jnp.shape(b)))\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        spec = ctx.facts.jitted_spec(node.func, ctx.scope)
        if spec is None or not (spec.argnums or spec.argnames):
            return
        target = self._target(node.func)
        params = list(target.params) if target is not None else []
        static_names = set(spec.argnames)
        static_positions = set()
        for index in spec.argnums:
            if params and -len(params) <= index < len(params):
                static_positions.add(index % len(params))
                static_names.add(params[index])
            elif index >= 0:
                static_positions.add(index)
        for name in spec.argnames:
            if name in params:
                static_positions.add(params.index(name))
        position = 0
        for arg in node.args:
            if arg.star:
                return
            if arg.keyword is None:
                at, label = position, f"position {position}"
                position += 1
                if at not in static_positions:
                    continue
                if at < len(params):
                    label = f"'{params[at]}' (position {at})"
            else:
                if arg.keyword.value not in static_names:
                    continue
                label = f"'{arg.keyword.value}'"
            what = self._unhashable(arg.value)
            if what:
                self.report(
                    arg.value,
                    f"{what} passed to static argument {label} of a jitted function: static "
                    f"arguments must be hashable (ValueError: Non-hashable static arguments); pass a tuple",
                )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        info = self.ctx.facts.functions.get(node)
        if info is None or info.name != "__hash__" or not info.class_name or not info.params:
            return
        arrays = _array_attributes(self.ctx.facts, info.parent)
        receiver = info.params[0]
        for hashed in _hashed_values(node):
            if (
                isinstance(hashed, cst.Attribute)
                and isinstance(hashed.value, cst.Name)
                and hashed.value.value == receiver
                and hashed.attr.value in arrays
            ):
                self.report(
                    hashed,
                    f"__hash__ hashes '{receiver}.{hashed.attr.value}', an array: arrays are unhashable, so hashing "
                    f"an instance (as jit does with a static argument) raises TypeError; hash static fields only",
                )

    def _unhashable(self, value: cst.BaseExpression) -> str:
        ctx = self.ctx
        if isinstance(value, (cst.List, cst.ListComp)):
            return "a list"
        if isinstance(value, (cst.Dict, cst.DictComp)):
            return "a dict"
        if isinstance(value, (cst.Set, cst.SetComp)):
            return "a set"
        if isinstance(value, cst.Call):
            name = ctx.qualname(value.func)
            if name in _UNHASHABLE_CALLS:
                return f"a {name.rsplit('.', 1)[-1]}"
        if isinstance(value, cst.Name):
            owner = ctx.scope.lookup(value.value)
            function = owner.function if owner is not None else None
            if function is not None and value.value in function.params and not owner.values.get(value.value):
                return ""  # a parameter: its annotation says what callers should pass, not what they pass
        kind = ctx.kind_of(value)
        if kind in (kinds.JAX, kinds.NUMPY):
            return "an array"
        if kind in (kinds.LIST, kinds.DICT, kinds.SET):
            return f"a {kind}"
        return ""

    def _target(self, func: cst.BaseExpression) -> FunctionInfo | None:
        facts, scope = self.ctx.facts, self.ctx.scope
        if isinstance(func, cst.Call) and func in facts.jit_calls:
            args = positional(func)
            return facts.function_for(args[0], scope) if args else None
        if isinstance(func, cst.Name):
            owner = scope.lookup(func.value)
            if owner is None:
                return None
            values = owner.values.get(func.value)
            if values and isinstance(values[-1], cst.Call) and values[-1] in facts.jit_calls:
                args = positional(values[-1])
                return facts.function_for(args[0], owner) if args else None
            return owner.defs.get(func.value)
        return None


def _hashed_values(function: cst.FunctionDef) -> list[cst.BaseExpression]:
    """What `hash(...)` calls in `function` hash: their argument, or the items of a literal
    tuple/list argument."""
    found: list[cst.BaseExpression] = []

    class _Collect(Visitor):
        def visit_Call(self, call: cst.Call) -> None:
            if isinstance(call.func, cst.Name) and call.func.value == "hash" and len(call.args) == 1:
                value = call.args[0].value
                if isinstance(value, (cst.Tuple, cst.List)):
                    found.extend(e.value for e in value.elements)
                else:
                    found.append(value)

    walk(function, _Collect())
    return found


# Annotations of arrays (`jax.Array`, `jnp.ndarray`, `np.ndarray`): all unhashable.
_ARRAY_ANNOTATIONS = frozenset({"Array", "ndarray"})


def _array_attributes(facts, class_scope) -> set[str]:
    """Fields of a module-local class that hold an array: annotated as one in the class body
    (a dataclass field), or set in `__init__` from a parameter so annotated or from a
    `jax.numpy`/`numpy` call."""
    found: set[str] = set()
    body = class_scope.node.body
    for statement in body.body if isinstance(body, cst.IndentedBlock) else ():
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    if annotation_name(small.annotation.annotation) in _ARRAY_ANNOTATIONS:
                        found.add(small.target.value)
    init = class_scope.defs.get("__init__")
    if init is None or not init.params or isinstance(init.node, cst.Lambda):
        return found
    array_params = {p for p in init.params if annotation_name(parameter_annotation(init, p)) in _ARRAY_ANNOTATIONS}
    receiver = init.params[0]

    def is_array(value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Name):
            return value.value in array_params
        name = (facts.qualname(value.func, init.scope) or "") if isinstance(value, cst.Call) else ""
        return kinds.array_made_by(name) is not None

    class _Collect(Visitor):
        def visit_Assign(self, assign: cst.Assign) -> None:
            for target in assign.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == receiver:
                    if is_array(assign.value):
                        found.add(t.attr.value)

    walk(init.node, _Collect())
    return found


# JG111 -----------------------------------------------------------------------------------

# Transformations that trace every argument of a method they decorate, `self` included.
_TRACING_SELF = frozenset({"jax.jit", "jax.pmap", "jax.experimental.pjit.pjit"})


@register
class TracedSelfMethod(Rule):
    code = "JG111"
    name = "jit-method-traced-self"
    summary = "@jax.jit on a method traces self: an instance of a class that is not a pytree raises TypeError"
    message = "@jax.jit on a method traces `self`, an instance of a class that is not a pytree: TypeError at the call"
    fix_kind = "none"
    what = """
        Flags `@jax.jit` (or `pmap`, `pjit`) directly on a method whose `self` is not declared
        static, in a class of this module that is not a pytree: no base class (or only other
        such classes), no decorator that could register it, no `tree_flatten` method, not
        passed to a `register...` call, no `__init_subclass__` hook in it or its bases (which
        may register each subclass), and no subclass in the module that could be a pytree
        (a mixin's `self` is an instance of its subclasses). Not a method whose first
        parameter is not `self` in a class the module never makes an object of (no call, no
        subclass): a namespace of functions (`PdeModel.residual(u)`), no instance to trace.
    """
    why = """
        jit treats every argument, `self` included, as a pytree of arrays to trace. An ordinary
        object is neither, so the first call raises `TypeError: Error interpreting argument to
        <function C.calc> as an abstract array`. The Sharp Bits' FAQ ("How to use jit with
        methods?") lists the ways out: jit a function that takes the arrays as arguments, or
        register the class as a pytree. Marking `self` static (`static_argnums=0`) also works,
        but only for instances that are hashable and never mutated (see JG102 and JG110).
    """
    example = """
        import jax
        import jax.numpy as jnp

        class Scaler:
            def __init__(self, factor):
                self.factor = factor

            @jax.jit
            def apply(self, x):
                return x * self.factor

        Scaler(jnp.float32(2.0)).apply(jnp.ones(3))
    """
    use_instead = """
        import jax
        import jax.numpy as jnp

        @jax.tree_util.register_pytree_node_class
        class Scaler:
            def __init__(self, factor):
                self.factor = factor

            def tree_flatten(self):
                return (self.factor,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)

            @jax.jit
            def apply(self, x):
                return x * self.factor

        Scaler(jnp.float32(2.0)).apply(jnp.ones(3))
    """
    invalid = (
        "import jax\nclass Model:\n    def __init__(self, w):\n        self.w = w\n    @jax.jit\n    def predict(self, x):\n"
        "        return x @ self.w\n",
        "import jax\nfrom functools import partial\nclass Base:\n    pass\nclass Model(Base):\n"
        "    @partial(jax.jit, static_argnames=('n',))\n    def run(self, x, n):\n        return x * n\n",
        "import dataclasses\nimport jax\n@dataclasses.dataclass\nclass Model:\n    w: float\n    @jax.jit\n"
        "    def predict(self, x):\n        return x * self.w\n",
        # a first parameter named otherwise, in a class the module makes objects of: an instance
        "import jax\nclass Scaler:\n    def __init__(this, k):\n        this.k = k\n    @jax.jit\n    def apply(this, x):\n"
        "        return x * this.k\nprint(Scaler(2).apply(1.0))\n",
    )
    valid = (
        "import jax\nfrom functools import partial\nclass Model:\n    def __init__(self, w):\n        self.w = w\n"
        "    @partial(jax.jit, static_argnums=0)\n    def predict(self, x):\n        return x * self.w\n",
        "import jax\nfrom functools import partial\nclass Model:\n    @partial(jax.jit, static_argnames=('self',))\n"
        "    def predict(self, x):\n        return x\n",
        # any iterable of indices: a set too
        "import jax\nfrom functools import partial\nclass Kernel:\n    @partial(jax.jit, static_argnums={0})\n"
        "    def __call__(self, x):\n        return x\n",
        "import jax\nimport equinox as eqx\nclass Model(eqx.Module):\n    w: jax.Array\n    @jax.jit\n"
        "    def predict(self, x):\n        return x * self.w\n",
        "import jax\nfrom flax import struct\n@struct.dataclass\nclass State:\n    w: float\n    @jax.jit\n"
        "    def step(self, x):\n        return x * self.w\n",
        "import jax\nfrom typing import NamedTuple\nclass State(NamedTuple):\n    w: float\n    @jax.jit\n"
        "    def step(self, x):\n        return x * self.w\n",
        "import jax\nclass State:\n    @jax.jit\n    def step(self, x):\n        return x\n"
        "jax.tree_util.register_pytree_node(State, lambda s: ((), None), lambda a, c: State())\n",
        "import jax\nclass Tools:\n    @staticmethod\n    @jax.jit\n    def double(x):\n        return x * 2\n",
        "import jax\nclass Tools:\n    def tree_flatten(self):\n        return (), None\n    @jax.jit\n    def go(self, x):\n        return x\n",
        # a mixin whose subclasses are pytrees: `self` is always one of them
        "import jax\nimport chex\nclass TreeOps:\n    @jax.jit\n    def first(self):\n        return jax.tree.map(lambda x: x[0], self)\n"
        "@chex.dataclass\nclass State(TreeOps):\n    x: jax.Array\n",
        # a class used as a namespace: its functions are called through it (or by what it is
        # handed to), never on an instance
        "import jax\nimport jax.numpy as jnp\nimport mylib\nclass PdeModel:\n    @jax.jit\n    def residual(u_params):\n        return jnp.sum(u_params)\n"
        "    @jax.jit\n    def loss(u_params):\n        return PdeModel.residual(u_params) ** 2\n"
        "print(mylib.solve(jnp.ones(3), PdeModel))\n",
        # a base class whose `__init_subclass__` registers every subclass as a pytree
        "import jax\ndef _register(cls):\n    jax.tree_util.register_pytree_node(cls, lambda s: ((), None), lambda a, c: cls())\n"
        "class Freezer:\n    def __init_subclass__(cls, **kwargs):\n        super().__init_subclass__(**kwargs)\n        _register(cls)\n"
        "class Conifold(Freezer):\n    @jax.jit\n    def step(self, x):\n        return x\n",
    )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        facts = self.ctx.facts
        info = facts.functions.get(node)
        if info is None or not info.class_name or not info.params or info.params[0] in info.static_params:
            return
        decorators = [facts.qualname(d.decorator, info.parent) or dotted_name(d.decorator) for d in node.decorators]
        if any(name in ("staticmethod", "classmethod", "builtins.staticmethod", "builtins.classmethod") for name in decorators):
            return
        for decorator in node.decorators:
            found = facts.transform_of(decorator.decorator, info.parent)
            if found is None or found[0] not in _TRACING_SELF:
                continue
            if _namespace_class(facts, info.parent, info.params[0]):
                return  # `PdeModel.residual(u_params)`: functions grouped in a class, no instance
            if _plain_class(facts, info.parent, set()) and all(
                _plain_class(facts, sub, set()) for sub in _subclasses(facts, info.parent)
            ):
                self.report(
                    decorator,
                    f"@{found[0].rsplit('.', 1)[-1]} on method '{info.name}' traces `{info.params[0]}`, an instance of "
                    f"'{info.class_name}', which is not a pytree: the call raises TypeError; jit a function of the "
                    f"arrays, register '{info.class_name}' as a pytree, or mark `{info.params[0]}` static "
                    f"(static_argnums=0) if instances are hashable and never mutated",
                )
            return


def _namespace_class(facts, class_scope, first: str) -> bool:
    """A class the module never makes an object of (no `PdeModel(...)`, no subclass) whose
    method's first parameter is not `self`: a namespace of functions (`PdeModel.F(u)`, or the
    class handed on whole to an optimizer that calls `model.F(u)`), no instance to trace."""
    if first == "self":
        return False
    cache = facts.derived.setdefault("namespace-classes", {})
    name = class_scope.node.name.value
    if name not in cache:
        nodes = descendants(facts.module)
        made = any(isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == name for node in nodes)
        based = any(
            isinstance(node, cst.ClassDef) and any(isinstance(b.value, cst.Name) and b.value.value == name for b in node.bases)
            for node in nodes
        )
        cache[name] = not made and not based
    return cache[name]


def _plain_class(facts, class_scope, seen: set) -> bool:
    """A module-local class that is certainly not a pytree (nor a subclass of one)."""
    node = class_scope.node
    if node in seen:
        return False
    seen.add(node)
    name = node.name.value
    if not all(_is_plain_dataclass(facts, d.decorator, class_scope.parent) for d in node.decorators):
        return False  # `@register_pytree_node_class`, `@struct.dataclass`, ...
    if "tree_flatten" in class_scope.defs or "tree_unflatten" in class_scope.defs:
        return False
    if "__init_subclass__" in class_scope.defs:
        return False  # a hook that runs for each subclass may register it (jaxvacua's Freezer)
    for base in node.bases:
        if base.keyword is not None:
            return False  # a metaclass may register it
        base_name = facts.qualname(base.value, class_scope.parent)
        if base_name in ("builtins.object", "abc.ABC"):
            continue
        if isinstance(base.value, cst.Name):
            owner = class_scope.parent.lookup(base.value.value)
            base_node = owner.classes.get(base.value.value) if owner is not None else None
            base_scope = facts.scopes.get(base_node) if base_node is not None else None
            if base_scope is not None and _plain_class(facts, base_scope, seen):
                continue
        return False
    return not _registered(facts, name)


def _subclasses(facts, class_scope) -> list:
    """The module's classes that derive from this one, directly or not: `self` in its
    methods may be one of them (a mixin's subclasses may be pytrees: phyjax2d's PyTreeOps)."""
    found, names, seen = [], {class_scope.node.name.value}, {id(class_scope)}
    grew = True
    while grew:
        grew = False
        for scope in facts.scopes.values():
            if scope.kind != "class" or id(scope) in seen:
                continue
            if any(isinstance(b.value, cst.Name) and b.value.value in names for b in scope.node.bases):
                seen.add(id(scope))
                found.append(scope)
                names.add(scope.node.name.value)
                grew = True
    return found


def _is_plain_dataclass(facts, decorator: cst.BaseExpression, scope) -> bool:
    target = decorator.func if isinstance(decorator, cst.Call) else decorator
    return facts.qualname(target, scope) == "dataclasses.dataclass"


def _registered(facts, class_name: str) -> bool:
    """The class is handed to a call such as `jax.tree_util.register_pytree_node(C, ...)`."""
    registered = facts.derived.get("registered-classes")
    if registered is None:
        registered = facts.derived["registered-classes"] = set()

        class _Collect(Visitor):
            def visit_Call(self, call: cst.Call) -> None:
                if "register" in (call_tail(call.func) or "").lower():
                    registered.update(a.value.value for a in call.args if isinstance(a.value, cst.Name))

        walk(facts.module, _Collect())
    return class_name in registered  # type: ignore[operator]


# JG701 -----------------------------------------------------------------------------------

REVERSE_MODE = frozenset(
    {
        "jax.grad", "jax.value_and_grad", "jax.vjp", "jax.jacrev", "jax.hessian",
        "equinox.filter_grad", "equinox.filter_value_and_grad", "equinox.filter_vjp",
        "flax.nnx.grad", "flax.nnx.value_and_grad", "flax.linen.grad", "flax.linen.value_and_grad",
    }
)
def _diff_params(info: FunctionInfo, transform: str, call: cst.Call | None) -> set[str]:
    """The parameters a reverse-mode transform differentiates (argnums, default 0; all
    positional primals for vjp)."""
    params = [p for p in info.params if not (info.class_name and p in ("self", "cls"))]
    if not params:
        return set()
    if transform.endswith("vjp"):
        return set(params)
    value = keyword(call, "argnums") if call is not None else None
    indexes: tuple[int, ...] = (0,)
    if value is not None:
        single = literal_int(value)
        if single is not None:
            indexes = (single,)
        elif isinstance(value, (cst.Tuple, cst.List)):
            found = [literal_int(e.value) for e in value.elements]
            indexes = tuple(i for i in found if i is not None)
    return {params[i] for i in indexes if -len(params) <= i < len(params)}


@register
class GradThroughWhileLoop(Rule):
    code = "JG701"
    name = "grad-through-while-loop"
    summary = "Reverse-mode differentiation through lax.while_loop (or fori_loop with traced bounds) fails"
    message = "reverse-mode differentiation through lax.while_loop fails at run time"
    fix_kind = "suggest"
    what = """
        Flags `lax.while_loop`, and `lax.fori_loop` whose bounds are traced, in a function that is
        differentiated in reverse mode (`jax.grad`, `value_and_grad`, `vjp`, `jacrev`, `hessian`,
        and equinox/flax equivalents), directly or through module-local calls. Functions whose
        gradient their author defines are not followed: `jax.custom_vjp`/`custom_jvp` as a
        decorator (also `functools.partial(jax.custom_vjp, nondiff_argnums=...)`) or a call
        (`solve = jax.custom_vjp(_solve)`), and solvers given to `lax.custom_root` /
        `lax.custom_linear_solve`.
    """
    why = """
        `lax.while_loop` is only forward-mode differentiable: its trip count is not known ahead
        of time, so JAX cannot store the residuals a backward pass needs, and `jax.grad` raises
        "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with
        dynamic start/stop values". `lax.fori_loop` with concrete bounds lowers to `lax.scan` and
        is fine. Use `lax.scan` with a fixed number of steps, give `fori_loop` constant bounds,
        or use forward mode (`jax.jacfwd`, `jax.jvp`).
    """
    example = """
        import jax
        from jax import lax

        def loss(x):
            return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 0.9), (0, x))[1]

        g = jax.grad(loss)
    """
    use_instead = """
        import jax
        from jax import lax

        def loss(x):
            return lax.fori_loop(0, 10, lambda i, v: v * 0.9, x)

        g = jax.grad(loss)
    """
    invalid = (
        "import jax\nfrom jax import lax\n@jax.jit\ndef loss(x, n):\n    return lax.fori_loop(0, n, lambda i, v: v * x, x)\n"
        "def train(x, n):\n    return jax.value_and_grad(loss)(x, n)\n",
        "import jax\nfrom jax import lax\ndef inner(x):\n    return lax.while_loop(lambda v: v < 1, lambda v: v * 2, x)\n"
        "def loss(x):\n    return inner(x) ** 2\n@jax.jit\ndef step(x):\n    return jax.grad(loss)(x)\n",
        "import equinox as eqx\nimport jax\nclass Solver(eqx.Module):\n    def solve(self, x):\n"
        "        return jax.lax.while_loop(lambda v: v.sum() < 1, lambda v: v * 2, x)\n"
        "    def loss(self, x):\n        return self.solve(x).sum()\n"
        "    def grads(self, x):\n        return jax.grad(self.loss)(x)\n",
        "import equinox as eqx\nfrom jax import lax\n@eqx.filter_grad\ndef loss(model, x):\n"
        "    return lax.while_loop(lambda v: v.sum() < 1, lambda v: v * 2, model(x)).sum()\n",
        "import jax\nfrom functools import partial\nfrom jax import lax\n@partial(jax.jit, static_argnums=())\n"
        "def f(x, steps):\n    return lax.fori_loop(0, steps, lambda i, v: v + x, 0.0)\ndx = jax.vjp(f, 1.0, 3)\n",
    )
    valid = (
        "import jax\nfrom jax import lax\ndef f(x):\n    return lax.while_loop(lambda v: v < 1, lambda v: v * 2, x)\n"
        "df = jax.jacfwd(f)\nout = jax.jvp(f, (1.0,), (1.0,))\n",
        "import jax\nfrom jax import lax\ndef f(x):\n    n = x.shape[0]\n"
        "    return lax.fori_loop(0, n, lambda i, v: v * 2, x)\ng = jax.grad(lambda x: f(x).sum())\n",
        "import jax\nfrom jax import lax\nfrom functools import partial\n@partial(jax.jit, static_argnames=('n',))\n"
        "def f(x, n):\n    return lax.fori_loop(0, n, lambda i, v: v * 2, x)\ng = jax.grad(f)\n",
        "import jax\nfrom jax import lax\n@jax.custom_vjp\ndef solve(x):\n"
        "    return lax.while_loop(lambda v: v < 1, lambda v: v * 2, x)\ndef loss(x):\n    return solve(x)\n"
        "g = jax.grad(loss)\n",
        "import jax\nfrom jax import lax\ndef f(x):\n    return lax.while_loop(lambda v: v < 1, lambda v: v * 2, x)\n"
        "y = jax.jit(f)(1.0)\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # (function, transform, differentiated parameters)
        self.roots: list[tuple[FunctionInfo, str, set[str]]] = []
        # function node -> [(loop call, statement, description)]
        self.loops: dict[cst.CSTNode, list[tuple[cst.Call, cst.CSTNode | None, str]]] = {}
        # fori_loops whose bounds are not literals, to check against the differentiated inputs
        self.fori: dict[cst.CSTNode, list[tuple[cst.Call, cst.CSTNode | None, FunctionInfo]]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = ctx.qualname(node.func)
        if name in REVERSE_MODE:
            args = positional(node)
            if args:
                target = self._unwrap(args[0])
                if target is not None:
                    self.roots.append((target, name, _diff_params(target, name, node)))
            return
        function = ctx.function
        if function is None:
            return
        description = ""
        if name == "jax.lax.while_loop":
            description = "lax.while_loop"
        elif name == "jax.lax.fori_loop":
            bounds = [argument(node, 0, "lower"), argument(node, 1, "upper")]
            if any(b is not None and self._traced_bound(b) for b in bounds):
                description = "lax.fori_loop with traced bounds"
            elif any(b is not None and literal_int(b) is None for b in bounds):
                statement = ctx.statement_stack[-1] if ctx.statement_stack else None
                self.fori.setdefault(function.node, []).append((node, statement, function))
        if description:
            statement = ctx.statement_stack[-1] if ctx.statement_stack else None
            self.loops.setdefault(function.node, []).append((node, statement, description))

    def _traced_bound(self, bound: cst.BaseExpression) -> bool:
        if literal_int(bound) is not None:
            return False
        if self.ctx.in_traced and TracedFlow.of(self.ctx).origins(bound, self.ctx):
            return True
        return False

    def _unwrap(self, node: cst.BaseExpression) -> FunctionInfo | None:
        facts, scope = self.ctx.facts, self.ctx.scope
        for _ in range(5):
            if isinstance(node, cst.Call):
                name = facts.qualname(node.func, scope)
                if name in TRACING_TRANSFORMS or name in GRAD_TRANSFORMS or name in REVERSE_MODE:
                    args = positional(node)
                    if not args:
                        return None
                    node = args[0]
                    continue
            return facts.function_for(node, scope)
        return None

    def finish(self) -> None:
        facts = self.ctx.facts
        for info in facts.functions.values():
            for decorator in info.decorators:
                expr = decorator.decorator
                name = facts.qualname(expr, info.parent)
                if name is None and isinstance(expr, cst.Call):
                    name = facts.qualname(expr.func, info.parent)
                    if name == "functools.partial" and positional(expr):
                        name = facts.qualname(positional(expr)[0], info.parent)
                if name in REVERSE_MODE:
                    argnums = expr if isinstance(expr, cst.Call) else None
                    self.roots.append((info, name, _diff_params(info, name, argnums)))
        differentiated: dict[cst.CSTNode, set[str]] = {}
        for root, _, params in self.roots:
            differentiated.setdefault(root.node, set()).update(params)
        grad_flow = TracedFlow(facts, differentiated) if self.fori else None
        reported: set[cst.CSTNode] = set()
        for root, transform, _ in self.roots:
            for info in self._reachable(root):
                loops = list(self.loops.get(info.node, ()))
                for call, statement, function in self.fori.get(info.node, ()):
                    bounds = [argument(call, 0, "lower"), argument(call, 1, "upper")]
                    if grad_flow is not None and any(
                        b is not None and grad_flow.origins_in(b, function) for b in bounds
                    ):
                        loops.append((call, statement, "lax.fori_loop with bounds computed from the differentiated input"))
                for call, statement, description in loops:
                    if call in reported:
                        continue
                    reported.add(call)
                    self.report(
                        call,
                        f"reverse-mode AD ({transform.replace('jax.', 'jax.', 1)} of '{root.name}') reaches "
                        f"{description} in '{info.name}': it is only forward-mode differentiable and fails "
                        f"at run time; use lax.scan with a fixed number of steps, give fori_loop constant "
                        f"bounds, or differentiate in forward mode (jax.jacfwd / jax.jvp)",
                        statement=statement,
                    )

    def _reachable(self, root: FunctionInfo) -> list[FunctionInfo]:
        facts = self.ctx.facts
        seen: dict[cst.CSTNode, FunctionInfo] = {}
        work = [root]
        while work:
            info = work.pop()
            if info.node in seen or self._custom_rule(info):
                continue
            seen[info.node] = info
            for call in info.calls:
                callee = facts.function_for(call.func, info.scope)
                if callee is not None:
                    work.append(callee)
                if call in facts.lax_body_args:
                    for body in facts.lax_body_args[call]:
                        target = facts.function_for(body, info.scope)
                        if target is not None:
                            work.append(target)
            work.extend(f for f in facts.functions.values() if f.parent is info.scope)
        return list(seen.values())

    def _custom_rule(self, info: FunctionInfo) -> bool:
        return info.node in self.ctx.facts.custom_derivatives
