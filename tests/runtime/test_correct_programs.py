"""The guard never breaks a correct program: patterns from real test suites (chex, optax,
distrax, haiku) that jaxguard once broke, each run with the guards on."""

import inspect
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.experimental import checkify
from runtime_helpers import line_of

import jaxguard


def _checked_double(x):
    checkify.check(jnp.all(x > 0), "x must be positive, got {}", x)
    return x * 2


def test_users_own_checkify_check_inside_a_jit_is_kept(guards):
    err, out = checkify.checkify(jax.jit(_checked_double))(jnp.array([-1., 2.]))
    assert "x must be positive" in err.get()
    err, out = checkify.checkify(jax.jit(_checked_double))(jnp.array([1., 2.]))
    assert err.get() is None and out[0] == 2.
    err, _ = jax.jit(checkify.checkify(_checked_double))(jnp.array([-1.]))
    assert "x must be positive" in err.get()
    with pytest.raises(checkify.JaxRuntimeError, match="x must be positive"):
        checkify.checkify(jax.jit(_checked_double))(jnp.array([-1.]))[0].throw()


def test_unfunctionalized_check_fails_as_in_jax(guards):
    # Without checkify around it a `check` inside jit is an error in jax; so it stays.
    with pytest.raises(ValueError, match="not functionalized"):
        jax.jit(_checked_double)(jnp.array([1.]))


def foo(x, y=2, *, z=3):
    return x + y + z


def _is_traceable(fn):
    # What chex's is_traceable looks at: the type's name, or a jax wrapper's globals.
    return "PjitFunction" in str(type(fn))


def test_guarded_jit_looks_like_a_jitted_function(guards):
    jitted = jax.jit(foo)
    assert isinstance(jitted, jaxguard.runtime.jitwrap.GuardedPjitFunction)
    assert str(inspect.signature(jitted, follow_wrapped=False)) == "(x, y=2, *, z=3)"
    assert jitted.__wrapped__ is foo
    assert jitted.__name__ == "foo" and jitted.__doc__ == foo.__doc__
    assert _is_traceable(jitted) and not _is_traceable(foo)
    bound = inspect.signature(jitted, follow_wrapped=False).bind(1., z=4)
    assert float(jitted(*bound.args, **bound.kwargs)) == 7.


def test_traced_once_per_compilation_like_jax(guards):
    # chex.assert_max_traces counts calls of the Python function with tracers.
    traces = []

    @jax.jit
    def f(x):
        traces.append(1)
        return x * 2

    for _ in range(3):
        f(jnp.ones(2))
    assert len(traces) == 1
    # Nested in another jit, under an eager grad or vmap (batched alarms make jaxguard
    # run its locating twin), lowered: the same trace serves, as in jax.
    jax.jit(lambda x: f(x) + 1)(jnp.ones(2))
    jax.grad(lambda x: f(x).sum())(jnp.ones(2))
    jax.vmap(f)(jnp.ones((4, 2)))
    f.lower(jnp.ones(2))
    assert len(traces) == 1
    f(jnp.ones(3))
    assert len(traces) == 2


def _loss(v):
    return jnp.sum(v ** 2)


def test_transforms_of_a_guarded_jit_inside_loop_and_cond_bodies(guards):
    f = jax.jit(_loss)
    x = jnp.ones(3)
    out = lax.fori_loop(0, 3, lambda i, v: v - 0.1 * jax.grad(f)(v), x)
    np.testing.assert_allclose(out, 0.512 * np.ones(3), rtol=1e-6)
    out = lax.while_loop(lambda c: c[0] < 2,
                         lambda c: (c[0] + 1, c[1] - 0.1 * jax.grad(f)(c[1])), (0, x))[1]
    np.testing.assert_allclose(out, 0.64 * np.ones(3), rtol=1e-6)
    out = lax.cond(True, lambda v: jax.jvp(f, (v,), (v,))[1], lambda v: 0., x)
    assert float(out) == 6.
    _, ys = lax.scan(lambda c, v: (c, jax.vmap(jax.grad(f))(v[None])[0]), 0., x[:, None])
    np.testing.assert_allclose(ys, 2 * np.ones((3, 1)))
    out = jax.jit(lambda v: lax.fori_loop(0, 2, lambda i, w: w - 0.1 * jax.grad(f)(w), v))(x)
    np.testing.assert_allclose(out, 0.64 * np.ones(3), rtol=1e-6)


def test_pmap_of_indexing(guards):
    out = jax.pmap(lambda x: x[jnp.argmax(x)])(jnp.ones((1, 3)))
    np.testing.assert_array_equal(out, [1.])
    out = jax.pmap(lambda x: jnp.take(x, jnp.argmin(x)))(jnp.arange(3.)[None])
    np.testing.assert_array_equal(out, [0.])


def test_a_guarded_function_lives_as_long_as_the_program_holds_it(guards):
    # Holding every guarded function kept every test's compiled code alive, until XLA ran
    # out of memory maps and crashed (optax's and distrax's suites under --jaxguard).
    import gc
    import weakref

    from jaxguard.runtime import jitwrap

    x = jnp.ones(2)
    f = jax.jit(lambda v: v + 1.0)
    f(x)
    released = weakref.ref(f)
    del f
    with pytest.warns(jaxguard.RecompileWarning):  # new lambdas jitted in a loop, as warned
        for i in range(jitwrap._RECENT_SIZE + 1):
            jax.jit(lambda v, i=i: v * i)(x)
    gc.collect()
    assert released() is None
    # a function jitted again and again in a loop still finds its compiled twin
    traces = []

    def step(v):
        traces.append(1)
        return v + 1.0

    for _ in range(3):
        x = jax.jit(step)(x)
    assert len(traces) == 1


def _count_up_to(n):
    return lax.while_loop(lambda c: c < n, lambda c: c + 1, 0)


def test_jit_of_vmap_of_a_while_loop_runs_with_outputs_checked(guards):
    # checkify cannot transform a batched while loop at all (distrax's Multinomial
    # entropy under jit): the function runs as in jax, its outputs still checked.
    counts = jax.jit(jax.vmap(_count_up_to))
    with pytest.warns(jaxguard.GuardCoverageWarning, match="could not add on-device checks"):
        np.testing.assert_array_equal(counts(jnp.array([3, 5])), [3, 5])
    log_of_counts = jax.jit(lambda n: jnp.log(jax.vmap(_count_up_to)(n) - 3.0))
    with pytest.warns(jaxguard.GuardCoverageWarning, match="could not add"):
        with pytest.raises(jaxguard.NaNError, match="NaN in the output of <lambda>"):
            log_of_counts(jnp.array([2, 5]))


def test_div_bound_with_the_parameters_of_mul(guards):
    # distrax inverts `x * 2` by binding div_p with mul's parameters (out_dtype=None),
    # which jax's checkify rule for div does not accept; plain jit does.
    halve = jax.jit(lambda y: lax.div_p.bind(y, jnp.float32(2.0), out_dtype=None))
    with pytest.warns(jaxguard.GuardCoverageWarning, match="could not add"):
        np.testing.assert_allclose(halve(jnp.array([4.0, 1.0])), [2.0, 0.5])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "complex64"])
def test_strict_dtype_promotion_with_half_precision_outputs(guards, dtype):
    # equinox's and others' test configs set jax_numpy_dtype_promotion="strict"
    import jax
    import jax.numpy as jnp

    with jax.numpy_dtype_promotion("strict"):
        out = jax.jit(lambda x: x * 2)(jnp.ones(3, dtype))
        assert out.dtype == jnp.dtype(dtype)
        if dtype != "complex64":  # the log of a negative complex number is no NaN
            with pytest.raises(guards.NaNError):
                jax.jit(jnp.log)(jnp.zeros(3, dtype) - 1)


def test_under_disable_jit_a_guarded_jit_runs_op_by_op_without_warnings(guards):
    import warnings

    batched_while = jax.jit(lambda x: jax.vmap(lambda y: jax.lax.while_loop(lambda c: c < 3.0, lambda c: c + 1, y))(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "could not add on-device checks"
        with jax.disable_jit():
            assert np.allclose(batched_while(jnp.ones(3)), 3.0)
            with pytest.raises(guards.NaNError, match="disable_jit"):
                jax.jit(jnp.log)(-jnp.ones(3))


def test_eager_grad_of_a_jit_with_a_custom_vjp_that_slices(guards):
    # jax 0.10's checkify cannot be differentiated here ("foreach() argument 2 is shorter
    # than argument 1"); the program must run as jax runs it, and say so once
    import warnings

    @jax.custom_vjp
    def f(x):
        return x.at[0].set(1.0)[1:]

    f.defvjp(lambda x: (f(x), None), lambda _, g: (jnp.concatenate([jnp.zeros(1), g]),))
    step = jax.jit(lambda x: f(x).sum())
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for _ in range(2):
            assert np.allclose(jax.grad(step)(jnp.ones(4)), [0.0, 1.0, 1.0, 1.0])
        assert np.allclose(jax.vjp(step, jnp.ones(4))[0], 3.0)
    assert sum("runs unchecked" in str(w.message) for w in said) == 1
    assert float(step(jnp.ones(4))) == 3.0  # called plainly it is still checked


def test_a_library_warning_meant_for_its_caller_points_at_the_users_call(guards, tmp_path, monkeypatch):
    # `stacklevel=2` in a jitted function lands in the frames that trace it: shown at the
    # line that called the jitted function, not inside jaxguard
    (tmp_path / "warning_library.py").write_text(
        "import warnings\nimport jax\n\n@jax.jit\ndef old_api(x):\n"
        "    warnings.warn('old_api is deprecated', DeprecationWarning, stacklevel=2)\n"
        "    return x + 1\n\n@jax.jit\ndef own_line(x):\n"
        "    warnings.warn('shown where it is issued', UserWarning)\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import warning_library

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        warning_library.old_api(jnp.ones(2))  # deprecated-call
        warning_library.own_line(jnp.ones(2))
    deprecated, own = record
    assert f"{os.path.basename(deprecated.filename)}:{deprecated.lineno}" == line_of("# deprecated-call")
    assert (os.path.basename(own.filename), own.lineno) == ("warning_library.py", 11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DeprecationWarning, match="old_api is deprecated"):
            warning_library.old_api(jnp.ones(3))  # a new shape: traced again, raised as plain jax does
