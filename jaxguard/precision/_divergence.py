"""divergence: jit vs op-by-op vs float64, the seed notebook's LayerNorm experiment in JAX."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxguard.precision._shadow import eval_wide


@dataclasses.dataclass
class Divergence:
    """Max absolute differences over all output leaves, compared in float64."""

    jit_vs_eager: float
    eager_vs_f64: float
    jit_vs_f64: float
    bitwise_equal: bool  # jit and op-by-op gave the same bits

    @property
    def verdict(self) -> str:
        if self.bitwise_equal:
            return (
                f"jit and op-by-op agree bit for bit; the error against float64 ({self.jit_vs_f64:.3g}) "
                "comes from the algorithm in its working dtype, not from compilation"
            )
        if self.jit_vs_f64 > 2 * self.eager_vs_f64:
            return (
                f"compilation makes it worse: jit is {self.jit_vs_f64:.3g} from float64, "
                f"op-by-op {self.eager_vs_f64:.3g}; look at what XLA fuses or reorders"
            )
        if self.eager_vs_f64 > 2 * self.jit_vs_f64:
            return (
                f"compilation helps: jit is {self.jit_vs_f64:.3g} from float64, op-by-op {self.eager_vs_f64:.3g}; "
                "the op-by-op algorithm loses precision that XLA's rewrites avoid"
            )
        return (
            f"jit and op-by-op differ by {self.jit_vs_eager:.3g} (compilation reorders rounding) but are "
            f"equally far from float64 ({self.jit_vs_f64:.3g} vs {self.eager_vs_f64:.3g}): "
            "the error comes from the algorithm's working precision"
        )

    def __str__(self):
        return (
            f"jit vs eager: {self.jit_vs_eager:.6g}  eager vs f64: {self.eager_vs_f64:.6g}  "
            f"jit vs f64: {self.jit_vs_f64:.6g}  bitwise_equal: {self.bitwise_equal}\n{self.verdict}"
        )


def _max_abs(xs, ys) -> float:
    worst = 0.0
    for x, y in zip(xs, ys):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if x.size:
            with np.errstate(invalid="ignore"):
                diff = np.where((x == y) | (np.isnan(x) & np.isnan(y)), 0.0, np.abs(x - y))
            # NaN on one side only is an infinite difference (and inf stays inf).
            worst = max(worst, float(np.where(np.isnan(diff), np.inf, diff).max()))
    return worst


def divergence(fn, *args):
    """Run ``fn(*args)`` jitted, op by op (``jax.disable_jit``) and in float64; compare."""
    args = jax.tree_util.tree_map(jnp.asarray, args)
    jitted = jax.tree_util.tree_leaves(jax.jit(fn)(*args))
    with jax.disable_jit():
        eager = jax.tree_util.tree_leaves(fn(*args))
    leaves, in_tree = jax.tree_util.tree_flatten(args)
    closed = jax.make_jaxpr(lambda *xs: fn(*jax.tree_util.tree_unflatten(in_tree, xs)))(*leaves)
    with jax.enable_x64(True):
        # A one-off: this jaxpr belongs to this call, there is nothing to reuse.
        wide = jax.jit(lambda *xs: eval_wide(closed.jaxpr, closed.consts, xs))(*leaves)  # jaxguard: ignore[JG109]
    bitwise = all(
        np.asarray(a).shape == np.asarray(b).shape and np.asarray(a).tobytes() == np.asarray(b).tobytes()
        for a, b in zip(jitted, eager)
    )
    return Divergence(_max_abs(jitted, eager), _max_abs(eager, wide), _max_abs(jitted, wide), bitwise)
