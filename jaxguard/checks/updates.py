"""JG301-JG303: JAX arrays are immutable (sharp bits: "In-Place Updates")."""

from __future__ import annotations

import libcst as cst

from jaxguard.checks._common import unrebound_param
from jaxguard.lint import kinds
from jaxguard.lint.engine import RemoveNode, ReplaceNode
from jaxguard.lint.facts import literal_int, literal_str, positional
from jaxguard.lint.registry import Rule, register
from jaxguard.lint.walk import descendants

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
    summary = "In-place assignment to an immutable JAX array raises TypeError; use x.at[idx].set(value)"
    message = "JAX arrays are immutable: '{target} {operator} ...' raises TypeError; use {name} = {name}.at[...].{op}(...)"
    fix_kind = "autofix"
    what = """
        Flags item assignment `x[i] = v` and augmented item assignment `x[i] += v` on a JAX
        array. Not the parameters of a Pallas kernel, which are mutable Refs whatever their
        annotation says (a function given to `pallas_call`, also as a partial bound to a name:
        `kernel = functools.partial(body, ...)`, then `pl.pallas_call(kernel, ...)`).
    """
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
        # made an array on the path that rebinds it, then updated after the `if`
        "import jax.numpy as jnp\ndef f(x, n):\n    if n is not None:\n        x = jnp.repeat(x, n, axis=0)\n"
        "    x[:, :2] = 0.0\n    return x\n",
        # annotated as an array, not named as a Ref: an array
        "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x: jnp.ndarray):\n    x[0] = 1.0\n    return x\n",
        "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n",
        "import jax.numpy as jnp\ndef f():\n    y = jnp.ones((2, 2))\n    y[:, 1] *= 2\n    return y\n",
        "import jax\n@jax.jit\ndef f(x):\n    x[0] = 0.0\n    return x\n",
        "from jax import numpy as np\nz = np.arange(5)\nz[1:3] -= 1\n",
        # the parts of a split joined again: an array
        "import jax.numpy as jnp\ndef f(x):\n    y = jnp.concatenate(jnp.split(x, 2))\n    y[0] = 0.0\n    return y\n",
        # an array leaf of a nested pytree
        "import jax.numpy as jnp\nparams = [{'w': jnp.ones((2, 2)), 'b': jnp.zeros(2)}]\nparams[0]['w'][0, 0] = 0.0\n",
        "import jax\n@jax.jit\ndef f(params):\n    params['layer']['w'][..., 0] = 0.0\n    return params\n",
        # the same body as a partial given to jit, not to pallas_call: its parameters are arrays
        "import functools\nimport jax\nfrom jax.experimental import pallas as pl\n"
        "def body(x_ref: jax.Array, o_ref: jax.Array, stage: jax.Array, *, scale: float):\n"
        "    stage[0] = x_ref[0] * scale\n    return stage\n"
        "def f(x):\n    kernel = functools.partial(body, scale=2.0)\n    return jax.jit(kernel)(x, x, x)\n",
    )
    valid = (
        # the `else` arm runs on what held before the `if`: a NumPy array there
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\ndef pw(x, use_jax=True):\n"
        "    xp = jnp if use_jax else np\n    d = xp.square(x) - 1.0\n    if use_jax:\n        d = jax.nn.relu(d)\n"
        "    else:\n        d[d < 0] = 0\n    return d\n",
        # a Pallas kernel's output Ref annotated as an array, passed to a wrapper of pallas_call
        "import jax\nimport jax.numpy as jnp\nfrom mylib import pallas_call\n"
        "def kernel(x_ref: jnp.ndarray, out_ref: jnp.ndarray):\n    out_ref[...] = x_ref[...]\n    out_ref[...] += 1\n"
        "@jax.jit\ndef f(x):\n    return pallas_call(kernel, out_shape=x)(x)\n",
        # ... and a scratch Ref of a kernel given to pallas_call as a partial bound to a name
        "import functools\nimport jax\nfrom jax.experimental import pallas as pl\n"
        "def body(x_ref: jax.Array, o_ref: jax.Array, stage: jax.Array, *, scale: float):\n"
        "    stage[0] = x_ref[0] * scale\n    o_ref[0] = stage[0]\n"
        "def f(x):\n    kernel = functools.partial(body, scale=2.0)\n    return pl.pallas_call(kernel, out_shape=x)(x)\n",
        # a fori_loop's list carry: `val[1] = ...` sets an item of the list
        "import jax\ndef series(z, n):\n    def body(i, val):\n        val[1] = val[1] * z\n        val[0] += val[1]\n"
        "        return val\n    return jax.lax.fori_loop(1, n, body, [z, z])[0]\n",
        "import numpy as np\nnumpy_array = np.zeros((3, 3), dtype=np.float32)\nnumpy_array[1, :] = 1.0\n",
        "import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)\n",
        "import jax, jax.numpy as jnp\nr = jax.new_ref(jnp.zeros(3))\nr[0] = 1.0\n",
        "import jax.numpy as jnp\nimport numpy as np\nx = jnp.zeros(3)\nx = np.asarray(x).copy()\nx[0] = 1.0\n",
        "import jax\n@jax.jit\ndef f(x):\n    out = [0, 0]\n    out[0] = x\n    return out\n",
        # a pytree class of its own that defines item assignment (through .at[].set)
        "import jax\nclass DoubleDouble:\n    def __setitem__(self, index, value):\n        self.hi = self.hi.at[index].set(value.hi)\n"
        "@jax.jit\ndef refine(g: DoubleDouble, new):\n    g[0] = new\n    return g\n",
        # a traced argument used as a dict: its items are the pytree's leaves, settable
        "import jax\n@jax.jit\ndef f(txs):\n    for key, tx in txs.items():\n        txs[key] = tx * 2\n    return txs\n",
        # a string key: a dict of the pytree, not an array
        "import jax\n@jax.jit\ndef update(params, new):\n    params['online'] = new\n    return params\n",
        # a list of arrays, item replaced (not an array item)
        "import jax.numpy as jnp\nlayers = [jnp.ones(2), jnp.ones(3)]\nlayers[0] = jnp.zeros(2)\n",
        # jnp.split gives a list: its item is replaced, no array is changed (haiku-geometric)
        "import jax.numpy as jnp\ndef offsets(senders, sizes):\n    parts = jnp.split(senders, sizes)\n"
        "    for i in range(1, len(parts)):\n        parts[i] -= sizes[i - 1]\n    return jnp.concatenate(parts)\n",
        "import numpy as np\ntables = [{'w': np.ones((2, 2))}]\ntables[0]['w'][0, 0] = 0.0\n",
        # a jitted function's argument it reads by string keys is a dict of the pytree, whatever
        # key it writes (qurveros' gate-fixing parameters)
        "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef fix(points, params):\n    for name in ['left', 'right']:\n"
        "        params[name] = jnp.clip(params[name], 0.1)\n    return points * params['left']\n",
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
        """`x[i]` with `x` a JAX array; or a nested `params[0]["w"][0, 0]` whose leaf is one."""
        if not isinstance(target, cst.Subscript) or _string_key(target):
            return False  # `params["online"] = w`: a dict of the pytree, not an array
        base = target.value
        if isinstance(base, cst.Name):
            if self.ctx.kind_of(base) != kinds.JAX:
                return False
            # a loop body's carry is what the loop was started with (`fori_loop(..., [a, b])`: a
            # list), and an argument the function reads by string keys (`p["w"]`) is a dict of
            # the pytree: only an index no list or dict takes proves it an array
            pytree = self._carry_as_received(base.value) or self._read_by_keys(base.value)
            return _array_index(target) if pytree else True
        return isinstance(base, cst.Subscript) and self._is_array_leaf(base) and _array_index(target)

    def _carry_as_received(self, name: str) -> bool:
        """A parameter of a `lax` loop body that the body does not rebind."""
        return unrebound_param(self.ctx, name) and self.ctx.facts.lax_loop_of(self.ctx.function) is not None

    def _read_by_keys(self, name: str) -> bool:
        """A parameter of the function, not rebound, that it indexes with a string somewhere."""
        if not unrebound_param(self.ctx, name):
            return False
        function = self.ctx.function
        cache = self.ctx.facts.derived.setdefault("params-read-by-keys", {})
        if function.node not in cache:
            cache[function.node] = {
                node.value.value for node in descendants(function.node.body)
                if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and _string_key(node)
            }
        return name in cache[function.node]

    def _is_array_leaf(self, node: cst.Subscript) -> bool:
        """An item reached by indexing containers: of a traced argument (a pytree whose leaves
        are arrays) through string keys, or of a literal list/dict whose element is a jnp call."""
        path: list[cst.Subscript] = []
        root: cst.BaseExpression = node
        while isinstance(root, cst.Subscript):
            path.append(root)
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        ctx = self.ctx
        if ctx.kind_of(root) == kinds.JAX:  # an array, or a traced pytree: every leaf is an array
            return True
        owner = ctx.scope.lookup(root.value)
        values = owner.values.get(root.value) if owner is not None else None
        if not values or len(values) != 1 or values[0] is None:
            return False
        value = values[0]
        for step in reversed(path):
            value = _literal_item(value, step)
            if value is None:
                return False
        return ctx.kind_of(value) == kinds.JAX

    def _report(self, target: cst.Subscript, op: str, operator: str, statement) -> None:
        ctx = self.ctx
        name = ctx.code(target.value).strip()
        message = self.message.format(target=ctx.code(target).strip(), operator=operator, name=name, op=op)
        fix = None
        if statement is not None and ctx.rebinds(name):
            index = _slice_source(ctx, target)
            value = ctx.code(statement.value)
            text = f"{name} = {name}.at[{index}].{op}({value})"
            function = ctx.function
            # a parameter may be a pytree rather than an array; a nested item is stored back
            # into its container, which other references to that container then see
            safe = isinstance(target.value, cst.Name) and not (function is not None and name in function.params)
            fix = ([ReplaceNode(statement, text)], safe, f"rewrite as {name}.at[...].{op}(...)")
        self.report(target, message, fix)


def _single_index(target: cst.Subscript) -> cst.BaseExpression | None:
    if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
        return target.slice[0].slice.value
    return None


def _string_key(target: cst.Subscript) -> bool:
    index = _single_index(target)
    return index is not None and literal_str(index) is not None


def _array_index(target: cst.Subscript) -> bool:
    """An index only an array takes: several dimensions, or an ellipsis (a list or dict
    would take `[0]` too)."""
    if len(target.slice) > 1:
        return True
    index = _single_index(target)
    return isinstance(index, cst.Ellipsis) or (isinstance(index, cst.Tuple) and len(index.elements) > 1)


def _literal_item(container: cst.BaseExpression, step: cst.Subscript) -> cst.BaseExpression | None:
    """`[a, b][1]` -> b, `{"w": a}["w"]` -> a; None unless both are literal."""
    index = _single_index(step)
    if index is None:
        return None
    if isinstance(container, (cst.List, cst.Tuple)):
        position = literal_int(index)
        elements = container.elements
        if position is not None and -len(elements) <= position < len(elements):
            element = elements[position]
            return None if isinstance(element, cst.StarredElement) else element.value
    if isinstance(container, cst.Dict):
        key = literal_str(index)
        for element in container.elements:
            if isinstance(element, cst.DictElement) and key is not None and literal_str(element.key) == key:
                return element.value
    return None


AT_OPS = kinds.AT_METHODS - {"get"}
# Pure functions of jax.numpy whose result is the whole point; a bare call discards it.
# jax.numpy's own namespaces; `jax.numpy.testing...` is a misresolved `np` alias (`import jax.numpy as np`)
JNP_NAMESPACES = frozenset({"jax.numpy", "jax.numpy.linalg", "jax.numpy.fft"})
NOT_PURE = frozenset({"jax.numpy.save", "jax.numpy.savez", "jax.numpy.load", "jax.numpy.set_printoptions", "jax.numpy.printoptions"})
SORTING = frozenset({"jax.numpy.sort"})
# Called as statements to check an argument: they raise on a bad dtype or shape.
VALIDATING = frozenset({"jax.numpy.dtype", "jax.numpy.broadcast_shapes", "jax.numpy.result_type", "jax.numpy.promote_types"})


@register
class DiscardedFunctionalUpdate(Rule):
    code = "JG302"
    name = "discarded-functional-update"
    summary = "The result of x.at[idx].set(...) is discarded: JAX updates are out-of-place"
    message = "the result of {call} is discarded: JAX updates are out-of-place, '{name}' is unchanged"
    message_pure = "the result of {call} is discarded: jax.numpy functions only return a value, so this statement does nothing"
    fix_kind = "autofix"
    what = """
        Flags `x.at[i].set(v)` (any `.at[]` update), `x.sort()`, `jnp.sort(x)` and other
        `jax.numpy` calls of an existing array (`jnp.clip(a, 0, 1)`) used as bare statements.
        A new array built from literals and thrown away (`jnp.array([[0, 1]])` alone) is dead
        code, not an update the author expected: not flagged.
    """
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
        # in a Pallas module, an array the code made is still an array
        "import jax.numpy as jnp\nfrom jax.experimental import pallas as pl\ndef f(x):\n    acc = jnp.zeros(3)\n"
        "    acc.at[0].set(x)\n    return acc\n",
    )
    valid = (
        # a dtype checked: `jnp.dtype` raises on a bad one
        "import jax.numpy as jnp\ndef attention(q, dtype=None):\n    if dtype is not None:\n        jnp.dtype(dtype)\n    return q\n",
        # a Pallas Ref's `.at[...]` is a view: `.set` stores into the buffer
        "import jax\nfrom jax.experimental import pallas as pl\ndef kernel(x_ref, o_ref, scratch):\n"
        "    scratch.at[0:2].set(x_ref[0:2])\n    o_ref.at[0:2].set(scratch[0:2])\n"
        "def f(x):\n    return pl.pallas_call(kernel, out_shape=x)(x)\n",
        "import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)\n",
        "import numpy as np\nv = np.arange(4)\nv.sort()\n",
        "import jax\nimport jax.numpy as jnp\nx = jnp.ones(3)\njax.block_until_ready(x)\nx.block_until_ready()\n",
        "items = [3, 1, 2]\nitems.sort()\n",
        # a new array from literals, left over (a test's `points =` removed): dead code, nothing updated
        "import jax.numpy as jnp\ndef test_hull():\n    jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])\n",
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
            if not self._may_be_ref(updated):
                self._report(node, call, updated, fixable=True)
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "sort" and ctx.kind_of(func.value) == kinds.JAX:
            self._report(node, call, func.value, fixable=True)
            return
        qualified = ctx.qualname(func)
        if qualified is None or qualified.rpartition(".")[0] not in JNP_NAMESPACES or qualified in NOT_PURE | VALIDATING:
            return
        if any(isinstance(s, cst.Try) for s in ctx.statement_stack):
            return  # called for the exception it may raise (`jnp.broadcast_shapes(a, b)`)
        args = positional(call)
        first = args[0] if args else None
        if qualified in SORTING:
            self._report(node, call, first, fixable=True)
        elif isinstance(first, (cst.Name, cst.Attribute, cst.Subscript)):
            # a comparison or computation of an existing array: nothing it returns is an
            # update of its input (a new array built from literals, `jnp.array([[0, 1]])`
            # alone, is dead code: no array the author could think was changed)
            self.report(call, self.message_pure.format(call=self.ctx.code(call.func).strip() + "(...)"))

    def _may_be_ref(self, updated: cst.BaseExpression) -> bool:
        """A Ref's `.at[i].set(v)` stores in place: a Ref, or in a module that uses Pallas
        anything not proven an array."""
        kind = self.ctx.kind_of(updated)
        return kind == kinds.REF or (kind != kinds.JAX and self.ctx.facts.imports_pallas)

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
    from jaxguard.lint.notebook import starts_cell

    last: set[cst.Expr] = set()
    body = list(module.body)
    for index, statement in enumerate(body):
        following = body[index + 1] if index + 1 < len(body) else None
        ends_cell = following is None or starts_cell(following)
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
    summary = "jax.ops.index_update and friends were removed; use x.at[idx] methods"
    message = "{name} was removed from JAX; use x.at[idx].{op}(y)"
    fix_kind = "autofix"
    removed_in = (0, 3, 2)
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
