"""NaN / Inf guard: caught on the device with the producing op and the user's line."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from runtime_helpers import assert_where, line_of

import jaxguard


def test_sharp_bits_seed_nan_inside_jit(guards):
    # The seed's example: the NaN comes from (x + y) / (x - y) with x == y == 0.
    @jax.jit
    def f(x, y):
        a = x * y
        b = (x + y) / (x - y)  # seed-nan-line
        c = a + 2
        return a + b * c

    with pytest.raises(jaxguard.NaNError) as info:
        f(jnp.array([2., 0.]), jnp.array([3., 0.]))
    assert_where(info.value, line_of("# seed-nan-line"))
    assert info.value.op == "div"
    assert "in f()" in str(info.value)


def test_sharp_bits_seed_eager_divide(guards):
    # Eagerly, a NaN counts when the program reads it (as a jit's output counts): the
    # error names the line that made it and the line that read it.
    q = jnp.divide(0., 0.)  # seed-eager-divide
    with pytest.raises(jaxguard.NaNError) as info:
        print(q)  # eager-read-line
    assert_where(info.value, line_of("# seed-eager-divide"))
    assert "divide" in info.value.op
    assert f"read at {line_of('# eager-read-line')}" in str(info.value).replace("tests/runtime/", "")


def test_correct_program_runs_silently(guards):
    @jax.jit
    def f(x, y):
        return (x + y) / (x - y)

    np.testing.assert_allclose(f(jnp.array([2., 5.]), jnp.array([3., 1.])), [-5., 1.5])
    assert float(jnp.log(jnp.float32(2.))) == pytest.approx(0.6931, abs=1e-4)


def test_nan_in_scan_body_names_the_body_line(guards):
    def body(carry, x):
        carry = carry + jnp.log(x)  # scan-body-line
        return carry, carry

    run = jax.jit(lambda xs: lax.scan(body, 0., xs))
    with pytest.raises(jaxguard.NaNError) as info:
        run(jnp.array([1., 2., -1.]))
    assert_where(info.value, line_of("# scan-body-line"))
    assert info.value.op == "log"
    run(jnp.array([1., 2., 3.]))  # no NaN: silent


def test_nan_under_vmap(guards):
    f = jax.jit(jax.vmap(lambda x: jnp.sqrt(x) * 2))  # vmap-line
    with pytest.raises(jaxguard.NaNError) as info:
        f(jnp.array([4., -1.]))
    assert_where(info.value, line_of("# vmap-line"))
    np.testing.assert_allclose(f(jnp.array([4., 1.])), [4., 2.])


def test_nan_in_gradient_of_masked_sqrt(guards):
    # The classic where-trap: the forward pass is clean, the gradient is NaN.
    def loss(x):
        return jnp.sum(jnp.where(x > 0, jnp.sqrt(x), 0.))  # grad-line

    grad = jax.jit(jax.grad(loss))
    with pytest.raises(jaxguard.NaNError) as info:
        grad(jnp.array([1., -1.]))
    assert_where(info.value, line_of("# grad-line"))


def test_eager_grad_of_guarded_function(guards):
    @jax.jit
    def f(x):
        return jnp.log(x)  # eager-grad-line

    with pytest.raises(jaxguard.NaNError) as info:
        jax.grad(f)(-1.)
    assert_where(info.value, line_of("# eager-grad-line"))


def test_nan_in_cond_custom_jvp_and_checkpoint(guards):
    branch = jax.jit(lambda p, x: lax.cond(p, jnp.log, lambda x: x, x))
    with pytest.raises(jaxguard.NaNError):
        branch(True, -1.)
    assert float(branch(False, -1.)) == -1.

    @jax.custom_jvp
    def safe_log(x):
        return jnp.log(x)  # custom-jvp-line
    safe_log.defjvp(lambda primals, tangents: (safe_log(primals[0]),
                                               tangents[0] / primals[0]))
    with pytest.raises(jaxguard.NaNError) as info:
        jax.jit(safe_log)(-1.)
    assert_where(info.value, line_of("# custom-jvp-line"))
    with pytest.raises(jaxguard.NaNError):
        jax.jit(jax.checkpoint(jnp.sqrt))(-1.)


def test_shard_map_nan_is_reported_without_the_op(guards):
    # checkify cannot instrument shard_map on this jax version: the output check still
    # catches the NaN, and the error says why the op is not named.
    from jax.sharding import NamedSharding, PartitionSpec

    mesh = jax.make_mesh((1,), ("i",))
    sharded_log = jax.shard_map(lambda y: jnp.log(y) * 2, mesh=mesh,
                                in_specs=PartitionSpec("i"), out_specs=PartitionSpec("i"))
    f = jax.jit(lambda x: sharded_log(x) + 1)
    x = jax.device_put(jnp.ones(4), NamedSharding(mesh, PartitionSpec("i")))
    np.testing.assert_array_equal(f(x), np.ones(4))
    with pytest.raises(jaxguard.NaNError, match="could not instrument"):
        f(-x)  # shard-map-line
    with pytest.raises(jaxguard.NaNError) as info:
        f(-x)  # shard-map-line-2
    assert_where(info.value, line_of("# shard-map-line-2"))


def test_masked_nan_is_not_reported(guards):
    # The NaN of log(-1) never reaches an output: no false alarm.
    f = jax.jit(lambda x: jnp.where(x > 0, jnp.log(jnp.abs(x) + (x <= 0) * -1.), 0.))
    np.testing.assert_allclose(f(jnp.array([-1., 1.])), [0., 0.])
    g = jax.jit(lambda x: jnp.nanmean(jnp.where(x > 0, x, jnp.nan)))
    assert float(g(jnp.array([-1., 3.]))) == 3.


def test_nan_constants_are_not_reported(guards):
    # A deliberate NaN constant flowing into later ops is not "produced" by them.
    f = jax.jit(lambda x: jnp.where(x > 0, x, jnp.nan) * 2 + 1)
    out = f(jnp.array([-1., 1.]))
    assert np.isnan(out[0]) and out[1] == 3.
    assert np.isnan(jnp.full((2,), jnp.nan) + 1).all()


def _beta_mode(alpha, beta):
    # distrax's Beta.mode: 0/0 at alpha = beta = 1 is masked; the NaN out is the constant.
    return jnp.where((alpha > 1.) & (beta > 1.), (alpha - 1.) / (alpha + beta - 2.),
                     jnp.where((alpha <= 1.) & (beta > 1.), 0.,
                               jnp.where((alpha > 1.) & (beta <= 1.), 1., jnp.nan)))


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "eager"])
def test_masked_nan_beside_a_nan_constant_is_not_reported(guards, jit):
    mode = jax.jit(_beta_mode) if jit else _beta_mode
    out = mode(jnp.array([1., 2., 3.]), jnp.array([1., 3., 3.]))
    np.testing.assert_allclose(out.tolist(), [np.nan, 1 / 3, 0.5])
    x = jnp.array([0., 1.])
    assert np.isnan(jnp.where(x > 0, x, jnp.nan).tolist()[0])


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "eager"])
def test_made_nan_reaching_the_output_beside_a_nan_constant_is_reported(guards, jit):
    # The same shape of code, but the 0/0 is the branch taken.
    def mode(a):
        return jnp.where(a >= 1., (a - 1.) / (a - 1.), jnp.nan)
    mode = jax.jit(mode) if jit else mode
    with pytest.raises(jaxguard.NaNError, match="`(div|jnp.true_divide)`"):
        mode(jnp.array([0., 1., 2.])).tolist()


def test_nan_inputs_are_not_blamed_on_the_function(guards):
    f = jax.jit(lambda x: x * 2)
    assert np.isnan(f(jnp.array([np.nan, 1.]))[0])


def test_donation_is_preserved(guards):
    f = jax.jit(lambda x: x + 1, donate_argnums=0)
    x = jnp.ones(4)
    f(x)
    assert x.is_deleted()


def test_nan_in_a_donating_function_names_the_call_site(guards):
    # The arguments are gone after the call, so the op cannot be located by a re-run;
    # the error still names the call and says how to locate it.
    f = jax.jit(lambda x: jnp.log(x - 2), donate_argnums=0)
    with pytest.raises(jaxguard.NaNError) as info:
        f(jnp.ones(3))  # donated-line
    assert_where(info.value, line_of("# donated-line"))
    assert "without donation" in str(info.value)


def test_static_argnums_and_methods_work(guards):
    class Model:
        def __init__(self, scale):
            self.scale = scale

        @jax.jit
        def apply(self, x):
            return x * 2

    @jax.jit
    def f(x, n):
        return jnp.log(x) * n  # static-line

    f2 = jax.jit(f.__wrapped__, static_argnums=1)
    assert float(f2(jnp.float32(1.), 3)) == 0.
    with pytest.raises(jaxguard.NaNError):
        f2(jnp.float32(-1.), 3)
    model = Model(2.)
    assert jax.jit(Model.apply.__wrapped__, static_argnums=0)(model, 1.) == 2.


def test_infs_only_when_asked():
    with jaxguard.guard():
        f = jax.jit(lambda x: 1. / x)  # inf-line
        assert np.isinf(f(jnp.float32(0.)))
    with jaxguard.guard(infs=True), pytest.raises(jaxguard.InfError) as info:
        f(jnp.float32(0.))
    assert_where(info.value, line_of("# inf-line"))


def test_nans_off():
    with jaxguard.guard(nans=False):
        assert np.isnan(jax.jit(lambda x: jnp.log(x))(-1.))
        assert np.isnan(jnp.log(-1.))


def test_nan_error_is_a_floating_point_error(guards):
    with pytest.raises(FloatingPointError):
        jax.jit(jnp.log)(jnp.float32(-1.))


def test_plus_and_minus_inf_in_one_output_is_not_a_nan(guards):
    out = jax.jit(lambda x: x / 0.0)(jnp.array([1., -1.]))
    np.testing.assert_array_equal(out, [np.inf, -np.inf])
    # ... while a NaN next to them still is one.
    with pytest.raises(jaxguard.NaNError):
        jax.jit(lambda x: x / 0.0)(jnp.array([1., -1., 0.]))


def _masked_cross_entropy(logits, labels, mask):
    # optax's softmax_cross_entropy(where=): a fully masked row makes -inf log-probs,
    # 0 * -inf = NaN in the product, and the masked sum drops it.
    log_probs = jax.nn.log_softmax(logits, where=mask)
    return -(labels * log_probs).sum(-1, where=mask)


LOGITS = jnp.array([[1., 2., 3.], [1., 2., 3.]])
MASK = jnp.array([[True, True, False], [False, False, False]])
LABELS = jnp.array([[0., 1., 0.], [0., 0., 0.]])


def test_eager_masked_nan_that_reaches_no_result_is_silent(guards):
    loss = _masked_cross_entropy(LOGITS, LABELS, MASK)
    np.testing.assert_allclose(loss, [0.3132617, 0.], rtol=1e-6)
    np.testing.assert_allclose(jax.jit(_masked_cross_entropy)(LOGITS, LABELS, MASK), loss)
    # distrax Categorical.log_prob with zero probabilities: log(0) = -inf, masked.
    probs = jnp.array([0.5, 0.5, 0.])
    logits = jnp.log(probs)
    log_prob = jnp.sum(jnp.where(jax.nn.one_hot(1, 3) > 0, jax.nn.log_softmax(logits), 0.))
    assert float(log_prob) == pytest.approx(np.log(0.5))


def test_eager_nan_that_reaches_a_read_value_is_reported(guards):
    logits = jnp.log(jnp.array([0.5, 0.5, 0.]))
    bad = jnp.sum(jax.nn.one_hot(1, 3) * jax.nn.log_softmax(logits))  # unmasked-line
    total = bad + 1.
    with pytest.raises(jaxguard.NaNError) as info:
        float(total)  # nan-read-line
    assert_where(info.value, line_of("# unmasked-line"))
    assert info.value.op == "jnp.multiply"
    assert line_of("# nan-read-line") in str(info.value)
    # An array made NaN-free by a later op is fine to read.
    assert float(jnp.nan_to_num(jnp.log(jnp.float32(-1.)), nan=0.)) == 0.
    assert bool(jnp.isnan(jnp.log(jnp.float32(-1.))))


def _masked_logsumexp(x, mask):
    return jnp.sum(jnp.where(mask.any(-1), jax.nn.logsumexp(x, axis=-1, where=mask), 0.))


def test_backward_pass_of_an_eager_grad_judges_the_gradient(guards):
    grad = jax.grad(_masked_logsumexp)(LOGITS, MASK)
    np.testing.assert_allclose(grad, [[0.26894143, 0.7310586, 0.], [0., 0., 0.]], rtol=1e-6)
    # A NaN that does reach the gradient is still reported when it is read.
    grad = jax.grad(lambda x: jnp.sum(jnp.sqrt(x)))(jnp.array([1., 0., -1.]))
    with pytest.raises(jaxguard.NaNError):
        str(grad)


def test_eager_library_ops_keep_the_fast_path(guards, monkeypatch):
    # Eager checks run after jax's C++ dispatch (its post-call hook): once compiled, an
    # eager jnp.log call never goes through jax's Python dispatch again.
    from jax._src import pjit

    x = jnp.arange(1., 4.)
    jnp.log(x)
    python_calls = []
    original = pjit._run_python_pjit
    monkeypatch.setattr(pjit, "_run_python_pjit",
                        lambda *a: python_calls.append(a) or original(*a))
    for _ in range(3):
        jnp.log(x)
    assert python_calls == []
    q = jnp.log(-x)  # fast-path-nan-line
    with pytest.raises(jaxguard.NaNError) as info:
        q.tolist()
    assert_where(info.value, line_of("# fast-path-nan-line"))


def test_eager_nan_closed_over_by_a_jit_is_judged_by_the_jit(guards):
    # distrax's Categorical(probs=...) normalizes eagerly (0/0 for an all-zero row) and a
    # jitted sampler closes over the result: jax embedding it as a constant is no read,
    # and the jitted function masks it.
    probs = jnp.array([[-0.1, 0.1, 0., 0.], [0.1, 0.2, 0.3, 0.4]])
    normalized = probs / probs.sum(-1, keepdims=True)
    sample = jax.jit(lambda: jnp.where(jnp.isnan(normalized).any(-1), -1., 1.))
    np.testing.assert_array_equal(sample(), [-1., 1.])


def test_a_traceback_shows_the_users_frames_not_jaxguards(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text("import jax, jax.numpy as jnp\nimport jaxguard\njaxguard.enable()\n"
                      "f = jax.jit(lambda x: jnp.log(x))\nf(-jnp.ones(3))\n")
    err = subprocess.run([sys.executable, str(script)], capture_output=True, text=True).stderr
    assert "NaNError" in err and 'train.py", line 5' in err
    assert "jaxguard/runtime" not in err.replace("jaxguard.runtime", "")


def test_locating_the_operation_says_so_on_stderr_with_its_time(guards, capfd):
    @jax.jit
    def step(x):
        return jnp.log(x - 1.0) * 2

    step(jnp.full(3, 3.0))
    assert "jaxguard:" not in capfd.readouterr().err  # a clean call is silent
    with pytest.raises(jaxguard.NaNError):
        step(jnp.zeros(3))
    err = capfd.readouterr().err
    assert "reached the outputs of step(); re-running it with every operation checked" in err
    assert "checked re-run of step() took" in err
