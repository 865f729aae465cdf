"""The one facts pass per module: scopes, imports, traced functions, jitted names.

Rules never re-derive scope or imports; they ask these facts. The pass is a single
libcst traversal that records raw bindings and interesting calls; everything that
needs the whole module (name resolution, which functions are traced) is derived
after it, lazily and once.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from jaxguard.lint.jaxapi import (  # noqa: F401 - the tables are read from here too
    KEY_ANNOTATION,
    ABSTRACT_METHODS,
    ABSTRACT_TRACES,
    CUSTOM_DERIVATIVES,
    FUNCTION_APPLYING_BUILTINS,
    FUNCTION_APPLYING_PREFIXES,
    GRAD_TRANSFORMS,
    JIT_TRANSFORMS,
    LAX_BODIES,
    LAX_LOOPS,
    MEMOIZERS,
    NONDETERMINISTIC,
    REF_KERNEL_TAKERS,
    SHARD_MAPS,
    TRACING_TRANSFORMS,
    is_host_callback,
    names_abstract_trace,
)
from jaxguard.lint.walk import Visitor, descendants, walk

# The comment that starts each code cell of a notebook in the module jaxguard lints for it
# (jaxguard.lint.notebook joins the cells under these markers).
CELL_MARKER = "#@@jaxguard-cell-{}@@"

BUILTIN_NAMES = frozenset(dir(builtins))


def _custom_derivative(name: str | None) -> bool:
    # by last name too: JAX's own sources import `custom_jvp` from private modules
    return name is not None and (name in CUSTOM_DERIVATIVES or name.rsplit(".", 1)[-1] in ("custom_vjp", "custom_jvp"))


# Last attribute names worth recording during the pass (resolved by qualified name later).
_INTERESTING_CALL_TAILS = frozenset(
    {name.rsplit(".", 1)[1] for name in (*TRACING_TRANSFORMS, *LAX_BODIES, *GRAD_TRANSFORMS)}
    | {"partial"}
    | {name.rsplit(".", 1)[1] for name in (*REF_KERNEL_TAKERS, *CUSTOM_DERIVATIVES)}
)


@dataclass
class StaticSpec:
    """Which parameters a transformation treats as concrete (`unknown`: positions whose
    treatment cannot be read, e.g. `in_axes=(axes,)` with `axes` computed at run time)."""

    argnums: tuple[int, ...] = ()
    argnames: tuple[str, ...] = ()
    unknown: tuple[int, ...] = ()

    def static_params(self, params: list[str]) -> set[str]:
        names = set(self.argnames)
        for index in self.argnums:
            if -len(params) <= index < len(params):
                names.add(params[index])
        return names

    def unknown_params(self, params: list[str]) -> set[str]:
        return {params[i] for i in self.unknown if i < len(params)}


# An `in_axes` entry that is not a literal: the argument may or may not be mapped.
UNKNOWN_AXIS = "?"


def in_axes_entries(node: cst.BaseExpression) -> int | list | None:
    """A vmap `in_axes` read from the source: an int (every argument), or one entry per
    argument (an int, None for "not mapped", or UNKNOWN_AXIS); None if it cannot be read.

    Handles `(0, None)`, `[0] + [None] * 9` and nested literal pytree specs."""
    single = literal_int(node)
    if single is not None:
        return single
    if isinstance(node, (cst.Tuple, cst.List)):
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            return None
        return [_axis_entry(e.value) for e in node.elements]
    if isinstance(node, cst.BinaryOperation):
        left, right = in_axes_entries(node.left), in_axes_entries(node.right)
        if isinstance(node.operator, cst.Add) and isinstance(left, list) and isinstance(right, list):
            return left + right
        if isinstance(node.operator, cst.Multiply):
            sequence, count = (node.left, right) if isinstance(left, list) else (node.right, left)
            entries = in_axes_entries(sequence)
            if isinstance(entries, list) and isinstance(count, int) and not isinstance(count, bool):
                return entries * max(count, 0)
    return None


def _axis_entry(node: cst.BaseExpression) -> int | str | None:
    if isinstance(node, cst.Name) and node.value == "None":
        return None
    value = literal_int(node)
    if value is not None:
        return value
    leaves = _spec_leaves(node)
    if leaves is None:
        return UNKNOWN_AXIS
    return 0 if any(leaf is not None for leaf in leaves) else None


def _spec_leaves(node: cst.BaseExpression) -> list | None:
    """The leaves of a literal pytree `in_axes` entry (`(0, None)`, `{"w": None}`), or None."""
    if isinstance(node, cst.Name) and node.value == "None":
        return [None]
    if literal_int(node) is not None:
        return [literal_int(node)]
    if isinstance(node, (cst.Tuple, cst.List, cst.Dict)):
        values = [e.value for e in node.elements if isinstance(e, (cst.Element, cst.DictElement))]
        if len(values) != len(node.elements):
            return None
        leaves: list = []
        for value in values:
            found = _spec_leaves(value)
            if found is None:
                return None
            leaves.extend(found)
        return leaves
    return None


@dataclass(eq=False)
class Scope:
    node: cst.CSTNode
    kind: str  # "module" | "class" | "function"
    parent: Scope | None
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    # names imported as two different things here (`import jax.numpy as np`, later `import
    # numpy as np` in a branch): which one a function sees depends on when it runs
    ambiguous_imports: set[str] = field(default_factory=set)
    values: dict[str, list[cst.BaseExpression | None]] = field(default_factory=dict)
    defs: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, cst.ClassDef] = field(default_factory=dict)
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)
    params: list[str] = field(default_factory=list)
    function: FunctionInfo | None = None

    def binds(self, name: str) -> bool:
        if name in self.declared_global or name in self.declared_nonlocal:
            return False
        return (
            name in self.imports
            or name in self.values
            or name in self.defs
            or name in self.classes
            or name in self.params
        )

    def lookup(self, name: str) -> Scope | None:
        """The scope that binds `name`, following Python's rules (class bodies are skipped)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if (first or scope.kind != "class") and scope.binds(name):
                return scope
            if name in scope.declared_global:
                return scope.module
            first = False
            scope = scope.parent
        return None

    @property
    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


@dataclass(eq=False)
class FunctionInfo:
    node: cst.FunctionDef | cst.Lambda
    name: str
    scope: Scope  # the function's own scope
    parent: Scope  # where it is defined
    params: list[str]
    class_name: str | None = None
    decorators: list[cst.Decorator] = field(default_factory=list)
    calls: list[cst.Call] = field(default_factory=list)
    traced: bool = False
    # True where JAX passes tracers for the parameters (a transformed function, a lax body);
    # False for helpers reached by calls, whose arguments may be concrete.
    params_traced: bool = False
    static_params: set[str] = field(default_factory=set)
    traced_by: str = ""  # the qualified name of the transformation, for messages
    differentiated: bool = False
    ref_params: bool = False  # a Pallas kernel: its parameters are mutable Refs
    # traced only by abstract evaluations (eval_shape, make_jaxpr) and what they reach:
    # the body never runs on real values and no compiled program is kept
    abstract_only: bool = False
    order: int = 0  # position among module-level bindings and definitions, in source order
    runs_with_x64: bool = False  # every project caller runs with x64 on (the project index)

    def annotated_not_a_key(self, param: str) -> bool:
        """`rng: Variable`, `key: str`: the author declared a type no PRNG key has."""
        if isinstance(self.node, cst.Lambda):
            return False
        for p in all_params(self.node.params):
            if p.name.value == param and p.annotation is not None:
                text = cst.Module([]).code_for_node(p.annotation.annotation)
                return KEY_ANNOTATION.search(text) is None
        return False

    @property
    def traced_params(self) -> set[str]:
        """Parameters JAX passes tracers for. Not one with a default: a caller that leaves it
        out (`jax.jit(jax.grad(loss))(x)` for `loss(x, exact=False)`) gets the default."""
        if not self.params_traced:
            return set()
        skip = {"self", "cls"} if self.class_name else set()
        return {p for p in self.params if p not in self.static_params and p not in skip} - defaulted_params(self.node)


def defaulted_params(node: cst.FunctionDef | cst.Lambda) -> set[str]:
    params = node.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.default is not None}


def dotted_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def _import_alias_name(alias: cst.ImportAlias) -> str:
    return dotted_name(alias.name) or ""


def _target_names(target: cst.BaseExpression) -> list[str]:
    return [name.value for name in target_name_nodes(target)]


def _params(parameters: cst.Parameters) -> list[str]:
    names = [p.name.value for p in (*parameters.posonly_params, *parameters.params)]
    if isinstance(parameters.star_arg, cst.Param):
        names.append(parameters.star_arg.name.value)
    names.extend(p.name.value for p in parameters.kwonly_params)
    if parameters.star_kwarg is not None:
        names.append(parameters.star_kwarg.name.value)
    return names


def _receivers_and_methods(func: cst.BaseExpression) -> list[tuple[cst.BaseExpression, str]]:
    """What a call of `func` may run: `obj(...)` runs `obj.__call__`; `a.b(...)` runs method
    `b` of the object `a`, or else (`self.act(x)`) `__call__` of the object `a.b`."""
    if isinstance(func, cst.Name):
        return [(func, "__call__")]
    if not isinstance(func, cst.Attribute):
        return []
    return [(func.value, func.attr.value), (func, "__call__")]


def attribute_stores(node: cst.CSTNode, receivers: set[str], nested: bool = True, with_values: bool = False) -> list:
    """`receiver.attr = ...` / `+=` / annotated assignments in `node` (and nested functions);
    with_values: (target, the value stored, None when not a plain `receiver.attr = value`)."""
    stores: list = []
    root = node

    class _Collect(Visitor):
        def _target(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value in receivers:
                stores.append((target, value) if with_values else target)
            elif isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    self._target(element.value, None)

        def visit_Assign(self, statement: cst.Assign) -> None:
            for target in statement.targets:
                self._target(target.target, statement.value)

        def visit_AugAssign(self, statement: cst.AugAssign) -> None:
            self._target(statement.target, None)

        def visit_AnnAssign(self, statement: cst.AnnAssign) -> None:
            if statement.value is not None:
                self._target(statement.target, statement.value)

        def visit_FunctionDef(self, function: cst.FunctionDef) -> bool:
            return nested or function is root

        def visit_ClassDef(self, klass: cst.ClassDef) -> bool:
            return nested

    walk(node, _Collect())
    return stores


def all_params(parameters: cst.Parameters) -> list[cst.Param]:
    """Every parameter node: positional, `*args`, keyword-only, `**kwargs`."""
    params = [*parameters.posonly_params, *parameters.params, *parameters.kwonly_params]
    if isinstance(parameters.star_arg, cst.Param):
        params.append(parameters.star_arg)
    if parameters.star_kwarg is not None:
        params.append(parameters.star_kwarg)
    return params


def literal_int(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
    ):
        return -int(node.expression.value, 0)
    return None


def literal_str(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _literal_tuple(node: cst.BaseExpression, literal) -> tuple | None:
    """`3` -> (3,), `(1, 2)` -> (1, 2) for a literal parser; None if any element is not literal."""
    single = literal(node)
    if single is not None:
        return (single,)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):  # `static_argnums={0}`: any iterable
        values = [literal(e.value) for e in node.elements]
        if all(v is not None for v in values):
            return tuple(values)
    return None


def literal_ints(node: cst.BaseExpression) -> tuple[int, ...] | None:
    return _literal_tuple(node, literal_int)


def is_main_guard(node: cst.If) -> bool:
    """`if __name__ == "__main__":`"""
    test = node.test
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = [test.left, test.comparisons[0].comparator]
    return (
        isinstance(test.comparisons[0].operator, cst.Equal)
        and any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides)
        and any(literal_str(s) == "__main__" for s in sides)
    )


def literal_strs(node: cst.BaseExpression) -> tuple[str, ...] | None:
    return _literal_tuple(node, literal_str)


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def argument(call: cst.Call, index: int, name: str) -> cst.BaseExpression | None:
    """The argument at `index` or passed as keyword `name`."""
    args = positional(call)
    if index < len(args):
        return args[index]
    return keyword(call, name)


def loaded_names(module: cst.Module) -> set[cst.Name]:
    """Name nodes that are read (not assignment targets, attribute names or keywords)."""
    loads: set[cst.Name] = set()
    skip: set[cst.CSTNode] = set()

    class _Collect(Visitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            skip.add(node.attr)

        def visit_Arg(self, node: cst.Arg) -> None:
            if node.keyword is not None:
                skip.add(node.keyword)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            skip.update(target_name_nodes(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            skip.update(target_name_nodes(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            skip.update(target_name_nodes(node.target))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            skip.add(node.name)

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            skip.add(node.name)

        def visit_Param(self, node: cst.Param) -> None:
            skip.add(node.name)

        def visit_For(self, node: cst.For) -> None:
            skip.update(target_name_nodes(node.target))

        def visit_CompFor(self, node: cst.CompFor) -> None:
            skip.update(target_name_nodes(node.target))

        def visit_ImportAlias(self, node: cst.ImportAlias) -> bool:
            return False

        def visit_Global(self, node: cst.Global) -> bool:
            return False

        def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node not in skip:
                loads.add(node)

    walk(module, _Collect())
    return loads


def assigned_names(block: cst.CSTNode) -> set[str]:
    """Names that assignments, augmented assignments and `for` targets in `block` bind
    (not inside nested functions)."""
    names: set[str] = set()

    class _Collect(Visitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(_target_names(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(_target_names(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(_target_names(node.target))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    walk(block, _Collect())
    return names


def _straight_bindings(function: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The values of the `name = ...` statements in `function`'s own block, in order (none
    under a loop or a branch): each binding runs once per call, after the one before."""
    body = function.body.body if isinstance(function, cst.FunctionDef) and isinstance(function.body, cst.IndentedBlock) else []
    return [
        small.value
        for line in body if isinstance(line, cst.SimpleStatementLine)
        for small in line.body
        if isinstance(small, cst.Assign) and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == name
    ]


def _is_literal(value: cst.BaseExpression) -> bool:
    """A number, string, True/False/None (a flag or a setting written out), signed or not,
    or a container of them (`{"scale": 2.0}`)."""
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return all(_is_literal(e.value) for e in value.elements if not isinstance(e, cst.StarredElement))
    if isinstance(value, cst.Dict):
        return all(isinstance(e, cst.DictElement) and _is_literal(e.key) and _is_literal(e.value) for e in value.elements)
    if isinstance(value, cst.Name):
        return value.value in ("True", "False", "None")
    return isinstance(value, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString))


def _literal_truth(test: cst.BaseExpression) -> bool | None:
    """`True`, `False`, `None` and integer literals as a test (`if False:`, `x if 0 else y`)."""
    if isinstance(test, cst.Name) and test.value in ("True", "False", "None"):
        return test.value == "True"
    if isinstance(test, cst.Integer):
        return literal_int(test) != 0
    return None


def _negated_name(test: cst.BaseExpression) -> str | None:
    """`name` for a test `not name`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) and isinstance(test.expression, cst.Name):
        return test.expression.value
    return None


def _unset_subject(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` for a test `x is None` or `not x` (the value is not there yet), also as one term
    of an `and` (`if not _warned and digits > 5:`: the body still runs only while unset)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _unset_subject(test.left) or _unset_subject(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    return _none_compared(test, cst.Is)


def _unset_tested(test: cst.BaseExpression) -> str | None:
    """`name` for a test `name is None` or `not name`."""
    subject = _unset_subject(test)
    return subject.value if isinstance(subject, cst.Name) else None


def unset_attribute_tested(test: cst.BaseExpression) -> str | None:
    """`obj.attr` for a test `obj.attr is None` or `not obj.attr` (a lazily made attribute)."""
    subject = _unset_subject(test)
    return dotted_name(subject) if isinstance(subject, cst.Attribute) else None


def set_attribute_tested(test: cst.BaseExpression) -> str | None:
    """`obj.attr` for a test `obj.attr is not None` or `obj.attr` (the value is there: its
    `else` branch makes it)."""
    subject = test if isinstance(test, cst.Attribute) else _none_compared(test, cst.IsNot)
    return dotted_name(subject) if isinstance(subject, cst.Attribute) else None


def _none_compared(test: cst.BaseExpression, operator: type) -> cst.BaseExpression | None:
    """`x` for a test `x is None` (operator cst.Is) or `x is not None` (cst.IsNot)."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, operator) and isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            return test.left
    return None


def compared_with_none(test: cst.BaseExpression, operator: type) -> str | None:
    """`name` for a test `name is None` (operator cst.Is) or `name is not None` (cst.IsNot)."""
    subject = _none_compared(test, operator)
    return subject.value if isinstance(subject, cst.Name) else None


def _binds_directly(body: cst.BaseSuite, name: str) -> bool:
    """`name = ...` among the plain statements of a block (the guard that lets it run once is closed)."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for line in statements:
        if isinstance(line, cst.SimpleStatementLine):
            for small in line.body:
                if isinstance(small, cst.Assign) and any(name in _target_names(t.target) for t in small.targets):
                    return True
    return False


def _tested_set(test: cst.BaseExpression) -> str | None:
    """`name` for a test `name` or `name is not None` (the value is already there), alone or
    as one side of an `or` (`if _warned or n < limit: return`: true whenever it is set)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return _tested_set(test.left) or _tested_set(test.right)
    return test.value if isinstance(test, cst.Name) else compared_with_none(test, cst.IsNot)


def target_name_nodes(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in target_name_nodes(e.value)]
    if isinstance(target, cst.StarredElement):
        return target_name_nodes(target.value)
    return []


class _Collector(Visitor):
    """The raw pass: scopes, bindings, function definitions, interesting calls."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.stack: list[Scope] = []
        self.module_compound_depth = 0
        self.module_loop_depth = 0
        self.eager_blocks: list[bool] = []  # per enclosing `with`: is it `jax.disable_jit()`?
        self.ifs: list[list] = []  # per enclosing `if`: [the If, still in its body?]
        # functions past a guard `if _cache is not None: return _cache` (or `if _tried: return`)
        # on a global they set: what they bind after it is set once, on the first call
        self.once_guarded: set[Scope] = set()
        self.events = 0  # module-level bindings and definitions seen so far
        self.loop_starts: list[int] = []  # the event that opens each enclosing module-level loop
        self.unreachable: set[cst.CSTNode] = set()  # module-level statements after a jump
        self.dead_lines = 0  # inside one of them: its bindings never happen

    @property
    def scope(self) -> Scope:
        return self.stack[-1]

    def _push(self, scope: Scope) -> None:
        self.facts.scopes[scope.node] = scope
        self.stack.append(scope)

    def _bind_value(self, name: str, value: cst.BaseExpression | None, source: cst.BaseExpression | None = None) -> None:
        """Bind `name` to `value`; `source` is the expression it is unpacked from (`a, b = f(x)`)."""
        scope = self.scope
        if name in scope.declared_global:
            if not self._initialises(name):
                self.facts.globals_assigned_in_functions.add(name)
                self.facts.global_settings.setdefault(name, []).append((scope, value))
            scope = scope.module
        scope.values.setdefault(name, []).append(value)
        if self.scope.kind == "module" and not self.dead_lines:
            self.events += 1
            self.facts.module_bindings.setdefault(name, []).append(self.events)
            self.facts.module_binding_sources.setdefault(name, []).append(value if source is None else source)
            if self.module_loop_depth:
                self.facts.loop_bindings.setdefault(name, []).append(self.events)
                kind = "loop"
            elif self.module_compound_depth:
                kind = "conditional"
            else:
                kind = "top"
            self.facts.module_assignments.setdefault(name, []).append(kind)

    # scopes ---------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        self._push(Scope(node, "module", None))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.classes[node.name.value] = node
        self._push(Scope(node, "class", self.scope))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.stack.pop()

    def _function(self, node: cst.FunctionDef | cst.Lambda, name: str) -> FunctionInfo:
        parent = self.scope
        params = _params(node.params)
        scope = Scope(node, "function", parent, params=params)
        class_name = node_name(parent.node) if parent.kind == "class" else None
        self.events += 1
        info = FunctionInfo(node, name, scope, parent, params, class_name=class_name, order=self.events)
        scope.function = info
        self.facts.functions[node] = info
        self._push(scope)
        return info

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        outer = self.scope
        info = self._function(node, node.name.value)
        info.decorators = list(node.decorators)
        outer.defs[node.name.value] = info

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        return False  # decorators are read from FunctionInfo.decorators, in the outer scope

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._function(node, "<lambda>")

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.stack.pop()

    # module-level control structure, for "rebound" globals -----------------
    def _enter_compound(self, loop: bool = False) -> None:
        if self.scope.kind == "module":
            self.module_compound_depth += 1
            self.module_loop_depth += loop

    def _leave_compound(self, loop: bool = False) -> None:
        if self.scope.kind == "module":
            self.module_compound_depth -= 1
            self.module_loop_depth -= loop

    def visit_For(self, node: cst.For) -> None:
        self._enter_loop()
        for name in _target_names(node.target):
            self._bind_value(name, None)
        self._enter_compound(loop=True)

    def leave_For(self, original_node: cst.For) -> None:
        self._leave_compound(loop=True)
        self._leave_loop()

    def visit_While(self, node: cst.While) -> None:
        self._enter_loop()
        self._enter_compound(loop=True)

    def leave_While(self, original_node: cst.While) -> None:
        self._leave_compound(loop=True)
        self._leave_loop()

    def _enter_loop(self) -> None:
        # a loop of the module takes events of its own: what happens inside it lies strictly
        # between them, so a call before the loop is told from one at its start
        if self.scope.kind == "module":
            self.events += 1
            self.loop_starts.append(self.events)

    def _leave_loop(self) -> None:
        if self.scope.kind == "module":
            self.facts.module_loops.append((self.loop_starts.pop(), self.events))
            self.events += 1

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.dead_lines += node in self.unreachable

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self.dead_lines -= original_node in self.unreachable

    def _initialises(self, name: str) -> bool:
        """A binding in the body of `if name is None:` (or `if not name:`): a lazily made
        singleton (`global _comm; if _comm is None: _comm = make()`), set once and kept."""
        if self.scope in self.once_guarded:
            return True
        for node, in_body in self.ifs:
            tested = _unset_tested(node.test) if in_body else None
            # the guard's own name, or a companion set under a guard that the block closes
            # (`if _core is None: _core = a; _mat = b`: _mat too is set once, with _core)
            if tested == name or (tested in self.scope.declared_global and _binds_directly(node.body, tested)):
                return True
        return False

    def _enter_else(self, node: cst.CSTNode) -> None:
        if self.ifs and self.ifs[-1][0].orelse is node:
            self.ifs[-1][1] = False

    def visit_Else(self, node: cst.Else) -> None:
        self._enter_else(node)

    def visit_If(self, node: cst.If) -> None:
        self._enter_else(node)  # an `elif` is its parent's else branch
        scope = self.scope
        if scope.function is not None and node.orelse is None and isinstance(node.body, cst.IndentedBlock) and _leaves(node.body.body):
            guarded = _tested_set(node.test)
            body = scope.node.body
            if guarded in scope.declared_global and isinstance(body, cst.IndentedBlock) and node in body.body:
                self.once_guarded.add(scope)
        self.ifs.append([node, True])
        self._enter_compound()
        if _literal_truth(node.test) is not None:
            self.facts.maybe_dead = True

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if _literal_truth(node.test) is not None:
            self.facts.maybe_dead = True

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if any(_leaves([statement]) for statement in node.body[:-1]):
            self.facts.maybe_dead = True  # code after a `return` or `raise`
        if self.scope.kind == "module":
            jumps = [index for index, statement in enumerate(node.body) if _jumps(statement)]
            if jumps:
                self.unreachable.update(node.body[jumps[0] + 1:])  # `break` then `lr = lr / 2`

    def leave_If(self, original_node: cst.If) -> None:
        self.ifs.pop()
        self._leave_compound()

    def visit_Try(self, node: cst.Try) -> None:
        self._enter_compound()

    def leave_Try(self, original_node: cst.Try) -> None:
        self._leave_compound()

    # bindings ---------------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _import_alias_name(alias)
            if alias.asname is not None:
                local = dotted_name(alias.asname.name)  # type: ignore[arg-type]
                if local:
                    self._import(local, full)
            else:
                top = full.split(".")[0]
                self._import(top, top)

    def _import(self, local: str, qualified: str) -> None:
        imports = self.scope.imports
        if imports.get(local, qualified) != qualified:
            self.scope.ambiguous_imports.add(local)
        imports[local] = qualified

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if (node.relative or node.module is None) and self.facts.project is not None:
            base = self.facts.project.absolute("." * len(node.relative) + (dotted_name(node.module) or "" if node.module else ""))
        elif node.relative or node.module is None:
            base = "." * len(node.relative) + (dotted_name(node.module) or "" if node.module else "")
        else:
            base = dotted_name(node.module) or ""
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _import_alias_name(alias)
            local = dotted_name(alias.asname.name) if alias.asname else name  # type: ignore[arg-type]
            if local:
                self._import(local, f"{base}.{name}")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            names = _target_names(target.target)
            single = isinstance(target.target, cst.Name)
            for name in names:
                self._bind_value(name, node.value if single else None, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        for name in _target_names(node.target):
            self._bind_value(name, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        for name in _target_names(node.target):
            self._bind_value(name, None)
            if self.scope.kind == "module" and not self.dead_lines:
                self.facts.module_assignments.setdefault(name, []).append("augmented")

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        for name in _target_names(node.target):
            self._bind_value(name, node.value)

    def visit_With(self, node: cst.With) -> None:
        # `with jax.disable_jit():` runs the transformations called inside eagerly
        disables = any(isinstance(item.item, cst.Call) and call_tail(item.item.func) == "disable_jit" for item in node.items)
        self.eager_blocks.append(disables)

    def leave_With(self, original_node: cst.With) -> None:
        self.eager_blocks.pop()

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            for name in _target_names(node.asname.name):
                self._bind_value(name, None)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        for name in _target_names(node.target):
            self.scope.values.setdefault(name, []).append(None)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            for name in _target_names(node.name.name):
                self.scope.values.setdefault(name, []).append(None)

    def visit_Global(self, node: cst.Global) -> None:
        self.scope.declared_global.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.scope.declared_nonlocal.update(item.name.value for item in node.names)

    # calls -----------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        function = self.scope.function
        if function is not None:
            function.calls.append(node)
        else:
            self.facts.import_time_calls.append((node, self.events))
        if isinstance(node.func, cst.Call):
            self.facts.invoked.add(node.func)
        if call_tail(node.func) in _INTERESTING_CALL_TAILS:
            self.facts.transform_calls.append((node, self.scope))
            if any(self.eager_blocks):
                self.facts.eager_transform_calls.add(node)
            flag = self._made_unless()
            if flag is not None:
                self.facts.call_unless[node] = flag

    def _made_unless(self) -> str | None:
        """`flag` when the innermost `if` runs this code only where `flag` is false (the
        `else` of `if verbose:`, the body of `if not verbose:`)."""
        if not self.ifs:
            return None
        node, in_body = self.ifs[-1]
        test = node.test
        if not in_body and isinstance(test, cst.Name):
            return test.value
        return _negated_name(test) if in_body else None


def node_name(node: cst.CSTNode) -> str | None:
    name = getattr(node, "name", None)
    return name.value if isinstance(name, cst.Name) else None


# Transformations that trace a function anew on every call (nothing staged and kept).
_UNSTAGED = frozenset({"jax.vmap", *GRAD_TRANSFORMS})
# Calls that take a function and return a wrapper, without calling it.
_WRAPS_WITHOUT_CALLING = frozenset(
    {*TRACING_TRANSFORMS, *GRAD_TRANSFORMS, "functools.partial", "functools.wraps", "jax.custom_jvp", "jax.custom_vjp",
     "jax.tree_util.Partial"}
) - {"jax.eval_shape", "jax.vjp", "jax.jvp", "jax.linearize", "equinox.filter_vjp", "equinox.filter_jvp"}


def call_tail(func: cst.BaseExpression) -> str | None:
    """The last name of a called expression: `f` of `f(...)` and of `a.b.f(...)`."""
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _leaves(body) -> bool:
    """A block whose last statement returns or raises."""
    return bool(body) and _jumps(body[-1], (cst.Return, cst.Raise))


def _jumps(statement: cst.CSTNode, kinds: tuple = (cst.Return, cst.Raise, cst.Break, cst.Continue)) -> bool:
    """A statement that leaves its block (by one of `kinds`): what follows it never runs."""
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[-1], kinds)


def _ifs_in(function: cst.CSTNode) -> list[cst.If]:
    """The `if` statements of a function, not those of functions nested in it."""
    found: list[cst.If] = []

    class _Collect(Visitor):
        def visit_If(self, node: cst.If) -> None:
            found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

    walk(function, _Collect())
    return found


def _calls_in(statements) -> set[cst.Call]:
    calls: set[cst.Call] = set()

    class _Collect(Visitor):
        def visit_Call(self, node: cst.Call) -> None:
            calls.add(node)

    for statement in statements:
        walk(statement, _Collect())
    return calls


def _isinstance_of_tracer(facts: "ModuleFacts", call: cst.Call, scope: Scope) -> bool:
    args = positional(call)
    return (
        facts.qualname(call.func, scope) == "builtins.isinstance" and len(args) == 2
        and (facts.qualname(args[1], scope) or "").endswith("core.Tracer")
    )


class ModuleFacts:
    """Everything rules share about one module. Build with `ModuleFacts.build(module)`."""

    def __init__(self, module: cst.Module, traced_decorators: tuple[str, ...] = (), project=None) -> None:
        self.module = module
        self.traced_decorators = traced_decorators
        # the file's ProjectView (jaxguard.lint.project): what other modules do with its
        # functions and what the project functions it calls do; None when checked alone
        self.project = project
        self.scopes: dict[cst.CSTNode, Scope] = {}
        self.functions: dict[cst.CSTNode, FunctionInfo] = {}
        self.transform_calls: list[tuple[cst.Call, Scope]] = []
        # module-level name -> how each assignment happened ("top", "conditional", "loop", ...)
        self.module_assignments: dict[str, list[str]] = {}
        self.globals_assigned_in_functions: set[str] = set()
        # global -> (function scope, value) of each assignment a function makes (None: `+=`)
        self.global_settings: dict[str, list[tuple[Scope, cst.BaseExpression | None]]] = {}
        # an `if` or `a if test else b` tests a literal (`if False:`), or code follows a `raise`
        self.maybe_dead = False
        # module-level name -> the `order` of each of its module-level bindings
        self.module_bindings: dict[str, list[int]] = {}
        self.loop_bindings: dict[str, list[int]] = {}  # ... of those made in a module-level loop
        # ... and the expression each one takes its value from (None: a loop target, `+=`)
        self.module_binding_sources: dict[str, list[cst.BaseExpression | None]] = {}
        self.module_loops: list[tuple[int, int]] = []  # (first, last) event of each module-level loop
        # calls made while the module is imported (at module level or in a class body), each
        # with the number of module-level bindings and definitions made before it
        self.import_time_calls: list[tuple[cst.Call, int]] = []
        # names (per binding scope) that hold a compiled function, with its static spec
        self.jitted_names: dict[tuple[Scope, str], StaticSpec] = {}
        self.jit_decorated: set[cst.CSTNode] = set()  # ... the functions decorated with such a jit
        # calls of the form `transform(f)` whose result is a compiled function
        self.jit_calls: dict[cst.Call, StaticSpec] = {}
        # lax calls whose body arguments are traced: call -> body argument nodes
        self.lax_body_args: dict[cst.Call, list[cst.BaseExpression]] = {}
        self.call_unless: dict[cst.Call, str] = {}  # a transformation call made only where this flag is false
        self.body_unless: dict[cst.CSTNode, set[str | None]] = {}  # lax body -> the flags of the calls that trace it
        # transformations applied inside `with jax.disable_jit():`, which run the function as
        # plain Python: they trace nothing
        self.eager_transform_calls: set[cst.Call] = set()
        # calls whose result is called at once (`shard_map(f, ...)(x)`)
        self.invoked: set[cst.Call] = set()
        # `shard_map(f, ...)(x)`: f is traced only if the call runs inside traced code
        self._deferred_shard_maps: list[tuple[cst.Call, Scope, FunctionInfo, str, StaticSpec]] = []
        # results that one rule family derives and its rules share (e.g. the PRNG key flow)
        self.derived: dict[str, object] = {}
        self.any_traced = False  # most modules of a library define no traced function

    @classmethod
    def build(cls, module: cst.Module, traced_decorators: tuple[str, ...] = (), project=None) -> ModuleFacts:
        facts = cls(module, traced_decorators, project)
        walk(module, _Collector(facts))
        facts._find_traced()
        facts._find_abstract_only()
        facts.any_traced = any(info.traced for info in facts.functions.values())
        return facts

    @functools.cached_property
    def custom_derivatives(self) -> set[cst.CSTNode]:
        """Functions with a user-defined derivative: decorated with `jax.custom_vjp` (also
        through `functools.partial(jax.custom_vjp, nondiff_argnums=...)`), wrapped by a call
        (`solve = jax.custom_vjp(_solve)`), or given to `lax.custom_root`/`custom_linear_solve`."""
        found: set[cst.CSTNode] = set()
        for info in self.functions.values():
            for decorator in info.decorators:
                expr = decorator.decorator
                name = self.decorator_name(decorator, info.parent)
                if name == "functools.partial" and isinstance(expr, cst.Call) and positional(expr):
                    name = self.qualname(positional(expr)[0], info.parent)
                if _custom_derivative(name):
                    found.add(info.node)
        for call, scope in self.transform_calls:
            if _custom_derivative(self.qualname(call.func, scope)):
                for arg in call.args:
                    target = self.function_for(arg.value, scope)
                    if target is not None:
                        found.add(target.node)
        return found

    def memoized(self, info: FunctionInfo) -> bool:
        """Decorated with `functools.cache`/`lru_cache`: it takes hashable arguments, which
        tracers are not, and its body runs once per them by design (a dtype read from the
        environment, a library built and registered once). Calls from traced code do not
        make it, or what it calls, traced."""
        return any(self.decorator_name(decorator, info.parent) in MEMOIZERS for decorator in info.decorators)

    def decorator_name(self, decorator: cst.Decorator, scope: Scope) -> str | None:
        """The qualified name of a decorator, or of the function it calls (`@lru_cache(maxsize=1)`)."""
        expr = decorator.decorator
        return self.qualname(expr.func if isinstance(expr, cst.Call) else expr, scope)

    @functools.cached_property
    def differentiates(self) -> bool:
        """The module applies a differentiation transform (grad, vjp, value_and_grad, ...)."""
        for info in self.functions.values():
            if any(self.decorator_name(decorator, info.parent) in GRAD_TRANSFORMS for decorator in info.decorators):
                return True
        return any((self.transform_call(call, scope) or ("",))[0] in GRAD_TRANSFORMS for call, scope in self.transform_calls)

    @functools.cached_property
    def loads(self) -> set[cst.Name]:
        return loaded_names(self.module)

    @functools.cached_property
    def names_read(self) -> set[str]:
        """Every name the module reads somewhere."""
        return {name.value for name in self.loads}

    @functools.cached_property
    def is_notebook(self) -> bool:
        """The module is a notebook's code cells: the whole program, run in order, never imported."""
        header = self.module.header
        return bool(header) and header[0].comment is not None and header[0].comment.value == CELL_MARKER.format(0)

    @functools.cached_property
    def is_program(self) -> bool:
        """The module is a whole program, its module-level code run once, in order: a notebook,
        or a script (outside any package, and no project module imports it: `train.py`,
        `docs/tutorial.py`). A library module's functions are called again after import."""
        project = self.project
        return self.is_notebook or (project is not None and not project.package and not project.imported)

    @functools.cached_property
    def item_store_roots(self) -> set[cst.Name]:
        """Names whose items are written (`stats["hits"] += 1`, `table[k] = v`, `del cache[k]`):
        the container is changed in place, its value is not read into a computation."""
        roots: set[cst.Name] = set()

        def add(target: cst.BaseExpression) -> None:
            if isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    add(element.value)
            elif isinstance(target, cst.Subscript):
                while isinstance(target, cst.Subscript):
                    target = target.value
                if isinstance(target, cst.Name):
                    roots.add(target)

        class _Collect(Visitor):
            def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
                add(node.target)

            def visit_AugAssign(self, node: cst.AugAssign) -> None:
                add(node.target)

            def visit_Del(self, node: cst.Del) -> None:
                add(node.target)

        walk(self.module, _Collect())
        return roots

    def is_rebound_global(self, name: str) -> bool:
        """A module-level name whose value changes after import: JG102's frozen-at-trace values.

        Alternatives (`try: x = a` / `except: x = b`, or an if/else) are one definition.
        """
        if name in self.globals_assigned_in_functions and self._set_to_new_values(name):
            return True
        kinds = self.module_assignments.get(name, [])
        top = kinds.count("top")
        if top >= 2 and set(kinds) == {"top"} and self._bound_alike(name):
            return False  # `test_keep_num = grid * 3 // 4` written again: the same value
        return (
            "loop" in kinds
            or "augmented" in kinds
            or top >= 2
            or (top >= 1 and "conditional" in kinds)
        )

    def _bound_alike(self, name: str) -> bool:
        """Every module-level binding of `name` is the same expression of values that do not
        change: each evaluates to an equal value (an unpacked one too: `opt_init, opt_update,
        get_params = optimizers.adam(step_size=lr)` in two cells)."""
        values = self.module_binding_sources.get(name, [])
        if not values or len(values) != len(self.module_scope.values.get(name, [])) or any(value is None for value in values):
            return False
        texts = {self.module.code_for_node(value) for value in values}
        return len(texts) == 1 and self.built_from_constants(values[0], self.module_scope, exclude=name)

    def _set_to_new_values(self, name: str) -> bool:
        """Does a function give global `name` a value of its caller's choosing: from its
        arguments or locals, from the global itself (`count += 1`), or a literal flag
        (`_ENABLED = False` in a toggle)? Values built from imports and constants alone
        (`_KERNEL = module.kernel`, `_TPU = jax.devices()[0].platform == "tpu"`) are made
        alike on every call: a lazy initialisation, not a setting."""
        known = self.derived.setdefault("set-to-new-values", {})
        if name in known:
            return known[name]
        judging = self.derived.setdefault("judging-globals", set())
        if name in judging:
            return True  # globals set from each other: not shown to be constant
        judging.add(name)
        settings = self.global_settings.get(name, [])
        try:
            known[name] = not self._one_literal(name) and any(
                value is None or _is_literal(value) or not self.built_from_constants(value, scope, exclude=name)
                for scope, value in settings
            )
        finally:
            judging.discard(name)
        return known[name]

    def _one_literal(self, name: str) -> bool:
        """Every binding of global `name`, by the module or by functions (an initialisation
        too), is the same literal (`global gamma; gamma = 0.99` in each trial): its value
        never changes."""
        values = self.module_scope.values.get(name, [])
        if not values or any(value is None or not _is_literal(value) for value in values):
            return False
        return len({self.module.code_for_node(value) for value in values}) == 1

    def built_from_constants(
        self, value: cst.BaseExpression, scope: Scope, receiver: str | None = None,
        reassigned: set[str] = frozenset(), exclude: str | None = None, depth: int = 0,
        steady: Callable[[str], bool] | None = None, known: frozenset[str] = frozenset(),
    ) -> bool:
        """Is `value` made only of literals, imported names, builtins, module names that do
        not change and (given a `receiver`) its attributes that are never `reassigned`, through
        calls that give the same result each time? Then evaluating it again gives an equal
        value (`optax.adam(self.cfg.lr)`, `jax.devices()[0].platform`). `steady` judges
        whether a module name keeps its value (by default: it is never rebound); `known` are
        locals already shown to be made so."""
        facts, calls, lambdas = self, [], set()
        inner = [scope]  # the scope names are read in: a lambda's own, inside it

        class _Parts(cst.CSTVisitor):
            ok = True

            def visit_Call(self, call: cst.Call) -> None:
                calls.append(call)

            def visit_Lambda(self, function: cst.Lambda) -> None:
                lambdas.add(function)
                inner.append(facts.scopes.get(function, inner[-1]))

            def leave_Lambda(self, original_node: cst.Lambda) -> None:
                inner.pop()

            def visit_Attribute(self, attribute: cst.Attribute) -> bool:
                base = attribute.value
                if receiver is not None and isinstance(base, cst.Name) and base.value == receiver and scope.lookup(receiver) is scope:
                    self.ok = self.ok and attribute.attr.value not in reassigned
                    return False
                return True

            def visit_Name(self, name: cst.Name) -> None:
                if name not in facts.loads or name.value in ("None", "True", "False"):
                    return
                owner = inner[-1].lookup(name.value)
                if owner is None:
                    self.ok = self.ok and name.value in BUILTIN_NAMES
                elif name.value in owner.imports:
                    return
                elif owner.node in lambdas:
                    return  # a parameter of a lambda the value makes
                elif owner is scope and owner.kind != "module" and name.value in known:
                    return
                elif owner is scope and owner.kind != "module" and depth < 2 and name.value != receiver and built_local(name.value):
                    return  # a local made the same way (`grad_fn = jax.grad(self._loss)`)
                elif owner.kind != "module" or name.value == exclude or not keeps_value(name.value):
                    self.ok = False  # a parameter, a local, the global itself, or a global that changes

        def keeps_value(name: str) -> bool:
            return steady(name) if steady is not None else not facts.is_rebound_global(name)

        def built_local(name: str) -> bool:
            values = scope.values.get(name, [])
            if name in scope.function.params or not values or None in values:
                return False
            # bound once, or in straight statements: `f = hk.transform(g)` then
            # `f = hk.without_apply_rng(f)`, each binding from the one before
            chain = values if len(values) == 1 else _straight_bindings(scope.function.node, name)
            return len(chain) == len(values) and all(
                facts.built_from_constants(v, scope, receiver, reassigned, exclude, depth + 1, steady, known | ({name} if i else set()))
                for i, v in enumerate(chain)
            )

        parts = _Parts()
        value.visit(parts)
        return parts.ok and not any((self.qualname(c.func, scope) or "").startswith(NONDETERMINISTIC) for c in calls)

    def frozen_before(self, name: str, info: FunctionInfo) -> bool:
        """Every binding of module-level `name` happens at module level before `info` is
        defined (a table built, then converted, then read): the function can only ever see
        the final value."""
        if name in self.globals_assigned_in_functions:
            return False
        if self.is_program:
            return not self._runs_again_after_a_change(name, info)
        bindings = self.module_bindings.get(name, [0])
        if bindings[-1] < info.order:
            return True
        runs = [at for call, at in self.import_time_calls if at >= info.order and self._may_run_module_code(call, info)]
        # rebound after the def, but before anything run at import could call the function
        return not any(at <= bindings[-1] for at in runs)

    def _runs_again_after_a_change(self, name: str, info: FunctionInfo) -> bool:
        """In a program (run once, in order), is the code compiled for `info` shown to run,
        then global `name` given a new value, then the same compiled code run again? A run
        counts only where a module-level call is shown to reach `info`; the same code, only
        where nothing between the two runs made its function anew (a def run again, in a
        notebook cell or a loop, traces afresh). A loop that both runs it and rebinds `name`
        runs it again after the change, unless each pass binds an equal value
        (`opt = adam(lr)` with `lr` unchanged in the loop)."""
        outermost = info
        while (outer := self.enclosing_function(outermost.parent)) is not None:
            outermost = outer
        runs = []
        for call, at in self.import_time_calls:
            if at >= info.order and (names := self._names_running(call, at, info)) is not None:
                runs.append((at, names | {outermost.name}))
        if not runs:
            return False
        changes = self.module_bindings.get(name, [])

        def remade(names: set[str], first: int, last: int) -> bool:
            events = [outermost.order] + [e for n in names for e in self.module_bindings.get(n, [])]
            events += [f.order for n in names for f in self._module_defs.get(n, ())]
            return any(first < e <= last for e in events)

        for index, (first, names) in enumerate(runs):
            for last, others in runs[index:]:
                # the function both runs reach through is made anew by a binding of a name they share
                if any(first < e <= last for e in changes) and not remade(names & others, first, last):
                    return True
        for start, end in self.module_loops:
            inside = [names for at, names in runs if start <= at <= end]
            if inside and not remade(set().union(*inside), start, end) and any(
                start < e <= end and not self._alike_each_pass(name, e, (start, end)) for e in changes
            ):
                return True
        return False

    @functools.cached_property
    def _module_defs(self) -> dict[str, list[FunctionInfo]]:
        """Module-level defs by name, all of them (a notebook may define a function again)."""
        found: dict[str, list[FunctionInfo]] = {}
        for info in self.functions.values():
            if info.parent is self.module_scope and isinstance(info.node, cst.FunctionDef):
                found.setdefault(info.name, []).append(info)
        return found

    def _binding_at(self, name: str, at: int) -> FunctionInfo | cst.BaseExpression | None:
        """What module-level `name` holds at event `at`: the def or the value of its latest
        binding (None: unknown)."""
        latest, found = 0, None
        for event, source in zip(self.module_bindings.get(name, []), self.module_binding_sources.get(name, [])):
            if latest < event <= at:
                latest, found = event, source
        for info in self._module_defs.get(name, ()):
            if latest < info.order <= at:
                latest, found = info.order, info
        return found

    def _names_running(self, call: cst.Call, at: int, info: FunctionInfo) -> set[str] | None:
        """If module-level `call`, made at event `at`, is shown to run code compiled for
        `info`, the module names whose rebinding would make that function anew; else None.
        Shown: a call of a compiled module function that reaches `info` (`step(x)` of a jitted
        `step`, `jax.jit(step)(x)`), or of a module function or a method of an object of a
        module class that reaches a function decorated with jit that reaches it
        (`train()`, `runner.go()`). An eager call of `info` reads the value it has then."""
        scope, func = self.module_scope, call.func
        compiled = isinstance(func, cst.Call) and self._compiles(func) and bool(positional(func))
        if compiled:
            func = positional(func)[0]  # `jax.jit(step)(x)` runs `step`
        if isinstance(func, cst.Name) and func.value not in scope.imports:
            held = self._binding_at(func.value, at)
            target = held if isinstance(held, FunctionInfo) else None
            if isinstance(held, (cst.Call, cst.Lambda)):
                target = self.function_for(held, scope)
                compiled = compiled or (isinstance(held, cst.Call) and self._compiles(held))
            constructor = self._own_method(held, "__init__", scope)  # `Runner()` runs its constructor
            target = constructor or target
            if target is not None and self._runs_compiled(target, info, compiled):
                return {func.value}
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value not in scope.imports:
            held = self._binding_at(func.value.value, at)
            method = self._own_method(held, func.attr.value, scope)
            if method is not None and self._runs_compiled(method, info, False):
                return {func.value.value, held.func.value}
        return None

    def _compiles(self, call: cst.Call) -> bool:
        """`jax.jit(f)`, `partial(jax.jit, ...)(f)`: a call that makes a compiled function."""
        found = self.transform_call(call, self.module_scope) if call in self.jit_calls else None
        return found is not None and found[0] in JIT_TRANSFORMS

    def _runs_compiled(self, start: FunctionInfo, info: FunctionInfo, compiled: bool) -> bool:
        """Running `start` (itself compiled, or not) runs code compiled for `info`: `start`
        reaches `info`, or reaches a function decorated with jit that reaches it."""
        if compiled or start.node in self.jit_decorated:
            return self._reaches(start, info)
        return any(node in self.jit_decorated and self._reaches(self.functions[node], info) for node in self._reached_from(start))

    def _alike_each_pass(self, name: str, event: int, loop: tuple[int, int], seen: frozenset[str] = frozenset()) -> bool:
        """The binding of module-level `name` at `event`, inside `loop`, gives an equal value
        on every pass: the same expression of names the loop does not change (or changes
        alike), through calls that give the same result each time."""
        source = dict(zip(self.module_bindings.get(name, []), self.module_binding_sources.get(name, []))).get(event)
        if source is None or name in seen or name in self.globals_assigned_in_functions:
            return False
        start, end = loop

        def steady(other: str) -> bool:
            inside = [e for e in self.module_bindings.get(other, []) if start < e <= end]
            return other not in self.globals_assigned_in_functions and all(
                self._alike_each_pass(other, e, loop, seen | {name}) for e in inside
            )

        return self.built_from_constants(source, self.module_scope, exclude=name, steady=steady)

    def _may_run_module_code(self, call: cst.Call, info: FunctionInfo) -> bool:
        """A call made at import that may run `info`: it calls a function of this module that
        reaches it (or any other module code: a class, what a call returned, `jax.jit(f)(x)`),
        or hands a function to a library that calls it (`lax.scan(body, ...)`; `jax.jit(f)`
        only wraps it)."""
        func = call.func
        while isinstance(func, cst.Attribute):
            func = func.value
        if not isinstance(func, cst.Name):
            return True
        scope = self.module_scope
        local = func.value not in scope.imports
        runs = self._module_functions_named(func.value) if isinstance(call.func, cst.Name) and local else None
        if runs is not None:
            if any(self._reaches(target, info) for target in runs):
                return True  # `get_field(model)` at import runs only what it calls
        elif local and isinstance(call.func, cst.Name) and func.value in scope.classes and func.value not in scope.values:
            if self._class_reaches(func.value, info):
                return True  # building the object runs its constructor, which may run `info`
        elif local and (func.value in scope.values or func.value in scope.defs or func.value in scope.classes):
            method_of_object = isinstance(call.func, cst.Attribute) and func.value in scope.values
            if not (method_of_object and self._object_runs_no_module_code(func.value, info)):
                return True
        if (self.qualname(call.func, scope) or "") in _WRAPS_WITHOUT_CALLING:
            return False
        return self._hands_module_function(call)

    def _hands_module_function(self, call: cst.Call) -> bool:
        """Is a function of the module among `call`'s arguments? The callee may call it."""
        return any(isinstance(arg.value, cst.Name) and self._names_module_function(arg.value.value) for arg in call.args)

    def _names_module_function(self, name: str) -> bool:
        """Module-level `name` is a function of the module: a def, a class, a lambda, a jitted name."""
        scope = self.module_scope
        return name not in scope.imports and (
            name in scope.defs or name in scope.classes
            or any(isinstance(v, cst.Lambda) for v in scope.values.get(name, ()))
            or (scope, name) in self.jitted_names
        )

    def _object_runs_no_module_code(self, name: str, info: FunctionInfo, seen: frozenset[str] = frozenset()) -> bool:
        """Module-level `name` is an object whose methods cannot run `info`: every binding is a
        literal or a container of them (`losses = []`), or is made by a call, handed no function
        of the module, of an imported callable (a library's object: `opt = optax.adam(1e-3)`),
        of a module class none of whose methods reaches `info`, or of such an object's method
        (`opt = lopt.opt_fn(theta)`)."""
        scope = self.module_scope
        values = scope.values.get(name, ())
        if not values or name in seen:
            return False
        for value in values:
            if isinstance(value, (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.BaseString, cst.Integer, cst.Float)):
                if any(isinstance(node, cst.Lambda) or (isinstance(node, cst.Name) and self._names_module_function(node.value)) for node in descendants(value)):
                    return False  # a table of the module's functions: calling through it runs them
                continue
            if not isinstance(value, cst.Call) or self._hands_module_function(value):
                return False
            root = value.func
            while isinstance(root, cst.Attribute):
                root = root.value
            if not isinstance(root, cst.Name):
                return False
            if root.value in scope.imports:
                continue
            if isinstance(value.func, cst.Name) and root.value in scope.classes and not self._class_reaches(root.value, info):
                continue
            if isinstance(value.func, cst.Attribute) and self._object_runs_no_module_code(root.value, info, seen | {name}):
                continue
            return False
        return True

    def _class_reaches(self, class_name: str, target: FunctionInfo) -> bool:
        """Can a method of module class `class_name` run `target`?"""
        node = self.module_scope.classes[class_name]
        return any(
            method.parent.node is node and self._reaches(method, target)
            for method in self.functions.values()
        )

    def _module_functions_named(self, name: str) -> list[FunctionInfo] | None:
        """The module functions a call of module-level `name` runs: its `def`, and what every
        other binding wraps (`step = jax.jit(step)`, `partial(step, n=2)`); None when some
        binding is anything else."""
        scope = self.module_scope
        runs = [scope.defs[name]] if name in scope.defs else []
        for value in scope.values.get(name, ()):
            wrapped = self.function_for(value, scope) if isinstance(value, cst.Call) else None
            if wrapped is None:
                return None
            runs.append(wrapped)
        return runs or None

    def _reaches(self, start: FunctionInfo, target: FunctionInfo) -> bool:
        """Does running `start` run `target` (or the function that defines it), through the
        module-local calls it makes?"""
        reached = self._reached_from(start)
        outer: FunctionInfo | None = target
        while outer is not None:
            if outer.node in reached:
                return True
            outer = self.enclosing_function(outer.parent)
        return False

    def _reached_from(self, start: FunctionInfo) -> set[cst.CSTNode]:
        """The module functions that running `start` runs (itself included); once per start."""
        cache = self.derived.setdefault("reached-from", {})
        if start.node not in cache:
            seen, work = {start.node}, [start]
            while work:
                for callee in self._callees(work.pop()):
                    if callee.node not in seen:
                        seen.add(callee.node)
                        work.append(callee)
            cache[start.node] = seen
        return cache[start.node]

    @functools.cached_property
    def constant_flags(self) -> dict[str, bool]:
        """Module-level names bound once, to True or False, and never rebound
        (`JAX_MODE = True` in code generated for several backends), and `TYPE_CHECKING`."""
        scope = self.module_scope
        flags = {}
        for name, values in scope.values.items():
            if len(values) == 1 and self.module_assignments.get(name) == ["top"] and name not in self.globals_assigned_in_functions:
                value = values[0]
                if isinstance(value, cst.Name) and value.value in ("True", "False"):
                    flags[name] = value.value == "True"
        for name, qualified in scope.imports.items():
            if qualified == "typing.TYPE_CHECKING" and name not in scope.values:
                flags[name] = False
        return flags

    def truth(self, test: cst.BaseExpression) -> bool | None:
        """The value of an `if` test built from literals and constant flags (`not JAX_MODE`,
        `if False:`), else None."""
        literal = _literal_truth(test)
        if literal is not None:
            return literal
        if isinstance(test, cst.Name):
            return self.constant_flags.get(test.value)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.truth(test.expression)
            return None if inner is None else not inner
        if isinstance(test, cst.BooleanOperation):
            left, right = self.truth(test.left), self.truth(test.right)
            decisive = isinstance(test.operator, cst.Or)  # the value that settles the operation alone
            if decisive in (left, right):
                return decisive
            return None if left is None or right is None else not decisive
        return None

    @functools.cached_property
    def eager_only(self) -> set[cst.CSTNode]:
        """Statements of a traced function after `if <tracing>: return ...` (`if
        isinstance(x, jax.core.Tracer): return default`, or a helper that tests that): they
        run only on concrete values, never inside a trace."""
        found = {statement for info in self.functions.values() if info.traced for statement in self.eager_statements(info)}
        # a lax body traced only where `verbose` is false (`while_loop(cond, step, init)` in
        # the `else` of `if verbose:`, a Python loop in its body): its own `if verbose:`
        # blocks run only in that Python loop
        for info in self.functions.values():
            flags = self.body_unless.get(info.node, set())
            if len(flags) == 1 and None not in flags:
                flag = next(iter(flags))
                found.update(
                    statement for node in _ifs_in(info.node)
                    if isinstance(node.test, cst.Name) and node.test.value == flag
                    and info.scope.lookup(flag) is info.parent.lookup(flag)  # the same `verbose`
                    for statement in node.body.body
                )
        return found

    def eager_statements(self, info: FunctionInfo) -> list[cst.CSTNode]:
        """The statements of `info` after its `if <tracing>: return` (see `eager_only`)."""
        cache = self.derived.setdefault("eager-statements", {})
        if info.node in cache:
            return cache[info.node]
        found: list[cst.CSTNode] = []
        if isinstance(info.node, cst.FunctionDef) and isinstance(info.node.body, cst.IndentedBlock):
            body = info.node.body.body
            for index, statement in enumerate(body):
                if (
                    isinstance(statement, cst.If) and statement.orelse is None and _leaves(statement.body.body)
                    and self._true_when_tracing(statement.test, info.scope)
                ):
                    found = list(body[index + 1:])
                    break
        cache[info.node] = found
        return found

    @functools.cached_property
    def _tracer_checks(self) -> set[cst.CSTNode]:
        """Helpers whose body tests for tracers (`any(isinstance(leaf, jax.core.Tracer) ...)`)."""
        return {
            info.node for info in self.functions.values()
            if any(isinstance(call, cst.Call) and _isinstance_of_tracer(self, call, info.scope) for call in info.calls)
        }

    def _true_when_tracing(self, test: cst.BaseExpression, scope: Scope) -> bool:
        """`isinstance(x, Tracer)`, a call of a helper that tests for tracers, or an `or`
        with one of them: true whenever its argument is traced."""
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
            return self._true_when_tracing(test.left, scope) or self._true_when_tracing(test.right, scope)
        if isinstance(test, cst.Call):
            if _isinstance_of_tracer(self, test, scope):
                return True
            target = self.function_for(test.func, scope)
            return target is not None and target.node in self._tracer_checks
        return False

    @functools.cached_property
    def dead_code(self) -> set[cst.CSTNode]:
        """Code that never runs: the branch (or `a if test else b` arm) a literal or constant
        flag rules out, and what follows an always-taken branch that always returns or
        raises. Nothing is reported there."""
        dead: set[cst.CSTNode] = set()
        if not self.constant_flags and not self.maybe_dead:
            return dead

        class _Blocks(Visitor):
            def visit_If(inner, node: cst.If) -> None:
                truth = self.truth(node.test)
                if truth is False:
                    dead.update(node.body.body)
                elif truth is True and node.orelse is not None:
                    dead.update([node.orelse] if isinstance(node.orelse, cst.If) else node.orelse.body.body)

            def visit_IfExp(inner, node: cst.IfExp) -> None:
                truth = self.truth(node.test)
                if truth is not None:
                    dead.add(node.orelse if truth else node.body)

            def visit_IndentedBlock(inner, node: cst.IndentedBlock) -> None:
                _after_always_leaving(node.body)

            def visit_Module(inner, node: cst.Module) -> None:
                _after_always_leaving(node.body)

        def _after_always_leaving(body) -> None:
            for index, statement in enumerate(body):
                always = isinstance(statement, cst.If) and self.truth(statement.test) is True and _leaves(statement.body.body)
                if always or _leaves([statement]):
                    dead.update(body[index + 1:])
                    return

        walk(self.module, _Blocks())
        return dead

    def lax_loop_of(self, info: FunctionInfo) -> str | None:
        """The `lax` loop (`jax.lax.fori_loop`, `scan`, ...) that `info` is the body of, if any."""
        known = self.derived.setdefault("lax-loop-of", {})
        if info.node not in known:
            known[info.node] = next((
                name for call, bodies in self.lax_body_args.items() for body in bodies
                if self.function_for(body, info.parent) is info and (name := self.qualname(call.func, info.parent)) in LAX_LOOPS
            ), None)
        return known[info.node]

    def only_unstaged(self, info: FunctionInfo | None) -> bool:
        """`info` is transformed only by vmap or grad (which trace it anew on every call,
        running what does not depend on its arguments eagerly), applied in code that is not
        itself traced; not jitted, scanned or traced by another module."""
        if info is None or info.traced_by not in _UNSTAGED:
            return False
        known = self.derived.setdefault("only-unstaged", {})
        if info.node not in known:
            outer = self.enclosing_function(info.parent)
            applied = [
                (found[0], scope) for call, scope in self.transform_calls
                if (found := self.transform_call(call, scope)) is not None
                and self.function_for(positional(call)[0], scope) is info
            ]
            applied += [
                (found[0], info.parent) for d in info.decorators if (found := self.transform_of(d.decorator, info.parent))
            ]
            known[info.node] = not (outer is not None and outer.traced) and bool(applied) and all(
                name in _UNSTAGED and not (scope.function is not None and scope.function.traced) for name, scope in applied
            )
        return known[info.node]

    @property
    def module_scope(self) -> Scope:
        return self.scopes[self.module]

    @property
    def imports_haiku(self) -> bool:
        """The module imports Haiku at its top level (whose `f.apply(params, rng, x)` takes
        a key whether or not the model draws from it)."""
        return any(q == "haiku" or q.startswith("haiku.") for q in self.module_scope.imports.values())

    @property
    def imports_pallas(self) -> bool:
        """The module imports Pallas, whose kernels write Refs in place (`o_ref.at[i].set(v)`
        stores into the buffer)."""
        return any(q.startswith("jax.experimental.pallas") for q in self.module_scope.imports.values())

    # name resolution ---------------------------------------------------------
    def qualname(self, node: cst.BaseExpression, scope: Scope, _depth: int = 0) -> str | None:
        """The qualified name `node` refers to (`jnp.sum` -> `jax.numpy.sum`), or None."""
        if _depth > 8:
            return None
        if isinstance(node, cst.Name):
            name = node.value
            owner = scope.lookup(name)
            if owner is None:
                return f"builtins.{name}" if name in BUILTIN_NAMES else None
            if name in owner.ambiguous_imports:
                return None
            if name in owner.imports and name not in owner.values:
                return self._external(owner.imports[name])
            values = owner.values.get(name)
            if values and len(values) == 1 and values[0] is not None and name not in owner.imports:
                value = values[0]
                # `rng = jax.random`: an alias of a module or function is followed.
                if isinstance(value, (cst.Name, cst.Attribute)):
                    return self.qualname(value, owner, _depth + 1)
            if name in owner.imports:
                return self._external(owner.imports[name])
            return None
        if isinstance(node, cst.Attribute):
            base = self.qualname(node.value, scope, _depth + 1)
            if base == "jax" and node.attr.value == "jax":
                return base  # `jax.jax.tree_util`: jax once re-exported itself under its own name
            return None if base is None else self._external(f"{base}.{node.attr.value}")
        return None

    def _external(self, qualified: str) -> str:
        """A project module's alias of an outside name (`util.Array` for `jnp.ndarray`), as
        that name: the project index knows what other modules bind."""
        return self.project.external(qualified) if self.project is not None else qualified

    def function_for(self, node: cst.BaseExpression, scope: Scope) -> FunctionInfo | None:
        """The module-local function an expression refers to: a name, `self.m`, a lambda, a partial."""
        if isinstance(node, cst.Lambda):
            return self.functions.get(node)
        if isinstance(node, cst.Name):
            owner = scope.lookup(node.value)
            if owner is not None:
                return owner.defs.get(node.value)
            return None
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            method = self._method_for(node.value.value, node.attr.value, scope)
            if method is not None:
                return method
            # `Model.__call__`: a function of a module-local class
            owner = scope.lookup(node.value.value)
            if owner is not None and node.value.value in owner.classes:
                class_scope = self.scopes.get(owner.classes[node.value.value])
                return class_scope.defs.get(node.attr.value) if class_scope is not None else None
        if isinstance(node, cst.Call):
            # `partial(f, ...)`, and `jax.grad(f)` / `jax.vmap(f)` inside another transformation
            name = self.qualname(node.func, scope)
            args = positional(node)
            if args and (name == "functools.partial" or name in TRACING_TRANSFORMS or name in GRAD_TRANSFORMS):
                return self.function_for(args[0], scope)
        return None

    def instance_method(self, func: cst.BaseExpression, scope: Scope) -> FunctionInfo | None:
        """`obj(...)` or `obj.m(...)` on an object of a class of this module (see
        `object_class`): its `__call__` or `m`, the class's own or inherited from a base
        class of this module (None when the object is anything else)."""
        for receiver, method in _receivers_and_methods(func):
            class_scope = self.object_class(receiver, scope)
            found = self._method_of(class_scope, method) if class_scope is not None else None
            if found is not None:
                return found
        return None

    def _method_of(self, class_scope: Scope, method: str, depth: int = 0) -> FunctionInfo | None:
        """The class's `method`, or the one its bases give it, searched left to right; a
        base that is not a class of this module ends the search (its methods are unknown)."""
        if method in class_scope.defs:
            return class_scope.defs[method]
        node, outer = class_scope.node, class_scope.parent
        if depth > 5 or not isinstance(node, cst.ClassDef) or outer is None:
            return None
        for base in node.bases:
            name = base.value.value if isinstance(base.value, cst.Name) and base.keyword is None else None
            if name == "object":
                continue
            owner = outer.lookup(name) if name is not None else None
            if owner is None or name not in owner.classes or name in owner.values:
                return None
            found = self._method_of(self.scopes[owner.classes[name]], method, depth + 1)
            if found is not None:
                return found
        return None

    def object_method_name(self, func: cst.BaseExpression, scope: Scope) -> str | None:
        """The qualified name of the method `obj(...)` or `obj.m(...)` runs when the object is
        made by a call of a named class (`self.act = Sigmoid()` with `Sigmoid` imported from
        `pkg.flows`: `pkg.flows.Sigmoid().__call__`, as the module's summary names it), for
        the project index to judge; None when the object's maker is not known."""
        for receiver, method in _receivers_and_methods(func):
            made = self.object_made(receiver, scope)
            if made is not None:
                maker = self.qualname(made[0].func, made[1])
                return f"{maker}().{method}" if maker else None
        return None

    def object_class(self, receiver: cst.BaseExpression, scope: Scope) -> Scope | None:
        """The scope of the class of this module whose object `receiver` is: `self` in the
        class's methods (never rebound), or an object `object_made` by `Cls(...)`."""
        if isinstance(receiver, cst.Name):
            class_scope = self._class_of_method(receiver.value, scope)
            owner = scope.lookup(receiver.value)
            if class_scope is not None and owner is not None and owner.function is not None and owner.function.class_name:
                return class_scope if receiver.value not in owner.values else None
        made = self.object_made(receiver, scope)
        return self._made_class(made[0], made[1]) if made is not None else None

    def object_made(self, receiver: cst.BaseExpression, scope: Scope) -> tuple[cst.Call, Scope] | None:
        """(a call that makes the object, the scope it is made in) for a name (not a
        parameter) or an attribute `self.attr` that every binding (every assignment in its
        class's methods or body) binds to a call of one same name."""
        if isinstance(receiver, cst.Name):
            owner = scope.lookup(receiver.value)
            if owner is None or (owner.function is not None and receiver.value in owner.function.params):
                return None
            made = [(value, owner) for value in owner.values.get(receiver.value, [])]
        elif isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name):
            class_scope = self._class_of_method(receiver.value.value, scope)
            made = self.attribute_values(class_scope).get(receiver.attr.value, []) if class_scope is not None else []
        else:
            return None
        makers = {dotted_name(call.func) if isinstance(call, cst.Call) else None for call, _ in made}
        return made[0] if made and len(makers) == 1 and None not in makers else None

    def _own_method(self, made: FunctionInfo | cst.BaseExpression | None, method: str, scope: Scope) -> FunctionInfo | None:
        """The class's own `method` for the object `made` is, when it is `Cls(...)` of a class
        of this module (seen from `scope`); None for anything else, or an inherited method."""
        class_scope = self._made_class(made, scope)
        return class_scope.defs.get(method) if class_scope is not None else None

    def _made_class(self, made: FunctionInfo | cst.BaseExpression | None, scope: Scope) -> Scope | None:
        """The scope of the class of this module that `made`, a call `Cls(...)` seen from
        `scope`, makes an object of (None when the name is rebound to a value)."""
        if not (isinstance(made, cst.Call) and isinstance(made.func, cst.Name)):
            return None
        owner = scope.lookup(made.func.value)
        if owner is None or made.func.value not in owner.classes or made.func.value in owner.values:
            return None
        return self.scopes.get(owner.classes[made.func.value])

    def _class_of_method(self, receiver: str, scope: Scope) -> Scope | None:
        """The class scope of the innermost enclosing method whose first parameter is
        `receiver` (`self`), from inside it or a function nested in it."""
        function_scope: Scope | None = scope
        while function_scope is not None:
            info = function_scope.function
            if function_scope.kind == "function" and info is not None and info.class_name and info.params and info.params[0] == receiver:
                return info.parent
            function_scope = function_scope.parent
        return None

    def attribute_values(self, class_scope: Scope) -> dict[str, list[tuple[cst.BaseExpression, Scope]]]:
        """Each attribute of a class's objects, with every value its methods assign it
        (`self.attr = value`) or its body binds, and the scope the value is made in."""
        cache = self.derived.setdefault("attribute-values", {})
        if class_scope.node not in cache:
            found: dict[str, list] = {name: [(v, class_scope) for v in values] for name, values in class_scope.values.items()}
            for method in class_scope.defs.values():
                if isinstance(method.node, cst.FunctionDef) and method.params:
                    for target, value in attribute_stores(method.node, {method.params[0]}, nested=False, with_values=True):
                        found.setdefault(target.attr.value, []).append((value, method.scope))
            cache[class_scope.node] = found
        return cache[class_scope.node]

    def _method_for(self, receiver: str, attr: str, scope: Scope) -> FunctionInfo | None:
        """`self.step` inside a method of class C -> C.step."""
        class_scope = self._class_of_method(receiver, scope)
        return class_scope.defs.get(attr) if class_scope is not None else None

    def nnx_managed(self, name: str, scope: Scope) -> bool:
        """`name` is a parameter of a function a `flax.nnx` transformation traces: an NNX
        object (model, optimizer, metrics) whose state changes the transformation carries
        back out (`optimizer.update(model, grads)`, `model.count.value += 1`)."""
        owner = scope.lookup(name)
        function = owner.function if owner is not None else None
        return (
            function is not None
            and name in function.params
            and function.params_traced
            and function.traced_by.startswith("flax.nnx.")
        )

    def runs_abstractly(self, scope: Scope) -> bool:
        """Code in `scope` belongs to a function only abstract evaluations trace."""
        function = self.enclosing_function(scope)
        return function is not None and function.abstract_only

    def enclosing_function(self, scope: Scope) -> FunctionInfo | None:
        current: Scope | None = scope
        while current is not None:
            if current.function is not None:
                return current.function
            current = current.parent
        return None

    def enclosing_method(self, function: FunctionInfo | None) -> FunctionInfo | None:
        """The method `function` is, or is nested in (its `parent` is the class's scope)."""
        while function is not None and not function.class_name:
            function = self.enclosing_function(function.parent)
        return function

    # tracing -------------------------------------------------------------------
    def transform_of(self, node: cst.BaseExpression, scope: Scope) -> tuple[str, StaticSpec] | None:
        """If `node` names a tracing transformation (possibly partially applied), its name and spec.

        Handles `jax.jit`, `jax.jit(static_argnums=...)` used as a decorator factory and
        `functools.partial(jax.jit, static_argnames=...)`.
        """
        name = self.qualname(node, scope)
        if name is not None and (name in TRACING_TRANSFORMS or self._is_config_decorator(name, node)):
            return name, StaticSpec()
        if isinstance(node, cst.Call):
            inner = self.qualname(node.func, scope)
            args = positional(node)
            if inner == "functools.partial" and args:
                found = self.transform_of(args[0], scope)
                if found is not None:
                    return found[0], self._static_spec(found[0], node)
            if inner in TRACING_TRANSFORMS and not args:
                return inner, self._static_spec(inner, node)
        return None

    def _is_config_decorator(self, qualified: str, node: cst.BaseExpression) -> bool:
        if not self.traced_decorators:
            return False
        dotted = dotted_name(node)
        return qualified in self.traced_decorators or (dotted in self.traced_decorators)

    def _static_spec(self, transform: str, call: cst.Call, direct: bool = False) -> StaticSpec:
        """The static spec of `call`: `transform(...)` itself when `direct`, else a decorator
        factory (`jax.jit(static_argnums=...)`) or a partial (`partial(jax.vmap, in_axes=...)`)."""
        nums_kw, names_kw = TRACING_TRANSFORMS.get(transform, (None, None))
        argnums: tuple[int, ...] = ()
        argnames: tuple[str, ...] = ()
        if nums_kw:
            value = keyword(call, nums_kw)
            argnums = (literal_ints(value) or ()) if value is not None else ()
        if names_kw:
            value = keyword(call, names_kw)
            argnames = (literal_strs(value) or ()) if value is not None else ()
        unknown: tuple[int, ...] = ()
        if transform.endswith("vmap"):
            # in_axes=None positions are passed through unbatched: concrete values.
            in_axes = keyword(call, "in_axes")
            if in_axes is None and direct and len(positional(call)) >= 2:
                in_axes = positional(call)[1]  # jax.vmap(f, (0, None))
            entries = in_axes_entries(in_axes) if in_axes is not None else None
            if isinstance(entries, list):
                argnums = tuple(i for i, entry in enumerate(entries) if entry is None)
                unknown = tuple(i for i, entry in enumerate(entries) if entry == UNKNOWN_AXIS)
        return StaticSpec(argnums, argnames, unknown)

    def _mark_root(self, info: FunctionInfo, transform: str, spec: StaticSpec, params: list[str] | None = None) -> None:
        if transform in GRAD_TRANSFORMS:
            info.differentiated = True
            return
        info.traced = True
        info.params_traced = True
        info.traced_by = info.traced_by or transform
        params = info.params if params is None else params
        info.static_params |= spec.static_params(params) | spec.unknown_params(params)

    def passed_params(self, target: FunctionInfo, node: cst.BaseExpression) -> list[str]:
        """The parameters that receive a call's arguments when `node` (which refers to
        `target`) is called: a method taken from an instance (`self.step`, `obj.step`) is
        bound, so positions given to a transform (`static_argnums`, `in_axes`) skip `self`."""
        if (
            target.class_name
            and target.params
            and (
                (isinstance(node, cst.Attribute) and not (isinstance(node.value, cst.Name) and node.value.value == target.class_name))
                or (isinstance(node, cst.Name) and target.name == "__call__")  # `obj(x)` calls `Cls.__call__(obj, x)`
            )
            and not any(dotted_name(d.decorator) == "staticmethod" for d in target.decorators)
        ):
            return target.params[1:]
        return target.params

    def _find_traced(self) -> None:
        # 1. decorators
        decorated_shard_maps = []
        for info in self.functions.values():
            for decorator in info.decorators:
                found = self.transform_of(decorator.decorator, info.parent)
                if found is None:
                    continue
                transform, spec = found
                if transform in SHARD_MAPS:
                    decorated_shard_maps.append((info, transform, spec))
                    continue  # traced only where it is called inside a trace (step 5)
                self._mark_root(info, transform, spec)
                if transform in JIT_TRANSFORMS:
                    self.jitted_names[(info.parent, info.name)] = spec
                    self.jit_decorated.add(info.node)
        # 2. call forms: jax.jit(f, ...), lax.scan(body, ...), partial(jax.jit, ...)(f)
        for call, scope in self.transform_calls:
            if call not in self.eager_transform_calls and not self._wrapper_unused(call, scope):
                self._record_transform_call(call, scope)
        # 3. what other modules of the project do with this one's functions
        if self.project is not None:
            self._mark_from_project(self.project)
        # 4. module-local functions called from, or passed to calls in, traced code
        self._propagate()
        # 5. `shard_map(f, ...)(x)` run inside traced code traces f; run eagerly, it does not
        # (nor does a function decorated with shard_map that only eager code calls)
        deferred = [d for d in self._deferred_shard_maps if self._runs_traced(d[1])]
        waiting = decorated_shard_maps
        while True:
            pending = [d for d in waiting if d[0].traced]  # called from code found traced so far
            waiting = [d for d in waiting if not d[0].traced]
            if not (deferred or pending):
                break
            for call, scope, target, transform, spec in deferred:
                self._mark_root(target, transform, spec, self.passed_params(target, positional(call)[0]))
            for info, transform, spec in pending:
                self._mark_root(info, transform, spec)
            self._propagate()
            remaining = [d for d in self._deferred_shard_maps if not d[2].traced]
            deferred = [d for d in remaining if self._runs_traced(d[1])]

    def _runs_traced(self, scope: Scope) -> bool:
        function = self.enclosing_function(scope)
        return function is not None and function.traced

    def _propagate(self) -> None:
        work = [info for info in self.functions.values() if info.traced]
        seen = set(id(info) for info in work)
        while work:
            info = work.pop()
            for callee in self._callees(info):
                if self.memoized(callee):
                    continue  # hashable arguments only, its body run once per them: no tracers
                if not callee.traced:
                    callee.traced = True
                    callee.traced_by = info.traced_by
                if id(callee) not in seen:
                    seen.add(id(callee))
                    work.append(callee)

    def named_function(self, name: str) -> FunctionInfo | None:
        """A module-level function (`f`) or a method of a module-level class (`Cls.m`)."""
        scope = self.module_scope
        *owner, last = name.split(".")
        if owner:
            if len(owner) != 1 or owner[0] not in scope.classes:
                return None
            scope = self.scopes.get(scope.classes[owner[0]])
            if scope is None:
                return None
        return scope.defs.get(last)

    def _mark_from_project(self, project) -> None:
        """Functions another module traces (`jax.jit(f)` in runner.py for `f` here), reaches
        from traced code, or differentiates."""
        for name, transform, argnums, argnames in project.roots:
            info = self.named_function(name)
            if info is not None:
                self._mark_root(info, transform, StaticSpec(tuple(argnums), tuple(argnames)), info.params[1:] if info.class_name else None)
        for name, transform in project.reached:
            info = self.named_function(name)
            if info is not None and not info.traced:
                info.traced, info.traced_by = True, transform
        for name in project.differentiated:
            info = self.named_function(name)
            if info is not None:
                info.differentiated = True
        for name in project.x64_functions:
            info = self.named_function(name)
            if info is not None:
                info.runs_with_x64 = True

    def _callees(self, info: FunctionInfo) -> list[FunctionInfo]:
        """Module-local functions that run when `info` runs: called from it, or passed to a
        library call that applies them (tree_map...). An abstract evaluation inside it
        (`jax.eval_shape(g, x)`) traces `g` without running it: not followed here."""
        reached: list[FunctionInfo] = []
        eager = self.eager_statements(info)
        eager_calls = _calls_in(eager) if eager else ()
        for call in info.calls:
            if self.is_abstract_trace(call, info.scope) or call in eager_calls:
                continue  # traced without running it; or called only on concrete values
            callee = self.function_for(call.func, info.scope)
            if callee is not None:
                reached.append(callee)
            if not self._calls_its_function_arguments(call, info.scope):
                continue
            # functions passed to tree_map and the like are called at trace time too
            for arg in call.args:
                if isinstance(arg.value, (cst.Name, cst.Attribute, cst.Call, cst.Lambda)):
                    passed = self.function_for(arg.value, info.scope)
                    if passed is not None:
                        reached.append(passed)
        return reached

    def is_abstract_trace(self, call: cst.Call, scope: Scope) -> bool:
        """`jax.eval_shape(f, x)`, `jax.make_jaxpr(f)(x)`, `jax.jit(f).lower(x)` and helpers
        named for them: `f` is traced with abstract values and never run (ABSTRACT_TRACES)."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ABSTRACT_METHODS and call.args:
            return True  # `str.lower()` takes no argument
        if isinstance(func, cst.Call):  # make_jaxpr(f)(x): the transformation is the inner call
            func = func.func
        name = self.qualname(func, scope) or dotted_name(func)
        return name is not None and names_abstract_trace(name)

    def _find_abstract_only(self) -> None:
        """Mark the traced functions that only abstract evaluations reach (`abstract_only`).

        A function traced by a real transformation (a decorator, `jax.jit(f)`, a lax body)
        runs; so does everything it reaches. A marking made inside an abstract-only function
        (`lax.scan(body, ...)` in a function given to `eval_shape`) is abstract too, so the
        set is refined until it no longer changes.
        """
        traced = [info for info in self.functions.values() if info.traced]
        if not traced:
            return
        marks: list[tuple[FunctionInfo, Scope | None, bool]] = []  # (function, where, abstract?)
        for info in self.functions.values():
            for decorator in info.decorators:
                found = self.transform_of(decorator.decorator, info.parent)
                if found is not None and found[0] not in GRAD_TRANSFORMS:
                    marks.append((info, None, found[0] in ABSTRACT_TRACES))
        for call, scope in self.transform_calls:
            abstract = self.is_abstract_trace(call, scope) or self.qualname(call.func, scope) in ABSTRACT_TRACES
            marks.extend((target, scope, abstract) for target in self._marked_by(call, scope))
        if self.project is not None:  # traced by other modules of the project
            for name, transform in [(r[0], r[1]) for r in self.project.roots] + list(self.project.reached):
                info = self.named_function(name)
                if info is not None:
                    marks.append((info, None, transform in ABSTRACT_TRACES))
        abstract_only: set[cst.CSTNode] = set()
        while True:
            work = [
                info
                for info, where, abstract in marks
                if not abstract and not (where is not None and self._within(where, abstract_only))
            ]
            runs = {id(info) for info in work}
            while work:
                for callee in self._callees(work.pop()):
                    if id(callee) not in runs:
                        runs.add(id(callee))
                        work.append(callee)
            found = {info.node for info in traced if id(info) not in runs}
            if found == abstract_only:
                break
            abstract_only = found
        for node in abstract_only:
            self.functions[node].abstract_only = True

    def _marked_by(self, call: cst.Call, scope: Scope) -> list[FunctionInfo]:
        """The functions a transformation call made traced (see `_record_transform_call`)."""
        if call in self.lax_body_args:
            bodies = [self.function_for(body, scope) for body in self.lax_body_args[call]]
            return [info for info in bodies if info is not None]
        args = positional(call)
        if not args or (self.qualname(call.func, scope) not in REF_KERNEL_TAKERS and self.transform_call(call, scope) is None):
            return []
        target = self.function_for(args[0], scope)
        return [target] if target is not None else []

    def _within(self, scope: Scope, functions: set[cst.CSTNode]) -> bool:
        function = self.enclosing_function(scope)
        while function is not None:
            if function.node in functions:
                return True
            function = self.enclosing_function(function.parent)
        return False

    def _calls_its_function_arguments(self, call: cst.Call, scope: Scope) -> bool:
        """A library call that applies the functions it is given while tracing (tree_map, ...).

        Host callbacks run later with concrete values; a partial is followed where it is
        passed; other objects' methods may store the function for a callback, so they are
        not followed (precision over recall).
        """
        name = self.qualname(call.func, scope) or ""
        if is_host_callback(name):
            return False
        return name.startswith(FUNCTION_APPLYING_PREFIXES) or name in FUNCTION_APPLYING_BUILTINS

    def _wrapper_unused(self, call: cst.Call, scope: Scope) -> bool:
        """`fast = jax.jit(rollout)` bound to a function's local that nothing reads (its call
        commented out): the wrapper never runs, so it traces nothing. (A top-level name may
        be used by code that imports the module, a notebook or a test: it is kept.)"""
        if scope.kind != "function":
            return False
        names = [name for name, values in scope.values.items() if any(value is call for value in values)]
        if not names or any(name in scope.declared_global or name in scope.declared_nonlocal for name in names):
            return False
        return not any(name in self.names_read for name in names)

    def _record_transform_call(self, call: cst.Call, scope: Scope) -> None:
        name = self.qualname(call.func, scope)
        args = positional(call)
        if name in REF_KERNEL_TAKERS:
            target = args[0] if args else None
            owner = scope.lookup(target.value) if isinstance(target, cst.Name) else None
            if owner is not None and target.value not in owner.defs and len(values := owner.values.get(target.value) or []) == 1:
                target = values[0]  # `kernel = functools.partial(body, ...)`, then `pallas_call(kernel, ...)`
            kernel = self.function_for(target, scope) if target is not None else None
            if kernel is not None:
                kernel.ref_params = True
                kernel.traced = True
                kernel.traced_by = kernel.traced_by or name
            return
        if name in LAX_BODIES:
            bodies: list[cst.BaseExpression] = []
            for index, kw in LAX_BODIES[name]:
                value = argument(call, index, kw)
                if isinstance(value, (cst.List, cst.Tuple)):  # lax.switch branches
                    bodies.extend(e.value for e in value.elements)
                elif value is not None:
                    bodies.append(value)
            self.lax_body_args[call] = bodies
            for body in bodies:
                info = self.function_for(body, scope)
                if info is not None:
                    self._mark_root(info, name, StaticSpec())
                    self.body_unless.setdefault(info.node, set()).add(self.call_unless.get(call))
            return
        found = self.transform_call(call, scope)
        if found is None:
            return
        transform, spec = found
        target = self.function_for(args[0], scope)
        if target is not None and transform in SHARD_MAPS and call in self.invoked:
            self._deferred_shard_maps.append((call, scope, target, transform, spec))
            return  # decided once it is known whether this call runs inside a trace
        if target is not None:
            self._mark_root(target, transform, spec, self.passed_params(target, args[0]))
        if transform in JIT_TRANSFORMS or transform == "jax.make_jaxpr":
            self.jit_calls[call] = spec

    def set_before_first_call(self, name: str, info: FunctionInfo) -> bool:
        """`info` is a def inside a function that alone sets global `name`, before its first
        call of `info`, and `info` does not leave it (returned, stored, handed on): each call
        of the outer function makes a new `info`, with its own compile cache, that sees the
        value set on that call (a `train()` that builds its optimizer, then its jitted step)."""
        outer = info.parent.function if info.parent.kind == "function" else None
        if outer is None or not isinstance(info.node, cst.FunctionDef) or name not in outer.scope.declared_global:
            return False
        if any(scope is not outer.scope for scope, _ in self.global_settings.get(name, [])):
            return False  # another function sets it too: it may run between two calls
        first_call = last_set = None
        for index, statement in enumerate(outer.node.body.body):
            if statement is info.node:
                continue
            nodes = descendants(statement)
            called = {id(node.func) for node in nodes if isinstance(node, cst.Call)}
            for node in nodes:
                if isinstance(node, cst.Name) and node.value == info.name:
                    if id(node) not in called:
                        return False  # the function leaves: it may be called after a later set
                    first_call = index if first_call is None else first_call
            targets = [t.target for t in nodes if isinstance(t, cst.AssignTarget)]
            targets += [t.target for t in nodes if isinstance(t, (cst.AugAssign, cst.AnnAssign))]
            if any(n.value == name for target in targets for n in target_name_nodes(target)):
                last_set = index
        return first_call is not None and last_set is not None and last_set < first_call

    def traced_afresh(self, info: FunctionInfo) -> bool:
        """A lambda compiled and called in one expression (`jax.jit(lambda: f(x))()`): each
        run of that line makes a new function and traces it again, so it reads what its
        outer names hold at that time; no compiled code of it is ever reused."""
        if not isinstance(info.node, cst.Lambda):
            return False
        return any(
            call in self.invoked and positional(call)[:1] and positional(call)[0] is info.node
            for call in self.jit_calls
        )

    def transform_call(self, call: cst.Call, scope: Scope) -> tuple[str, StaticSpec] | None:
        """`jax.jit(f, static_argnums=...)`, `partial(jax.jit, ...)(f)`, `jax.jit(static_argnums=...)(f)`:
        the transformation applied to the call's first argument, and its static spec."""
        if not positional(call):
            return None
        name = self.qualname(call.func, scope)
        if name in TRACING_TRANSFORMS or name in GRAD_TRANSFORMS:
            return name, self._static_spec(name, call, direct=True)
        return self.transform_of(call.func, scope)

    def jitted_spec(self, func: cst.BaseExpression, scope: Scope) -> StaticSpec | None:
        """If calling `func` calls a compiled function, its static spec."""
        if not self.jit_calls and not self.jitted_names:
            return None
        if isinstance(func, cst.Call) and func in self.jit_calls:
            return self.jit_calls[func]
        if isinstance(func, cst.Name):
            owner = scope.lookup(func.value)
            if owner is None:
                return None
            spec = self.jitted_names.get((owner, func.value))
            if spec is not None:
                return spec
            values = owner.values.get(func.value)
            if values and values[-1] is not None and isinstance(values[-1], cst.Call):
                found = self.jit_calls.get(values[-1])
                wrapped = positional(values[-1])
                if found is not None and func.value in owner.defs and not (wrapped and isinstance(wrapped[0], cst.Name) and wrapped[0].value == func.value):
                    return None  # also a plain `def` of that name (a notebook's later cell): which one is called is not known
                return found
        return None
