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
    coordinates = [p for p in report.probes if p.leaf == "[0]"]
    assert len(coordinates) == 8 and all(p.analytic == 2.0 and not p.passed for p in coordinates)
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
    assert leaves <= {"[0]['b']", "[0]['w']", "[1]", "all"} and "[1]" in leaves
    assert "probes passed" in str(report)


# --- probes: coordinates without replacement, and random directions ---------------------------

X2000 = jnp.asarray(RNG.standard_normal(2000), jnp.float32)


def sin_wrong_at(index, factor):
    """sin with a backward pass that is right except at one element."""

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: ((jnp.cos(x) * g).at[index].multiply(factor),))
    return f


def test_gradient_wrong_at_one_element_in_2000_is_caught_by_a_direction():
    wrong = sin_wrong_at(1234, 2.0)
    report = check_grads(lambda x: jnp.sum(wrong(x)), X2000)
    assert not report.passed
    # 8 coordinates out of 2,000 miss element 1234; a direction sums every element.
    assert all(p.passed for p in report.probes if p.leaf == "[0]")
    directions = [p for p in report.probes if p.leaf == "all"]
    assert len(directions) == 2 and not any(p.passed for p in directions)
    right = sin_wrong_at(1234, 1.0)
    assert check_grads(lambda x: jnp.sum(right(x)), X2000).passed


def test_coordinates_are_drawn_without_replacement():
    report = check_grads(lambda x: jnp.sum(jnp.sin(x) * x), X2000[:6], probes=6, directions=0)
    assert sorted(p.index for p in report.probes) == [(i,) for i in range(6)]
    report = check_grads(lambda x: jnp.sum(x**2), X2000[:3], probes=8, directions=1)
    assert len(report.probes) == 4  # every element once, and the direction


def test_zero_gradient_probe_gets_a_step_on_the_gradient_scale():
    # The step used to be sized for |gradient| = 0 (capped at 1e-2), and the central
    # difference of x**3 at 0 is then h**2 = 1e-4: a false failure.
    report = check_grads(lambda x: jnp.sum(x**3), jnp.array([1.0, 0.0, 1.0, 0.0]))
    assert report.passed, str(report)
    zeros = [p for p in report.probes if p.leaf == "[0]" and p.index in ((1,), (3,))]
    assert len(zeros) == 2 and all(p.step < 1e-4 and abs(p.numeric) < 1e-9 for p in zeros)
    # ... and the same zeros still catch a wrong gradient there.
    @jax.custom_vjp
    def cube(x):
        return x**3

    cube.defvjp(lambda x: (x**3, x), lambda x, g: ((3 * x**2 + 0.01) * g,))
    assert not check_grads(lambda x: jnp.sum(cube(x)), jnp.array([1.0, 0.0, 1.0, 0.0])).passed


def test_all_zero_gradient_passes():
    assert check_grads(lambda x: jnp.sum(x**3), jnp.zeros(3)).passed


def test_relu_kink_is_not_a_failure():
    x = jnp.array([-1.0, 0.0, 2.0, 0.0, 0.5])
    report = check_grads(lambda x: jnp.sum(jax.nn.relu(x) * 3.0), x)
    assert report.passed, str(report)
    kinks = [p for p in report.probes if p.note == "kink"]
    assert {p.index for p in kinks if p.leaf == "[0]"} == {(1,), (3,)}
    assert "(kink)" in str(report)
    # A wrong slope next to the kink still fails.
    @jax.custom_vjp
    def bad_relu(x):
        return jax.nn.relu(x)

    bad_relu.defvjp(lambda x: (jax.nn.relu(x), x), lambda x, g: (jnp.where(x > 0, 2.0, 0.0) * g,))
    assert not check_grads(lambda x: jnp.sum(bad_relu(x)), x).passed


def test_prng_key_argument_not_differentiated():
    def noisy_loss(x, key):
        return jnp.sum((x + 0.1 * jax.random.normal(key, x.shape)) ** 2)

    report = check_grads(noisy_loss, X2000[:10], jax.random.key(0))
    assert report.passed, str(report)
    with pytest.raises(TypeError, match="argument \\[1\\] is a PRNG key; it cannot be differentiated"):
        check_grads(noisy_loss, X2000[:10], jax.random.key(0), argnums=1)


# --- bad input: one clear error naming the argument ---------------------------------------


def test_bad_input_errors_name_the_argument():
    x = X2000[:5]
    with pytest.raises(TypeError, match="^check_grads: fn must be callable, got int 3$"):
        check_grads(3, x)
    with pytest.raises(TypeError, match="^check_grads: fn returned a str \\('loss'\\); it must return arrays$"):
        check_grads(lambda x: "loss", x)
    with pytest.raises(TypeError, match="^check_grads: fn must return a real floating-point scalar.*int32\\[5\\]$"):
        check_grads(lambda x: (x * 2).astype(jnp.int32), x)
    with pytest.raises(TypeError, match="^check_grads: argument \\[1\\] is a str \\('mean'\\), not an array; pass static_argnums=\\(1,\\)"):
        check_grads(lambda x, how: jnp.sum(x), x, "mean")
    with pytest.raises(TypeError, match="^check_grads: fn cannot be traced with argument 1 \\(3\\) as an array .*static_argnums=\\(1,\\)$"):
        check_grads(lambda x, n: jnp.sum(x[:n] ** 2), x, 3)
    with pytest.raises(ValueError, match="^check_grads: argnums 2 is not one of the 2 positional argument"):
        check_grads(lambda x, n: jnp.sum(x), x, 3, argnums=2)
    with pytest.raises(ValueError, match="^check_grads: argument 1 is in argnums but static"):
        check_grads(lambda x, n: jnp.sum(x), x, 3, argnums=(0, 1), static_argnums=1)
    with pytest.raises(ValueError, match="^check_grads: argument\\(s\\) \\[1\\] have no floating-point values"):
        check_grads(lambda x, n: jnp.sum(x * n), x, jnp.arange(5), argnums=1)
    with pytest.raises(ValueError, match="^check_grads: fn is nan at these inputs"):
        check_grads(lambda x: jnp.sum(jnp.log(x - 10.0)), x)
    with pytest.raises(ValueError, match="^check_grads: probes=0 and directions=0 leave nothing to check$"):
        check_grads(lambda x: jnp.sum(x), x, probes=0, directions=0)


def test_static_argnums():
    def loss(x, n, how):
        return jnp.sum(x[:n] ** 2) if how == "sum" else jnp.mean(x[:n] ** 2)

    report = check_grads(loss, X2000[:10], 4, "sum", static_argnums=(1, 2))
    assert report.passed, str(report)
    assert check_grads(loss, X2000[:10], 4, "mean", static_argnums=(1, -1)).passed


def test_the_wrong_element_is_named_by_bisecting_a_failed_direction():
    wrong = sin_wrong_at(1234, 2.0)  # wrong at one element of 2,000
    report = check_grads(lambda x: jnp.sum(wrong(x)), X2000, directions=1)
    assert not report.passed
    assert report.located is not None and report.located.index == (1234,) and not report.located.passed
    assert "wrong element (found by bisecting a failed direction): [0] (1234,)" in str(report)
    assert check_grads(lambda x: jnp.sum(sin_wrong_at(1234, 1.0)(x)), X2000).located is None


def _softplus_with_wrong_hessian():
    @jax.custom_jvp
    def f(x):
        return jnp.logaddexp(x, 0.0)

    @jax.custom_jvp
    def sigmoid(x):
        return jax.nn.sigmoid(x)

    sigmoid.defjvp(lambda p, t: (sigmoid(p[0]), 2.0 * jax.nn.sigmoid(p[0]) * (1 - jax.nn.sigmoid(p[0])) * t[0]))  # wrong: 2x
    f.defjvp(lambda p, t: (f(p[0]), sigmoid(p[0]) * t[0]))
    return f


def test_second_order_checks_hessian_vector_products():
    x = jnp.asarray(RNG.standard_normal(50), jnp.float32)
    assert check_grads(lambda v: jnp.sum(jnp.sin(v) * v ** 2), x, order=2).passed
    wrong = _softplus_with_wrong_hessian()
    assert check_grads(lambda v: jnp.sum(wrong(v)), x).passed  # first derivatives are right
    assert not check_grads(lambda v: jnp.sum(wrong(v)), x, order=2).passed
    with pytest.raises(ValueError, match="order must be 1 or 2"):
        check_grads(lambda v: jnp.sum(v), x, order=3)


def test_vector_valued_functions_are_checked_through_a_random_cotangent():
    assert check_grads(lambda v: {"a": jnp.tanh(v) * v, "b": jnp.sum(v ** 2)}, X2000[:20]).passed
    wrong = sin_wrong_at(3, 2.0)
    report = check_grads(wrong, X2000[:20])  # sin itself, elementwise: a Jacobian, not a gradient
    assert not report.passed
    assert report.located is not None and report.located.index == (3,)


def softplus_with_rule(sign):
    """softplus with a custom_jvp rule sigmoid(sign * x): right for sign=1, wrong for -1."""

    @jax.custom_jvp
    def softplus(x):
        return jnp.log1p(jnp.exp(x))

    @softplus.defjvp
    def rule(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), jax.nn.sigmoid(sign * x) * t

    return softplus


softplus, softplus_wrong = softplus_with_rule(1.0), softplus_with_rule(-1.0)


def test_forward_mode_checks_jvp_beside_grad():
    x = jnp.asarray(RNG.standard_normal(50), jnp.float32)
    report = check_grads(lambda v: softplus(v).sum(), x, modes=("fwd", "rev"))
    assert report.passed and {p.mode for p in report.probes} == {"fwd", "rev"}
    assert len(report.probes) == 2 * (8 + 2)
    bad = check_grads(lambda v: softplus_wrong(v).sum(), x, modes="fwd")
    assert not bad.passed and all(p.mode == "fwd" for p in bad.probes)
    assert "fwd" not in str(bad)  # one mode: no column of it
    both = check_grads(lambda v: softplus_wrong(v).sum(), x, modes=("fwd", "rev"))
    assert "FAIL (fwd" in str(both) and "FAIL (rev" in str(both)


def newton_sqrt(a):
    """sqrt by Newton's method in a while_loop: jax.grad cannot differentiate it, jvp can."""
    def body(state):
        x, _ = state
        return (x + a / x) / 2, x

    def unconverged(state):
        x, previous = state
        return jnp.any(jnp.abs(x - previous) > 1e-6 * jnp.abs(x))

    x, _ = jax.lax.while_loop(unconverged, body, (a, jnp.zeros_like(a)))
    return x.sum()


def test_forward_mode_alone_checks_what_reverse_mode_cannot_differentiate():
    a = jnp.asarray(RNG.uniform(1, 4, 20), jnp.float32)
    with pytest.raises(ValueError, match="while_loop"):
        check_grads(newton_sqrt, a)
    report = check_grads(newton_sqrt, a, modes="fwd")
    assert report.passed, report
    probe = next(p for p in report.probes if p.leaf != "all")
    np.testing.assert_allclose(probe.analytic, 0.5 / np.sqrt(float(a[probe.index])), rtol=1e-3)


def test_modes_are_validated():
    with pytest.raises(ValueError, match="modes"):
        check_grads(lambda v: v.sum(), jnp.ones(3), modes=("backward",))
    with pytest.raises(ValueError, match="16384"):
        check_grads(lambda v: v.sum(), jnp.ones(20000), modes="fwd")
