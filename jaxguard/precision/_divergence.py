"""divergence: jit vs op-by-op vs float64, the seed notebook's LayerNorm experiment in JAX."""

import dataclasses

import jax
import numpy as np

from jaxguard.precision._inputs import split, trace
from jaxguard.precision._shadow import eval_wide


@dataclasses.dataclass
class Divergence:
    """Max absolute differences over all output leaves, compared in float64."""

    jit_vs_eager: float
    eager_vs_f64: float
    jit_vs_f64: float
    bitwise_equal: bool  # jit and op-by-op gave the same values, bit for bit
    # Outputs whose dtype differs between jit and op by op (a Python int is int64 op by op
    # and int32 under jit): "[1]: int64 op by op, int32 under jit".
    dtype_differences: tuple = ()

    @property
    def verdict(self) -> str:
        if self.bitwise_equal:
            agree = "agree bit for bit"
            if self.dtype_differences:
                agree = f"give the same values, only the dtypes differ ({'; '.join(self.dtype_differences)})"
            return (
                f"jit and op-by-op {agree}; the error against float64 ({self.jit_vs_f64:.3g}) "
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


def _same_bits(a, b) -> bool:
    """Same values bit for bit; of different dtypes, the same values exactly."""
    if a.shape != b.shape:
        return False
    if a.dtype == b.dtype:
        return a.tobytes() == b.tobytes()
    wide = np.result_type(a.dtype, b.dtype)
    return bool(np.array_equal(a.astype(wide), b.astype(wide), equal_nan=wide.kind in "fc"))


def divergence(fn, *args, static_argnums=()):
    """Run ``fn(*args)`` jitted, op by op (``jax.disable_jit``) and in float64; compare.

    Arguments at ``static_argnums`` are held fixed (as ``jax.jit``'s static arguments).
    """
    inputs = split("divergence", fn, args, static_argnums)
    closed, _ = trace("divergence", inputs.fn, inputs.arrays, inputs.scalars)
    # One-offs: this function belongs to this call, there is nothing to reuse.
    jitted = [np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(inputs.fn)(*inputs.arrays))]  # jaxguard: ignore[JG109]
    with jax.disable_jit():
        eager = [np.asarray(x) for x in jax.tree_util.tree_leaves(inputs.fn(*inputs.arrays))]
    with jax.enable_x64(True):
        wide = jax.jit(lambda *xs: eval_wide(closed.jaxpr, closed.consts, xs))(*inputs.arrays)  # jaxguard: ignore[JG109]
    bitwise = all(_same_bits(a, b) for a, b in zip(jitted, eager))
    dtypes = tuple(
        f"[{i}]: {b.dtype} op by op, {a.dtype} under jit" for i, (a, b) in enumerate(zip(jitted, eager)) if a.dtype != b.dtype
    )
    return Divergence(_max_abs(jitted, eager), _max_abs(eager, wide), _max_abs(jitted, wide), bitwise, dtypes)
