"""JG601-JG604: PRNG keys must be split, never reused (sharp bits: "Random Numbers").

One key-flow analysis per function body (and the module body) walks statements in order,
path by path: a key is consumed by a `jax.random` sampler, by `split`, or by being passed
to another function; rebinding the name gives a fresh key. `fold_in` derives a new key
without consuming the old one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from jaxguard.lint.facts import ModuleFacts, Scope, literal_int, positional, target_name_nodes
from jaxguard.lint.registry import Rule, register
from jaxguard.lint.walk import Visitor, walk

KEY_MAKERS = frozenset({"jax.random.key", "jax.random.PRNGKey"})
KEY_SOURCES = KEY_MAKERS | {
    "jax.random.split", "jax.random.fold_in", "jax.random.clone", "jax.random.wrap_key_data",
}
NOT_CONSUMING = frozenset(
    {
        "jax.random.fold_in", "jax.random.key_data", "jax.random.key_impl", "jax.random.clone",
        "jax.random.wrap_key_data", "jax.random.key", "jax.random.PRNGKey",
    }
)
NEUTRAL_PREFIXES = ("builtins.", "jax.debug.", "jax.numpy.", "jax.tree_util.", "jax.tree.", "numpy.", "jax.device_put", "jax.block_until_ready")
KEY_PARAM = re.compile(r"^(key|rng|prng|prng_key|rng_key|seed_key|\w+_key|\w+_rng)$")
PREDICATE = re.compile(r"^_?(is|has|check|assert|validate|print|log)(_|[A-Z]|$)")
LOOP_BODIES = ("jax.lax.fori_loop", "jax.lax.scan", "jax.lax.while_loop", "jax.lax.map")


@dataclass
class Use:
    key: str  # "key" or "keys[0]"
    node: cst.CSTNode
    consumer: str
    is_split: bool
    statement: cst.CSTNode | None


@dataclass
class Finding:
    code: str
    use: Use
    previous: Use | None = None


@dataclass
class _State:
    consumed: dict[str, Use] = field(default_factory=dict)

    def copy(self) -> _State:
        return _State(dict(self.consumed))

    def merge(self, other: _State) -> None:
        for key, use in other.consumed.items():
            self.consumed.setdefault(key, use)


class _Terminated(Exception):
    """Raised inside a branch walk when the branch returns/raises: its state does not flow on."""


class KeyFlow:
    def __init__(self, facts: ModuleFacts, scope: Scope, body, loop_body_of: str | None = None) -> None:
        self.facts = facts
        self.scope = scope
        self.findings: list[Finding] = []
        self.keys: set[str] = set()
        self.loop_depth_keys: list[set[str]] = []  # names rebound inside each enclosing loop
        self.loop_body_of = loop_body_of
        function = scope.function
        if function is not None:
            # a parameter named like a key is one only if it is used as a key here
            # (`key` is just as often a dict key or a cache key)
            used_as_keys = self._random_key_names(function.calls)
            self.keys.update(p for p in function.params if KEY_PARAM.match(p) and p in used_as_keys)
        self.statement: cst.CSTNode | None = None
        self._walk(body, _State())

    def _random_key_names(self, calls) -> set[str]:
        names = set()
        for call in calls:
            if (self.facts.qualname(call.func, self.scope) or "").startswith("jax.random."):
                arg = _key_argument(call)
                if isinstance(arg, cst.Name):
                    names.add(arg.value)
        return names

    # statements ------------------------------------------------------------------
    def _walk(self, statements, state: _State) -> _State:
        for statement in statements:
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
            then = self._walk(_block(statement.body), state.copy())
            other = state.copy()
            if statement.orelse is not None:
                orelse = statement.orelse
                other = self._statement(orelse, other) if isinstance(orelse, cst.If) else self._walk(_block(orelse.body), other)
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

    def _loop(self, statement, state: _State) -> _State:
        rebound = _assigned_names(statement.body)
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
            source = self._is_key_source(small.value)
            for target in small.targets:
                for name in _names_in(target.target):
                    _forget(state, name)
                    if source:
                        self.keys.add(name)
                    else:
                        self.keys.discard(name)
            return state
        if isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            if small.value is not None:
                self._expression(small.value, state)
            for name in _names_in(small.target):
                _forget(state, name)
            return state
        if isinstance(small, cst.Expr):
            self._expression(small.value, state)
        return state

    # expressions ---------------------------------------------------------------------
    def _is_key_source(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Call):
            return self.facts.qualname(node.func, self.scope) in KEY_SOURCES
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
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and literal_int(index.value) is not None and node.value.value in self.keys:
                return f"{node.value.value}[{literal_int(index.value)}]"
        return None

    def _expression(self, node: cst.BaseExpression, state: _State) -> None:
        for call, shadowed in _calls_in_evaluation_order(node):
            self._call(call, state, shadowed)

    def _call(self, call: cst.Call, state: _State, shadowed: frozenset[str] = frozenset()) -> None:
        name = self.facts.qualname(call.func, self.scope)
        if name in NOT_CONSUMING:
            return
        if name is not None and name.startswith("jax.random."):
            arg = _key_argument(call)
            key = self._key_id(arg, known_only=False) if arg is not None else None
            if key is not None and key.split("[")[0] not in shadowed:
                self._consume(key, call, name, name == "jax.random.split", state)
            return
        if name is not None and name.startswith(NEUTRAL_PREFIXES):
            return
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("shape", "dtype", "astype"):
            return
        found = [(k, arg.value) for arg in call.args if (k := self._key_id(arg.value, known_only=True)) is not None]
        found = [(k, node) for k, node in found if k.split("[")[0] not in shadowed]
        if not found:
            return
        consumer = self._describe(call)
        if PREDICATE.match(consumer.rsplit(".", 1)[-1]):
            return  # `is_prng_key(key)`, `check_key(key)`: looking is not drawing
        for key, node in found:
            self._consume(key, node, consumer, False, state)

    def _describe(self, call: cst.Call) -> str:
        try:
            return cst.Module([]).code_for_node(call.func).strip()
        except Exception:
            return "a function"

    def _consume(self, key: str, node, consumer: str, is_split: bool, state: _State) -> None:
        use = Use(key, node, consumer, is_split, self.statement)
        previous = state.consumed.get(key)
        if previous is not None:
            self.findings.append(Finding("JG602" if previous.is_split else "JG601", use, previous))
        else:
            base = key.split("[")[0]
            in_loop = self.loop_depth_keys and base not in self.loop_depth_keys[-1]
            if in_loop and (base in self.keys or consumer.startswith("jax.random.")):
                self.findings.append(Finding("JG603", use))
            elif self.loop_body_of and self.scope.lookup(base) is not self.scope and self.scope.lookup(base) is not None:
                self.findings.append(Finding("JG603", use))
        state.consumed.setdefault(key, use)


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


def _forget(state: _State, name: str) -> None:
    for key in [k for k in state.consumed if k == name or k.startswith(name + "[")]:
        del state.consumed[key]


def _names_in(target: cst.BaseExpression) -> set[str]:
    return {name.value for name in target_name_nodes(target)}


def _assigned_names(block) -> set[str]:
    names: set[str] = set()

    class _Collect(Visitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(_names_in(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(_names_in(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(_names_in(node.target))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    walk(block, _Collect())
    return names


def _key_argument(call: cst.Call) -> cst.BaseExpression | None:
    args = positional(call)
    if args:
        return args[0]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "key":
            return arg.value
    return None


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


class _CallCollector(Visitor):
    """Calls inner before outer, left to right, with the names comprehensions rebind there."""

    def __init__(self) -> None:
        self.calls: list[tuple[cst.Call, frozenset[str]]] = []
        self.shadowed: list[frozenset[str]] = [frozenset()]

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _COMPREHENSIONS):
            names, comp = set(), node.for_in
            while comp is not None:
                names |= _names_in(comp.target)
                comp = comp.inner_for_in
            self.shadowed.append(self.shadowed[-1] | names)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.Call):
            self.calls.append((original_node, self.shadowed[-1]))
        if isinstance(original_node, _COMPREHENSIONS):
            self.shadowed.pop()


def _calls_in_evaluation_order(node: cst.CSTNode) -> list[tuple[cst.Call, frozenset[str]]]:
    """Calls in an expression, inner before outer, left to right, each with the names that
    enclosing comprehensions rebind there; lambdas are not entered."""
    collector = _CallCollector()
    walk(node, collector)
    return collector.calls


def key_flow(facts: ModuleFacts, source: str) -> list[Finding]:
    """Every PRNG finding of the module, computed once and shared by JG601-JG603.

    Every key comes from `jax.random` (made, split, or a parameter used as one), so a body
    that calls nothing in `jax.random` has no key to track and is skipped.
    """
    if "prng" not in facts.derived:
        findings: list[Finding] = []
        if "random" in source:
            findings += KeyFlow(facts, facts.module_scope, facts.module.body).findings
            for info in facts.functions.values():
                if isinstance(info.node, cst.Lambda) or not _calls_jax_random(facts, info):
                    continue
                findings += KeyFlow(facts, info.scope, _block(info.node.body), _lax_loop_of(facts, info)).findings
        facts.derived["prng"] = findings
    return facts.derived["prng"]


def _calls_jax_random(facts: ModuleFacts, info) -> bool:
    return any((facts.qualname(call.func, info.scope) or "").startswith("jax.random.") for call in info.calls)


def _lax_loop_of(facts: ModuleFacts, info) -> str | None:
    for call, bodies in facts.lax_body_args.items():
        for body in bodies:
            if facts.function_for(body, info.parent) is info:
                name = facts.qualname(call.func, info.parent)
                if name in LOOP_BODIES:
                    return name
    return None


class _KeyRule(Rule):
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
    what = "Flags a PRNG key consumed twice (by `jax.random` samplers or by functions it is passed to) with no `split` rebinding it in between, on some path."
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
        "from jax import random\nkey = random.PRNGKey(0)\nprint(random.normal(key, shape=(1,)))\nprint(key)\nprint(random.normal(key, shape=(1,)))\n",
        "import jax\ndef init(key):\n    w = jax.random.normal(key, (3, 3))\n    b = jax.random.uniform(key, (3,))\n    return w, b\n",
        "import jax\ndef f(key, flag):\n    if flag:\n        a = jax.random.normal(key)\n    b = jax.random.normal(key)\n    return b\n",
        "import jax\ndef make(layer_a, layer_b):\n    rng = jax.random.PRNGKey(0)\n    return layer_a(rng), layer_b(rng)\n",
    )
    valid = (
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
    )

    def describe(self, finding: Finding) -> str:
        return self.message.format(key=finding.use.key, previous=finding.previous.consumer if finding.previous else "an earlier call")


@register
class KeyUsedAfterSplit(_KeyRule):
    code = "JG602"
    name = "prng-key-used-after-split"
    summary = "A PRNG key used after it was split: the numbers correlate with its subkeys"
    message = "PRNG key '{key}' is used after it was split: use one of the keys split from it"
    what = "Flags a key consumed after it was split (`k1, k2 = split(key)` and then `normal(key, ...)`)."
    why = """
        `split(key)` consumes `key`: the new keys are derived from it, and drawing from the old
        key afterwards correlates the draws with everything derived from the split.
    """
    example = """
        import jax

        key = jax.random.key(0)
        k1, k2 = jax.random.split(key)
        x = jax.random.normal(key, (2,))
    """
    use_instead = """
        import jax

        key = jax.random.key(0)
        key, k1, k2 = jax.random.split(key, 3)
        x = jax.random.normal(k1, (2,))
    """
    invalid = (
        "import jax\nkey = jax.random.key(0)\nk1, k2 = jax.random.split(key)\nx = jax.random.normal(key, (2,))\n",
        "from jax import random as jr\ndef f(rng):\n    keys = jr.split(rng, 4)\n    return jr.uniform(rng), keys\n",
        "import jax\ndef f(key):\n    a, b = jax.random.split(key)\n    c, d = jax.random.split(key)\n    return a, b, c, d\n",
    )
    valid = (
        "import jax\nkey = jax.random.key(0)\nkey, sub = jax.random.split(key)\nx = jax.random.normal(key, (2,))\n",
        "import jax\nkey = jax.random.key(0)\nkey, *subkeys = jax.random.split(key, 4)\nfor subkey in subkeys:\n    print(jax.random.normal(subkey, shape=(1,)))\n",
        "import jax\ndef f(key):\n    k = jax.random.fold_in(key, 1)\n    return jax.random.split(key)\n",
    )

    def describe(self, finding: Finding) -> str:
        return self.message.format(key=finding.use.key)


@register
class KeyReusedInLoop(_KeyRule):
    code = "JG603"
    name = "prng-key-reused-in-loop"
    summary = "A PRNG key consumed in a loop without being rebound: every iteration draws the same numbers"
    message = "PRNG key '{key}' is consumed in a loop body without being rebound there: every iteration draws the same numbers"
    what = "Flags a key consumed inside a loop body (`for`, `while`, or a `fori_loop`/`scan`/`while_loop` body) that the body does not rebind."
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
        "import jax\nkey = jax.random.key(0)\nfor i in range(3):\n    x = jax.random.uniform(key)\n",
        "import jax\nfrom jax import lax\nkey = jax.random.key(0)\ndef body(i, acc):\n    return acc + jax.random.normal(key)\nout = lax.fori_loop(0, 10, body, 0.0)\n",
        "import jax\ndef train(step, n):\n    key = jax.random.key(0)\n    for _ in range(n):\n        step(key)\n",
    )
    valid = (
        "import jax\nkey = jax.random.key(0)\nfor i in range(3):\n    key, sub = jax.random.split(key)\n    x = jax.random.uniform(sub)\n",
        "import jax\nkey = jax.random.key(0)\nfor i in range(3):\n    x = jax.random.uniform(jax.random.fold_in(key, i))\n",
        "import jax\nkey = jax.random.key(0)\nfor k in jax.random.split(key, 3):\n    x = jax.random.uniform(k)\n",
        "import jax\nfrom jax import lax\ndef body(i, carry):\n    key, acc = carry\n    key, sub = jax.random.split(key)\n    return key, acc + jax.random.normal(sub)\nout = lax.fori_loop(0, 10, body, (jax.random.key(0), 0.0))\n",
    )

    def describe(self, finding: Finding) -> str:
        return self.message.format(key=finding.use.key)


@register
class ConstantSeedInLoop(Rule):
    code = "JG604"
    name = "prng-constant-seed-in-loop"
    summary = "A PRNG key made from a constant seed inside a loop or a traced function: the same key each time"
    message = "{call} with a constant seed inside a {where} makes the same key every time"
    what = "Flags `jax.random.key(CONST)` / `jax.random.PRNGKey(CONST)` inside a loop or a traced function."
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
    )
    valid = (
        "import jax\nkey = jax.random.key(0)\nfor i in range(3):\n    key, sub = jax.random.split(key)\n",
        "import jax\nfor seed in range(3):\n    key = jax.random.key(seed)\n",
        "import jax\ndef make(seed):\n    return jax.random.PRNGKey(seed)\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.loop_scopes: list[Scope] = []  # the scope each enclosing loop runs in

    def visit_For(self, node: cst.For) -> None:
        self.loop_scopes.append(self.ctx.scope)

    def leave_For(self, original_node: cst.For) -> None:
        self.loop_scopes.pop()

    def visit_While(self, node: cst.While) -> None:
        self.loop_scopes.append(self.ctx.scope)

    def leave_While(self, original_node: cst.While) -> None:
        self.loop_scopes.pop()

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.qualname(node.func)
        if name not in KEY_MAKERS:
            return
        args = positional(node)
        seed = args[0] if args else None
        if seed is None or literal_int(seed) is None:
            return
        # a def inside a loop body runs once per call, not once per iteration
        in_loop = any(scope is self.ctx.scope for scope in self.loop_scopes)
        where = "loop" if in_loop else ("traced function" if self.ctx.in_traced else None)
        if where is not None:
            self.report(node, self.message.format(call=name, where=where))
