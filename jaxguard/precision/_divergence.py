"""divergence: jit vs op-by-op vs float64, the seed notebook's LayerNorm experiment in JAX."""

import dataclasses

import jax
import numpy as np

from jaxguard.precision._inputs import split, trace
from jaxguard.precision._shadow import eval_wide
from jaxguard.precision._tolerance import is_inexact, tolerance


def _verdict(jit_vs_eager, eager_vs_f64, jit_vs_f64, bitwise, dtype_differences=()) -> str:
    if bitwise:
        agree = "agree bit for bit"
        if dtype_differences:
            agree = f"give the same values, only the dtypes differ ({'; '.join(dtype_differences)})"
        return (
            f"jit and op-by-op {agree}; the error against float64 ({jit_vs_f64:.3g}) "
            "comes from the algorithm in its working dtype, not from compilation"
        )
    if jit_vs_f64 > 2 * eager_vs_f64:
        return (
            f"compilation makes it worse: jit is {jit_vs_f64:.3g} from float64, "
            f"op-by-op {eager_vs_f64:.3g}; look at what XLA fuses or reorders"
        )
    if eager_vs_f64 > 2 * jit_vs_f64:
        return (
            f"compilation helps: jit is {jit_vs_f64:.3g} from float64, op-by-op {eager_vs_f64:.3g}; "
            "the op-by-op algorithm loses precision that XLA's rewrites avoid"
        )
    return (
        f"jit and op-by-op differ by {jit_vs_eager:.3g} (compilation reorders rounding) but are "
        f"equally far from float64 ({jit_vs_f64:.3g} vs {eager_vs_f64:.3g}): "
        "the error comes from the algorithm's working precision"
    )


@dataclasses.dataclass
class OutputDivergence:
    """One output leaf: max absolute differences, jit's worst relative error against float64
    and where, and whether jit and op-by-op are within the dtype's tolerance of float64."""

    path: str  # "[1]", "['loss']": the leaf in the output pytree
    dtype: str
    shape: tuple
    jit_vs_eager: float
    eager_vs_f64: float
    jit_vs_f64: float
    jit_relative: float  # max |jit - f64| / |f64| (inf where f64 is 0 and jit is not)
    worst_index: tuple  # where |jit - f64| is largest
    tolerance_ratio: float  # max over jit and op-by-op of |x - f64| / (atol + rtol |f64|): above 1 fails
    rtol: float
    atol: float
    bitwise_equal: bool

    @property
    def passed(self) -> bool:
        return self.tolerance_ratio <= 1.0

    @property
    def verdict(self) -> str:
        return _verdict(self.jit_vs_eager, self.eager_vs_f64, self.jit_vs_f64, self.bitwise_equal)

    def __str__(self):
        status = "ok" if self.passed else "FAIL"
        ratio = f"{self.tolerance_ratio:.3g}x" if np.isfinite(self.tolerance_ratio) else "infinitely beyond"
        return (
            f"output {self.path} {self.dtype}{list(self.shape)}: {status} ({ratio} the tolerance rtol={self.rtol:g}, "
            f"atol={self.atol:g}); jit vs f64 {self.jit_vs_f64:.3g} (relative {self.jit_relative:.3g}, worst at "
            f"{self.worst_index}), op-by-op vs f64 {self.eager_vs_f64:.3g}, jit vs op-by-op {self.jit_vs_eager:.3g}\n"
            f"    {self.verdict}"
        )


@dataclasses.dataclass
class Divergence:
    """Max absolute differences over all output leaves, compared in float64; `outputs` has
    each leaf's own figures and verdict."""

    jit_vs_eager: float
    eager_vs_f64: float
    jit_vs_f64: float
    bitwise_equal: bool  # jit and op-by-op gave the same values, bit for bit
    # Outputs whose dtype differs between jit and op by op (a Python int is int64 op by op
    # and int32 under jit): "[1]: int64 op by op, int32 under jit".
    dtype_differences: tuple = ()
    outputs: tuple = ()  # OutputDivergence per floating output leaf

    @property
    def verdict(self) -> str:
        return _verdict(self.jit_vs_eager, self.eager_vs_f64, self.jit_vs_f64, self.bitwise_equal, self.dtype_differences)

    @property
    def passed(self) -> bool:
        """Every floating output, jitted and op by op, within its dtype's tolerance of float64."""
        return all(output.passed for output in self.outputs)

    def __str__(self):
        lines = [
            f"jit vs eager: {self.jit_vs_eager:.6g}  eager vs f64: {self.eager_vs_f64:.6g}  "
            f"jit vs f64: {self.jit_vs_f64:.6g}  bitwise_equal: {self.bitwise_equal}",
            self.verdict,
        ]
        if len(self.outputs) > 1 or (self.outputs and not self.passed):
            lines += [str(output) for output in self.outputs]
        if not self.passed:
            failed = [o.path for o in self.outputs if not o.passed]
            lines.append(f"FAILED: output(s) {', '.join(failed)} beyond tolerance of float64")
        return "\n".join(lines)


def _abs_diff(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """|x - y| elementwise: 0 where equal (infinities and NaNs included); NaN on one side
    only is an infinite difference (and inf stays inf)."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where((x == y) | (np.isnan(x) & np.isnan(y)), 0.0, np.abs(x - y))
    return np.where(np.isnan(diff), np.inf, diff)


def _worst(values: np.ndarray) -> float:
    """The largest value (a NaN counts as infinite); 0 for an empty array."""
    return float(np.where(np.isnan(values), np.inf, values).max()) if values.size else 0.0


def _max_abs(xs, ys) -> float:
    return max((_worst(_abs_diff(np.asarray(x, np.float64), np.asarray(y, np.float64))) for x, y in zip(xs, ys)),
               default=0.0)


def _same_bits(a, b) -> bool:
    """Same values bit for bit; of different dtypes, the same values exactly."""
    if a.shape != b.shape:
        return False
    if a.dtype == b.dtype:
        return a.tobytes() == b.tobytes()
    wide = np.result_type(a.dtype, b.dtype)
    return bool(np.array_equal(a.astype(wide), b.astype(wide), equal_nan=wide.kind in "fc"))


def divergence(fn, *args, static_argnums=(), rtol=None, atol=None):
    """Run ``fn(*args)`` jitted, op by op (``jax.disable_jit``) and in float64; compare,
    over all outputs and per output leaf.

    Arguments at ``static_argnums`` are held fixed (as ``jax.jit``'s static arguments). An
    output passes when jit and op-by-op are both within ``atol + rtol * |float64|`` of the
    float64 run (default: assert_close's tolerance for the output's dtype).
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
    shapes = jax.eval_shape(inputs.fn, *inputs.arrays)
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(shapes)[0]]
    outputs = tuple(
        _output(path, a, b, np.asarray(w), rtol, atol)
        for path, a, b, w in zip(paths, jitted, eager, jax.tree_util.tree_leaves(wide))
        if is_inexact(a.dtype)
    )
    return Divergence(_max_abs(jitted, eager), _max_abs(eager, wide), _max_abs(jitted, wide), bitwise, dtypes, outputs)


def _output(path: str, jitted, eager, wide, rtol, atol) -> OutputDivergence:
    rtol, atol = tolerance(jitted.dtype, rtol=rtol, atol=atol)
    j, e, w = (np.asarray(x, np.float64) if not np.iscomplexobj(x) else np.asarray(x, np.complex128) for x in (jitted, eager, wide))

    dj, de = _abs_diff(j, w), _abs_diff(e, w)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        bound = atol + rtol * np.abs(w)
        ratio = np.maximum(np.where(dj == 0, 0.0, dj / bound), np.where(de == 0, 0.0, de / bound))
        relative = np.where(dj == 0, 0.0, dj / np.abs(w))
    worst = int(np.argmax(dj)) if dj.size else 0
    return OutputDivergence(
        path=path or "[0]", dtype=str(jitted.dtype), shape=tuple(jitted.shape),
        jit_vs_eager=_max_abs([jitted], [eager]), eager_vs_f64=_worst(de), jit_vs_f64=_worst(dj),
        jit_relative=_worst(relative),
        worst_index=tuple(int(i) for i in np.unravel_index(worst, jitted.shape)) if jitted.shape else (),
        tolerance_ratio=_worst(ratio),
        rtol=rtol, atol=atol, bitwise_equal=_same_bits(jitted, eager),
    )
