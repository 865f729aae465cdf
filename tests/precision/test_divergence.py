"""divergence: jit vs op-by-op vs float64."""

import jax.numpy as jnp
import numpy as np

from jaxguard.precision import divergence

RNG = np.random.default_rng(0)


def layer_norm(x):
    mean = jnp.mean(x, axis=(-2, -1), keepdims=True)
    var = jnp.var(x, axis=(-2, -1), keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5)


def test_layer_norm_small():
    # The seed notebook's experiment at test size; benchmarks/precision_layernorm.py runs (1, 3, 10000, 1000).
    x = jnp.asarray(RNG.standard_normal((1, 3, 100, 50)), jnp.float32)
    d = divergence(layer_norm, x)
    assert 0 < d.eager_vs_f64 < 1e-5 and 0 < d.jit_vs_f64 < 1e-5
    assert d.jit_vs_eager <= 1e-5
    assert "float64" in d.verdict
    assert str(d).startswith("jit vs eager")


def test_compilation_changes_the_result():
    # XLA rewrites (x + 1e8) - 1e8 to x under jit; op by op it is 0.
    x = jnp.asarray(RNG.standard_normal(16), jnp.float32)
    d = divergence(lambda v: (v + 1e8) - 1e8, x)
    assert not d.bitwise_equal
    assert d.jit_vs_f64 == 0.0 and d.eager_vs_f64 > 0.5
    assert d.verdict.startswith("compilation helps")


def test_bitwise_equal_and_algorithmic_verdict():
    d = divergence(lambda v: jnp.exp(v) * 3.0, jnp.asarray(RNG.standard_normal(16), jnp.float32))
    assert d.bitwise_equal and d.jit_vs_eager == 0.0
    assert "algorithm" in d.verdict


def test_infinite_differences_are_inf():
    d = divergence(lambda v: v * 1e38 * 10.0, jnp.ones(3, jnp.float32))
    assert d.eager_vs_f64 == d.jit_vs_f64 == np.inf
    assert "e+308" not in str(d) and "eager vs f64: inf" in str(d)
