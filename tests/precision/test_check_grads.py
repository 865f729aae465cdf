"""check_grads on seed 002's case and on a deliberately wrong custom_vjp."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxguard.precision import check_grads

RNG = np.random.default_rng(0)
DATA = jnp.asarray(RNG.standard_normal((140, 120)), jnp.float32)
TARGET = jnp.asarray(RNG.standard_normal((140, 120)), jnp.float32)


def mse_sum(x, target):
    """Seed 002: MSELoss(reduction="sum") of the model (x + 1) / 2."""
    return jnp.sum(((x + 1) / 2 - target) ** 2)


def float32_forward_differences(fn, x, target, points, eps=1e-3):
    """The seed's own grad check: one-sided differences in float32."""
    base = fn(x, target)
    return [float((fn(x.at[i, j].add(eps), target) - base) / eps) for i, j in points]


def test_seed_002_float32_forward_differences_fail():
    grads = jax.grad(mse_sum)(DATA, TARGET)
    points = [(3, 4), (50, 60), (100, 7), (139, 119), (71, 67)]
    numeric = float32_forward_differences(mse_sum, DATA, TARGET, points)
    ratios = [n / float(grads[p]) for n, p in zip(numeric, points)]
    # The loss is ~1e4, a 1e-3 step moves it by ~1e-7 of itself: float32 round-off.
    assert max(abs(r - 1) for r in ratios) > 0.2


def test_seed_002_passes_with_float64_central_differences():
    report = check_grads(mse_sum, DATA, TARGET, probes=8)
    assert report.passed, str(report)
    assert report.dtype == "float32"
    for probe in report.probes:
        assert abs(probe.ratio - 1) < 1e-3
        assert probe.step > 0 and probe.roundoff < 1e-3 * abs(probe.numeric) + 1e-9
    report.raise_if_failed()


def test_jax_test_util_check_grads_in_float32_is_unreliable_here():
    # DESIGN.md: jax.test_util.check_grads uses eps=1e-4 in the argument's dtype.
    from jax.test_util import check_grads as jax_check_grads

    with pytest.raises(AssertionError):
        jax_check_grads(lambda x: mse_sum(x, TARGET), (DATA,), order=1, modes=("rev",))


@jax.custom_vjp
def wrong_sin(x):
    return jnp.sin(x)


wrong_sin.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (2.0 * g,))  # should be cos(x) * g


def test_wrong_custom_vjp_fails():
    report = check_grads(lambda x: jnp.sum(wrong_sin(x)), DATA[:4, :5])
    assert not report.passed
    assert all(p.analytic == 2.0 for p in report.probes)
    with pytest.raises(AssertionError, match="FAIL"):
        report.raise_if_failed()


def test_right_custom_vjp_passes():
    @jax.custom_vjp
    def good_sin(x):
        return jnp.sin(x)

    good_sin.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))
    assert check_grads(lambda x: jnp.sum(good_sin(x)), DATA[:4, :5]).passed


def test_function_that_casts_inside_is_differenced_in_float64():
    # The loss rounds through float16 internally; a float16 finite difference would be
    # meaningless, the float64 re-evaluation is not.
    def loss(x):
        return jnp.sum(jnp.tanh(x.astype(jnp.float16)).astype(jnp.float32) ** 2)

    x = DATA[:3, :3] * 0.1
    report = check_grads(loss, x, rtol=3e-3, atol=1e-4)  # float16-level gradient accuracy
    assert report.passed, str(report)


def test_argnums_and_pytrees():
    params = {"w": jnp.asarray(RNG.standard_normal((3, 2)), jnp.float32), "b": jnp.zeros(2, jnp.float32)}
    x = jnp.asarray(RNG.standard_normal((5, 3)), jnp.float32)

    def loss(p, x):
        return jnp.mean(jnp.tanh(x @ p["w"] + p["b"]) ** 2)

    report = check_grads(loss, params, x, argnums=(0, 1), probes=12)
    assert report.passed, str(report)
    leaves = {p.leaf for p in report.probes}
    assert leaves <= {"[0]['b']", "[0]['w']", "[1]"} and "[1]" in leaves
    assert "probes passed" in str(report)
