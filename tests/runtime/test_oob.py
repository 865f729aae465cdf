"""Out-of-bounds guard: gathers, scatters, dynamic_slice, jnp.take; in jit and eagerly."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax
from runtime_helpers import assert_where, line_of

import jaxguard


def test_sharp_bits_seed_eager_index_past_the_end(guards):
    # The seed: jnp.arange(10)[11] silently returns 9.
    with pytest.raises(jaxguard.OutOfBoundsError) as info:
        jnp.arange(10)[11]  # seed-oob-line
    assert_where(info.value, line_of("# seed-oob-line"))
    assert "index 11 is out of bounds for axis 0 with size 10" in str(info.value)


def test_out_of_bounds_error_is_an_index_error(guards):
    with pytest.raises(IndexError):
        jnp.arange(3)[jnp.array(7)]


def test_traced_index_inside_jit(guards):
    f = jax.jit(lambda x, i: x[i] * 2)  # jit-index-line
    with pytest.raises(jaxguard.OutOfBoundsError) as info:
        f(jnp.arange(5.), 5)
    assert_where(info.value, line_of("# jit-index-line"))
    assert float(f(jnp.arange(5.), 4)) == 8.
    assert float(f(jnp.arange(5.), -1)) == 8.  # negative indices are fine


def test_array_gather_inside_jit(guards):
    f = jax.jit(lambda table, ids: table[ids].sum())  # gather-line
    with pytest.raises(jaxguard.OutOfBoundsError) as info:
        f(jnp.ones((4, 2)), jnp.array([0, 3, 4]))
    assert_where(info.value, line_of("# gather-line"))
    assert float(f(jnp.ones((4, 2)), jnp.array([0, 3, 1]))) == 6.


def test_scatter_drops_update(guards):
    @jax.jit
    def f(x, i):
        return x.at[i].add(1.)  # scatter-line

    with pytest.raises(jaxguard.OutOfBoundsError) as info:
        f(jnp.zeros(3), jnp.array([0, 3]))
    assert_where(info.value, line_of("# scatter-line"))
    assert "dropped" in str(info.value) or "drops" in str(info.value)
    np.testing.assert_array_equal(f(jnp.zeros(3), jnp.array([0, 2])), [1., 0., 1.])


def test_eager_scatter(guards):
    with pytest.raises(jaxguard.OutOfBoundsError) as info:
        jnp.zeros(3).at[jnp.array(5)].set(1.)  # eager-scatter-line
    assert_where(info.value, line_of("# eager-scatter-line"))


def test_dynamic_slice(guards):
    f = jax.jit(lambda x, i: lax.dynamic_slice(x, (i,), (3,)))  # dslice-line
    with pytest.raises(jaxguard.OutOfBoundsError) as info:
        f(jnp.arange(5), 3)
    assert_where(info.value, line_of("# dslice-line"))
    np.testing.assert_array_equal(f(jnp.arange(5), 2), [2, 3, 4])


def test_eager_vmap_of_a_guarded_function(guards):
    f = jax.jit(lambda x, i: jnp.log(x) + x[i])  # vmapped-line
    ok = jax.vmap(f, in_axes=(None, 0))(jnp.ones(3), jnp.array([0, 1]))
    np.testing.assert_array_equal(ok, np.ones((2, 3)))
    with pytest.raises(jaxguard.OutOfBoundsError) as info:
        jax.vmap(f, in_axes=(None, 0))(jnp.ones(3), jnp.array([0, 5]))
    assert_where(info.value, line_of("# vmapped-line"))
    with pytest.raises(jaxguard.NaNError):
        jax.vmap(f, in_axes=(0, None))(-jnp.ones((2, 3)), 0)


def test_guarded_function_inside_an_unguarded_jit_runs_unchecked(guards):
    guarded = jax.jit(lambda x, i: x[i])
    outer = jax._src.api.jit(lambda x: guarded(x, 5))  # jax's own jit: not guarded
    assert int(outer(jnp.arange(3))) == 2


def test_index_inside_while_loop(guards):
    def body(carry):
        i, x = carry
        return i + 1, x + x[i + 2]  # while-line

    f = jax.jit(lambda x: lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1])
    with pytest.raises(jaxguard.OutOfBoundsError) as info:
        f(jnp.ones(4))
    assert_where(info.value, line_of("# while-line"))
    f(jnp.ones(5))


def test_take_in_jit_and_eagerly(guards):
    f = jax.jit(lambda x, i: jnp.take(x, i))  # take-jit-line
    with pytest.raises(jaxguard.OutOfBoundsError) as info:
        f(jnp.arange(4), 9)
    assert_where(info.value, line_of("# take-jit-line"))
    with pytest.raises(jaxguard.OutOfBoundsError) as info:
        jnp.take(jnp.arange(4), 9)  # take-eager-line
    assert_where(info.value, line_of("# take-eager-line"))
    assert int(jnp.take(jnp.arange(4), 3)) == 3


def test_explicit_modes_are_respected(guards):
    f = jax.jit(lambda x, i: (x.at[i].get(mode="fill", fill_value=-1),
                              x.at[i].set(7, mode="drop"),
                              x.at[i].get(mode="clip"),
                              jnp.take(x, i, mode="clip")))
    got, dropped, clipped, taken = f(jnp.arange(3), 5)
    assert int(got) == -1 and int(clipped) == 2 and int(taken) == 2
    np.testing.assert_array_equal(dropped, [0, 1, 2])
    assert int(jnp.take(jnp.arange(3), 5, mode="fill", fill_value=0)) == 0


def test_jax_internal_out_of_bounds_uses_are_not_reported(guards):
    @jax.jit
    def f(x):
        return (jnp.bincount(x, length=3), jnp.where(x > 0, size=5),
                jnp.nonzero(x, size=4), jnp.argwhere(x, size=4), jnp.unique(x, size=6))

    f(jnp.array([0, 1, 5]))
    jnp.bincount(jnp.array([0, 1, 5]), length=3)
    jnp.nonzero(jnp.array([0, 1, 5]), size=4)


def _index(x, i):
    return x[i]


@settings(max_examples=40, deadline=None)
@given(n=st.sampled_from([3, 8]), i=st.integers(-20, 20))
def test_index_is_reported_exactly_when_out_of_range(n, i):
    # Property: x[i] raises iff i is outside [-n, n), for the jitted and the eager path.
    # (deferred=False: the same function is called in every example, and each must raise
    # at its own call rather than one call late)
    with jaxguard.guard(recompiles=None, deferred=False):
        f = jax.jit(_index)  # one function object: traced once per n, not per example
        x = jnp.arange(n)
        for run in (lambda: f(x, i), lambda: x[jnp.int32(i)]):
            if -n <= i < n:
                assert int(run()) == i % n
            else:
                with pytest.raises(jaxguard.OutOfBoundsError):
                    run()


def test_oob_off():
    with jaxguard.guard(oob=False):
        assert int(jax.jit(lambda x, i: x[i])(jnp.arange(3), 5)) == 2
        assert int(jnp.arange(10)[11]) == 9


def test_the_advice_names_an_api_that_takes_a_mode(guards):
    f = jax.jit(lambda x, i: x[i])
    with pytest.raises(guards.OutOfBoundsError, match=r"x\.at\[i\]\.get\(mode='clip'\)"):
        f(jnp.arange(3.0), 5)
    g = jax.jit(lambda x, i: x.at[i].set(1.0))
    with pytest.raises(guards.OutOfBoundsError, match=r"x\.at\[idx\]\.set\(v, mode='drop'\)"):
        g(jnp.arange(3.0), 5)
