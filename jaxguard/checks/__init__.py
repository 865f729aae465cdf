"""Rule implementations, one module per family. Importing this registers them all."""

from jaxguard.checks import bounds, inputs, iterators, jaxconfig, numerics, prng, purity, tracing, updates  # noqa: F401
