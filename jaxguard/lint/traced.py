"""Which values are traced at a point: the "traced-ness" dataflow of JG106-JG108 and JG701.

Inside a function whose parameters JAX passes as tracers (a jit/vmap/pmap/lax body root,
see `FunctionInfo.params_traced`), every non-static parameter without a default is traced.
Values computed from traced values are traced. `x.shape`, `x.ndim`, `x.dtype`, `len(x)`,
`isinstance(...)`, identity and membership tests, static parameters, module constants and
loop counters over `range(<concrete>)` are concrete. Helpers reached by calls (whose
arguments may be concrete) start with no traced parameters, but see the traced values of
the functions they close over.

A value is not a bool but the set of parameter names it derives from ("origins"), so that
messages can name the real parameter (`static_argnames=("n",)`). The empty set is concrete.

The analysis runs lazily, once per function, in source order: branches are merged (a name
is traced after an `if` when it is traced in some branch) and loop bodies are walked twice
so that values carried around a loop are seen. Each loaded `Name` node records its origins;
a query on any expression recombines those records. Shared per module through
`facts.derived["traced"]`; use `TracedFlow.of(ctx)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxguard.lint.facts import TRACING_TRANSFORMS, FunctionInfo, ModuleFacts, Scope, keyword, positional

if TYPE_CHECKING:
    from jaxguard.lint.engine import RuleContext

Origins = frozenset
# Transformations that trace only the arrays of their arguments and keep other leaves (module
# attributes, Python flags) static: their parameters are not assumed traced.
_FILTERING = ("equinox.", "flax.nnx.")
NONE: frozenset[str] = frozenset()

# Attributes of an array that are concrete Python values even on a tracer.
CONCRETE_ATTRS = frozenset(
    {"shape", "ndim", "dtype", "size", "aval", "sharding", "weak_type", "itemsize", "nbytes",
     "named_shape", "__class__", "__name__", "device", "devices", "is_fully_addressable"}
)
# Calls whose result is concrete whatever their arguments (or that fail on a tracer: the
# failure is reported by JG106/JG107, and their result must not cascade).
CONCRETE_CALLS = frozenset(
    {
        "builtins.len", "builtins.isinstance", "builtins.issubclass", "builtins.type",
        "builtins.callable", "builtins.hasattr", "builtins.id", "builtins.repr", "builtins.str",
        "builtins.int", "builtins.float", "builtins.bool", "builtins.complex", "builtins.hash",
        "builtins.format", "builtins.print",
        "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.dtype",
        "jax.numpy.result_type", "jax.numpy.issubdtype", "jax.numpy.iinfo", "jax.numpy.finfo",
        "jax.numpy.promote_types", "jax.numpy.isdtype", "jax.numpy.can_cast", "jax.numpy.isscalar",
        "jax.numpy.iscomplexobj", "jax.numpy.isrealobj",
        "numpy.shape", "numpy.ndim", "numpy.size", "numpy.dtype", "numpy.result_type",
        "numpy.issubdtype", "numpy.iinfo", "numpy.finfo", "numpy.promote_types", "numpy.isscalar",
        "numpy.can_cast", "numpy.iscomplexobj", "numpy.isrealobj",
        "jax.tree_util.tree_structure", "jax.tree.structure", "jax.tree_util.treedef_is_leaf",
        "jax.core.is_concrete", "jax.dtypes.result_type", "jax.dtypes.issubdtype",
        "jax.dtypes.canonicalize_dtype", "jax.typeof", "jax.numpy.asarray.__name__",
        "dataclasses.fields", "dataclasses.is_dataclass",
    }
)
# Methods whose result is a Python value (they concretize: reported by JG107, no cascade).
CONCRETE_METHODS = frozenset(
    {
        "item", "tolist", "__float__", "__int__", "__index__", "__bool__", "keys",
        # string methods: an array has none of them, so the receiver is a str (a dict key...)
        "startswith", "endswith", "lower", "upper", "strip", "lstrip", "rstrip", "split",
        "rsplit", "join", "format", "isdigit", "isalpha", "isidentifier", "casefold", "partition",
    }
)
_PREDICATE_PREFIXES = ("is_", "_is_", "has_", "_has_", "check_", "_check_")


def _asks_about_tracing(tail: str) -> bool:
    """`not_jax_tracer(x)`, `is_concrete(x)`: a Python bool that guards concrete-only code."""
    lowered = tail.lower()
    return "tracer" in lowered or "concrete" in lowered


def call_tail(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _star_params(node: cst.FunctionDef | cst.Lambda) -> set[str]:
    names = set()
    params = node.params
    if isinstance(params.star_arg, cst.Param):
        names.add(params.star_arg.name.value)
    if params.star_kwarg is not None:
        names.add(params.star_kwarg.name.value)
    return names


def _defaulted_params(node: cst.FunctionDef | cst.Lambda) -> set[str]:
    params = node.params
    return {
        p.name.value
        for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        if p.default is not None
    }


class TracedFlow:
    def __init__(self, facts: ModuleFacts, differentiated: dict[cst.CSTNode, set[str]] | None = None) -> None:
        self.facts = facts
        # with `differentiated` (function -> its differentiated parameters), the JVP tracers of
        # grad/vjp are traced too (JG701: a fori_loop bound computed from them)
        self.differentiated = differentiated or {}
        self.records: dict[cst.Name, frozenset[str]] = {}
        self.closure_env: dict[cst.CSTNode, dict[str, frozenset[str]]] = {}
        self.final_env: dict[cst.CSTNode, dict[str, frozenset[str]]] = {}
        self.done: set[cst.CSTNode] = set()
        self.bound: dict[cst.CSTNode, set[str]] = {}
        self.uncertain = self._uncertain_functions()
        self._partial_bindings()
        self.static = self._static_per_root()
        self._current: FunctionInfo | None = None

    @classmethod
    def of(cls, ctx: RuleContext) -> TracedFlow:
        flow = ctx.facts.derived.get("traced")
        if flow is None:
            flow = ctx.facts.derived["traced"] = cls(ctx.facts)
        return flow  # type: ignore[return-value]

    # which roots have unknown static parameters -------------------------------------
    def _uncertain_functions(self) -> set[cst.CSTNode]:
        """Functions traced through a transform whose static arguments cannot be read
        (`static_argnums=STATIC`, `**options`), or that treat non-arrays as static
        (equinox's filter_jit/filter_vmap): their parameters are not assumed traced."""
        facts = self.facts
        found: set[cst.CSTNode] = set()
        for info in facts.functions.values():
            for decorator in info.decorators:
                if self._unreadable(decorator.decorator, info.parent):
                    found.add(info.node)
        for call, scope in facts.transform_calls:
            if self._unreadable(call.func, scope) or self._unreadable(call, scope):
                args = positional(call)
                if args:
                    target = facts.function_for(args[0], scope)
                    if target is not None:
                        found.add(target.node)
        return found

    def _partial_bindings(self) -> None:
        """`jit(partial(f, n=3))`, `lax.cond(p, partial(f, True), ...)`: arguments bound by the
        partial are concrete Python values, not tracers."""
        facts = self.facts
        for call, scope in facts.transform_calls:
            self._vmap_positional_axes(call, scope)
            for arg in call.args:
                value = arg.value
                candidates = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
                for candidate in candidates:
                    if isinstance(candidate, cst.Call) and facts.qualname(candidate.func, scope) == "functools.partial":
                        self._bind_partial(candidate, scope)

    def _static_per_root(self) -> dict[cst.CSTNode, set[str]]:
        """A parameter is concrete only if every transformation of the function keeps it static:
        `jit(f)` next to `jit(f, static_argnums=0)` traces it (facts keep the union)."""
        facts = self.facts
        specs: dict[cst.CSTNode, list[set[str]]] = {}
        for info in facts.functions.values():
            for decorator in info.decorators:
                found = facts.transform_of(decorator.decorator, info.parent)
                if found is not None and found[0] in TRACING_TRANSFORMS:
                    specs.setdefault(info.node, []).append(found[1].static_params(info.params))
        for call, scope in facts.transform_calls:
            found = facts.transform_call(call, scope)
            if found is None or found[0] not in TRACING_TRANSFORMS:
                continue
            target = facts.function_for(positional(call)[0], scope)
            if target is not None:
                spec = found[1]
                specs.setdefault(target.node, []).append(spec.static_params(target.params))
        return {node: set.intersection(*sets) for node, sets in specs.items()}

    def _vmap_positional_axes(self, call: cst.Call, scope: Scope) -> None:
        """`jax.vmap(f, (0, None))`: in_axes given positionally; None positions are not batched."""
        name = self.facts.qualname(call.func, scope) or ""
        args = positional(call)
        if not name.endswith("vmap") or len(args) < 2 or keyword(call, "in_axes") is not None:
            return
        target = self.facts.function_for(args[0], scope)
        if target is None:
            return
        axes = args[1]
        if isinstance(axes, (cst.Tuple, cst.List)):
            bound = self.bound.setdefault(target.node, set())
            for index, element in enumerate(axes.elements):
                value = element.value
                if isinstance(value, cst.Name) and value.value == "None" and index < len(target.params):
                    bound.add(target.params[index])
        elif not isinstance(axes, cst.Integer):
            self.uncertain.add(target.node)

    def _bind_partial(self, partial: cst.Call, scope: Scope) -> None:
        args = positional(partial)
        if not args:
            return
        target = self.facts.function_for(args[0], scope)
        if target is None:
            return
        if any(a.star for a in partial.args):
            self.uncertain.add(target.node)
            return
        bound = self.bound.setdefault(target.node, set())
        skip = 1 if target.class_name and isinstance(args[0], cst.Attribute) else 0
        bound.update(target.params[skip : skip + len(args) - 1])
        bound.update(a.keyword.value for a in partial.args if a.keyword is not None)

    def _unreadable(self, node: cst.BaseExpression, scope: Scope) -> bool:
        facts = self.facts
        name = facts.qualname(node, scope)
        if name is not None and name.startswith(_FILTERING):
            return True
        if not isinstance(node, cst.Call):
            return False
        inner = facts.qualname(node.func, scope)
        if inner is not None and inner.startswith(_FILTERING):
            return True
        if inner == "functools.partial":
            args = positional(node)
            if not args or not self._is_transform(args[0], scope):
                return False
        elif inner not in TRACING_TRANSFORMS:
            return False
        for arg in node.args:
            if arg.star == "**":
                return True
            if arg.keyword is not None and arg.keyword.value.startswith("static_"):
                if not _literal_spec(arg.value):
                    return True
            if arg.keyword is not None and arg.keyword.value == "in_axes" and inner and inner.endswith("vmap"):
                if not isinstance(arg.value, (cst.Tuple, cst.List, cst.Integer)):
                    return True
        return False

    def _is_transform(self, node: cst.BaseExpression, scope: Scope) -> bool:
        name = self.facts.qualname(node, scope)
        return name in TRACING_TRANSFORMS or (name or "").startswith(_FILTERING)

    # analysis ---------------------------------------------------------------------------
    def origins(self, node: cst.BaseExpression | None, ctx: RuleContext) -> frozenset[str]:
        """The traced parameters `node` (in the current function of `ctx`) derives from."""
        if node is None:
            return NONE
        info = ctx.function
        if info is None:
            return NONE
        self.analyse(info)
        return self._eval(node, None, info)

    def origins_in(self, node: cst.BaseExpression, info: FunctionInfo) -> frozenset[str]:
        """Origins of `node`, an expression inside `info` (for rules working from `finish`)."""
        self.analyse(info)
        return self._eval(node, None, info)

    def traced_params(self, info: FunctionInfo) -> set[str]:
        if info.node in self.uncertain:
            return set()
        params = info.traced_params
        if info.node in self.static:
            skip = {"self", "cls"} if info.class_name else set()
            params = {p for p in info.params if p not in self.static[info.node] and p not in skip}
        return (
            params
            - _star_params(info.node)
            - _defaulted_params(info.node)
            - self.bound.get(info.node, set())
        )

    def analyse(self, info: FunctionInfo) -> None:
        if info.node in self.done:
            return
        self.done.add(info.node)
        outer = self.facts.enclosing_function(info.parent)
        if outer is not None:
            self.analyse(outer)
        env: dict[str, frozenset[str]] = {p: NONE for p in info.params}
        for param in self.traced_params(info) | self.differentiated.get(info.node, set()):
            env[param] = frozenset({param})
        saved = self._current
        self._current = info
        try:
            node = info.node
            if isinstance(node, cst.Lambda):
                self._eval(node.body, env, info)
            else:
                self._block(node.body, env, info)
        finally:
            self._current = saved
        self.final_env[info.node] = env

    # statements -----------------------------------------------------------------------
    def _block(self, body, env, info) -> None:
        if isinstance(body, cst.IndentedBlock):
            statements = body.body
        elif isinstance(body, cst.SimpleStatementSuite):
            statements = body.body
        elif isinstance(body, (list, tuple)):
            statements = body
        else:
            statements = [body]
        for statement in statements:
            self._statement(statement, env, info)

    def _branches(self, blocks, env, info) -> None:
        """Run each block on a copy of `env`; merge the copies (and `env`) into `env`."""
        results = []
        for block in blocks:
            copy = dict(env)
            block(copy)
            results.append(copy)
        for result in results:
            _merge_into(env, result)

    def _statement(self, node, env, info) -> None:
        ev = lambda expr: self._eval(expr, env, info)  # noqa: E731
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self._small(small, env, info)
        elif isinstance(node, (cst.BaseSmallStatement,)):
            self._small(node, env, info)
        elif isinstance(node, cst.If):
            ev(node.test)
            blocks = [lambda e: self._block(node.body, e, info)]
            orelse = node.orelse
            if isinstance(orelse, cst.If):
                blocks.append(lambda e: self._statement(orelse, e, info))
            elif isinstance(orelse, cst.Else):
                blocks.append(lambda e: self._block(orelse.body, e, info))
            else:
                blocks.append(lambda e: None)
            self._branches(blocks, env, info)
        elif isinstance(node, cst.For):
            source = ev(node.iter)
            for _ in range(2):
                loop = dict(env)
                self._bind_for(node.target, node.iter, source, loop, info)
                self._block(node.body, loop, info)
                _merge_into(env, loop)
            if node.orelse is not None:
                self._block(node.orelse.body, env, info)
        elif isinstance(node, cst.While):
            for _ in range(2):
                loop = dict(env)
                self._eval(node.test, loop, info)
                self._block(node.body, loop, info)
                _merge_into(env, loop)
            if node.orelse is not None:
                self._block(node.orelse.body, env, info)
        elif isinstance(node, cst.Try) or type(node).__name__ == "TryStar":
            blocks = [lambda e: self._block(node.body, e, info)]
            for handler in node.handlers:
                blocks.append(lambda e, h=handler: self._block(h.body, e, info))
            self._branches(blocks, env, info)
            if node.orelse is not None:
                self._block(node.orelse.body, env, info)
            if node.finalbody is not None:
                self._block(node.finalbody.body, env, info)
        elif isinstance(node, cst.With):
            for item in node.items:
                ev(item.item)
                if item.asname is not None:
                    self._bind(item.asname.name, NONE, env)
            self._block(node.body, env, info)
        elif isinstance(node, cst.FunctionDef):
            for decorator in node.decorators:
                ev(decorator.decorator)
            self.closure_env[node] = dict(env)
            env[node.name.value] = NONE
        elif isinstance(node, cst.ClassDef):
            self._class_closures(node, env)
            env[node.name.value] = NONE
        elif isinstance(node, cst.Match):
            ev(node.subject)
            blocks = [lambda e, c=case: self._block(c.body, e, info) for case in node.cases]
            blocks.append(lambda e: None)
            self._branches(blocks, env, info)

    def _class_closures(self, node: cst.ClassDef, env) -> None:
        for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
            if isinstance(statement, cst.FunctionDef):
                self.closure_env[statement] = dict(env)
            elif isinstance(statement, cst.ClassDef):
                self._class_closures(statement, env)

    def _small(self, node, env, info) -> None:
        ev = lambda expr: self._eval(expr, env, info)  # noqa: E731
        if isinstance(node, cst.Assign):
            value = ev(node.value)
            for target in node.targets:
                self._bind_value(target.target, node.value, value, env, info)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self._bind_value(node.target, node.value, ev(node.value), env, info)
        elif isinstance(node, cst.AugAssign):
            value = ev(node.value)
            if isinstance(node.target, cst.Name):
                before = self._eval(node.target, env, info)
                env[node.target.value] = before | value
            else:
                self._target_loads(node.target, env, info)
        elif isinstance(node, cst.Expr):
            ev(node.value)
        elif isinstance(node, cst.Return):
            if node.value is not None:
                ev(node.value)
        elif isinstance(node, cst.Assert):
            ev(node.test)
            if node.msg is not None:
                ev(node.msg)
        elif isinstance(node, cst.Raise):
            if node.exc is not None:
                ev(node.exc)
        elif isinstance(node, cst.Del):
            pass
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            if isinstance(node, cst.Import) or not isinstance(node.names, cst.ImportStar):
                for alias in node.names:  # type: ignore[union-attr]
                    local = alias.asname.name if alias.asname else alias.name
                    if isinstance(local, cst.Name):
                        env[local.value] = NONE

    def _bind_for(self, target, iterable, source, env, info) -> None:
        if isinstance(iterable, cst.Call):
            name = self.facts.qualname(iterable.func, info.scope) or ""
            tail = call_tail(iterable.func)
            if tail in ("zip", "safe_zip", "enumerate") and not name.startswith(("jax.numpy.", "numpy.")):
                name = f"builtins.{tail.replace('safe_', '')}"
            args = positional(iterable)
            if name == "builtins.enumerate" and args and isinstance(target, (cst.Tuple, cst.List)):
                elements = target.elements
                if len(elements) == 2:
                    self._bind(elements[0].value, NONE, env)
                    self._bind(elements[1].value, self._eval(args[0], None, info, env), env)
                    return
            func = iterable.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "items"
                and not iterable.args
                and isinstance(target, (cst.Tuple, cst.List))
                and len(target.elements) == 2
            ):
                # `for name, leaf in params.items()`: the keys are Python values
                self._bind(target.elements[0].value, NONE, env)
                self._bind(target.elements[1].value, source, env)
                return
            if name == "builtins.zip" and isinstance(target, (cst.Tuple, cst.List)):
                if len(target.elements) == len(args):
                    for element, arg in zip(target.elements, args):
                        self._bind(element.value, self._eval(arg, None, info, env), env)
                    return
        self._bind(target, source, env)

    def _bind_value(self, target, value_node, value, env, info) -> None:
        if (
            isinstance(target, (cst.Tuple, cst.List))
            and isinstance(value_node, (cst.Tuple, cst.List))
            and len(target.elements) == len(value_node.elements)
            and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value_node.elements))
        ):
            for element, item in zip(target.elements, value_node.elements):
                self._bind(element.value, self._eval(item.value, None, info, env), env)
            return
        if isinstance(target, (cst.Attribute, cst.Subscript)):
            self._target_loads(target, env, info)
            return
        self._bind(target, value, env)

    def _target_loads(self, target, env, info) -> None:
        if isinstance(target, cst.Attribute):
            self._eval(target.value, env, info)
        elif isinstance(target, cst.Subscript):
            self._eval(target, env, info)

    def _bind(self, target, value: frozenset[str], env) -> None:
        if isinstance(target, cst.Name):
            env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, value, env)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, value, env)

    # expressions --------------------------------------------------------------------------
    def _name(self, node: cst.Name, env, info, lookup_env=None) -> frozenset[str]:
        if env is None and node in self.records:
            return self.records[node]
        table = env if env is not None else lookup_env
        if table is not None and node.value in table:
            value = table[node.value]
        else:
            value = self._free(node.value, info)
        if env is not None:
            self.records[node] = self.records.get(node, NONE) | value
        return value

    def _free(self, name: str, info: FunctionInfo) -> frozenset[str]:
        """A name the function does not bind (yet): a closure over an enclosing function."""
        owner = info.scope.lookup(name)
        if owner is None or owner.function is None or owner is info.scope:
            return NONE
        current = info
        while True:
            parent_function = self.facts.enclosing_function(current.parent)
            if parent_function is None:
                return NONE
            if parent_function.scope is owner:
                break
            current = parent_function
        self.analyse(owner.function)
        env = self.closure_env.get(current.node)
        if env is not None and name in env:
            return env[name]
        return self.final_env.get(owner.function.node, {}).get(name, NONE)

    def _eval(self, node, env, info, lookup_env=None) -> frozenset[str]:
        """Origins of `node`. With `env`, records every loaded name (the analysis); with
        `env=None`, reads the records (a query), or names from `lookup_env`."""

        def ev(child):
            return self._eval(child, env, info, lookup_env)

        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return NONE
            return self._name(node, env, info, lookup_env)
        if isinstance(node, cst.Attribute):
            base = ev(node.value)
            return NONE if node.attr.value in CONCRETE_ATTRS else base
        if isinstance(node, cst.Subscript):
            base = ev(node.value)
            for element in node.slice:
                base = base | self._slice(element.slice, ev)
            return base
        if isinstance(node, cst.Call):
            return self._call(node, ev, info)
        if isinstance(node, cst.BinaryOperation):
            return ev(node.left) | ev(node.right)
        if isinstance(node, cst.UnaryOperation):
            return ev(node.expression)
        if isinstance(node, cst.BooleanOperation):
            return ev(node.left) | ev(node.right)
        if isinstance(node, cst.Comparison):
            result = ev(node.left)
            for target in node.comparisons:
                result = result | ev(target.comparator)
            if all(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in node.comparisons):
                return NONE
            if any(isinstance(part, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
                   for part in (node.left, *(t.comparator for t in node.comparisons))):
                return NONE  # `mode == "train"`: a string is never a tracer
            return result
        if isinstance(node, cst.IfExp):
            ev(node.test)
            return ev(node.body) | ev(node.orelse)
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            result = NONE
            for element in node.elements:
                result = result | ev(element.value)
            return result
        if isinstance(node, cst.Dict):
            result = NONE
            for element in node.elements:
                if isinstance(element, cst.DictElement):
                    result = result | ev(element.key) | ev(element.value)
                else:
                    result = result | ev(element.value)
            return result
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._comprehension(node, env, info, lookup_env)
        if isinstance(node, cst.Lambda):
            if env is not None:
                self.closure_env[node] = dict(env)
            return NONE
        if isinstance(node, cst.NamedExpr):
            value = ev(node.value)
            if env is not None and isinstance(node.target, cst.Name):
                env[node.target.value] = value
            return value
        if isinstance(node, (cst.StarredElement, cst.Await)):
            return ev(node.value) if isinstance(node, cst.StarredElement) else ev(node.expression)
        if isinstance(node, cst.FormattedString):
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    ev(part.expression)
            return NONE
        if isinstance(node, (cst.Yield,)):
            if isinstance(node.value, cst.BaseExpression):
                ev(node.value)
            return NONE
        return NONE

    def _slice(self, item, ev) -> frozenset[str]:
        if isinstance(item, cst.Index):
            return ev(item.value)
        if isinstance(item, cst.Slice):
            result = NONE
            for part in (item.lower, item.upper, item.step):
                if part is not None:
                    result = result | ev(part)
            return result
        return NONE

    def _comprehension(self, node, env, info, lookup_env) -> frozenset[str]:
        local = dict(env) if env is not None else None
        look = dict(lookup_env) if lookup_env is not None else ({} if env is None else None)
        for_in = node.for_in
        result = NONE
        while for_in is not None:
            source = self._eval(for_in.iter, local, info, look)
            if local is not None:
                self._bind_for(for_in.target, for_in.iter, source, local, info)
            else:
                self._bind(for_in.target, source, look)
            for condition in for_in.ifs:
                self._eval(condition.test, local, info, look)
            result = result | source
            for_in = for_in.inner_for_in
        if isinstance(node, cst.DictComp):
            return result | self._eval(node.key, local, info, look) | self._eval(node.value, local, info, look)
        return result | self._eval(node.elt, local, info, look)

    def _call(self, node: cst.Call, ev, info: FunctionInfo) -> frozenset[str]:
        func = node.func
        receiver = NONE
        if isinstance(func, cst.Attribute):
            receiver = ev(func.value)
        else:
            ev(func)
        args = NONE
        for arg in node.args:
            args = args | ev(arg.value)
        name = self.facts.qualname(func, info.scope)
        tail = call_tail(func) or ""
        if name in CONCRETE_CALLS or tail.startswith(_PREDICATE_PREFIXES) or _asks_about_tracing(tail):
            return NONE
        if isinstance(func, cst.Attribute) and tail in CONCRETE_METHODS:
            return NONE
        if tail in ("tree_map", "map") and node.args and (name or "").startswith(("jax.tree", "tree")) or tail == "tree_map":
            # tree_map(is_leafy_predicate, tree): a tree of Python bools
            mapped = call_tail(node.args[0].value) or ""
            if mapped.startswith(_PREDICATE_PREFIXES):
                return NONE
        return receiver | args


def _merge_into(env: dict, other: dict) -> None:
    for name, value in other.items():
        env[name] = env.get(name, NONE) | value


def _literal_spec(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.SimpleString)):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.expression, cst.Integer):
        return True
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_literal_spec(e.value) for e in node.elements)
    return False


def static_hint(origins: frozenset[str], info: FunctionInfo | None) -> str:
    """`static_argnames=("n",)` when the traced function is compiled by a jit that has it."""
    if not origins or info is None:
        return ""
    by = info.traced_by
    if by not in ("jax.jit", "jax.experimental.pjit.pjit", "flax.nnx.jit"):
        return ""
    names = ", ".join(f'"{n}"' for n in sorted(origins)[:3])
    comma = "," if len(origins) == 1 else ""
    return f"static_argnames=({names}{comma})"


def describe(origins: frozenset[str]) -> str:
    names = sorted(origins)
    shown = ", ".join(f"'{n}'" for n in names[:3])
    noun = "argument" if len(names) == 1 else "arguments"
    return f"{noun} {shown}"


__all__ = ["TracedFlow", "static_hint", "describe", "call_tail", "keyword"]
