"""JG401: literal indices outside a statically known shape (sharp bits: "Out-of-Bounds Indexing")."""

from __future__ import annotations

import math

import libcst as cst

from jaxguard.checks._common import number, resolving_in
from jaxguard.lint.facts import argument, keyword, literal_int, positional
from jaxguard.lint.registry import Rule, register

_FILLED = {f"jax.numpy.{n}" for n in ("zeros", "ones", "empty", "full")}
_LIKE = {f"jax.numpy.{n}" for n in ("zeros_like", "ones_like", "empty_like", "full_like")}
_LITERALS = {"jax.numpy.array", "jax.numpy.asarray"}
_AT_METHODS = frozenset({"set", "add", "subtract", "multiply", "divide", "power", "min", "max", "apply", "get"})
_COMPOUND = (cst.If, cst.For, cst.While, cst.Try, cst.With, cst.Match)


def _shape_arg(node: cst.BaseExpression | None) -> tuple[int, ...] | None:
    if node is None:
        return None
    single = literal_int(node)
    if single is not None:
        return (single,) if single >= 0 else None
    if isinstance(node, (cst.Tuple, cst.List)):
        dims = [literal_int(e.value) for e in node.elements if not isinstance(e, cst.StarredElement)]
        if len(dims) == len(node.elements) and all(d is not None and d >= 0 for d in dims):
            return tuple(dims)  # type: ignore[arg-type]
    return None


# A trailing dimension whose size is not known: `jnp.array([m, s])` has shape (2, ...) whatever
# `m` and `s` are, so `[2]` is out of bounds and `[0, 5]` cannot be judged.
OPEN = -1


def _literal_shape(node: cst.BaseExpression) -> tuple[int, ...] | None:
    """Shape of a nested list/tuple display: exact for scalar literals; (len, OPEN) when the
    elements are other values (their own shape is unknown, the display's length is not)."""
    if isinstance(node, (cst.List, cst.Tuple)):
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            return None
        inner = [_literal_shape(e.value) for e in node.elements]
        if not inner:
            return (0,)
        if any(s is None for s in inner) or len(set(inner)) != 1:
            return (len(inner), OPEN)
        return (len(inner), *inner[0])  # type: ignore[misc]
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.Name, cst.UnaryOperation)):
        if isinstance(node, cst.Name) and node.value not in ("True", "False"):
            return None
        return ()
    return None


@register
class ConstantOutOfBounds(Rule):
    code = "JG401"
    name = "constant-out-of-bounds"
    summary = "A literal index outside an array's known shape: JAX clamps reads and drops writes silently"
    message = "a literal index outside a statically known shape"
    fix_kind = "suggest"
    what = """
        Flags a literal index outside the shape of an array whose shape is known from the source:
        `jnp.zeros/ones/empty/full/arange/eye/identity/linspace` with literal arguments, `jnp.array`
        of a list display (its length is known whatever its elements: `jnp.array([m, s])[2]`),
        and the `*_like` of those. Covers reads `x[i]`, negative indices and
        `.at[i]` updates, through names bound once (or in straight-line code) in the same scope.
    """
    why = """
        NumPy raises `IndexError` for an out-of-bounds index, but JAX cannot raise from an
        accelerator: reads are clamped to the last element (`jnp.arange(10)[11]` is 9) and
        `.at[i].set(...)` updates out of bounds are silently dropped. The program runs and
        computes the wrong thing. Fix the index; if out-of-bounds access is intended, say so with
        `x.at[i].get(mode="fill", fill_value=...)` or `mode="drop"`.
    """
    example = """
        import jax.numpy as jnp

        values = jnp.arange(10)
        last = values[11]
    """
    use_instead = """
        import jax.numpy as jnp

        values = jnp.arange(10)
        last = values[9]
    """
    invalid = (
        "import jax.numpy as jnp\nprint(jnp.arange(10)[11])\n",
        "import jax.numpy as jnp\ngrid = jnp.zeros((3, 3))\ngrid = grid.at[1, 3].set(1.0)\n",
        "from jax import numpy as jnp\ndef f():\n    w = jnp.array([[1, 2], [3, 4]])\n    return w[-3, 0]\n",
        "import jax\nimport jax.numpy as jnp\nTABLE = jnp.eye(4)\n@jax.jit\ndef f(x):\n    return x * TABLE[..., 4]\n",
        "import jax.numpy as jnp\nclass Model:\n    def __call__(self, x):\n        h = jnp.linspace(0.0, 1.0, 5)\n"
        "        h = h.at[7].add(x)\n        return h\n",
    )
    valid = (
        "import numpy as np\ntry:\n    np.arange(10)[11]\nexcept IndexError:\n    pass\n",
        "import jax.numpy as jnp\nx = jnp.arange(10)\nprint(x[9], x[-10], x[None, 3], x[2:20])\n",
        "import jax.numpy as jnp\nx = jnp.zeros(3)\nif True:\n    x = jnp.zeros(5)\nprint(x[4])\n",
        "import jax.numpy as jnp\ndef f(n):\n    x = jnp.zeros(3)\n    x = jnp.zeros(n)\n    return x[5]\n",
        "import jax.numpy as jnp\nx = jnp.zeros(3)\ny = x.at[5].get(mode='fill', fill_value=0.0)\n",
        "import jax.numpy as jnp\ndef f(x):\n    x = jnp.zeros((2, 2))\n    return x\ndef g(x):\n    return x[5]\n",
        "import jax.numpy as jnp\ntable = jnp.zeros(2)\ndef grow():\n    global table\n    table = jnp.zeros(10)\n"
        "print(table[5])\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # per scope: name -> shape, for straight-line bindings in the current function body
        self.shapes: dict[object, dict[str, tuple[int, ...] | None]] = {}
        self.depth: dict[object, int] = {}

    # shapes ---------------------------------------------------------------------------------
    def shape_of(self, node: cst.BaseExpression, _depth: int = 0) -> tuple[int, ...] | None:
        if _depth > 5:
            return None
        ctx = self.ctx
        if isinstance(node, cst.Name):
            return self._name_shape(node.value)
        if isinstance(node, cst.Call):
            name = ctx.qualname(node.func)
            if name in _FILLED:
                return _shape_arg(argument(node, 0, "shape"))
            if name in _LIKE:
                if keyword(node, "shape") is not None:
                    return _shape_arg(keyword(node, "shape"))
                first = argument(node, 0, "a")
                return self.shape_of(first, _depth + 1) if first is not None else None
            if name == "jax.numpy.arange":
                return self._arange(node)
            if name == "jax.numpy.eye":
                n = argument(node, 0, "N")
                m = argument(node, 1, "M")
                rows = _shape_arg(n)
                if rows is None or len(rows) != 1 or isinstance(n, (cst.Tuple, cst.List)):
                    return None
                if m is None or (isinstance(m, cst.Name) and m.value == "None"):
                    return (rows[0], rows[0])
                cols = literal_int(m)
                return (rows[0], cols) if cols is not None and cols >= 0 else None
            if name == "jax.numpy.identity":
                n = literal_int(argument(node, 0, "n")) if argument(node, 0, "n") is not None else None
                return (n, n) if n is not None and n >= 0 else None
            if name == "jax.numpy.linspace":
                if keyword(node, "axis") is not None:
                    return None
                start, stop = argument(node, 0, "start"), argument(node, 1, "stop")
                if number(start) is None or number(stop) is None:
                    return None
                num = argument(node, 2, "num")
                count = 50 if num is None else literal_int(num)
                return (count,) if count is not None and count >= 0 else None
            if name in _LITERALS:
                args = positional(node)
                return _literal_shape(args[0]) if args else None
            # x.at[i].set(v) keeps the shape of x
            func = node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in _AT_METHODS
                and func.attr.value != "get"
                and isinstance(func.value, cst.Subscript)
                and isinstance(func.value.value, cst.Attribute)
                and func.value.value.attr.value == "at"
            ):
                return self.shape_of(func.value.value.value, _depth + 1)
        return None

    def _arange(self, node: cst.Call) -> tuple[int, ...] | None:
        args = positional(node)
        if any(a.keyword is not None and a.keyword.value not in ("dtype",) for a in node.args):
            return None
        values = [literal_int(a) for a in args]
        if not args or len(args) > 3 or any(v is None for v in values):
            return None
        if len(values) == 1:
            start, stop, step = 0, values[0], 1
        elif len(values) == 2:
            start, stop, step = values[0], values[1], 1
        else:
            start, stop, step = values  # type: ignore[misc]
        if step == 0:
            return None
        return (max(0, math.ceil((stop - start) / step)),)  # type: ignore[operator]

    def _name_shape(self, name: str) -> tuple[int, ...] | None:
        ctx = self.ctx
        owner = ctx.scope.lookup(name)
        if owner is None:
            return None
        values = owner.values.get(name)
        if owner.kind == "module" and name in ctx.facts.globals_assigned_in_functions:
            return None
        if owner is ctx.scope:
            known = self.shapes.get(id(owner), {})
            if name in known:
                return known[name]
        if values and len(values) == 1 and values[0] is not None and name not in owner.params:
            if owner is ctx.scope:
                return None  # bound later in this scope, not yet
            if name in owner.declared_global or name in ctx.facts.globals_assigned_in_functions:
                return None
            with resolving_in(ctx, owner):  # the single binding, in its own scope
                return self.shape_of(values[0], 1)
        return None

    # tracking -------------------------------------------------------------------------------
    def _nested(self) -> bool:
        return self.depth.get(id(self.ctx.scope), 0) > 0

    def _enter(self, node) -> None:
        key = id(self.ctx.scope)
        self.depth[key] = self.depth.get(key, 0) + 1

    def _leave(self, node) -> None:
        key = id(self.ctx.scope)
        self.depth[key] = self.depth.get(key, 0) - 1

    visit_If = visit_For = visit_While = visit_Try = visit_With = visit_Match = _enter
    leave_If = leave_For = leave_While = leave_Try = leave_With = leave_Match = _leave

    def _bind(self, target: cst.BaseExpression, shape) -> None:
        frame = self.shapes.setdefault(id(self.ctx.scope), {})
        if isinstance(target, cst.Name):
            frame[target.value] = None if self._nested() else shape
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, None)

    def leave_Assign(self, original_node: cst.Assign) -> None:
        shape = self.shape_of(original_node.value)
        for target in original_node.targets:
            self._bind(target.target, shape)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        shape = self.shape_of(original_node.value) if original_node.value is not None else None
        self._bind(original_node.target, shape)

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        self._bind(original_node.target, None)

    def visit_For(self, node: cst.For) -> None:  # type: ignore[no-redef]
        self._enter(node)
        self._bind(node.target, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name, None)

    # checks ---------------------------------------------------------------------------------
    def visit_Subscript(self, node: cst.Subscript) -> None:
        value = node.value
        update = False
        if isinstance(value, cst.Attribute) and value.attr.value == "at":
            base = value.value
            update = True
        else:
            base = value
        shape = self.shape_of(base)
        if shape is None:
            return
        problem = _out_of_bounds(node.slice, shape)
        if problem is None:
            return
        index, axis, size = problem
        ctx = self.ctx
        if update:
            mode = self._at_mode(node)
            if mode == "explicit":
                return
            method = mode
            if method == "get":
                effect = "the read is clamped to the edge (a wrong value, no error)"
            else:
                effect = f"JAX silently drops the .{method}() update (no error)"
        else:
            effect = "JAX clamps the read to the edge and returns a wrong value (no IndexError)"
        self.report(
            node,
            f"index {index} is out of bounds for axis {axis} with size {size} of `{_short(ctx.code(base))}`: "
            f"{effect}; fix the index, or make the intent explicit with .at[i].get(mode=\"fill\", fill_value=...)",
        )

    def _at_mode(self, node: cst.Subscript) -> str:
        """The .at[] method applied to `node` (its parent call is not known here: search the statement)."""
        statement = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
        method = "update"
        if statement is None:
            return method
        found = {"method": method}

        class _Find(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                func = call.func
                if isinstance(func, cst.Attribute) and func.value is node:
                    found["method"] = func.attr.value
                    if keyword(call, "mode") is not None:
                        found["method"] = "explicit"

        statement.visit(_Find())
        return found["method"]


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _out_of_bounds(elements, shape: tuple[int, ...]) -> tuple[int, int, int] | None:
    items = [e.slice for e in elements]
    # an Ellipsis splits the index into a front part and a back part aligned to the end
    ellipsis = [i for i, item in enumerate(items) if isinstance(item, cst.Index) and isinstance(item.value, cst.Ellipsis)]
    if len(ellipsis) > 1:
        return None
    known = shape[:-1] if shape and shape[-1] == OPEN else shape
    is_open = len(known) < len(shape)

    def consumes(item) -> bool:
        if isinstance(item, cst.Index):
            value = item.value
            if isinstance(value, cst.Name) and value.value == "None":
                return False
            if isinstance(value, cst.Ellipsis):
                return False
        return True

    def check(part, axes) -> tuple[int, int, int] | None:
        for item, axis in zip(part, axes):
            if isinstance(item, cst.Index) and axis is not None and axis < len(known):
                index = literal_int(item.value)
                if index is not None and not -known[axis] <= index < known[axis]:
                    return index, axis, known[axis]
        return None

    if ellipsis:
        front, back = items[: ellipsis[0]], items[ellipsis[0] + 1 :]
        if is_open:
            return check(front, _axes(front, 0, consumes))  # the back aligns to unknown axes
        if sum(consumes(i) for i in items) > len(known):
            return None
        axes_front = _axes(front, 0, consumes)
        n_back = sum(consumes(i) for i in back)
        axes_back = _axes(back, len(known) - n_back, consumes)
        return check(front, axes_front) or check(back, axes_back)
    if not is_open and sum(consumes(i) for i in items) > len(known):
        return None  # too many indices: an error JAX reports itself
    return check(items, _axes(items, 0, consumes))


def _axes(items, start: int, consumes) -> list[int | None]:
    axes: list[int | None] = []
    axis = start
    for item in items:
        if consumes(item):
            axes.append(axis)
            axis += 1
        else:
            axes.append(None)
    return axes
