"""JG101-JG105: traced functions must be pure (sharp bits: "Pure functions")."""

from __future__ import annotations

import ast
import string

import libcst as cst

from jaxguard.checks._common import attribute_stores, descendants, is_docstring
from jaxguard.lint import kinds
from jaxguard.lint.engine import AddImport, ReplaceNode
from jaxguard.lint.facts import (
    FunctionInfo,
    ModuleFacts,
    dotted_name,
    keyword,
    literal_str,
    node_name,
    positional,
    target_name_nodes,
    set_attribute_tested,
    unset_attribute_tested,
)
from jaxguard.lint.jaxapi import TREE_MAPS
from jaxguard.lint.project import CONSTRUCTORS
from jaxguard.lint.registry import Rule, register
from jaxguard.lint.traced import CONCRETE_ATTRS, CONCRETE_CALLS, NONE, TracedFlow
from jaxguard.lint.walk import Visitor, walk


def _traced_by(ctx) -> str:
    function = ctx.function
    return function.traced_by.rsplit(".", 1)[-1] if function is not None else "jit"


@register
class PrintInTraced(Rule):
    code = "JG101"
    name = "print-in-traced"
    summary = "print() inside a traced function runs once, at trace time, and shows tracers"
    message = "print() in a traced function runs once, at trace time, and shows tracers; use jax.debug.print"
    fix_kind = "autofix"
    what = """
        Flags `print(...)` inside a function that JAX traces (jit, vmap, pmap, lax bodies, and
        their helpers), unless everything it prints is static information (`x.shape`,
        `x.dtype`, `jax.typeof(x)`, static arguments, strings and f-strings of those): printing
        those at trace time is a legitimate way to see what is being compiled. A message alone
        (`print("tracing step")`) is not flagged: it prints once per compilation, which is how
        JAX users watch retracing, and nothing in the code says the author expected otherwise.
    """
    why = """
        The Python body of a jitted function runs once, while JAX traces it with abstract values.
        `print` therefore prints `Traced<ShapedArray(...)>` on the first call and nothing on later
        calls, which served from the compilation cache. `jax.debug.print` is staged into the
        compiled program and prints the runtime values on every call.
    """
    example = """
        import jax

        @jax.jit
        def step(params, batch):
            loss = (params * batch).sum()
            print("loss", loss)
            return loss
    """
    use_instead = """
        import jax

        @jax.jit
        def step(params, batch):
            loss = (params * batch).sum()
            jax.debug.print("loss {}", loss)
            return loss
    """
    fix_safety = """
        The fix rewrites the call to `jax.debug.print` with a format string built from the
        literal arguments and one `{}` per other argument, adding `import jax` if needed. It is
        safe when every other argument is a value computed inside the traced function (an
        array); when an argument is a global or a static parameter (it may be a string or
        other non-array object, which `jax.debug.print` cannot take) the fix is unsafe.
        Calls with `file=`, `sep=`, `end=` or `*args` are not fixed.
    """
    invalid = (
        # ... and called
        "import jax\ndef rollout(p):\n    print(p)\n    return p\ndef main():\n    fast = jax.jit(rollout)\n"
        "    for i in range(3):\n        out = fast(1.0)\n",
        # traced whatever `verbose` is: the print shows a tracer once
        "import jax\ndef solve(x, verbose):\n    def step(c):\n        if verbose:\n            print(c)\n        return c - 1\n"
        "    return jax.lax.while_loop(lambda c: c > 0, step, x)\n",
        "import jax\n@jax.jit\ndef f(x):\n    print(x)\n    return x\n",
        "from jax import jit\ndef f(x):\n    print('x is', x)\n    return x * 2\ng = jit(f)\n",
        "import jax\nfrom jax import lax\ndef body(i, acc):\n    print(i)\n    return acc + i\n"
        "def run(n):\n    return lax.fori_loop(0, n, body, 0)\n",
        # a helper of a jitted function: its argument is a tracer too
        "import jax\ndef report(v):\n    print(f'value {v}')\n    return v\n@jax.jit\ndef f(x):\n    return report(x * 2)\n",
        # static information next to a traced value
        "import jax\n@jax.jit\ndef f(x):\n    print(f'{x.shape}: {x}')\n    return x\n",
        # a tree of values computed from the traced leaves
        "import jax\n@jax.jit\ndef f(grads):\n    print(jax.tree_util.tree_map(lambda g: g.sum(), grads))\n    return grads\n",
    )
    valid = (
        # a jitted wrapper that nothing calls (its call commented out): never traced
        "import jax\ndef rollout(p):\n    print(p)\n    return p\ndef main():\n    fast = jax.jit(rollout)\n"
        "    for i in range(3):\n        # out = fast(1.0)\n        out = rollout(1.0)\n",
        # a tree of the traced leaves' shapes (DIffUCO's gradient check)
        "import jax\n@jax.jit\ndef f(grads):\n    print(jax.tree_util.tree_map(lambda g: g.shape, grads))\n    return grads\n",
        # traced only where `verbose` is false: with it, a Python loop runs the step eagerly
        "import jax\ndef solve(x, verbose):\n    def step(c):\n        if verbose:\n            print(c)\n        return c - 1\n"
        "    if verbose:\n        while x > 0:\n            x = step(x)\n    else:\n        x = jax.lax.while_loop(lambda c: c > 0, step, x)\n    return x\n",
        # under `with jax.disable_jit():` a scan runs its body as a Python loop on real values
        "import jax\nimport jax.numpy as jnp\ndef test_scan():\n    def body(c, x):\n        print(c)\n"
        "        return c + x, c\n    with jax.disable_jit():\n        jax.lax.scan(body, 0.0, jnp.arange(3.0))\n",
        "import jax\n@jax.jit\ndef f(x):\n    jax.debug.print('{}', x)\n    return x\n",
        "import jax\ndef f(x):\n    print(x)\n    return x\nprint(jax.grad(f)(1.0))\n",
        "def jit(f):\n    return f\n@jit\ndef f(x):\n    print(x)\n    return x\n",
        "import jax\n@jax.jit\ndef f(x):\n    def print(*a):\n        pass\n    print(x)\n    return x\n",
        # a message alone, and static information printed at trace time, on purpose
        "import jax\n@jax.jit\ndef f(x):\n    print('tracing f')\n    return x\n",
        "import jax\n@jax.jit\ndef f(x):\n    print('tracing f for', x.shape, x.dtype)\n    print(jax.typeof(x))\n    return x\n",
        "import jax\nfrom functools import partial\n@partial(jax.jit, static_argnames=('n',))\ndef f(x, n):\n"
        "    print(f'compiling for n={n}, shape {x.shape}')\n    return x * n\n",
        # a helper's warning about a name from a list it is given: nothing shows it is traced
        "import jax\ndef actuators(model, names):\n    for name in names:\n        if name not in model.ids:\n"
        "            print(f'joint {name} not found')\n    return [model.ids.get(n) for n in names]\n"
        "@jax.jit\ndef f(x):\n    ids = actuators(MODEL, ['hip', 'knee'])\n    return x\n",
        # a helper that prints shapes and a count computed from them (jax-md's fold warning)
        "import jax\ndef fold(grid, factors: tuple[int, ...], batch: int = 8):\n    size = grid.shape[0] // batch\n"
        "    if size < 2:\n        print(f'grid may be too small: {factors}, '\n              f'{grid.shape}, {size}')\n    return grid\n"
        "@jax.jit\ndef f(grid):\n    return fold(grid, (2, 2))\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.ctx.in_traced or self.ctx.qualname(node.func) != "builtins.print":
            return
        if self.ctx.facts.runs_abstractly(self.ctx.scope):
            return  # eval_shape / make_jaxpr trace anew on every call: nothing is cached
        shown = [part for arg in node.args for part in _printed(arg.value)]
        if all(isinstance(part, _LITERALS) for part in shown):
            return  # a message alone: printed once per compilation, the idiom for watching retraces
        if not shows_traced(self.ctx, [arg.value for arg in node.args]):
            return  # shapes, dtypes, static arguments, values not shown to be traced
        self.report(node, fix=self._fix(node))

    def _fix(self, node: cst.Call):
        ctx = self.ctx
        if any(arg.keyword is not None or arg.star for arg in node.args):
            return None
        jax_name = ctx.module_alias("jax")
        if jax_name is None:
            if ctx.scope.lookup("jax") is not None:
                return None  # `jax` means something else here
            jax_name = "jax"
        fmt = _FormatString()
        values: list[str] = []
        safe = True
        for index, arg in enumerate(node.args):
            if index:
                fmt.add(" ", " ")
            if _literal_piece(arg.value, fmt):
                continue
            formatted = _fstring_parts(arg.value, ctx, fmt)
            if formatted is not None:
                values.extend(formatted)
                safe = safe and all(self._is_traced_value(e) for e in _fstring_exprs(arg.value))
                continue
            fmt.add("{}", "{}")
            values.append(ctx.code(arg.value))
            safe = safe and self._is_traced_value(arg.value)
        literal = fmt.literal()
        if literal is None:
            return None  # the format string cannot be written from the source's spelling
        call = f"{jax_name}.debug.print({literal}{''.join(', ' + v for v in values)})"
        steps = [ReplaceNode(node, call)]
        if ctx.module_alias("jax") is None:
            steps.append(AddImport("import jax"))
        return steps, safe, "replace print() with jax.debug.print()"

    def _is_traced_value(self, expr: cst.BaseExpression) -> bool:
        """An array computed in the traced function: its names are local and not static."""
        function = self.ctx.function
        names = [n.value for n in _names(expr)]
        if not names:
            return False
        for name in names:
            owner = self.ctx.scope.lookup(name)
            if owner is None or owner.function is None or name in owner.function.static_params:
                return False
            if owner.function is function and name in function.params and name not in function.traced_params:
                return False
        return True


_STATIC_ANNOTATIONS = frozenset({"builtins.int", "builtins.bool", "builtins.str", "builtins.tuple", "typing.Tuple"})
# containers whose items, when annotated static (`Sequence[str]`), make the whole static
_STATIC_CONTAINERS = frozenset({
    "typing.Sequence", "collections.abc.Sequence", "typing.List", "builtins.list", "typing.Mapping",
    "collections.abc.Mapping", "typing.Dict", "builtins.dict", "typing.FrozenSet", "builtins.frozenset",
})


_LITERALS = (cst.SimpleString, cst.Integer, cst.Float)


def static_information(ctx, expressions: list[cst.BaseExpression]) -> bool:
    """The expressions show static values (`x.shape`, `x.dtype`, `jax.typeof(x)`, a tree
    structure, static arguments, f-strings of those) and no traced one. Literals alone do not
    count: `count += 1` on a global is a side effect expected on every call, not a look at
    what is being traced (JG101 judges a printed message alone itself)."""
    flow = _helpers_traced_flow(ctx)
    values = _shown_values(expressions)
    return bool(values) and not any(flow.origins(part, ctx) or _may_hold_array(ctx, part) for part in values)


def shows_traced(ctx, expressions: list[cst.BaseExpression]) -> bool:
    """Some expression shows a value proven traced: it comes from a traced argument through
    array operations, or is an array made in the trace (`print(x)`, `f"{loss}"`)."""
    flow = TracedFlow.of(ctx)
    # a helper's parameter is traced where a traced caller passes it a traced value
    from_callers = flow.traced_by_callers(ctx.function) if ctx.function is not None else NONE
    possible = _helpers_traced_flow(ctx)
    return any(
        flow.origins(part, ctx) or _may_hold_array(ctx, part) or (from_callers & possible.origins(part, ctx))
        for part in _shown_values(expressions)
    )


def _shown_values(expressions: list[cst.BaseExpression]) -> list[cst.BaseExpression]:
    """What printing the expressions shows, literals aside (`f"loss {x}"` shows `x`)."""
    return [part for expression in expressions for part in _printed(expression) if not isinstance(part, _LITERALS)]


def _may_hold_array(ctx, node: cst.BaseExpression) -> bool:
    """An array made in the trace (`jnp.zeros(3)`, a name holding one) is a tracer too, though
    it derives from no argument. `x.shape`, `jax.typeof(x)` and the like are not."""
    if isinstance(node, cst.Name):
        owner = ctx.scope.lookup(node.value)
        if owner is not None and owner.kind == "module" and node.value not in ctx.facts.globals_assigned_in_functions:
            return False  # an array made at import: a concrete constant the trace captures
        return ctx.kind_of(node) == kinds.JAX
    if isinstance(node, cst.Attribute):
        return node.attr.value not in CONCRETE_ATTRS and _may_hold_array(ctx, node.value)
    if isinstance(node, cst.Call):
        name = ctx.qualname(node.func) or ""
        if name in CONCRETE_CALLS:
            return False
        if name in TREE_MAPS and node.args and isinstance(node.args[0].value, cst.Lambda):
            return _may_hold_array(ctx, node.args[0].value.body)  # what the lambda makes of each leaf
        if ctx.kind_of(node) == kinds.JAX:
            return True
        return any(_may_hold_array(ctx, arg.value) for arg in node.args)
    children = [c for c in node.children if isinstance(c, cst.BaseExpression)]
    children += [e.value for e in getattr(node, "elements", ()) if hasattr(e, "value")]
    if isinstance(node, cst.Subscript):
        children = [node.value]
    return any(_may_hold_array(ctx, child) for child in children)


def _printed(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """What a print argument shows: the fields of an f-string or of `"...".format(...)`, the
    argument of `str()`/`repr()` (a string made from a tracer shows the tracer)."""
    if isinstance(value, cst.FormattedString):
        return [p for part in value.parts if isinstance(part, cst.FormattedStringExpression) for p in _printed(part.expression)]
    if isinstance(value, cst.ConcatenatedString):  # f"..." f"..." over several lines
        return _printed(value.left) + _printed(value.right)
    if isinstance(value, cst.Call) and value.args:
        func = value.func
        if (isinstance(func, cst.Attribute) and func.attr.value == "format") or (
            isinstance(func, cst.Name) and func.value in ("str", "repr")
        ):
            return [p for arg in value.args for p in _printed(arg.value)]
    return [value]


def _helpers_traced_flow(ctx) -> TracedFlow:
    """The traced-ness flow `static_information` asks: like JG106-JG108's, except that a helper's parameters
    (and those of a transformation whose static arguments cannot be read) may carry tracers,
    unless a default or a Python-type annotation says they are configuration."""
    facts: ModuleFacts = ctx.facts
    flow = facts.derived.get("static-information-flow")
    if flow is None:
        uncertain = TracedFlow.of(ctx).uncertain
        possibly_traced = {
            info.node: _plain_params(facts, info)
            for info in facts.functions.values()
            if info.traced and (not info.params_traced or info.node in uncertain)
        }
        flow = facts.derived["static-information-flow"] = TracedFlow(facts, possibly_traced, proven=False)
    return flow  # silence needs proof of static


def _plain_params(facts: ModuleFacts, info: FunctionInfo) -> set[str]:
    node = info.node
    params = node.params
    plain = set()
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        name = param.name.value
        if param.default is not None or name in info.static_params or (info.class_name and name in ("self", "cls")):
            continue
        if param.annotation is not None and _static_annotation(facts, param.annotation.annotation, info.parent):
            continue
        plain.add(name)
    return plain


def _static_annotation(facts: ModuleFacts, annotation: cst.BaseExpression, scope) -> bool:
    """`int`, `str`, `bool`, `tuple[int, ...]`, `Optional[int]`, `int | None`: a Python value."""
    if isinstance(annotation, cst.Name) and annotation.value in ("None", "Ellipsis"):
        return True
    if isinstance(annotation, cst.Ellipsis):
        return True
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        return _static_annotation(facts, annotation.left, scope) and _static_annotation(facts, annotation.right, scope)
    if isinstance(annotation, cst.Subscript):
        outer = facts.qualname(annotation.value, scope)
        if outer in ("typing.Literal", "typing_extensions.Literal"):
            return True  # `Literal["raise", "nan"]`: one of those Python values
        if outer not in _STATIC_ANNOTATIONS | _STATIC_CONTAINERS | {"typing.Optional", "typing.Union"}:
            return False
        items = [element.slice.value for element in annotation.slice if isinstance(element.slice, cst.Index)]
        return len(items) == len(annotation.slice) and all(_static_annotation(facts, item, scope) for item in items)
    return facts.qualname(annotation, scope) in _STATIC_ANNOTATIONS


def _names(expr: cst.CSTNode) -> list[cst.Name]:
    found = []

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.append(node)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

    expr.visit(_Collect())
    return found


class _FormatString:
    """jax.debug.print's format string, written from the source text of the literals it is
    made of (never from their values: a value may hold a NUL or other character the file
    cannot hold or that no longer compiles), checked against the value it must have."""

    def __init__(self) -> None:
        self.body: list[str] = []  # the text between the quotes of a "..." literal
        self.value: list[str] = []  # the format string it must evaluate to

    def add(self, body: str, value: str) -> None:
        self.body.append(body)
        self.value.append(value)

    def literal(self) -> str | None:
        text = '"' + "".join(self.body) + '"'
        value = "".join(self.value)
        try:
            ok = ast.literal_eval(text) == value
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            ok = False
        # jax.debug.print formats only if the text before its first escaped brace has a
        # placeholder (it looks at the first chunk only): else it prints `{{` as it is.
        first_field = next(string.Formatter().parse(value), ("", None))[1]
        if first_field is None and ("{" in value or "}" in value):
            ok = False
        return text if ok else None


def _literal_piece(node: cst.BaseExpression, fmt: _FormatString) -> bool:
    """Add a string or number literal to `fmt` as text (its braces doubled); False if it is none."""
    if isinstance(node, (cst.Integer, cst.Float)):
        shown = str(node.evaluated_value)  # what print shows: 1_000 -> 1000, 1e3 -> 1000.0
        fmt.add(shown, shown)
        return True
    value = literal_str(node)
    if value is None:
        return False
    fmt.add(_requoted(node.prefix, node.quote, node.raw_value, double_braces=True), value.replace("{", "{{").replace("}", "}}"))
    return True


def _requoted(prefix: str, quote: str, body: str, double_braces: bool) -> str:
    """The body of a literal written `prefix quote body quote`, rewritten for a plain "..."
    literal with the same value: a raw body's backslashes doubled, `"` and line breaks
    escaped, escapes kept as they are spelled; with `double_braces`, `{`/`}` outside a
    `\\N{...}` escape doubled (for a format string)."""
    raw = "r" in prefix.lower()
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\" and raw:
            out.append("\\\\")
        elif char == "\\":
            following = body[index + 1 : index + 2]
            if following in ("\r", "\n"):  # a backslash-newline inside the string: nothing
                index += 3 if body[index + 1 : index + 3] == "\r\n" else 2
                continue
            if following == "N" and body[index + 2 : index + 3] == "{":
                end = body.find("}", index)
                following = body[index + 1 : end + 1]
            out.append("\\" + following)
            index += 1 + len(following)
            continue
        elif char == '"':
            out.append('\\"')
        elif char in "\r\n":
            out.append("\\r" if char == "\r" else "\\n")
        elif char in "{}" and double_braces:
            out.append(char * 2)
        else:
            out.append(char)
        index += 1
    return "".join(out)


def _fstring_exprs(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    return [p.expression for p in node.parts if isinstance(p, cst.FormattedStringExpression)]


def _fstring_parts(node: cst.BaseExpression, ctx, fmt: _FormatString) -> list[str] | None:
    """f"x={x:.3f}" -> adds "x={:.3f}" to `fmt` and returns ["x"]; None (and adds nothing)
    if not a simple f-string."""
    if not isinstance(node, cst.FormattedString):
        return None
    prefix = node.prefix.lower().replace("f", "")
    quote = node.end
    pieces: list[tuple[str, str]] = []
    values = []
    for part in node.parts:
        if isinstance(part, cst.FormattedStringText):
            body = _requoted(prefix, quote, part.value, double_braces=False)
            try:  # the text's value as a piece of a format string: `{{` stays `{{`
                value = ast.literal_eval(prefix + quote + part.value + quote)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return None
            pieces.append((body, value))
        else:
            if part.format_spec and any(
                isinstance(p, cst.FormattedStringExpression) for p in part.format_spec
            ):
                return None
            if part.equal is not None:
                return None
            spec = "".join(p.value for p in (part.format_spec or ()))  # type: ignore[union-attr]
            if "\\" in spec or "{" in spec or "}" in spec:
                return None
            conversion = f"!{part.conversion}" if part.conversion else ""
            placeholder = "{" + conversion + (":" + spec if spec else "") + "}"
            pieces.append((placeholder, placeholder))
            values.append(ctx.code(part.expression))
    for body, value in pieces:
        fmt.add(body, value)
    return values


@register
class TracedReadsMutableGlobal(Rule):
    code = "JG102"
    name = "traced-reads-mutable-global"
    summary = "A traced function reads a module-level value that is reassigned later: the traced copy is frozen"
    message = "traced function reads module-level '{name}', which is reassigned elsewhere: its value is frozen at trace time"
    what = """
        Flags a traced function that reads a module-level name that is rebound (assigned again,
        augmented, or assigned through `global`) after the function is defined. A table that
        module-level code builds and converts before the function's `def` (`T = np.zeros(8)`,
        `T[3] = 1`, `T = jnp.asarray(T)`) has its final value whenever the function is traced,
        and is not flagged; nor is a name rebound after the `def` before anything run at import
        could call the function (a module function called at import, or a name bound to a
        jit or partial of one, counts only if the function is among those it calls; a method
        of an object a library made, or of a module class none of whose methods reach the
        function, does not run it); in a notebook or a script (the whole program, run once in
        order: a file outside any package that no project module imports), a name unless the
        code compiled for the function is shown to run, then the name gets a new value, then
        the same compiled code runs again (a run is a module-level call of a jitted function,
        or of code that reaches a function decorated with jit, that reaches it: an eager call
        reads the current value, a def run again traces afresh, a library object handed the
        function is unknown; a loop that binds an equal value on each pass changes nothing,
        and a binding after `break` never happens); a name bound again to the same expression of
        values that do not change (an equal value; unpacked from one too); a lazily made value (set under `if X is None:`
        or `if not X and ...:`, in the `else` of `if self.x is not None:`, or after a
        guard that returns it once set: `if _tried: return _cache`, or set beside the guarded
        name in the block that sets it) that nothing else resets,
        a name a function sets only to what imports and constants give alike on every call
        (`_PLATFORM = jax.devices()[0].platform`, also through locals made so in straight
        steps: `net = hk.transform(f)`, `net = hk.without_apply_rng(net)`, `fwd =
        jax.jit(net.apply)`; a literal flag or an argument is a setting),
        a lambda compiled and called at once (traced anew each time), a def inside a function
        that alone sets the global, before it first calls the def (each call makes a new jitted
        step that sees the value just set), or functions that only
        `jax.eval_shape` or `jax.make_jaxpr` trace (they cache nothing), or a container whose
        items the function only writes (`stats["calls"] += 1`: JG104). Also flags `self.attr`
        read in a method jitted with `self`
        static when `attr` is reassigned after construction and the class has no `__hash__`
        (a method that the project calls only from constructors, or from methods only
        constructors call, as a simulation's `__init__` configures its boundary conditions,
        runs during construction, as does a Keras layer's `build`; so does one that first returns when a flag it sets, or
        the method it overrides and calls sets, is on: `if self.initialized: return`, which
        readies the object once), unless every reassignment rebuilds it from the object's
        fixed attributes and constants (`self.tx = optax.adam(self.cfg.lr)` in `init`): an
        equal value each time; a count the
        method only updates (`self.n_updates += 1`, JG104's concern) is not a read.
    """
    why = """
        JAX captures the value a global has when the function is traced. Later calls with the
        same shapes reuse the compiled program and silently keep the old value; a call with a
        new shape retraces and picks up the new one. Results then depend on call history.
        The same holds for the attributes of a static `self` (`@partial(jax.jit,
        static_argnums=0)` on a method, the Sharp Bits' "jit with methods"): the cache key is
        the object's hash, by identity unless the class defines `__hash__`, so reassigning an
        attribute after construction (in another method, or `obj.attr = ...`) is not seen.
    """
    example = """
        import jax

        scale = 1.0

        @jax.jit
        def apply(x):
            return x * scale

        print(apply(1.0))  # 1.0
        scale = 10.0
        print(apply(1.0))  # still 1.0: the compiled code kept the old scale
    """
    use_instead = """
        import jax

        @jax.jit
        def apply(x, scale):
            return x * scale
    """
    invalid = (
        "import jax\ng = 0.\ndef f(x):\n    return x + g\nprint(jax.jit(f)(4.))\ng = 10.\n",
        # a local made in steps, one of them from the caller's argument: a setting
        "import jax\nimport haiku as hk\ndef _net(x):\n    return hk.Linear(1)(x)\ndef train(lr):\n    global forward\n"
        "    net = hk.transform(_net)\n    net = scaled(net, lr)\n    forward = jax.jit(net.apply)\n    return lr\n"
        "@jax.jit\ndef loss(p, x):\n    return forward(p, x)\n",
        # set by a function to a literal other than the module's
        "import jax\ngamma = 0.9\ndef train(n):\n    global gamma\n    gamma = 0.99\n    return step(n)\n"
        "@jax.jit\ndef step(x):\n    return x * gamma\n",
        # a flag set where it may already be set, read into the computation
        "import jax\n_warned = False\ndef warn_if_wide(n):\n    global _warned\n    if _warned or n > 5:\n"
        "        _warned = True\n@jax.jit\ndef f(x):\n    warn_if_wide(x.shape[0])\n    return x if _warned else -x\n",
        "import jax\ncount = 0\n@jax.jit\ndef f(x):\n    return x + count\ndef bump():\n    global count\n    count = count + 1\n",
        "import jax\nlr = 0.1\n@jax.jit\ndef f(x):\n    return x * lr\ny = f(1.0)\nlr *= 0.5\n",
        # the same lambda kept and called again: compiled once, with the first value
        "import jax\nbatch = 1.0\nf = jax.jit(lambda: batch * 2)\ny = f()\nbatch = 2.0\nz = f()\n",
        # an optimizer rebuilt with another step size: a new value
        "import jax\nfrom jax.example_libraries import optimizers\n"
        "opt_init, opt_update, get_params = optimizers.adam(step_size=0.1)\n"
        "@jax.jit\ndef step(i, g, state):\n    return opt_update(i, g, state)\ns = step(0, 1.0, opt_init(1.0))\n"
        "opt_init, opt_update, get_params = optimizers.adam(step_size=0.01)\nt = step(1, 1.0, s)\n",
        # the same expression, but of a value that changes in between: a new value
        "import jax\nGRID = 64\nkeep = GRID * 3 // 4\n@jax.jit\ndef f(x):\n    return x[:keep]\ny = f(1.0)\n"
        "GRID = 32\nkeep = GRID * 3 // 4\nz = f(2.0)\n",
        # rebound at module level after the def (a schedule changed between calls)
        "import jax\nimport jax.numpy as jnp\nTABLE = jnp.zeros(3)\n@jax.jit\ndef f(i):\n    return TABLE[i]\n"
        "for step in range(3):\n    TABLE = TABLE + 1\n    f(0)\n",
        # the Sharp Bits' "jit with methods": `self` static (hashed by identity), then mutated
        "import jax\nimport jax.numpy as jnp\nfrom functools import partial\nclass CustomClass:\n"
        "    def __init__(self, x, mul):\n        self.x = x\n        self.mul = mul\n"
        "    @partial(jax.jit, static_argnums=0)\n    def calc(self, y):\n        if self.mul:\n            return self.x * y\n"
        "        return y\nc = CustomClass(2, True)\nprint(c.calc(3))\nc.mul = False\nprint(c.calc(3))\n",
        "import jax\nfrom functools import partial\nclass Counter:\n    def __init__(self, n):\n        self.n = n\n"
        "    def bump(self):\n        self.n += 1\n    @partial(jax.jit, static_argnames=('self',))\n"
        "    def scaled(self, x):\n        return x * self.n\n",
        # a helper of __init__ that is also called later: it reassigns after construction
        "import jax\nfrom functools import partial\nclass Grid:\n    def __init__(self, n):\n        self._build(n)\n"
        "    def _build(self, n):\n        self.index = list(range(n))\n"
        "    @partial(jax.jit, static_argnums=0)\n    def at(self, x):\n        return x * len(self.index)\n"
        "g = Grid(3)\ng._build(4)\n",
        # the same helper called from outside too: the attribute changes between calls
        "import jax\nfrom functools import partial\nclass Solver:\n    def __init__(self, bc_fn):\n        self.bc_fn = bc_fn\n"
        "    def update_bcs(self, args):\n        self.bcs = self.bc_fn(args)\n"
        "    @partial(jax.jit, static_argnums=0)\n    def step(self, x, args):\n        self.update_bcs(args)\n"
        "        return x * self.bcs\ns = Solver(abs)\ns.update_bcs(2.0)\n",
        # ... a loader's cache that another function resets
        "import jax\n_KERNEL = None\n_TRIED = False\ndef get_kernel():\n    global _KERNEL, _TRIED\n"
        "    if _TRIED:\n        return _KERNEL\n    _TRIED = True\n    _KERNEL = abs\n    return _KERNEL\n"
        "def reload(fn):\n    global _KERNEL\n    _KERNEL = fn\n@jax.jit\ndef f(x):\n    return get_kernel()(x)\n",
        # reset elsewhere: not only made on first use
        "import jax\n_comm = None\ndef default_comm():\n    global _comm\n    if _comm is None:\n        _comm = object()\n"
        "    return _comm\ndef reset():\n    global _comm\n    _comm = None\n@jax.jit\ndef f(x):\n    comm = _comm\n    return x\n",
        # a toggle: a function sets a flag the compiled code already read
        "import jax\n_CHECKS = True\ndef disable_checks():\n    global _CHECKS\n    _CHECKS = False\n"
        "@jax.jit\ndef f(x):\n    return x + 1 if _CHECKS else x\n",
        # an item of a rebound dict read into the computation
        "import jax\nstats = {'scale': 1.0}\ndef reset():\n    global stats\n    stats = {'scale': 2.0}\n"
        "@jax.jit\ndef f(x):\n    return x * stats['scale']\n",
        # a helper run at import calls the function before the global's last binding
        "import jax\n@jax.jit\ndef f(x):\n    return x * scale\ndef warm():\n    return f(1.0)\n"
        "scale = 1.0\nwarm()\nscale = 2.0\n",
        # set beside a once-guard but outside its block: rebound on every call
        "import jax\n_scale = None\n_offset = None\ndef configure(s, o):\n    global _scale, _offset\n"
        "    if _scale is None:\n        _scale = s\n    _offset = o\n@jax.jit\ndef f(x):\n    return x + _offset\n",
        # rebuilt on every training run from the caller's argument: a new function each time
        "import jax\nfrom functools import partial\nclass PPO:\n    def _update(self, p, x, scale):\n        return p - scale * x\n"
        "    @partial(jax.jit, static_argnums=0)\n    def step(self, p, x):\n        return self._minibatch_fn(p, x)\n"
        "    def train(self, p, x, scale):\n"
        "        self._minibatch_fn = lambda a, b: self._update(a, b, scale)\n        return self.step(p, x)\n",
        # made lazily by a property after the method compiled: the compiled branch stays
        "import jax\nfrom functools import partial\nclass Noise:\n    def __init__(self, noise_map):\n"
        "        self.noise_map = noise_map\n        self._rms = None\n"
        "    @property\n    def rms(self):\n        if self._rms is None:\n            self._rms = float(self.noise_map.mean())\n"
        "        return self._rms\n    def set_noise_map(self, noise_map):\n        self.noise_map = noise_map\n"
        "    @partial(jax.jit, static_argnums=0)\n    def variance(self, x):\n"
        "        return x if self._rms is None else x + self._rms\n",
        # made lazily, but another method sets it to the caller's value: it changes later
        "import jax\nfrom functools import partial\nclass Model:\n    def __init__(self):\n        self._scale = None\n"
        "    def set_scale(self, scale):\n        self._scale = scale\n"
        "    @partial(jax.jit, static_argnums=0)\n    def run(self, x):\n        if self._scale is None:\n"
        "            self._scale = 2.0\n        return x * self._scale\n",
        # an attribute reassigned from a method's argument: a new value each call
        "import jax\nfrom functools import partial\nclass Scaled:\n    def __init__(self, cfg):\n        self.cfg = cfg\n"
        "    def set_scale(self, scale):\n        self.scale = scale * self.cfg.base\n"
        "    @partial(jax.jit, static_argnums=0)\n    def apply(self, x):\n        return x * self.scale\n",
        # `build` of a class that is not a Keras layer: any method, called again and again
        "import jax\nfrom functools import partial\nclass Graph:\n    def build(self, n):\n        self.n = n\n"
        "    @partial(jax.jit, static_argnums=0)\n    def apply(self, x):\n        return x * self.n\n",
        # a guard on a flag the method never sets: it runs again, with the caller's value
        "import jax\nfrom functools import partial\nclass Loss:\n    def __init__(self, mesh):\n        self.frozen = False\n"
        "    def Initialize(self, mesh):\n        if self.frozen:\n            return\n        self.n = mesh.size\n"
        "    @partial(jax.jit, static_argnums=0)\n    def apply(self, x):\n        return x * self.n\n",
    )
    valid = (
        # a Keras layer's `build`, which Keras runs once, before the layer's first call
        "import jax\nimport keras\nfrom functools import partial\nclass PhysicsLoss(keras.layers.Layer):\n"
        "    def build(self, input_shape):\n        self.steps = input_shape[0]\n"
        "    @partial(jax.jit, static_argnums=0)\n    def loss(self, x):\n        return x * self.steps\n",
        # readied once: the method returns at once when the flag it sets is on (folax's
        # `Initialize`, also when the overridden method it calls sets the flag)
        "import jax\nfrom functools import partial\nclass Loss:\n    def __init__(self):\n"
        "        self.initialized = False\n    def Initialize(self, mesh, reinitialize=False):\n"
        "        if self.initialized and not reinitialize:\n            return\n        self.n = mesh.size\n"
        "        self.initialized = True\n"
        "    @partial(jax.jit, static_argnums=0)\n    def apply(self, x):\n        return x * self.n\n",
        "import jax\nfrom functools import partial\nfrom base import Loss\nclass Thermal(Loss):\n"
        "    def Initialize(self, reinitialize=False):\n        if self.initialized and not reinitialize:\n            return\n"
        "        super().Initialize()\n        self.k = load_conductivity(self.settings)\n"
        "    @partial(jax.jit, static_argnums=0)\n    def apply(self, x):\n        return x * self.k\n",
        # set by a function to the same literal on every call, never to another value
        "import jax\ndef train(n):\n    global gamma\n    gamma = 0.99\n    return step(n)\n"
        "@jax.jit\ndef step(x):\n    return x * gamma\n",
        # set by a function, but to what imports and the environment give alike on every call
        "import jax\n_PLATFORM = None\ndef detect():\n    global _PLATFORM\n    _PLATFORM = jax.devices()[0].platform\n"
        "    return _PLATFORM\n@jax.jit\ndef f(x):\n    return x * 2 if _PLATFORM == 'tpu' else x\n",
        # ... through a local made in straight steps from module functions (rl_with_jax's trials)
        "import jax\nimport haiku as hk\ndef _net(x):\n    return hk.Linear(1)(x)\ndef train(lr):\n    global forward\n"
        "    net = hk.transform(_net)\n    net = hk.without_apply_rng(net)\n    forward = jax.jit(net.apply)\n    return lr\n"
        "@jax.jit\ndef loss(p, x):\n    return forward(p, x)\n",
        # rebound after the def, but nothing run before the last binding reaches the function
        "import jax\ndef measure():\n    return 1.0\n@jax.jit\ndef f(x):\n    return x * scale\n"
        "scale = measure()\nscale = scale * 2\ny = f(1.0)\n",
        # a counter written in place, never read into the computation (JG104 is about that write)
        "import jax\nstats = {'calls': 0}\ndef reset():\n    global stats\n    stats = {'calls': 0}\n"
        "@jax.jit\ndef f(x):\n    stats['calls'] += 1\n    return x * 2\n",
        # modules imported lazily together under one guard that the block closes (arbPlusJAX)
        "import jax\n_core = None\n_mat = None\ndef _load():\n    global _core, _mat\n    if _core is None:\n"
        "        from pkg import core as c\n        from pkg import mat as m\n        _core = c\n        _mat = m\n"
        "def run(a):\n    _load()\n    return jax.jit(lambda x: _mat.solve(x))(a)\n",
        # an attribute rebuilt from the object's fixed configuration: an equal value each time (orlax)
        "import jax\nimport optax\nfrom functools import partial\nclass SAC:\n    def __init__(self, cfg):\n        self.cfg = cfg\n"
        "    def init(self, params):\n        if self.cfg.auto:\n            self.tx = optax.adam(learning_rate=self.cfg.lr)\n"
        "        else:\n            self.tx = None\n        return self.tx.init(params)\n"
        "    @partial(jax.jit, static_argnums=0)\n    def update(self, state, grads):\n        return self.tx.update(grads, state)\n",
        # a lambda compiled and called at once: traced anew every time, with the current value
        "import jax\nbatch = 1.0\ny = jax.jit(lambda: batch * 2)()\nbatch = 2.0\nz = jax.jit(lambda: batch * 2)()\n",
        # a loader that returns its cache once filled: set on the first call, then kept
        "import jax\n_KERNEL = None\n_TRIED = False\ndef get_kernel():\n    global _KERNEL, _TRIED\n"
        "    if _TRIED:\n        return _KERNEL\n    _TRIED = True\n    _KERNEL = abs\n    return _KERNEL\n"
        "@jax.jit\ndef f(x):\n    return get_kernel()(x)\n",
        "import jax\n_TPU = None\ndef on_tpu():\n    global _TPU\n    if _TPU is not None:\n        return _TPU\n"
        "    _TPU = jax.default_backend() == 'tpu'\n    return _TPU\n@jax.jit\ndef f(x):\n    return x * 2 if on_tpu() else x\n",
        # bound again to the same expression of constants: an equal value
        "import jax\nGRID = 64\nkeep = GRID * 3 // 4\n@jax.jit\ndef f(x):\n    return x[:keep]\ny = f(1.0)\n"
        "keep = GRID * 3 // 4\nz = f(2.0)\n",
        # ... unpacked from the same call (an optimizer rebuilt with the same step size)
        "import jax\nfrom jax.example_libraries import optimizers\nlr = 0.05\n"
        "opt_init, opt_update, get_params = optimizers.adam(step_size=lr)\n"
        "@jax.jit\ndef step(i, g, state):\n    return opt_update(i, g, state)\ns = step(0, 1.0, opt_init(1.0))\n"
        "opt_init, opt_update, get_params = optimizers.adam(step_size=lr)\nt = step(1, 1.0, s)\n",
        # rebound before anything could call the function: it only ever sees the final value
        "import jax\nfrom collections import namedtuple\nParams = ['a', 'b']\n@jax.jit\ndef f(p):\n"
        "    return Params(*p)\nParams = namedtuple('Params', Params)\n",
        # what runs at import before the last binding is another jitted function
        "import jax\n@jax.jit\ndef f(x):\n    return x * scale\ndef other(x):\n    return x\nother = jax.jit(other)\n"
        "scale = 1.0\nother(1.0)\nscale = 2.0\n",
        # a decorator's arguments are read where the `def` runs, not inside the trace
        "import jax\ndev = 1\ndef test_a():\n    @jax.jit\n    @wrap(dev)\n    def circuit(x):\n        return x\n"
        "    return circuit(1.0)\ndev = 2\n",
        "import jax\nSCALE = 2.0\n@jax.jit\ndef f(x):\n    return x * SCALE\n",
        "import jax\ntry:\n    import numpy as np\nexcept ImportError:\n    np = None\n@jax.jit\ndef f(x):\n    return x\n",
        "import jax\ng = 0.\n@jax.jit\ndef f(x, g):\n    return x + g\ng = 1.\n",
        "g = 0.\ndef f(x):\n    return x + g\ng = 10.\n",
        # a host callback runs in Python on every call, with concrete values
        "import jax\ncalls = 0\ndef log(x):\n    global calls\n    calls += 1\n    return x + calls\n"
        "@jax.jit\ndef f(x):\n    return jax.pure_callback(log, x, x)\n",
        # a table built, then frozen, all at module level before the def (pgx's move tables)
        "import jax\nimport numpy as np\nimport jax.numpy as jnp\nEMPTY = -1\nTABLE = np.zeros(8, dtype=np.int32)\n"
        "for i in range(8):\n    TABLE[i] = i * 2\nTABLE = jnp.asarray(TABLE)\nEMPTY = jnp.int32(EMPTY)\n"
        "@jax.jit\ndef f(i):\n    return jnp.where(TABLE[i] > 0, TABLE[i], EMPTY)\n",
        # a static `self` whose attributes are set only while it is built
        "import jax\nfrom functools import partial\nclass Problem:\n    def __init__(self, n):\n        self.n = n\n"
        "        self.scale = 2.0\n    @partial(jax.jit, static_argnames=('self',))\n    def eval(self, x):\n"
        "        return x * self.n * self.scale\n",
        # ... or by a helper that only the constructor calls (jaxmarl's overcooked grids)
        "import jax\nfrom functools import partial\nclass Grid:\n    def __init__(self, n):\n        self._build(n)\n"
        "    def _build(self, n):\n        self.index = list(range(n))\n"
        "    @partial(jax.jit, static_argnums=0)\n    def at(self, x):\n        return x * len(self.index)\n",
        # a class that hashes its fields: a changed field changes the cache key
        "import jax\nfrom functools import partial\nclass Config:\n    def __init__(self, n):\n        self.n = n\n"
        "    def __hash__(self):\n        return hash(self.n)\n    def __eq__(self, other):\n        return self.n == other.n\n"
        "    @partial(jax.jit, static_argnums=0)\n    def run(self, x):\n        return x * self.n\nc = Config(2)\nc.n = 3\n",
        # a singleton made on first use and kept: set once, never changed
        "import jax\n_comm = None\ndef default_comm():\n    global _comm\n    if _comm is None:\n        _comm = object()\n"
        "    return _comm\n@jax.jit\ndef f(x):\n    comm = _comm\n    return x\n",
        # an attribute set by a helper that only the jitted method calls, inside each trace
        "import jax\nfrom functools import partial\nclass Solver:\n    def __init__(self, bc_fn):\n        self.bc_fn = bc_fn\n"
        "    def update_bcs(self, args):\n        self.bcs = self.bc_fn(args)\n"
        "    @partial(jax.jit, static_argnums=0)\n    def step(self, x, args):\n        self.update_bcs(args)\n"
        "        return x * self.bcs\n",
        # rebuilt on every training run from the object's own methods: an equal function each time
        "import jax\nfrom functools import partial\nclass PPO:\n    def _loss(self, p, x):\n        return p * x\n"
        "    def _update(self, p, x, grad_fn):\n        return p - grad_fn(p, x)\n"
        "    @partial(jax.jit, static_argnums=0)\n    def step(self, p, x):\n        return self._minibatch_fn(p, x)\n"
        "    def train(self, p, x):\n        grad_fn = jax.grad(self._loss)\n"
        "        self._minibatch_fn = lambda a, b: self._update(a, b, grad_fn)\n        return self.step(p, x)\n",
        # a one-time warning: the guard returns whenever the flag is set, and nothing resets it
        "import jax\n_WARNED = False\ndef warn_big(n):\n    global _WARNED\n    if _WARNED or n < 10:\n        return\n"
        "    _WARNED = True\n    print('big')\n@jax.jit\ndef f(x):\n    warn_big(x.shape[0])\n    return x\n",
        # ... set in the body that only runs while the flag is unset (one term of an `and`)
        "import jax\n_warned = False\ndef warn_if_wide(n):\n    global _warned\n    if not _warned and n > 5:\n"
        "        print('wide')\n        _warned = True\n@jax.jit\ndef f(x):\n    warn_if_wide(x.shape[0])\n    return x\n",
        # a cache the jitted method fills in the `else` of `is not None`, and keeps
        "import jax\nfrom functools import partial\nclass Basis:\n    def __init__(self):\n        self._cached = None\n"
        "    @partial(jax.jit, static_argnums=0)\n    def shape_of(self, x):\n        if self._cached is not None:\n"
        "            pass\n        else:\n            self._cached = x.shape\n        return self._cached\n",
        # an attribute the jitted method makes lazily on first use and keeps: set once, in the first trace
        "import jax\nfrom functools import partial\nclass Model:\n    def __init__(self):\n        self._first = None\n"
        "    @partial(jax.jit, static_argnums=0)\n    def run(self, x):\n        if self._first is None:\n"
        "            self._first = x.shape\n        return x * 2\n",
        # a count kept on the object, never read into the computation (JG104 is about the write)
        "import jax\nfrom functools import partial\nclass Runner:\n    def __init__(self):\n        self.n_updates = 0\n"
        "    def reset(self):\n        self.n_updates = 0\n    @partial(jax.jit, static_argnums=0)\n"
        "    def run(self, x):\n        self.n_updates += 1\n        return x * 2\n",
        # make_jaxpr traces on every call: nothing is cached, nothing goes stale
        "import jax\nscale = 1.0\ndef f(x):\n    return x * scale\nprint(jax.make_jaxpr(f)(1.0))\nscale = 2.0\n"
        "print(jax.make_jaxpr(f)(1.0))\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.reported_attributes: set[tuple[cst.CSTNode, str]] = set()

    def visit_Name(self, node: cst.Name) -> None:
        ctx = self.ctx
        if not ctx.in_traced:
            return
        owner = ctx.scope.lookup(node.value)
        if owner is None or owner.kind != "module":
            return
        if node.value in owner.defs or node.value in owner.classes or node.value in owner.imports:
            return
        facts = ctx.facts
        if not facts.is_rebound_global(node.value) or not self._is_load(node):
            return
        if node in facts.item_store_roots:
            return  # `stats["hits"] += 1`: a change in place (JG104's concern), nothing read into the trace
        if facts.frozen_before(node.value, ctx.function) or facts.runs_abstractly(ctx.scope):
            return  # a table finished before the def; eval_shape / make_jaxpr cache nothing
        info = ctx.function
        while info is not None:
            if facts.traced_afresh(info):
                return  # `jax.jit(lambda: ...)()`: traced anew each time it runs, never stale
            if facts.set_before_first_call(node.value, info):
                return  # made anew on each call of its outer function, after the global is set
            info = facts.enclosing_function(info.parent)
        self.report(node, self.message.format(name=node.value))

    def _is_load(self, node: cst.Name) -> bool:
        return node in self.ctx.facts.loads

    def visit_Attribute(self, node: cst.Attribute) -> None:
        """`self.mul` read in a method jitted with `self` static: a static argument is part of
        the compilation cache key through its hash, by identity unless the class defines
        `__hash__`, so reassigning `mul` later does not retrace."""
        ctx = self.ctx
        function = ctx.function
        if not ctx.in_traced or function is None or not function.class_name or not function.params:
            return
        receiver = function.params[0]
        if not (isinstance(node.value, cst.Name) and node.value.value == receiver and receiver in function.static_params):
            return
        if node.value not in ctx.facts.loads or ctx.scope.lookup(receiver) is not function.scope:
            return
        if node in _stored_here(ctx.facts, function, receiver):
            return  # `self.n_updates += 1`, `self.fn = ...`: written here, not read into the trace
        mutated = _reassigned_attributes(ctx.facts, function.parent)
        where = mutated.get(node.attr.value)
        if where is None or (function.node, node.attr.value) in self.reported_attributes:
            return
        self.reported_attributes.add((function.node, node.attr.value))
        self.report(
            node,
            f"traced method reads '{receiver}.{node.attr.value}', but '{receiver}' is a static argument compared by "
            f"identity and '{node.attr.value}' is reassigned {where}: later calls reuse the code compiled for the old value",
        )


def _made_lazily(method: FunctionInfo) -> set[cst.Attribute]:
    """The `self.attr` stores of a method in the body of `if self.attr is None:` (or in the
    `else` of `if self.attr is not None:`)."""
    receiver = method.params[0]
    lazy: set[cst.Attribute] = set()
    for node in descendants(method.node):
        if not isinstance(node, cst.If):
            continue
        for tested, branch in (
            (unset_attribute_tested(node.test), node.body),
            (set_attribute_tested(node.test), node.orelse if isinstance(node.orelse, cst.Else) else None),
        ):
            if tested is not None and branch is not None:
                lazy.update(t for t in attribute_stores(branch, {receiver}) if f"{receiver}.{t.attr.value}" == tested)
    return lazy


def _runs_once(method: FunctionInfo) -> bool:
    """A method that first returns when a flag it sets is on (`if self.initialized and not
    reinitialize: return` ... `self.initialized = True`, or the flag set by the method it
    overrides, which it calls: `super().Initialize()`): it readies the object once, like a
    constructor; what it assigns is not changed by calling it again."""
    if not isinstance(method.node, cst.FunctionDef) or not method.params:
        return False
    body = [s for s in method.node.body.body if not is_docstring(s)] if isinstance(method.node.body, cst.IndentedBlock) else []
    first = body[0] if body else None
    if not (isinstance(first, cst.If) and first.orelse is None and _only_returns(first.body)):
        return False
    receiver = method.params[0]
    tested = {
        node.attr.value for node in descendants(first.test)
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == receiver
    }
    sets_flag = any(
        target.attr.value in tested and isinstance(value, cst.Name) and value.value == "True"
        for target, value in attribute_stores(method.node, {receiver}, nested=False, with_values=True)
    )
    return bool(tested) and (sets_flag or any(_calls_overridden(node, method.name) for node in descendants(method.node.body)))


def _calls_overridden(node: cst.CSTNode, name: str) -> bool:
    """`super().<name>(...)`: the method calls the one it overrides."""
    return (
        isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == name
        and isinstance(node.func.value, cst.Call) and isinstance(node.func.value.func, cst.Name)
        and node.func.value.func.value == "super"
    )


def _only_returns(block) -> bool:
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    return len(statements) == 1 and isinstance(statements[0], cst.SimpleStatementLine) and all(
        isinstance(small, cst.Return) for small in statements[0].body
    )


def _stored_here(facts: ModuleFacts, function: FunctionInfo, receiver: str) -> set[cst.Attribute]:
    """The `receiver.attr` targets the function's own assignments (augmented ones too)
    write; once per function."""
    cache = facts.derived.setdefault("attribute-stores", {})
    if function.node not in cache:
        cache[function.node] = set(attribute_stores(function.node, {receiver}, nested=False))
    return cache[function.node]


def _reassigned_attributes(facts: ModuleFacts, class_scope) -> dict[str, str]:
    """Attributes of instances of a module-local class that are reassigned after construction
    (attribute name -> where), unless the class defines `__hash__` (then the hash, and the
    cache key, may follow the change). Computed once per class."""
    cache = facts.derived.setdefault("reassigned-attributes", {})
    if class_scope.node in cache:
        return cache[class_scope.node]
    found: dict[str, str] = {}
    cache[class_scope.node] = found
    if "__hash__" in class_scope.defs:
        return found
    building = _construction_methods(facts, class_scope) | _called_only_while_tracing(facts, class_scope)
    stored: dict[str, list[tuple[FunctionInfo, cst.BaseExpression | None]]] = {}  # name -> (method, value)
    for method in class_scope.defs.values():
        if method.name in building or not method.params:
            continue
        # `if self._cache is None: self._cache = ...` in a traced method: made once, at the
        # first trace; made lazily elsewhere (a property), it may change what was compiled
        lazy = _made_lazily(method) if method.traced else set()
        for target, value in attribute_stores(method.node, {method.params[0]}, with_values=True):
            if target in lazy:
                continue
            found.setdefault(target.attr.value, f"in '{method.name}'")
            stored.setdefault(target.attr.value, []).append((method, value))
    reassigned = set(found)
    for name, assigned in stored.items():
        if all(
            value is not None and facts.built_from_constants(value, method.scope, method.params[0], reassigned)
            for method, value in assigned
        ):
            del found[name]  # `self.tx = optax.adam(self.cfg.lr)` in `init`: the same every time
    # `obj.mul = False` where `obj = TheClass(...)`, anywhere in the module
    class_name = node_name(class_scope.node)
    instances = {
        (scope.node, name)
        for scope in facts.scopes.values()
        for name, values in scope.values.items()
        if any(isinstance(v, cst.Call) and dotted_name(v.func) == class_name for v in values)
    }
    if instances:
        for scope in facts.scopes.values():
            names = {name for node, name in instances if node is scope.node}
            if names:
                for target in attribute_stores(scope.node, names, nested=False):
                    found.setdefault(target.attr.value, f"on an instance ('{facts.module.code_for_node(target)}')")
    return found


def _cache(function: cst.FunctionDef, table: str) -> bool:
    """Is the container `table` a cache `function` fills: a memo it returns its lookups from,
    or a table it fills only after testing whether it is filled (`if _TABLE: return`, `if
    key not in cache:`)? Either way the fill is meant to happen once."""
    return _memo_table(function, table) or _tests_filled(function, table)


def _tests_filled(function: cst.FunctionDef, table: str) -> bool:
    """Does an `if` of `function` test whether `table` is filled: `if table`, `if not
    table`, `if len(table)`, `if key in table`, `if key not in table`?"""

    def names_table(node) -> bool:
        return isinstance(node, cst.Name) and node.value == table

    def filled(test) -> bool:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return filled(test.expression)
        if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "len":
            return len(test.args) == 1 and names_table(test.args[0].value)
        if isinstance(test, cst.Comparison):
            return any(
                isinstance(target.operator, (cst.In, cst.NotIn)) and names_table(target.comparator)
                for target in test.comparisons
            ) or filled(test.left)
        return names_table(test)

    return any(isinstance(node, cst.If) and filled(node.test) for node in descendants(function.body))


def _memo_table(function: cst.FunctionDef, table: str) -> bool:
    """Does `function` return what it looks up in the container `table` (`return
    table[key]`, `return table.get(key, d)`, or `hit = table.get(key)` ... `return hit`)?"""

    def lookup(value) -> bool:
        if isinstance(value, cst.Subscript):
            return isinstance(value.value, cst.Name) and value.value.value == table
        return (
            isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get"
            and isinstance(value.func.value, cst.Name) and value.func.value.value == table
        )

    nodes = descendants(function.body)
    looked_up = {
        target.target.value for node in nodes if isinstance(node, cst.Assign) and lookup(node.value)
        for target in node.targets if isinstance(target.target, cst.Name)
    }
    return any(
        isinstance(node, cst.Return) and node.value is not None
        and (lookup(node.value) or (isinstance(node.value, cst.Name) and node.value.value in looked_up))
        for node in nodes
    )


def _construction_methods(facts: ModuleFacts, class_scope) -> set[str]:
    """The constructors, and methods used only by them (`self._precompute()` in `__init__`,
    referred to nowhere else in the module), then the methods the project index shows are
    called only while objects are built (`bc.configure()` reached from another class's
    `__init__`) and those used only by them, and the methods that ready the object once
    (`_runs_once`; a Keras layer's `build`): what they assign is set while building."""
    building = set(CONSTRUCTORS) & set(class_scope.defs)
    if "build" in class_scope.defs and _keras_layer(facts, class_scope):
        building.add("build")  # Keras builds a layer once, before its first call
    inside = {name: _attribute_reads(class_scope.defs[name].node) for name in class_scope.defs}
    everywhere = _module_attribute_reads(facts)

    def grow(allowed) -> None:
        grew = True
        while grew:
            grew = False
            for name in class_scope.defs:
                from_builders = sum(inside[b].get(name, 0) for b in building)
                if name not in building and from_builders and from_builders == everywhere.get(name, 0) and allowed(name):
                    building.add(name)
                    grew = True

    grow(lambda name: True)
    project = facts.project
    if project is not None and project.construction_methods:
        building.update(set(project.construction_methods) & set(class_scope.defs))
        # what they call may also be called after construction from another module
        called_later = set(project.called_after_construction)
        grow(lambda name: name not in called_later)
    # a method that readies the object once (`if self.initialized: return`) builds it too
    building.update(name for name, method in class_scope.defs.items() if _runs_once(method))
    return building


def _keras_layer(facts: ModuleFacts, class_scope) -> bool:
    """The class derives from a Keras layer or model (`keras.layers.Layer`,
    `tf.keras.Model`), whose `build` the framework runs once, before the first call."""
    node = class_scope.node
    return isinstance(node, cst.ClassDef) and any(
        (facts.qualname(base.value, class_scope.parent) or "").startswith(("keras.", "tensorflow.keras.", "tf_keras."))
        for base in node.bases
    )


def _called_only_while_tracing(facts: ModuleFacts, class_scope) -> set[str]:
    """Methods called only from the class's traced methods (`self.update_bcs(args)` at the
    start of a jitted `update`): what they assign is set inside each trace, then read there."""
    everywhere = _module_attribute_reads(facts)
    in_traces = facts.derived.get("attribute-reads-in-traces")
    if in_traces is None:
        in_traces = facts.derived["attribute-reads-in-traces"] = {}
        for info in facts.functions.values():
            if info.traced and not _within_traced(facts, info):  # outermost: nested ones are counted in it
                for name, count in _attribute_reads(info.node).items():
                    in_traces[name] = in_traces.get(name, 0) + count
    return {
        name for name in class_scope.defs
        if everywhere.get(name, 0) and in_traces.get(name, 0) == everywhere[name]
    }


def _within_traced(facts: ModuleFacts, info: FunctionInfo) -> bool:
    outer = facts.enclosing_function(info.parent)
    while outer is not None:
        if outer.traced:
            return True
        outer = facts.enclosing_function(outer.parent)
    return False


def _module_attribute_reads(facts: ModuleFacts) -> dict[str, int]:
    everywhere = facts.derived.get("attribute-reads")
    if everywhere is None:
        everywhere = facts.derived["attribute-reads"] = _attribute_reads(facts.module)
    return everywhere


def _attribute_reads(node: cst.CSTNode) -> dict[str, int]:
    """How often each attribute name is referred to (`x.name`) in `node`."""
    counts: dict[str, int] = {}

    class _Count(Visitor):
        def visit_Attribute(self, attribute: cst.Attribute) -> None:
            counts[attribute.attr.value] = counts.get(attribute.attr.value, 0) + 1

    walk(node, _Count())
    return counts


@register
class TracedWritesOuterState(Rule):
    code = "JG103"
    in_tests = False  # tests write outer state from traced code on purpose (counting traces, provoking the error)
    name = "traced-writes-outer-state"
    summary = "A traced function writes outer state: the write happens once, at trace time, and can leak tracers"
    message = "traced function writes outer state ('{target}'): it runs only at trace time and leaks tracers"
    what = """
        Flags `global`/`nonlocal` rebinding, and attribute stores on objects the function did
        not create, inside a traced function. An attribute store is reported when what it
        stores is shown to be a tracer (computed from a traced argument, or an array made in
        the trace) or is a string of static metadata changed only while tracing; a static
        object (a spec, a config, a tree structure) stored at trace time leaks nothing.

        Off in test files unless selected by its code: tests write outer state from traced
        code on purpose (a trace counter that checks there is no retrace, a write that must
        raise). Judged in test files on real code: 0 real, 6 deliberate, 0 false.
    """
    why = """
        The assignment happens once, during tracing, and stores a tracer, not a value: later calls
        do not repeat it, and using the stored tracer outside the trace raises
        `UnexpectedTracerError`.
    """
    example = """
        import jax

        saved = None

        @jax.jit
        def step(x):
            global saved
            saved = x
            return x * 2
    """
    use_instead = """
        import jax

        @jax.jit
        def step(x):
            return x * 2, x

        y, saved = step(1.0)
    """
    invalid = (
        "import jax\ng = 0.\ndef impure_saves_global(x):\n    global g\n    g = x\n    return x\nprint(jax.jit(impure_saves_global)(4.))\n",
        "import jax\nclass Model:\n    @jax.jit\n    def step(self, x):\n        self.last = x\n        return x\n",
        # static metadata of a returned argument: changed at trace time only (cached calls skip it)
        # under a bare vmap, storing a value computed from the mapped argument leaks a tracer
        "import jax\nclass Agent:\n    def stats(self, batch):\n        def apply(x):\n"
        "            self.last = x * 2\n            return x\n        return jax.vmap(apply)(batch)\n",
        # ... and under jit the stored key is a tracer too
        "import jax\nclass Agent:\n    def stats(self, batch):\n        def apply(x):\n"
        "            self.rng, key = jax.random.split(self.rng)\n            return x * 2\n"
        "        return jax.jit(apply)(batch)\n",
        "import jax\n@jax.jit\ndef rename(obj):\n    obj.name += '_x'\n    return obj\n",
        # the arrays of a pytree stored on `self` at trace time: tracers leak
        "import jax\nclass Engine:\n    def init(self, params):\n        state = jax.jit(lambda p: p)(params)\n"
        "        self.cache = jax.tree.map(lambda x: x * 2, state)\n        return state\n"
        "    def run(self, params):\n        return jax.jit(self.init)(params)\n",
        # changed, then only another attribute read: the caller's object never sees it
        "import jax\n@jax.jit\ndef loss(params, batch):\n    batch.r = batch.r * 2\n    return params * batch.obs\n",
        # the changed part is not the part handed back: the caller's object never sees it
        "import jax\n@jax.jit\ndef sample(data):\n    data.rng._state = data.rng._state + 1\n    return data.flux\n",
        "import jax\ndef outer():\n    total = 0\n    @jax.jit\n    def f(x):\n        nonlocal total\n        total += x\n        return x\n    return f\n",
        # counting calls: runs once per trace, not once per call
        "import jax\ncalls = 0\n@jax.jit\ndef f(x):\n    global calls\n    calls += 1\n    return x\n",
    )
    valid = (
        # a constant array made at import, stored again by each trace: no tracer leaves
        "import jax\nimport jax.numpy as jnp\nGRID = jnp.linspace(0, 1, 3)\n@jax.jit\ndef f(x):\n    env.grid = GRID\n    return x\n",
        # flax.nnx: an nnx.jit argument's state updates are carried out by the transformation
        "from flax import nnx\n@nnx.jit\ndef train_step(model, optimizer, metrics, grads, loss):\n"
        "    optimizer.update(model, grads)\n    metrics.update(loss=loss)\n    model.count.value += 1\n    return loss\n",
        # a helper that traced code calls, tagging a function it is given: no tracer stored
        "import jax\ndef tag(fn, name):\n    fn.label = name\n    return fn\n@jax.jit\ndef f(x):\n    tag(abs, 'x')\n    return x\n",
        # an object built inside traced code: its constructor sets its own attributes
        "import jax\nclass Gaussian:\n    def __init__(self, loc, scale):\n        self.loc = loc\n        self.scale = scale\n"
        "@jax.jit\ndef f(x):\n    g = Gaussian(x, 1.0)\n    return g.loc\n",
        "import jax\n@jax.jit\ndef f(x):\n    class Box:\n        pass\n    b = Box()\n    b.value = x\n    return b.value\n",
        "import jax\ncounter = 0\ndef log():\n    global counter\n    counter += 1\n",
        "import jax\n@jax.jit\ndef f(x):\n    global CONSTANT\n    return x * CONSTANT\n",
        # an argument's part changed and that part handed back (jit rebuilds the argument)
        "import jax\n@jax.jit\ndef sample(data):\n    data.rng._state = data.rng._state + 1\n    return data.flux, data.rng\n",
        # a static object stored at trace time (aqt's Pallas BlockSpecs): no tracer
        "import jax\nclass Kernel:\n    def run(self, x, specs):\n        def wrapped(x):\n"
        "            self.in_specs = [spec.replace(memory='vmem') for spec in specs]\n            return x * 2\n"
        "        return jax.jit(wrapped)(x)\n",
        # an argument's part changed and then read in the same trace (muax's losses)
        "import jax\n@jax.jit\ndef loss(params, batch):\n    batch.r = batch.r * 2\n"
        "    def body(i, acc):\n        return acc + batch.r[i]\n    return jax.lax.fori_loop(0, 3, body, params)\n",
        # a helper that changes the state it is given and hands it back (lax.cond rebuilds `s`)
        "import jax\nclass Env:\n    def step(self, state, ok, i):\n"
        "        return jax.lax.cond(ok, lambda s: self._pack(s, i), lambda s: s, state)\n"
        "    def _pack(self, state, i):\n        state.placed = state.placed.at[i].set(True)\n        return state\n"
        "step = jax.jit(Env().step)\n",
        # a static fact (a tree structure) recorded from inside the trace: no tracer leaks
        "import jax\ndef solve(f, xs):\n    structure = None\n    def leaf(x):\n        nonlocal structure\n"
        "        out = f(x)\n        structure = jax.tree_util.tree_structure(out)\n        return out\n"
        "    return jax.jit(lambda v: jax.tree_util.tree_map(leaf, v))(xs), structure\n",
        # haiku's abstract_to_dot: a result written out of an abstract evaluation
        # a bare vmap runs the body on every call: a value that does not depend on the
        # mapped argument is computed eagerly and stored as it is (dopamine's agents)
        "import jax\nclass Agent:\n    def stats(self, batch):\n        def apply(x):\n"
        "            self.rng, key = jax.random.split(self.rng)\n            return x * 2\n"
        "        return jax.vmap(apply)(batch)\n",
        "import jax\ndef to_text(fun, *args):\n    out = ''\n    def extract(*inner):\n        nonlocal out\n"
        "        out = str(fun(*inner))\n    jax.eval_shape(extract, *args)\n    return out\n",
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_target(target.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_target(node.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check_target(node.target, node.value)

    def _check_target(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        ctx = self.ctx
        if not ctx.in_traced or ctx.facts.runs_abstractly(ctx.scope):
            return  # a `nonlocal` result written out of eval_shape / make_jaxpr: the intended idiom
        scope = ctx.scope
        for name_node in target_name_nodes(target):
            name = name_node.value
            if name in scope.declared_global or name in scope.declared_nonlocal:
                if static_information(ctx, [value]):
                    continue  # `nonlocal inner; inner = tree_structure(out)`: a static fact recorded, no tracer
                if name in scope.declared_nonlocal and _cell_of_traced_call(ctx, name):
                    continue
                self.report(name_node, self.message.format(target=name))
        if isinstance(target, cst.Attribute):
            root = _root_name(target)
            if root is None or _created_locally(ctx, root) or _being_constructed(ctx, root):
                return
            if ctx.facts.nnx_managed(root, ctx.scope):
                return  # an NNX Variable of an nnx.jit argument: the transformation carries it out
            if not _inside_a_transformed_function(ctx):
                return  # a helper that traced code calls: what it stores is not proven a tracer
            # a string (static metadata) changes only while tracing: cached calls skip it
            if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                if not ctx.facts.only_unstaged(ctx.function):
                    self.report(target, self.message.format(target=ctx.code(target)))
                return
            traced = TracedFlow.of(ctx).origins(value, ctx)
            if ctx.facts.only_unstaged(ctx.function) and not traced:
                return  # vmap or grad alone runs the body on every call: only a traced value leaks
            if not traced and not _may_hold_array(ctx, value):
                return  # what is stored is not shown to be a tracer (a BlockSpec, a config object)
            if _handed_back(ctx, target):
                return  # a returned argument's data may change (the transformation rebuilt it)
            function = ctx.function
            if root in function.traced_params and ctx.scope.lookup(root) is function.scope and _read_later(ctx, function, dotted_name(target) or root):
                return  # the transformation rebuilt the argument: changed for this trace's own later use
            self.report(target, self.message.format(target=ctx.code(target)))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                if isinstance(element.value, cst.Attribute):
                    self._check_target(element.value, value)


def _root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _handed_back(ctx, target: cst.Attribute) -> bool:
    """`state.x = v; return state` (or `data.rng._state = v; return data.rng`): a parameter
    changed and returned by the function that changes it (the functional idiom; JAX rebuilds
    transformed functions' arguments)."""
    function = ctx.function
    name = _root_name(target)
    if function is None or ctx.scope.lookup(name) is not function.scope or name not in function.params:
        return False
    returned = _returned_names(function)
    changed = dotted_name(target.value) or name  # the object whose attribute is set
    parts = changed.split(".")
    return any(".".join(parts[:cut]) in returned for cut in range(1, len(parts) + 1))


def _created_locally(ctx, name: str) -> bool:
    """A name bound by an assignment, `def` or `class` in the current function (not a
    parameter, not outer): `init_fn.__signature__ = ...` on a function defined here."""
    scope = ctx.scope
    owner = scope.lookup(name)
    return (
        owner is scope
        and owner.function is not None
        and name not in owner.params
        and (name in owner.values or name in owner.defs or name in owner.classes)
    )


def _inside_a_transformed_function(ctx) -> bool:
    """The current function, or one it is nested in, receives tracers from a transformation
    (jit, vmap, a lax body), rather than being a helper traced code happens to call."""
    function = ctx.function
    while function is not None:
        if function.params_traced:
            return True
        function = ctx.facts.enclosing_function(function.parent)
    return False


def _being_constructed(ctx, name: str) -> bool:
    """`self` in `__init__`/`__post_init__`: the object is made by this very call, in traced
    code as much as anywhere (a distribution or layer built inside a jitted function)."""
    function = ctx.function
    return (
        function is not None
        and function.class_name is not None
        and function.name in ("__init__", "__post_init__")
        and bool(function.params)
        and function.params[0] == name
        and ctx.scope.lookup(name) is function.scope
    )


def _cell_of_traced_call(ctx, name: str) -> bool:
    """`nonlocal name` of an enclosing function that is itself traced: the variable is made
    afresh in each trace of that function, so writing it leaks nothing out of the trace."""
    parent = ctx.scope.parent
    owner = parent.lookup(name) if parent is not None else None
    function = owner.function if owner is not None else None
    return function is not None and function.traced and not function.abstract_only


def _read_later(ctx, function: FunctionInfo, path: str) -> bool:
    """`path` (a name, or `name.attr`) is read in a statement after the one that changes it
    (`state[k] = v`, then `model(state)`; `batch.r = f(batch.r)`, then `batch.r[:, i]`): the
    change is for the function's own use (read there or in a function nested in it). A
    dotted path is read through itself, a longer path, or its root passed whole;
    `batch.obs` does not read `batch.r`."""
    statement = ctx.statement_stack[-1] if ctx.statement_stack else None
    root = path.split(".")[0]
    loads = ctx.facts.loads
    found = [False]
    after = [False]

    class _Scan(Visitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            dotted = dotted_name(node)
            if after[0] and dotted is not None and (dotted == path or dotted.startswith(path + ".")):
                found[0] = True
            if isinstance(node.value, cst.Name) and "." in path:
                roots.add(node.value)  # `batch.obs`: not the whole of `batch`

        def visit_Name(self, node: cst.Name) -> None:
            if after[0] and node.value == root and node in loads and node not in roots:
                found[0] = True

        def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            after[0] = after[0] or node is statement

    roots: set[cst.Name] = set()
    if statement is None or isinstance(function.node, cst.Lambda):
        return False
    walk(function.node, _Scan())
    return found[0]


# Methods that only a list/dict/set/deque has: a call mutates the receiver.
MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "setdefault", "popitem", "appendleft", "extendleft", "popleft"}
)
# Also container mutators, but other objects have methods of these names too
# (`optimizer.update(...)` is pure): flagged only on a known container or a traced pytree.
AMBIGUOUS_MUTATING_METHODS = frozenset({"update", "pop", "remove", "clear", "add", "discard"})
CONTAINER_KINDS = (kinds.LIST, kinds.DICT, kinds.SET)
# Mutators whose list/dict/set/deque version returns None: a call whose result is used is
# some other object's functional API (`buffer_state = replay_buffer.insert(buffer_state, x)`).
RETURN_NONE = frozenset(
    {"append", "extend", "insert", "appendleft", "extendleft", "update", "add", "remove", "clear", "discard"}
)


@register
class TracedMutatesOuterContainer(Rule):
    code = "JG104"
    in_tests = False  # tests fill a container from traced code on purpose (counting traces)
    name = "traced-mutates-outer-container"
    summary = "A traced function mutates a container it did not create: the change happens once, at trace time"
    message = "traced function mutates '{name}', a container it did not create: the change happens once, at trace time"
    what = """
        Flags `.append/.extend/.update/.pop/...` calls, item assignment and `del` on a
        container that a traced function received or reads from outside. Not a memo table
        the function returns its lookups from (`hit = PLANS.get(key)` ... `return hit`), nor
        a table it fills once after testing whether it is filled (`if _TABLE: return`, `if
        key not in cache:`), filled with values not shown to be tracers: a cached call needs
        none of it. Nor a jitted function's own argument (jit hands it a rebuilt copy) that it
        changes and then reads, returns, or takes items out of to use (`labels =
        batch.pop("labels")`).

        Off in test files unless selected by its code: tests fill a container from traced
        code on purpose (`calls["n"] += 1` to check there is no retrace). Judged in test files
        on real code: 0 real, 2 deliberate, 2 false.
    """
    why = """
        The mutation runs during tracing only. A cached call does not repeat it, and what was
        appended is a tracer, which escapes the trace. Build a new container inside the
        function and return it instead.
    """
    example = """
        import jax

        history = []

        @jax.jit
        def step(x):
            history.append(x)
            return x + 1
    """
    use_instead = """
        import jax

        @jax.jit
        def step(x):
            return x + 1, x

        history = []
        y, seen = step(1.0)
        history.append(seen)
    """
    invalid = (
        "import jax\nhistory = []\n@jax.jit\ndef f(x):\n    history.append(x)\n    return x\n",
        "import jax\ncache = {}\n@jax.jit\ndef f(x):\n    cache['last'] = x\n    return x\n",
        "import jax\n@jax.jit\ndef f(state, x):\n    state.update(x=x)\n    return x\n",
        "import jax\nseen = set()\n@jax.jit\ndef f(x):\n    seen.add(x)\n    return x\n",
        # the argument is changed in place but not returned: the caller's dict is not updated
        "import jax\n@jax.jit\ndef f(params, grads):\n    params['w'] = params['w'] - grads\n    return grads\n",
        # an item dropped from the argument, the result unused: meant for the caller's dict, which keeps it
        "import jax\n@jax.jit\ndef step(state, batch):\n    batch.pop('labels')\n    return state\n",
        # a helper mutating what it was given (the caller's container)
        "import jax\ndef record(log, x):\n    log.append(x)\n    return x\n@jax.jit\ndef f(x):\n"
        "    return record(HISTORY, x)\nHISTORY = []\n",
        # a helper mutating the jitted function's own argument, which is not handed back
        "import jax\ndef scale(params):\n    params['w'] = params['w'] * 2\n@jax.jit\ndef f(params, x):\n"
        "    scale(params)\n    return params['w'] * x\n",
        # under a bare vmap the body runs on every call, but a mapped value stored leaks a tracer
        "import jax\nimport jax.numpy as jnp\ndef mapped(xs):\n    seen = {}\n    def body(x):\n"
        "        seen['last'] = jnp.sin(x)\n        return x\n    return jax.vmap(body)(xs), seen\n",
        # a table filled once after testing it, but with a traced value: a leaked tracer
        "import jax\n_SEEN = {}\n@jax.jit\ndef remember(t):\n    if 't' not in _SEEN:\n        _SEEN['t'] = t * 2\n    return t\n",
    )
    valid = (
        # under a bare vmap the body runs on every call: recording static facts is no leak
        "import jax\ndef mapped(xs, names):\n    seen = {}\n    def body(x):\n"
        "        seen['names'] = names\n        return x\n    return jax.vmap(body)(xs), seen\n",
        # flax.nnx: an nnx.jit argument's state updates are carried out by the transformation
        "from flax import nnx\n@nnx.jit\ndef train_step(model, optimizer, metrics, grads, loss):\n"
        "    optimizer.update(model, grads)\n    metrics.update(loss=loss)\n    model.count.value += 1\n    return loss\n",
        "import jax\n@jax.jit\ndef f(x):\n    out = []\n    for i in range(3):\n        out.append(x * i)\n    return out\n",
        "import jax\n@jax.jit\ndef pure_uses_internal_state(x):\n    state = dict(even=0, odd=0)\n"
        "    for i in range(10):\n        state['even' if i % 2 == 0 else 'odd'] += x\n    return state['even'] + state['odd']\n",
        "history = []\ndef f(x):\n    history.append(x)\n    return x\n",
        "import jax\n@jax.jit\ndef f(site):\n    site = site.copy()\n    site['value'] = 1.0\n    return site\n",
        # shapes recorded at trace time: static facts, no tracer leaves the trace
        "import jax\nimport jax.numpy as jnp\nshapes = []\n@jax.jit\ndef f(x):\n    shapes.append([jnp.shape(v) for v in jax.tree.leaves(x)])\n"
        "    return x\n",
        # optax style: `update` of an optimizer is a pure method
        "import jax, optax\nopt = optax.sgd(0.1)\n@jax.jit\ndef step(params, state, grads):\n"
        "    updates, state = opt.update(grads, state, params)\n    return optax.apply_updates(params, updates), state\n",
        # Pallas kernels write their output Refs
        "import jax\nfrom jax.experimental import pallas as pl\ndef kernel(x, out, acc_scratch):\n"
        "    acc_scratch[...] = x[...]\n    out[...] = acc_scratch[...]\n"
        "@jax.jit\ndef f(x):\n    return pl.pallas_call(kernel, out_shape=x)(x)\n",
        "import jax\n@jax.jit\ndef f(x):\n    def body(x_ref, o_ref):\n        o_ref[0] = x_ref[0]\n    return body\n",
        # `**kwargs` is a new dict on every call
        "import jax\n@jax.jit\ndef step(state, **kwargs):\n    dt = kwargs.pop('dt', 0.1)\n    return state * dt\n",
        # functional APIs that return the new value
        "import jax\ndef make(replay_buffer, repertoire):\n    @jax.jit\n    def step(buffer_state, x):\n"
        "        buffer_state = replay_buffer.insert(buffer_state, x)\n        new = repertoire.add(x)\n"
        "        return buffer_state, new\n    return step\n",
        # items taken out of the jitted function's own dict argument (jit's rebuilt copy) to use them
        "import jax\n@jax.jit\ndef step(state, batch):\n    labels = batch.pop('labels')\n    return state * labels\n",
        # the jitted function's own dict argument, updated and returned
        "import jax\n@jax.jit\ndef update(params, grads):\n    params['online'] = params['online'] - grads\n    return params\n",
        # filled in for the function's own use, then read: jit's rebuilt dict, a merge in the trace
        "import jax\n@jax.jit\ndef lightcurve(params, state):\n    state.update(params)\n    state['f'] = state['a'] * 2\n"
        "    return state['f'] * state['b']\n",
        # ... also from a scan body inside it
        "import jax\n@jax.jit\ndef apply(feat, xs):\n    def loop(prev, x):\n        feat['prev'] = prev\n"
        "        return prev + feat['w'] * x, prev\n    return jax.lax.scan(loop, 0.0, xs)\n",
        # ... or handed back inside the state it rebuilds
        "import jax\n@jax.jit\ndef update(state, model_vars, new_params):\n    model_vars.update(params=new_params)\n"
        "    return state.replace(model_vars=model_vars, step=state.step + 1)\n",
        # a module's function named like a list method
        "import jax\nimport numpy as onp\n@jax.jit\ndef f(x):\n    onp.append([1.0], 2.0)\n    return x\n",
        # a while_loop body's carry, changed through an alias and returned (lineax's lsmr)
        "import jax\ndef body(loop_state):\n    st = loop_state\n    st['k'] = st['k'] + 1\n"
        "    loop_state['done'] = st['k'] > 3\n    return st\n"
        "out = jax.lax.while_loop(lambda s: ~s['done'], body, {'k': 0, 'done': False})\n",
        # a lax body's carry dict: rebuilt for every trace and returned
        "import jax\ndef body(i, carry):\n    carry['x'] = carry['x'] + i\n    return carry\n"
        "out = jax.lax.fori_loop(0, 3, body, {'x': 0.0})\n",
        # a helper filling a message its traced caller made (numpyro's effect handlers)
        "import jax\ndef process(msg):\n    msg['value'] = msg['fn'](*msg['args'])\ndef sample(fn, x):\n"
        "    msg = {'fn': fn, 'args': (x,), 'value': None}\n    process(msg)\n    return msg['value']\n"
        "@jax.jit\ndef model(x):\n    return sample(jax.numpy.exp, x)\n",
        # a closure's dict filled from inside eval_shape, to harvest structure
        "import jax\ndef shapes(f, x):\n    seen = {}\n    def go(v):\n        seen['out'] = f(v)\n        return v\n"
        "    jax.eval_shape(go, x)\n    return seen\n",
        # a memo of static plans, read back by the function that fills it (dftax)
        "import jax\nPLANS = {}\ndef plan_for(shape):\n    hit = PLANS.get(shape)\n    if hit is not None:\n"
        "        return hit\n    PLANS[shape] = tuple(range(shape[0]))\n    return PLANS[shape]\n"
        "@jax.jit\ndef f(x):\n    return x * len(plan_for(x.shape))\n",
        # a table loaded from a file once, after testing whether it is loaded (co2-eos)
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\n_TABLE = {}\ndef _ensure_loaded():\n    if _TABLE:\n"
        "        return\n    data = np.load('table.npz')\n    for k in data:\n        _TABLE[k] = jnp.array(data[k])\n"
        "@jax.jit\ndef pressure(t):\n    _ensure_loaded()\n    return t * _TABLE['p']\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not self.ctx.in_traced or not isinstance(func, cst.Attribute):
            return
        if not isinstance(func.value, cst.Name):
            return
        method = func.attr.value
        if method in RETURN_NONE and not self._discarded(node):
            return  # `buf = buffer.insert(buf, x)`: a functional API, not list.insert
        if method in MUTATING_METHODS or (method in AMBIGUOUS_MUTATING_METHODS and self._is_container(func.value)):
            if node.args and static_information(self.ctx, [arg.value for arg in node.args]):
                return  # `shapes.append(jnp.shape(carry))`: a static fact recorded, no tracer leaks
            self._check(func.value, node, [arg.value for arg in node.args])

    def _discarded(self, call: cst.Call) -> bool:
        statement = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
        return isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Expr) and small.value is call for small in statement.body
        )

    def _taken_out(self, node: cst.CSTNode) -> bool:
        """`labels = batch.pop("labels")`: an item read out of the argument, whose result is used."""
        return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "pop" and not self._discarded(node)

    def _is_container(self, name: cst.Name) -> bool:
        ctx = self.ctx
        if ctx.kind_of(name) in CONTAINER_KINDS:
            return True
        function = ctx.function
        owner = ctx.scope.lookup(name.value)
        # a traced parameter is a pytree of arrays: if it has `.update`, it is a dict
        return function is not None and owner is function.scope and name.value in function.traced_params

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._check_subscript(target.target, [node.value])

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Subscript):
            self._check_subscript(node.target, [node.value])

    def visit_Del(self, node: cst.Del) -> None:
        if isinstance(node.target, cst.Subscript):
            self._check_subscript(node.target, [])

    def _check_subscript(self, target: cst.Subscript, values: list[cst.BaseExpression]) -> None:
        if not self.ctx.in_traced or not isinstance(target.value, cst.Name):
            return
        # An array parameter indexed in place is JG301's; a string key means a dict. Any
        # other target must be known to be a list, dict or set: an unknown object indexed
        # with a number or slice may be a Pallas Ref, a NumPy buffer or an array.
        if self.ctx.kind_of(target.value) not in CONTAINER_KINDS and not _string_index(target):
            return
        self._check(target.value, target, values)

    def _check(self, name: cst.Name, node: cst.CSTNode, values: list[cst.BaseExpression]) -> None:
        ctx = self.ctx
        if ctx.kind_of(name) == kinds.REF:
            return  # a Ref is the one mutable JAX container
        if ctx.facts.nnx_managed(name.value, ctx.scope):
            return  # nnx.jit carries the updates of its NNX arguments out
        if ctx.facts.runs_abstractly(ctx.scope):
            return  # filling a closure's dict from inside eval_shape is the intended idiom
        owner = ctx.scope.lookup(name.value)
        if owner is None or name.value in owner.imports:
            return  # `jnp.append(x, 1)`: a module's function, not a container's method
        function = ctx.function
        if owner is ctx.scope and (name.value not in owner.params or name.value in owner.values):
            return  # created here, or a parameter rebound here (`site = site.copy()`)
        if owner.function is not None and name.value in owner.params:
            if _kwargs(owner.function, name.value) or name.value in _returned_names(owner.function):
                return  # a new dict each call; or changed and handed back to the caller
            if (owner.function is function or owner.function.params_traced) and (
                _read_later(ctx, function, name.value) or self._taken_out(node)
            ):
                return  # filled in, or taken apart (`labels = batch.pop("labels")`), for this function's own use
            if not owner.function.params_traced and not self._outer_container_passed(owner.function, name.value):
                return  # a helper's argument: made inside the same trace unless a caller shows otherwise
        if owner.function is not None and owner.function.traced and owner.function is not function:
            # a container made by an enclosing traced function: still inside the same trace
            if name.value not in owner.params:
                return
        if not any(TracedFlow.of(ctx).origins(v, ctx) for v in values) and (
            ctx.facts.only_unstaged(function) or (function is not None and _cache(function.node, name.value))
        ):
            # vmap or grad alone runs the body on every call; a memo the function returns its
            # lookups from needs none of what a cached call skips (dftax's bucket plans), nor
            # does a table filled once after testing it (co2-eos' lazily loaded spline table):
            # only a traced value leaks
            return
        self.report(node, self.message.format(name=name.value))


    def _outer_container_passed(self, helper: FunctionInfo, param: str) -> bool:
        """A call of `helper` in this module passes, as `param`, a container from outside the
        trace: a module-level name, or an argument of a transformed function that does not
        hand it back."""
        facts = self.ctx.facts
        index = helper.params.index(param)
        if helper.class_name is not None and helper.params[:1] in (["self"], ["cls"]):
            index -= 1
        for caller in facts.functions.values():
            for call in caller.calls:
                if facts.function_for(call.func, caller.scope) is not helper:
                    continue
                passed = keyword(call, param) or next(
                    (arg for i, arg in enumerate(positional(call)) if i == index), None
                )
                if not isinstance(passed, cst.Name):
                    continue
                owner = caller.scope.lookup(passed.value)
                if owner is not None and owner.kind == "module" and passed.value not in owner.imports:
                    return True
                if owner is caller.scope and caller.params_traced and passed.value in caller.params:
                    if passed.value not in owner.values and passed.value not in _returned_names(caller):
                        return True
        return False


def _kwargs(function: FunctionInfo, param: str) -> bool:
    """`**kwargs`: a dict made anew for every call."""
    node = function.node
    return isinstance(node, cst.FunctionDef) and node.params.star_kwarg is not None and node.params.star_kwarg.name.value == param


def _names_and_paths(value: cst.BaseExpression | None) -> set[str]:
    """`state`, `data.rng`, and those in a tuple or list: what an expression hands over whole."""
    items = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
    return {path for item in items if item is not None and (path := dotted_name(item)) is not None}


def _returned_whole(value: cst.BaseExpression | None) -> set[str]:
    """What a returned expression hands over whole: `state`, `(params, state)`, and the
    containers it rebuilds a value from (`state.replace(model_vars=model_vars)`,
    `{"params": params}`, `TrainState(params)`)."""
    found = _names_and_paths(value)
    if isinstance(value, (cst.Tuple, cst.List)):
        parts = [e.value for e in value.elements]
    elif isinstance(value, cst.Dict):
        parts = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    elif isinstance(value, cst.Call):
        parts = [arg.value for arg in value.args]
    else:
        parts = []
    for part in parts:
        found |= _returned_whole(part)
    return found


def _returned_names(function: FunctionInfo) -> set[str]:
    """Names (and attribute paths: `data.rng`) a function returns, alone or in a returned
    tuple or list, and the names they alias (`st = loop_state ... return st`)."""
    returned: set[str] = set()
    aliases: dict[str, set[str]] = {}

    class _Collect(Visitor):
        def visit_Return(self, node: cst.Return) -> None:
            returned.update(_returned_whole(node.value))

        def visit_Assign(self, node: cst.Assign) -> None:
            if isinstance(node.value, (cst.Name, cst.Attribute, cst.Tuple, cst.List)):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        aliases.setdefault(target.target.value, set()).update(_names_and_paths(node.value))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function.node

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    if isinstance(function.node, cst.Lambda):
        return set()
    walk(function.node, _Collect())
    pending = list(returned)
    while pending:
        for original in aliases.get(pending.pop(), ()):
            if original not in returned:
                returned.add(original)
                pending.append(original)
    return returned


def _string_index(target: cst.Subscript) -> bool:
    return len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index) and literal_str(
        target.slice[0].slice.value
    ) is not None


TRACE_TIME_CONSTANTS = {
    "time.time": "time.time()",
    "time.perf_counter": "time.perf_counter()",
    "time.monotonic": "time.monotonic()",
    "time.time_ns": "time.time_ns()",
    "datetime.datetime.now": "datetime.now()",
    "datetime.datetime.utcnow": "datetime.utcnow()",
    "datetime.datetime.today": "datetime.today()",
    "datetime.date.today": "date.today()",
    "os.getenv": "os.getenv()",
    "os.environ.get": "os.environ",
    "builtins.open": "open()",
    "builtins.input": "input()",
}
TRACE_TIME_PREFIXES = ("numpy.random.", "random.")
# Generators made from a seed, and seeding: NumPy turns the seed into an integer.
_SEEDED_GENERATORS = frozenset({
    "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.seed", "numpy.random.Generator",
    "numpy.random.PCG64", "numpy.random.SeedSequence", "random.seed", "random.Random",
})


@register
class TraceTimeConstant(Rule):
    code = "JG105"
    name = "trace-time-constant"
    summary = "NumPy random, time, environment or file reads in a traced function are frozen into the compiled program"
    message = "{what} in a traced function is evaluated once, at trace time, and frozen into the compiled program"
    fix_kind = "suggest"
    what = """
        Flags `np.random.*`, `random.*`, `time.time()`, `datetime.now()`, `os.environ` (read;
        `os.environ["X"] = v` reads nothing into the program), `open()` and similar inside a
        traced function. Not a generator seeded from a value proven traced
        (`np.random.default_rng(np.uint32(key))` with `key` traced): NumPy's conversion of a
        tracer raises at once, nothing is frozen.
    """
    why = """
        These calls run while JAX traces the function; their result becomes a constant of the
        compiled program. Every later call reuses the same "random" number, timestamp or
        environment value. Pass such values in as arguments, or use `jax.random` with a key.
    """
    example = """
        import jax
        import numpy as np

        @jax.jit
        def add_noise(x):
            return x + np.random.normal(size=x.shape)
    """
    use_instead = """
        import jax

        @jax.jit
        def add_noise(key, x):
            return x + jax.random.normal(key, x.shape)
    """
    invalid = (
        # returning early on concrete values leaves the traced path reading the environment
        "import os\nimport jax\ndef tuned(x, default):\n    if not isinstance(x, jax.core.Tracer):\n        return default\n"
        "    return int(os.getenv('BLOCK', '128'))\n@jax.jit\ndef f(x):\n    return x * tuned(x, 64)\n",
        "import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return x + np.random.rand()\n",
        # the same helper also called in the trace
        "import time\nimport jax\ndef host_solve(a):\n    start = time.time()\n    return a\n"
        "@jax.jit\ndef solve(a):\n    fun = lambda a: host_solve(a)\n    b = host_solve(a)\n"
        "    return jax.pure_callback(fun, jax.ShapeDtypeStruct(a.shape, a.dtype), b)\n",
        # seeded from a constant: the same numbers on every call
        "import jax\nimport numpy as np\n@jax.jit\ndef f(key, x):\n    rng = np.random.default_rng(0)\n"
        "    return x + rng.normal()\n",
        "import jax, time\n@jax.jit\ndef f(x):\n    return x * time.time()\n",
        "import jax, os\n@jax.jit\ndef f(x):\n    return x * float(os.environ['SCALE'])\n",
        "import jax, random\n@jax.jit\ndef f(x):\n    return x * random.random()\n",
        # a helper the jitted function calls reads the environment at trace time
        "import os\nimport jax\nimport jax.numpy as jnp\ndef get_dtype():\n    return jnp.float32 if os.getenv('P') == 'f32' else jnp.float64\n"
        "@jax.jit\ndef f(x):\n    return x.astype(get_dtype())\n",
    )
    valid = (
        # a write to the environment reads nothing into the program (jaccpot configuring a library)
        "import jax, os\n@jax.jit\ndef f(x):\n    os.environ['XLA_FLAGS'] = '--xla_cpu_enable_fast_math=false'\n    return x * 2\n",
        # after an early return for tracers, the rest runs on concrete values only
        "import os\nimport jax\ndef _tracing(tree):\n    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(tree))\n"
        "def tuned(x, default):\n    if _tracing(x):\n        return default\n    return int(os.getenv('BLOCK', '128'))\n"
        "@jax.jit\ndef f(x):\n    return x * tuned(x, 64)\n",
        "import jax\n@jax.jit\ndef f(key, x):\n    return x + jax.random.normal(key, x.shape)\n",
        "import time\nimport numpy as np\nstart = time.time()\nnoise = np.random.rand(3)\n",
        "import jax\nfrom jax import random\n@jax.jit\ndef f(key):\n    return random.uniform(key)\n",
        # memoized: the author wants the environment read once, traced or not
        "import functools\nimport os\nimport jax\nimport jax.numpy as jnp\n@functools.cache\ndef get_dtype():\n"
        "    return jnp.float32 if os.getenv('P') == 'f32' else jnp.float64\n"
        "@jax.jit\ndef f(x):\n    return x.astype(get_dtype())\n",
        # a helper only a host callback runs: on the host, on every call
        "import time\nimport jax\ndef host_solve(a):\n    start = time.time()\n    return a\n"
        "@jax.jit\ndef solve(a):\n    fun = lambda a: host_solve(a)\n"
        "    return jax.pure_callback(fun, jax.ShapeDtypeStruct(a.shape, a.dtype), a)\n",
        # seeded from the traced key: the conversion to an integer raises under tracing
        "import jax\nimport numpy as np\n@jax.jit\ndef f(key, x):\n    rng = np.random.default_rng(np.uint32(key))\n"
        "    return x + rng.normal()\n",
        # a host callback defined inside jit runs on every call
        "import jax, time\n@jax.jit\ndef f(x):\n    def dump(v):\n        with open(f'{time.time_ns()}.txt', 'w') as out:\n"
        "            out.write(str(v))\n    jax.debug.callback(dump, x)\n    return x\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.ctx.in_traced:
            return
        name = self.ctx.qualname(node.func)
        if name is None:
            return
        if name in _SEEDED_GENERATORS and self._seeded_by_tracer(node):
            return  # `default_rng(np.uint32(key))` on a tracer raises at once: nothing is frozen
        if name in TRACE_TIME_CONSTANTS:
            self.report(node, self.message.format(what=TRACE_TIME_CONSTANTS[name]))
        elif name.startswith(TRACE_TIME_PREFIXES):
            self.report(node, self.message.format(what=name.replace("numpy.", "np.") + "()"))

    def _seeded_by_tracer(self, call: cst.Call) -> bool:
        """A seed made from a traced value: NumPy converts it to an integer, which raises
        under tracing (TracerArrayConversionError)."""
        return shows_traced(self.ctx, [arg.value for arg in call.args])

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self.ctx.in_traced and self.ctx.qualname(node.value) == "os.environ" and not self._set_here(node):
            self.report(node, self.message.format(what="os.environ"))

    def _set_here(self, node: cst.Subscript) -> bool:
        """`os.environ["X"] = "1"`: a write, not a value read into the program."""
        statement = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
        return isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Assign) and any(target.target is node for target in small.targets)
            for small in statement.body
        )
