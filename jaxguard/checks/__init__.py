"""Rule implementations, one module per family. Importing this registers them all."""

from jaxguard.checks import inputs, iterators, prng, purity, updates  # noqa: F401
