"""False-alarm patterns and recall gaps found by linting real JAX packages (issue 10, part B):
one minimal snippet per pattern, silent where the code is correct, flagged where it is not.

Each snippet is reduced from the package where the pattern was seen (named in the comment);
the flagged twin next to it shows that the rule still catches the real bug."""

from __future__ import annotations

import pytest
from helpers import codes, lint


def check(code: str, source: str, flagged: bool) -> None:
    found = codes(source)
    assert not [c for c in found if c in ("JG001", "JG003")], found
    assert (code in found) == flagged, f"{code} {'not ' if flagged else ''}reported:\n{source}\n{found}"


# 5. JG106/JG108: values that are static ----------------------------------------------------

STATIC_VALUES = {
    # brax: the truth value of a tuple parameter is its length, part of the pytree structure
    "tuple-parameter-truthiness": (
        "JG106",
        """
        from typing import Optional, Tuple
        import jax
        import jax.numpy as jnp

        def update(x: jax.Array, limit: Optional[Tuple[jax.Array, jax.Array]]):
            if limit:
                x = jnp.clip(x, limit[0], limit[1])
            return x

        out = jax.vmap(update)(jnp.ones((3, 2)), (jnp.zeros(3), jnp.ones(3)))
        """,
    ),
    # penzai: a generator of isinstance tests is a Python bool
    "any-isinstance-over-leaves": (
        "JG106",
        """
        import jax

        @jax.jit
        def check(tree):
            leaves = jax.tree_util.tree_leaves(tree)
            if any(not isinstance(leaf, jax.Array) for leaf in leaves):
                raise ValueError("arrays only")
            return tree
        """,
    ),
    # ott-jax: in_axes counts the arguments of a bound method after `self`
    "in-axes-none-bound-method": (
        "JG106",
        """
        import jax

        class Cost:
            def twist(self, vec, dual, variable):
                if variable:
                    return vec + dual
                return vec - dual

            def apply(self, x, y):
                return jax.vmap(self.twist, in_axes=[0, 0, None])(x, y, True)
        """,
    ),
    # ott-jax: partial(jax.vmap, in_axes=[0] + [None] * 2)
    "in-axes-list-arithmetic": (
        "JG106",
        """
        import functools
        import jax

        @functools.partial(jax.vmap, in_axes=[0] + [None] * 2)
        def k_means(key, points, k):
            centroids = points[:k]
            if centroids.shape != (k, points.shape[1]):
                raise ValueError("bad init")
            return centroids
        """,
    ),
    # penzai: in_axes entries computed at run time may be None
    "in-axes-variable-entry": (
        "JG106",
        """
        import functools
        import jax

        def vectorize(step, views, axes, names):
            def go(current, remaining):
                for view in current:
                    axis = view.axis_for_name[remaining[0]]
                    if axis > 0:
                        return step(current)
                return step(current)
            return jax.vmap(functools.partial(go, remaining=names), in_axes=(axes,))(views)
        """,
    ),
    # penzai: slicing a shape tuple
    "slice-of-shape-tuple": (
        "JG108",
        """
        import jax

        @jax.jit
        def drop_axis(view, axis):
            return view.data_shape[:axis] + view.data_shape[axis + 1:]
        """,
    ),
    # dm-pix: a helper that reads only the static `ndim` of its traced argument
    "helper-returning-static": (
        "JG106",
        """
        import jax
        import jax.numpy as jnp

        def _channels_last(image, channel_axis):
            return channel_axis == -1 or channel_axis == image.ndim - 1

        @jax.jit
        def flip(image, *, channel_axis: int = -1):
            if _channels_last(image, channel_axis):
                return jnp.flip(image, axis=-2)
            return jnp.flip(image, axis=-1)
        """,
    ),
    # jaxns, jaxlie: methods and attributes that report dimensions
    "shape-methods-and-dim-attributes": (
        "JG106",
        """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def jacobian(transform, u0):
            if u0.ndim() == 1:
                return u0
            J = jnp.zeros((*transform.get_batch_axes(), 2, 1))
            assert J.shape == (*transform.get_batch_axes(), transform.parameters_dim, transform.tangent_dim)
            return J
        """,
    ),
    # penzai: comparing a pytree key path with a key entry is a Python comparison
    "key-path-comparison": (
        "JG106",
        """
        import jax

        @jax.jit
        def go(handled, arg):
            _, tells = handled(arg)
            for tell in tells:
                assert tell.keypath[-1] == jax.tree_util.GetAttrKey("shape_logger")
            return tells
        """,
    ),
}


@pytest.mark.parametrize("name", list(STATIC_VALUES))
def test_static_values_are_silent(name):
    code, source = STATIC_VALUES[name]
    check(code, source, flagged=False)


@pytest.mark.parametrize(
    "code,source",
    [
        # an element of the tuple is an array: its truth value is traced
        ("JG106", "import jax\ndef update(x, limit: tuple):\n    if limit[0] > 0:\n        return x\n    return -x\n"
                  "out = jax.vmap(update)(1.0, (2.0,))\n"),
        # a generator of comparisons of leaves is traced
        ("JG106", "import jax\n@jax.jit\ndef f(tree):\n    leaves = jax.tree_util.tree_leaves(tree)\n"
                  "    if any(leaf > 0 for leaf in leaves):\n        return tree\n    return tree\n"),
        # a mapped position of a bound method is traced
        ("JG106", "import jax\nclass Cost:\n    def twist(self, vec, variable):\n        if variable:\n"
                  "            return vec\n        return -vec\n    def apply(self, x, v):\n"
                  "        return jax.vmap(self.twist, in_axes=[None, 0])(x, v)\n"),
        # a helper that returns (a function of) its traced argument
        ("JG106", "import jax\ndef double(v):\n    return 2 * v\n@jax.jit\ndef f(x):\n    if double(x) > 0:\n"
                  "        return x\n    return -x\n"),
        # slicing an array by a traced bound
        ("JG108", "import jax\n@jax.jit\ndef f(x, n):\n    return x.shape[:n], x[:n]\n"),
    ],
)
def test_traced_values_are_still_flagged(code, source):
    check(code, source, flagged=True)


# 14. JG107: int() reached only on an eager branch (jax-md partition.py) --------------------------------------------

EAGER_BRANCH = """
import jax
import jax.numpy as jnp
from functools import partial

def neighbor_list(cutoff):
    def neighbor_list_fn(position, neighbors=None):
        def neighbor_fn(position, max_occupancy=None):
            occupancy = jnp.sum(position < cutoff)
            if max_occupancy is None:
                max_occupancy = int(occupancy * 1.25)
            return position[:, :max_occupancy]

        if neighbors is None:
            return neighbor_fn(position)  # allocate: eager, sizes the buffer on the host
        neighbor_fn = partial(neighbor_fn, max_occupancy=neighbors.shape[-1])
        return jax.lax.cond(jnp.any(position > 1), neighbor_fn, lambda p: neighbors, position)

    return neighbor_list_fn
"""


# jaxns: the eager function is picked when the optional state is None, the jitted one otherwise
EAGER_PICK = """
import jax
import numpy as np

def sample(log_l, num_samples, *, block_state=None):
    if block_state is None:
        n = int(np.asarray(num_samples))
        return np.sort(np.asarray(log_l))[:n]
    return log_l * block_state

sample_jit = jax.jit(sample)

def run(log_l, num_samples, block_state=None):
    kernel = sample if block_state is None else sample_jit
    return kernel(log_l, num_samples, block_state=block_state)
"""


@pytest.mark.parametrize("source", [EAGER_BRANCH, EAGER_PICK])
def test_int_on_an_eager_only_branch_is_silent(source):
    check("JG107", source, flagged=False)


def test_int_on_a_none_branch_of_a_jit_only_function_is_flagged():
    # no eager caller: under jit the default None is what the branch sees
    source = (
        "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x, n=None):\n    if n is None:\n"
        "        n = int(jnp.sum(x))\n    return x * n\n"
    )
    check("JG107", source, flagged=True)


# 13. JG701: a while_loop whose gradient is user-defined --------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "import functools\nimport jax\nfrom jax import lax\n"
        "@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef solve(n, x):\n"
        "    return lax.while_loop(lambda v: v < n, lambda v: v * 2, x)\n"
        "solve.defvjp(lambda n, x: (solve(n, x), None), lambda n, r, g: (g,))\n"
        "g = jax.grad(lambda x: solve(3.0, x))\n",
        "import jax\nfrom jax import lax\ndef _solve(x):\n    return lax.while_loop(lambda v: v < 1, lambda v: v * 2, x)\n"
        "solve = jax.custom_vjp(_solve)\nsolve.defvjp(lambda x: (_solve(x), None), lambda r, g: (g,))\n"
        "def loss(x):\n    return _solve(x)\ng = jax.grad(loss)\n",
    ],
)
def test_while_loop_under_custom_vjp_is_silent(source):
    check("JG701", source, flagged=False)


# 9. JG802 ------------------------------------------------------------------------------------

WHERE_SAFE = {
    # evosax: an integer count is not differentiated
    "integer-count": "import jax.numpy as jnp\ndef lam(alpha, max_dims: int, num_dims: int):\n"
    "    return jnp.where(num_dims > 1, jnp.arange(max_dims) / (num_dims - 1), 0.5)\n",
    "local-constant-count": "import jax.numpy as jnp\ndef w():\n    num_optima = 101\n"
    "    return jnp.where(jnp.arange(num_optima) == 0, 10.0, 8.0 * jnp.arange(num_optima) / (num_optima - 2.0))\n",
    # brax: the division is used where norm < 0.17 and finite (norm >= 0.17) where it is not
    "safe-where-unused": "import jax.numpy as jnp\ndef scale(norm):\n    return jnp.where(norm < 0.17, 0.17 / norm, 1.0)\n",
    # jax-md: dividing by a positive constant cutoff the condition compares against
    "positive-constant-divisor": "import jax.numpy as jnp\ndef cutoff_fn(dr, cutoff_distance: float = 8.0):\n"
    "    return jnp.where((dr < cutoff_distance) & (dr > 1e-7), jnp.cos(dr / cutoff_distance), 0)\n",
    "threshold-operand": "import jax.numpy as jnp\ndef ters(dr, R, D):\n"
    "    return jnp.where(dr < R + D, 0.5 * (1 - jnp.sin(jnp.pi / 2 * (dr - R) / D)), 0)\n",
    # blackjax: the standard log1mexp
    "log1mexp": "import jax.numpy as jnp\ndef log1mexp(x):\n"
    "    return jnp.where(x > -0.6931472, jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))\n",
    # jaxley: log1p of an exponential helper is smooth
    "log1p-of-exp-helper": "import jax.numpy as jnp\nfrom mylib import save_exp\ndef softplus(x, t):\n"
    "    return jnp.where(x > t, x, jnp.log1p(save_exp(x)))\n",
    # jax-cfd: a size read from the data's dimensions
    "division-by-size": "import jax.numpy as jnp\ndef corr(array, ans, d):\n    length = array.sizes['time']\n"
    "    return jnp.where(jnp.arange(length) >= d, ans / length, 0)\n",
}


@pytest.mark.parametrize("name", list(WHERE_SAFE))
def test_where_safe_patterns_are_silent(name):
    check("JG802", WHERE_SAFE[name], flagged=False)


@pytest.mark.parametrize(
    "source",
    [
        # the untaken side contains 0
        "import jax.numpy as jnp\ndef scale(norm):\n    return jnp.where(norm > 0.17, 0.17 / norm, 1.0)\n",
        "import jax.numpy as jnp\ndef clip(v, vmax):\n    n = jnp.linalg.norm(v)\n    return jnp.where(n > vmax, vmax * v / n, v)\n",
        # a float count can be zero
        "import jax.numpy as jnp\ndef mean(total, count):\n    return jnp.where(count > 0, total / count, 0.0)\n",
        # the operand is compared with another variable, as a whole
        "import jax.numpy as jnp\ndef gamma(s, y):\n    return jnp.where(jnp.dot(s, y) > 0, jnp.dot(s, y) / jnp.dot(y, y), 1.0)\n",
    ],
)
def test_where_hazards_are_still_flagged(source):
    # a module that differentiates: the where's NaN gradient is reachable
    check("JG802", source + "def _loss(g, x):\n    import jax\n    return jax.grad(g)(x)\n", flagged=True)


# 10. JG803 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "import jax.numpy as jnp\ndef weights(population_size: int):\n"
        "    return jnp.log(population_size / 2 + 1) - jnp.log(jnp.arange(1, population_size + 1))\n",
        "import jax.numpy as jnp\ndef wierstra(x):\n    return jnp.log(len(x) / 2.0 + 1)\n",
        "import jax.numpy as jnp\nclass ES:\n    def __init__(self, popsize: int):\n        if popsize % 2:\n"
        "            popsize += 1\n        self.lamb = popsize\n        self.w = jnp.log(self.lamb / 2 + 1)\n",
        "import jax.numpy as jnp\nclass Dist:\n    def __init__(self, threshold: float = 0.999):\n"
        "        self.log_eps = jnp.log(1.0 - threshold)\n",
    ],
)
def test_log_of_large_counts_is_silent(source):
    check("JG803", source, flagged=False)


@pytest.mark.parametrize(
    "source",
    [
        "import jax.numpy as jnp\ndef f(n: int):\n    return jnp.log(1 + 1 / n)\n",
        "import jax.numpy as jnp\ndef f(rate):\n    return jnp.log(1 + rate / 2)\n",
        "import jax.numpy as jnp\ndef f(eps: float = 1e-8):\n    return jnp.log(1 - eps)\n",
    ],
)
def test_log_of_small_values_is_still_flagged(source):
    check("JG803", source, flagged=True)


# 11. JG804/JG904: flags set behind a guard ---------------------------------------------------


@pytest.mark.parametrize(
    "code,source",
    [
        ("JG804", "import jax\ndef cond(p, f, g, *ops, jit=True):\n    if not jit:\n        with jax.disable_jit():\n"
                  "            return jax.lax.cond(p, f, g, *ops)\n    return jax.lax.cond(p, f, g, *ops)\n"),
        ("JG804", "import jax\ndef call(self, method):\n    if self.debug:\n        with jax.disable_jit():\n"
                  "            return method(self)\n    return method(self)\n"),
        ("JG804", "import jax\ndef summarise(init, *args):\n    with jax.disable_jit():\n"
                  "        jax.eval_shape(init, *args)\n"),
        ("JG804", "import jax\nclass ForEachClientDebugBackend:\n    def run(self, f, x):\n"
                  "        with jax.disable_jit():\n            return f(x)\n"),
        ("JG804", "import jax\nfrom absl import app\ndef _main(argv):\n    jax.config.update('jax_debug_nans', True)\n"
                  "def main():\n    app.run(_main)\nif __name__ == '__main__':\n    main()\n"),
        ("JG904", "import jax\nif 'jax_pmap_shmap_merge' in jax.config.values:\n"
                  "    jax.config.update('jax_pmap_shmap_merge', False)\n"),
        ("JG904", "import jax\ndef legacy():\n    if 'jax_pmap_shmap_merge' in jax.config.values:\n"
                  "        return not jax.config.jax_pmap_shmap_merge\n    return False\n"),
        ("JG904", "import jax\ntry:\n    jax.config.update('jax_pmap_shmap_merge', False)\nexcept AttributeError:\n    pass\n"),
    ],
)
def test_guarded_flags_are_silent(code, source):
    check(code, source, flagged=False)


def test_unguarded_flags_are_still_flagged():
    check("JG804", "import jax\ndef setup():\n    jax.config.update('jax_debug_nans', True)\n", flagged=True)
    check("JG904", "import jax\nif jax.devices():\n    jax.config.update('jax_pmap_shmap_merg', False)\n", flagged=True)


# 12. JG905: notebooks ------------------------------------------------------------------------


def test_one_allclose_does_not_make_every_matmul_count():
    source = (
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\nw = jax.random.normal(jax.random.key(0), (8, 8))\n"
        "features = w @ w.T\nsmall = jnp.ones(3) + 1\nassert np.allclose(small, 2.0)\n"
    )
    check("JG905", source, flagged=False)


# Recall additions --------------------------------------------------------------------------


def test_jg501_list_held_in_a_variable():
    source = (
        "import jax.numpy as jnp\ndef train(steps):\n    losses = []\n    for i in range(steps):\n"
        "        losses.append(i * 0.5)\n    return jnp.min(losses)\n"
    )
    found = lint(source)
    assert [d.code for d in found if d.code == "JG501"] == ["JG501"]
    from helpers import fix

    fixed = fix(source)
    assert "jnp.min(jnp.asarray(losses))" in fixed and "JG501" not in codes(fixed)
    # converted before use, or rebound in another scope: silent
    check("JG501", "import jax.numpy as jnp\ndef f():\n    xs = []\n    xs = jnp.array(xs)\n    return jnp.min(xs)\n", False)
    check("JG501", "import jax.numpy as jnp\nxs = [1.0]\ndef f(xs):\n    return jnp.min(xs)\n", False)


def test_jg401_list_display_of_values():
    source = (
        "import jax.numpy as jnp\ndef stats(x):\n    m, s = jnp.mean(x), jnp.std(x)\n    pair = jnp.array([m, s])\n"
        "    return pair[2], pair[1], pair[0, 5], pair[..., 7]\n"
    )
    found = [d for d in lint(source) if d.code == "JG401"]
    assert len(found) == 1 and "index 2" in found[0].message and "size 2" in found[0].message


def test_jg108_boolean_mask_held_in_a_variable():
    source = (
        "import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    keep = x > 0\n    bad = jnp.isnan(x) | (x < -5)\n"
        "    static = jnp.arange(3) > 1\n    return x[keep].sum() + x.at[bad].set(0.0).sum() + x[static].sum()\n"
    )
    found = [d for d in lint(source) if d.code == "JG108"]
    assert [d.message.split("`")[1] for d in found] == ["x[keep]", "x.at[bad]"]


# Messages ------------------------------------------------------------------------------------


def test_jg106_names_every_traced_argument_and_suggests_static_only_for_non_arrays():
    source = (
        "import jax\n@jax.jit\ndef f(x: jax.Array, n, m: int, y, z):\n    if x + n + z > m * y:\n        return x\n    return -x\n"
    )
    (message,) = [d.message for d in lint(source) if d.code == "JG106"]
    assert "arguments 'm', 'n', 'x', 'y', 'z'" in message
    assert "jax.lax.cond" in message and "jnp.where" in message
    assert 'static_argnames=("m", "n", "y", "z")' in message and '"x"' not in message.split("static_argnames")[1]
    only_array = "import jax\n@jax.jit\ndef f(x: jax.Array):\n    if x > 0:\n        return x\n    return -x\n"
    (message,) = [d.message for d in lint(only_array) if d.code == "JG106"]
    assert "static_argnames" not in message and "jax.lax.cond" in message


def test_jg803_attribute_mirroring_an_int_parameter_set_by_a_base_class():
    # evosax: `self.population_size` is stored by the base class, from an `int` parameter
    source = (
        "import jax.numpy as jnp\nfrom base import Algorithm\nclass NES(Algorithm):\n"
        "    def __init__(self, population_size: int, solution):\n        super().__init__(population_size, solution)\n"
        "    @property\n    def weights(self):\n        return jnp.log(self.population_size / 2 + 1)\n"
    )
    check("JG803", source, flagged=False)


def test_branch_guarded_by_a_tracer_test_is_concrete():
    # numpyro: `if not_jax_tracer(is_valid): if device_get(is_valid): ...`
    source = (
        "import jax\nfrom numpyro.util import not_jax_tracer\n@jax.jit\ndef find(x):\n    is_valid = x > 0\n"
        "    if not_jax_tracer(is_valid):\n        if jax.device_get(is_valid):\n            return x\n"
        "    if not isinstance(x, jax.core.Tracer):\n        assert x > 0\n    return -x\n"
    )
    check("JG106", source, flagged=False)
    # outside the guarded branch the value is traced
    check("JG106", source.replace("    return -x\n", "    if is_valid:\n        return x\n    return -x\n"), flagged=True)


def test_jg302_numpy_testing_under_a_jnp_alias_is_silent():
    # `import jax.numpy as np` then `np.testing...`: jax.numpy has no testing module; this is numpy's
    source = "import jax.numpy as np\n\ndef test_same(a, b):\n    np.testing.assert_allclose(a, b)\n"
    assert codes(source) == []


def test_jg302_discarded_comparison_says_it_does_nothing():
    source = "import jax.numpy as jnp\n\ndef test_same(a, b):\n    jnp.array_equal(a, b)\n"
    findings = lint(source)
    assert [f.code for f in findings] == ["JG302"]
    assert "does nothing" in findings[0].message and "unchanged" not in findings[0].message


LITERAL_TESTS = '''
import jax
import jax.numpy as jnp

def bias_never_built(key):
    v = jax.random.normal(key, (4,))
    b = jnp.where(jax.random.randint(key, (4,), 0, 4) > 2, 0, -jnp.inf) if {test} else None
    if {test}:
        v = v + jax.random.uniform(key)
    return v, b

@jax.jit
def step(x):
    print(x) if {test} else None
    return x
'''


def test_code_under_a_literal_false_test_is_silent():
    # `... if False else None`: a block switched off by hand never runs
    assert codes(LITERAL_TESTS.format(test="False")) == []
    assert codes(LITERAL_TESTS.format(test="0")) == []


def test_code_under_a_literal_true_test_is_flagged():
    assert codes(LITERAL_TESTS.format(test="True")) == ["JG601", "JG601", "JG101"]


UNREACHABLE = '''
import jax

def make_projector(q):
    {first}
    def project(x):
        def inside(a):
            print(a)
            return a
        return jax.lax.cond(x.sum() > q, inside, lambda a: a, x)
    return project
'''


def test_code_after_an_unconditional_raise_is_silent():
    # a stub left in place: `raise NotImplementedError` before the half-written code
    assert codes(UNREACHABLE.format(first="raise NotImplementedError('not yet')")) == []
    assert codes(UNREACHABLE.format(first="q = float(q)")) == ["JG101"]
