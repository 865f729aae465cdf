"""Precision tools: see where a JAX program loses precision, and check gradients honestly.

* ``assert_close``: torch.testing.assert_close's contract for JAX, numpy, scalars, pytrees.
* ``check_ops``: every equation against the same op in float64 AND a float64 shadow run.
* ``check_grads``: jax.grad against central differences of a float64 re-evaluation.
* ``divergence``: jit vs op-by-op vs float64.
* ``checking``: a context manager that checks the jitted functions of a whole program.
"""

from jaxguard.precision._assert_close import assert_close
from jaxguard.precision._checking import PrecisionWarning, checking
from jaxguard.precision._divergence import Divergence, OutputDivergence, divergence
from jaxguard.precision._grads import GradReport, Probe, check_grads
from jaxguard.precision._ops import OpsReport, Record, check_ops
from jaxguard.precision._tolerance import default_tolerance

__all__ = [
    "Divergence",
    "GradReport",
    "OpsReport",
    "OutputDivergence",
    "PrecisionWarning",
    "Probe",
    "Record",
    "assert_close",
    "check_grads",
    "check_ops",
    "checking",
    "default_tolerance",
    "divergence",
]
