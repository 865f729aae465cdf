"""Every example of "JAX - The Sharp Bits" (shared/seeds/001) in the families of the lint
engine issue: the flawed code is caught with the right code, the corrected code is silent.

The seed's code blocks lost their indentation in the text export; they are restored here
as written in the guide.
"""

from __future__ import annotations

import pytest
from helpers import codes

PRELUDE = "import numpy as np\nfrom jax import grad, jit\nfrom jax import lax\nfrom jax import random\nimport jax\nimport jax.numpy as jnp\n"

CAUGHT = {
    "pure functions: print side effect, with the traced value": (
        "JG101",
        """
def impure_print_side_effect(x):
    print("Executing function with", x)  # shows a tracer, once per compilation
    return x
print ("First call: ", jit(impure_print_side_effect)(4.))
""",
    ),
    "pure functions: uses globals": (
        "JG102",
        """
g = 0.
def impure_uses_globals(x):
    return x + g
print ("First call: ", jit(impure_uses_globals)(4.))
g = 10.
print ("Second call: ", jit(impure_uses_globals)(5.))
""",
    ),
    "pure functions: saves global": (
        "JG103",
        """
g = 0.
def impure_saves_global(x):
    global g
    g = x
    return x
print ("First call: ", jit(impure_saves_global)(4.))
""",
    ),
    "iterators: fori_loop with next()": (
        "JG201",
        """
iterator = iter(range(10))
print(lax.fori_loop(0, 10, lambda i,x: x+next(iterator), 0))
""",
    ),
    "iterators: make_jaxpr of an iterator": (
        "JG201",
        """
from jax import make_jaxpr
def func11(arr, extra):
    ones = jnp.ones(arr.shape)
    def body(carry, aelems):
        ae1, ae2 = aelems
        return (carry + ae1 * ae2 + extra, carry)
    return lax.scan(body, 0., (arr, ones))
make_jaxpr(func11)(iter(range(16)), 5.)
""",
    ),
    "iterators: cond with an iterator operand": (
        "JG201",
        """
iter_operand = iter(range(10))
lax.cond(True, lambda x: next(x)+1, lambda x: next(x)-1, iter_operand)
""",
    ),
    "in-place updates: item assignment": (
        "JG301",
        """
jax_array = jnp.zeros((3,3), dtype=jnp.float32)
jax_array[1, :] = 1.0
""",
    ),
    "non-array inputs: jnp.sum of a list": ("JG501", "jnp.sum([1, 2, 3])\n"),
    "non-array inputs: list traced element by element": (
        "JG502",
        """
from jax import make_jaxpr
def permissive_sum(x):
    return jnp.sum(jnp.array(x))
x = list(range(10))
make_jaxpr(permissive_sum)(x)
""",
    ),
    "random numbers: same key twice": (
        "JG601",
        """
key = random.PRNGKey(0)
print(random.normal(key, shape=(1,)))
print(key)
print(random.normal(key, shape=(1,)))
print(key)
""",
    ),
    "control flow: print of tracers": (
        "JG101",
        """
@jit
def f(x):
    print(x)
    y = 2 * x
    print(y)
    return y
f(2)
""",
    ),
}

SILENT = {
    # The guide prints a message alone to show when its function is traced: that is the
    # idiom for watching compilations (JG101's document), not a value lost at run time.
    "pure functions: print side effect": """
def impure_print_side_effect(x):
    print("Executing function")  # This is a side-effect
    return x
print ("First call: ", jit(impure_print_side_effect)(4.))
""",
    "pure functions: internal state": """
def pure_uses_internal_state(x):
    state = dict(even=0, odd=0)
    for i in range(10):
        state['even' if i % 2 == 0 else 'odd'] += x
    return state['even'] + state['odd']
print(jit(pure_uses_internal_state)(5.))
""",
    "iterators: fori_loop over an array": """
array = jnp.arange(10)
print(lax.fori_loop(0, 10, lambda i,x: x+array[i], 0))
""",
    "iterators: scan over arrays": """
from jax import make_jaxpr
def func11(arr, extra):
    ones = jnp.ones(arr.shape)
    def body(carry, aelems):
        ae1, ae2 = aelems
        return (carry + ae1 * ae2 + extra, carry)
    return lax.scan(body, 0., (arr, ones))
make_jaxpr(func11)(jnp.arange(16), 5.)
""",
    "iterators: cond with an array operand": """
array_operand = jnp.array([0.])
lax.cond(True, lambda x: x+1, lambda x: x-1, array_operand)
""",
    "in-place updates: numpy array": """
numpy_array = np.zeros((3,3), dtype=np.float32)
numpy_array[1, :] = 1.0
""",
    "in-place updates: .at[].set": """
jax_array = jnp.zeros((3,3), dtype=jnp.float32)
updated_array = jax_array.at[1, :].set(1.0)
print("updated array:\\n", updated_array)
""",
    "in-place updates: .at[].add": """
jax_array = jnp.ones((5, 6))
new_jax_array = jax_array.at[::2, 3:].add(7.)
""",
    "non-array inputs: numpy accepts lists": "np.sum([1, 2, 3])\n",
    # the guide shows a notebook cell (its last expression is displayed); in a .py file the
    # result is bound
    "non-array inputs: explicit conversion": "x = list(range(10))\ntotal = jnp.sum(jnp.array(x))\n",
    "random numbers: numpy's stateful RNG": """
print(np.random.random())
print(np.random.random())
np.random.seed(0)
rng_state = np.random.get_state()
_ = np.random.uniform()
""",
    "random numbers: split before each draw": """
key = random.PRNGKey(0)
print("old key", key)
key, subkey = random.split(key)
normal_pseudorandom = random.normal(subkey, shape=(1,))
print("old key", key)
key, subkey = random.split(key)
normal_pseudorandom = random.normal(subkey, shape=(1,))
""",
    "random numbers: several subkeys at a time": """
key = random.PRNGKey(0)
key, *subkeys = random.split(key, 4)
for subkey in subkeys:
    print(random.normal(subkey, shape=(1,)))
""",
    "control flow: python control flow + autodiff": """
def f(x):
    if x < 3:
        return 3. * x ** 2
    else:
        return -4 * x
print(grad(f)(2.))
print(grad(f)(4.))
""",
    "control flow: loop over a static range": """
@jit
def f(x):
    for i in range(3):
        x = 2 * x
    return x
print(f(3))
""",
    "control flow: loop over a shape": """
@jit
def g(x):
    y = 0.
    for i in range(x.shape[0]):
        y = y + x[i]
    return y
print(g(jnp.array([1., 2., 3.])))
""",
    "structured control flow": """
operand = jnp.array([0.])
lax.cond(True, lambda x: x+1, lambda x: x-1, operand)
init_val = 0
cond_fun = lambda x: x<10
body_fun = lambda x: x+1
lax.while_loop(cond_fun, body_fun, init_val)
lax.fori_loop(0, 10, lambda i,x: x+i, init_val)
""",
}


@pytest.mark.parametrize("title", list(CAUGHT))
def test_seed_example_is_caught(title):
    code, snippet = CAUGHT[title]
    assert code in codes(PRELUDE + snippet), title


@pytest.mark.parametrize("title", list(SILENT))
def test_seed_correct_version_is_silent(title):
    found = [c for c in codes(PRELUDE + SILENT[title]) if c[:3] in ("JG1", "JG2", "JG3", "JG5", "JG6")]
    assert found == [], (title, found)
