"""Rule implementations, one module per family. Importing this registers them all."""

from jaxguard.checks import inputs, iterators, jaxconfig, numerics, prng, purity, updates  # noqa: F401
