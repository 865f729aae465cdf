"""Monte Carlo helpers: random numbers, loops and lax control flow."""

import time

import jax
import jax.numpy as jnp
from jax import lax
from jax import random as jr


def noisy_walk(key, steps):
    position = 0.0
    for _ in range(steps):
        position = position + jr.normal(key)  # same step every iteration
    return position


def correct_walk(key, steps):
    position = 0.0
    for _ in range(steps):
        key, sub = jr.split(key)
        position = position + jr.normal(sub)
    return position


@jax.jit
def jittered(x):
    seed = int(time.time())  # frozen into the compiled program
    key = jr.PRNGKey(0)  # the same key on every call
    return x + jr.uniform(key, x.shape) * seed


def scan_sum(xs):
    def body(carry, x):
        return carry + x, carry

    total, _ = lax.scan(body, 0.0, xs)
    return total


def resample(key, weights):
    k1, k2 = jr.split(key)
    idx = jr.categorical(k1, jnp.log(weights), shape=weights.shape)
    jitter = jr.uniform(key, weights.shape)  # key was already split
    return idx, jitter


batches = iter([1.0, 2.0, 3.0])
total = lax.fori_loop(0, 3, lambda i, acc: acc + next(batches), 0.0)
