import pytest

jax = pytest.importorskip("jax")

from jaxguard import runtime


@pytest.fixture
def guards():
    """Default guards on for one test; everything restored afterwards."""
    with runtime.guard():
        yield runtime
