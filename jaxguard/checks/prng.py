"""JG601-JG604: PRNG keys must be split, never reused (sharp bits: "Random Numbers").

One key-flow analysis per function body (and the module body) walks statements in order,
path by path: a key is consumed by a `jax.random` sampler, by `split`, or by being passed
to another function; rebinding the name gives a fresh key. `fold_in` derives a new key
without consuming the old one, and `clone` (or a helper of that name) copies it on purpose.
Passing a key is not consuming it when the call only traces abstractly (`eval_shape`,
`make_jaxpr`, `.lower(...)`), or when the callee is a function of the module that never
consumes that parameter (it ignores it, or first re-derives it with `fold_in`): the same
flow, run on the callee, says so. Bodies that only abstract evaluations trace draw nothing.
A key given to a Haiku `apply` or a side stream of a Flax `init` may draw nothing (the
model may have no stochastic layer): such a use is never paired with another; nor is a key
given to a project function of another module that only hands it to such an `apply` (the
index's MAYBE). Only one arm of `a if c else b` runs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import libcst as cst

from jaxguard.checks._common import descendants, is_docstring, names_in, one_line
from jaxguard.lint.facts import (
    ModuleFacts,
    Scope,
    all_params,
    argument,
    assigned_names,
    call_tail,
    compared_with_none,
    literal_int,
    literal_str,
    positional,
    target_name_nodes,
)
from jaxguard.lint.jaxapi import (
    KEY_APPLYING,
    KEY_LOOKING,
    KEY_MAKERS,
    KEY_NEUTRAL_PREFIXES,
    KEY_PARAM,
    LAX_CARRIES,
    NOT_CONSUMING,
    REORDERINGS,
    SHAPE_ATTRIBUTES,
    TREE_MAPS,
    is_reordering,
)
from jaxguard.lint.notebook import starts_cell
from jaxguard.lint.registry import Rule, register
from jaxguard.lint.summary import DRAWS, IGNORES, MAYBE
from jaxguard.lint.walk import Visitor, walk

KEY_SOURCES = KEY_MAKERS | {
    "jax.random.split", "jax.random.fold_in", "jax.random.clone", "jax.random.wrap_key_data",
}

# How a function uses a key parameter (see `Use`): only as a maybe-draw (handed to a model's
# apply), or as a draw (also one handed on to code that is not read: the function is read,
# and it passes the key on to be used).
DRAWN = "drawn"  # (MAYBE: the summary's, one meaning in the module and across the project)
# handed only to code whose behaviour is not read (another library): as the project index's
# UNKNOWN, a possible draw for the caller, paired only with a proven one
POSSIBLE = "possible"
_USE_STRENGTH = {None: 0, MAYBE: 1, POSSIBLE: 2, DRAWN: 3}


@dataclass
class Use:
    key: str  # "key" or "keys[0]"
    node: cst.CSTNode
    consumer: str
    is_split: bool
    statement: cst.CSTNode | None
    # handed to a Haiku `apply` (which draws from it only if the model has stochastic
    # layers) or to a side stream of a Flax `init`: a possible consumption, never
    # reported as a reuse either way
    maybe: bool = False
    # handed to code whose behaviour is not read (another library, an object's method): it
    # may draw; reported only beside a proven draw of the same key, never beside another
    # possible one
    possible: bool = False
    # the tests known to hold, and how, on the path where it was used (see `_State.holds`)
    under: tuple = ()
    cell: int = 0  # the notebook cell it is in (0 outside notebooks)
    # it only reorders (`permutation`, `shuffle`, or a function of this module that only
    # does): one key for two reorderings permutes paired arrays alike, on purpose
    reorders: bool = False


@dataclass
class Finding:
    code: str
    use: Use
    previous: Use | None = None
    note: str = ""  # a message of its own (fold_in and split handing out the same key)


@dataclass
class _State:
    consumed: dict[str, Use] = field(default_factory=dict)
    rebound: set[str] = field(default_factory=set)  # parameters given a new value on every path
    # key -> literal indices it was folded with: `fold_in(k, i)` is `split(k, n)[i]` for i < n
    folded: dict[str, set[int]] = field(default_factory=dict)
    # the `if` tests known on this path, with their truth: of the `if`s it is in, and of those
    # whose other arm returned before it (`if not bootstrap: ... return`)
    holds: tuple = ()

    def copy(self) -> _State:
        return _State(dict(self.consumed), set(self.rebound), {k: set(v) for k, v in self.folded.items()}, self.holds)

    def merge(self, other: _State) -> None:
        for key, use in other.consumed.items():
            mine = self.consumed.get(key)
            if mine is None or len(use.under) < len(mine.under):
                self.consumed[key] = use  # the use on the path with fewer conditions stands for both
        self.rebound &= other.rebound
        for key, indices in other.folded.items():
            self.folded.setdefault(key, set()).update(indices)
        self.holds = tuple(held for held in self.holds if any(held[0] is t and held[1] == b for t, b in other.holds))


class _Terminated(Exception):
    """Raised inside a branch walk when the branch returns/raises: its state does not flow on."""


class KeyFlow:
    def __init__(
        self, facts: ModuleFacts, scope: Scope, body, loop_body_of: str | None = None, key_param: str | None = None,
        given: frozenset = frozenset(),
    ) -> None:
        """`key_param`: analyse the body for whether it consumes that parameter, which a
        caller passes a key to (see `consumes_param`); `given`: the values the caller passes
        for parameters the body tests, so that `if p is None:` is taken as false and `if
        split == "train":` is worked out for a literal (see `_given_params`)."""
        self.facts = facts
        self.scope = scope
        self.given = given
        self.findings: list[Finding] = []
        self.keys: set[str] = set()
        self.loop_depth_keys: list[set[str]] = []  # names rebound inside each enclosing loop
        self.loop_body_of = loop_body_of
        function = scope.function
        if function is not None:
            # a parameter named like a key is one only if it is used as a key here
            # (`key` is just as often a dict key or a cache key)
            used_as_keys = self._random_key_names([*function.calls, *_lambda_calls(facts, function)])
            self.keys.update(
                p for p in function.params if KEY_PARAM.match(p) and p in used_as_keys and not function.annotated_not_a_key(p)
            )
        self.key_param = key_param
        # how the value `key_param` arrived with is used: None (not at all), MAYBE, POSSIBLE or DRAWN
        self.param_use: str | None = None
        if key_param is not None:
            self.keys.add(key_param)
        self.statement: cst.CSTNode | None = None
        self.earlier: list[cst.CSTNode] = []  # the statements before `statement` in its block
        self.cell = 0  # the notebook cell being walked
        self._walk(body, _State())

    @functools.cached_property
    def _flag_names(self) -> tuple[set[str], set[str]]:
        """(names, `self.` attributes) whose truth holds for the whole call once they are
        bound (`bootstrap`, `self.return_trace`, `name = config.name.lower()`): parameters the
        body never assigns, and locals one plain statement of the body binds, outside loops
        and branches; worked out at the first `if` judged."""
        function = self.scope.function
        if function is None:
            return set(), set()
        body = function.node.body
        bound_once = {
            target.target.value
            for statement in _block(body) if isinstance(statement, cst.SimpleStatementLine)
            for small in statement.body if isinstance(small, cst.Assign)
            for target in small.targets if isinstance(target.target, cst.Name)
        }
        bound_once = {name for name in bound_once if len(self.scope.values.get(name, ())) == 1}
        flags = (set(function.params) - assigned_names(body)) | (bound_once - set(function.params))
        return flags, {a for a in _assigned_attributes(body) if a.startswith("self.")}

    def _random_key_names(self, calls) -> set[str]:
        """Names used as keys here: given to `jax.random`, or to a function of this module
        that consumes the parameter they bind."""
        names = set()
        for call in calls:
            if (self.facts.qualname(call.func, self.scope) or "").startswith("jax.random."):
                arg = _key_argument(call)
                if isinstance(arg, cst.Name):
                    names.add(arg.value)
        names.update(_keys_for_callees(self.facts, calls, self.scope))
        return names

    # statements ------------------------------------------------------------------
    def _walk(self, statements, state: _State) -> _State:
        statements = list(statements)
        for index, statement in enumerate(statements):
            self.earlier = statements[:index]
            self.cell = self.cell + starts_cell(statement) if self.facts.is_notebook else 0
            state = self._statement(statement, state)
            if state is None:
                return None  # type: ignore[return-value]
        return state

    def _statement(self, statement, state: _State) -> _State | None:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            self.statement = statement
            for small in statement.body:
                state = self._small(small, state)
                if state is None:
                    return None
            return state
        self.statement = statement
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return state
        if isinstance(statement, cst.If):
            self._expression(statement.test, state)
            truth = self.facts.truth(statement.test)  # `if False:` never runs its body
            if truth is None and self.given:
                truth = _given_truth(statement.test, self.given)
            then = state.copy()
            then.holds += ((statement.test, True),)
            then = self._walk(_block(statement.body), then) if truth is not False else None
            other = state.copy()
            other.holds += ((statement.test, False),)
            if statement.orelse is not None and truth is not True:
                orelse = statement.orelse
                other = self._statement(orelse, other) if isinstance(orelse, cst.If) else self._walk(_block(orelse.body), other)
            elif truth is True:
                other = None
            return _join(then, other)
        if isinstance(statement, (cst.For, cst.While)):
            if isinstance(statement, cst.For):
                self._expression(statement.iter, state)
            else:
                self._expression(statement.test, state)
            return self._loop(statement, state)
        if isinstance(statement, cst.With):
            for item in statement.items:
                self._expression(item.item, state)
            return self._walk(_block(statement.body), state)
        if isinstance(statement, cst.Try):
            body = self._walk(_block(statement.body), state.copy())
            result = body
            for handler in statement.handlers:
                result = _join(result, self._walk(_block(handler.body), state.copy()))
            if statement.orelse is not None and body is not None:
                result = _join(result, self._walk(_block(statement.orelse.body), body.copy()))
            if statement.finalbody is not None:
                result = self._walk(_block(statement.finalbody.body), result or state.copy())
            return result
        return state

    def _flag(self, test: cst.BaseExpression) -> str | None:
        """A test whose truth holds for the whole call: a flag (`bootstrap`, `self.trace`), or
        a flag compared with a literal (`mode == "uniform"`, as `mode=='uniform'`)."""
        if (
            isinstance(test, cst.Comparison) and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.Equal)
            and isinstance(test.comparisons[0].comparator, (cst.SimpleString, cst.Integer))
        ):
            flag = self._flag(test.left)
            literal = test.comparisons[0].comparator.evaluated_value  # `"a"` and `'a'` alike
            return f"{flag}=={literal!r}" if flag is not None and "==" not in flag else None
        params, assigned_attributes = self._flag_names
        if isinstance(test, cst.Name):
            return test.value if test.value in params else None
        if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == "self":
            name = f"self.{test.attr.value}"
            return name if name not in assigned_attributes else None
        return None

    def _flags_if(self, test: cst.BaseExpression, truth: bool) -> dict[str, bool]:
        """The flags a test being `truth` settles: `flag`, `not flag`, and `a and b` when true
        (`a or b` when false)."""
        if (flag := self._flag(test)) is not None:
            return {flag: truth}
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._flags_if(test.expression, not truth)
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And if truth else cst.Or):
            return {**self._flags_if(test.left, truth), **self._flags_if(test.right, truth)}
        return {}

    def _truth(self, test: cst.BaseExpression, known: dict[str, bool]) -> bool | None:
        """The test's truth from the flags known (None: not settled by them)."""
        if (flag := self._flag(test)) is not None:
            if flag in known:
                return known[flag]
            name, equals, _ = flag.partition("==")
            # `mode == "gaussian"` is false where `mode == "uniform"` holds
            return False if equals and any(k.startswith(name + "==") and v for k, v in known.items()) else None
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self._truth(test.expression, known)
            return None if inner is None else not inner
        if isinstance(test, cst.BooleanOperation):
            left, right = self._truth(test.left, known), self._truth(test.right, known)
            stop = isinstance(test.operator, cst.Or)  # the value that settles the whole
            if stop in (left, right):
                return stop
            return None if None in (left, right) else not stop
        return None

    def _ruled_out(self, previous: Use, state: _State) -> bool:
        """`previous` was used under tests this path contradicts: `if self.trace or self.diag:`
        (a draw) and then, after `if self.trace: return` and `if self.diag: return`, here."""
        known: dict[str, bool] = {}
        for test, truth in state.holds:
            known.update(self._flags_if(test, truth))
        return any(self._truth(test, known) == (not truth) for test, truth in previous.under)

    def _loop(self, statement, state: _State) -> _State:
        rebound = assigned_names(statement.body) | {a for a in _assigned_attributes(statement.body) if a.startswith("self.")}
        if isinstance(statement, cst.For):
            targets = _names_in(statement.target)
            rebound |= targets
            iterates_keys = self._is_key_source(statement.iter) or (
                isinstance(statement.iter, cst.Name) and statement.iter.value in self.keys
            )
            if iterates_keys:
                self.keys |= targets
            for name in targets:
                _forget(state, name)
        self.loop_depth_keys.append(rebound)
        body_state = self._walk(_block(statement.body), state.copy())
        self.loop_depth_keys.pop()
        if isinstance(statement, cst.For) and body_state is not None:
            # a key the body rebinds on every pass is new after the loop: a reuse of the old
            # one there needs the loop to run zero times (`for step in range(n)`), a guess
            for name in _rebound_every_pass(statement.body):
                _forget(state, name)
        after = _join(state, body_state)
        return after if after is not None else state

    def _small(self, small, state: _State) -> _State | None:
        if isinstance(small, (cst.Return, cst.Raise)):
            if getattr(small, "value", None) is not None:
                self._expression(small.value, state)
            elif isinstance(small, cst.Raise) and small.exc is not None:
                self._expression(small.exc, state)
            return None
        if isinstance(small, (cst.Continue, cst.Break)):
            return None
        if isinstance(small, cst.Assign):
            self._expression(small.value, state)
            self._stored(small.value, [t.target for t in small.targets], state)
            source = self._is_key_source(small.value)
            handed_back = self._handed_back(small.value)  # read before the names are rebound
            for target in small.targets:
                for name in _names_in(target.target) | _self_attributes(target.target):
                    _forget(state, name)
                    if source:
                        self.keys.add(name)
                    else:
                        self.keys.discard(name)
                for bound in _bound_at(target.target, handed_back):
                    state.consumed[bound] = Use(bound, small.value, handed_back[0][1], False, self.statement)
                    self.keys.add(bound)
            return state
        if isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            if small.value is not None:
                self._expression(small.value, state)
            for name in _names_in(small.target) | _self_attributes(small.target):
                _forget(state, name)
            return state
        if isinstance(small, cst.Expr):
            self._expression(small.value, state)
        return state

    # expressions ---------------------------------------------------------------------
    def _is_key_source(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call):
            if self.facts.qualname(node.func, self.scope) in KEY_SOURCES:
                return True
            # a helper named `clone` copies a key only when given one (`nnx.clone(critic)` copies a module)
            copied = positional(node)
            return _is_clone(node.func) and bool(copied) and self._key_id(copied[0], known_only=True) is not None
        if isinstance(node, cst.Subscript):
            return self._is_key_source(node.value) or (
                isinstance(node.value, cst.Name) and node.value.value in self.keys
            )
        return False

    def _key_id(self, node: cst.BaseExpression, known_only: bool) -> str | None:
        if isinstance(node, cst.Name):
            if node.value in self.keys or not known_only:
                return node.value
            return None
        if (
            isinstance(node, cst.Attribute)
            and isinstance(node.value, cst.Name)
            and node.value.value == "self"
            and KEY_PARAM.match(node.attr.value)
            and self._held(node.attr.value)
        ):
            ident = f"self.{node.attr.value}"  # a key held by the object: `normal(self.key)`
            return ident if ident in self.keys or not known_only else None
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and literal_int(index.value) is not None and node.value.value in self.keys:
                return f"{node.value.value}[{literal_int(index.value)}]"
        return None

    def _held(self, attribute: str) -> bool:
        """`self.<attribute>` is a value the object holds: its class (or a base class of this
        module) stores it (`self.key = ...` in a method) or declares it (`key: jax.Array`),
        or no base from elsewhere could provide it. Such a base may make it a property that
        splits a fresh key on every access (`rng_key`); so may the class itself."""
        method = self.facts.enclosing_method(self.scope.function)
        if method is None:
            return True
        cache = self.facts.derived.setdefault("held-attributes", {})
        found = cache.get(method.parent.node)
        if found is None:
            found = cache[method.parent.node] = _held_by(self.facts, method.parent)
        stored, methods, external = found
        return attribute not in methods and (attribute in stored or not external)

    def _expression(self, node: cst.BaseExpression, state: _State, shadowed: frozenset[str] = frozenset()) -> None:
        for item, inner in _calls_in_evaluation_order(node, self._choice_tables(node)):
            alternatives = self._alternatives(item)
            if alternatives is None:
                self._call(item, state, shadowed | inner)
                continue
            test, arms = alternatives
            if test is not None:
                self._expression(test, state, shadowed | inner)
            joined = None
            for arm in arms:
                branch = state.copy()
                self._expression(arm, branch, shadowed | inner)
                joined = _join(joined, branch)
            state.consumed, state.rebound = joined.consumed, joined.rebound

    def _transformed_random(self, func: cst.BaseExpression) -> str | None:
        """`jax.vmap(jax.random.fold_in, in_axes=(0, None))` called: the `jax.random` function
        inside a vmap or jit, which takes the same arguments and means the same for the key."""
        if not (isinstance(func, cst.Call) and func.args and not func.args[0].star):
            return None
        if self.facts.qualname(func.func, self.scope) not in ("jax.vmap", "jax.jit", "jax.pmap", "equinox.filter_vmap", "equinox.filter_jit"):
            return None
        inner = self.facts.qualname(func.args[0].value, self.scope)
        return inner if inner is not None and inner.startswith("jax.random.") else None

    def _choice_tables(self, node: cst.BaseExpression) -> frozenset[int]:
        """`node` as a dict display of which one value is used: the value of `inits = {...}`
        when the scope reads `inits` once, by a subscript (`w = inits[kind]`). (A display
        subscripted where it stands, `{...}[kind]`, the call collector sees itself.)"""
        statement = self.statement
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
        if not (
            _table_display(node) and isinstance(small, cst.Assign) and small.value is node
            and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
        ):
            return frozenset()
        name = small.targets[0].target.value
        reads, looked_up = [], set()
        for inner in descendants(self.scope.node):
            if isinstance(inner, cst.Name) and inner.value == name and inner in self.facts.loads:
                reads.append(inner)
            elif isinstance(inner, cst.Subscript) and isinstance(inner.value, cst.Name) and inner.value.value == name:
                looked_up.add(id(inner.value))
        return frozenset({id(node)}) if len(reads) == 1 and id(reads[0]) in looked_up else frozenset()

    def _alternatives(self, item) -> tuple[cst.BaseExpression | None, list[cst.BaseExpression]] | None:
        """(test, the arms that may run) of `a if c else b` (a literal or constant test rules
        one out), of `jnp.where(c, a, b)` / `lax.select(c, a, b)` / `jnp.select(cs, [a, b])`, and of a table of choices
        (no test: one value of `{"a": f(key), "b": g(key)}[kind]` is used); None for other calls."""
        if isinstance(item, cst.Dict):
            return None, [element.value for element in item.elements if isinstance(element, cst.DictElement)]
        if isinstance(item, cst.IfExp):
            truth = self.facts.truth(item.test)
            return item.test, [arm for arm, runs in ((item.body, truth is not False), (item.orelse, truth is not True)) if runs]
        return _selects(item)

    def _call(self, call: cst.Call, state: _State, shadowed: frozenset[str] = frozenset()) -> None:
        name = self.facts.qualname(call.func, self.scope) or self._transformed_random(call.func)
        if name in TREE_MAPS and call.args and isinstance(call.args[0].value, cst.Lambda):
            self._mapped_lambda(call.args[0].value, name, shadowed)
        if name == "jax.random.fold_in":
            self._fold(call, state, shadowed)
        if name in NOT_CONSUMING or _is_clone(call.func):
            return
        if name is not None and name.startswith("jax.random."):
            arg = _key_argument(call)
            key = self._key_id(arg, known_only=False) if arg is not None else None
            if key is not None and key.split("[")[0] not in shadowed:
                split = name == "jax.random.split"
                if split and (self._split_unread(call) or self._only_shape_used(call, drawn=True) or self._split_keys_ignored(call)):
                    # `_, sub = split(key)` and neither is read, read only by an abstract
                    # evaluation (`jax.jit(step).lower(keys, ...)`), or only by functions
                    # shown to ignore their key: nothing is drawn
                    return
                self._consume(
                    key, call, name, split, state,
                    maybe=not split and (self._only_shape_used(call, drawn=True) or self._thrown_away(call)),
                    reorders=_is_reordering(name, call),
                )
                if shadowed and not self.key_param and not _is_reordering(name, call):
                    # (one permutation for each of several arrays keeps paired data aligned)
                    # in a comprehension's element: every element draws from the same key
                    use = Use(key, call, name, False, self.statement)
                    self.findings.append(Finding("JG603", use, None, _same_every_element(key)))
            return
        if name is not None and name.startswith(KEY_NEUTRAL_PREFIXES):
            return
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("shape", "dtype", "astype"):
            return
        if self.facts.is_abstract_trace(call, self.scope):
            return  # eval_shape / make_jaxpr / .lower(): traced with abstract values, nothing drawn
        for key, drawn in self._captured_draws(call.func):
            if key.split("[")[0] not in shadowed:
                # `draw = lambda: normal(key)` then `draw()`: calling it draws from the key it closes over
                self._consume(key, call, f"{self._describe(call)} (which draws from it with {drawn})", False, state)
        found = [(k, arg, node) for arg in call.args for k, node in self._passed_keys(arg.value)]
        found = [(k, arg, node) for k, arg, node in found if k.split("[")[0] not in shadowed]
        carried: dict[int, str | None] = {}  # how a loop body of the module uses each key it carries
        if name in LAX_CARRIES:
            # a key carried through a loop whose body never draws from its slot of the carry
            carried = {id(node): self._carried_use(call, name, arg, node) for _, arg, node in found}
            found = [(k, arg, node) for k, arg, node in found if carried[id(node)] is not None]
        if not found:
            return
        consumer = self._describe(call)
        if KEY_LOOKING.match(consumer.rsplit(".", 1)[-1]):
            return  # `is_prng_key(key)`, `check_key(key)`: looking is not drawing
        callee = self.facts.function_for(call.func, self.scope) or self.facts.instance_method(call.func, self.scope)
        # a method of an object of a project class is judged by the index, by that method's name
        project_name = (name or self.facts.object_method_name(call.func, self.scope)) if callee is None else None
        stores = _stores(call, name) or _makes_train_state(self.facts, call.func, self.scope)
        if callee is None and stores and not (self.facts.project and self.facts.project.callee(project_name)):
            return  # a constructor, `replace`, a container or a logger keeps the key: no draw
        haiku_apply = self._is_haiku_apply(call.func)
        side_streams = _init_side_streams(call, {id(node) for _, _, node in found}, self.statement)
        for key, arg, node in found:
            inside = node is not arg.value  # an item of a container passed whole: `arrays=(x, key)`
            param = _receiving_param(self.facts, callee, call, arg) if callee is not None and not inside else None
            if callee is not None and isinstance(callee.node, cst.Lambda) and not inside and _lambda_only_folds(self.facts, callee, call, arg):
                continue  # `vmap(lambda k: fold_in(k, i))(keys)`: a new key per value, nothing drawn
            how = param_use(self.facts, callee, param, _given_params(self.facts, callee, call)) if param is not None else None
            if param is not None and how is None:
                continue  # the callee ignores it, or re-derives it with fold_in
            verdict = project_key_verdict(self.facts, project_name or name, call, arg) if callee is None or inside else None
            if verdict == IGNORES:
                continue  # a project function that never draws from the key, or never opens its container
            if inside:
                verdict = None  # the container's verdict is no draw of this item
            # A draw is proven by this module's own function, the project index, or a known
            # sampling API; a key handed to anything else (a constructor, a logger, a library
            # whose code is not read) may or may not be drawn from: a possible draw, never
            # paired with another use.
            # (a function of this module is judged by what its body does with the key: a
            # helper that only hands it to a model's apply is itself a maybe-draw)
            # (a function of this module whose parameter receiving the key cannot be read, a
            # `**kwargs` it reads or a `*args`, is not proven to draw either)
            unread = param is None and callee is not None and not inside and isinstance(callee.node, cst.FunctionDef)
            proven = (
                (callee is not None and not unread and how != POSSIBLE) or verdict == DRAWS or _samples(call)
                or carried.get(id(node)) == DRAWN  # a loop body of the module draws it
            )
            maybe = (
                (haiku_apply and arg.keyword is None and not inside) or id(node) in side_streams
                or _apply_signature_key(call, node) or how == MAYBE or verdict == MAYBE or self._only_shape_used(call, drawn=_samples(call) and not call_tail(call.func).startswith("init"))
            )
            reorders = (param is not None and how is not None and _only_reorders(self.facts, callee, param)) or (
                callee is None and _project_only_reorders(self.facts, project_name or name, call, arg)
            )
            self._consume(key, node, consumer, False, state, maybe, possible=not proven, reorders=reorders)

    def _carried_use(self, call: cst.Call, loop: str, arg: cst.Arg, node) -> str | None:
        """How `step` (a function of this module) in `lax.scan(step, (state, key), xs)` uses
        the key it carries: None (never drawn: passed through untouched, or dropped), MAYBE,
        POSSIBLE or DRAWN; POSSIBLE also when the carry cannot be followed."""
        (body_at, body_kw), (init_at, init_kw), carry_at = LAX_CARRIES[loop]
        init = argument(call, init_at, init_kw)
        body = argument(call, body_at, body_kw)
        callee = self.facts.function_for(body, self.scope) if body is not None else None
        if init is None or arg.value is not init or callee is None or not isinstance(callee.node, cst.FunctionDef):
            return POSSIBLE
        if len(callee.params) <= carry_at:
            return POSSIBLE
        carry = callee.params[carry_at]
        if node is init:
            return param_use(self.facts, callee, carry)
        if not isinstance(init, (cst.Tuple, cst.List)):
            return POSSIBLE
        index = next((i for i, e in enumerate(init.elements) if e.value is node and not isinstance(e, cst.StarredElement)), None)
        if index is None or any(isinstance(e, cst.StarredElement) for e in init.elements[:index]):
            return POSSIBLE
        return carried_slot_use(self.facts, callee, carry, index)

    def _only_shape_used(self, call: cst.Call, drawn: bool = False) -> bool:
        """The numbers drawn are never used, only their shape or dtype: a template for empty
        buffers (`tree_map(lambda x: jnp.empty(x.shape, x.dtype), space.sample(key))`, or `x =
        space.sample(key)` read only as `x.shape`). Such a draw correlates with nothing."""
        statement = self.statement
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        for mapping in descendants(small):
            if (
                isinstance(mapping, cst.Call) and any(arg.value is call for arg in mapping.args[1:])
                and self.facts.qualname(mapping.func, self.scope) in TREE_MAPS
                and mapping.args and isinstance(mapping.args[0].value, cst.Lambda)
            ):
                template = mapping.args[0].value
                params = {p.name.value for p in all_params(template.params)}
                if params and _read_only_for_shape(params, template.body) == params:
                    return True
        # a name of a function, or of a program's module level (a notebook, a script nothing
        # imports), whose readers are all in view
        function = self.scope.function
        owner = function.scope if function is not None else self.scope if self.facts.is_program and self.scope.kind == "module" else None
        if (
            owner is not None and isinstance(small, cst.Assign) and self._batched(small.value, call)
            and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
        ):
            name = small.targets[0].target.value
            body = owner.node.body if owner.kind == "function" else owner.node
            # bound once here (a comprehension's own `x` is another variable), or never read
            # anywhere in the module (a scratch script's `X_demo = normal(key, ...)`, twice)
            bindings = len(self.scope.values.get(name, ())) - _comprehension_bindings(body, name)
            if bindings != 1 and name in self.facts.names_read:
                return False
            return name in self._read_only_for_shape_here(owner, drawn)
        return False

    def _thrown_away(self, call: cst.Call) -> bool:
        """A draw that is a statement of its own, or whose array only a method called in that
        statement sees (`normal(key, ()).block_until_ready()`, a wait for the device): the
        numbers go nowhere."""
        statement = self.statement
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        value = statement.body[0].value if isinstance(statement.body[0], cst.Expr) else None
        while isinstance(value, cst.Call) and value is not call and isinstance(value.func, cst.Attribute):
            value = value.func.value  # `draw.block_until_ready()`: the method's receiver
        return value is call

    def _batched(self, value: cst.BaseExpression, call: cst.Call) -> bool:
        """`value` is the draw `call`, or items of it (`call[None, ...]`, `call[0]`, also
        through `tree_map(lambda x: x[None], call)`): numbers drawn by it and nothing else."""
        if value is call:
            return True
        if isinstance(value, cst.Subscript):
            return self._batched(value.value, call)
        if (
            isinstance(value, cst.Call) and len(value.args) == 2 and isinstance(value.args[0].value, cst.Lambda)
            and self.facts.qualname(value.func, self.scope) in TREE_MAPS
        ):
            item = value.args[0].value
            params = [p.name.value for p in all_params(item.params)]
            body = item.body
            while isinstance(body, cst.Subscript):
                body = body.value
            return params == [getattr(body, "value", None)] and self._batched(value.args[1].value, call)
        return False

    def _read_only_for_shape_here(self, owner: Scope, drawn: bool) -> set[str]:
        """The names a function's scope (or a program's module scope) binds and reads only
        as `.shape`/`.dtype`/... (or, with `drawn`, for numbers drawn at random, as a model
        init's example input, or never); once per scope."""
        cache = self.facts.derived.setdefault("read-only-for-shape", {})
        slot = (owner.node, drawn)
        if slot not in cache:
            body = owner.node.body if owner.kind == "function" else owner.node
            abstract = functools.partial(self.facts.is_abstract_trace, scope=owner)
            templates = functools.partial(self._shape_template_args, scope=owner) if drawn else None
            cache[slot] = _read_only_for_shape(assigned_names(body), body, drawn, abstract, unread=drawn, templates=templates)
        return cache[slot]

    def _shape_template_args(self, call: cst.Call, scope: Scope) -> list[cst.Arg]:
        """The arguments of `call` that a function of the project reads only for their shape
        (`setup(key, x)` whose body only does `model.init(key, x)`): this module's function
        read here, another module's by the project index."""
        callee = self.facts.function_for(call.func, scope)
        if callee is not None:
            if isinstance(callee.node, cst.Lambda):
                return []
            known = self.facts.derived.setdefault("shape-template-params", {})
            if callee.node not in known:  # once per function: its every call site asks
                body = callee.node.body
                known[callee.node] = _read_only_for_shape(set(callee.params), body, init_inputs=True) - assigned_names(body)
            held = known[callee.node]
            return [arg for arg in call.args if _receiving_param(self.facts, callee, call, arg) in held]
        project = self.facts.project
        entry = project.callee(self.facts.qualname(call.func, scope)) if project is not None else None
        if entry is None or not entry.shape_templates:
            return []
        return [arg for arg in call.args if entry.param_for(call.args, arg) in entry.shape_templates]

    def _lambda_draws(self, function: cst.Lambda) -> list[tuple[str, str, cst.Call]]:
        """(key, sampler, call) for each draw in a lambda's body from a key it does not receive
        as a parameter: a key it closes over."""
        params = {p.name.value for p in all_params(function.params)}
        draws = []
        for inner, _ in _calls_in_evaluation_order(function.body):
            if not isinstance(inner, cst.Call):
                continue
            drawn = self.facts.qualname(inner.func, self.scope) or ""
            if not drawn.startswith("jax.random.") or drawn in NOT_CONSUMING or drawn == "jax.random.fold_in":
                continue
            arg = _key_argument(inner)
            key = self._key_id(arg, known_only=False) if arg is not None else None
            if key is not None and key.split("[")[0] not in params:
                draws.append((key, drawn, inner))
        return draws

    def _captured_draws(self, func: cst.BaseExpression) -> list[tuple[str, str]]:
        """(key, sampler) for each key a lambda bound to a name here closes over and draws
        from: calling the lambda is a draw from that key."""
        if not isinstance(func, cst.Name):
            return []
        owner = self.scope.lookup(func.value)
        values = owner.values.get(func.value, []) if owner is not None else []
        if len(values) != 1 or not isinstance(values[0], cst.Lambda):
            return []
        first: dict[str, str] = {}
        for key, drawn, _ in self._lambda_draws(values[0]):
            first.setdefault(key, drawn)
        return list(first.items())

    def _mapped_lambda(self, function: cst.Lambda, mapper: str, shadowed: frozenset[str]) -> None:
        """`jax.tree.map(lambda p: p + normal(key, p.shape), params)`: the lambda runs once per
        leaf and draws from a key it does not receive: every leaf gets the same numbers."""
        for key, drawn, inner in self._lambda_draws(function):
            if drawn.rsplit(".", 1)[-1] in (*REORDERINGS, "choice"):
                continue  # one selection for every leaf keeps the leaves' rows aligned (one individual)
            if key.split("[")[0] in shadowed:
                continue
            use = Use(key, inner, drawn, False, self.statement)
            self.findings.append(Finding("JG603", use, None, (
                f"PRNG key '{key}' is drawn from in a function mapped over every leaf ({mapper}): every "
                f"leaf of the same shape gets the same numbers; split it per leaf (`jax.random.split({key}, "
                f"len(leaves))`) and map over the keys too")))
            return

    def _handed_back(self, value: cst.BaseExpression) -> list[tuple[int, str]]:
        """`x, key = sample(key)` where the project index shows `sample` draws from the key it
        is given and returns it: [(position in the result, consumer)] of such keys (-1: the
        whole result)."""
        project = self.facts.project
        if project is None or not isinstance(value, cst.Call):
            return []
        entry = project.callee(self.facts.qualname(value.func, self.scope))
        if entry is None or not entry.handed_back:
            return []
        consumer = f"{self._describe(value)} (which draws from it and returns it)"
        given = {entry.param_for(value.args, arg) for arg in value.args if self._passed_keys(arg.value)}
        return [(position, consumer) for position, param in entry.handed_back if param in given]

    def _passed_keys(self, value: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
        """Known keys an argument passes: itself, or items of a literal tuple, list or dict
        (`(state, key)`, `rngs={"dropout": key}`)."""
        if isinstance(value, (cst.Tuple, cst.List, cst.Dict)):
            return [found for element in value.elements for found in self._passed_keys(element.value)]
        key = self._key_id(value, known_only=True)
        return [(key, value)] if key is not None else []

    def _stored(self, value: cst.BaseExpression, targets, state: _State) -> None:
        """`self.rng = key`: a key kept in an object or container is used later (for the
        callee analysis of `consumes_param`)."""
        if self.key_param is None or not any(isinstance(t, (cst.Attribute, cst.Subscript)) for t in targets):
            return
        if self.key_param in _names_in(value) and self.key_param not in state.rebound:
            self.param_use = DRAWN

    def _split_unused(self, call) -> bool:
        """`sub, key = split(key)` and neither name is read again in the function: a dead
        split draws nothing (the project index judges other modules' functions the same)."""
        statement = self.statement
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return False
        small = statement.body[0]
        if isinstance(small, cst.Expr) and small.value is call:
            return True
        if not (isinstance(small, cst.Assign) and small.value is call):
            return False
        targets = [target.target for target in small.targets]
        if any(_self_attributes(target) or not isinstance(target, (cst.Name, cst.Tuple, cst.List)) for target in targets):
            return False
        names = set().union(*(_names_in(target) for target in targets))
        return not _read_after(self.facts, self.scope.node, call, names)

    def _split_keys_ignored(self, call: cst.Call) -> bool:
        """`key, *subkeys = split(key, n)` whose keys are read only by functions shown to
        ignore the key they get (a function of the module whose body never draws from it,
        or one the project index judges IGNORES), kept by array code on the way
        (`subkeys = jnp.array(subkeys)`, `subkeys[t]`) or only looked at: the split hands out
        keys nobody draws from, so it draws nothing (the summary judges a split the same
        way: `_KeyUses._split`)."""
        bound = _bound_names(self.statement, call)
        if not bound:
            return False  # a bare `split(key)` reads as meant to change the key; other places are not followed
        body = self.scope.node
        reads = _argument_reads(self.facts, body)
        pending, seen = [(call, bound)], set()
        while pending:
            at, names = pending.pop()
            if names is None:
                return False  # keys kept somewhere but in names: followed no further
            for read in _reads_after(self.facts, body, at, names):
                if id(read) in seen:
                    continue
                seen.add(id(read))
                found = reads.get(id(read), _NOT_AN_ARGUMENT)
                if found is _NOT_AN_ARGUMENT:
                    return False  # returned, stored, put in a container, drawn from...
                if found is None:
                    continue  # `key.shape`, `key is None`: looking is not drawing
                inner, arg, scope = found
                name = self.facts.qualname(inner.func, scope)
                if name in KEY_APPLYING:
                    return False  # `jax.tree.map(lambda k: normal(k), keys)`: the function applied may draw
                if (name or "").startswith(KEY_NEUTRAL_PREFIXES):
                    # `subkeys = jnp.array(subkeys)`: kept under the names bound; `print(keys)` drops them
                    pending.append((inner, _bound_names(_statement_of(self.facts, body, inner), inner)))
                    continue
                if not self._ignored_by(inner, arg, scope, name):
                    return False
        return True

    def _ignored_by(self, call: cst.Call, arg: cst.Arg, scope: Scope, name: str | None) -> bool:
        """The function `call` gives `arg` to is shown never to draw from that key: a function
        of this module whose body does not use the parameter it binds, or a project function
        the index judges IGNORES."""
        callee = self.facts.function_for(call.func, scope) or self.facts.instance_method(call.func, scope)
        if callee is not None:
            param = _receiving_param(self.facts, callee, call, arg)
            return (
                param is not None and _only_passed_or_looked_at(self.facts, callee, param)
                and param_use(self.facts, callee, param, _given_params(self.facts, callee, call)) is None
            )
        qualified = name or self.facts.object_method_name(call.func, scope)
        return project_key_verdict(self.facts, qualified, call, arg) == IGNORES

    def _split_unread(self, call: cst.Call) -> bool:
        """Assigned, and none of its results read (a bare `split(key)` statement is not: it
        reads as a split meant to change `key`, and what follows reuses the key)."""
        statement = self.statement
        return (
            isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign)
            and self._split_unused(call)
        )

    def _repeated_split(self, previous: Use, use: Use) -> bool:
        """`a, b = split(key)` written twice in one block, nothing between reading `a` or `b`:
        the first results are dead."""
        first, second = previous.statement, use.statement
        if not (previous.is_split and use.is_split and any(s is first for s in self.earlier)):
            return False
        if not all(
            isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign)
            for s in (first, second)
        ):
            return False
        code = cst.Module([]).code_for_node
        if code(first.body[0]).strip() != code(second.body[0]).strip():  # type: ignore[union-attr]
            return False
        bound = {name for target in first.body[0].targets for name in names_in(target.target)}  # type: ignore[union-attr]
        between = self.earlier[next(i for i, s in enumerate(self.earlier) if s is first) + 1:]
        loads = self.facts.loads
        return not any(
            isinstance(node, cst.Name) and node.value in bound and node in loads
            for statement in between for node in descendants(statement)
        )

    def _is_haiku_apply(self, func: cst.BaseExpression, depth: int = 0) -> bool:
        """`f.apply`, in a module that imports Haiku, as called or through wrappers that take
        it first (`jax.jit(f.apply)`, `partial(f.apply, params)`, a name only ever bound to one),
        or `hk.transform(f)[1]` (the (init, apply) pair indexed)."""
        if depth > 4 or not self.facts.imports_haiku:
            return False
        if isinstance(func, cst.Attribute):
            return func.attr.value == "apply"
        if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Call) and len(func.slice) == 1:
            index = func.slice[0].slice
            transform = self.facts.qualname(func.value.func, self.scope) or ""
            return transform.startswith("haiku.") and isinstance(index, cst.Index) and literal_int(index.value) == 1
        if isinstance(func, cst.Call):
            wrapped = positional(func)
            return bool(wrapped) and self._is_haiku_apply(wrapped[0], depth + 1)
        if isinstance(func, cst.Name):
            owner = self.scope.lookup(func.value)
            values = owner.values.get(func.value, []) if owner is not None else []
            return bool(values) and all(v is not None and self._is_haiku_apply(v, depth + 1) for v in values)
        return False

    def _describe(self, call: cst.Call) -> str:
        try:
            return one_line(cst.Module([]).code_for_node(call.func), 60)  # `pjit(\n partial(...),\n ...)` on one line
        except Exception:
            return "a function"

    def _fold(self, call: cst.Call, state: _State, shadowed: frozenset[str]) -> None:
        """`fold_in(key, i)` with a literal `i`: the same key as `split(key, n)[i]` for i < n."""
        args = positional(call)
        index = literal_int(args[1]) if len(args) > 1 else None
        key = self._key_id(args[0], known_only=False) if args else None
        if key is None or index is None or key.split("[")[0] in shadowed:
            return
        previous = state.consumed.get(key)
        count = _split_count(previous.node) if previous is not None and previous.is_split else None
        if count is not None and index < count:
            use = Use(key, call, "jax.random.fold_in", False, self.statement)
            self.findings.append(Finding("JG602", use, previous, _same_key_note(key, index, count)))
        state.folded.setdefault(key, set()).add(index)

    def _consume(
        self, key: str, node, consumer: str, is_split: bool, state: _State, maybe: bool = False, possible: bool = False,
        reorders: bool = False,
    ) -> None:
        use = Use(key, node, consumer, is_split, self.statement, maybe, possible, state.holds, self.cell, reorders)
        count = _split_count(node) if is_split else None
        folded = sorted(i for i in state.folded.get(key, ()) if count is not None and i < count)
        if folded:
            self.findings.append(Finding("JG602", use, None, _same_key_note(key, folded[0], count)))
        base = key.split("[")[0]
        if base == self.key_param and base not in state.rebound and not (is_split and self._split_unused(node)):
            level = MAYBE if maybe else POSSIBLE if possible else DRAWN
            self.param_use = max(self.param_use, level, key=_USE_STRENGTH.__getitem__)
        previous = state.consumed.get(key)
        if previous is not None and previous.under and self._ruled_out(previous, state):
            # used where a flag held that this path rules out (`if not bootstrap:` ... `return`)
            del state.consumed[key]
            previous = None
        if previous is not None and not previous.is_split and previous.cell != use.cell:
            # A notebook's key drawn from in one cell and again in a later one is a seed shared
            # by two experiments (one demo per cell; reviewers judged 30 of 31 such findings
            # deliberate): pairs are made within a cell. A key used after it was split (JG602)
            # is still reported across cells.
            del state.consumed[key]
            previous = None
        if previous is not None and self._repeated_split(previous, use):
            return  # the same split line twice: the first results are rebound unused
        if previous is not None and previous.is_split and is_split and not _same_key_twice(previous, use):
            return  # `split(k)[0]` here, `split(k)[1]` there: distinct keys of one split
        if previous is not None and (previous.maybe or use.maybe):
            if previous.maybe and not use.maybe:
                state.consumed[key] = use  # a later use is judged against a certain one
            return
        if previous is not None and previous.possible and use.possible:
            return  # two calls whose code is not read: no draw is proven
        if previous is not None and previous.reorders and use.reorders:
            return  # `permutation(key, x)` and `permutation(key, y)`: paired arrays stay aligned
        if previous is not None and _target_copy(previous, use):
            return  # `q = make(k, x)`, `q_target = make(k, x)`: a target network made equal on purpose
        if previous is not None:
            code = "JG602" if previous.is_split else "JG601"
            if any(f.code == code and f.use.key == key and f.use.statement is self.statement for f in self.findings):
                return  # one finding per key and statement: `normal(key) + normal(key) + normal(key)`
            self.findings.append(Finding(code, use, previous))
            if previous.possible and not use.possible:
                state.consumed[key] = use  # later possible draws are judged against this certain one
        else:
            in_loop = self.loop_depth_keys and base not in self.loop_depth_keys[-1]
            # a possible draw repeated is not a proven reuse: the code may derive a new key
            if in_loop and not use.possible and (base in self.keys or consumer.startswith("jax.random.")):
                self.findings.append(Finding("JG603", use))
            elif self.loop_body_of and self.scope.lookup(base) is not self.scope and self.scope.lookup(base) is not None:
                self.findings.append(Finding("JG603", use))
        state.consumed.setdefault(key, use)
        if use.is_split and not use.maybe and not use.possible and not state.consumed[key].is_split:
            # drawn from, then split: a later use is judged as a use after the split (whose
            # keys it repeats), reported across notebook cells too
            state.consumed[key] = use


def _target_copy(first: Use, second: Use) -> bool:
    """The same call twice, one result named a target (`vec_q_target=create_train_state(args,
    rng_q, q_net, x)` beside `vec_q=...` with the same arguments): an RL target network
    starts as an exact copy of the online one, so the second result equals the first on
    purpose."""
    calls = [_call_of(first), _call_of(second)]
    if None in calls or len({"".join(_EMPTY.code_for_node(call).split()) for call in calls}) != 1:
        return False
    return _named_target(first.statement, calls[0]) or _named_target(second.statement, calls[1])


def _call_of(use: Use) -> cst.Call | None:
    """The call that draws, or that the key is handed to."""
    if isinstance(use.node, cst.Call):
        return use.node
    for node in descendants(use.statement) if use.statement is not None else ():
        if isinstance(node, cst.Call) and any(arg.value is use.node for arg in node.args):
            return node
    return None


_EMPTY = cst.Module([])


def _named_target(statement: cst.CSTNode | None, call: cst.Call) -> bool:
    """The call's result is bound to a name, or passed as a keyword, that says "target"."""
    for node in descendants(statement) if statement is not None else ():
        if isinstance(node, cst.Arg) and node.keyword is not None:
            names = {node.keyword.value}
        elif isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, cst.Assign) else [node]
            names = {name for target in targets for name in names_in(target.target)}
        else:
            continue
        if any("target" in name.lower() for name in names) and any(inner is call for inner in descendants(node.value)):
            return True
    return False


def _read_after(facts: ModuleFacts, body: cst.CSTNode, call: cst.CSTNode, names: set[str]) -> bool:
    """Is one of `names` read after `call` in `body` (see `_reads_after`)? Also yes when
    `call` is not found in `body`."""
    return _position_in(facts, body, call) is None or bool(_reads_after(facts, body, call, names))


def _reads_after(facts: ModuleFacts, body: cst.CSTNode, call: cst.CSTNode, names: set[str]) -> list[cst.Name]:
    """The reads of `names` in `body` that may see what `call` bound: later in the code,
    anywhere in a loop around it (the next pass), or in a nested function or lambda (called
    who knows when). A read before it (`reset(self, key)` then a leftover `_, key =
    split(key)`) is of the value it had; a nested function's own local of the name is
    another variable."""
    position = _position_in(facts, body, call)
    if position is None:
        return []
    nodes, _, loops, nested = _nodes_in_order(facts, body)
    call_end = position + len(descendants(call))
    # (a subtree is a run of the pre-order: a loop around the call spans its position)
    anytime = [(start, stop) for start, stop, _ in nested] + [(start, stop) for start, stop in loops if start < position < stop]
    return [
        node for i, node in enumerate(nodes)
        if isinstance(node, cst.Name) and node.value in names and node in facts.loads
        and not position <= i < call_end and (i > position or any(start <= i < stop for start, stop in anytime))
        and not _local_to_nested(facts, nested, i, node.value, position)
    ]


def _nodes_in_order(facts: ModuleFacts, body: cst.CSTNode) -> tuple:
    cache = facts.derived.setdefault("nodes-in-order", {})
    if body not in cache:
        cache[body] = _in_order(body)
    return cache[body]


def _position_in(facts: ModuleFacts, body: cst.CSTNode, node: cst.CSTNode) -> int | None:
    return _nodes_in_order(facts, body)[1].get(id(node))


_NOT_AN_ARGUMENT = object()


def _argument_reads(facts: ModuleFacts, body: cst.CSTNode) -> dict[int, tuple | None]:
    """For the names of `body` given as an argument, whole or by one of their items
    (`f(key)`, `f(subkeys[t])`): (the call, the argument, the scope the call is in); for
    names only looked at (`key.shape`, `key is None`): None. Computed once per body."""
    cache = facts.derived.setdefault("argument-reads", {})
    if body in cache:
        return cache[body]
    nodes, _, _, nested = _nodes_in_order(facts, body)
    scopes = [(start, stop, facts.scopes.get(node)) for start, stop, node in nested]
    outer = facts.scopes.get(body) or facts.module_scope
    found: dict[int, tuple | None] = {}
    for i, node in enumerate(nodes):
        if isinstance(node, cst.Call):
            around = [scope for start, stop, scope in scopes if start <= i < stop and scope is not None]
            for arg in node.args:
                value = arg.value
                while isinstance(value, cst.Subscript):
                    value = value.value  # `subkeys[t]`: one of the keys
                if isinstance(value, cst.Name) and not arg.star:
                    found[id(value)] = (node, arg, around[-1] if around else outer)
        elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            found[id(node.value)] = None
        elif isinstance(node, cst.Comparison) and isinstance(node.left, cst.Name):
            found[id(node.left)] = None
    cache[body] = found
    return found


def _only_passed_or_looked_at(facts: ModuleFacts, callee, param: str) -> bool:
    """Every read of `param` in the body of the module-local function `callee` is an argument
    of a call (which the key flow judges) or a look (`key.shape`): none puts it where the flow
    loses it (`rngs = {"dropout": key}`, a return), so the flow's "not drawn" is a proof."""
    if not isinstance(callee.node, cst.FunctionDef):
        return False
    reads = _argument_reads(facts, callee.node.body)
    return all(
        reads.get(id(node), _NOT_AN_ARGUMENT) is not _NOT_AN_ARGUMENT
        for node in descendants(callee.node.body)
        if isinstance(node, cst.Name) and node.value == param and node in facts.loads
    )


def _statement_of(facts: ModuleFacts, body: cst.CSTNode, node: cst.CSTNode) -> cst.CSTNode | None:
    """The simple statement line of `body` that holds `node`: the nearest one before it in
    the pre-order (simple statement lines do not nest), if its subtree reaches `node`."""
    nodes, position_of, _, _ = _nodes_in_order(facts, body)
    position = position_of.get(id(node))
    for i in range(position - 1, -1, -1) if position is not None else ():
        if isinstance(nodes[i], cst.SimpleStatementLine):
            return nodes[i] if position < i + len(descendants(nodes[i])) else None
    return None


def _bound_names(statement: cst.CSTNode | None, call: cst.Call) -> set[str] | None:
    """The names a statement line binds `call`'s result to (`a, *rest = call`); none for a
    line that is the call alone (a print drops it); None when it goes anywhere else."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Expr) and small.value is call:
        return set()
    if not (isinstance(small, cst.Assign) and small.value is call):
        return None
    targets = [target.target for target in small.targets]
    if not all(_plain_target(target) for target in targets):
        return None
    return set().union(*(_names_in(target) for target in targets))


def _plain_target(target: cst.BaseExpression) -> bool:
    """A name, or a tuple or list of names and starred names (`key, *subkeys`)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return all(_plain_target(element.value) for element in target.elements)
    return isinstance(target, cst.Name)


def _local_to_nested(facts: ModuleFacts, nested: list, i: int, name: str, position: int) -> bool:
    """The read at `i` is of a local of a nested function the call is not in (a module's
    `init_key` and the function's own `init_key = ...`): another variable."""
    around = [node for start, stop, node in nested if start <= i < stop and not start <= position < stop]
    scope = facts.scopes.get(around[-1]) if around else None
    return scope is not None and scope.binds(name)


def _in_order(body: cst.CSTNode) -> tuple:
    """A body's nodes in source order, each node's position, and the spans (start, stop) of
    its loops and (start, stop, node) of its nested functions and lambdas."""
    nodes = descendants(body)
    position_of = {id(node): i for i, node in enumerate(nodes)}
    loops, nested = [], []
    for i, node in enumerate(nodes):
        if isinstance(node, (cst.For, cst.While)):
            loops.append((i, i + len(descendants(node))))
        elif isinstance(node, (cst.FunctionDef, cst.Lambda)) and node is not body:
            nested.append((i, i + len(descendants(node)), node))
    return nodes, position_of, loops, nested


def _block(block) -> list:
    """The statements of an indented block or a one-line suite."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    return [block]


def _join(a: _State | None, b: _State | None) -> _State | None:
    if a is None:
        return b
    if b is None:
        return a
    a.merge(b)
    return a


def _rebound_every_pass(body) -> set[str]:
    """Names a loop body's own top-level assignments bind, up to the first statement that
    may skip the rest of the pass (a `continue`, `break`, `return` or `raise` in it)."""
    names: set[str] = set()
    for statement in _block(body):
        if any(isinstance(node, (cst.Continue, cst.Break, cst.Return, cst.Raise)) for node in descendants(statement)):
            break
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    names.update(name for target in small.targets for name in _names_in(target.target))
    return names


def _forget(state: _State, name: str) -> None:
    for key in [k for k in state.consumed if k == name or k.startswith(name + "[")]:
        del state.consumed[key]
    for key in [k for k in state.folded if k == name or k.startswith(name + "[")]:
        del state.folded[key]
    state.rebound.add(name)


def _self_attributes(target: cst.BaseExpression) -> set[str]:
    """`self.key` and `self.key, sub = ...`: the object's keys an assignment rebinds."""
    items = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
    return {
        f"self.{item.attr.value}"
        for item in items
        if isinstance(item, cst.Attribute) and isinstance(item.value, cst.Name) and item.value.value == "self"
    }


def _held_by(facts: ModuleFacts, class_scope: Scope, depth: int = 0) -> tuple[set[str], set[str], bool]:
    """(attributes the class and its bases in this module store on the receiver or declare,
    the names they define as methods or properties, whether a base from elsewhere may
    define others)."""
    stored: set[str] = set()
    methods = set(class_scope.defs)
    external = False
    for arg in class_scope.node.bases:
        base = arg.value
        if isinstance(base, cst.Name) and base.value == "object":
            continue
        owner = class_scope.parent.lookup(base.value) if isinstance(base, cst.Name) else None
        node = owner.classes.get(base.value) if owner is not None else None
        if node is None or depth >= 8:
            external = True
            continue
        inherited = _held_by(facts, facts.scopes[node], depth + 1)
        stored |= inherited[0]
        methods |= inherited[1]
        external = external or inherited[2]
    for method in class_scope.defs.values():
        if method.params:
            prefix = method.params[0] + "."
            stored.update(a[len(prefix):] for a in _assigned_attributes(method.node.body) if a.startswith(prefix))
    for statement in class_scope.node.body.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                stored.add(small.target.value)
            elif isinstance(small, cst.Assign):
                stored.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
    return stored, methods, external


def _read_only_for_shape(
    names: set[str], body: cst.CSTNode, init_inputs: bool = False, abstract=None, unread: bool = False, templates=None
) -> set[str]:
    """Those of `names` that `body` reads at least once, and only as `name.shape`, `.dtype`,
    `.ndim` or `.size`, or (`init_inputs`, for numbers drawn at random) as the example input
    of a model's `init` (`net.init(key, x)` runs the model on `x` only to learn its shapes:
    the parameters come from the key, and the output is thrown away), or in the arguments of
    a call that `abstract` says is an abstract evaluation (`jax.eval_shape(f, state.params)`),
    or (`init_inputs`) as the arguments `templates` says a project function reads only so;
    with `unread`, also those it never reads (unless `global`/`nonlocal` names them, or
    `locals()`, `vars()`, `eval` or `exec` may read them). One walk for all."""
    shape: set[str] = set()
    other: set[str] = set()
    dynamic = []  # `locals()` and the like: any name may be read
    inits: set[int] = set()  # `_, params = m.init_with_output(...)`: an init whose output is thrown away
    hidden: list[set[str]] = []  # the variables of the comprehensions around: other names

    def visible(name: str) -> bool:
        return name in names and not any(name in inner for inner in hidden)

    class _Reads(Visitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if isinstance(node.value, cst.Call) and _output_discarded(node, node.value):
                inits.add(id(node.value))

        def visit_Call(self, node: cst.Call) -> bool:
            if abstract is not None and abstract(node):
                shape.update(n.value for arg in node.args for n in descendants(arg) if isinstance(n, cst.Name) and visible(n.value))
                walk(node.func, self)
                return False
            is_init = isinstance(node.func, cst.Attribute) and (node.func.attr.value == "init" or id(node) in inits)
            held = templates(node) if init_inputs and templates is not None and not is_init else []
            if not (init_inputs and is_init) and not held:
                return True
            examples = held or node.args[1:]  # the init's example inputs, or the helper's templates
            for arg in node.args:
                example = any(arg is other for other in examples)
                if example and isinstance(arg.value, cst.Name) and visible(arg.value.value) and not arg.star:
                    shape.add(arg.value.value)
                else:
                    walk(arg, self)
            walk(node.func, self)
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            if isinstance(node.value, cst.Name) and visible(node.value.value):
                (shape if node.attr.value in SHAPE_ATTRIBUTES else other).add(node.value.value)
                return False
            return True

        def visit_Name(self, node: cst.Name) -> None:
            if visible(node.value):
                other.add(node.value)
            elif node.value in ("locals", "vars", "eval", "exec"):
                dynamic.append(node)

        def _comprehension(self, node) -> bool:
            """`[float(x) for x in energies]`: its `x` is its own, not the `x` outside."""
            bound, loop = set(), node.for_in
            while loop is not None:
                bound |= names_in(loop.target)
                loop = loop.inner_for_in
            if not bound & names:
                return True
            walk(node.for_in.iter, self)  # the first iterable is read outside
            hidden.append(bound)
            for part in (getattr(node, "elt", None), getattr(node, "key", None), getattr(node, "value", None), node.for_in):
                if part is not None:
                    walk(part, self)
            hidden.pop()
            return False

        visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

        def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
            return False  # the binding itself (a second one shows in the scope's values)

        def visit_Global(self, node: cst.Global) -> bool:
            other.update(item.name.value for item in node.names)  # read elsewhere, maybe
            return False

        def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
            other.update(item.name.value for item in node.names)
            return False

    walk(body, _Reads())
    never = names - shape - other if unread and not dynamic else set()
    return (shape - other) | never


def _comprehension_bindings(body: cst.CSTNode, name: str) -> int:
    """How many comprehensions in `body` bind `name` as their own variable."""
    return sum(1 for node in descendants(body) if isinstance(node, cst.CompFor) and name in names_in(node.target))


def _assigned_attributes(block: cst.CSTNode) -> set[str]:
    """`owner.attr` for each attribute that assignments in `block` set, tuple targets too
    (`self.key, sub = split(self.key)`); not inside nested functions."""
    found: set[str] = set()

    class _Collect(Visitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            target = node.target
            items = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
            found.update(
                f"{item.value.value}.{item.attr.value}"
                for item in items if isinstance(item, cst.Attribute) and isinstance(item.value, cst.Name)
            )

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    walk(block, _Collect())
    return found


def _bound_at(target: cst.BaseExpression, handed_back: list[tuple[int, str]]) -> list[str]:
    """The names an assignment binds to the handed-back positions of a call's result."""
    names = []
    elements = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else None
    for position, _ in handed_back:
        bound = target if position == -1 and elements is None else (
            elements[position] if elements is not None and 0 <= position < len(elements) else None)
        if isinstance(bound, cst.Name):
            names.append(bound.value)
    return names


def _split_count(call: cst.CSTNode) -> int | None:
    """How many keys `split(key, n)` makes (2 by default); None if not a literal."""
    if not isinstance(call, cst.Call):
        return None
    args = positional(call)
    count = args[1] if len(args) > 1 else next((a.value for a in call.args if a.keyword and a.keyword.value == "num"), None)
    return 2 if count is None else literal_int(count)


def _same_key_twice(first: Use, second: Use) -> bool:
    """Do two splits of one key hand out a key in common? Under JAX's default (partitionable)
    threefry, key i of a split is the same whatever the count, so they do exactly where the
    positions they hand out meet (`split(k)[0]` and `split(k, 3)[1]` do not)."""
    a, b = _handed_out(first), _handed_out(second)
    return a is None or b is None or bool(a & b)


def _handed_out(use: Use) -> set[int] | None:
    """The positions of the keys a split use hands out: `split(k, n)[i]` gives key i alone,
    `a, b = split(k)` keys 0 and 1, `split(k, n)` all n (None: a count not written out)."""
    call, statement = use.node, use.statement
    for node in descendants(statement) if statement is not None else ():
        if isinstance(node, cst.Subscript) and node.value is call and len(node.slice) == 1:
            index = node.slice[0].slice
            position = literal_int(index.value) if isinstance(index, cst.Index) else None
            if position is not None and position >= 0:
                return {position}
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    if isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1:
        target = small.targets[0].target
        if isinstance(target, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in target.elements):
            return set(range(len(target.elements)))
    count = _split_count(call)
    return set(range(count)) if count is not None else None


def _same_every_element(key: str) -> str:
    return (
        f"PRNG key '{key}' is drawn from in every element of a comprehension: every element gets "
        f"the same numbers; split it first (`for k in jax.random.split({key}, n)`)"
    )


def _same_key_note(key: str, index: int, count: int) -> str:
    return (
        f"PRNG key '{key}' is both folded and split: fold_in({key}, {index}) is the same key as "
        f"split({key}, {count})[{index}] (threefry), so the two hand out identical numbers; derive both from one split"
    )


def _init_side_streams(call: cst.Call, keys: set[int], statement) -> set[int]:
    """The keys of `model.init({"params": k1, "dropout": k2}, x)` given to streams other
    than "params", and keys among the arguments of the forward pass that init runs
    (`actor.init(k, obs, k)`, `actor.init(k, obs, rng=k)`, `state.init(f)(k, key, x)`;
    `keys` are the ids of the key nodes among the arguments): Flax's init draws the parameters
    from "params"; the rest only changes the forward output that init throws away, and a
    stream no module asks for (`make_rng`) is never drawn. Possible draws, as a Haiku
    apply's key is. So for `_, params = m.init_with_output(...)`, whose output is thrown away."""
    func = call.func.func if isinstance(call.func, cst.Call) else call.func  # `st.init(f)(key, ...)`
    if not (isinstance(func, cst.Attribute) and (func.attr.value == "init" or _output_discarded(statement, call))):
        return set()
    streams = {
        id(element.value)
        for arg in call.args
        if isinstance(arg.value, cst.Dict)
        for element in arg.value.elements
        if isinstance(element, cst.DictElement) and literal_str(element.key) not in (None, "params")
    }
    args = [arg for arg in call.args if arg.keyword is None and not arg.star]
    first = args[0].value if args else None
    named_as_key = isinstance(first, cst.Name) and KEY_PARAM.match(first.value) is not None
    if not (isinstance(first, cst.Dict) or id(first) in keys or named_as_key):
        return streams  # `Linear.init(In, Out, key=k)`: an equinox-style constructor, no forward pass
    # the forward pass takes keywords too (`rng=k`), beside init's own options
    forward = args[1:] + [arg for arg in call.args if arg.keyword is not None and arg.keyword.value not in _INIT_OPTIONS]
    return streams | {id(arg.value) for arg in forward}


# Keywords of Flax's `init` itself, not of the forward pass it runs.
_INIT_OPTIONS = frozenset({"rngs", "method", "mutable", "capture_intermediates"})


def _output_discarded(statement, call: cst.Call) -> bool:
    """`_, params = model.init_with_output(...)`: the forward output is thrown away, as
    `init` throws it away."""
    assign = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else statement
    if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1):
        return False
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "init_with_output"):
        return False
    target = assign.targets[0].target
    return (
        isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2
        and isinstance(target.elements[0].value, cst.Name) and target.elements[0].value.value.startswith("_")
    )


# Well-known APIs outside the project that draw from the key they are given: a model's
# `init` (Flax, Haiku, Equinox-style), a distribution's `sample` (distrax, TFP, numpyro).
SAMPLING_METHODS = frozenset({"init", "init_with_output", "sample", "sample_n", "sample_and_log_prob", "rvs"})


# Calls that keep what they are given rather than draw from it.
STORING_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft", "setdefault", "replace", "put"})
LOGGING_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})


def _stores(call: cst.Call, qualified: str | None) -> bool:
    """A constructor (`State(rng=key)`), `dataclasses.replace`/`.replace(...)`, a container's
    `append`, a logger: the key is kept or shown, not drawn from."""
    func = call.func
    tail = call_tail(func) or ""
    if qualified is not None and (qualified.startswith("logging.") or qualified == "dataclasses.replace"):
        return True
    if tail in STORING_METHODS or (isinstance(func, cst.Attribute) and tail in LOGGING_METHODS):
        return True
    return tail[:1].isupper() and not tail.isupper()  # a class: `MetropolisState(rng=key)`


def _makes_train_state(facts: ModuleFacts, func: cst.BaseExpression, scope: Scope) -> bool:
    """`TrainState.create(..., rng=key)` of Flax's `train_state.TrainState`, or of a class of
    the module derived from it: a factory that keeps its extra fields."""
    return isinstance(func, cst.Attribute) and func.attr.value == "create" and _is_train_state(facts, func.value, scope)


def _is_train_state(facts: ModuleFacts, node: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
    if facts.qualname(node, scope) == "flax.training.train_state.TrainState":
        return True
    owner = scope.lookup(node.value) if isinstance(node, cst.Name) and depth < 5 else None
    if owner is None or node.value not in owner.classes:
        return False
    bases = facts.scopes[owner.classes[node.value]].node.bases
    return any(base.keyword is None and _is_train_state(facts, base.value, owner, depth + 1) for base in bases)


def _samples(call: cst.Call) -> bool:
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value in SAMPLING_METHODS


def _is_clone(func: cst.BaseExpression) -> bool:
    """`jax.random.clone(key)` or a helper named for it (`test_utils.clone(key)`): an explicit,
    deliberate copy of a key, which does not consume it."""
    return call_tail(func) == "clone"


def _receiving_param(facts: ModuleFacts, callee, call: cst.Call, arg: cst.Arg) -> str | None:
    """The parameter of module-local `callee` that `arg` of `call` binds, if it is known."""
    node = callee.node
    if isinstance(node, cst.Lambda):
        return None
    parameters = node.params
    positional_params = [p.name.value for p in (*parameters.posonly_params, *parameters.params)]
    names = {p.name.value for p in (*parameters.posonly_params, *parameters.params, *parameters.kwonly_params)}
    if arg.keyword is not None:
        if arg.keyword.value in names:
            return arg.keyword.value
        # swallowed by a `**kwargs` the body never reads: the key goes nowhere
        swallowed = parameters.star_kwarg
        if isinstance(swallowed, cst.Param) and swallowed.name.value not in names_in(node.body):
            return swallowed.name.value
        return None
    index = 0
    for other in call.args:
        if other.star:
            return None
        if other is arg:
            break
        if other.keyword is None:
            index += 1
    if len(facts.passed_params(callee, call.func)) < len(callee.params):
        index += 1  # `self.step(state, key)`: `self` is bound
    return positional_params[index] if index < len(positional_params) else None


def _keys_for_callees(facts: ModuleFacts, calls, scope: Scope) -> set[str]:
    """Names named like keys that are passed to a function of this module which consumes
    the parameter receiving them (`noise(key, 2)` with `def noise(key, n): normal(key...)`)."""
    names = set()
    for call in calls:
        candidates = [arg for arg in call.args if isinstance(arg.value, cst.Name) and KEY_PARAM.match(arg.value.value)]
        if not candidates:
            continue
        callee = facts.function_for(call.func, scope) or facts.instance_method(call.func, scope)
        if callee is None:
            qualified = facts.qualname(call.func, scope) or facts.object_method_name(call.func, scope)
            names.update(
                arg.value.value  # type: ignore[attr-defined]
                for arg in candidates
                if project_key_verdict(facts, qualified, call, arg) == DRAWS
            )
            continue
        for arg in candidates:
            param = _receiving_param(facts, callee, call, arg)
            if param is not None and consumes_param(facts, callee, param):
                names.add(arg.value.value)  # type: ignore[attr-defined]
    return names


def _only_reorders(facts: ModuleFacts, info, param: str) -> bool:
    """The module-local function `info` uses the key it receives as `param` only to reorder
    (`permutation(key, n)`, `shuffle`), besides looking at it (`key is None`)."""
    if not isinstance(info.node, cst.FunctionDef):
        return False
    nodes = descendants(info.node.body)
    uses = [n for n in nodes if isinstance(n, cst.Name) and n.value == param and n in facts.loads]
    reordering = {
        id(node.args[0].value) for node in nodes
        if isinstance(node, cst.Call) and node.args and _is_reordering(facts.qualname(node.func, info.scope), node)
    }
    looked = {id(node.left) for node in nodes if isinstance(node, cst.Comparison)}
    return bool(uses) and all(id(n) in reordering or id(n) in looked for n in uses) and any(id(n) in reordering for n in uses)


def _project_only_reorders(facts: ModuleFacts, qualified: str | None, call: cst.Call, arg: cst.Arg) -> bool:
    """A function of another project module uses the key `arg` gives it only to reorder
    (`shuffle(key, data)` doing `permutation(key, len(data))`; the project index)."""
    entry, param = _project_param(facts, qualified, call, arg)
    return param is not None and param in entry.reorders


def _project_param(facts: ModuleFacts, qualified: str | None, call: cst.Call, arg: cst.Arg):
    """(the project function of another module `qualified` names, the parameter `arg` of
    `call` binds in it); (None, None) if it is not one, the parameter None if not known."""
    project = facts.project
    entry = project.callee(qualified) if project is not None else None
    # a method is reached by its class: `Cls.m(obj, key)` passes `self`, a classmethod binds `cls`
    return entry, entry.param_for(call.args, arg) if entry is not None else None


def _is_reordering(name: str | None, call: cst.Call) -> bool:
    without_replacement = any(
        arg.keyword is not None and arg.keyword.value == "replace" and isinstance(arg.value, cst.Name) and arg.value.value == "False"
        for arg in call.args
    )
    return is_reordering(name, without_replacement)


def project_key_verdict(facts: ModuleFacts, qualified: str | None, call: cst.Call, arg: cst.Arg) -> str | None:
    """What a function of another project module does with the key `arg` gives it (DRAWS,
    IGNORES, UNKNOWN; see jaxguard.lint.project), None if the callee is not a project function."""
    _, param = _project_param(facts, qualified, call, arg)
    return facts.project.key_verdict(qualified, param) if param is not None else None


def _apply_signature_key(call: cst.Call, node) -> bool:
    """`net.apply(params, rng, x)`: a key in second place of an `apply`, Haiku's signature
    (acme's networks, wrappers of transformed functions), is drawn from only if the model has
    stochastic layers: a maybe-draw, like a Haiku apply the module itself transforms."""
    args = positional(call)
    return (
        isinstance(call.func, cst.Attribute) and call.func.attr.value == "apply"
        and len(args) >= 2 and args[1] is node
    )


def consumes_param(facts: ModuleFacts, info, param: str) -> bool:
    """Does the module-local function `info` use the key its caller passes as `param`?
    No when it never uses it, or first gives it a new value (`key = fold_in(key, step)`)."""
    return param_use(facts, info, param) is not None


def param_use(facts: ModuleFacts, info, param: str, given: frozenset = frozenset()) -> str | None:
    """How the module-local function `info` uses the key its caller passes as `param`: None
    (never, or only after a new value), DRAWN or MAYBE (see `KeyFlow.param_use`).
    `given`: the values the caller passes for parameters the body tests (`_given_params`).
    A draw only under `if p is None:` is then not proven (the value may or may not be
    None): MAYBE; a draw only under `if split == "train":` when the caller passes "val" is
    none. Computed once per
    (function, parameter, given) by running the key flow on its body."""
    cache = facts.derived.setdefault("key-params", {})
    slot = (info.node, param, given)
    if slot not in cache:
        cache[slot] = None  # a recursive call adds no draw of its own: the rest of the body decides
        # `rng: Variable`, or `rng._state = ...` (a generator object keeping its own state):
        # not a key (a key is an immutable array; the project index judges the same)
        stored = any(a.startswith(param + ".") for a in _assigned_attributes(info.node.body))
        if not info.annotated_not_a_key(param) and not stored:
            use = KeyFlow(facts, info.scope, _block(info.node.body), key_param=param, given=given).param_use
            if use is None and any(value is _NOT_NONE for _, value in given) and param_use(facts, info, param) is not None:
                use = MAYBE  # drawn only where a value the caller passes is None
            cache[slot] = use
    return cache[slot]  # type: ignore[return-value]


def _lambda_only_folds(facts: ModuleFacts, info, call: cst.Call, arg: cst.Arg) -> bool:
    """`vmap(lambda k: fold_in(k, i))(keys)`: the lambda's parameter that `arg` binds (by
    position) is only ever folded, or never read: a new key per value, nothing drawn."""
    if arg.keyword is not None or any(other.star for other in call.args):
        return False
    function = info.node
    params = [p.name.value for p in function.params.params]
    index = [other for other in call.args if other.keyword is None].index(arg)
    if index >= len(params):
        return False
    param = params[index]
    uses = [node for node in descendants(function.body) if isinstance(node, cst.Name) and node.value == param and node in facts.loads]
    folded = {
        id(args[0]) for node in descendants(function.body)
        if isinstance(node, cst.Call) and facts.qualname(node.func, info.scope) == "jax.random.fold_in" and (args := positional(node))
    }
    return all(id(use) in folded for use in uses)


# the value a caller passes for a parameter, when it is not a literal: known not to be None
# only if it is not a literal None (`prepared=assets`)
_NOT_NONE = "<not None>"


def _given_params(facts: ModuleFacts, callee, call: cst.Call) -> frozenset[tuple[str, object]]:
    """(parameter, value) for the parameters of `callee` its body tests (`p is None`,
    `p == "train"`, `p in ("a", "b")`) that `call` passes: the literal passed (a string, a
    number, True/False), or _NOT_NONE for any expression but a literal None."""
    tested = _tested_params(facts, callee)
    if not tested:
        return frozenset()
    given = set()
    for arg in call.args:
        param = _receiving_param(facts, callee, call, arg)
        if param not in tested or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            continue
        literal = _literal(arg.value)
        given.add((param, _NOT_NONE if literal is _NOT_LITERAL else literal))
    return frozenset(given)


def _tested_params(facts: ModuleFacts, info) -> set[str]:
    """Parameters of `info` its body tests against None or compares with a literal
    (`p == "train"`, `p in ["a", "b"]`); once per function."""
    cache = facts.derived.setdefault("tested-params", {})
    if info.node not in cache:
        params = set(info.params)
        found = set()
        for node in descendants(info.node.body):
            if isinstance(node, cst.Comparison):
                found.update((compared_with_none(node, cst.Is), compared_with_none(node, cst.IsNot)))
                if _compared_with_literal(node) is not None:
                    found.add(node.left.value)  # type: ignore[attr-defined]
        cache[info.node] = found & params
    return cache[info.node]


_NOT_LITERAL = object()


def _literal(node: cst.BaseExpression) -> object:
    """The value of a literal string, integer, True or False; _NOT_LITERAL otherwise."""
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    for read in (literal_str, literal_int):
        value = read(node)
        if value is not None:
            return value
    return _NOT_LITERAL


def _compared_with_literal(test: cst.BaseExpression) -> tuple[str, type, list] | None:
    """(name, operator, literal values) for `name == lit`, `name != lit`, `name in (lits)`,
    `name not in [lits]`."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name)):
        return None
    operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(operator, (cst.Equal, cst.NotEqual)):
        values = [_literal(right)]
    elif isinstance(operator, (cst.In, cst.NotIn)) and isinstance(right, (cst.List, cst.Tuple, cst.Set)):
        values = [_literal(element.value) for element in right.elements]
    else:
        return None
    if not values or _NOT_LITERAL in values:
        return None
    return test.left.value, type(operator), values


def _given_truth(test: cst.BaseExpression, given: frozenset[tuple[str, object]]) -> bool | None:
    """The truth of a test of a parameter the caller passes (see `_given_params`): `p is
    None` is False and `p is not None` True for any value; a comparison with literals is
    worked out when the caller passed a literal."""
    values = dict(given)
    if compared_with_none(test, cst.Is) in values:
        return False
    if compared_with_none(test, cst.IsNot) in values:
        return True
    compared = _compared_with_literal(test)
    if compared is None or values.get(compared[0], _NOT_NONE) is _NOT_NONE:
        return None
    name, operator, literals = compared
    return (values[name] in literals) == (operator in (cst.Equal, cst.In))


def carried_slot_use(facts: ModuleFacts, info, carry: str, index: int) -> str | None:
    """How a loop body `info` uses item `index` of the carry it receives as `carry`, when it
    unpacks it first thing (`state, key = carry`) and reads `carry` nowhere else: None (never
    drawn from: passed through untouched, or dropped), DRAWN or MAYBE; DRAWN when the body
    is written otherwise (not followed)."""
    cache = facts.derived.setdefault("carried-slots", {})
    slot = (info.node, carry, index)
    if slot not in cache:
        cache[slot] = DRAWN
        statements = _block(info.node.body)
        if statements and is_docstring(statements[0]):
            statements = statements[1:]
        first = statements[0] if statements else None
        small = first.body[0] if isinstance(first, cst.SimpleStatementLine) and len(first.body) == 1 else None
        if (
            isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Name)
            and small.value.value == carry and isinstance(small.targets[0].target, (cst.Tuple, cst.List))
        ):
            elements = small.targets[0].target.elements
            item = elements[index].value if index < len(elements) and not any(
                isinstance(e, cst.StarredElement) for e in elements[: index + 1]) else None
            read_again = any(
                isinstance(n, cst.Name) and n.value == carry and n in facts.loads and n is not small.value
                for n in descendants(info.node.body)
            )
            if isinstance(item, cst.Name) and not read_again:
                cache[slot] = KeyFlow(facts, info.scope, statements[1:], key_param=item.value).param_use
    return cache[slot]  # type: ignore[return-value]


def _names_in(target: cst.BaseExpression) -> set[str]:
    return {name.value for name in target_name_nodes(target)}


def _key_argument(call: cst.Call) -> cst.BaseExpression | None:
    args = positional(call)
    if args:
        return args[0]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "key":
            return arg.value
    return None


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# samplers that, given one key for several arrays of one length, reorder them alike: paired
# data stays aligned, on purpose
class _CallCollector(Visitor):
    """Calls inner before outer, left to right, with the names comprehensions rebind there.
    A conditional expression is one item, not entered: only one of its arms runs."""

    def __init__(self, tables: frozenset[int] = frozenset()) -> None:
        self.tables = tables
        self.calls: list[tuple[cst.CSTNode, frozenset[str]]] = []
        self.shadowed: list[frozenset[str]] = [frozenset()]
        # a comprehension's first iterable runs once, in the enclosing scope
        self.outer_iterables: dict[int, frozenset[str]] = {}

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        self.calls.append((node, self.shadowed[-1]))
        return False

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if _table_display(node.value):
            self.tables = self.tables | {id(node.value)}  # `{"a": f(key), ...}[kind]`

    def visit_Dict(self, node: cst.Dict) -> bool:
        if id(node) not in self.tables:
            return True
        self.calls.append((node, self.shadowed[-1]))  # a table of choices: one value is used
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        if _selects(node) is None:
            return True
        self.calls.append((node, self.shadowed[-1]))  # an item of its own, like `a if c else b`
        return False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _COMPREHENSIONS):
            names, comp = set(), node.for_in
            self.outer_iterables[id(node.for_in.iter)] = self.shadowed[-1]
            while comp is not None:
                names |= _names_in(comp.target)
                comp = comp.inner_for_in
            self.shadowed.append(self.shadowed[-1] | names)
        if id(node) in self.outer_iterables:
            self.shadowed.append(self.outer_iterables[id(node)])
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.Call) and _selects(original_node) is None:
            self.calls.append((original_node, self.shadowed[-1]))
        if id(original_node) in self.outer_iterables:
            self.shadowed.pop()
        if isinstance(original_node, _COMPREHENSIONS):
            self.shadowed.pop()


def _table_display(node: cst.BaseExpression) -> bool:
    """A dict display of plain `key: value` items (no `**other`), at least one."""
    return isinstance(node, cst.Dict) and bool(node.elements) and all(isinstance(e, cst.DictElement) for e in node.elements)


def _selects(call: cst.Call) -> tuple[cst.BaseExpression, list[cst.BaseExpression]] | None:
    """`jnp.where(c, a, b)` / `lax.select(c, a, b)`: (c, [a, b]); `jnp.select(conditions,
    [a, b, c], default)`: (conditions, [a, b, c, default]). Each element comes from one of
    the choices, so a key drawn from in several gives no element two draws of it."""
    args = call.args
    if any(a.star for a in args):
        return None
    tail = call_tail(call.func)
    named = {a.keyword.value: a.value for a in args if a.keyword is not None}
    plain = [a.value for a in args if a.keyword is None]
    choices = named.get("choicelist", plain[1] if len(plain) > 1 else None)
    if tail == "select" and isinstance(choices, (cst.List, cst.Tuple)) and choices.elements and not any(isinstance(e, cst.StarredElement) for e in choices.elements):
        conditions = named.get("condlist", plain[0] if plain else None)
        default = named.get("default", plain[2] if len(plain) > 2 else None)
        if conditions is not None:
            return conditions, [element.value for element in choices.elements] + ([default] if default is not None else [])
    if tail in ("where", "select") and len(args) == 3 and not named:
        return plain[0], plain[1:]
    return None


def _calls_in_evaluation_order(node: cst.CSTNode, tables: frozenset[int] = frozenset()) -> list[tuple[cst.CSTNode, frozenset[str]]]:
    """Calls in an expression, inner before outer, left to right, each with the names that
    enclosing comprehensions rebind there; lambdas are not entered, conditional expressions
    and the dict displays `tables` names (tables of choices) are items of their own."""
    collector = _CallCollector(tables)
    walk(node, collector)
    return collector.calls


def key_flow(facts: ModuleFacts, source: str) -> list[Finding]:
    """Every PRNG finding of the module, computed once and shared by JG601-JG603.

    Every key comes from `jax.random` (made, split, or a parameter used as one, drawn from
    by `jax.random` or by a project function), so a body that calls neither has no key to
    track and is skipped.
    """
    if "prng" not in facts.derived:
        findings: list[Finding] = []
        if "random" in source or (facts.project is not None and facts.project.callees):
            findings += KeyFlow(facts, facts.module_scope, facts.module.body).findings
            for info in facts.functions.values():
                if isinstance(info.node, cst.Lambda) or info.abstract_only:
                    continue
                if not (_calls_jax_random(facts, info) or _keys_for_callees(facts, info.calls, info.scope)):
                    continue
                findings += KeyFlow(facts, info.scope, _block(info.node.body), facts.lax_loop_of(info)).findings
        facts.derived["prng"] = findings
    return facts.derived["prng"]


def _calls_jax_random(facts: ModuleFacts, info) -> bool:
    return any((facts.qualname(call.func, info.scope) or "").startswith("jax.random.")
               for call in (*info.calls, *_lambda_calls(facts, info)))


def _lambda_calls(facts: ModuleFacts, info) -> list[cst.Call]:
    """The calls inside lambdas written directly in `info` (`jax.tree.map(lambda p: ..., t)`)."""
    return [call for inner in facts.functions.values()
            if isinstance(inner.node, cst.Lambda) and facts.enclosing_function(inner.parent) is info
            for call in inner.calls]


class _KeyRule(Rule):
    in_tests = False  # tests reuse keys on purpose (comparing two implementations on one key)
    def finish(self) -> None:
        for finding in key_flow(self.ctx.facts, self.ctx.source):
            if finding.code == self.code:
                self.report(finding.use.node, self.describe(finding), statement=finding.use.statement)

    def describe(self, finding: Finding) -> str:
        raise NotImplementedError


@register
class KeyReuse(_KeyRule):
    code = "JG601"
    name = "prng-key-reuse"
    summary = "A PRNG key used twice gives the same random numbers twice"
    message = "PRNG key '{key}' is used again: it was already consumed by {previous}; split it and use a fresh subkey"
    what = """
        Flags a PRNG key consumed twice (by `jax.random` samplers or by functions it is passed
        to) with no `split` rebinding it in between, on some path. Not a consumption: abstract
        evaluations (`eval_shape`, `make_jaxpr`, `.lower()`, `flax.linen.tabulate` and a
        module's `.tabulate`), `clone`, what keeps the key (a constructor `State(rng=key)`,
        `dataclasses.replace`, Flax's `TrainState.create(..., rng=key)`, a container's
        `append`, a logger), a
        callee of the module (a method too, called on an object of a class of the module:
        `flow = Flow(); flow(x, rng_key=key)` runs `Flow.__call__`) that ignores its key,
        swallows it in a `**kwargs` it never reads, or
        re-derives it with `fold_in`; a function of another project module that splits the
        key and hands the keys only to functions that never read theirs (a deterministic
        `step(x, key)` kept for a common signature); a key in the
        carry of a `lax.scan`/`fori_loop`/`while_loop` whose body (of the module) passes it
        through untouched or drops it (`state, _ = carry`). A callee of the module that draws
        from the key only under `if p is None:`, given a value for `p`, may or may not draw:
        never paired with another use; one that draws only under `if split == "train":`,
        given "val", does not draw. A key given
        to a Haiku `apply` (in a module that imports Haiku; `hk.transform(f)[1]` too; any
        `.apply(params, key, ...)`, Haiku's signature) is drawn from only if the model has
        stochastic layers, which the linter cannot see: it is never paired with another use, though the same key
        given to `apply` in every iteration of a loop is still JG603. A key given to a
        function of another project module that only hands it to such an `apply` (through
        `jax.value_and_grad(loss)(params, key, x)` too) is treated the same. Likewise a key given to
        a stream other than "params" of a Flax `init` (`{"params": k, "dropout": k2}`) or among
        the arguments of the forward pass it runs (`actor.init(k, obs, rng=k)`), or of
        an `init_with_output` whose output is thrown away (`_, params = ...`), which is an init.
        A draw whose numbers are never used is paired with nothing either: a template read
        only for its `.shape`/`.dtype`, or a dummy input given to a model's `init`
        (`net.init(key, normal(key, (1, n)))`: init runs the model on it only to learn shapes;
        also with a batch axis added, `space.sample(key)[None]`; also when a project function
        gives it only to an `init` or reads only its shape: `setup(model, key2, x)`), or a
        value read only by an abstract evaluation (`jax.eval_shape(f, state.params)`), or
        never read at all (`X = sampler.sample(key)` with only `Y` used after; also a name
        bound twice that nothing reads; a draw that is a statement of its own, as in
        `normal(key, ()).block_until_ready()`, a wait for the device): a local of a function, or a top-level name of a
        notebook or a script no module imports (every reader is in view). The same call made twice, one result named a target
        (`params = net.init(key, x)`, `target_params = net.init(key, x)`) makes an RL target
        network an exact copy of the online one on purpose: not paired.
        An object's method is judged by its class, of this module or of the project, when
        every binding of the object is a call of that class (`self.act = Sigmoid()` in
        `__init__`, then `self.act(x, rng_key=key)` runs `Sigmoid.__call__`). A function of
        the module that only hands its key to code the linter cannot read (another library)
        is a possible draw, as a function of another project module is: paired only with a
        proven draw, never with another possible one. Two reorderings
        (`permutation`, `shuffle`, `choice(..., replace=False)`, which takes the first rows of
        a permutation, or callees of the module or of the project that only reorder with the key)
        are not paired: one key permutes paired arrays alike, on purpose. Draws under tests
        that cannot both hold (`if name == "moons":` and `if name == "grfs":`, with `name`
        a parameter the body never rebinds, or a local bound once) are not on one path;
        nor are the values of a table of choices, of which one is used (`{"random":
        normal(key, s), "lecun": normal(key, s) * c}[kind]`, or such a dict read once, by a
        subscript), or the choices of `jnp.where(c, a, b)` and `jnp.select(conditions,
        [a, b, c])`, of which each element takes one.
        In a notebook, draws are paired within a cell: a seed drawn from again in a later cell
        is shared by two experiments on purpose (a key used after a split is still JG602,
        also when it was drawn from before the split).
    """
    why = """
        JAX's random functions do not advance any state: the same key gives the same numbers.
        Two draws from one key are perfectly correlated, which silently breaks dropout masks,
        initializations and sampling.
    """
    example = """
        from jax import random

        key = random.PRNGKey(0)
        noise = random.normal(key, (3,))
        mask = random.bernoulli(key, 0.5, (3,))
    """
    use_instead = """
        from jax import random

        key = random.PRNGKey(0)
        key, noise_key, mask_key = random.split(key, 3)
        noise = random.normal(noise_key, (3,))
        mask = random.bernoulli(mask_key, 0.5, (3,))
    """
    invalid = (
        # a key the class stores: every read is the same key
        "import jax\nfrom base import KeyMixin\nclass Sampler(KeyMixin):\n    def __init__(self, seed):\n"
        "        self.rng_key = jax.random.key(seed)\n    def draw(self):\n"
        "        return jax.random.normal(self.rng_key), jax.random.uniform(self.rng_key)\n",
        # a key held by the object, drawn from twice
        "import jax\nclass Agent:\n    def act(self, obs):\n        a = jax.random.normal(self.key)\n"
        "        b = jax.random.uniform(self.key)\n        return a, b\n",
        "from jax import random\nkey = random.PRNGKey(0)\nprint(random.normal(key, shape=(1,)))\nprint(key)\nprint(random.normal(key, shape=(1,)))\n",
        "import jax\ndef init(key):\n    w = jax.random.normal(key, (3, 3))\n    b = jax.random.uniform(key, (3,))\n    return w, b\n",
        # a key drawn from before a select and again in one of its choices
        "import jax\nimport jax.numpy as jnp\ndef sample(key, p):\n    x = jax.random.normal(key, (2,))\n"
        "    return jnp.select([p == 0], [jax.random.uniform(key, (2,))], x)\n",
        # a table of draws read twice: two of its values are used
        "import jax\ndef init(n, key):\n    inits = {'a': jax.random.normal(key, (n,)), 'b': jax.random.uniform(key, (n,))}\n"
        "    return inits['a'] + inits['b']\n",
        # a split key of the module read by a function below (a global there)
        "import jax\nrng_key = jax.random.key(0)\nxx = jax.random.normal(rng_key, (3,))\ninit_key, run_key = jax.random.split(rng_key, 2)\n"
        "def use():\n    return jax.random.normal(init_key)\nprint(use(), xx)\n",
        "import jax\ndef f(key, flag):\n    if flag:\n        a = jax.random.normal(key)\n    b = jax.random.normal(key)\n    return a + b\n",
        # a callee of this module that does draw from the key it is given
        "import jax\ndef noise(key, n):\n    return jax.random.normal(key, (n,))\ndef f(key):\n    return noise(key, 2), noise(key, 3)\n",
        # a library's function handed the key, then a model's init draws from it
        "import jax\nimport mylib\ndef init(net, make, key, x):\n    key, sub = jax.random.split(key)\n"
        "    state = mylib.transform(make)[1](None, sub)\n    return net.init(sub, x, state)\n",
        # ... by splitting it and drawing from a result
        "import jax\ndef noise(key, n):\n    sub, key = jax.random.split(key)\n    return jax.random.normal(sub, (n,))\n"
        "def f(key):\n    return noise(key, 2), jax.random.uniform(key)\n",
        # a model's init draws its parameters from the key
        "import jax\ndef f(model, x):\n    key = jax.random.key(0)\n    params = model.init(key, x)\n"
        "    return params, jax.random.normal(key, x.shape)\n",
        # annotated as a key
        "import jax\ndef lookup(graph, rng):\n    return jax.random.normal(rng)\n"
        "def clients(graph, rng: jax.Array):\n    return lookup(graph, rng), lookup(graph, rng)\n",
        # a draw after the `where` that already drew from the key
        "import jax.numpy as jnp\nimport jax\ndef spot(key, square):\n"
        "    x = jnp.where(square, jax.random.uniform(key, (2,)), 0.0)\n    return x + jax.random.normal(key, (2,))\n",
        # the split key is read on the loop's next pass, above the split
        "import jax\ndef walk(key, n):\n    out = []\n    for _ in range(n):\n        out.append(jax.random.normal(key))\n"
        "        key, sub = jax.random.split(key)\n    return out\n",
        # a method the class inherits from a base class of the module, which draws from the key
        "import jax\nclass Base:\n    def noise(self, rng):\n        return jax.random.normal(rng)\n"
        "class Runner(Base):\n    def run(self, rng):\n        return self.noise(rng) + jax.random.uniform(rng)\n",
        # a dummy input handed to a helper that runs the model on it: its numbers are used
        "import jax\ndef fit(model, key, x):\n    return model.apply(model.init(key, x), x)\n"
        "def train(model, k1, k2):\n    x = jax.random.normal(k1, (4, 3))\n    return fit(model, k2, x), jax.random.normal(k1)\n",
        # a target network made from other inputs than the online one: not a copy
        "import jax\ndef make(net, x, y):\n    key = jax.random.key(0)\n    params = net.init(key, x)\n"
        "    target_params = net.init(key, y)\n    return params, target_params\n",
        # a demo input drawn twice from one key, then read
        "import jax\ndef demo(key):\n    X = jax.random.normal(key, (3,))\n    X = jax.random.normal(key, (4,))\n    return X\n",
        # a dummy input whose numbers a comprehension reads
        "import jax\ndef train(model, k1, k2):\n    x = jax.random.normal(k1, (4, 3))\n    params = model.init(k2, x)\n"
        "    rows = [float(v) for v in x[0]]\n    return params, rows, jax.random.normal(k1)\n",
    )
    valid = (
        # a dummy input handed to a helper that only gives it to the model's init (to learn
        # shapes): the numbers drawn for it correlate with nothing
        "import jax\ndef setup(model, key, x):\n    return model.init(key, x)\n"
        "def train(model, k1, k2):\n    x = jax.random.normal(k1, (4, 3))\n    return setup(model, k2, x), jax.random.normal(k1)\n",
        # a target network initialised as an exact copy of the online one, on purpose
        "import jax\ndef make(net, x):\n    key = jax.random.key(0)\n    params = net.init(key, x)\n"
        "    target_params = net.init(key, x)\n    return params, target_params\n",
        # ... and never read (its uses commented out): dead draws correlate with nothing
        "import jax\ndef demo(key):\n    X = jax.random.normal(key, (3,))\n    # print(X)\n    X = jax.random.normal(key, (4,))\n"
        "    return jax.random.uniform(key)\n",
        # ... given only to the init; a comprehension's own `x` is another variable
        "import jax\ndef train(model, k1, k2, losses):\n    x = jax.random.normal(k1, (4, 3))\n    params = model.init(k2, x)\n"
        "    losses = [float(x) for x in losses]\n    return params, losses, jax.random.normal(k1)\n",
        # a leftover split after the last read of the key: its results are never read
        "import jax\ndef reset_fn(key):\n    obs = jax.random.normal(key)\n    next_key, key = jax.random.split(key)\n    return obs\n",
        # dict displays looked up where they stand that are no table of draws
        "import jax\ndef pick(key, k, d):\n    a = {**d}[k]\n    b = {}[k]\n    return a, b, jax.random.normal(key)\n",
        # a table of initializers, each drawing from the key: one of them is used
        "import jax\nimport jax.numpy as jnp\ndef init(n, kind, key):\n"
        "    inits = {'zero': jnp.zeros(n), 'random': jax.random.normal(key, (n,)), 'lecun': jax.random.normal(key, (n,)) / n}\n"
        "    return inits[kind]\n",
        # ... the same names in a function below are that function's own variables
        "import jax\nrng_key = jax.random.key(0)\nxx = jax.random.normal(rng_key, (3,))\n"
        "init_key, run_key = jax.random.split(rng_key, 2)\n"
        "def run(key):\n    init_key, run_key = jax.random.split(key)\n    return jax.random.normal(init_key), run_key\n"
        "print(run(xx))\n",
        # a method inherited from a base class of the module that ignores the key (a stand-in
        # returning zeros)
        "import jax\nimport jax.numpy as jnp\nclass Base:\n    def fake_run(self, rng, params):\n        return jnp.zeros(3)\n"
        "class Runner(Base):\n    def run(self, rng, params):\n        return self.fake_run(rng, params) + jax.random.uniform(rng)\n",
        # a key in second place of an `apply` (Haiku's signature, as acme's networks carry it):
        # drawn from only if the model has stochastic layers
        "import jax\nimport rlax\ndef act(networks, params, obs, rng):\n    rng, policy_rng = jax.random.split(rng)\n"
        "    q = networks.apply(params, policy_rng, obs)\n    return rlax.epsilon_greedy(0.1).sample(policy_rng, q), rng\n",
        # flax.linen.tabulate runs the module under eval_shape: nothing is drawn
        "import jax\nimport flax.linen as nn\ndef summary(model, sample):\n    key = jax.random.PRNGKey(0)\n"
        "    x = sample(key)\n    return nn.tabulate(model, rngs=key)(x, key)\n",
        # a Haiku apply, indexed from the (init, apply) pair: draws only if the model is stochastic
        "import jax\nimport haiku as hk\ndef init(net, make, key, x):\n    key, sub = jax.random.split(key)\n"
        "    state = hk.transform(lambda: make().initial_state(1))[1](None, sub)\n    return net.init(sub, x, state)\n",
        # a callee whose split results are never read: a dead split draws nothing
        "import jax\ndef scale(key, x):\n    sub, key = jax.random.split(key)\n    return x * 2\n"
        "def f(key, x):\n    return scale(key, x), jax.random.uniform(key)\n",
        # an attribute only a base class from elsewhere provides: maybe a property that
        # splits a fresh key on every read
        "import jax\nfrom base import KeyMixin\nclass Sampler(KeyMixin):\n    def draw(self):\n"
        "        return jax.random.normal(self.rng_key), jax.random.uniform(self.rng_key)\n",
        # a generator object that advances its own state (`rng._state = ...`) is not a key
        "import jax\ndef advance(seed):\n    return jax.random.split(seed)[0]\ndef count(flux, rng):\n"
        "    rng._state = advance(rng)\n    return flux\ndef shoot(n, rng):\n    rng._state = advance(rng)\n    return n\n"
        "def draw(flux, rng):\n    n = count(flux, rng)\n    return shoot(n, rng)\n",
        # annotated with a type no key has: `rng` is a graph variable, `key` a dict key
        "import jax\ndef lookup(graph, rng):\n    return jax.random.normal(rng)\n"
        "def clients(graph, rng: Variable):\n    return lookup(graph, rng), lookup(graph, rng)\n",
        # a predicate that inspects whether a function takes a key does not draw from it
        "import jax\ndef noise(fn, key, x):\n    if accepts_args(fn, key=key):\n        key, sub = jax.random.split(key)\n"
        "        x = fn(x, key=sub)\n    return x + jax.random.gumbel(key, x.shape)\n",
        # `where`/`select` keeps one of the two draws for each element: no element sees both
        "import jax\ndef spot(key, square):\n    return jax.lax.select(square, jax.random.uniform(key, (2,)), jax.random.normal(key, (2,)))\n",
        # the object's key split and rebound before the next draw
        "import jax\nclass Agent:\n    def act(self, obs):\n        self.key, sub = jax.random.split(self.key)\n"
        "        a = jax.random.normal(sub)\n        self.key, sub = jax.random.split(self.key)\n"
        "        return a, jax.random.uniform(sub)\n",
        # callables whose code is not read: the key may or may not be drawn from (unknown)
        "import jax\ndef make(layer_a, layer_b):\n    rng = jax.random.PRNGKey(0)\n    return layer_a(rng), layer_b(rng)\n",
        # a key stored in a tuple (a scan carry), an `rngs` dict, a logger: not draws
        "import jax\nimport logging\ndef f(model, x, step):\n    key = jax.random.key(0)\n    logging.info('key %s', key)\n"
        "    y = model.apply(x, rngs={'dropout': key})\n    return jax.lax.scan(step, (x, key), None, length=3), y\n",
        "from jax import random\nkey = random.PRNGKey(0)\nkey, subkey = random.split(key)\nx = random.normal(subkey, (1,))\nkey, subkey = random.split(key)\ny = random.normal(subkey, (1,))\n",
        "import jax\ndef f(key, flag):\n    if flag:\n        return jax.random.normal(key)\n    return jax.random.uniform(key)\n",
        "import jax\nkey = jax.random.key(0)\nkeys = jax.random.split(key, 3)\na = jax.random.normal(keys[0])\nb = jax.random.normal(keys[1])\n",
        "import jax\ndef f(key, x):\n    if x:\n        y = jax.random.normal(key)\n    else:\n        y = jax.random.uniform(key)\n    return y\n",
        # a comprehension's own `rng`, one per split key (stax.parallel)
        "from jax import random\ndef init_fun(rng, inits):\n    rngs = random.split(rng, len(inits))\n"
        "    return [init(rng) for init, rng in zip(inits, rngs)]\n",
        "import jax\ndef sample(key, is_prng_key):\n    assert is_prng_key(key)\n    return jax.random.normal(key)\n",
        # `key` that is a dictionary or cache key
        "def lookup(cache, key):\n    if cache.get(key) is None:\n        cache.put(key, 1)\n    return cache.get(key)\n",
        # abstract evaluations draw no numbers (and helpers named for them)
        "import jax\ndef shapes(f, x):\n    rng = jax.random.PRNGKey(0)\n    params = jax.eval_shape(f.init, rng, x)\n"
        "    fast = fast_eval_shape(f.init, rng, x)\n    jaxpr = jax.make_jaxpr(f.apply)(params, rng, x)\n"
        "    info = jaxpr_info.make_model_info(f.apply)(params, rng, x)\n    return jax.jit(f.apply).lower(params, rng, x)\n",
        # a callee of this module that ignores its key (a deterministic task)
        "import jax\ndef score(genotypes, key):\n    return genotypes * 2\ndef test_score():\n"
        "    key = jax.random.key(0)\n    a = score(1.0, key)\n    b = score(2.0, key)\n",
        # an explicit copy: jax.random.clone, or a helper named for it
        "import jax\ndef check(seq_fn, k):\n    s = seq_fn(k)\n    ref = jax.random.split(jax.random.clone(k), 3)\n"
        "    ref2 = jax.random.split(test_utils.clone(k), 3)\n    return s, ref, ref2\n",
        # a function given to eval_shape: its body never runs on real values
        "import jax\ndef structure(fns):\n    def get_tree():\n        rng = jax.random.PRNGKey(42)\n"
        "        params = fns.init(rng)\n        return fns.apply(params, rng)\n    return jax.eval_shape(get_tree)\n",
        # Haiku's apply takes a key whether or not the model draws from it (Haiku's own idiom)
        "import haiku as hk\nimport jax\ndef run(f, x):\n    rng = jax.random.PRNGKey(42)\n"
        "    params = f.init(rng, x)\n    return jax.jit(f.apply)(params, rng, x)\n",
        # only one arm of a conditional expression runs
        "import jax\ndef sample(key, is_int):\n    return jax.random.randint(key, (2,), 0, 2) if is_int else jax.random.normal(key, (2,))\n",
        # each element comes from one choice of a select (katmer's polarization table)
        "import jax\nimport jax.numpy as jnp\ndef sample(key, p):\n    return jnp.select(\n        condlist=[p == 0, p == 1],\n"
        "        choicelist=[jax.random.normal(key, (2,)), jax.random.uniform(key, (2,))],\n    )\n",
        # a function of the module that splits its key only for a step that never reads its
        # key draws nothing from it (variational_filtering's notebook `ensrf_steps`)
        "import jax\nimport jax.numpy as jnp\ndef step(x, key):\n    return x * 0.5\n"
        "def steps(x, key):\n    key, *subkeys = jax.random.split(key, 4)\n    subkeys = jnp.array(subkeys)\n"
        "    def inner(c, t):\n        return step(c, subkeys[t]), None\n    return jax.lax.scan(inner, x, jnp.arange(3))[0]\n"
        "def run(x, key):\n    return steps(x, key) + jax.random.normal(key)\n",
    )

    def describe(self, finding: Finding) -> str:
        return self.message.format(key=finding.use.key, previous=finding.previous.consumer if finding.previous else "an earlier call")


@register
class KeyUsedAfterSplit(_KeyRule):
    code = "JG602"
    name = "prng-key-used-after-split"
    summary = "A PRNG key used after it was split: the numbers correlate with its subkeys"
    message = "PRNG key '{key}' is used after it was split: use one of the keys split from it"
    what = """
        Flags a key consumed after it was split (`k1, k2 = split(key)` and then `normal(key, ...)`),
        and a key both folded with a literal index and split into more keys than that index:
        under JAX's default (partitionable) threefry, `fold_in(key, i)` is the same key as
        `split(key, n)[i]` for `i < n` (verified on jax 0.10.2), so the two hand out identical
        numbers. A split assigned to names never read (`_, sub = split(key)` left over), or
        read only by an abstract evaluation (`jax.jit(step).lower(keys, ...)`, `eval_shape`),
        draws nothing and is no use of the key; nor is the first of two identical splits in
        one block whose results nothing reads before the second rebinds them; nor a split
        whose keys are read only by functions shown to ignore their key (a function of the
        module whose body never draws from it, or of the project the index judges so), on
        the way kept by array code (`subkeys = jnp.array(subkeys)`) or read by item
        (`step(x, subkeys[t])`). Keys mapped over by a function (`jax.tree.map(f, keys)`,
        `map(f, keys)`) may be drawn from by it. A draw that is a statement of its own
        (`normal(key, ()).block_until_ready()`, a wait for the device) gives numbers nobody
        reads, and is no use either.
    """
    why = """
        `split(key)` consumes `key`: the new keys are derived from it, and drawing from the old
        key afterwards correlates the draws with everything derived from the split. Splitting
        it again hands out the same keys again, position by position whatever the count:
        `split(key)[0]` and later `split(key)[1]` are two distinct keys (not reported), while
        `split(key, n)` and later `split(key)[0]` both hold key 0.
    """
    example = """
        import jax

        key = jax.random.key(0)
        k1, k2 = jax.random.split(key)
        x = jax.random.normal(key, (2,)) + jax.random.normal(k1, (2,))
    """
    use_instead = """
        import jax

        key = jax.random.key(0)
        key, k1, k2 = jax.random.split(key, 3)
        x = jax.random.normal(k1, (2,))
    """
    invalid = (
        "import jax\nkey = jax.random.key(0)\nk1, k2 = jax.random.split(key)\nx = jax.random.normal(key, (2,)) + jax.random.normal(k2, (2,))\n",
        "from jax import random as jr\ndef f(rng):\n    keys = jr.split(rng, 4)\n    return jr.uniform(rng), keys\n",
        "import jax\ndef f(key):\n    a, b = jax.random.split(key)\n    c, d = jax.random.split(key)\n    return a, b, c, d\n",
        # fold_in(key, 1) is split(key, 2)[1] under threefry: the same key handed out twice
        "import jax\ndef f(key):\n    k = jax.random.fold_in(key, 1)\n    return k, jax.random.split(key)\n",
        "import jax\ndef f(key):\n    keys = jax.random.split(key, 4)\n    return keys, jax.random.fold_in(key, 2)\n",
        # key 0 of any split of a key is one key (threefry): both get it
        "import jax\ndef f(seed, n):\n    seeds = jax.random.split(seed, n)\n    seed = jax.random.split(seed)[0]\n    return seeds, seed\n",
        "import jax\ndef f(seed):\n    a = jax.random.split(seed)[1]\n    b = jax.random.split(seed, 3)[1]\n    return a, b\n",
        # the same split written twice, its first keys read between: both splits hand them out
        "import jax\ndef adapt(rng_key):\n    part1, part2 = jax.random.split(rng_key, 2)\n    x = jax.random.normal(part1)\n"
        "    part1, part2 = jax.random.split(rng_key, 2)\n    return x, jax.random.normal(part1)\n",
        # the keys of a second split run the step for real
        "import jax\ndef hlo(step, key, state):\n    states = jax.vmap(step)(jax.random.split(key, 4), state)\n"
        "    keys = jax.random.split(key, 4)\n    return jax.jit(jax.vmap(step))(keys, states)\n",
        # the split keys go to a function of the module that draws from its key
        "import jax\nimport jax.numpy as jnp\ndef perturb(x, key):\n    return x + jax.random.normal(key)\n"
        "def f(x, key):\n    subkeys = jnp.array(jax.random.split(key, 3))\n    y = perturb(x, subkeys[0])\n"
        "    return y + jax.random.normal(key)\n",
        # ... or to a function mapped over them, which may draw
        "import jax\ndef f(x, key):\n    keys = jax.random.split(key, 3)\n"
        "    noise = jax.tree.map(lambda k: jax.random.normal(k), list(keys))\n    return noise, jax.random.normal(key)\n",
    )
    valid = (
        # the keys of a second split only lowered, to read the compiled program: nothing drawn
        "import jax\ndef hlo(step, key, state):\n    states = jax.vmap(step)(jax.random.split(key, 4), state)\n"
        "    keys = jax.random.split(key, 4)\n    return jax.jit(jax.vmap(step)).lower(keys, states).as_text()\n",
        "import jax\nkey = jax.random.key(0)\nkey, sub = jax.random.split(key)\nx = jax.random.normal(key, (2,))\n",
        "import jax\nkey = jax.random.key(0)\nkey, *subkeys = jax.random.split(key, 4)\nfor subkey in subkeys:\n    print(jax.random.normal(subkey, shape=(1,)))\n",
        # a fold index the split does not reach, and one that is not a literal
        "import jax\ndef f(key, step):\n    k = jax.random.fold_in(key, 5)\n    j = jax.random.fold_in(key, step)\n"
        "    return k, j, jax.random.split(key, 3)\n",
        # a second split whose results are never read: nothing drawn (a leftover line)
        "import jax\ndef step(key_):\n    a, b = jax.random.split(key_)\n    x = jax.random.normal(a) + jax.random.normal(b)\n"
        "    _, subkey_ = jax.random.split(key_)\n    return x\n",
        # the same split line written twice: the first results are rebound unused
        "import jax\ndef output(rng_key):\n    policy_rng, value_rng = jax.random.split(rng_key, 2)\n"
        "    policy_rng, value_rng = jax.random.split(rng_key, 2)\n    return policy_rng, value_rng\n",
        # ... with other code between that does not read them
        "import jax\ndef adapt(rng_key, dim):\n    part1, part2 = jax.random.split(rng_key, 2)\n    scale = dim ** 0.5\n"
        "    part1, part2 = jax.random.split(rng_key, 2)\n    return part1, part2, scale\n",
        # the split computed again, each time for another of its keys: distinct keys
        "import jax\ndef f(seed, n):\n    seeds_h = jax.random.split(jax.random.split(seed)[0], n)\n"
        "    seeds_v = jax.random.split(jax.random.split(seed)[1], n)\n    return seeds_h, seeds_v\n",
        # the split keys go only to a function of the module that never reads its key (a
        # deterministic step kept for a common signature): the split draws nothing
        "import jax\nimport jax.numpy as jnp\ndef step(x, key):\n    return x * 0.5\n"
        "def f(x, key):\n    subkeys = jax.random.split(key, 4)\n    subkeys = jnp.array(subkeys)\n"
        "    def inner(c, t):\n        return step(c, subkeys[t]), None\n"
        "    y, _ = jax.lax.scan(inner, x, jnp.arange(3))\n    return y + jax.random.normal(key)\n",
    )

    def describe(self, finding: Finding) -> str:
        return finding.note or self.message.format(key=finding.use.key)


@register
class KeyReusedInLoop(_KeyRule):
    code = "JG603"
    name = "prng-key-reused-in-loop"
    summary = "A PRNG key consumed in a loop without being rebound: every iteration draws the same numbers"
    message = "PRNG key '{key}' is consumed in a loop body without being rebound there: every iteration draws the same numbers"
    what = """
        Flags a key consumed inside a loop body (`for`, `while`, or a `fori_loop`/`scan`/`while_loop`
        body) that the body does not rebind, in every element of a comprehension, and in a
        function mapped over every leaf of a pytree (`jax.tree.map(lambda p: p + normal(key,
        p.shape), params)`: leaves of one shape get the same noise). A permutation, shuffle or
        choice with one key for several arrays or leaves keeps their rows aligned, on purpose,
        and is not flagged. The key must be drawn from (a sampler, `split`, a project function
        whose body draws from it): a key handed in a loop to code whose body is not read (a
        method of an object, a function passed in) may be re-derived there each time
        (`fold_in(key, self.name)`), and is not flagged.
    """
    why = """
        Each iteration passes the same key, so each iteration gets the same random numbers.
        Split inside the loop (`key, sub = split(key)`), fold the step in (`fold_in(key, i)`),
        or split all keys up front.
    """
    example = """
        import jax

        key = jax.random.key(0)
        samples = []
        for step in range(10):
            samples.append(jax.random.normal(key, (2,)))
    """
    use_instead = """
        import jax

        key = jax.random.key(0)
        samples = []
        for step in range(10):
            key, sub = jax.random.split(key)
            samples.append(jax.random.normal(sub, (2,)))
    """
    invalid = (
        # a vmapped lambda that draws from each key, the same keys every pass
        "import jax\ndef run(trials, conds):\n    keys = jax.random.split(jax.random.PRNGKey(0), trials)\n    out = []\n"
        "    for c in conds:\n        out.append(jax.vmap(lambda k: jax.random.normal(k))(keys))\n    return out\n",
        # a comprehension drawing from one key for every element
        "import jax\ndef noise(key):\n    return [jax.random.uniform(key) for _ in range(3)]\n",
        "import jax\nkey = jax.random.key(0)\nfor i in range(3):\n    x = jax.random.uniform(key)\n",
        "import jax\nfrom jax import lax\nkey = jax.random.key(0)\ndef body(i, acc):\n    return acc + jax.random.normal(key)\nout = lax.fori_loop(0, 10, body, 0.0)\n",
        "import jax\ndef noise(key):\n    return jax.random.normal(key)\ndef train(n):\n    key = jax.random.key(0)\n"
        "    for _ in range(n):\n        noise(key)\n",
        # one key for every leaf of a pytree
        "import jax\ndef perturb(params, key):\n    return jax.tree.map(lambda p: p + jax.random.normal(key, p.shape), params)\n",
        # the object's key drawn from on every pass, never rebound
        "import jax\nclass Game:\n    def update(self, events):\n        for event in events:\n"
        "            self.play(jax.random.normal(self.rng))\n",
    )
    valid = (
        # a vmapped lambda that only folds each key with the loop's index: a new key per pass
        "import jax\ndef run(trials, conds):\n    keys = jax.random.split(jax.random.PRNGKey(0), trials)\n    out = []\n"
        "    for i, c in enumerate(conds):\n        out.append(jax.vmap(lambda k: jax.random.fold_in(k, i))(keys))\n    return out\n",
        # the same permutation for each of several arrays: paired data stays aligned
        "import jax\ndef shuffle(key, arrays):\n    return [jax.random.permutation(key, a) for a in arrays]\n",
        "import jax\ndef pick(genotypes, key):\n    return jax.tree.map(lambda x: jax.random.choice(key, x, (1,)), genotypes)\n",
        "import jax\ndef noise(key):\n    return [jax.random.normal(k) for k in jax.random.split(key, 3)]\n",
        "import jax\ndef noise(key):\n    return [jax.random.normal(jax.random.fold_in(key, i)) for i in range(3)]\n",
        "import jax\nkey = jax.random.key(0)\nfor i in range(3):\n    key, sub = jax.random.split(key)\n    x = jax.random.uniform(sub)\n",
        "import jax\nkey = jax.random.key(0)\nfor i in range(3):\n    x = jax.random.uniform(jax.random.fold_in(key, i))\n",
        "import jax\nkey = jax.random.key(0)\nfor k in jax.random.split(key, 3):\n    x = jax.random.uniform(k)\n",
        "import jax\nfrom jax import lax\ndef body(i, carry):\n    key, acc = carry\n    key, sub = jax.random.split(key)\n    return key, acc + jax.random.normal(sub)\nout = lax.fori_loop(0, 10, body, (jax.random.key(0), 0.0))\n",
        # the callee re-derives a fresh key from the step it is given
        "import jax\ndef train_step(state, batch, key):\n    key = jax.random.fold_in(key, state.step)\n"
        "    return state.apply(batch, jax.random.split(key)[0])\ndef train(state, batches):\n    key = jax.random.key(0)\n"
        "    for batch in batches:\n        state = train_step(state, batch, key)\n    return state\n",
        # code whose body is not read may derive a new key each time (`fold_in(key, self.name)`)
        "import jax\ndef train(step, n):\n    key = jax.random.key(0)\n    for _ in range(n):\n        step(key)\n",
        "import jax\ndef inject(detectors):\n    key = jax.random.key(0)\n    for d in detectors:\n"
        "        d.inject_signal(rng_key=key)\n",
        # a benchmark loop that only lowers (traces and compiles): no number is drawn
        "import jax\ndef bench(init, x, state):\n    k = jax.random.PRNGKey(42)\n    while state:\n"
        "        jax.jit(init).lower(k, x).compile()\n",
        # the object's key is split and rebound in the loop body
        "import jax\nclass Game:\n    def update(self, events):\n        for event in events:\n"
        "            self.rng, sub = jax.random.split(self.rng)\n            self.play(sub)\n",
    )

    def describe(self, finding: Finding) -> str:
        return finding.note or self.message.format(key=finding.use.key)


@register
class ConstantSeedInLoop(Rule):
    in_tests = False  # a test's fixed seed in a loop is how tests are made repeatable
    code = "JG604"
    name = "prng-constant-seed-in-loop"
    summary = "A PRNG key made from a constant seed inside a loop or a traced function: the same key each time"
    message = "{call} with a constant seed inside a {where} makes the same key every time"
    default_on = False  # on real code a fixed seed there was deliberate every time it was judged
    what = """
        Flags `jax.random.key(CONST)` / `jax.random.PRNGKey(CONST)` inside a loop or a traced function.

        Opt-in. On real code the fixed seed was deliberate or harmless every time: a reproducible
        start vector for a solver, a compile warm-up, common random numbers for an evaluation,
        a key whose draw is read only for its shape. Judged findings on the 40-package tuning
        set: 0 real, 10 deliberate, 9 false; on 18 packages it was not tuned on: 0 real, 25
        deliberate, 6 false; on 54 more packages since: 0 real, 6 deliberate, 2 false. Select
        it (`--select JG604`) to review fixed seeds in loops and jitted functions.
    """
    why = """
        A constant seed inside a loop or a jitted function re-creates the identical key on every
        iteration or call, so every draw is the same. Create the key once, outside, and pass it
        in (or split it per iteration).
    """
    example = """
        import jax

        @jax.jit
        def add_noise(x):
            key = jax.random.PRNGKey(0)
            return x + jax.random.normal(key, x.shape)
    """
    use_instead = """
        import jax

        @jax.jit
        def add_noise(key, x):
            return x + jax.random.normal(key, x.shape)
    """
    invalid = (
        "import jax\nfor i in range(3):\n    key = jax.random.key(42)\n",
        "import jax\n@jax.jit\ndef f(x):\n    return x + jax.random.normal(jax.random.PRNGKey(0), x.shape)\n",
        "from jax import random\ndef sample(n):\n    out = []\n    while len(out) < n:\n        out.append(random.uniform(random.PRNGKey(1)))\n    return out\n",
        # a seed in the iterable of an inner loop is evaluated on every pass of the outer one
        "import jax\nfor epoch in range(3):\n    for k in jax.random.split(jax.random.PRNGKey(0), 4):\n        x = jax.random.normal(k)\n",
        "import jax\n@jax.jit\ndef f(params, x):\n    return model.apply(params, x, rngs={'dropout': jax.random.key(0)}, train=True)\n",
    )
    valid = (
        "import jax\nkey = jax.random.key(0)\nfor i in range(3):\n    key, sub = jax.random.split(key)\n",
        "import jax\nfor seed in range(3):\n    key = jax.random.key(seed)\n",
        "import jax\ndef make(seed):\n    return jax.random.PRNGKey(seed)\n",
        # the `for` statement's iterable is evaluated once
        "import jax\nfor rng in jax.random.split(jax.random.PRNGKey(42), 5):\n    x = jax.random.normal(rng)\n",
        # a function only eval_shape traces: the key never draws numbers
        "import jax\ndef shapes(model, graph):\n    def init(g):\n        key = jax.random.PRNGKey(0)\n"
        "        return model.init(key, g)\n    return jax.eval_shape(init, graph)\n",
        # dropout off: the key passed for it is never used
        "import jax\n@jax.jit\ndef infer(params, x):\n    return model.apply(params, x, rngs={'dropout': jax.random.key(0)}, train=False)\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.loop_scopes: list[tuple[cst.CSTNode, Scope]] = []  # enclosing loops and the scope each runs in
        self.iterable_of: dict[cst.Call, cst.For] = {}  # key makers in a `for` statement's iterable
        self.unused: set[cst.Call] = set()  # key makers passed where nothing is drawn from them

    def visit_For(self, node: cst.For) -> None:
        # `for k in split(PRNGKey(0), 5):` the iterable is evaluated once, before the loop
        self.iterable_of.update((call, node) for call in _calls_in(node.iter))
        self.loop_scopes.append((node, self.ctx.scope))

    def leave_For(self, original_node: cst.For) -> None:
        self.loop_scopes.pop()

    def visit_While(self, node: cst.While) -> None:
        self.loop_scopes.append((node, self.ctx.scope))

    def leave_While(self, original_node: cst.While) -> None:
        self.loop_scopes.pop()

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.qualname(node.func)
        if name not in KEY_MAKERS:
            if _deterministic_call(node):
                self.unused.update(call for arg in node.args for call in _passed_calls(arg.value))
            return
        args = positional(node)
        seed = args[0] if args else None
        if seed is None or literal_int(seed) is None or node in self.unused:
            return
        if self.ctx.facts.runs_abstractly(self.ctx.scope):
            return  # eval_shape / make_jaxpr: the key is never used to draw numbers
        # a def inside a loop body runs once per call, not once per iteration
        before = self.iterable_of.get(node)
        in_loop = any(scope is self.ctx.scope and loop is not before for loop, scope in self.loop_scopes)
        where = "loop" if in_loop else ("traced function" if self.ctx.in_traced else None)
        if where is not None:
            self.report(node, self.message.format(call=name, where=where))


# Keywords by which a model call says it runs without randomness (dropout off).
_DETERMINISTIC = {"train": False, "training": False, "is_training": False, "deterministic": True}


def _deterministic_call(call: cst.Call) -> bool:
    """`model.apply(params, x, rngs={"dropout": key}, train=False)`: no number is drawn."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in _DETERMINISTIC:
            if isinstance(arg.value, cst.Name) and arg.value.value == str(_DETERMINISTIC[arg.keyword.value]):
                return True
    return False


def _passed_calls(value: cst.BaseExpression) -> list[cst.Call]:
    """Calls passed as an argument, directly or in a literal dict/tuple/list (`rngs={...}`)."""
    if isinstance(value, cst.Call):
        return [value]
    if isinstance(value, (cst.Dict, cst.Tuple, cst.List)):
        return [call for element in value.elements for call in _passed_calls(element.value)]
    return []


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    calls = []
    for item, _ in _calls_in_evaluation_order(node):
        if isinstance(item, cst.IfExp):
            calls += [call for part in (item.test, item.body, item.orelse) for call in _calls_in(part)]
        elif isinstance(item, cst.Dict):  # a table of choices
            calls += [call for element in item.elements for call in _calls_in(element.value)]
        else:
            calls.append(item)
    return calls
