"""JG301-JG303: JAX arrays are immutable (sharp bits: "In-Place Updates")."""

from __future__ import annotations

import libcst as cst

from jaxguard.lint import kinds
from jaxguard.lint.engine import RemoveNode, ReplaceNode
from jaxguard.lint.facts import positional
from jaxguard.lint.registry import Rule, register

AUGMENTED_TO_AT = {
    cst.AddAssign: "add",
    cst.SubtractAssign: "subtract",
    cst.MultiplyAssign: "multiply",
    cst.DivideAssign: "divide",
    cst.PowerAssign: "power",
}


def _slice_source(ctx, node: cst.Subscript) -> str:
    """The text between the brackets of `x[...]`, exactly as written."""
    code = ctx.code(node)
    value = ctx.code(node.value)
    inner = code[len(value) :].strip()
    return inner[inner.index("[") + 1 : inner.rindex("]")]


@register
class InPlaceUpdate(Rule):
    code = "JG301"
    name = "in-place-update"
    message = "JAX arrays are immutable: '{target} {operator} ...' raises TypeError; use {name} = {name}.at[...].{op}(...)"
    fix_kind = "autofix"
    what = "Flags item assignment `x[i] = v` and augmented item assignment `x[i] += v` on a JAX array."
    why = """
        JAX arrays cannot be changed in place: item assignment raises `TypeError: JAX arrays are
        immutable`. The functional form `x = x.at[i].set(v)` returns an updated copy (which XLA
        turns into an in-place update under jit when `x` is not used again).
    """
    example = """
        import jax.numpy as jnp

        grid = jnp.zeros((3, 3))
        grid[1, :] = 1.0
        grid[0, 0] += 5.0
    """
    use_instead = """
        import jax.numpy as jnp

        grid = jnp.zeros((3, 3))
        grid = grid.at[1, :].set(1.0)
        grid = grid.at[0, 0].add(5.0)
    """
    fix_safety = """
        `=`, `+=`, `-=`, `*=`, `/=` and `**=` are rewritten to `.at[].set/add/subtract/multiply/
        divide/power`. The fix is safe when the array was created by a `jax.numpy`/`jax` call
        in the same scope. When the name is a parameter of a traced function (most likely an
        array, but it could be a dict or list of the pytree), the fix is unsafe. Other
        operators (`//=`, `%=`, bitwise), and a name the function only reads (a global:
        `x = ...` would make it local and raise UnboundLocalError), are reported without a fix.
    """
    invalid = (
        "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n",
        "import jax.numpy as jnp\ndef f():\n    y = jnp.ones((2, 2))\n    y[:, 1] *= 2\n    return y\n",
        "import jax\n@jax.jit\ndef f(x):\n    x[0] = 0.0\n    return x\n",
        "from jax import numpy as np\nz = np.arange(5)\nz[1:3] -= 1\n",
    )
    valid = (
        "import numpy as np\nnumpy_array = np.zeros((3, 3), dtype=np.float32)\nnumpy_array[1, :] = 1.0\n",
        "import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)\n",
        "import jax, jax.numpy as jnp\nr = jax.new_ref(jnp.zeros(3))\nr[0] = 1.0\n",
        "import jax.numpy as jnp\nimport numpy as np\nx = jnp.zeros(3)\nx = np.asarray(x).copy()\nx[0] = 1.0\n",
        "import jax\n@jax.jit\ndef f(x):\n    out = [0, 0]\n    out[0] = x\n    return out\n",
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            for target in node.targets:
                if self._is_array_item(target.target):
                    self._report(target.target, "set", "=", None)
            return
        target = node.targets[0].target
        if self._is_array_item(target):
            self._report(target, "set", "=", node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self._is_array_item(node.target):
            op = AUGMENTED_TO_AT.get(type(node.operator))
            operator = self.ctx.code(node.operator).strip()
            self._report(node.target, op or "<op>", operator, node if op else None)

    def _is_array_item(self, target: cst.BaseExpression) -> bool:
        return (
            isinstance(target, cst.Subscript)
            and isinstance(target.value, cst.Name)
            and self.ctx.kind_of(target.value) == kinds.JAX
        )

    def _report(self, target: cst.Subscript, op: str, operator: str, statement) -> None:
        ctx = self.ctx
        name = target.value.value  # type: ignore[attr-defined]
        message = self.message.format(target=ctx.code(target).strip(), operator=operator, name=name, op=op)
        fix = None
        if statement is not None and ctx.rebinds(name):
            index = _slice_source(ctx, target)
            value = ctx.code(statement.value)
            text = f"{name} = {name}.at[{index}].{op}({value})"
            function = ctx.function
            safe = not (function is not None and name in function.params)
            fix = ([ReplaceNode(statement, text)], safe, f"rewrite as {name}.at[...].{op}(...)")
        self.report(target, message, fix)


AT_OPS = kinds.AT_METHODS - {"get"}
# Pure functions of jax.numpy whose result is the whole point; a bare call discards it.
NOT_PURE = frozenset({"jax.numpy.save", "jax.numpy.savez", "jax.numpy.load", "jax.numpy.set_printoptions", "jax.numpy.printoptions"})
SORTING = frozenset({"jax.numpy.sort"})


@register
class DiscardedFunctionalUpdate(Rule):
    code = "JG302"
    name = "discarded-functional-update"
    message = "the result of {call} is discarded: JAX updates are out-of-place, '{name}' is unchanged"
    fix_kind = "autofix"
    what = "Flags `x.at[i].set(v)` (any `.at[]` update), `x.sort()`, `jnp.sort(x)` and other `jax.numpy` calls used as bare statements."
    why = """
        NumPy habits like `a.sort()` or `np.put(...)` change an array in place. Their JAX
        counterparts return a new array and leave the original untouched, so a bare statement
        does nothing at all.
    """
    example = """
        import jax.numpy as jnp

        counts = jnp.zeros(4)
        counts.at[2].add(1)
        counts.sort()
    """
    use_instead = """
        import jax.numpy as jnp

        counts = jnp.zeros(4)
        counts = counts.at[2].add(1)
        counts = counts.sort()
    """
    fix_safety = """
        The fix assigns the result back to the array's name: `x.at[i].set(v)` becomes
        `x = x.at[i].set(v)`, `x.sort()` and `jnp.sort(x)` become `x = ...`. It is unsafe
        (applied with `--unsafe-fixes`): the code after it then sees the updated array,
        which is what the author meant but changes what the program computes. It is offered
        only when the updated array is a plain name that the statement's scope binds (a
        local or parameter, a name declared `global` or `nonlocal`, any name at module or
        class level): in a function that only reads a global `x`, `x = ...` would make `x`
        local and raise UnboundLocalError. Other discarded `jax.numpy` calls are reported
        without a fix (what the result should be bound to is for the author to say).
    """
    invalid = (
        "import jax.numpy as jnp\nx = jnp.zeros(3)\nx.at[0].set(1.0)\n",
        "import jax.numpy as jnp\ndef f(x):\n    jnp.sort(x)\n    return x\n",
        "import jax.numpy as jnp\nv = jnp.arange(4)\nv.sort()\n",
        "import jax.numpy as jnp\ndef f(a):\n    jnp.clip(a, 0, 1)\n    return a\n",
    )
    valid = (
        "import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)\n",
        "import numpy as np\nv = np.arange(4)\nv.sort()\n",
        "import jax\nimport jax.numpy as jnp\nx = jnp.ones(3)\njax.block_until_ready(x)\nx.block_until_ready()\n",
        "items = [3, 1, 2]\nitems.sort()\n",
        "import jax.numpy as jnp\ndef compatible(a, b):\n    try:\n        jnp.broadcast_shapes(a, b)\n        return True\n"
        "    except ValueError:\n        return False\n",
    )

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not isinstance(call, cst.Call) or self._displayed(node):
            return
        ctx = self.ctx
        func = call.func
        updated = kinds.at_update_base(call, AT_OPS)
        if updated is not None:
            self._report(node, call, updated, fixable=True)
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "sort" and ctx.kind_of(func.value) == kinds.JAX:
            self._report(node, call, func.value, fixable=True)
            return
        qualified = ctx.qualname(func)
        if qualified is None or not qualified.startswith("jax.numpy.") or qualified in NOT_PURE:
            return
        if any(isinstance(s, cst.Try) for s in ctx.statement_stack):
            return  # called for the exception it may raise (`jnp.broadcast_shapes(a, b)`)
        args = positional(call)
        first = args[0] if args else None
        self._report(node, call, first, fixable=qualified in SORTING)

    def _displayed(self, node: cst.Expr) -> bool:
        """A notebook cell's last expression is shown as the cell's output: not discarded."""
        if not self.ctx.path.endswith(".ipynb"):
            return False
        if "notebook_outputs" not in self.ctx.facts.derived:
            self.ctx.facts.derived["notebook_outputs"] = _cell_last_expressions(self.ctx.module)
        return node in self.ctx.facts.derived["notebook_outputs"]

    def _report(self, statement: cst.Expr, call: cst.Call, updated, fixable: bool) -> None:
        ctx = self.ctx
        call_text = ctx.code(call.func).strip() + "(...)"
        name = ctx.code(updated).strip() if updated is not None else "its input"
        fix = None
        if fixable and isinstance(updated, cst.Name) and ctx.rebinds(updated.value):
            text = f"{updated.value} = {ctx.code(call)}"
            # unsafe: later code sees the update (the intent, but a change of behaviour)
            fix = ([ReplaceNode(statement, text)], False, f"assign the result back to {updated.value}")
        self.report(call, self.message.format(call=call_text, name=name), fix)


def _cell_last_expressions(module: cst.Module) -> set[cst.Expr]:
    """The bare expression ending each notebook cell (cells start with a marker comment)."""
    from jaxguard.lint.notebook import is_cell_marker

    last: set[cst.Expr] = set()
    body = list(module.body)
    for index, statement in enumerate(body):
        following = body[index + 1] if index + 1 < len(body) else None
        ends_cell = following is None or any(
            line.comment is not None and is_cell_marker(line.comment.value) for line in following.leading_lines
        )
        if ends_cell and isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[-1], cst.Expr):
            last.add(statement.body[-1])
    return last


REMOVED_INDEX_OPS = {
    "jax.ops.index_update": "set",
    "jax.ops.index_add": "add",
    "jax.ops.index_mul": "multiply",
    "jax.ops.index_min": "min",
    "jax.ops.index_max": "max",
}


@register
class RemovedIndexOps(Rule):
    code = "JG303"
    name = "removed-index-ops"
    message = "{name} was removed from JAX; use x.at[idx].{op}(y)"
    fix_kind = "autofix"
    what = "Flags `jax.ops.index_update/index_add/index_mul/index_min/index_max` and imports of them."
    why = """
        These functions were removed from JAX (0.3.2): the import fails with `ImportError` and
        the attribute with `AttributeError`. The `.at[]` property replaces them.
    """
    example = """
        import jax
        import jax.numpy as jnp

        table = jnp.zeros((4, 4))
        table = jax.ops.index_update(table, jax.ops.index[1, :], 2.0)
    """
    use_instead = """
        import jax
        import jax.numpy as jnp

        table = jnp.zeros((4, 4))
        table = table.at[1, :].set(2.0)
    """
    fix_safety = """
        `jax.ops.index_update(x, idx, y)` becomes `x.at[idx].set(y)` (and so on), with
        `jax.ops.index[...]` unwrapped. An import of a removed name is deleted. Calls with
        keyword arguments or unpacking are reported without a fix.
    """
    invalid = (
        "import jax\nimport jax.numpy as jnp\nx = jnp.zeros(3)\nx = jax.ops.index_add(x, 0, 1.0)\n",
        "from jax.ops import index_update\nimport jax.numpy as jnp\nx = jnp.zeros(3)\nx = index_update(x, 1, 5.0)\n",
        "from jax import ops\nimport jax.numpy as jnp\ny = jnp.ones(3)\ny = ops.index_max(y, ops.index[:2], 0.5)\n",
    )
    valid = (
        "import jax\nimport jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].add(1.0)\n",
        "from jax.ops import segment_sum\n",
        "def index_update(x, i, v):\n    return x\ny = index_update([1], 0, 2)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.qualname(node.func)
        op = REMOVED_INDEX_OPS.get(qualified or "")
        if op is None:
            return
        args = positional(node)
        fix = None
        if len(args) == 3 and len(node.args) == 3:
            array, index, value = args
            fix = ([ReplaceNode(node, f"{_operand(ctx, array)}.at[{self._index(index)}].{op}({ctx.code(value).strip()})")], True, f"rewrite as .at[].{op}()")
        self.report(node, self.message.format(name=qualified.replace("jax.ops.", "jax.ops."), op=op), fix)

    def _index(self, index: cst.BaseExpression) -> str:
        ctx = self.ctx
        if isinstance(index, cst.Subscript) and ctx.qualname(index.value) == "jax.ops.index":
            return _slice_source(ctx, index)
        return ctx.code(index).strip()

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar) or node.module is None or node.relative:
            return
        if self.ctx.code(node.module) != "jax.ops":
            return
        removed = [a for a in node.names if f"jax.ops.{a.name.value}" in REMOVED_INDEX_OPS or a.name.value == "index"]
        if not removed:
            return
        kept = [a for a in node.names if a not in removed]
        statement = self.ctx.statement_stack[-1]
        if kept:
            names = ", ".join(self.ctx.code(a).strip().rstrip(",").strip() for a in kept)
            fix = ([ReplaceNode(node, f"from jax.ops import {names}")], True, "drop the removed names")
        elif isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            fix = ([RemoveNode(statement)], True, "delete the import")
        else:
            fix = None
        for alias in removed:
            name = f"jax.ops.{alias.name.value}"
            self.report(alias, self.message.format(name=name, op=REMOVED_INDEX_OPS.get(name, "set")), fix)


def _operand(ctx, node: cst.BaseExpression) -> str:
    """Source of `node`, parenthesized where `.at` would bind to only part of it."""
    text = ctx.code(node).strip()
    simple = (cst.Name, cst.Attribute, cst.Subscript, cst.Call)
    return text if isinstance(node, simple) or node.lpar else f"({text})"
