"""check_grads: jax.grad in the working dtype against central differences in float64.

Finite differences in float32 are mostly round-off: on a loss of order 1e4 a step of
1e-3 changes the loss by 1e-7 of itself, which is float32's epsilon (seed 002). We
difference a float64 re-evaluation of ``fn``'s jaxpr instead, so even a function that
casts to float32 inside is differenced in float64, and we say how much round-off the
numeric derivative can carry.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxguard.precision._shadow import eval_wide
from jaxguard.precision._tolerance import finfo, is_inexact

_EPS64 = float(np.finfo(np.float64).eps)
# Round-off in one float64 evaluation of the loss, in units of eps * |loss|: a reduction
# accumulates a few roundings, so we allow several.
_ROUNDOFF_UNITS = 8.0
# The step aims to keep round-off below this fraction of the gradient.
_ROUNDOFF_TARGET = 1e-6


@dataclasses.dataclass
class Probe:
    leaf: str  # pytree path of the differentiated leaf, e.g. "[0]" or "[1]['w']"
    index: tuple
    analytic: float
    numeric: float
    ratio: float
    step: float
    roundoff: float  # bound on the round-off in ``numeric``
    allowed: float  # the tolerance |analytic - numeric| had to meet
    passed: bool


class GradReport:
    def __init__(self, probes, dtype, rtol, atol):
        self.probes = probes
        self.dtype, self.rtol, self.atol = dtype, rtol, atol

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.probes)

    def raise_if_failed(self):
        if not self.passed:
            raise AssertionError(str(self))
        return self

    def __str__(self):
        bad = sum(not p.passed for p in self.probes)
        lines = [
            (
                f"check_grads: {len(self.probes) - bad}/{len(self.probes)} probes passed "
                f"(working dtype {self.dtype}, rtol={self.rtol:.3g}, atol={self.atol:.3g})"
            ),
            f"{'leaf':<12} {'index':<14} {'analytic':>13} {'numeric':>13} {'ratio':>9} {'step':>9} {'roundoff':>9}",
        ]
        for p in self.probes:
            lines.append(
                f"{p.leaf:<12} {p.index!s:<14} {p.analytic:13.6g} {p.numeric:13.6g} {p.ratio:9.5g} "
                f"{p.step:9.2e} {p.roundoff:9.2e} {'ok' if p.passed else 'FAIL'}"
            )
        return "\n".join(lines)

    __repr__ = __str__


def check_grads(fn, *args, argnums=0, probes=8, seed=0, rtol=None, atol=None):
    """Compare ``jax.grad(fn, argnums)`` at ``probes`` random elements with float64 central differences.

    ``fn`` must return a real scalar. Per probe the step balances truncation
    (cbrt(eps64) times the element's scale) against round-off (eps64 * |loss| / step must
    stay below 1e-6 of |gradient|). The test is
    ``|analytic - numeric| <= rtol * |numeric| + atol + roundoff``; by default rtol is
    sqrt(eps) of the working dtype and atol is 1e-3 * rtol * max|gradient|.
    """
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    args = jax.tree_util.tree_map(jnp.asarray, args)
    grads = jax.grad(fn, argnums)(*args)
    leaves, in_tree = jax.tree_util.tree_flatten(args)

    # Which flat leaves are differentiated, with their paths and analytic gradients.
    targets = []
    offset = 0
    for i, arg in enumerate(args):
        arg_leaves = jax.tree_util.tree_flatten_with_path(arg)[0]
        if i in argnums:
            grad_leaves = jax.tree_util.tree_leaves(grads[argnums.index(i)])
            for j, ((path, leaf), g) in enumerate(zip(arg_leaves, grad_leaves)):
                if is_inexact(leaf.dtype) and leaf.size:
                    targets.append((offset + j, f"[{i}]{jax.tree_util.keystr(path)}", np.asarray(g, np.float64)))
        offset += len(arg_leaves)
    if not targets:
        raise ValueError("check_grads: no floating-point inputs to differentiate")

    dtype = np.result_type(*[leaves[t[0]].dtype for t in targets])
    eps_w = float(finfo(dtype).eps)
    gscale = max(float(np.max(np.abs(g))) for _, _, g in targets)
    if rtol is None:
        rtol = float(np.sqrt(eps_w))
    if atol is None:
        atol = 1e-3 * rtol * gscale

    closed = jax.make_jaxpr(lambda *xs: fn(*jax.tree_util.tree_unflatten(in_tree, xs)))(*leaves)
    with jax.enable_x64(True):
        loss64 = jax.jit(lambda *xs: eval_wide(closed.jaxpr, closed.consts, xs)[0])
        base = [np.asarray(x).astype(np.float64) if is_inexact(x.dtype) else np.asarray(x) for x in leaves]
        loss = abs(float(loss64(*base)))

        rng = np.random.default_rng(seed)
        sizes = np.array([leaves[t[0]].size for t in targets], np.float64)
        out = []
        for _ in range(probes):
            k = int(rng.choice(len(targets), p=sizes / sizes.sum()))
            leaf_i, path, g = targets[k]
            flat = int(rng.integers(g.size))
            index = tuple(int(j) for j in np.unravel_index(flat, g.shape))
            x = float(base[leaf_i].reshape(-1)[flat])
            analytic = float(g.reshape(-1)[flat])
            # Truncation wants a small step, round-off a large one: take the larger need.
            h_trunc = np.cbrt(_EPS64) * max(abs(x), 1.0)
            h_round = _ROUNDOFF_UNITS * _EPS64 * loss / (_ROUNDOFF_TARGET * max(abs(analytic), 1e-300))
            h = min(max(h_trunc, h_round), 1e-2 * max(abs(x), 1.0))
            h = (x + h) - x  # a step that is exactly representable around x

            def at(value, leaf_i=leaf_i, flat=flat):
                moved = list(base)
                arr = base[leaf_i].copy().reshape(-1)
                arr[flat] = value
                moved[leaf_i] = arr.reshape(base[leaf_i].shape)
                return float(loss64(*moved))

            numeric = (at(x + h) - at(x - h)) / (2 * h)
            roundoff = _ROUNDOFF_UNITS * _EPS64 * loss / h
            allowed = rtol * abs(numeric) + atol + roundoff
            ratio = analytic / numeric if numeric else (1.0 if analytic == 0 else np.inf)
            out.append(
                Probe(path, index, analytic, numeric, float(ratio), float(h), float(roundoff), float(allowed),
                      bool(abs(analytic - numeric) <= allowed))
            )
    return GradReport(out, str(dtype), rtol, atol)
