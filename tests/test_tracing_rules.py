"""JG106-JG110, JG401, JG701 on the sharp bits' examples and in library styles (flax, optax,
equinox): what must be caught, what must stay silent, and what the messages suggest."""

from __future__ import annotations

import pytest
from helpers import codes, lint

TRACING = ("JG106", "JG107", "JG108", "JG109", "JG110", "JG401", "JG701")


def found(source: str) -> list[str]:
    return [c for c in codes(source) if c in TRACING or c in ("JG001", "JG003")]


def messages(source: str, code: str) -> list[str]:
    return [d.message for d in lint(source) if d.code == code]


# the sharp bits, "Control Flow" and "Out-of-Bounds Indexing" --------------------------------

SEED_JIT_IF = """
from jax import jit

@jit
def f(x):
    if x < 3:
        return 3. * x ** 2
    else:
        return -4 * x
"""

SEED_STATIC = """
from jax import jit

def f(x):
    if x < 3:
        return 3. * x ** 2
    else:
        return -4 * x

f = jit(f, static_argnums=(0,))
print(f(2.))
"""

SEED_LOOP_STATIC = """
import jax.numpy as jnp
from jax import jit

def f(x, n):
    y = 0.
    for i in range(n):
        y = y + x[i]
    return y

f = jit(f, static_argnums=(1,))
f(jnp.array([2., 3., 4.]), 2)
"""

SEED_GOOD_LOOPS = """
import jax.numpy as jnp
from jax import jit

@jit
def f(x):
    for i in range(3):
        x = 2 * x
    return x

@jit
def g(x):
    y = 0.
    for i in range(x.shape[0]):
        y = y + x[i]
    return y

print(f(3), g(jnp.array([1., 2., 3.])))
"""

SEED_GRAD = """
from jax import grad

def f(x):
    if x < 3:
        return 3. * x ** 2
    else:
        return -4 * x

print(grad(f)(2.))
print(grad(f)(4.))
"""

SEED_SHAPES = """
import jax.numpy as jnp
from jax import jit

def example_fun(length, val):
    return jnp.ones((length,)) * val

print(example_fun(5, 4))
bad_example_jit = jit(example_fun)
good_example_jit = jit(example_fun, static_argnums=(0,))
"""

SEED_OOB = """
import numpy as np
import jax.numpy as jnp

try:
    np.arange(10)[11]
except Exception as e:
    print("Exception {}".format(e))

jnp.arange(10)[11]
"""

SEED_LAX = """
import jax.numpy as jnp
from jax import lax

operand = jnp.array([0.])
lax.cond(True, lambda x: x+1, lambda x: x-1, operand)
init_val = 0
cond_fun = lambda x: x<10
body_fun = lambda x: x+1
lax.while_loop(cond_fun, body_fun, init_val)
body_fun = lambda i,x: x+i
lax.fori_loop(0, 10, body_fun, init_val)
"""


def test_seed_jit_if_is_caught_and_names_the_argument():
    assert found(SEED_JIT_IF) == ["JG106"]
    (message,) = messages(SEED_JIT_IF, "JG106")
    assert "'x'" in message and "lax.cond" in message and "jnp.where" in message
    assert 'static_argnames=("x",)' in message


def test_seed_correct_versions_stay_silent():
    for source in (SEED_STATIC, SEED_LOOP_STATIC, SEED_GOOD_LOOPS, SEED_GRAD, SEED_LAX):
        assert found(source) == [], source


def test_seed_loop_without_static_is_caught():
    source = SEED_LOOP_STATIC.replace("static_argnums=(1,)", "static_argnums=()")
    assert found(source) == ["JG106"]
    (message,) = messages(source, "JG106")
    assert "fori_loop" in message and 'static_argnames=("n",)' in message


def test_seed_value_dependent_shape():
    assert found(SEED_SHAPES) == ["JG108"]
    (message,) = messages(SEED_SHAPES, "JG108")
    assert 'static_argnames=("length",)' in message


def test_seed_out_of_bounds():
    diagnostics = [d for d in lint(SEED_OOB) if d.code == "JG401"]
    assert [(d.line, d.code) for d in diagnostics] == [(9, "JG401")]
    assert "index 11" in diagnostics[0].message and "size 10" in diagnostics[0].message


# JG106 --------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "source",
    [
        # flax linen style: a module method jitted with the module static
        """
        import jax
        import jax.numpy as jnp
        from functools import partial

        class Dense:
            @partial(jax.jit, static_argnums=0)
            def __call__(self, x, threshold):
                y = jnp.tanh(x)
                if (y > threshold).any():
                    y = y * 0.5
                return y
        """,
        # a closure inside a jitted train step
        """
        import jax

        @jax.jit
        def train_step(params, lr):
            def update(p):
                return p - lr * p if lr > 0.1 else p
            return jax.tree.map(update, params)
        """,
        # scan bodies trace their carry
        """
        import jax

        def body(carry, x):
            while carry < 10:
                carry = carry + x
            return carry, x

        out = jax.lax.scan(body, 0.0, None, length=3)
        """,
        # vmap does not allow control flow either
        """
        import jax

        def relu(x):
            return x if x > 0 else 0.0

        batched = jax.vmap(relu)
        """,
        # `not`, and a value computed from the argument through a method
        """
        import jax

        @jax.jit
        def f(x):
            done = x.sum() > 0
            return not done
        """,
    ],
)
def test_jg106_flagged(source):
    assert "JG106" in found(source)


@pytest.mark.parametrize(
    "source",
    [
        # optax style: hyperparameters in the closure of an update function
        """
        import jax

        def sgd(learning_rate, momentum=None):
            def update_fn(updates, state, params=None):
                if momentum is not None and momentum > 0:
                    updates = jax.tree.map(lambda g: g * momentum, updates)
                return jax.tree.map(lambda g: -learning_rate * g, updates), state
            return jax.jit(update_fn)
        """,
        # equinox style: filter_jit keeps Python values static
        """
        import equinox as eqx

        class MLP(eqx.Module):
            use_bias: bool

            @eqx.filter_jit
            def __call__(self, x, training):
                if self.use_bias and training:
                    return x + 1
                return x
        """,
        # is None / isinstance / len / shape tests, static_argnames given as a string
        """
        import jax
        import jax.numpy as jnp
        from functools import partial

        @partial(jax.jit, static_argnames="mode")
        def f(x, y, mode):
            if y is None or isinstance(y, tuple) or len(x) > 3:
                return x
            if mode == "sum" and x.shape == y.shape and x.dtype == jnp.float32:
                return x + y
            return x * y
        """,
        # a partial binds the branch flag: lax.cond(p, partial(f, True), partial(f, False))
        """
        import jax
        from functools import partial

        def branch(is_last, x):
            if is_last:
                return x * 2
            return x

        def run(x):
            return jax.lax.cond(x > 0, partial(branch, True), partial(branch, False), x)
        """,
        # vmap's in_axes given positionally: None positions are not batched
        """
        import jax

        def pool(x, size, op):
            if size > 2:
                return op(x)
            return x

        batched = jax.vmap(pool, (0, None, None))
        """,
        # static_argnums held in a variable: unknown, so not assumed traced
        """
        import jax

        STATIC = (1,)

        def f(x, n):
            if n > 2:
                return x
            return -x

        g = jax.jit(f, static_argnums=STATIC)
        """,
        # zip of a concrete list with traced values inside a comprehension
        """
        import jax

        @jax.jit
        def f(xs):
            flags = (True, False)
            return [x if flag else -x for x, flag in zip(xs, flags)]
        """,
    ],
)
def test_jg106_silent(source):
    assert "JG106" not in found(source)


# JG107 --------------------------------------------------------------------------------------

def test_jg107_messages_name_argument_and_alternatives():
    source = """
    import jax
    import numpy as np

    @jax.jit
    def f(x, scale):
        return np.asarray(x) * float(scale)
    """
    found_messages = messages(source, "JG107")
    assert len(found_messages) == 2
    assert any("'scale'" in m and 'static_argnames=("scale",)' in m for m in found_messages)
    assert all("jax.debug.print" in m for m in found_messages)


def test_jg107_flax_method_and_optax_closure():
    flagged = """
    import jax
    import jax.numpy as jnp

    class Model:
        def loss(self, params, batch):
            logits = params["w"] * batch
            print("loss", float(jnp.mean(logits)))
            return logits.mean()

        def step(self, params, batch):
            return jax.jit(self.loss)(params, batch)
    """
    assert "JG107" in found(flagged)
    silent = """
    import jax

    def scale_by(step_size):
        def update(updates):
            return jax.tree.map(lambda g: g * float(step_size), updates)
        return jax.jit(update)
    """
    assert "JG107" not in found(silent)


# JG108 --------------------------------------------------------------------------------------

def test_jg108_flagged_and_silent_shapes():
    flagged = """
    import jax
    import jax.numpy as jnp

    @jax.jit
    def f(x, k, key):
        a = jnp.zeros((k, 3))
        b = jax.random.normal(key, shape=(k,))
        c = jnp.unique(x)
        d = x[k:]
        return a, b, c, d
    """
    assert found(flagged).count("JG108") == 4
    silent = """
    import jax
    import jax.numpy as jnp

    @jax.jit
    def f(x, key):
        n, m = x.shape
        a = jnp.zeros((n, m))
        b = jax.random.normal(key, shape=(n,))
        c = jnp.unique(x, size=4, fill_value=0)
        d = x[1:n - 1]
        e = jax.lax.dynamic_slice(x, (key[0], 0), (2, m))
        return a, b, c, d, e
    """
    assert "JG108" not in found(silent)


# JG109 / JG110 ------------------------------------------------------------------------------

def test_jg109_loop_and_per_call():
    source = """
    import jax

    def loss(p, x):
        return p * x

    def train(p, xs):
        for x in xs:
            p = jax.jit(loss)(p, x)
            p = jax.jit(lambda q: q * 0.5)(p)
        return p
    """
    assert found(source).count("JG109") == 2


@pytest.mark.parametrize("path, reported", [
    ("benchmark/kernels/tune_topk.py", False), ("scripts/bench_moe.py", False), ("pkg/kernels/topk.py", True),
])
def test_jg109_a_tuning_script_compiles_each_candidate_on_purpose(path, reported):
    # sglang-jax's tuners: one compile per block size is what the loop measures
    source = """
    import functools
    import jax

    def tune(kernel, candidates, x):
        best = None
        for block in candidates():
            fn = jax.jit(functools.partial(kernel, block=block))
            best = fn(x)
        return best
    """
    found_codes = [d.code for d in lint(source, path=path)]
    assert ("JG109" in found_codes) == reported


def test_jg110_positions_and_names():
    source = """
    import jax
    from functools import partial

    @partial(jax.jit, static_argnums=(1,), static_argnames=("axes",))
    def reduce(x, op, axes=(0,)):
        return x

    reduce(1.0, ["sum"], axes=(0, 1))
    reduce(1.0, "sum", axes=[0, 1])
    reduce(1.0, op={"kind": "sum"})
    reduce([1.0, 2.0], "sum", axes=(1,))
    """
    diagnostics = [d for d in lint(source) if d.code == "JG110"]
    assert [d.line for d in diagnostics] == [8, 9, 10]
    assert "'op' (position 1)" in diagnostics[0].message
    assert "'axes'" in diagnostics[1].message


# JG401 --------------------------------------------------------------------------------------

def test_jg401_updates_and_negative_indices():
    source = """
    import jax.numpy as jnp

    grid = jnp.zeros((3, 4))
    grid = grid.at[2, 4].set(1.0)
    grid = grid.at[-4].add(1.0)
    ok = grid[2, -4] + grid[..., 3] + grid[None, 2]
    """
    diagnostics = [d for d in lint(source) if d.code == "JG401"]
    assert [d.line for d in diagnostics] == [4, 5]
    assert "drops" in diagnostics[0].message


# JG701 --------------------------------------------------------------------------------------

def test_jg701_through_module_local_calls_and_not_forward_mode():
    source = """
    import jax
    from jax import lax

    def fixed_point(x):
        return lax.while_loop(lambda v: v < 1, lambda v: v * 2, x)

    def loss(x):
        return fixed_point(x) ** 2

    grads = jax.grad(loss)
    tangents = jax.jacfwd(fixed_point)
    """
    diagnostics = [d for d in lint(source) if d.code == "JG701"]
    assert len(diagnostics) == 1
    assert "lax.scan" in diagnostics[0].message and "'loss'" in diagnostics[0].message


def test_jg701_silent_without_reverse_mode():
    source = """
    import jax
    from jax import lax

    def solve(x):
        return lax.while_loop(lambda v: v < 1, lambda v: v * 2, x)

    y = jax.jit(solve)(1.0)
    z = jax.jvp(solve, (1.0,), (1.0,))
    """
    assert "JG701" not in found(source)


@pytest.mark.parametrize(
    "source",
    [
        # flax.nnx.jit: module attributes are static graph data
        """
        from flax import nnx

        @nnx.jit
        def train_step(model, optimizer, batch):
            if model.training:
                return model(batch)
            return batch
        """,
        # a string comparison: the argument cannot be a tracer (it would fail to trace at all)
        """
        import jax

        @jax.jit
        def f(x, mode):
            if mode == "train":
                return x * 2
            return x
        """,
        # jit inside a traced function is inlined; a constant sweep compiles per configuration
        """
        import jax

        def bench(x):
            for tile in (64, 128):
                @jax.jit
                def kernel(v):
                    return v.reshape(-1, tile)
                kernel(x)
        """,
    ],
)
def test_library_styles_silent(source):
    assert found(source) == []


def test_jg109_loop_over_stable_function_is_a_slow_path_not_a_recompile():
    source = """
    import jax

    def fit(params, data):
        def train_step(p, x):
            return p - x
        for x in data:
            params = jax.jit(train_step)(params, x)
        return params
    """
    (message,) = messages(source, "JG109")
    assert "slow path" in message and "recompiles" not in message


def test_dict_keys_of_a_traced_pytree_are_concrete():
    source = """
    import jax

    @jax.jit
    def total(batch):
        out = 0.0
        for name, value in batch.items():
            if name.startswith("loss") and name != "loss_aux":
                out = out + value
        for key in sorted(batch):
            if key.endswith("_weight"):
                out = out * batch[key]
        return out
    """
    assert found(source) == []


def test_jg701_fori_bound_from_the_differentiated_input():
    flagged = """
    import jax
    import jax.numpy as jnp
    from jax import lax

    def loss(x):
        steps = jnp.sum(x > 0)
        return lax.fori_loop(0, steps, lambda i, v: v * 0.5, x).sum()

    g = jax.grad(loss)
    """
    assert found(flagged) == ["JG701"]
    silent = """
    import jax
    from jax import lax

    def loss(x, steps):
        return lax.fori_loop(0, steps, lambda i, v: v * 0.5, x).sum()

    g = jax.grad(loss)(1.0, 3)
    h = jax.grad(lambda x: lax.fori_loop(0, x.shape[0], lambda i, v: v + 1, x).sum())
    """
    assert found(silent) == []


def test_arange_with_one_argument_names_its_stop():
    from tests.helpers import lint

    source = "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x, n):\n    return jnp.arange(n) + x\n"
    messages = [d.message for d in lint(source) if d.code == "JG108"]
    assert len(messages) == 1 and messages[0].startswith("the stop of jnp.arange()")


def test_no_static_argnames_advice_for_a_pytree_argument():
    from tests.helpers import lint

    source = (
        "import jax\n@jax.jit\ndef step(model, n, x):\n    if model.count > 2:\n        x = x + 1\n"
        "    if n > 1:\n        x = x * 2\n    return x\n"
    )
    messages = [d.message for d in lint(source) if d.code == "JG106"]
    assert len(messages) == 2
    assert "static_argnames" not in messages[0] and 'static_argnames=("n",)' in messages[1]


@pytest.mark.parametrize("setup, said", [
    # the local class defines the method: a new bound method each time it is read
    ("class Model:\n    def step(self, x):\n        return x\nm = Model()\n", "retraces and recompiles each time"),
    # the class pins it as an instance attribute (cyreal's DataLoader): the same object
    ("class Model:\n    def __init__(self):\n        self.step = self.step\n    def step(self, x):\n        return x\nm = Model()\n",
     "no retrace"),
    # a Haiku transform's apply is a stored function; what `m` is cannot be seen here
    ("import haiku as hk\nm = hk.transform(lambda x: x)\n", "if it is a bound method"),
])
def test_jg109_says_what_a_jitted_method_in_a_loop_costs(setup, said):
    source = "import jax\n" + setup + "for x in range(3):\n    y = jax.jit(m.step)(x)\n"
    (message,) = messages(source, "JG109")
    assert said in message
