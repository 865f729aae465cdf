"""Recompilation guard: warn once, at the user's call site, with the cause."""

import functools
import warnings

import jax
import jax.numpy as jnp
import pytest
from runtime_helpers import line_of

import jaxguard


def _recompile_warnings(record):
    return [w for w in record if issubclass(w.category, jaxguard.RecompileWarning)]


def test_sharp_bits_seed_static_argnum_that_changes_a_lot(guards):
    def example_fun(length, val):
        return jnp.ones((length,)) * val

    good_example_jit = jax.jit(example_fun, static_argnums=(0,))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        good_example_jit(10, 4)  # the seed: compile, then recompile: fine
        good_example_jit(5, 4)
        assert not _recompile_warnings(record)
        for length in range(1, 6):
            good_example_jit(length, 4)  # seed-recompile-line
    found = _recompile_warnings(record)
    assert len(found) == 1  # warned once
    warning = found[0]
    assert f"{warning.filename.rsplit('/', 1)[-1]}:{warning.lineno}" == \
        line_of("# seed-recompile-line")
    text = str(warning.message)
    assert "static argument 'length'" in text and "10, 5, 1, 2" in text
    assert "example_fun" in text


def test_shape_change(guards):
    f = jax.jit(lambda x: x * 2)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for n in range(1, 6):
            f(jnp.ones(n))
    (warning,) = _recompile_warnings(record)
    assert "argument 'x' changed shape or dtype" in str(warning.message)
    assert "f32[3] -> f32[4]" in str(warning.message)


def test_pytree_change(guards):
    f = jax.jit(lambda params: sum(jax.tree_util.tree_leaves(params)))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for n in range(1, 6):
            f({f"w{i}": 1. for i in range(n)})
    (warning,) = _recompile_warnings(record)
    assert "pytree structure of argument 'params' changed" in str(warning.message)


def test_jit_in_a_loop_of_a_recreated_function(guards):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(5):
            jax.jit(lambda x: x + 1)(jnp.ones(2))  # loop-line
    (warning,) = _recompile_warnings(record)
    assert "re-created on each call" in str(warning.message)
    assert f"{warning.filename.rsplit('/', 1)[-1]}:{warning.lineno}" == line_of("# loop-line")


def test_correct_programs_do_not_warn(guards):
    def g(x, n):
        return x * n

    f = jax.jit(g)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for n in range(10):  # a Python int passed as a traced argument: one compile
            f(jnp.ones(2), n)
        for _ in range(10):  # jax.jit of the same function in a loop: cached
            jax.jit(g)(jnp.ones(2), 3)
    assert not _recompile_warnings(record)


def test_limit_is_configurable():
    with jaxguard.guard(recompiles=1):
        f = jax.jit(lambda x: x, static_argnums=0)
        with pytest.warns(jaxguard.RecompileWarning):
            f(1)
            f(2)
    with jaxguard.guard(recompiles=None):
        f = jax.jit(lambda x: x, static_argnums=0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for n in range(6):
                f(n)


def test_counted_per_jitted_object_not_per_definition(guards):
    # chex's variants jit one function with other options for each variant: each is
    # another program, compiled once.
    def fn(x, y):
        return x + y

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for options in ({}, {"static_argnums": 1}, {"static_argnames": "y"},
                        {"donate_argnums": 0}, {"inline": True}):
            jax.jit(fn, **options)(jnp.ones(2), 1.)
        # A factory that closes over other settings makes other programs too.
        for scale in (1., 2., 3., 4., 5.):
            jax.jit(functools.partial(fn, y=scale))(jnp.ones(2))
    assert not _recompile_warnings(record)


def test_a_factory_of_custom_vjp_closures_over_other_functions_is_other_programs(guards):
    # four programs (sin, cos, tanh, exp), each compiled once: the closure is under the
    # custom_vjp wrapper, and it holds another function each time
    def make(fn):
        @jax.custom_vjp
        def g(x):
            return fn(x)

        g.defvjp(lambda x: (fn(x), x), lambda x, ct: (ct,))
        return jax.jit(g)

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for fn in (jnp.sin, jnp.cos, jnp.tanh, jnp.exp):
            make(fn)(jnp.ones(3))
    assert not _recompile_warnings(record)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(5):  # the same function each time: re-created for nothing
            make(jnp.sin)(jnp.ones(3))
    assert "re-created on each call" in str(_recompile_warnings(record)[0].message)


def _apply(fn, x):
    return fn(x)


def test_functions_carried_by_a_static_argument_are_other_programs(guards):
    def make(k):
        def f(x):
            return x + k
        return f

    # equinox's filter_jit: one jitted wrapper per function name, the user's function static
    shared_wrapper = jax.jit(_apply, static_argnums=0)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for k in range(6):  # six functions, each traced once
            shared_wrapper(make(float(k)), jnp.ones(2))
    assert not _recompile_warnings(record)


def test_the_same_function_recreated_into_a_static_argument_warns_and_is_named(guards):
    shared_wrapper = jax.jit(_apply, static_argnums=0)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(5):
            shared_wrapper(lambda x: x * 2, jnp.ones(2))  # carried-line
    (warning,) = _recompile_warnings(record)
    assert "<lambda> (defined at" in str(warning.message) and "_apply" not in str(warning.message)
    assert f"{warning.filename.rsplit('/', 1)[-1]}:{warning.lineno}" == line_of("# carried-line")
