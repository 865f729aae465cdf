"""check_grads: jax.grad in the working dtype against central differences in float64.

Finite differences in float32 are mostly round-off: on a loss of order 1e4 a step of
1e-3 changes the loss by 1e-7 of itself, which is float32's epsilon (seed 002). We
difference a float64 re-evaluation of ``fn``'s jaxpr instead, so even a function that
casts to float32 inside is differenced in float64, and we say how much round-off the
numeric derivative can carry.

Probes are coordinates (drawn without replacement) and random directions: a directional
derivative sums every element of the gradient, so one wrong element in thousands shows
up where a handful of coordinates would miss it. A probe that fails is looked at again
with half the step: a truncation error shrinks fourfold (Richardson extrapolation removes
it), a kink (relu at 0) keeps its jump, and there any derivative between the one-sided
ones is accepted.
"""

import dataclasses
import functools

import jax
import numpy as np

from jaxguard.precision._inputs import check_outputs, positions, split, trace
from jaxguard.precision._shadow import eval_wide, is_key, widen
from jaxguard.precision._tolerance import finfo, is_inexact

_EPS64 = float(np.finfo(np.float64).eps)
# Round-off in one float64 evaluation of the loss, in units of eps * |loss|: a reduction
# accumulates a few roundings, so we allow several.
_ROUNDOFF_UNITS = 8.0
# The step aims to keep round-off below this fraction of the gradient.
_ROUNDOFF_TARGET = 1e-6
# Halving the step keeps at least this share of a kink's jump (a smooth function's halves).
_KINK_KEEPS = 0.75


@dataclasses.dataclass
class Probe:
    leaf: str  # pytree path of the differentiated leaf, e.g. "[0]" or "[1]['w']"; "all" for a direction
    index: tuple  # the element's index; (k,) for the k-th random direction
    analytic: float  # the gradient's component (a coordinate) or directional derivative
    numeric: float
    ratio: float
    step: float
    roundoff: float  # bound on the round-off in ``numeric``
    allowed: float  # the tolerance |analytic - numeric| had to meet
    passed: bool
    note: str = ""  # "extrapolated" (half-step Richardson) or "kink" (between one-sided derivatives)
    mode: str = "rev"  # "rev": from jax.grad; "fwd": from jax.jvp along the probe's direction


class GradReport:
    def __init__(self, probes, dtype, rtol, atol, located=None):
        self.probes = probes
        self.dtype, self.rtol, self.atol = dtype, rtol, atol
        # when a direction failed and no coordinate did: the element found by bisecting the
        # direction (a Probe of that coordinate), or None if the error is spread out
        self.located = located

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.probes)

    def raise_if_failed(self):
        if not self.passed:
            raise AssertionError(str(self))
        return self

    def __str__(self):
        bad = sum(not p.passed for p in self.probes)
        n_dirs = sum(p.leaf == "all" for p in self.probes)
        n_coords = len(self.probes) - n_dirs
        lines = [
            (
                f"check_grads: {len(self.probes) - bad}/{len(self.probes)} probes passed "
                f"({n_coords} coordinate{'s' * (n_coords != 1)}, {n_dirs} direction{'s' * (n_dirs != 1)}; "
                f"working dtype {self.dtype}, rtol={self.rtol:.3g}, atol={self.atol:.3g})"
            ),
            f"{'leaf':<12} {'index':<14} {'analytic':>13} {'numeric':>13} {'ratio':>9} {'step':>9} {'roundoff':>9}",
        ]
        both_modes = len({p.mode for p in self.probes}) > 1
        for p in self.probes:
            index = f"direction {p.index[0] + 1}" if p.leaf == "all" else str(p.index)
            notes = ", ".join(n for n in (p.mode if both_modes else "", p.note) if n)
            verdict = ("ok" if p.passed else "FAIL") + (f" ({notes})" if notes else "")
            lines.append(
                f"{p.leaf:<12} {index:<14} {p.analytic:13.6g} {p.numeric:13.6g} {p.ratio:9.5g} "
                f"{p.step:9.2e} {p.roundoff:9.2e} {verdict}"
            )
        if self.located is not None:
            p = self.located
            lines.append(f"wrong element (found by bisecting a failed direction): {p.leaf} {p.index}: "
                         f"analytic {p.analytic:.6g}, numeric {p.numeric:.6g}")
        return "\n".join(lines)

    __repr__ = __str__


def _real_float(dtype) -> bool:
    return is_inexact(dtype) and not jax.dtypes.issubdtype(dtype, np.complexfloating)


def _real_scalar(tool, out):
    check_outputs(tool, out)
    leaves = jax.tree_util.tree_leaves(out)
    leaf = leaves[0] if len(leaves) == 1 else None
    shape, dtype = np.shape(leaf), getattr(leaf, "dtype", np.result_type(leaf))
    if leaf is None or shape != () or not _real_float(dtype):
        got = f"{len(leaves)} values" if leaf is None else f"{np.dtype(dtype).name}{list(shape)}"
        raise TypeError(f"{tool}: fn must return a real floating-point scalar (the loss); it returned {got}")
    return out


# Both programs run a few times per check. On small inputs compiling dominates, and XLA's
# cheapest optimization level halves it (measured: 0.3 s to 0.15 s of CPU for a small MLP);
# on large ones running dominates, and it runs about a fifth slower.
_FAST_COMPILE = {"xla_backend_optimization_level": 0}
_FAST_COMPILE_UP_TO = 1 << 16  # elements in all arguments


def _cached(function, inputs, *more):
    """`function(fn, avals, *more, scalars)` through its lru_cache, keyed by the function,
    its input types and static values (uncached when a static value is unhashable)."""
    avals = tuple((x.shape, x.dtype, getattr(x, "weak_type", False)) for x in inputs.arrays)
    key = (inputs.fn, avals, *more, tuple(inputs.scalars.items()))
    try:
        hash(key)
    except TypeError:
        return function.__wrapped__(*key)
    return function(*key)


@functools.lru_cache(maxsize=32)
def _output_leaves(fn, avals, scalars):
    """The shapes and dtypes of `fn`'s output leaves; None when it cannot be traced here
    (the check that follows says why, in its own words)."""
    shapes = [jax.ShapeDtypeStruct(shape, dtype, weak_type=weak) for shape, dtype, weak in avals]
    try:
        _, out = trace("check_grads", fn, shapes, dict(scalars))
    except Exception:  # noqa: BLE001
        return None
    return tuple(jax.tree_util.tree_leaves(out))


@functools.lru_cache(maxsize=32)
def _programs(fn, avals, diff, reverse, scalars):
    """(compiled value and gradient in the working dtype, compiled float64 loss at a moved
    point). The gradient is jax.grad's, or with `reverse` False jacfwd's (for functions
    reverse mode cannot differentiate, such as a while_loop)."""
    shapes = [jax.ShapeDtypeStruct(shape, dtype, weak_type=weak) for shape, dtype, weak in avals]
    options = _FAST_COMPILE if sum(int(np.prod(s.shape)) for s in shapes) <= _FAST_COMPILE_UP_TO else {}
    closed, _ = trace("check_grads", fn, shapes, dict(scalars), check=_real_scalar)
    gradient = jax.value_and_grad(fn, argnums=diff) if reverse else lambda *xs: (fn(*xs), jax.jacfwd(fn, argnums=diff)(*xs))
    value_and_grad = jax.jit(gradient).lower(*shapes).compile(options)

    def loss_at(xs, deltas, flat, directions, t):
        # Every differentiated leaf, in float64, moves by t * direction and by delta at one element.
        moved = list(xs)
        for k, j in enumerate(diff):
            x = widen(xs[j]) + t * directions[k].astype(np.float64)
            moved[j] = x.reshape(-1).at[flat[k]].add(deltas[k]).reshape(x.shape)
        return eval_wide(closed.jaxpr, closed.consts, moved)[0]

    moves = [
        jax.ShapeDtypeStruct((len(diff),), np.float64),
        jax.ShapeDtypeStruct((len(diff),), np.int64),
        [jax.ShapeDtypeStruct(shapes[j].shape, np.int8) for j in diff],
        jax.ShapeDtypeStruct((), np.float64),
    ]
    with jax.enable_x64(True):
        return value_and_grad, jax.jit(loss_at).lower(shapes, *moves).compile(options)


# Without reverse mode the gradient (which sizes the steps and scales the tolerances) takes
# one jvp per element: jacfwd holds them all at once.
_FORWARD_GRADIENT_UP_TO = 1 << 14


@functools.lru_cache(maxsize=32)
def _forward_program(fn, avals, diff, scalars):
    """Compiled `(arrays, tangents) -> jvp of fn` along the tangents of the differentiated
    leaves, in the working dtype."""
    shapes = [jax.ShapeDtypeStruct(shape, dtype, weak_type=weak) for shape, dtype, weak in avals]

    def derivative(xs, tangents):
        def of(*diffed):
            moved = list(xs)
            for j, x in zip(diff, diffed):
                moved[j] = x
            return fn(*moved)

        return jax.jvp(of, [xs[j] for j in diff], tangents)[1]

    tangents = [jax.ShapeDtypeStruct(shapes[j].shape, shapes[j].dtype) for j in diff]
    return jax.jit(derivative).lower(shapes, tangents).compile()


def _jvp_along(jvp, inputs, diff, sizes, plan) -> float:
    """The forward-mode derivative along a probe: a coordinate's unit vector, or a
    direction's signs."""
    tangents = []
    for k, j in enumerate(diff):
        leaf = inputs.arrays[j]
        if plan.signs is not None:
            start = sum(sizes[:k])
            t = plan.signs[start:start + sizes[k]]
        else:
            t = np.zeros(sizes[k], np.int8)
            if k == plan.leaf_k:
                t[plan.flat] = 1
        tangents.append(np.asarray(t).astype(leaf.dtype).reshape(leaf.shape))
    return float(jvp(list(inputs.arrays), tangents))


def _differentiated(inputs, argnums):
    """Positions (among inputs.arrays) of the floating-point leaves of the ``argnums`` arguments."""
    wanted = set(positions("check_grads", "argnums", argnums, inputs.n_args))
    for n in sorted(wanted - set(inputs.argnums)):
        raise ValueError(f"check_grads: argument {n} is in argnums but static (or holds no arrays)")
    diff = []
    for j, (x, a) in enumerate(zip(inputs.arrays, inputs.argnums)):
        if a in wanted:
            if is_key(x):
                raise TypeError(f"check_grads: argument {inputs.labels[j]} is a PRNG key; it cannot be differentiated")
            if is_inexact(x.dtype) and x.size:
                diff.append(j)
    if not diff:
        raise ValueError(f"check_grads: argument(s) {sorted(wanted)} have no floating-point values to differentiate")
    return tuple(diff)


def check_grads(
    fn, *args, argnums=0, static_argnums=(), probes=8, directions=2, seed=0, rtol=None, atol=None, order=1, modes=("rev",)
):
    """Compare ``jax.grad(fn, argnums)`` with float64 central differences.

    ``order=2`` checks second derivatives the same way (like jax.test_util's ``order=2`` and
    torch's gradgradcheck): the gradient of ``x -> <grad fn(x), v>`` for a random ``v``,
    that is a Hessian-vector product, against differences of the gradient. A function with
    array (or pytree) outputs is checked through ``x -> <fn(x), u>`` for a random ``u``
    (seeded): that gradient is ``u^T J``, so every row of the Jacobian takes part.

    ``modes`` names the derivatives checked, as jax.test_util's: ``"rev"`` (``jax.grad``,
    the default) and ``"fwd"`` (``jax.jvp`` along each probe's direction, for functions
    whose forward rule is their own: ``custom_jvp``, ``jax.linearize`` users). Both modes are
    judged against the same float64 differences.

    ``probes`` elements of the differentiated arguments (drawn without replacement) and
    ``directions`` random directions (a random sign per element: the directional
    derivative involves every element of the gradient). ``fn`` must return a real scalar;
    arguments at ``static_argnums`` are held fixed. Per probe the step balances truncation
    (cbrt(eps64) times the element's scale) against round-off (eps64 * |loss| / step must
    stay below 1e-6 of the derivative's scale). The test is ``|analytic - numeric| <=
    rtol * scale + atol * |direction| + roundoff``, where scale is |numeric| (and, for a
    direction, at least the root-sum-square of its terms); by default rtol is sqrt(eps)
    of the working dtype and atol is 1e-3 * rtol * max|gradient|.
    """
    if order not in (1, 2):
        raise ValueError(f"check_grads: order must be 1 or 2, got {order!r}")
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    if not modes or any(mode not in ("fwd", "rev") for mode in modes):
        raise ValueError(f"check_grads: modes must name 'fwd' and/or 'rev', got {modes!r}")
    inputs = split("check_grads", fn, args, static_argnums)
    outputs = _cached(_output_leaves, inputs)
    if outputs is not None and not (len(outputs) == 1 and outputs[0].shape == ()) \
            and outputs and all(_real_float(leaf.dtype) for leaf in outputs):
        fn = _scalar_along(fn, outputs, seed)  # (integer or complex outputs: `_real_scalar` says so)
        inputs = split("check_grads", fn, args, static_argnums)
    if order == 2:
        fn = _gradient_along(fn, args, argnums, seed)
        inputs = split("check_grads", fn, args, static_argnums)
    if not (isinstance(probes, int) and isinstance(directions, int) and probes >= 0 and directions >= 0):
        raise ValueError(f"check_grads: probes and directions must be counts, got {probes!r} and {directions!r}")
    if probes + directions == 0:
        raise ValueError("check_grads: probes=0 and directions=0 leave nothing to check")
    diff = _differentiated(inputs, argnums)
    reverse = "rev" in modes
    n_diff = sum(inputs.arrays[j].size for j in diff)
    if not reverse and n_diff > _FORWARD_GRADIENT_UP_TO:
        raise ValueError(
            f"check_grads: modes=('fwd',) builds the gradient from {n_diff} jvps (to size its steps); "
            f"at most {_FORWARD_GRADIENT_UP_TO} differentiated elements: add 'rev' or differentiate fewer"
        )
    value_and_grad, loss_at = _cached(_programs, inputs, diff, reverse)
    loss32, grads = value_and_grad(*inputs.arrays)
    if not np.isfinite(float(loss32)):
        raise ValueError(f"check_grads: fn is {float(loss32)} at these inputs: there is no derivative to check")

    grads = [np.asarray(g, np.float64).reshape(-1) for g in grads]
    dtype = np.result_type(*[inputs.arrays[j].dtype for j in diff])
    gscale = max(float(np.max(np.abs(g))) for g in grads)
    if rtol is None:
        rtol = float(np.sqrt(finfo(dtype).eps))
    if atol is None:
        atol = 1e-3 * rtol * gscale
    sizes = [g.size for g in grads]
    n_total = sum(sizes)
    rng = np.random.default_rng(seed)
    coords = rng.choice(n_total, size=min(probes, n_total), replace=False) if probes > 0 else []
    signs = [rng.integers(0, 2, n_total, dtype=np.int8) * 2 - 1 for _ in range(directions)]

    base = [np.asarray(inputs.arrays[j]).astype(np.float64).reshape(-1) for j in diff]
    with jax.enable_x64(True):
        evaluator = _Evaluator(loss_at, inputs.arrays, diff, sizes)
        loss = abs(float(loss32))  # for sizing steps, the working dtype's value is close enough
        leaves = [(inputs.labels[j], inputs.arrays[j].shape) for j in diff]
        plans = [_coordinate(int(c), sizes, leaves, base, grads, loss, rtol, atol) for c in coords]
        gx = sum(float(np.abs(g) @ np.abs(b)) for g, b in zip(grads, base))
        norm_g = float(np.sqrt(sum(float(g @ g) for g in grads)))
        xscale = max(float(np.sqrt(sum(float(b @ b) for b in base) / n_total)), 1.0)
        for k, s in enumerate(signs):
            plans.append(_direction(k, s, sizes, grads, norm_g, gx, xscale, loss, rtol, atol))
        results = [evaluator.difference(plan, plan.step) for plan in plans]
    if "fwd" in modes:  # the same probes, with the analytic value from jax.jvp
        jvp = _cached(_forward_program, inputs, diff)
        forward = [dataclasses.replace(p, analytic=_jvp_along(jvp, inputs, diff, sizes, p), mode="fwd") for p in plans]
        plans, results = (plans + forward, results * 2) if "rev" in modes else (forward, results)
    with jax.enable_x64(True):
        out = [_judge(plan, result, rtol, atol) for plan, result in zip(plans, results)]
        for i, probe in enumerate(out):
            if not probe.passed:
                out[i] = _confirm(plans[i], results[i], evaluator.difference(plans[i], plans[i].half), rtol, atol)
        located = None
        # (bisecting compares reverse-mode gradients: it runs on a failed "rev" direction)
        failed_direction = next((plans[i] for i, p in enumerate(out) if not p.passed and p.leaf == "all" and p.mode == "rev"), None)
        if failed_direction is not None and all(p.passed for p in out if p.leaf != "all"):
            context = (sizes, grads, norm_g, gx, xscale, loss, rtol, atol)
            located = _bisect(evaluator, failed_direction, context, leaves, base)
    return GradReport(out, str(dtype), rtol, atol, located)


def _bisect(evaluator, plan, context, leaves, base):
    """The one wrong element of a failed direction: keep the half of its signs whose
    directional derivative still fails, down to one element (about 2 log2(n) float64
    evaluations), then check that coordinate. None when both halves pass (the error is
    spread over many elements)."""
    sizes, grads, norm_g, gx, xscale, loss, rtol, atol = context
    elements = np.flatnonzero(plan.signs)
    while len(elements) > 1:
        for part in (elements[: len(elements) // 2], elements[len(elements) // 2:]):
            signs = np.zeros_like(plan.signs)
            signs[part] = plan.signs[part]
            sub = _direction(plan.index[0], signs, sizes, grads, norm_g, gx, xscale, loss, rtol, atol)
            if not _judge(sub, evaluator.difference(sub, sub.step), rtol, atol).passed:
                elements = part
                break
        else:
            return None
    coordinate = _coordinate(int(elements[0]), sizes, leaves, base, grads, loss, rtol, atol)
    return _judge(coordinate, evaluator.difference(coordinate, coordinate.step), rtol, atol)


def _scalar_along(fn, outputs, seed):
    """`x -> <fn(x), u>` for a fixed random `u` of its output leaves' shapes (seeded): a
    vector-valued function's Jacobian, seen from one side."""
    rng = np.random.default_rng(seed + 2)
    cotangents = [rng.standard_normal(leaf.shape).astype(leaf.dtype) for leaf in outputs]

    def along(*xs):
        out = jax.tree_util.tree_leaves(fn(*xs))
        return sum((o * u).sum() for o, u in zip(out, cotangents))

    along.__name__ = f"{getattr(fn, '__name__', 'fn')}_along_u"
    return along


def _gradient_along(fn, args, argnums, seed):
    """`x -> <grad fn(x), v>` for a fixed random v (seeded): its gradient is H v."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    rng = np.random.default_rng(seed + 1)

    def direction(leaf):
        dtype = np.dtype(getattr(leaf, "dtype", None) or np.result_type(leaf))
        shape = np.shape(leaf)
        return rng.standard_normal(shape).astype(dtype) if is_inexact(dtype) else np.zeros(shape, dtype)

    directions = {n: jax.tree_util.tree_map(direction, args[n]) for n in nums}

    def along(*xs):
        def inner(*diffed):
            full = list(xs)
            for n, value in zip(nums, diffed):
                full[n] = value
            return fn(*full)

        grads = jax.grad(inner, argnums=tuple(range(len(nums))))(*[xs[n] for n in nums])
        total = 0.0
        for n, g in zip(nums, grads):
            for gl, vl in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(directions[n])):
                total = total + (gl * vl).sum()
        return total

    along.__name__ = f"grad_of_{getattr(fn, '__name__', 'fn')}"
    return along


@dataclasses.dataclass
class _Plan:
    """One probe before it runs: where, which way, how far, and the scales it is judged on."""

    leaf: str
    index: tuple
    analytic: float
    step: float
    half: float  # the halved step, for a second look
    scale: float  # the derivative's natural size: |g_i|, or the root-sum-square of g_i * d_i
    norm: float  # |direction|: 1 for a coordinate, sqrt(n) for signs
    input_roundoff: float  # rounding of the perturbed inputs, in units of eps64 (0: exact steps)
    leaf_k: int = -1  # coordinate: which differentiated leaf ...
    flat: int = 0  # ... and element
    signs: object = None  # direction: a sign per element (all leaves, concatenated)
    mode: str = "rev"  # where `analytic` came from: jax.grad ("rev") or jax.jvp ("fwd")


def _step(x_scale, loss_terms, derivative_scale):
    # Truncation wants a small step, round-off a large one: take the larger need, capped.
    h_trunc = np.cbrt(_EPS64) * x_scale
    h_round = _EPS64 * loss_terms / (_ROUNDOFF_TARGET * max(derivative_scale, 1e-300))
    return min(max(h_trunc, h_round), 1e-2 * x_scale)


def _coordinate(c, sizes, leaves, base, grads, loss, rtol, atol):
    leaf_k = int(np.searchsorted(np.cumsum(sizes), c, side="right"))
    flat = c - sum(sizes[:leaf_k])
    x = float(base[leaf_k][flat])
    g = float(grads[leaf_k][flat])
    # A zero component still has the gradient's scale: atol is the least it is judged on.
    h = _step(max(abs(x), 1.0), _ROUNDOFF_UNITS * loss, max(abs(g), atol / max(rtol, 1e-300)))
    label, shape = leaves[leaf_k]
    return _Plan(
        leaf=label, index=tuple(int(i) for i in np.unravel_index(flat, shape)), analytic=g,
        step=(x + h) - x, half=(x + h / 2) - x,  # steps exactly representable around x
        scale=abs(g), norm=1.0, input_roundoff=0.0, leaf_k=leaf_k, flat=flat,
    )


def _direction(k, signs, sizes, grads, norm_g, gx, xscale, loss, rtol, atol):
    analytic = float(sum(g @ s for g, s in zip(grads, np.split(signs.astype(np.float64), np.cumsum(sizes)[:-1]))))
    norm = float(np.sqrt(np.count_nonzero(signs)))
    # x +- t * d rounds every element: at most eps/2 * sum|g x| per evaluation.
    input_roundoff = gx / 2
    t = _step(xscale, _ROUNDOFF_UNITS * loss + input_roundoff, max(abs(analytic), norm_g, atol * norm / max(rtol, 1e-300)))
    return _Plan(
        leaf="all", index=(k,), analytic=analytic, step=t, half=t / 2, scale=norm_g, norm=norm,
        input_roundoff=input_roundoff, signs=signs,
    )


class _Evaluator:
    """The float64 loss at the base point and at points moved along a probe."""

    def __init__(self, loss_at, xs, diff, sizes):
        self.loss_at, self.xs, self.diff, self.sizes = loss_at, xs, diff, sizes
        self.zeros = [np.zeros(len(diff), np.float64), np.zeros(len(diff), np.int64)]
        self.no_direction = [jax.device_put(np.zeros(xs[j].shape, np.int8)) for j in diff]
        self._directions = {}

    def _call(self, deltas, flat, directions, t):
        return self.loss_at(self.xs, deltas, flat, directions, np.float64(t))

    @functools.cached_property
    def base_loss(self):
        """The float64 loss at the unmoved point (only a second look needs it)."""
        return float(self._call(*self.zeros, self.no_direction, 0.0))

    def difference(self, plan, h):
        """f(x + h) and f(x - h) along ``plan``; values stay on the device until read."""
        if plan.signs is None:
            deltas, flat = self.zeros[0].copy(), self.zeros[1].copy()
            flat[plan.leaf_k] = plan.flat
            plus, minus = deltas.copy(), deltas.copy()
            plus[plan.leaf_k], minus[plan.leaf_k] = h, -h
            up = self._call(plus, flat, self.no_direction, 0.0)
            down = self._call(minus, flat, self.no_direction, 0.0)
        else:
            key = id(plan.signs)
            if key not in self._directions:
                parts = np.split(plan.signs, np.cumsum(self.sizes)[:-1])
                # the signs are kept with their device copy: a freed array's id is reused
                self._directions[key] = (plan.signs, [
                    jax.device_put(p.reshape(self.xs[j].shape)) for p, j in zip(parts, self.diff)
                ])
            d = self._directions[key][1]
            up = self._call(*self.zeros, d, h)
            down = self._call(*self.zeros, d, -h)
        return _Difference(up, down, self, h)


class _Difference:
    def __init__(self, up, down, evaluator, h):
        self._up, self._down, self.evaluator, self.h = up, down, evaluator, h

    @functools.cached_property
    def values(self):
        return float(self._up), float(self._down)

    @property
    def central(self):
        up, down = self.values
        return (up - down) / (2 * self.h)

    @property
    def one_sided(self):
        up, down = self.values
        f0 = self.evaluator.base_loss
        return (f0 - down) / self.h, (up - f0) / self.h

    def roundoff(self, plan):
        # Round-off of the loss values (the larger: a loss that is 0 at the base point is
        # not exact elsewhere) and of the moved inputs, over the step.
        loss = max(abs(v) for v in self.values)
        return _EPS64 * (_ROUNDOFF_UNITS * loss + plan.input_roundoff) / self.h


def _allowed(plan, numeric, roundoff, rtol, atol):
    return rtol * max(abs(numeric), plan.scale if plan.signs is not None else 0.0) + atol * plan.norm + roundoff


def _probe(plan, numeric, step, roundoff, allowed, passed, note=""):
    analytic = plan.analytic
    ratio = analytic / numeric if numeric else (1.0 if analytic == 0 else np.inf)
    return Probe(
        plan.leaf, plan.index, analytic, float(numeric), float(ratio), float(step), float(roundoff),
        float(allowed), bool(passed), note, plan.mode,
    )


def _judge(plan, result, rtol, atol):
    numeric, roundoff = result.central, result.roundoff(plan)
    allowed = _allowed(plan, numeric, roundoff, rtol, atol)
    return _probe(plan, numeric, result.h, roundoff, allowed, abs(plan.analytic - numeric) <= allowed)


def _confirm(plan, full, half, rtol, atol):
    """A second look at a failed probe, with half the step."""
    # A kink: the one-sided derivatives differ by a jump that does not shrink with the step.
    down_full, up_full = full.one_sided
    down_half, up_half = half.one_sided
    jump_full, jump_half = up_full - down_full, up_half - down_half
    roundoff = 2 * half.roundoff(plan)
    allowed = _allowed(plan, half.central, roundoff, rtol, atol)
    if abs(jump_full) > allowed and abs(jump_half) >= _KINK_KEEPS * abs(jump_full):
        low, high = sorted((down_half, up_half))
        inside = low - allowed <= plan.analytic <= high + allowed
        return _probe(plan, half.central, half.h, roundoff, allowed, inside, "kink")
    # Truncation error falls fourfold with half the step: extrapolate it away.
    numeric = (4 * half.central - full.central) / 3
    roundoff = (4 * half.roundoff(plan) + full.roundoff(plan)) / 3
    allowed = _allowed(plan, numeric, roundoff, rtol, atol)
    return _probe(plan, numeric, half.h, roundoff, allowed, abs(plan.analytic - numeric) <= allowed, "extrapolated")
