"""JG501-JG502: Python lists where JAX wants arrays (sharp bits: "Non-array inputs")."""

from __future__ import annotations

import functools
import json
from importlib import resources

import libcst as cst

from jaxguard.checks._common import unrebound_param
from jaxguard.lint import kinds
from jaxguard.lint.engine import ReplaceNode
from jaxguard.lint.facts import literal_int, positional
from jaxguard.lint.registry import Rule, register


@functools.cache
def list_rejecting_positions() -> dict[str, frozenset[int]]:
    """jax.numpy function -> argument positions where a list raises TypeError.

    Generated from the installed JAX by tools/gen_jax_data.py (the file records the version).
    """
    text = resources.files("jaxguard.data").joinpath("jnp_list_args.json").read_text()
    return {name: frozenset(p) for name, p in json.loads(text)["functions"].items()}


def _is_list_like(ctx, node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.List, cst.Tuple, cst.ListComp)):
        return True
    if isinstance(node, cst.Call):
        return ctx.qualname(node.func) in ("builtins.list", "builtins.range", "builtins.tuple")
    if isinstance(node, cst.Name):
        # `losses = []`, filled in a loop, then `jnp.min(losses)`: a list held in a name of this
        # scope whose latest binding is a list
        # (a parameter only annotated `list[float]` is not one: callers often pass arrays)
        owner = ctx.scope.lookup(node.value)
        return owner is ctx.scope and not unrebound_param(ctx, node.value) and ctx.kind_of(node) == kinds.LIST
    return False


@register
class ListToJnp(Rule):
    code = "JG501"
    name = "list-to-jnp"
    summary = "A Python list or tuple passed to a jax.numpy function that rejects it (TypeError)"
    message = "jax.numpy.{func} does not accept a Python {kind} (TypeError); wrap it in {jnp}.asarray(...)"
    fix_kind = "autofix"
    what = """
        Flags a list or tuple literal, a list comprehension, `list(...)`/`tuple(...)`/`range(...)`,
        or a name of the same scope whose latest binding is a list (`losses = []`, appended to in
        a loop, then `jnp.min(losses)`), passed where a `jax.numpy` function requires an array.
        A parameter only annotated `list[...]` is not flagged: numeric code writes `list[float]`
        for what its callers pass as arrays.
    """
    why = """
        Unlike NumPy, `jax.numpy` functions reject lists and tuples (`TypeError: sum requires
        ndarray or scalar arguments`): under tracing each element would become a separate
        input, silently slowing tracing and compilation. Convert explicitly.
    """
    example = """
        import jax.numpy as jnp

        total = jnp.sum([1, 2, 3])
    """
    use_instead = """
        import jax.numpy as jnp

        total = jnp.sum(jnp.asarray([1, 2, 3]))
    """
    fix_safety = """
        Wrapping the argument in `jnp.asarray(...)` (using the module's own alias for
        `jax.numpy`) is what JAX's error message asks for and gives the same value. The set of
        functions and argument positions is generated from the installed JAX.
    """
    invalid = (
        "import jax.numpy as jnp\nprint(jnp.sum([1, 2, 3]))\n",
        "from jax import numpy as np\ny = np.where((True, False), 1, 0)\n",
        "import jax.numpy as jnp\nz = jnp.mean(list(range(10)))\n",
        "import jax.numpy as jnp\nw = jnp.maximum(jnp.zeros(2), [x * 2 for x in (1, 2)])\n",
        # a parameter the function rebinds to a list
        "import jax.numpy as jnp\ndef lowest(xs: list[float]):\n    xs = list(xs)\n    return jnp.min(xs)\n",
    )
    valid = (
        "import numpy as np\nprint(np.sum([1, 2, 3]))\n",
        "import jax.numpy as jnp\nx = jnp.array([1, 2, 3])\ny = jnp.zeros((2, 3))\nz = jnp.concatenate([x, x])\n",
        "import jax.numpy as jnp\nx = jnp.sum(jnp.array([1, 2]))\ns = jnp.stack([x, x])\nr = jnp.reshape(x, (2, 1))\n",
        # only annotated a list: callers of numeric code often pass arrays under `list[float]`
        "import jax.numpy as jnp\ndef lowest(xs: list[float]):\n    return jnp.min(xs)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.qualname(node.func)
        if qualified is None or not qualified.startswith("jax.numpy."):
            return
        func = qualified[len("jax.numpy.") :]
        positions = list_rejecting_positions().get(func)
        if not positions:
            return
        for index, arg in enumerate(positional(node)):
            if index in positions and _is_list_like(ctx, arg):
                self._report(node, arg, func)

    def _report(self, call: cst.Call, arg: cst.BaseExpression, func: str) -> None:
        ctx = self.ctx
        alias = ctx.code(call.func.value).strip() if isinstance(call.func, cst.Attribute) else ctx.module_alias("jax.numpy")
        kind = {cst.List: "list", cst.Tuple: "tuple", cst.ListComp: "list", cst.Name: "list"}.get(type(arg), ctx.code(arg).split("(")[0].strip())
        fix = None
        if alias is not None:
            fix = ([ReplaceNode(arg, f"{alias}.asarray({ctx.code(arg).strip()})")], True, f"wrap in {alias}.asarray()")
        self.report(arg, self.message.format(func=func, kind=kind, jnp=alias or "jnp"), fix)


def _scalar_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return _scalar_literal(node.expression)
    return isinstance(node, cst.Name) and node.value in ("True", "False")


@register
class ListToJitted(Rule):
    code = "JG502"
    in_tests = False  # a test passing a few numbers once pays nothing for them
    name = "list-to-jitted"
    summary = "A Python list of scalars passed to a jitted function becomes one traced input per element"
    message = "a Python {kind} of scalars passed to a jitted function becomes {n} separate traced inputs; pass an array"
    fix_kind = "suggest"
    what = """
        Flags a list or tuple of Python numbers, or `list(range(...))`, passed to a jitted (or
        `make_jaxpr`-traced) function.

        Off in test files unless selected by its code: the cost is paid per call and per
        element, which a test calling once with a few numbers never notices (and tests pass
        lists on purpose, to check how they are traced). Judged in test files on real code:
        0 real, 17 deliberate or harmless.
    """
    why = """
        A list is a pytree: every element becomes its own scalar input of the compiled program.
        Tracing and compilation get slower with the list's length, and a list of another
        length compiles again. Convert it to an array first (`jnp.asarray(xs)`). Lists of
        arrays (pytrees of parameters) are fine and not flagged.
    """
    example = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def total(xs):
            return jnp.sum(jnp.asarray(xs))

        total([1.0, 2.0, 3.0])
    """
    use_instead = """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def total(xs):
            return jnp.sum(xs)

        total(jnp.asarray([1.0, 2.0, 3.0]))
    """
    invalid = (
        "import jax\nimport jax.numpy as jnp\ndef permissive_sum(x):\n    return jnp.sum(jnp.array(x))\n"
        "x = list(range(10))\njax.make_jaxpr(permissive_sum)(x)\n",
        "import jax\n@jax.jit\ndef f(xs):\n    return xs[0]\nf([1, 2, 3])\n",
        "import jax\ndef g(a, b):\n    return a\ng_fast = jax.jit(g)\ng_fast(1.0, (0.5, -0.5))\n",
    )
    valid = (
        # static_argnums reach keywords through the signature: `indices` may be static
        "import jax\nfrom pennylane import math\nreduce = jax.jit(math.reduce_dm, static_argnums=[1, 2])\n"
        "def test_reduce(dm):\n    return reduce(dm, indices=(0, 1))\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(params, x):\n    return x\nparams = [jnp.ones(3), jnp.zeros(3)]\nf(params, 1.0)\n",
        "import jax\nfrom functools import partial\n@partial(jax.jit, static_argnums=(1,))\ndef f(x, shape):\n    return x\nf(1.0, (2, 3))\n",
        "def f(xs):\n    return xs\nf([1, 2, 3])\n",
        # a one-element list is one traced input, as an array of one element is
        "import jax\nimport jax.numpy as jnp\narray_cpu = jax.jit(jnp.array, backend='cpu')\ndone = array_cpu([False])\n"
        "pos = jnp.concatenate((jnp.zeros(2), array_cpu([0.115])))\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        spec = ctx.facts.jitted_spec(node.func, ctx.scope)
        if spec is None:
            return
        target = self._target_params(node)
        for index, arg in enumerate(node.args):
            if arg.star:
                return
            if arg.keyword is None and index in spec.argnums:
                continue
            if arg.keyword is not None and arg.keyword.value in spec.argnames:
                continue
            if arg.keyword is None and target and index < len(target) and target[index] in spec.argnames:
                continue
            if arg.keyword is not None and spec.argnums:
                # jit maps static_argnums to keywords through the signature: without it (a
                # function of another library) whether this one is static is not known
                if not target or arg.keyword.value not in target or target.index(arg.keyword.value) in spec.argnums:
                    continue
            found = self._scalars(arg.value)
            if found is not None:
                kind, count = found
                self.report(arg.value, self.message.format(kind=kind, n=count))

    def _target_params(self, call: cst.Call) -> list[str]:
        func = call.func
        if isinstance(func, cst.Call) and positional(func):
            func = positional(func)[0]
        info = self.ctx.facts.function_for(func, self.ctx.scope)
        return info.params if info is not None else []

    def _scalars(self, node: cst.BaseExpression):
        if isinstance(node, cst.Name):
            owner = self.ctx.scope.lookup(node.value)
            values = owner.values.get(node.value) if owner is not None else None
            if values and len(values) == 1 and values[0] is not None:
                return self._scalars(values[0])
            return None
        # one element is one input, as an array would be: nothing grows with the length
        if isinstance(node, (cst.List, cst.Tuple)) and len(node.elements) > 1:
            if all(_scalar_literal(e.value) for e in node.elements):
                return ("list" if isinstance(node, cst.List) else "tuple"), str(len(node.elements))
            return None
        if isinstance(node, cst.Call) and self.ctx.qualname(node.func) in ("builtins.list", "builtins.tuple"):
            args = positional(node)
            if len(args) == 1 and isinstance(args[0], cst.Call) and self.ctx.qualname(args[0].func) == "builtins.range":
                bounds = [literal_int(a) for a in positional(args[0])]
                stop = bounds[0] if len(bounds) == 1 else None
                if stop is not None and stop <= 1:
                    return None
                return "list", str(stop) if stop is not None and stop >= 0 else "many"
        return None
