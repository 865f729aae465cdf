"""divergence: jit vs op-by-op vs float64."""

import jax.numpy as jnp
import numpy as np
import pytest

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


def test_python_int_output_compares_values_and_names_the_dtype_difference():
    # A Python int output is int64 op by op (numpy's default) and int32 under jit.
    d = divergence(lambda v: (jnp.exp(v) * 3.0, 3), jnp.ones(4, jnp.float32))
    assert d.bitwise_equal and d.jit_vs_eager == 0.0
    assert d.dtype_differences == ("[1]: int64 op by op, int32 under jit",)
    assert "give the same values, only the dtypes differ ([1]: int64 op by op, int32 under jit)" in d.verdict
    assert "differ by 0" not in d.verdict


def test_different_values_are_still_reported_with_a_dtype_difference():
    d = divergence(lambda v: (v + 1e8) - 1e8, jnp.ones(4, jnp.float32) * 0.3)
    assert not d.bitwise_equal and d.dtype_differences == ()


def test_static_argnums_and_bad_input():
    x = jnp.asarray(RNG.standard_normal(8), jnp.float32)
    d = divergence(lambda v, n, how: getattr(jnp, how)(v[:n]), x, 5, "sum", static_argnums=(1, 2))
    assert d.jit_vs_f64 < 1e-5
    with pytest.raises(TypeError, match="^divergence: fn must be callable, got str 'f'$"):
        divergence("f", x)
    with pytest.raises(TypeError, match="^divergence: fn returned a str \\('out'\\); it must return arrays$"):
        divergence(lambda v: "out", x)
    with pytest.raises(TypeError, match="^divergence: argument \\[1\\] is a str \\('sum'\\), not an array; pass static_argnums=\\(1,\\)"):
        divergence(lambda v, how: v, x, "sum")
    with pytest.raises(TypeError, match="^divergence: fn cannot be traced with argument 1 \\(5\\) as an array .*static_argnums=\\(1,\\)$"):
        divergence(lambda v, n: jnp.zeros(n) + v[0], x, 5)
    with pytest.raises(ValueError, match="^divergence: static_argnums 3 is not one of the 2 positional argument"):
        divergence(lambda v, n: v, x, 5, static_argnums=3)


def test_each_output_has_its_own_figures_and_verdict():
    # output 0 is exact everywhere; output 1 is lost op by op and rewritten away by XLA
    x = jnp.asarray(RNG.standard_normal(16), jnp.float32)
    d = divergence(lambda v: (v * 1e4, (v + 1e4) - 1e4), x)
    first, second = d.outputs
    assert (first.path, second.path) == ("[0]", "[1]")
    assert first.passed and first.verdict.startswith("jit and op-by-op agree bit for bit")
    assert second.verdict.startswith("compilation helps")  # not pooled into "equally far"
    assert not second.passed and second.tolerance_ratio > 1
    assert not d.passed and "FAILED: output(s) [1]" in str(d)


def test_an_infinite_error_fails_and_a_correct_program_passes():
    assert not divergence(lambda v: v * 1e38 * 10.0, jnp.ones(3, jnp.float32)).passed
    d = divergence(lambda v: {"loss": jnp.sum(v ** 2)}, jnp.ones(8, jnp.float32))
    assert d.passed and d.outputs[0].path == "['loss']"
    loose = divergence(lambda v: (v + 1e4) - 1e4, jnp.full(4, 0.3, jnp.float32), rtol=1.0, atol=1.0)
    assert loose.passed


def test_the_worst_element_is_named():
    v = jnp.asarray([1.0, 2.0, 1000.123, 3.0], jnp.float32)  # only 1000.123 is not a bfloat16
    (output,) = divergence(lambda x: x.astype(jnp.bfloat16).astype(jnp.float32), v).outputs
    assert output.worst_index == (2,)
    assert 0.1 < output.jit_vs_f64 < 0.13 and 1e-4 < output.jit_relative < 1.3e-4
    assert not output.passed  # float32 output: bfloat16 rounding is beyond float32's tolerance
