"""Code written against an old JAX, with NumPy habits."""

import jax
import jax.numpy as jnp
import numpy as np


def histogram(values, bins):
    counts = jnp.zeros(bins)
    for v in values:
        counts = jax.ops.index_add(counts, v, 1.0)  # removed from JAX
    return counts


def normalize(table):
    table = jnp.asarray(table)
    table.at[0].set(0.0)  # result thrown away
    jnp.sort(table)  # result thrown away
    return table / jnp.sum(table)


def numpy_is_fine(n):
    buffer = np.zeros(n)
    buffer[0] = 1.0
    buffer.sort()
    return buffer


@jax.jit
def total(xs):
    return jnp.sum(xs)


print(jnp.sum([1, 2, 3]))
print(total([1.0, 2.0, 3.0]))
print(total(jnp.asarray([1.0, 2.0, 3.0])))
