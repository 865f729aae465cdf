"""JG201: iterators are stateful Python objects; tracing consumes them once."""

from __future__ import annotations

import libcst as cst

from jaxguard.lint.facts import FunctionInfo, argument, positional
from jaxguard.lint.jaxapi import JIT_TRANSFORMS
from jaxguard.lint.registry import Rule, register


@register
class IteratorInTraced(Rule):
    code = "JG201"
    name = "iterator-in-traced"
    summary = "An iterator consumed inside a traced function is read once, at trace time"
    message = "{what}: an iterator is consumed once, at trace time, so the compiled program sees one fixed value"
    what = """
        Flags `next()` on an iterator made outside the traced function when a jitted function
        stands between them (it keeps the first value), and iterators (`iter(...)`, generator
        expressions) passed as operands of lax control flow or jitted functions. An iterator
        made on every call of a function and drawn from in a closure that lax, `vmap` or `grad`
        traces in place (`rngs = hk.PRNGSequence(rng)`, then `next(rngs)` in a vmapped
        function) is new each time: not flagged; nor is the iterator a helper receives when
        every call of the helper passes one its caller made itself (`with open(path) as fd:
        return _parse(fd)`: the file read line by line while the caller is traced).
    """
    why = """
        An iterator carries hidden state. JAX runs the Python body once to trace it, so `next()`
        is evaluated once and its value is baked into the program (`fori_loop` with
        `next(iterator)` sums the same element ten times, giving 0 instead of 45). Passing an
        iterator as an operand raises a TypeError. Index an array instead.
    """
    example = """
        import jax.numpy as jnp
        from jax import lax

        iterator = iter(range(10))
        total = lax.fori_loop(0, 10, lambda i, x: x + next(iterator), 0)
    """
    use_instead = """
        import jax.numpy as jnp
        from jax import lax

        array = jnp.arange(10)
        total = lax.fori_loop(0, 10, lambda i, x: x + array[i], 0)
    """
    invalid = (
        "from jax import lax\niterator = iter(range(10))\nprint(lax.fori_loop(0, 10, lambda i,x: x+next(iterator), 0))\n",
        "import jax.numpy as jnp\nfrom jax import lax\niter_operand = iter(range(10))\nlax.cond(True, lambda x: next(x)+1, lambda x: next(x)-1, iter_operand)\n",
        "import jax\nfrom jax import make_jaxpr\ndef func11(arr, extra):\n    return arr\nmake_jaxpr(func11)(iter(range(16)), 5.)\n",
        "import jax\nbatches = iter([1.0, 2.0])\n@jax.jit\ndef f(x):\n    return x + next(batches)\n",
        # made by a function that runs once; the jitted function it builds keeps its code
        "import jax\ndef build(xs):\n    tiles = iter(xs)\n    @jax.jit\n    def step(x):\n        return x + next(tiles)\n"
        "    return step\n",
        # the caller's iterator, drawn from in a function that jitted code calls
        "import jax\nimport haiku as hk\ndef layers(x, rngs):\n    return hk.dropout(next(rngs), 0.1, x)\n"
        "@jax.jit\ndef f(x, rngs):\n    return layers(x, rngs)\n",
        # the same under vmap inside a jitted function the maker returns: jit keeps the first draw
        "import jax\ndef build(xs):\n    tiles = iter(xs)\n    @jax.jit\n    def step(x):\n"
        "        return jax.vmap(lambda y: y + next(tiles))(x)\n    return step\n",
        # a parser of the caller's iterator, given one made once for the module
        "import jax\nimport jax.numpy as jnp\nLINES = iter(open('pot.mtp'))\ndef _parse(file, n):\n"
        "    return [float(next(file)) for _ in range(n)]\ndef read(n):\n    return _parse(LINES, n)\n"
        "@jax.jit\ndef energy(x):\n    return x * jnp.asarray(read(2))\n",
    )
    valid = (
        # unpacked at the call: the jitted function receives the arrays, not the generator
        "import jax\n@jax.jit\ndef f(*xs):\n    return sum(xs)\ndef g(points):\n    return f(*(p[:, None] for p in points))\n",
        "import jax.numpy as jnp\nfrom jax import lax\narray = jnp.arange(10)\nprint(lax.fori_loop(0, 10, lambda i,x: x+array[i], 0))\n",
        "import jax\n@jax.jit\ndef f(xs):\n    total = 0.0\n    for x in iter(xs):\n        total = total + x\n    return total\n",
        "batches = iter([1, 2, 3])\nfirst = next(batches)\n",
        "import jax\n@jax.jit\ndef f(pairs):\n    it = iter(pairs)\n    a = next(it)\n    return a\n",
        # made where a lax.cond branch is traced, on every run of the maker: Python unrolling
        "import jax\nfrom jax import lax\ndef body(x, flag):\n    tiles = (x * i for i in range(3))\n    first = next(tiles)\n"
        "    def rescale():\n        return first + next(tiles)\n    return lax.cond(flag, rescale, lambda: first)\n",
        # made on every call from the caller's key, drawn from in a closure vmap traces in place
        "import jax\nimport haiku as hk\ndef evaluate(params, rng, xs):\n    rngs = hk.PRNGSequence(rng)\n"
        "    def f(x):\n        return model(params, next(rngs), x)\n    return jax.vmap(f)(xs)\n",
        # a parameter rebound to a sequence made on every call (Haiku's MLP with dropout),
        # in a function that traced code calls
        "import jax\nimport haiku as hk\ndef layers(x, rng=None):\n    rng = hk.PRNGSequence(rng) if rng is not None else None\n"
        "    return hk.dropout(next(rng), 0.1, x)\n@jax.jit\ndef f(x, key):\n    return layers(x, key)\n",
        # a parser of a file its only caller opens on each run (motep's `.mtp` reader, reached
        # from a jitted energy): a new iterator each trace, read line by line
        "import pathlib\nimport jax\nimport jax.numpy as jnp\ndef _parse(file, n):\n"
        "    return [float(next(file)) for _ in range(n)]\ndef read(path, n):\n"
        "    with pathlib.Path(path).open('r') as fd:\n        return _parse(fd, n)\n"
        "@jax.jit\ndef energy(x):\n    return x * jnp.asarray(read('pot.mtp', 2))\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = ctx.qualname(node.func)
        if name == "builtins.next" and ctx.in_traced:
            args = positional(node)
            if args and isinstance(args[0], cst.Name) and not self._local(args[0].value):
                self.report(node, self.message.format(what=f"next({args[0].value}) in a traced function"))
            return
        operands = self._operands(node)
        for operand in operands:
            if self._is_iterator(operand):
                self.report(operand, self.message.format(what="iterator passed to a traced function"))

    def _local(self, name: str) -> bool:
        """Made while tracing: in the traced function itself, in an enclosing function that
        is traced too, or in one that traces this function in place, as a lax body or under
        vmap or grad (a generator made in a kernel body, drawn from in a `lax.cond` branch it
        defines; `rngs = hk.PRNGSequence(rng)` drawn from in a vmapped closure): each call
        makes a new one and traces again, and drawing from it is Python unrolling. Only a
        jitted function between them keeps its code. Params of lax bodies are operands,
        checked at the call."""
        owner = self.ctx.scope.lookup(name)
        maker = owner.function if owner is not None else None
        if maker is None:
            return False
        if name in maker.params and not maker.params_traced and not owner.values.get(name):
            # the caller's iterator (a parameter the body never rebinds): new on each call only
            # if every caller makes it (`with open(path) as fd: parse(fd)`)
            return self._made_by_every_caller(maker, name)
        function = self.ctx.function
        while function is not maker:
            # a jitted function keeps its code: a second call draws nothing
            if function is None or not (maker.traced or function.traced_by not in JIT_TRANSFORMS):
                return False
            function = self.ctx.facts.enclosing_function(function.parent)
        return True

    def _made_by_every_caller(self, maker: FunctionInfo, param: str) -> bool:
        """Every call of module function `maker` (a helper, not transformed itself, and used
        nowhere else) passes as `param` an iterator its caller made itself, on each of its runs."""
        facts = self.ctx.facts
        if maker.class_name or not isinstance(maker.node, cst.FunctionDef):
            return False
        calls = [
            (caller, call) for caller in facts.functions.values() for call in caller.calls
            if isinstance(call.func, cst.Name) and facts.function_for(call.func, caller.scope) is maker
        ]
        uses = sum(1 for name in facts.loads if name.value == maker.name)
        if not calls or uses != len(calls):
            return False  # also passed around, or called where no function makes the iterator
        index = maker.params.index(param)
        for caller, call in calls:
            given = argument(call, index, param)
            if not (isinstance(given, cst.Name) and caller.scope.lookup(given.value) is caller.scope and given.value not in caller.params):
                return False
        return True

    def _operands(self, call: cst.Call) -> list[cst.BaseExpression]:
        ctx = self.ctx
        # `f(*(p[:, None] for p in points))`: a starred iterator is unpacked at the call
        bodies = ctx.facts.lax_body_args.get(call)
        if bodies is not None:
            return [a.value for a in call.args if a.value not in bodies and not a.star]
        if ctx.facts.jitted_spec(call.func, ctx.scope) is not None:
            return [a.value for a in call.args if not a.star]
        return []

    def _is_iterator(self, node: cst.BaseExpression) -> bool:
        ctx = self.ctx
        if isinstance(node, cst.GeneratorExp):
            return True
        if isinstance(node, cst.Call):
            return ctx.qualname(node.func) == "builtins.iter"
        if isinstance(node, cst.Name):
            owner = ctx.scope.lookup(node.value)
            values = owner.values.get(node.value) if owner is not None else None
            return bool(values) and len(values) == 1 and values[0] is not None and self._is_iterator(values[0])
        return False
