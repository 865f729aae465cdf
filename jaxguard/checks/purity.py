"""JG101-JG105: traced functions must be pure (sharp bits: "Pure functions")."""

from __future__ import annotations

import ast
import string

import libcst as cst

from jaxguard.lint import kinds
from jaxguard.lint.engine import AddImport, ReplaceNode
from jaxguard.lint.facts import literal_str, target_name_nodes
from jaxguard.lint.registry import Rule, register


def _traced_by(ctx) -> str:
    function = ctx.function
    return function.traced_by.rsplit(".", 1)[-1] if function is not None else "jit"


@register
class PrintInTraced(Rule):
    code = "JG101"
    name = "print-in-traced"
    message = "print() in a traced function runs once, at trace time, and shows tracers; use jax.debug.print"
    fix_kind = "autofix"
    what = "Flags `print(...)` inside a function that JAX traces (jit, vmap, pmap, lax bodies, and their helpers)."
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
        "import jax\n@jax.jit\ndef f(x):\n    print(x)\n    return x\n",
        "from jax import jit\ndef f(x):\n    print('x is', x)\n    return x * 2\ng = jit(f)\n",
        "import jax\nfrom jax import lax\ndef body(i, acc):\n    print(i)\n    return acc + i\n"
        "def run(n):\n    return lax.fori_loop(0, n, body, 0)\n",
    )
    valid = (
        "import jax\n@jax.jit\ndef f(x):\n    jax.debug.print('{}', x)\n    return x\n",
        "import jax\ndef f(x):\n    print(x)\n    return x\nprint(jax.grad(f)(1.0))\n",
        "def jit(f):\n    return f\n@jit\ndef f(x):\n    print(x)\n    return x\n",
        "import jax\n@jax.jit\ndef f(x):\n    def print(*a):\n        pass\n    print(x)\n    return x\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.ctx.in_traced or self.ctx.qualname(node.func) != "builtins.print":
            return
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
    message = "traced function reads module-level '{name}', which is reassigned elsewhere: its value is frozen at trace time"
    what = "Flags a traced function that reads a module-level name that is rebound (assigned again, augmented, or assigned through `global`)."
    why = """
        JAX captures the value a global has when the function is traced. Later calls with the
        same shapes reuse the compiled program and silently keep the old value; a call with a
        new shape retraces and picks up the new one. Results then depend on call history.
    """
    example = """
        import jax

        scale = 1.0

        @jax.jit
        def apply(x):
            return x * scale

        scale = 10.0
    """
    use_instead = """
        import jax

        @jax.jit
        def apply(x, scale):
            return x * scale
    """
    invalid = (
        "import jax\ng = 0.\ndef f(x):\n    return x + g\nprint(jax.jit(f)(4.))\ng = 10.\n",
        "import jax\ncount = 0\n@jax.jit\ndef f(x):\n    return x + count\ndef bump():\n    global count\n    count = count + 1\n",
        "import jax\nlr = 0.1\nlr *= 0.5\n@jax.jit\ndef f(x):\n    return x * lr\n",
    )
    valid = (
        "import jax\nSCALE = 2.0\n@jax.jit\ndef f(x):\n    return x * SCALE\n",
        "import jax\ntry:\n    import numpy as np\nexcept ImportError:\n    np = None\n@jax.jit\ndef f(x):\n    return x\n",
        "import jax\ng = 0.\n@jax.jit\ndef f(x, g):\n    return x + g\ng = 1.\n",
        "g = 0.\ndef f(x):\n    return x + g\ng = 10.\n",
        # a host callback runs in Python on every call, with concrete values
        "import jax\ncalls = 0\ndef log(x):\n    global calls\n    calls += 1\n    return x + calls\n"
        "@jax.jit\ndef f(x):\n    return jax.pure_callback(log, x, x)\n",
    )

    def visit_Name(self, node: cst.Name) -> None:
        ctx = self.ctx
        if not ctx.in_traced:
            return
        owner = ctx.scope.lookup(node.value)
        if owner is None or owner.kind != "module":
            return
        if node.value in owner.defs or node.value in owner.classes or node.value in owner.imports:
            return
        if ctx.facts.is_rebound_global(node.value) and self._is_load(node):
            self.report(node, self.message.format(name=node.value))

    def _is_load(self, node: cst.Name) -> bool:
        return node in self.ctx.facts.loads


@register
class TracedWritesOuterState(Rule):
    code = "JG103"
    name = "traced-writes-outer-state"
    message = "traced function writes outer state ('{target}'): it runs only at trace time and leaks tracers"
    what = "Flags `global`/`nonlocal` rebinding, and attribute stores on objects the function did not create, inside a traced function."
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
        "import jax\ndef outer():\n    total = 0\n    @jax.jit\n    def f(x):\n        nonlocal total\n        total += x\n        return x\n    return f\n",
    )
    valid = (
        "import jax\n@jax.jit\ndef f(x):\n    class Box:\n        pass\n    b = Box()\n    b.value = x\n    return b.value\n",
        "import jax\ncounter = 0\ndef log():\n    global counter\n    counter += 1\n",
        "import jax\n@jax.jit\ndef f(x):\n    global CONSTANT\n    return x * CONSTANT\n",
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_target(target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check_target(node.target)

    def _check_target(self, target: cst.BaseExpression) -> None:
        ctx = self.ctx
        if not ctx.in_traced:
            return
        scope = ctx.scope
        for name_node in target_name_nodes(target):
            name = name_node.value
            if name in scope.declared_global or name in scope.declared_nonlocal:
                self.report(name_node, self.message.format(target=name))
        if isinstance(target, cst.Attribute):
            root = _root_name(target)
            if root is not None and not _created_locally(ctx, root):
                self.report(target, self.message.format(target=ctx.code(target)))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                if isinstance(element.value, cst.Attribute):
                    self._check_target(element.value)


def _root_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _created_locally(ctx, name: str) -> bool:
    """A name bound by an assignment in the current function (not a parameter, not outer)."""
    scope = ctx.scope
    owner = scope.lookup(name)
    return owner is scope and owner.function is not None and name not in owner.params and name in owner.values


# Methods that only a list/dict/set/deque has: a call mutates the receiver.
MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "setdefault", "popitem", "appendleft", "extendleft", "popleft"}
)
# Also container mutators, but other objects have methods of these names too
# (`optimizer.update(...)` is pure): flagged only on a known container or a traced pytree.
AMBIGUOUS_MUTATING_METHODS = frozenset({"update", "pop", "remove", "clear", "add", "discard"})
CONTAINER_KINDS = (kinds.LIST, kinds.DICT, kinds.SET)


@register
class TracedMutatesOuterContainer(Rule):
    code = "JG104"
    name = "traced-mutates-outer-container"
    message = "traced function mutates '{name}', a container it did not create: the change happens once, at trace time"
    what = "Flags `.append/.extend/.update/.pop/...` calls, item assignment and `del` on a container that a traced function received or reads from outside."
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
    )
    valid = (
        "import jax\n@jax.jit\ndef f(x):\n    out = []\n    for i in range(3):\n        out.append(x * i)\n    return out\n",
        "import jax\n@jax.jit\ndef pure_uses_internal_state(x):\n    state = dict(even=0, odd=0)\n"
        "    for i in range(10):\n        state['even' if i % 2 == 0 else 'odd'] += x\n    return state['even'] + state['odd']\n",
        "history = []\ndef f(x):\n    history.append(x)\n    return x\n",
        "import jax\n@jax.jit\ndef f(site):\n    site = site.copy()\n    site['value'] = 1.0\n    return site\n",
        # optax style: `update` of an optimizer is a pure method
        "import jax, optax\nopt = optax.sgd(0.1)\n@jax.jit\ndef step(params, state, grads):\n"
        "    updates, state = opt.update(grads, state, params)\n    return optax.apply_updates(params, updates), state\n",
        # Pallas kernels write their output Refs
        "import jax\nfrom jax.experimental import pallas as pl\ndef kernel(x, out, acc_scratch):\n"
        "    acc_scratch[...] = x[...]\n    out[...] = acc_scratch[...]\n"
        "@jax.jit\ndef f(x):\n    return pl.pallas_call(kernel, out_shape=x)(x)\n",
        "import jax\n@jax.jit\ndef f(x):\n    def body(x_ref, o_ref):\n        o_ref[0] = x_ref[0]\n    return body\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not self.ctx.in_traced or not isinstance(func, cst.Attribute):
            return
        if not isinstance(func.value, cst.Name):
            return
        method = func.attr.value
        if method in MUTATING_METHODS or (method in AMBIGUOUS_MUTATING_METHODS and self._is_container(func.value)):
            self._check(func.value, node)

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
                self._check_subscript(target.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Subscript):
            self._check_subscript(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        if isinstance(node.target, cst.Subscript):
            self._check_subscript(node.target)

    def _check_subscript(self, target: cst.Subscript) -> None:
        if not self.ctx.in_traced or not isinstance(target.value, cst.Name):
            return
        # An array parameter indexed in place is JG301's; a string key means a dict.
        if self.ctx.kind_of(target.value) == kinds.JAX and not _string_index(target):
            return
        self._check(target.value, target)

    def _check(self, name: cst.Name, node: cst.CSTNode) -> None:
        ctx = self.ctx
        if ctx.kind_of(name) == kinds.REF:
            return  # a Ref is the one mutable JAX container
        owner = ctx.scope.lookup(name.value)
        if owner is None:
            return
        function = ctx.function
        if owner is ctx.scope and (name.value not in owner.params or name.value in owner.values):
            return  # created here, or a parameter rebound here (`site = site.copy()`)
        if owner.function is not None and owner.function.traced and owner.function is not function:
            # a container made by an enclosing traced function: still inside the same trace
            if name.value not in owner.params:
                return
        self.report(node, self.message.format(name=name.value))


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


@register
class TraceTimeConstant(Rule):
    code = "JG105"
    name = "trace-time-constant"
    message = "{what} in a traced function is evaluated once, at trace time, and frozen into the compiled program"
    fix_kind = "suggest"
    what = "Flags `np.random.*`, `random.*`, `time.time()`, `datetime.now()`, `os.environ`, `open()` and similar inside a traced function."
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
        "import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return x + np.random.rand()\n",
        "import jax, time\n@jax.jit\ndef f(x):\n    return x * time.time()\n",
        "import jax, os\n@jax.jit\ndef f(x):\n    return x * float(os.environ['SCALE'])\n",
        "import jax, random\n@jax.jit\ndef f(x):\n    return x * random.random()\n",
    )
    valid = (
        "import jax\n@jax.jit\ndef f(key, x):\n    return x + jax.random.normal(key, x.shape)\n",
        "import time\nimport numpy as np\nstart = time.time()\nnoise = np.random.rand(3)\n",
        "import jax\nfrom jax import random\n@jax.jit\ndef f(key):\n    return random.uniform(key)\n",
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
        if name in TRACE_TIME_CONSTANTS:
            self.report(node, self.message.format(what=TRACE_TIME_CONSTANTS[name]))
        elif name.startswith(TRACE_TIME_PREFIXES):
            self.report(node, self.message.format(what=name.replace("numpy.", "np.") + "()"))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if self.ctx.in_traced and self.ctx.qualname(node.value) == "os.environ":
            self.report(node, self.message.format(what="os.environ"))
