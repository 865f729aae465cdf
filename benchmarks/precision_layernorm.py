"""The seed notebook's LayerNorm experiment in JAX: jit vs op-by-op vs float64.

The notebook normalizes a (1, 3, 10000, 1000) float32 tensor over its last two axes
with torch eager and torch.compile and compares both with a float64 run. Here the same
with jax.jit, jax.disable_jit and a float64 re-evaluation of the jaxpr.
Run: PYTHONPATH=. python benchmarks/precision_layernorm.py [--small]
"""

import sys
import time

import jax.numpy as jnp
import numpy as np

from jaxguard.precision import divergence


def layer_norm(x, eps=1e-5):
    mean = jnp.mean(x, axis=(-2, -1), keepdims=True)
    var = jnp.var(x, axis=(-2, -1), keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps)


def main():
    shape = (1, 3, 1000, 100) if "--small" in sys.argv else (1, 3, 10000, 1000)
    x = jnp.asarray(np.random.default_rng(0).standard_normal(shape, dtype=np.float32))
    start = time.perf_counter()
    result = divergence(layer_norm, x)
    print(f"LayerNorm over {shape} float32 ({time.perf_counter() - start:.1f}s):")
    print(result)


if __name__ == "__main__":
    main()
