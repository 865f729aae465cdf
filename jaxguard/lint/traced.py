"""Which values are traced at a point: the "traced-ness" dataflow of JG106-JG108 and JG701.

Inside a function whose parameters JAX passes as tracers (a jit/vmap/pmap/lax body root,
see `FunctionInfo.params_traced`), every non-static parameter without a default is traced.
Values computed from traced values are traced. `x.shape`, `x.ndim`, `x.dtype`, `len(x)`,
`isinstance(...)`, identity and membership tests, static parameters, module constants and
loop counters over `range(<concrete>)` are concrete. Helpers reached by calls (whose
arguments may be concrete) start with no traced parameters, but see the traced values of
the functions they close over.

This is the one place that judges whether a value is static, for every rule that asks:
dimension attributes and methods (`data_shape`, `tangent_dim`, `get_batch_axes()`), the
elements (not the iterable) of a comprehension, comparisons with strings and pytree key
paths, `in_axes` entries (None, run-time values, bound methods), a module-local helper's
result (through a summary of which parameters its return value derives from), names under
`if not_jax_tracer(x):`, and `if p is None:` branches only eager calls take.

A value is not a bool but the set of parameter names it derives from ("origins"), so that
messages can name the real parameter (`static_argnames=("n",)`). The empty set is concrete.

The analysis runs lazily, once per function, in source order: branches are merged (a name
is traced after an `if` when it is traced in some branch) and loop bodies are walked twice
so that values carried around a loop are seen. Each loaded `Name` node records its origins;
a query on any expression recombines those records. Shared per module through
`facts.derived["traced"]`; use `TracedFlow.of(ctx)`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from jaxguard.lint.facts import (
    TRACING_TRANSFORMS,
    defaulted_params,
    call_tail,
    FunctionInfo,
    ModuleFacts,
    Scope,
    all_params,
    dotted_name,
    in_axes_entries,
    keyword,
    positional,
)
from jaxguard.lint.jaxapi import ARRAY_METHODS, METADATA_CALLS
from jaxguard.lint.walk import Visitor, walk

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
CONCRETE_CALLS = METADATA_CALLS | frozenset(
    {
        "builtins.len", "builtins.isinstance", "builtins.issubclass", "builtins.type",
        "builtins.callable", "builtins.hasattr", "builtins.id", "builtins.repr", "builtins.str",
        "builtins.int", "builtins.float", "builtins.bool", "builtins.complex", "builtins.hash",
        "builtins.format", "builtins.print",
        "jax.tree_util.treedef_is_leaf", "jax.tree_util.keystr",
        "jax.typeof", "jax.numpy.asarray.__name__",
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
_ARITHMETIC_BUILTINS = frozenset(
    {"builtins.abs", "builtins.max", "builtins.min", "builtins.sum", "builtins.round",
     "builtins.pow", "builtins.divmod", "builtins.tuple", "builtins.list", "builtins.zip",
     "builtins.reversed", "builtins.sorted", "builtins.enumerate", "builtins.any", "builtins.all",
     "builtins.map", "builtins.filter", "operator.add",
     "operator.mul", "operator.sub", "operator.truediv", "operator.getitem"}
)
_PREDICATE_PREFIXES = ("is_", "_is_", "has_", "_has_", "check_", "_check_")
# Attribute names that hold shapes, dtypes and sizes of dimensions (`v.data_shape`,
# `dist.batch_shape`, `self.param_dtype`, `group.tangent_dim`): Python values in every
# library that uses them, never arrays.
_STATIC_ATTR_SUFFIXES = ("_shape", "_ndim", "_dtype", "_dim", "_dims")
# Methods that report shapes or axes (`u0.ndim()`, `transform.get_batch_axes()`,
# `dist.batch_shape()`), not `reshape`, `swapaxes` or `event_shape_tensor`.
_STATIC_METHOD = re.compile(r"(get_)?(\w+_)?(shape|ndim|axes)")
# jax.tree_util key-path entries: comparing with one is a Python comparison of pytree paths.
_KEY_PATH_ENTRIES = frozenset(
    {"jax.tree_util.GetAttrKey", "jax.tree_util.DictKey", "jax.tree_util.SequenceKey",
     "jax.tree_util.FlattenedIndexKey"}
)
# Annotations of containers: their truth value is their length, part of the pytree structure.
_CONTAINER_TYPES = frozenset(
    {"tuple", "Tuple", "list", "List", "dict", "Dict", "set", "Set", "frozenset", "FrozenSet",
     "Sequence", "MutableSequence", "Mapping", "MutableMapping", "OrderedDict", "NamedTuple"}
)


def static_attribute(name: str) -> bool:
    """An attribute that is a Python value on any object JAX traces (shape, dtype, ...)."""
    return name in CONCRETE_ATTRS or name.endswith(_STATIC_ATTR_SUFFIXES)


def _asks_about_tracing(tail: str) -> bool:
    """`not_jax_tracer(x)`, `is_concrete(x)`: a Python bool that guards concrete-only code."""
    lowered = tail.lower()
    return "tracer" in lowered or "concrete" in lowered


def _star_params(node: cst.FunctionDef | cst.Lambda) -> set[str]:
    names = set()
    params = node.params
    if isinstance(params.star_arg, cst.Param):
        names.add(params.star_arg.name.value)
    if params.star_kwarg is not None:
        names.add(params.star_kwarg.name.value)
    return names


class TracedFlow:
    def __init__(
        self,
        facts: ModuleFacts,
        differentiated: dict[cst.CSTNode, set[str]] | None = None,
        summaries: bool = False,
        proven: bool = True,
    ) -> None:
        self.facts = facts
        # `proven`: a call's result is traced only when the call is an array operation (see
        # `_array_operation`); the result of a call the linter cannot see is unknown, and
        # unknown is not traced. Without it, every call passes its arguments' origins on
        # (for questions whose silence needs proof of the opposite: "is this static?").
        self.proven = proven
        # field names the project keeps static in every class that declares them
        self._project_static = frozenset(facts.project.static_attributes) if facts.project is not None else frozenset()
        # with `differentiated` (function -> its differentiated parameters), the JVP tracers of
        # grad/vjp are traced too (JG701: a fori_loop bound computed from them)
        self.differentiated = differentiated or {}
        # with `summaries`, every parameter of every function is its own origin: what a
        # function returns is then read as "derived from these parameters" (see `returns_of`)
        self.summarising = summaries
        self.records: dict[cst.Name, frozenset[str]] = {}
        self.closure_env: dict[cst.CSTNode, dict[str, frozenset[str]]] = {}
        self.final_env: dict[cst.CSTNode, dict[str, frozenset[str]]] = {}
        self.done: set[cst.CSTNode] = set()
        self.active: set[cst.CSTNode] = set()
        self.returns: dict[cst.CSTNode, frozenset[str]] = {}
        # per element, when every `return` gives a tuple of one length (`return var, n`);
        # None when some return gives anything else
        self.tuple_returns: dict[cst.CSTNode, list[frozenset[str]] | None] = {}
        self.generators: set[cst.CSTNode] = set()
        self.bound: dict[cst.CSTNode, set[str]] = {}
        self.uncertain: set[cst.CSTNode] = set()
        self.static: dict[cst.CSTNode, set[str]] = {}
        if not summaries:
            self.uncertain = self._uncertain_functions()
            self._partial_bindings()
            self.static = self._static_per_root()
        self._summary_flow: TracedFlow | None = self if summaries else None
        self._eager_used: set[cst.CSTNode] | None = None
        self._eager = 0  # > 0 while analysing a branch that only eager calls take
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
        (`static_argnums=STATIC`, `**options`, `in_axes=axes`), or that treat non-arrays as
        static (equinox's filter_jit/filter_vmap): their parameters are not assumed traced."""
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
        """`jit(partial(f, n=3))`, `lax.cond(p, partial(f, True), ...)`, and a name bound to
        such a partial (`step = partial(step, n=3)` then `lax.cond(p, step, ...)`): arguments
        bound by the partial are concrete Python values, not tracers."""
        facts = self.facts
        for call, scope in facts.transform_calls:
            for arg in call.args:
                value = arg.value
                candidates = [e.value for e in value.elements] if isinstance(value, (cst.List, cst.Tuple)) else [value]
                for candidate in candidates:
                    if isinstance(candidate, cst.Name):
                        owner = scope.lookup(candidate.value)
                        for bound in owner.values.get(candidate.value, []) if owner is not None else []:
                            if self._is_partial(bound, owner):
                                self._bind_partial(bound, owner)
                    elif self._is_partial(candidate, scope):
                        self._bind_partial(candidate, scope)

    def _is_partial(self, node: cst.BaseExpression | None, scope: Scope) -> bool:
        return isinstance(node, cst.Call) and self.facts.qualname(node.func, scope) == "functools.partial"

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
            function = positional(call)[0]
            target = facts.function_for(function, scope)
            if target is not None:
                spec, params = found[1], facts.passed_params(target, function)
                specs.setdefault(target.node, []).append(spec.static_params(params))
                self.bound.setdefault(target.node, set()).update(spec.unknown_params(params))
        return {node: set.intersection(*sets) for node, sets in specs.items()}

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
        bound.update(self.facts.passed_params(target, args[0])[: len(args) - 1])
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
        transform = inner
        if inner == "functools.partial":
            args = positional(node)
            if not args or not self._is_transform(args[0], scope):
                return False
            transform = facts.qualname(args[0], scope)
        elif inner not in TRACING_TRANSFORMS:
            return False
        for arg in node.args:
            if arg.star == "**":
                return True
            if arg.keyword is not None and arg.keyword.value.startswith("static_"):
                if not _literal_spec(arg.value):
                    return True
        if (transform or "").endswith("vmap"):
            in_axes = keyword(node, "in_axes")
            if in_axes is None and transform == inner and len(positional(node)) >= 2:
                in_axes = positional(node)[1]
            if in_axes is not None and in_axes_entries(in_axes) is None:
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

    def traced_by_callers(self, info: FunctionInfo) -> frozenset[str]:
        """The parameters of helper `info` that some traced function of this module passes a
        value proven traced (`report(x * 2)` in a jitted `f`): traced at least there."""
        found = self.facts.derived.setdefault("traced-by-callers", {})
        if info.node not in found:
            found[info.node] = NONE  # a recursive call adds nothing of its own
            params: set[str] = set()
            for caller, call in self._calls_from_traced_code().get(info.node, []):
                each = [self.origins_in(arg.value, caller) for arg in call.args]
                passed = _bind_arguments(info, self.facts.passed_params(info, call.func), NONE, call, each)
                params.update(param for param, origins in (passed or {}).items() if origins)
            found[info.node] = frozenset(params)
        return found[info.node]

    def _calls_from_traced_code(self) -> dict[cst.CSTNode, list]:
        """Module function -> [(traced caller, call)]: the calls traced functions make to it."""
        calls_to = self.facts.derived.get("calls-from-traced-code")
        if calls_to is None:
            calls_to = self.facts.derived["calls-from-traced-code"] = {}
            for caller in self.facts.functions.values():
                if caller.traced:
                    for call in caller.calls:
                        callee = self.facts.function_for(call.func, caller.scope)
                        if callee is not None and callee is not caller:
                            calls_to.setdefault(callee.node, []).append((caller, call))
        return calls_to  # type: ignore[return-value]

    def traced_params(self, info: FunctionInfo) -> set[str]:
        if self.summarising:
            return set(info.params)
        if info.node in self.uncertain:
            return set()
        params = info.traced_params
        if info.node in self.static:
            skip = {"self", "cls"} if info.class_name else set()
            params = {p for p in info.params if p not in self.static[info.node] and p not in skip}
        return (
            params
            - _star_params(info.node)
            - defaulted_params(info.node)
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
        saved, saved_eager = self._current, self._eager
        self._current, self._eager = info, 0
        self.active.add(info.node)
        try:
            node = info.node
            if isinstance(node, cst.Lambda):
                self.returns[node] = self._eval(node.body, env, info)
            else:
                self._block(node.body, env, info)
        finally:
            self._current, self._eager = saved, saved_eager
            self.active.discard(info.node)
        self.final_env[info.node] = env

    def returns_of(self, info: FunctionInfo) -> frozenset[str] | None:
        """(A summarising flow.) The parameters of `info` its return value derives from; None
        when that is not known (a generator, a recursive call, a value from a closure)."""
        if info.node in self.active:
            return None
        self.analyse(info)
        found = self.returns.get(info.node, NONE)
        if info.node in self.generators or not found <= set(info.params):
            return None
        return found

    def tuple_returns_of(self, info: FunctionInfo) -> list[frozenset[str]] | None:
        """(A summarising flow.) Per element of the tuple every `return` of `info` gives, the
        parameters it derives from; None when the returns are not all such tuples."""
        if self.returns_of(info) is None:
            return None
        return self.tuple_returns.get(info.node)

    def _record_tuple_return(self, value: cst.BaseExpression, env, info: FunctionInfo) -> None:
        parts = None
        if isinstance(value, cst.Tuple) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
            parts = [self._eval(e.value, None, info, env) for e in value.elements]
        if info.node not in self.tuple_returns:
            self.tuple_returns[info.node] = parts
            return
        known = self.tuple_returns[info.node]
        if known is None or parts is None or len(known) != len(parts):
            self.tuple_returns[info.node] = None
        else:
            self.tuple_returns[info.node] = [a | b for a, b in zip(known, parts)]

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
            eager = self._eager_branch(node.test, info)
            if eager is not None:
                blocks[eager] = self._eagerly(blocks[eager])
            for index, names in enumerate(self._concrete_in(node.test, info)):
                if names:
                    blocks[index] = _with_concrete(blocks[index], names)
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
                value = ev(node.value)
                if self._current is info:
                    self.returns[info.node] = self.returns.get(info.node, NONE) | value
                    self._record_tuple_return(node.value, env, info)
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
        if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value_node, cst.Call):
            parts = self._call_parts(value_node, env, info)
            if parts is not None and len(parts) == len(target.elements):
                for element, part in zip(target.elements, parts):
                    self._bind(element.value, part, env)
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

    # branches that only eager calls take, branches where a value is concrete -------------
    def _eager_branch(self, test: cst.BaseExpression, info: FunctionInfo) -> int | None:
        """0 (the body) or 1 (the else branch) when it runs only in eager calls: `if p is None:`
        on a parameter that defaults to None, in a function the module also calls directly
        (`n = int(occupancy)` under `if max_occupancy is None:` fills in, on the host, what
        traced callers pass)."""
        if self.summarising or not isinstance(info.node, cst.FunctionDef):
            return None
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        operator = test.comparisons[0].operator
        sides = [test.left, test.comparisons[0].comparator]
        if not isinstance(operator, (cst.Is, cst.IsNot)) or not any(_is_none(side) for side in sides):
            return None
        name = next((side.value for side in sides if isinstance(side, cst.Name) and not _is_none(side)), None)
        if name is None or name not in _none_defaulted_params(info.node):
            return None
        if info.node not in self._eagerly_used():
            return None
        return 0 if isinstance(operator, cst.Is) else 1

    def _concrete_in(self, test: cst.BaseExpression, info: FunctionInfo) -> tuple[set[str], set[str]]:
        """Names known to be concrete in the body and in the else branch of `if test:`:
        `if not_jax_tracer(x):` / `if is_concrete(x):` (the body), `if isinstance(x, Tracer):`
        (the else branch), negated with `not`, combined with `and` (the body)."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            body, orelse = self._concrete_in(test.expression, info)
            return orelse, body
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            return self._concrete_in(test.left, info)[0] | self._concrete_in(test.right, info)[0], set()
        if not isinstance(test, cst.Call):
            return set(), set()
        args = [a.value for a in test.args if a.keyword is None and not a.star]
        tail = (call_tail(test.func) or "").lower()
        name = self.facts.qualname(test.func, info.scope)
        if name == "builtins.isinstance" and len(args) == 2 and "tracer" in (dotted_name(args[1]) or "").lower():
            return set(), _names(args[:1])
        if _asks_about_tracing(tail) and args:
            concrete_when_true = "not" in tail or "concrete" in tail
            return (_names(args), set()) if concrete_when_true else (set(), _names(args))
        return set(), set()

    def _eagerly(self, block):
        def run(env) -> None:
            self._eager += 1
            try:
                block(env)
            finally:
                self._eager -= 1

        return run

    def _eagerly_used(self) -> set[cst.CSTNode]:
        if self._eager_used is None:
            self._eager_used = eagerly_used_functions(self.facts)
        return self._eager_used

    # expressions --------------------------------------------------------------------------
    def _name(self, node: cst.Name, env, info, lookup_env=None) -> frozenset[str]:
        if env is None and node in self.records:
            return self.records[node]
        if env is not None and self._eager:
            self.records.setdefault(node, NONE)
            return NONE
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
            return NONE if static_attribute(node.attr.value) or node.attr.value in self._project_static else base
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
            if any(self._never_array(part, info) for part in (node.left, *(t.comparator for t in node.comparisons))):
                return NONE  # `mode == "train"`: an array compared with a str is just False
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
            if env is not None:
                self.generators.add(info.node)
            return NONE
        return NONE

    def _never_array(self, node: cst.BaseExpression, info: FunctionInfo) -> bool:
        """A string, or a pytree key-path entry (`GetAttrKey("w")`): JAX arrays do not compare
        with them (the comparison is a Python `False`/`True`, never a tracer)."""
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return True
        return isinstance(node, cst.Call) and self.facts.qualname(node.func, info.scope) in _KEY_PATH_ENTRIES

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
        while for_in is not None:
            source = self._eval(for_in.iter, local, info, look)
            if local is not None:
                self._bind_for(for_in.target, for_in.iter, source, local, info)
            else:
                self._bind(for_in.target, source, look)
            for condition in for_in.ifs:
                self._eval(condition.test, local, info, look)
            for_in = for_in.inner_for_in
        # the elements' origins; what is iterated reaches them through the loop variables
        # (`any(isinstance(leaf, jax.Array) for leaf in leaves)` is a Python bool)
        if isinstance(node, cst.DictComp):
            return self._eval(node.key, local, info, look) | self._eval(node.value, local, info, look)
        return self._eval(node.elt, local, info, look)

    def _call(self, node: cst.Call, ev, info: FunctionInfo) -> frozenset[str]:
        func = node.func
        receiver = NONE
        if isinstance(func, cst.Attribute):
            receiver = ev(func.value)
        else:
            ev(func)
        each = [ev(arg.value) for arg in node.args]
        args = NONE.union(*each)
        name = self.facts.qualname(func, info.scope)
        tail = call_tail(func) or ""
        if name in CONCRETE_CALLS or tail.startswith(_PREDICATE_PREFIXES) or _asks_about_tracing(tail):
            return NONE
        if isinstance(func, cst.Attribute) and (tail in CONCRETE_METHODS or _STATIC_METHOD.fullmatch(tail)):
            return NONE
        project = self.facts.project
        if project is not None and (
            project.returns_static(name) or (isinstance(func, cst.Attribute) and tail in project.static_methods)
        ):
            return NONE  # the project index: a function or method of the project that returns a Python value
        if tail in ("tree_map", "map") and node.args and (name or "").startswith(("jax.tree", "tree")) or tail == "tree_map":
            # tree_map(is_leafy_predicate, tree): a tree of Python bools; tree_map(lambda x:
            # x.shape, tree): a tree of shapes
            mapped = call_tail(node.args[0].value) or ""
            if mapped.startswith(_PREDICATE_PREFIXES) or self._metadata_lambda(node.args[0].value, info):
                return NONE
        binding = self._summary_binding(node, receiver, each, info)
        if binding is not None:
            returns, passed = binding
            return _received(passed, returns)
        if not self.proven or self._array_operation(node, name, tail, info):
            return receiver | args
        return NONE  # `model.dofs()`, `tree_size(p)`, `fn(x)`: the linter cannot see the result

    def _metadata_lambda(self, function: cst.BaseExpression, info: FunctionInfo) -> bool:
        """`lambda x: x.shape`, `lambda x: (x.shape, x.dtype)`, `lambda x: jnp.shape(x)`: what
        it returns of its argument is metadata, never a value of the array."""
        if not isinstance(function, cst.Lambda):
            return False
        body = function.body
        parts = [element.value for element in body.elements] if isinstance(body, cst.Tuple) else [body]

        def metadata(part) -> bool:
            if isinstance(part, cst.Attribute):
                return part.attr.value in CONCRETE_ATTRS
            return isinstance(part, cst.Call) and self.facts.qualname(part.func, info.scope) in CONCRETE_CALLS

        return all(metadata(part) for part in parts)

    def _array_operation(self, node: cst.Call, name: str | None, tail: str, info: FunctionInfo) -> bool:
        """A call whose result is an array (or a pytree of them) when its inputs are: JAX and
        NumPy functions, array methods, Python's arithmetic builtins, a transformed function
        (`jax.vmap(f)(x)`) and a class of this module (a container of its arguments)."""
        func = node.func
        if name is not None and (name.startswith(("jax.", "numpy.")) or name in _ARITHMETIC_BUILTINS):
            return True
        project = self.facts.project
        if project is not None and project.returns_array(name):
            return True  # the index: a project function computing its result with array operations
        if isinstance(func, cst.Attribute) and tail in ARRAY_METHODS:
            return True
        if isinstance(func, cst.Call) and self._is_transform(func.func, info.scope):
            return True
        if isinstance(func, cst.Name):
            owner = info.scope.lookup(func.value)
            return owner is not None and func.value in owner.classes
        return False

    def _summary_binding(self, node: cst.Call, receiver, each, info: FunctionInfo, tuples: bool = False):
        """A call of a module-local function: (the parameters its result derives from, the
        origins each parameter receives) (`_channels_last(image, axis)` reads only
        `image.ndim`: concrete). With `tuples`, the first item is per element of the tuple
        the function returns. None when the callee or its binding cannot be read."""
        func = node.func
        if not isinstance(func, (cst.Name, cst.Attribute)) or any(arg.star for arg in node.args):
            return None
        callee = self.facts.function_for(func, info.scope)
        if callee is None or not isinstance(callee.node, cst.FunctionDef) or not self._keeps_signature(callee):
            return None
        if self._summary_flow is None:
            self._summary_flow = TracedFlow(self.facts, summaries=True, proven=self.proven)
        returns = self._summary_flow.tuple_returns_of(callee) if tuples else self._summary_flow.returns_of(callee)
        if returns is None:
            return None
        passed = _bind_arguments(callee, self.facts.passed_params(callee, func), receiver, node, each)
        if passed is None:
            return None
        return returns, passed

    def _call_parts(self, node: cst.Call, env, info: FunctionInfo) -> list[frozenset[str]] | None:
        """`batch_var, n = _batch_variance(data)`: the origins of each element of the tuple a
        module-local function returns (`n` is `b_means.size`: static)."""
        def ev(child):
            return self._eval(child, None, info, env)

        receiver = ev(node.func.value) if isinstance(node.func, cst.Attribute) else NONE
        binding = self._summary_binding(node, receiver, [ev(arg.value) for arg in node.args], info, tuples=True)
        if binding is None:
            return None
        parts, passed = binding
        return [_received(passed, part) for part in parts]

    def _keeps_signature(self, callee: FunctionInfo) -> bool:
        """Undecorated, or decorated by JAX (jit, custom_vjp...) or static/class methods, which
        keep the parameters' meaning."""
        for decorator in callee.decorators:
            expr = decorator.decorator
            name = self.facts.decorator_name(decorator, callee.parent) or ""
            if name == "functools.partial" and isinstance(expr, cst.Call) and positional(expr):
                name = self.facts.qualname(positional(expr)[0], callee.parent) or ""
            if not name.startswith("jax.") and dotted_name(expr) not in ("staticmethod", "classmethod"):
                return False
        return True


def _received(passed: dict, params) -> frozenset[str]:
    """The origins the call passes to these parameters of the callee."""
    return NONE.union(*(passed.get(param, NONE) for param in params))


def _bind_arguments(callee: FunctionInfo, passed_params: list[str], receiver, call: cst.Call, each) -> dict | None:
    """Parameter -> origins of the argument it receives in `call` (None if unclear)."""
    params = callee.node.params
    found: dict[str, frozenset[str]] = {}
    positional_names = [p.name.value for p in (*params.posonly_params, *params.params)]
    if len(passed_params) < len(callee.params):  # a bound method: `self` is the receiver
        found[callee.params[0]] = receiver
        positional_names = positional_names[1:]
    keywords = {p.name.value for p in (*params.params, *params.kwonly_params)}
    star = params.star_arg.name.value if isinstance(params.star_arg, cst.Param) else None
    star_kwarg = params.star_kwarg.name.value if params.star_kwarg is not None else None
    index = 0
    for arg, origins in zip(call.args, each):
        if arg.keyword is None:
            if index < len(positional_names):
                target = positional_names[index]
            elif star is not None:
                target = star
            else:
                return None
            index += 1
        elif arg.keyword.value in keywords:
            target = arg.keyword.value
        elif star_kwarg is not None:
            target = star_kwarg
        else:
            return None
        found[target] = found.get(target, NONE) | origins
    return found


_DISPLAYS = (cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)


def is_container(node: cst.BaseExpression, info: FunctionInfo | None) -> bool:
    """A tuple, list, dict or set: a display, a name bound only to displays, or a parameter
    annotated as one (`limit: Tuple[Array, Array]`, `Optional[dict]`). Its truth value is its
    length, fixed by the pytree structure even when its elements are traced."""
    if isinstance(node, _DISPLAYS):
        return True
    if not isinstance(node, cst.Name) or info is None:
        return False
    owner = info.scope.lookup(node.value)
    if owner is None or owner.function is None:
        return False
    values = owner.values.get(node.value, [])
    if node.value not in owner.params:
        return bool(values) and all(isinstance(v, _DISPLAYS) for v in values)
    if values:  # a parameter that is rebound
        return False
    return annotation_name(parameter_annotation(owner.function, node.value)) in _CONTAINER_TYPES


def _names(nodes) -> set[str]:
    return {node.value for node in nodes if isinstance(node, cst.Name)}


def _with_concrete(block, names: set[str]):
    def run(env) -> None:
        for name in names:
            env[name] = NONE
        block(env)

    return run


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _none_defaulted_params(node: cst.FunctionDef) -> set[str]:
    params = node.params
    return {
        p.name.value
        for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        if p.default is not None and _is_none(p.default)
    }


def eagerly_used_functions(facts: ModuleFacts) -> set[cst.CSTNode]:
    """Module-local functions that code outside any traced function refers to by name other
    than to hand them to a transformation (`jax.jit(f)`, `lax.cond(p, f, g)`): called eagerly
    somewhere, or kept for an eager call (`kernel = f if state is None else f_jit`)."""
    handed: set[cst.CSTNode] = set()
    for call, _ in facts.transform_calls:
        handed.update(positional(call))
    loads = facts.loads
    found: set[cst.CSTNode] = set()

    class _Refs(Visitor):
        def __init__(self) -> None:
            self.scopes: list[Scope] = []

        def _enter(self, node: cst.CSTNode) -> None:
            self.scopes.append(facts.scopes[node])

        def _leave(self, node: cst.CSTNode) -> None:
            self.scopes.pop()

        visit_Module = visit_ClassDef = visit_FunctionDef = visit_Lambda = _enter
        leave_Module = leave_ClassDef = leave_FunctionDef = leave_Lambda = _leave

        def visit_Decorator(self, node: cst.Decorator) -> bool:
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node not in loads or node in handed:
                return
            scope = self.scopes[-1]
            owner = scope.lookup(node.value)
            target = owner.defs.get(node.value) if owner is not None else None
            if target is None:
                return
            function = facts.enclosing_function(scope)
            if function is None or not function.traced:
                found.add(target.node)

    walk(facts.module, _Refs())
    return found


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


# Annotations of arrays (jax, numpy, chex, jaxtyping): such a parameter cannot be made static.
_ARRAY_ANNOTATIONS = frozenset(
    {"Array", "ndarray", "ArrayLike", "ArrayTree", "Float", "Int", "Bool", "Complex", "Shaped", "Num",
     "Real", "UInt", "Inexact", "Integer", "Key", "PRNGKeyArray", "Tracer"}
)


def parameter_annotation(info: FunctionInfo | None, name: str) -> cst.BaseExpression | None:
    """The annotation of parameter `name` of `info`, if it has one."""
    if info is None or not isinstance(info.node, cst.FunctionDef):
        return None
    for param in all_params(info.node.params):
        if param.name.value == name:
            return param.annotation.annotation if param.annotation is not None else None
    return None


def annotation_name(annotation: cst.BaseExpression | None) -> str:
    """The last name of a type annotation, Optional removed: `Optional[Tuple[Array, Array]]`,
    `tuple[int, int] | None` and `"jax.Array"` give `Tuple`, `tuple`, `Array`; "" for None."""
    if annotation is None:
        return ""
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        others = [side for side in (annotation.left, annotation.right) if not _is_none(side)]
        return annotation_name(others[0]) if len(others) == 1 else ""
    if isinstance(annotation, cst.Subscript):
        base = (dotted_name(annotation.value) or "").rsplit(".", 1)[-1]
        if base == "Optional" and len(annotation.slice) == 1 and isinstance(annotation.slice[0].slice, cst.Index):
            return annotation_name(annotation.slice[0].slice.value)
        return base
    if isinstance(annotation, cst.SimpleString):
        text = annotation.evaluated_value
        return text.rsplit(".", 1)[-1] if isinstance(text, str) else ""
    return (dotted_name(annotation) or "").rsplit(".", 1)[-1]


def array_parameter(name: str, info: FunctionInfo | None, facts: ModuleFacts) -> bool:
    """`name` is a parameter (of `info` or a function enclosing it) annotated as an array."""
    while info is not None:
        if name in info.params:
            return annotation_name(parameter_annotation(info, name)) in _ARRAY_ANNOTATIONS
        info = facts.enclosing_function(info.parent)
    return False


def static_candidates(origins: frozenset[str], info: FunctionInfo | None, facts: ModuleFacts) -> list[str]:
    """The traced arguments in `origins` that may be Python values (not annotated as arrays,
    which cannot be static), when the function is compiled by a jit with static_argnames."""
    if not origins or info is None:
        return []
    if info.traced_by not in ("jax.jit", "jax.experimental.pjit.pjit", "flax.nnx.jit"):
        return []
    structured = _structured_params(info)
    return sorted(n for n in origins if not array_parameter(n, info, facts) and n not in structured)


def _structured_params(info: FunctionInfo) -> set[str]:
    """Parameters the function reads attributes or items of (`model.links`, `batch["x"]`):
    pytrees, usually of arrays, which static_argnames cannot take (they are not hashable)."""
    found: set[str] = set()
    params = set(info.params)

    class _Reads(Visitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Name) and node.value.value in params:
                found.add(node.value.value)

        def visit_Subscript(self, node: cst.Subscript) -> None:
            if isinstance(node.value, cst.Name) and node.value.value in params:
                found.add(node.value.value)

    walk(info.node, _Reads())
    return found


def static_hint(origins: frozenset[str], info: FunctionInfo | None, facts: ModuleFacts) -> str:
    """`static_argnames=("n",)` for `static_candidates`; "" when there are none."""
    candidates = static_candidates(origins, info, facts)
    if not candidates:
        return ""
    names = ", ".join(f'"{n}"' for n in candidates)
    comma = "," if len(candidates) == 1 else ""
    return f"static_argnames=({names}{comma})"


def describe(origins: frozenset[str]) -> str:
    """`argument 'x'` / `arguments 'n', 'x'`: every traced argument, by name."""
    names = sorted(origins)
    shown = ", ".join(f"'{n}'" for n in names)
    noun = "argument" if len(names) == 1 else "arguments"
    return f"{noun} {shown}"


__all__ = ["TracedFlow", "static_candidates", "static_hint", "describe", "call_tail", "keyword"]
