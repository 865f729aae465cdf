"""checking(): check the jitted functions of a whole program with check_ops."""

import functools
import warnings

import jax
import numpy as np

from jaxguard.precision._inputs import ArrayFunction
from jaxguard.precision._ops import _Log, check_ops


class PrecisionWarning(UserWarning):
    """A jitted function lost precision beyond tolerance (emitted when no log path is given)."""


def _is_array(x) -> bool:
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


class _CheckedFunction:
    """Wraps what jax.jit returned: calls it as usual, and checks its first calls."""

    def __init__(self, jitted, session):
        self._jitted = jitted
        self._session = session
        self._checked_calls = 0
        functools.update_wrapper(self, jitted)

    def __getattr__(self, name):  # lower, trace, eval_shape, clear_cache, ...
        return getattr(self._jitted, name)

    def __get__(self, obj, objtype=None):  # @jax.jit on a method: bind like a function does
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self._session.active and self._checked_calls < self._session.max_checks:
            leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
            # Inside another trace (jit of jit, grad, vmap) there are no values to check.
            if not any(isinstance(x, jax.core.Tracer) for x in leaves):
                self._checked_calls += 1
                # Before the real call: it may donate (delete) the argument buffers.
                self._session.check(self._jitted, leaves, tree)
        return self._jitted(*args, **kwargs)


class checking:
    """Check every function jitted while this context is active.

    ``with jaxguard.precision.checking(path="precision.log"):`` replaces ``jax.jit`` so that
    each function jitted inside the block (or decorated after ``jaxguard.enable(precision=...)``)
    runs as usual but, on its first ``max_checks`` calls with concrete arguments, is also
    run through :func:`check_ops`. Failures are appended as JSON lines to ``path`` (each
    (primitive, source) site once with ``log_once``) or, without a path, emitted as a
    :class:`PrecisionWarning`. Reports with failures collect in ``.reports``. Functions
    jitted before entering (for example with ``from jax import jit`` at import time) are
    not seen. The check compiles an instrumented copy of the program, so expect the first
    calls to take several times longer; later calls run at full speed.
    """

    def __init__(self, *, rtol=None, atol=None, max_checks=10, log_once=True, path=None, max_numel=1 << 20):
        if (rtol is None) != (atol is None):
            raise ValueError("pass both rtol and atol, or neither")
        self.rtol, self.atol = rtol, atol
        self.max_checks, self.max_numel = max_checks, max_numel
        self.path = path
        self.reports = []
        self.active = False
        self._log = _Log(path, log_once)
        self._original_jit = None

    def __enter__(self):
        self._original_jit = jax.jit
        original = self._original_jit

        @functools.wraps(original)
        def jit(fun=None, /, **options):
            if fun is None:  # used as @jax.jit(static_argnums=...)
                return lambda f: _CheckedFunction(original(f, **options), self)
            return _CheckedFunction(original(fun, **options), self)

        jax.jit = jit
        self.active = True
        return self

    def __exit__(self, *exc):
        self.active = False
        jax.jit = self._original_jit
        return False

    def check(self, jitted, leaves, tree):
        positions = tuple(i for i, x in enumerate(leaves) if _is_array(x))
        # The function of its array arguments, the rest (static args, Python scalars) held fixed.
        with_arrays = ArrayFunction(jitted, tree, leaves, positions)
        self.active = False  # jitted functions called while checking are not checked again
        try:
            report = check_ops(
                with_arrays,
                *[leaves[i] for i in positions],
                rtol=self.rtol,
                atol=self.atol,
                max_checks=self.max_checks,
                max_numel=self.max_numel,
                _log=self._log,
            )
        except Exception as exc:  # noqa: BLE001 - a checker bug must never break the user's program
            warnings.warn(f"jaxguard.precision could not check {with_arrays.__name__}: {exc!r}", PrecisionWarning)
            return
        finally:
            self.active = True
        if report.failures:
            self.reports.append(report)
            if self.path is None:
                first = report.first_failure
                warnings.warn(
                    f"{with_arrays.__name__}: {first.primitive} at {first.source} loses precision "
                    f"(score {first.score:.3g}, {len(report.failures)} failing op(s))",
                    PrecisionWarning,
                )
