"""JG801-JG804: NaNs and numerically unstable expressions (sharp bits: "NaNs")."""

from __future__ import annotations

import os

import libcst as cst

from jaxguard.checks._common import (
    descendants,
    environ_key,
    is_true_literal,
    known_number,
    names_in,
    number,
    resolving_in,
    self_assignments,
)
from jaxguard.lint.engine import AddImport, ReplaceNode
from jaxguard.lint.facts import dotted_name, is_main_guard, keyword, literal_str, positional
from jaxguard.lint.registry import Rule, register
from jaxguard.lint.traced import annotation_name, parameter_annotation

# ---------------------------------------------------------------------------------
# shared helpers

# JAX's own sources import the implementation modules; they are the public functions.
_PRIVATE_PREFIXES = (
    ("jax._src.numpy.ufuncs.", "jax.numpy."),
    ("jax._src.numpy.lax_numpy.", "jax.numpy."),
    ("jax._src.numpy.reductions.", "jax.numpy."),
    ("jax._src.numpy.", "jax.numpy."),
    ("jax._src.lax.lax.", "jax.lax."),
    ("jax._src.lax.", "jax.lax."),
    ("jax._src.nn.functions.", "jax.nn."),
    ("jax._src.scipy.special.", "jax.scipy.special."),
)


def canonical(qualified: str | None) -> str | None:
    if qualified is None or not qualified.startswith("jax._src."):
        return qualified
    for private, public in _PRIVATE_PREFIXES:
        if qualified.startswith(private) and "." not in qualified[len(private):]:
            return public + qualified[len(private):]
    return qualified


def qual(ctx, node: cst.BaseExpression) -> str | None:
    """The qualified name of `node`, with JAX's private implementation modules mapped to
    their public names (`from jax._src import numpy as jnp` in JAX's own code)."""
    return canonical(ctx.qualname(node))


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[], rpar=[]) if getattr(node, "lpar", None) else node


def arg_code(ctx, node: cst.BaseExpression) -> str:
    """`node` as a call argument: its own redundant parentheses dropped where that is safe."""
    if getattr(node, "lpar", None) and not isinstance(node, (cst.Tuple, cst.GeneratorExp, cst.Yield)):
        return cst.Module([]).code_for_node(strip_parens(node)).strip()
    return ctx.code(node).strip()


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.Imaginary)


def negated_code(ctx, node: cst.BaseExpression) -> str:
    if isinstance(node, _ATOMS) and not getattr(node, "lpar", None):
        return "-" + ctx.code(node).strip()
    return "-(" + arg_code(ctx, node) + ")"


def is_one(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) and number(node) == 1.0


def module_ref(ctx, module: str) -> tuple[str, list] | None:
    """How to spell `module` (jax.numpy, jax.nn, numpy) here, and the import to add if none.

    Uses the module's existing alias (`jnp`, `nn`), or `<jax alias>.numpy`; adds
    `import jax.numpy as jnp` / `import jax` only when the name is free.
    """
    alias = ctx.module_alias(module)
    if alias is not None:
        return alias, []
    if module.startswith("jax."):
        jax_alias = ctx.module_alias("jax")
        if jax_alias is not None:
            return jax_alias + module[3:], []
    if module == "jax.numpy" and ctx.scope.lookup("jnp") is None:
        return "jnp", [AddImport("import jax.numpy as jnp")]
    if module.startswith("jax.") and ctx.scope.lookup("jax") is None:
        return module, [AddImport("import jax")]
    return None


def same_module_ref(ctx, func: cst.BaseExpression, module: str) -> tuple[str, list] | None:
    """`jnp.log` -> ("jnp", []): the spelling the call itself used for its module."""
    if isinstance(func, cst.Attribute) and ctx.qualname(func.value) == module:
        return ctx.code(func.value).strip(), []
    if (ctx.qualname(func) or "").startswith("jax._src."):
        return None  # JAX's own implementation modules: report only
    return module_ref(ctx, module)


# Families of functions: (module prefix, whether it counts outside traced code)
_FAMILIES = (("jax.numpy.", True), ("jax.lax.", True), ("numpy.", False))


def math_call(ctx, node: cst.BaseExpression, names: tuple[str, ...]) -> tuple[str, str] | None:
    """If `node` is `jnp.<name>(x)` (or lax, or numpy inside traced code) with one plain
    positional argument: (module, name)."""
    if not isinstance(node, cst.Call):
        return None
    qualified = qual(ctx, node.func)
    if qualified is None:
        return None
    module, _, name = qualified.rpartition(".")
    if name not in names:
        return None
    for prefix, everywhere in _FAMILIES:
        if module + "." == prefix and (everywhere or ctx.in_traced):
            if len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
                return module, name
    return None


def only_arg(call: cst.Call) -> cst.BaseExpression:
    return call.args[0].value


# ---------------------------------------------------------------------------------
# JG801

NAN_CONSTANTS = frozenset(
    {"jax.numpy.nan", "numpy.nan", "numpy.NaN", "numpy.NAN", "math.nan", "torch.nan"}
)


def nan_source(ctx, node: cst.BaseExpression) -> str | None:
    """'jax.numpy' / 'numpy' / 'python' if `node` is a NaN constant, else None."""
    if isinstance(node, (cst.Name, cst.Attribute)):
        qualified = ctx.qualname(node)
        if qualified in NAN_CONSTANTS:
            return qualified.rpartition(".")[0] if qualified.startswith(("jax.numpy", "numpy")) else "python"
        return None
    if isinstance(node, cst.Call) and len(node.args) == 1 and node.args[0].keyword is None:
        qualified = ctx.qualname(node.func)
        text = literal_str(node.args[0].value)
        if text is not None and text.strip().lower() in ("nan", "+nan", "-nan"):
            if qualified == "builtins.float":
                return "python"
            module, _, name = (qualified or "").rpartition(".")
            if module in ("jax.numpy", "numpy") and name in ("float16", "float32", "float64", "bfloat16", "float_"):
                return module
    return None


@register
class NanEquality(Rule):
    code = "JG801"
    name = "nan-equality"
    summary = "Comparing with NaN using == or != is always False or True; use isnan"
    message = "comparing with NaN using '{op}' is always {result}: NaN is not equal to anything, itself included; use {fix}"
    fix_kind = "autofix"
    what = "Flags `==` / `!=` comparisons against a NaN constant: `jnp.nan`, `np.nan`, `math.nan`, `float(\"nan\")`."
    why = """
        IEEE 754 NaN compares unequal to everything, including another NaN: `x == jnp.nan` is
        False for every element and `x != jnp.nan` is True for every element, so a NaN check
        written this way never finds a NaN (and a mask built from it selects everything or
        nothing). `jnp.isnan(x)` tests for NaN.
    """
    example = """
        import jax.numpy as jnp

        def drop_nans(values):
            bad = values == jnp.nan
            return jnp.where(bad, 0.0, values)
    """
    use_instead = """
        import jax.numpy as jnp

        def drop_nans(values):
            bad = jnp.isnan(values)
            return jnp.where(bad, 0.0, values)
    """
    fix_safety = """
        The fix turns `x == NAN` into `isnan(x)` and `x != NAN` into `~isnan(x)`. It is
        unsafe (applied with `--unsafe-fixes`): it changes the comparison's result on NaN
        inputs, deliberately (the original is constant, the fix is what it was meant to
        test), and that is a change of what the program computes. `isnan` is taken from the
        module the NaN came from (`np.nan` -> `np.isnan`, `jnp.nan` -> `jnp.isnan`), and from
        `jax.numpy` in a function that JAX traces or differentiates (`jax.grad`), where
        `np.isnan` would raise on a tracer; `import jax.numpy as jnp` is added only if the
        name is free. For `math.nan` / `float("nan")` the result type may also change (a
        Python float compared gives `bool`, `isnan` an array scalar). Chained comparisons
        are reported without a fix.
    """
    invalid = (
        "import numpy as np\nimport jax\n@jax.jit\ndef f(x):\n    return jax.numpy.where(x != np.nan, x, 0.0)\n",
        "import math\ndef check(loss):\n    if loss == math.nan:\n        raise ValueError('nan loss')\n",
        "import jax.numpy as jnp\nmask = float('nan') == jnp.zeros(3)\n",
        "from numpy import nan\nimport numpy as np\nbad = np.sum(np.asarray([1.0]) == nan)\n",
        # flax style: a method of a module
        "import flax.linen as nn\nimport jax.numpy as jnp\nclass Head(nn.Module):\n"
        "    @nn.compact\n    def __call__(self, x):\n        return jnp.where(x == jnp.float32('nan'), 0.0, x)\n",
    )
    valid = (
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.isnan(x)\n",
        "import jax.numpy as jnp\ndef f(x):\n    return x != x\n",
        "import numpy as np\nnan = 3.0\ndef f(x):\n    return x == nan\n",
        "import jax.numpy as jnp\ndef f(x):\n    return x is jnp.nan or jnp.allclose(x, jnp.nan, equal_nan=True)\n",
        "import jax.numpy as jnp\nfrom jax import tree_util\ndef finite(tree):\n"
        "    return tree_util.tree_map(lambda leaf: jnp.isfinite(leaf).all(), tree)\n",
    )

    def visit_Comparison(self, node: cst.Comparison) -> None:
        ctx = self.ctx
        left = node.left
        for index, target in enumerate(node.comparisons):
            if not isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                left = target.comparator
                continue
            right = target.comparator
            source, other = nan_source(ctx, right), left
            if source is None:
                source, other = nan_source(ctx, left), right
            if source is not None and nan_source(ctx, other) is None:
                equal = isinstance(target.operator, cst.Equal)
                fix = self._fix(node, other, source, equal) if len(node.comparisons) == 1 else None
                suggestion = ("isnan(x)" if equal else "~isnan(x)")
                self.report(
                    node,
                    self.message.format(op="==" if equal else "!=", result="False" if equal else "True", fix=suggestion),
                    fix,
                )
                return
            left = target.comparator

    def _fix(self, node: cst.Comparison, operand: cst.BaseExpression, source: str, equal: bool):
        ctx = self.ctx
        if ctx.under_transform or source == "jax.numpy":
            ref = module_ref(ctx, "jax.numpy")  # np.isnan raises on a tracer
        elif source == "numpy":
            ref = module_ref(ctx, "numpy")
        else:
            ref = module_ref(ctx, "jax.numpy") if ctx.module_alias("jax.numpy") else module_ref(ctx, "numpy")
        if ref is None:
            return None
        prefix, steps = ref
        text = f"{'' if equal else '~'}{prefix}.isnan({arg_code(ctx, operand)})"
        # unsafe: on a NaN the result changes (what the author meant, but a change)
        return [ReplaceNode(node, text), *steps], False, f"use {prefix}.isnan()"


# ---------------------------------------------------------------------------------
# JG802

# value-producing functions whose derivative is infinite or NaN somewhere in their domain
_HAZARD_FUNCS = frozenset(
    {
        "log", "log2", "log10", "log1p", "sqrt", "cbrt", "rsqrt", "arcsin", "arccos", "arctanh",
        "arccosh", "reciprocal", "power", "float_power", "divide", "true_divide", "div", "pow",
        "asin", "acos", "atanh", "acosh", "xlogy", "xlog1py", "entr",
    }
)
_HAZARD_MODULES = ("jax.numpy.", "jax.lax.", "jax.scipy.special.")
# functions that make an operand safe: the double-where pattern and clamping
_GUARDS = frozenset(
    {
        "jax.numpy.where", "jax.lax.select", "jax.numpy.maximum", "jax.numpy.clip", "jax.numpy.fmax",
        "jax.lax.max", "jax.lax.clamp", "jax.numpy.minimum", "jax.lax.stop_gradient",
        "jax.numpy.nan_to_num",
    }
)
_WHERE = frozenset({"jax.numpy.where", "jax.lax.select"})
# functions that are smooth on positive inputs: `log1p(exp(...))` is never singular
_POSITIVE_OK = frozenset({"log", "log2", "log10", "log1p", "sqrt", "cbrt", "rsqrt"})


def _variables(ctx, node: cst.CSTNode) -> set[str]:
    """Dotted names of the variables an expression reads (modules and functions excluded)."""
    found: set[str] = set()

    class _Collect(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> bool:
            for arg in call.args:
                arg.value.visit(self)
            if isinstance(call.func, cst.Attribute):
                call.func.value.visit(self)  # x.sum(): x is read
            return False

        def visit_Attribute(self, attr: cst.Attribute) -> bool:
            dotted = dotted_name(attr)
            if dotted is not None and _is_variable(ctx, attr):
                found.add(dotted)  # `self.count`, not `self`: other attributes are other values
                return False
            return True

        def visit_Name(self, name: cst.Name) -> None:
            if _is_variable(ctx, name):
                found.add(name.value)

    node.visit(_Collect())
    return found


def _is_variable(ctx, node: cst.BaseExpression) -> bool:
    root = node
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name) or root.value in ("True", "False", "None"):
        return False
    owner = ctx.scope.lookup(root.value)
    if owner is None:
        return False  # builtins, or unknown globals
    return root.value not in owner.imports and root.value not in owner.defs and root.value not in owner.classes


@register
class WhereGradNan(Rule):
    code = "JG802"
    name = "where-grad-nan"
    default_on = False  # measured false more often than real on real code (see `what`)
    summary = "jnp.where with an unguarded log/sqrt/division in a branch has NaN gradients (use the double-where)"
    message = (
        "{where} evaluates and differentiates both branches: {op} of '{operand}' has an inf/NaN "
        "gradient where the condition excludes it, and 0 * inf is NaN; guard the operand too "
        "(double-where: {operand_short}_safe = jnp.where(cond, {operand_short}, 1.0))"
    )
    fix_kind = "suggest"
    what = """
        Flags `jnp.where(cond, a, b)` (and `lax.select`) where a branch applies `log`, `sqrt`,
        a division, `arcsin`/`arccos`/`arctanh`, or a fractional or negative power to an operand
        that the condition is testing, without guarding the operand itself.

        "Testing" means that a side of a comparison in the condition (or a test such as
        `jnp.isclose(d, 0)`) reads only the operand's variables, or reads all of them without
        being a sum: `dr < R + D` compares `dr` with a threshold and does not test `D`. Not
        flagged: integer operands (counts such as `num_dims - 1`, `len(x)`, sizes, parameters
        annotated `int`), positive constants (`cutoff=8.0`), an operand that stays away from
        its singular point where the branch is unused (`where(n < 0.17, 0.17 / n, 1.0)`), the
        standard `log1mexp` (`log(-expm1(x))` against `log1p(-exp(x))`), `log`/`sqrt` of an
        exponential, and code whose derivative is user-defined (custom_jvp/custom_vjp, Pallas).

        A NaN gradient needs a gradient: only functions that are differentiated are checked —
        by this module or, through the project index, by any module of the project (`grad`,
        `value_and_grad`, `vjp`, `jvp`, `jacfwd`/`jacrev`, `hessian`, `linearize`, and what
        they call) — or any function of a module that differentiates something itself.

        Opt-in (select `JG802`): on the 40 packages of the real-world tuning corpus, with the
        differentiation requirement, 1 of its 8 judged findings was real and 7 were false
        (where the unsafe branch cannot be reached, or code that is differentiated but never
        at the singular point); before it, 11 real and 34 false. The rule cannot yet tell
        whether the excluded values reach the differentiated path.
    """
    why = """
        Both branches of `jnp.where` are computed for every element; the condition only picks
        which value to keep. In reverse-mode differentiation the untaken branch's gradient is
        multiplied by zero, but `0 * inf` and `0 * nan` are NaN: `jnp.where(x > 0, jnp.log(x), 0.)`
        has a NaN gradient at `x = 0` even though the value is fine. Put a second `where` on
        the operand so that the unsafe function never sees a bad value (the "double-where"
        trick from the JAX FAQ).
    """
    example = """
        import jax
        import jax.numpy as jnp

        def safe_log(x):
            return jnp.where(x > 0, jnp.log(x), 0.0)

        grad_log = jax.grad(lambda x: safe_log(x).sum())
    """
    use_instead = """
        import jax
        import jax.numpy as jnp

        def safe_log(x):
            x_safe = jnp.where(x > 0, x, 1.0)
            return jnp.where(x > 0, jnp.log(x_safe), 0.0)

        grad_log = jax.grad(lambda x: safe_log(x).sum())
    """
    references = ("https://docs.jax.dev/en/latest/faq.html#gradients-contain-nan-where-using-where",)
    invalid = (
        # entropy term: x * log(x), differentiated in the module
        "import jax\nimport jax.numpy as jnp\ndef entropy(p):\n    return -jnp.sum(jnp.where(p > 0, p * jnp.log(p), 0.0))\n"
        "d_entropy = jax.grad(entropy)\n",
        # sinc: division in the false branch, under value_and_grad
        "import jax\nimport jax.numpy as jnp\n@jax.value_and_grad\ndef sinc(x):\n    return jnp.where(x == 0, 1.0, jnp.sin(x) / x)\n",
        # optax style: a norm under sqrt, from a closure; the module differentiates a loss
        "import jax\nimport jax.numpy as jnp\ndef scale_by_norm():\n    def update_fn(updates, state):\n"
        "        sq = jnp.sum(updates ** 2)\n        return jnp.where(sq > 0, updates / jnp.sqrt(sq), updates), state\n"
        "    return update_fn\ndef train(loss, p):\n    return jax.grad(loss)(p)\n",
        # equinox style: a method, power with a fractional exponent, lax.select
        "import equinox as eqx\nimport jax.numpy as jnp\nfrom jax import lax\nclass Dist(eqx.Module):\n"
        "    def __call__(self, d):\n        return lax.select(d > 0, d ** 0.5, jnp.zeros_like(d))\n"
        "g = eqx.filter_grad(lambda m, d: m(d))\n",
        "import jax\nimport jax.numpy as jnp\ndef f(self, x):\n    return jnp.where(self.count > 0, x / self.count, x)\n"
        "def loss(self, x):\n    return jax.vjp(lambda y: f(self, y), x)\n",
    )
    valid = (
        # never differentiated: no gradient, no NaN gradient (environment dynamics, metrics)
        "import jax.numpy as jnp\ndef entropy(p):\n    return -jnp.sum(jnp.where(p > 0, p * jnp.log(p), 0.0))\n",
        "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef step(x):\n    return jnp.where(x == 0, 1.0, jnp.sin(x) / x)\n",
        # the double-where pattern, inline
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.where(x > 0, jnp.log(jnp.where(x > 0, x, 1.0)), 0.0)\n",
        # clamped operand
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.where(x > 1e-6, jnp.sqrt(jnp.maximum(x, 1e-6)), 0.0)\n",
        # condition unrelated to the operand
        "import jax.numpy as jnp\ndef f(mask, logits, p):\n    return jnp.where(mask, jnp.log(p), -jnp.inf)\n",
        # numpy where: no gradients
        "import numpy as np\ndef f(x):\n    return np.where(x > 0, np.log(x), 0.0)\n",
        # integer power is smooth everywhere
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.where(x > 0, x ** 2, 0.0)\n",
        # a Pallas kernel: never differentiated by autodiff
        "import jax.numpy as jnp\nfrom jax.experimental import pallas as pl\ndef kernel(l_ref, o_ref):\n"
        "    l = l_ref[...]\n    o_ref[...] = jnp.where(l == 0.0, 1.0, 1.0 / l)\n",
        # the author defined the gradient
        "import jax\nimport jax.numpy as jnp\n@jax.custom_jvp\ndef xlogy(x, y):\n    return jnp.where(x != 0, x * jnp.log(y), 0.0)\n",
        # double-where through a name (flax style method)
        "import flax.linen as nn\nimport jax.numpy as jnp\nclass L(nn.Module):\n    def __call__(self, x):\n"
        "        ok = x > 0\n        x_safe = jnp.where(ok, x, 1.0)\n        return jnp.where(ok, jnp.log(x_safe), 0.0)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if qual(ctx, node.func) not in _WHERE:
            return
        args = positional(node)
        if len(args) != 3 or len(node.args) != 3 or self._custom_derivative() or not self._may_be_differentiated():
            return
        if not _variables(ctx, args[0]) or self._log1mexp(args[1], args[2]):
            return
        for index, branch in enumerate(args[1:]):
            found = self._hazard(branch, args[0], index)
            if found is not None:
                op, operand = found
                text = arg_code(ctx, operand)
                short = text if isinstance(operand, (cst.Name, cst.Attribute)) else "x"
                short = short.replace(".", "_")
                if len(text) > 40:
                    text = text[:37] + "..."
                where = "lax.select" if qual(ctx, node.func) == "jax.lax.select" else "jnp.where"
                self.report(node, self.message.format(where=where, op=op, operand=text, operand_short=short))
                return

    def _may_be_differentiated(self) -> bool:
        """A NaN gradient needs a gradient: the function (or one it is nested in) is
        differentiated by this module or, by the project index, by any module; or this module
        differentiates something itself."""
        facts = self.ctx.facts
        if facts.differentiates:
            return True
        function = self.ctx.function
        while function is not None:
            if function.differentiated:
                return True
            function = facts.enclosing_function(function.parent)
        return False

    def _custom_derivative(self) -> bool:
        """Inside a function with a custom_jvp/custom_vjp decorator: its author wrote the gradient.
        Pallas kernels count too: autodiff never goes through a kernel body."""
        if self._pallas_module():
            return True
        facts = self.ctx.facts
        function = self.ctx.function
        while function is not None:
            if function.node in facts.custom_derivatives:
                return True
            function = facts.enclosing_function(function.parent)
        return False

    def _pallas_module(self) -> bool:
        cached = self.ctx.facts.derived.get("jaxguard.pallas")
        if cached is None:
            imports = self.ctx.facts.module_scope.imports.values()
            cached = any(q.startswith(("jax.experimental.pallas", "jax._src.pallas")) for q in imports)
            self.ctx.facts.derived["jaxguard.pallas"] = cached
        return bool(cached)

    def _log1mexp(self, taken: cst.BaseExpression, untaken: cst.BaseExpression) -> bool:
        """`where(x > -log(2), log(-expm1(x)), log1p(-exp(x)))`: the standard log1mexp, each
        branch finite on the side it is chosen, the pair a known-stable formula."""
        ctx = self.ctx

        def form(node) -> tuple[str, str] | None:
            found = math_call(ctx, node, ("log", "log1p"))
            if found is None:
                return None
            inner = strip_parens(only_arg(node))
            if not (isinstance(inner, cst.UnaryOperation) and isinstance(inner.operator, cst.Minus)):
                return None
            wanted = "expm1" if found[1] == "log" else "exp"
            if math_call(ctx, strip_parens(inner.expression), (wanted,)) is None:
                return None
            return found[1], ctx.code(only_arg(strip_parens(inner.expression))).strip()

        forms = {form(taken), form(untaken)}
        return None not in forms and len(forms) == 2 and len({x for _, x in forms}) == 1

    def _hazard(self, branch: cst.BaseExpression, condition: cst.BaseExpression, index: int):
        """The first (operation, operand) in `branch` (the `index`th of the where's two) with an
        unguarded operand the condition tests."""
        ctx = self.ctx
        rule = self
        found: list = []
        where = (condition, index)

        class _Search(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> bool:
                qualified = qual(ctx, call.func) or ""
                if qualified in _GUARDS:
                    return False
                module, _, name = qualified.rpartition(".")
                if (module + ".") in _HAZARD_MODULES and name in _HAZARD_FUNCS:
                    args = positional(call)
                    if name in ("power", "float_power", "pow"):
                        if len(args) == 2 and _unsafe_exponent(args[1]):
                            rule._consider(name, args[0], where, found)
                    elif name in ("divide", "true_divide", "div"):
                        if len(args) == 2:
                            rule._consider("division", args[1], where, found)
                    elif name in ("xlogy", "xlog1py"):
                        if len(args) == 2:
                            rule._consider(name, args[1], where, found)
                    elif args and not (name in _POSITIVE_OK and rule._exponential(args[0])):
                        rule._consider(name, args[0], where, found)
                return not found

            def visit_BinaryOperation(self, op: cst.BinaryOperation) -> bool:
                if isinstance(op.operator, cst.Divide):
                    rule._consider("division", op.right, where, found)
                elif isinstance(op.operator, cst.Power) and _unsafe_exponent(op.right):
                    rule._consider("power", op.left, where, found)
                return not found

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

        branch.visit(_Search())
        return found[0] if found else None

    def _exponential(self, node: cst.BaseExpression) -> bool:
        """`jnp.exp(x)`, or a helper named for it (`safe_exp(x)`): positive, so `log`/`sqrt` of it
        is smooth."""
        if math_call(self.ctx, node, ("exp", "exp2")) is not None:
            return True
        tail = (dotted_name(node.func) or "").rsplit(".", 1)[-1] if isinstance(node, cst.Call) else ""
        return tail.endswith("exp") and not tail.endswith("_no_exp")

    def _consider(self, op: str, operand: cst.BaseExpression, where: tuple, found: list) -> None:
        if found or self._guarded(operand):
            return
        ctx = self.ctx
        if _is_constant(operand) or positive_constant(ctx, operand) or integer_valued(ctx, operand):
            return  # a constant, or a count: nothing to differentiate, or never zero
        condition, index = where
        operand_vars = _variables(ctx, operand)
        if not operand_vars or not _tests(ctx, condition, operand_vars):
            return
        if _excluded_where_unused(ctx, condition, operand, index, op):
            return
        found.append((op, operand))

    def _guarded(self, operand: cst.BaseExpression) -> bool:
        ctx = self.ctx
        if isinstance(operand, cst.Call) and qual(ctx, operand.func) in _GUARDS:
            return True
        if isinstance(operand, cst.BinaryOperation) and isinstance(operand.operator, cst.Add):
            # `t + eps`: the epsilon idiom keeps a non-negative operand away from the singularity
            if _is_epsilon(operand.left) or _is_epsilon(operand.right):
                return True
        if isinstance(operand, cst.Name):
            owner = ctx.scope.lookup(operand.value)
            values = owner.values.get(operand.value, []) if owner is not None else []
            return any(
                isinstance(v, cst.Call) and canonical(ctx.facts.qualname(v.func, owner)) in _GUARDS for v in values
            )
        return False


def _comparisons(condition: cst.BaseExpression):
    """The atoms of a condition: comparisons and other tests joined by `&`, `|`, `~`, `and`,
    `or`, `not` or `jnp.logical_and/or/not`."""
    node = strip_parens(condition)
    if isinstance(node, cst.BooleanOperation) or (
        isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr))
    ):
        yield from _comparisons(node.left)
        yield from _comparisons(node.right)
    elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.BitInvert, cst.Not)):
        yield from _comparisons(node.expression)
    elif (
        isinstance(node, cst.Call)
        and (dotted_name(node.func) or "").rsplit(".", 1)[-1] in ("logical_and", "logical_or", "logical_not")
    ):
        for arg in node.args:
            yield from _comparisons(arg.value)
    else:
        yield node


def _tests(ctx, condition: cst.BaseExpression, operand_vars: set[str]) -> bool:
    """The condition tests the operand: a side of one of its comparisons (or a test such as
    `jnp.isclose(d, 0)`) reads only the operand's variables, or reads all of them without
    being a sum (`dr < R + D` compares `dr` with a threshold, it does not test `D`)."""
    for atom in _comparisons(condition):
        sides = [atom.left, *(t.comparator for t in atom.comparisons)] if isinstance(atom, cst.Comparison) else [atom]
        for side in sides:
            side_vars = _variables(ctx, side)
            if not side_vars:
                continue
            if side_vars <= operand_vars:
                return True
            additive = isinstance(strip_parens(side), cst.BinaryOperation) and isinstance(
                strip_parens(side).operator, (cst.Add, cst.Subtract)
            )
            if operand_vars <= side_vars and not additive:
                return True
    return False


_NEGATED = {cst.LessThan: ">=", cst.LessThanEqual: ">", cst.GreaterThan: "<=", cst.GreaterThanEqual: "<",
            cst.Equal: "!=", cst.NotEqual: "=="}
_AS_IS = {cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">=",
          cst.Equal: "==", cst.NotEqual: "!="}
_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def _excluded_where_unused(ctx, condition, operand, index: int, op: str) -> bool:
    """Where the branch's value is not used (the condition false for the first branch, true
    for the second) the operand stays away from its singular point: `where(n < 0.17, 0.17 / n,
    1.0)` divides only where it is used, and is finite (n >= 0.17) where it is not."""
    node = strip_parens(condition)
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return False
    target = node.comparisons[0]
    table = _NEGATED if index == 0 else _AS_IS
    relation = table.get(type(target.operator))
    if relation is None:
        return False
    code = ctx.code(strip_parens(operand)).strip()
    left, right = strip_parens(node.left), strip_parens(target.comparator)
    if ctx.code(left).strip() == code and number(right) is not None:
        bound = number(right)
    elif ctx.code(right).strip() == code and number(left) is not None:
        bound, relation = number(left), _MIRRORED[relation]
    else:
        return False
    # the operand's values where unused: `operand <relation> bound`; singular at 0 (division)
    # or at and below 0 (log, sqrt, fractional powers)
    if relation == ">=":
        return bound > 0
    if relation == ">":
        return bound >= 0
    if relation == "==":
        return bound > 0 or (bound != 0 and op == "division")
    if op == "division" and relation == "<=":
        return bound < 0
    if op == "division" and relation == "<":
        return bound <= 0
    return False


def positive_constant(ctx, node: cst.BaseExpression) -> bool:
    value = known_number(ctx, node)
    return value is not None and value > 0


_INT_CONVERTERS = frozenset({"builtins.len", "builtins.int", "math.prod", "numpy.prod", "math.factorial"})


def integer_valued(ctx, node: cst.BaseExpression, depth: int = 0) -> bool:
    """An expression built only from counts and numeric literals: `len()`, shapes and sizes,
    parameters annotated `int`, names bound to such values, `self.n` mirroring an `int`
    parameter of the class's `__init__` (`num_dims - 1`, `len(x) / 2.0`). Never
    differentiated."""
    node = strip_parens(node)
    if depth > 4:
        return False
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return integer_valued(ctx, node.expression, depth)
    if isinstance(node, cst.BinaryOperation):
        return integer_valued(ctx, node.left, depth) and integer_valued(ctx, node.right, depth)
    if isinstance(node, cst.Call):
        return ctx.qualname(node.func) in _INT_CONVERTERS
    if isinstance(node, cst.Subscript):
        return isinstance(node.value, cst.Attribute) and node.value.attr.value in ("shape", "sizes")
    if isinstance(node, cst.Attribute):
        return node.attr.value in ("size", "ndim") or _integer_attribute(ctx, node)
    if isinstance(node, cst.Name):
        owner = ctx.scope.lookup(node.value)
        if owner is None:
            return False
        values = owner.values.get(node.value, [])
        if node.value in owner.params:
            if not _annotated_int(owner.function, node.value):
                return False
            values = [v for v in values if v is not None]  # `n += 1` keeps an int an int
        elif not values or any(v is None for v in values):
            return False
        with resolving_in(ctx, owner):
            return all(integer_valued(ctx, v, depth + 1) for v in values)
    return False


def _annotated_int(function, name: str) -> bool:
    return annotation_name(parameter_annotation(function, name)) == "int"


def _integer_attribute(ctx, node: cst.Attribute) -> bool:
    """`self.population_size` where the class's `__init__` takes `population_size: int`, or
    its methods assign `self.population_size` only integer values (`self.lamb = popsize`)."""
    if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
        return False
    function = ctx.facts.enclosing_method(ctx.function)
    init = function.parent.defs.get("__init__") if function is not None else None
    if init is not None and _annotated_int(init, node.attr.value):
        return True  # `self.population_size` stored from `population_size: int`, maybe by a base class
    assigned = self_assignments(ctx, ctx.function, node.attr.value)
    if not assigned:
        return False
    for value, scope in assigned:
        with resolving_in(ctx, scope):
            if value is None or not integer_valued(ctx, value, 2):
                return False
    return True


def _is_epsilon(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        return (number(node) or 0.0) > 0
    name = dotted_name(node)
    return name is not None and "eps" in name.rsplit(".", 1)[-1].lower()


def _is_constant(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) or (
        isinstance(node, cst.UnaryOperation) and isinstance(node.expression, (cst.Integer, cst.Float))
    )


def _unsafe_exponent(node: cst.BaseExpression) -> bool:
    """A literal exponent with a singular derivative at 0: fractional (0.5) or negative."""
    value = None
    if isinstance(node, (cst.Integer, cst.Float)):
        value = number(node)
    elif isinstance(node, cst.UnaryOperation) and isinstance(node.expression, (cst.Integer, cst.Float)):
        value = number(node.expression)
        if value is not None and isinstance(node.operator, cst.Minus):
            value = -value
    elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        return _is_constant(node.left) and _is_constant(node.right)  # x ** (1 / 3)
    if value is None:
        return False
    return value < 0 or (value != int(value) and value < 1)


# ---------------------------------------------------------------------------------
# JG803

# Formulas whose only trouble is rounding near 0 (the others overflow in exp).
_ROUNDING_ONLY = ("log(1 + x) ", "log(1 - x) ", "exp(x) - 1 ")

_SOFTMAX_MODULES = ("jax.nn", "flax.linen", "flax.nnx", "flax.linen.activation")


@register
class UnstableNumerics(Rule):
    code = "JG803"
    name = "unstable-numerics"
    default_on = False  # measured: mostly false on real code (see `what`)
    summary = "A numerically unstable formula that has a stable library function (log1p, expm1, logsumexp, ...)"
    message = "{original} loses precision or overflows; use {better}"
    fix_kind = "autofix"
    what = """
        Flags numerically unstable formulas that have a stable library function:
        `log(1 + x)` -> `log1p(x)`, `log(1 - x)` -> `log1p(-x)`, `exp(x) - 1` -> `expm1(x)`,
        `log(1 + exp(x))` -> `jax.nn.softplus(x)`, `log(sum(exp(x)))` -> `jax.nn.logsumexp(x)`,
        `log(exp(a) + exp(b))` -> `logaddexp(a, b)`, `log(softmax(x))` -> `jax.nn.log_softmax(x)`,
        `log(sigmoid(x))` -> `jax.nn.log_sigmoid(x)`, `1 / (1 + exp(-x))` -> `jax.nn.sigmoid(x)`.
        Functions are matched by qualified name (`jax.numpy`, `jax.lax`, `jax.nn`, flax's
        re-exports; `numpy` only inside traced code). `log(1 + x)` and `log(1 - x)` are not
        flagged when `x` is never small: a count (`popsize / 2`, `len(x) / 2.0`,
        `self.lamb` set from an `int` parameter) or a constant of at least 1e-2
        (`threshold=0.999`).

        Opt-in (select `JG803`): measured on real code, among the findings reviewers judged, 12
        real, 4 deliberate, 3 false on the 40-package tuning corpus, and 12 real, 13 deliberate,
        16 false on packages and research code it was not tuned on: the formulas it flags are
        often already stable in context (a sign-flipped or clipped argument, a result whose
        absolute error is what matters) in ways it cannot prove.
    """
    why = """
        In float32 (JAX's default) `1 + x` rounds away every `x` below about 6e-8, so
        `log(1 + x)` is 0 where `log1p(x)` is accurate; `exp(x) - 1` cancels the same way.
        `exp(x)` overflows to `inf` above about 88 in float32, so `log(sum(exp(x)))` and
        `log(softmax(x))` give `inf`/`-inf` and NaN gradients where `logsumexp` and
        `log_softmax` subtract the maximum first and stay finite.
    """
    example = """
        import jax
        import jax.numpy as jnp

        def nll(logits, targets, rates):
            log_probs = jnp.log(jax.nn.softmax(logits, axis=-1))
            growth = jnp.log(1 + rates)
            decay = jnp.exp(-rates) - 1
            norm = jnp.log(jnp.sum(jnp.exp(logits), axis=-1))
            return -(log_probs * targets).sum() + (growth * decay).sum() + norm.sum()
    """
    use_instead = """
        import jax
        import jax.numpy as jnp

        def nll(logits, targets, rates):
            log_probs = jax.nn.log_softmax(logits, axis=-1)
            growth = jnp.log1p(rates)
            decay = jnp.expm1(-rates)
            norm = jax.nn.logsumexp(logits, axis=-1)
            return -(log_probs * targets).sum() + (growth * decay).sum() + norm.sum()
    """
    fix_safety = """
        Each rewrite computes the same mathematical function, more accurately, using the
        module's existing import aliases (an import is added only when no alias exists).
        Only calls with the plain arguments the replacement also takes are rewritten
        (`axis`/`keepdims` of a sum, `axis`/`where` of a softmax); others are reported
        without a fix. `1 / (1 + exp(-x))` -> `jax.nn.sigmoid(x)` is unsafe: `jax.nn.sigmoid`
        rejects integer inputs that the original formula accepted. Formulas written with
        numpy (inside traced code) are rewritten within numpy (`np.log1p`, `np.expm1`,
        `np.logaddexp`) or only reported.
    """
    invalid = (
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.log(x + 1.0)\n",
        "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef gate(z):\n    return 1.0 / (1.0 + jnp.exp(-z))\n",
        "from jax.numpy import exp, log, sum as jsum\ndef lse(v):\n    return log(jsum(exp(v)))\n",
        # numpy inside a jitted function
        "import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return np.log(1 - x)\n",
        # flax style: a module's method, softmax from flax.linen
        "import flax.linen as nn\nimport jax.numpy as jnp\nclass Classifier(nn.Module):\n    @nn.compact\n"
        "    def __call__(self, x):\n        logits = nn.Dense(10)(x)\n        return jnp.log(nn.softmax(logits))\n",
        # optax style: softplus written by hand in a closure
        "import jax.numpy as jnp\ndef make_loss():\n    def loss(margin):\n        return jnp.log(1 + jnp.exp(-margin)).mean()\n    return loss\n",
        "import jax.numpy as jnp\ndef f(a, b):\n    return jnp.log(jnp.exp(a) + jnp.exp(b))\n",
    )
    valid = (
        "import jax.numpy as jnp\ndef xent(logits):\n    cond = logits > jnp.zeros_like(logits)\n"
        "    neg_abs = jnp.where(cond, -logits, logits)\n    return jnp.log1p(jnp.exp(neg_abs))\n",
        # already stable: exp of a non-positive exponent cannot overflow
        "import jax.numpy as jnp\ndef xent(logits):\n    neg_abs = -jnp.abs(logits)\n    return jnp.log1p(jnp.exp(neg_abs))\n",
        "import jax.numpy as jnp\ndef norm(l):\n    maxl = l.real.max()\n    return jnp.log(jnp.exp(2 * (l.real - maxl)).sum()) + 2 * maxl\n",
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.log1p(x) + jnp.expm1(x)\n",
        "import numpy as np\ndef host(x):\n    return np.log(1 + x)\n",
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.log(2 + x) + jnp.exp(x) - 2 + jnp.log(jnp.sum(x))\n",
        "import math\ndef f(x):\n    return math.log(1 + x)\n",
        "import jax\nimport jax.numpy as jnp\ndef f(x):\n    return jax.nn.log_softmax(x) + jax.nn.logsumexp(x)\n",
        # a local function named log is not jnp.log
        "import jax.numpy as jnp\ndef log(v):\n    return v\ndef f(x):\n    return log(1 + x)\n",
    )

    def report(self, node, message=None, fix=None, statement=None) -> None:
        if message and message.startswith(_ROUNDING_ONLY):
            # these cancel in rounding near 0; nothing in them overflows
            message = message.replace("loses precision or overflows", "loses precision near 0", 1)
        if not self._implementing(message or ""):
            super().report(node, message, fix, statement)

    def _implementing(self, message: str) -> bool:
        """The formula is the definition of the stable function itself (a lowering rule,
        `def _logistic(x)`, `def_comp(lax.expm1_p, lambda x: lax.exp(x) - 1)`): not a finding."""
        better = message.rpartition("use ")[2]
        keys = next((k for k in _IMPLEMENTS if k in better), None)
        if keys is None:
            return False
        names = _IMPLEMENTS[keys]
        function = self.ctx.function
        while function is not None:
            if any(n in function.name.lower() for n in names):
                return True
            function = self.ctx.facts.enclosing_function(function.parent)
        statement = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
        if isinstance(statement, cst.SimpleStatementLine):
            text = self.ctx.code(statement).lower()
            return any(n in text.replace(better.lower(), "") for n in names)
        return False

    # log(...) patterns -----------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        found = math_call(ctx, node, ("log", "log1p"))
        if found is None:
            return
        module, name = found
        arg = only_arg(node)
        if name == "log1p":
            inner = math_call(ctx, arg, ("exp",))
            if inner is not None and not self._non_positive(only_arg(arg)):
                self._softplus(node, only_arg(arg), module, f"{name}(exp(x))")
            return
        if isinstance(arg, cst.BinaryOperation):
            self._log_of_sum(node, arg, module)
            return
        if isinstance(arg, cst.Call):
            self._log_of_call(node, arg, module)

    def _non_positive(self, exponent: cst.BaseExpression, depth: int = 0) -> bool:
        """The exponent is never positive, so exp of it cannot overflow (the stable form):
        `-abs(d)`, `lax.neg(lax.abs(d))`, `-d ** 2`, the max-shifted `x - x.max()` (also
        scaled by a positive constant, `2 * (l - maxl)`), or a name bound once to one."""
        ctx = self.ctx
        exponent = strip_parens(exponent)
        if depth > 3:
            return False
        if isinstance(exponent, cst.UnaryOperation) and isinstance(exponent.operator, cst.Minus):
            inner = strip_parens(exponent.expression)
        elif isinstance(exponent, cst.Call) and (qual(ctx, exponent.func) or "").endswith(".neg") and exponent.args:
            inner = strip_parens(exponent.args[0].value)
        elif isinstance(exponent, cst.BinaryOperation) and isinstance(exponent.operator, cst.Multiply):
            sides = (exponent.left, exponent.right)
            return any(
                positive_constant(ctx, strip_parens(a)) and self._non_positive(b, depth + 1) for a, b in (sides, sides[::-1])
            )
        elif isinstance(exponent, cst.BinaryOperation) and isinstance(exponent.operator, cst.Subtract):
            return self._is_max(exponent.right, depth)
        elif isinstance(exponent, cst.Name):
            value = self._single_value(exponent)
            return value is not None and self._non_positive(value, depth + 1)
        elif isinstance(exponent, cst.Call) and (qual(ctx, exponent.func) or "").rsplit(".", 1)[-1] == "where":
            return self._negated_abs_where(exponent)
        else:
            return False
        if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Power):
            return number(strip_parens(inner.right)) == 2
        return isinstance(inner, cst.Call) and (qual(ctx, inner.func) or "").rsplit(".", 1)[-1] in ("abs", "absolute")

    def _negated_abs_where(self, call: cst.Call) -> bool:
        """`where(x > 0, -x, x)`: -|x| written with a where (a stable sigmoid cross-entropy)."""
        args = positional(call)
        if len(args) != 3:
            return False
        condition, negated, plain = (strip_parens(a) for a in args)
        if isinstance(condition, cst.Name):
            condition = strip_parens(self._single_value(condition) or condition)
        code = self.ctx.code
        if not (isinstance(negated, cst.UnaryOperation) and isinstance(negated.operator, cst.Minus)):
            return False
        if code(strip_parens(negated.expression)).strip() != code(plain).strip():
            return False
        return (
            isinstance(condition, cst.Comparison)
            and len(condition.comparisons) == 1
            and isinstance(condition.comparisons[0].operator, (cst.GreaterThan, cst.GreaterThanEqual))
            and code(strip_parens(condition.left)).strip() == code(plain).strip()
        )

    def _is_max(self, node: cst.BaseExpression, depth: int) -> bool:
        """`jnp.max(x)`, `x.max()`, `x.real.max()`, `lax.stop_gradient(...)` of one, or a name bound to one."""
        node = strip_parens(node)
        if isinstance(node, cst.Name):
            value = self._single_value(node)
            return value is not None and depth < 3 and self._is_max(value, depth + 1)
        if not isinstance(node, cst.Call):
            return False
        tail = node.func.attr.value if isinstance(node.func, cst.Attribute) else (qual(self.ctx, node.func) or "").rsplit(".", 1)[-1]
        if tail == "stop_gradient" and node.args:
            return self._is_max(node.args[0].value, depth)
        return tail in ("max", "amax", "nanmax")

    def _single_value(self, name: cst.Name) -> cst.BaseExpression | None:
        owner = self.ctx.scope.lookup(name.value)
        values = owner.values.get(name.value, []) if owner is not None else []
        return values[0] if len(values) == 1 and name.value not in owner.params else None

    def _not_small(self, x: cst.BaseExpression) -> bool:
        """`x` in `log(1 + x)` is never close to 0, so log1p gains nothing: a count
        (`popsize / 2`, `len(x) / 2.0`) or a constant such as `threshold=0.999`."""
        value = known_number(self.ctx, strip_parens(x))
        if value is not None:
            return abs(value) >= 1e-2
        return integer_valued(self.ctx, x) and all(
            number(strip_parens(op.right)) is not None
            for op in descendants(x)
            if isinstance(op, cst.BinaryOperation) and isinstance(op.operator, (cst.Divide, cst.FloorDivide))
        )

    def _log_of_sum(self, node: cst.Call, arg: cst.BinaryOperation, module: str) -> None:
        ctx = self.ctx
        if isinstance(arg.operator, cst.Add):
            if is_one(arg.left) or is_one(arg.right):
                other = arg.right if is_one(arg.left) else arg.left
                if math_call(ctx, other, ("exp",)) is not None:
                    if not self._non_positive(only_arg(other)):
                        self._softplus(node, only_arg(other), module, "log(1 + exp(x))")
                    return
                if not self._not_small(other):
                    self._same_module(node, module, "log1p", arg_code(ctx, other), "log(1 + x)")
                return
            left, right = math_call(ctx, arg.left, ("exp",)), math_call(ctx, arg.right, ("exp",))
            if left is not None and right is not None and left[0] == right[0] == module:
                a, b = arg_code(ctx, only_arg(arg.left)), arg_code(ctx, only_arg(arg.right))
                self._same_module(node, module, "logaddexp", f"{a}, {b}", "log(exp(a) + exp(b))", lax_ok=False)
        elif isinstance(arg.operator, cst.Subtract) and is_one(arg.left) and not self._not_small(arg.right):
            self._same_module(node, module, "log1p", negated_code(ctx, arg.right), "log(1 - x)")

    def _same_module(self, node, module: str, func: str, args: str, original: str, lax_ok: bool = True, call=None) -> None:
        ctx = self.ctx
        call = node if call is None else call
        if module == "jax.lax" and not lax_ok:
            module = "jax.numpy"
        ref = same_module_ref(ctx, call.func, module) if module != "numpy" else (
            (ctx.code(call.func.value).strip(), []) if isinstance(call.func, cst.Attribute) else None
        )
        short = {"jax.numpy": "jnp", "jax.lax": "lax", "numpy": "np"}[module]
        better = f"{short}.{func}({'a, b' if func == 'logaddexp' else ('-x' if original == 'log(1 - x)' else 'x')})"
        fix = None
        if ref is not None:
            prefix, steps = ref
            fix = ([ReplaceNode(node, f"{prefix}.{func}({args})"), *steps], True, f"use {prefix}.{func}")
        self.report(node, self.message.format(original=original, better=better), fix)

    def _softplus(self, node: cst.Call, x: cst.BaseExpression, module: str, original: str) -> None:
        fix = None
        if module != "numpy":
            fix = self._nn_fix(node, "softplus", arg_code(self.ctx, x), safe=True)
        self.report(node, self.message.format(original=original, better="jax.nn.softplus(x)"), fix)

    def _nn_fix(self, node, func: str, args: str, safe: bool, nn_func: cst.BaseExpression | None = None):
        ctx = self.ctx
        ref = None
        if isinstance(nn_func, cst.Attribute):
            module = ctx.qualname(nn_func.value)
            if module in _SOFTMAX_MODULES:
                ref = (ctx.code(nn_func.value).strip(), [])
        if ref is None:
            ref = module_ref(ctx, "jax.nn")
        if ref is None:
            return None
        prefix, steps = ref
        return [ReplaceNode(node, f"{prefix}.{func}({args})"), *steps], safe, f"use {prefix}.{func}"

    def _log_of_call(self, node: cst.Call, arg: cst.Call, module: str) -> None:
        ctx = self.ctx
        qualified = qual(ctx, arg.func) or ""
        owner, _, name = qualified.rpartition(".")
        # log(softmax(x)) / log(sigmoid(x))
        if owner in _SOFTMAX_MODULES and name in ("softmax", "sigmoid") and module != "numpy":
            better = "log_softmax" if name == "softmax" else "log_sigmoid"
            allowed = ("axis", "where") if name == "softmax" else ()
            fix = None
            if all(a.keyword is None or a.keyword.value in allowed for a in arg.args) and not any(a.star for a in arg.args):
                args = ", ".join(_arg_text(ctx, a) for a in arg.args)
                fix = self._nn_fix(node, better, args, safe=True, nn_func=arg.func)
            self.report(node, self.message.format(original=f"log({name}(x))", better=f"jax.nn.{better}(x)"), fix)
            return
        # log(sum(exp(x))), log(exp(x).sum())
        exp_call, sum_args = None, None
        if name == "sum" and owner == module and positional(arg):
            exp_call = positional(arg)[0]
            sum_args = [a for a in arg.args if a.value is not exp_call]
        elif isinstance(arg.func, cst.Attribute) and arg.func.attr.value == "sum" and ctx.qualname(arg.func) is None:
            exp_call = arg.func.value
            sum_args = list(arg.args)
        if exp_call is None or math_call(ctx, exp_call, ("exp",)) is None:
            return
        if math_call(ctx, exp_call, ("exp",))[0] != module or self._non_positive(only_arg(exp_call)):
            return  # a max-shifted sum is the stable form already
        fix = None
        if module != "numpy":
            fix_args = _sum_args(ctx, sum_args)
            if fix_args is not None:
                x = arg_code(ctx, only_arg(exp_call))
                fix = self._nn_fix(node, "logsumexp", ", ".join([x, *fix_args]), safe=True)
        self.report(node, self.message.format(original="log(sum(exp(x)))", better="jax.nn.logsumexp(x)"), fix)

    # binary-operation patterns -----------------------------------------------------
    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        ctx = self.ctx
        if isinstance(node.operator, cst.Subtract) and is_one(node.right):
            found = math_call(ctx, node.left, ("exp",))
            if found is not None:
                x = arg_code(ctx, only_arg(node.left))
                self._same_module(node, found[0], "expm1", x, "exp(x) - 1", call=node.left)
            return
        if not isinstance(node.operator, cst.Divide):
            return
        # 1 / (1 + exp(-x))  and  exp(x) / (1 + exp(x))
        denominator = node.right
        if not (isinstance(denominator, cst.BinaryOperation) and isinstance(denominator.operator, cst.Add)):
            return
        if is_one(denominator.left):
            term = denominator.right
        elif is_one(denominator.right):
            term = denominator.left
        else:
            return
        found = math_call(ctx, term, ("exp",))
        if found is None:
            return
        exponent = only_arg(term)
        x = None
        if is_one(node.left):
            if isinstance(exponent, cst.UnaryOperation) and isinstance(exponent.operator, cst.Minus):
                x = exponent.expression
        else:
            numerator = math_call(ctx, node.left, ("exp",))
            if numerator is not None and ctx.code(only_arg(node.left)).strip() == ctx.code(exponent).strip():
                x = exponent
        if x is None:
            return
        fix = None
        if found[0] != "numpy":
            fix = self._nn_fix(node, "sigmoid", arg_code(ctx, x), safe=False)
        self.report(node, self.message.format(original="1 / (1 + exp(-x))", better="jax.nn.sigmoid(x)"), fix)


# the function a message recommends -> names that mark code implementing that function
_IMPLEMENTS = {
    "log1p": ("log1p",),
    "expm1": ("expm1",),
    "logaddexp": ("logaddexp",),
    "softplus": ("softplus", "logaddexp"),
    "logsumexp": ("logsumexp",),
    "log_softmax": ("log_softmax",),
    "log_sigmoid": ("log_sigmoid",),
    "sigmoid": ("sigmoid", "logistic", "expit"),
}


def _arg_text(ctx, arg: cst.Arg) -> str:
    value = arg_code(ctx, arg.value)
    return f"{arg.keyword.value}={value}" if arg.keyword is not None else value


def _sum_args(ctx, args: list[cst.Arg]) -> list[str] | None:
    """`axis`/`keepdims` of a sum as logsumexp keywords; None if anything else is passed."""
    result = []
    for index, arg in enumerate(args):
        if arg.star:
            return None
        if arg.keyword is None:
            if index != 0:
                return None
            result.append(f"axis={arg_code(ctx, arg.value)}")
        elif arg.keyword.value in ("axis", "keepdims"):
            result.append(_arg_text(ctx, arg))
        else:
            return None
    return result


# ---------------------------------------------------------------------------------
# JG804

DEBUG_OPTIONS = frozenset({"jax_debug_nans", "jax_debug_infs", "jax_disable_jit"})
_TRUE_LITERALS = ("True", "1")


def is_test_path(path: str) -> bool:
    normalized = path.replace("\\", "/")
    base = os.path.basename(normalized)
    if base == "conftest.py" or base.startswith("test_") or base.endswith("_test.py") or base.endswith("_tests.py"):
        return True
    parts = normalized.split("/")[:-1]
    return any(part in ("tests", "test", "testing") for part in parts)


@register
class DebugFlagCommitted(Rule):
    code = "JG804"
    name = "debug-flag-committed"
    summary = "A debugging flag (jax_debug_nans, disable_jit) switched on in library code"
    message = "{what} in library code slows every caller down (debugging aid); enable it from a test, a script's __main__ block or the environment"
    default_on = False
    what = """
        Flags `jax.config.update("jax_debug_nans" / "jax_debug_infs" / "jax_disable_jit", True)`,
        the same set through `os.environ["JAX_DEBUG_NANS"]`, and `jax.disable_jit()`, in
        library code. Test files (`test_*.py`, `*_test.py`, files under `tests/`),
        `conftest.py`, `if __name__ == "__main__":` blocks and a script's entry points (`main`,
        `_main`, what the `__main__` block calls or hands to `app.run`) are never flagged; nor
        is a flag set behind a guard (`if not jit:`, `if self.debug:`), in a class or function
        named for debugging (`ForEachClientDebugBackend`), or a `with jax.disable_jit():` around
        an abstract trace or JAX's internals (`jax.eval_shape`, `ad.linearize`), which needs
        the inner jits inlined.

        Opt-in. Measured on 38 real JAX packages (the 20 it was tuned on and 18 others):
        before these exceptions it reported 7 findings, all deliberate; it now reports none.
    """
    why = """
        The NaN/Inf checkers pull every value back to the host and re-run jitted functions
        op by op when they fire, and `disable_jit` runs everything eagerly: useful while
        debugging, a large slowdown when left in code that others import.
    """
    example = """
        import jax

        jax.config.update("jax_debug_nans", True)

        def train_step(params, batch):
            return params
    """
    use_instead = """
        import jax

        def train_step(params, batch):
            return params

        if __name__ == "__main__":
            jax.config.update("jax_debug_nans", True)
    """
    invalid = (
        "from jax import config\nconfig.update('jax_disable_jit', 1)\n",
        "import jax\ndef run(f, x):\n    with jax.disable_jit():\n        return f(x)\n",
        "import os\nos.environ['JAX_DEBUG_NANS'] = 'True'\nimport jax\n",
        "import jax\nclass Trainer:\n    def __init__(self):\n        jax.config.update('jax_debug_infs', True)\n",
        "import flax.linen as nn\nimport jax\nclass Net(nn.Module):\n    def setup(self):\n"
        "        jax.config.update('jax_debug_nans', True)\n",
    )
    valid = (
        "import jax\nif __name__ == '__main__':\n    jax.config.update('jax_debug_nans', True)\n",
        "import jax\njax.config.update('jax_debug_nans', False)\njax.config.update('jax_enable_x64', True)\n",
        "import jax\ndef configure(debug):\n    jax.config.update('jax_debug_nans', debug)\n",
        "import jax\nwith jax.disable_jit(False):\n    pass\n",
        "import jax\ndef main():\n    jax.config.update('jax_debug_nans', True)\nif __name__ == '__main__':\n    main()\n",
        # optax style: a closure whose debugging is the caller's choice
        "import jax\ndef make_step(debug=False):\n    def step(x):\n        with jax.disable_jit(debug):\n"
        "            return x\n    return step\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # inside a __main__ block or an entry point, behind a guard, or in a debugging facility
        self.deliberate = 0
        self.skip = is_test_path(ctx.path)
        self._entries: set[str] | None = None

    def _is_deliberate(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.If):
            return is_main_guard(node) or not _literal_test(node.test)  # `if not jit:`, `if debug:`
        if isinstance(node, cst.IfExp):
            return not _literal_test(node.test)
        name = node.name.value  # type: ignore[attr-defined]
        if "debug" in name.lower():
            return True  # `class ForEachClientDebugBackend`, `def debug_step()`: meant for debugging
        scope = self.ctx.facts.scopes.get(node)
        at_top = scope is not None and scope.parent is not None and scope.parent.kind == "module"
        return isinstance(node, cst.FunctionDef) and at_top and name in self._entry_points()

    def _entry_points(self) -> set[str]:
        """`main`, `_main`, module-level functions the `__main__` block refers to, and those they
        refer to (`def main(): app.run(_main)`): a script's code, not a library's."""
        if self._entries is None:
            module = self.ctx.facts.module_scope
            found = {"main", "_main"}
            pending = [s for s in self.ctx.module.body if isinstance(s, cst.If) and is_main_guard(s)]
            pending += [module.defs[name].node for name in found if name in module.defs]
            while pending:
                for name in names_in(pending.pop()):
                    if name in module.defs and name not in found:
                        found.add(name)
                        pending.append(module.defs[name].node)
            self._entries = found
        return self._entries

    def _enter(self, node) -> None:
        if self._is_deliberate(node):
            self.deliberate += 1

    def _leave(self, node) -> None:
        if self._is_deliberate(node):
            self.deliberate -= 1

    visit_If = visit_IfExp = visit_FunctionDef = visit_ClassDef = _enter
    leave_If = leave_IfExp = leave_FunctionDef = leave_ClassDef = _leave

    def _functional(self, call: cst.Call) -> bool:
        """`with jax.disable_jit():` around an abstract trace or JAX's internals (`eval_shape`,
        `ad.linearize`): it makes the inner jits visible to the trace, a feature, not debugging."""
        for statement in reversed(self.ctx.statement_stack):
            if isinstance(statement, cst.With) and any(item.item is call for item in statement.items):
                return any(
                    isinstance(inner, cst.Call) and (self.ctx.qualname(inner.func) or "").startswith(_TRACE_INTERNALS)
                    for inner in descendants(statement.body)
                )
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if self.skip or self.deliberate:
            return
        ctx = self.ctx
        qualified = ctx.qualname(node.func)
        if qualified in ("jax.config.update", "jax.config.config.update"):  # also the old module's
            args = positional(node)
            if len(args) == 2 and literal_str(args[0]) in DEBUG_OPTIONS and is_true_literal(args[1]):
                self.report(node, self.message.format(what=f"jax.config.update({literal_str(args[0])!r}, True)"))
        elif qualified == "jax.disable_jit":
            value = positional(node)[0] if positional(node) else keyword(node, "disable")
            if (value is None or is_true_literal(value)) and not self._functional(node):
                self.report(node, self.message.format(what="jax.disable_jit()"))
        elif qualified in ("os.environ.setdefault", "os.putenv"):
            args = positional(node)
            if len(args) == 2 and (literal_str(args[0]) or "").lower() in DEBUG_OPTIONS and is_true_literal(args[1]):
                self.report(node, self.message.format(what=f"setting {literal_str(args[0])}"))

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.skip or self.deliberate:
            return
        for target in node.targets:
            subscript = target.target
            if isinstance(subscript, cst.Subscript) and self.ctx.qualname(subscript.value) == "os.environ":
                key = environ_key(subscript)
                if key is not None and key.lower() in DEBUG_OPTIONS and is_true_literal(node.value):
                    self.report(node, self.message.format(what=f"setting {key}"))


# Abstract traces and JAX's internals: code under them sees tracers, not values.
_TRACE_INTERNALS = (
    "jax.eval_shape", "jax.make_jaxpr", "jax.interpreters.", "jax.core.", "jax.extend.", "jax._src.",
    "jax.linear_util", "jax.api_util.",
)


def _literal_test(test: cst.BaseExpression) -> bool:
    return isinstance(test, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(test, cst.Name) and test.value in ("True", "False", "None")
    )
