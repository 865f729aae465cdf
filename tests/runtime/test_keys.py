"""Key-reuse guard: typed and legacy PRNGKey keys, eagerly and inside jit."""

import warnings

import jax
import jax.numpy as jnp
import pytest
from runtime_helpers import assert_where, line_of

import jaxguard


def test_sharp_bits_seed_reusing_a_prngkey(guards):
    # The seed: the same key gives the same "random" number twice.
    key = jax.random.PRNGKey(0)
    print(jax.random.normal(key, shape=(1,)))  # seed-first-use
    with pytest.raises(jaxguard.KeyReuseError) as info:
        print(jax.random.normal(key, shape=(1,)))  # seed-second-use
    assert_where(info.value, line_of("# seed-second-use"))
    assert line_of("# seed-first-use") in str(info.value)
    assert "jax.random.normal" in str(info.value)


def test_sharp_bits_seed_split_properly_is_silent(guards):
    key = jax.random.PRNGKey(0)
    key, subkey = jax.random.split(key)
    jax.random.normal(subkey, shape=(1,))
    key, subkey = jax.random.split(key)
    jax.random.normal(subkey, shape=(1,))
    key, *subkeys = jax.random.split(key, 4)
    for subkey in subkeys:
        jax.random.normal(subkey, shape=(1,))


def test_typed_key_reuse(guards):
    key = jax.random.key(1)
    jax.random.uniform(key)
    with pytest.raises(jaxguard.KeyReuseError) as info:
        jax.random.bernoulli(key)  # typed-line
    assert_where(info.value, line_of("# typed-line"))


def test_reuse_inside_jit(guards):
    @jax.jit
    def noisy(key, x):
        a = jax.random.normal(key, x.shape)
        b = jax.random.normal(key, x.shape)  # jit-reuse-line
        return x + a + b

    with pytest.raises(jaxguard.KeyReuseError) as info:
        noisy(jax.random.PRNGKey(0), jnp.ones(2))
    assert_where(info.value, line_of("# jit-reuse-line"))


def test_abstract_evaluations_draw_nothing(guards):
    # Haiku's summaries run the user's function twice under one eval_shape, with one key
    def twice(key, x):
        return jax.random.normal(key, x.shape) + jax.random.uniform(key, x.shape)

    x = jnp.ones(3)
    assert jax.eval_shape(twice, jax.random.PRNGKey(0), x).shape == (3,)
    assert jax.make_jaxpr(twice)(jax.random.key(0), x).eqns
    # a real run of the same function is still a reuse, jitted or not
    with pytest.raises(jaxguard.KeyReuseError):
        jax.jit(twice)(jax.random.PRNGKey(0), x)
    with pytest.raises(jaxguard.KeyReuseError):
        twice(jax.random.PRNGKey(0), x)


def test_same_key_passed_twice_to_a_jitted_function(guards):
    sample = jax.jit(lambda key: jax.random.normal(key, (2,)))
    key = jax.random.PRNGKey(2)
    sample(key)
    with pytest.raises(jaxguard.KeyReuseError) as info:
        sample(key)  # twice-line
    assert_where(info.value, line_of("# twice-line"))
    sample(jax.random.PRNGKey(3))  # a fresh key is fine


def test_correct_key_handling_is_silent(guards):
    @jax.jit
    def step(key, x):
        key, sub = jax.random.split(key)
        return key, x + jax.random.normal(sub, x.shape)

    key, x = jax.random.key(0), jnp.zeros(2)
    for _ in range(3):
        key, x = step(key, x)
    base = jax.random.PRNGKey(7)
    for i in range(3):  # fold_in derives distinct keys from one base key
        jax.random.uniform(jax.random.fold_in(base, i))
    keys = jax.random.split(jax.random.PRNGKey(5), 3)
    jax.vmap(lambda k: jax.random.normal(k, (2,)))(keys)
    # jax.random functions that call each other internally are one use.
    jax.random.bernoulli(jax.random.PRNGKey(9), 0.5, (3,))
    jax.random.choice(jax.random.PRNGKey(10), 5, (2,), replace=False)


def test_key_reuse_off():
    with jaxguard.guard(key_reuse=False):
        key = jax.random.PRNGKey(0)
        assert jax.random.normal(key) == jax.random.normal(key)


LIBRARY = """
import jax

def _draw(key, shape):
    return jax.random.normal(key, shape)  # the library line that consumes the key

def apply(key, shape=(2,)):
    return _draw(key, shape)
"""


def test_reuse_inside_library_code_names_the_users_calls(guards, tmp_path, monkeypatch):
    # As in haiku's `apply(params, key, x)`: the key is consumed inside the library;
    # the error names the user's two calls that passed it, then the library line.
    lib_dir = tmp_path / "site-packages"
    lib_dir.mkdir()
    (lib_dir / "keylib_sample.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(lib_dir))
    import keylib_sample

    key = jax.random.PRNGKey(0)
    keylib_sample.apply(key)  # library-first-call
    with pytest.raises(jaxguard.KeyReuseError) as info:
        keylib_sample.apply(key)  # library-second-call
    assert_where(info.value, line_of("# library-second-call"))
    message = str(info.value)
    assert f"at {line_of('# library-first-call')} (via " in message.replace("tests/runtime/", "")
    assert "keylib_sample.py:5):" in message


def test_jax_float64_warning_names_the_users_line(guards):
    # Without x64, jax warns that float64 is not available; the warning must point at
    # the caller, not at a jaxguard wrapper.
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        jax.random.normal(jax.random.PRNGKey(1), (2,), dtype=jnp.float64)  # f64-line
    found = [w for w in record if "float64" in str(w.message)]
    assert found
    assert {f"{w.filename.rsplit('/', 1)[-1]}:{w.lineno}" for w in found} == \
        {line_of("# f64-line")}


def test_a_key_position_belongs_to_the_trace_that_drew_from_it(guards):
    import functools

    import jax
    import jax.numpy as jnp

    @functools.partial(jax.jit, static_argnames="train")
    def forward(x, key, train):
        if train:  # dropout draws only in training
            return x * jax.random.bernoulli(key, 0.5, x.shape)
        return x

    x = jnp.ones(3)
    forward(x, jax.random.key(0), train=True)
    eval_key = jax.random.key(1)
    forward(x, eval_key, train=False)
    forward(x, eval_key, train=False)  # the eval trace never drew: no reuse

    @jax.jit
    def sample(params, key):
        return sum(params) + jax.random.normal(key)

    sample([1.0], jax.random.key(2))
    sample([1.0, 2.0], jax.random.key(3))  # the key moved; a float is not a key
    drawn = jax.random.key(4)
    sample([1.0, 2.0], drawn)
    with pytest.raises(guards.KeyReuseError):
        sample([1.0, 2.0], drawn)


def _scan_after_a_draw(key):
    first = jax.random.normal(key, (2,))

    def body(carry, _):
        carry, sub = jax.random.split(carry)  # carry-split
        return carry, jax.random.normal(sub)

    _, ys = jax.lax.scan(body, key, None, length=3)
    return first, ys


def _fori_after_a_draw(key):
    first = jax.random.normal(key, (2,))
    return first, jax.lax.fori_loop(0, 3, lambda i, k: jax.random.split(k)[0], key)


def _while_after_a_draw(key):
    first = jax.random.normal(key, (2,))
    carry = jax.lax.while_loop(lambda c: c[1] < 3, lambda c: (jax.random.split(c[0])[0], c[1] + 1), (key, 0))
    return first, carry[0]


@pytest.mark.parametrize("program", [_scan_after_a_draw, _fori_after_a_draw, _while_after_a_draw])
@pytest.mark.parametrize("compiled", [True, False])
def test_a_key_drawn_from_then_handed_to_a_loop_as_its_carry(guards, program, compiled):
    run = jax.jit(program) if compiled else program
    with pytest.raises(jaxguard.KeyReuseError, match="already consumed by `jax.random.normal`"):
        run(jax.random.key(0))


def test_a_key_split_before_the_loop_is_a_fresh_carry(guards):
    def program(key):
        key, sub = jax.random.split(key)
        first = jax.random.normal(sub, (2,))

        def body(carry, _):
            carry, sub = jax.random.split(carry)
            return carry, jax.random.normal(sub)

        _, ys = jax.lax.scan(body, init=key, xs=None, length=3)  # keywords
        key = jax.lax.fori_loop(0, 3, lambda i, k: jax.random.split(k)[0], key)
        return first, ys, key

    jax.jit(program)(jax.random.key(0))
    program(jax.random.key(1))
    # a consumed key passed through the carry but never drawn from inside is no reuse
    key = jax.random.key(2)
    jax.random.normal(key)
    jax.lax.scan(lambda c, _: (c, None), key, None, length=2)


def test_loops_are_restored_when_the_guard_is_off():
    original = jax.lax.scan
    with jaxguard.guard():
        assert jax.lax.scan is not original
    assert jax.lax.scan is original
