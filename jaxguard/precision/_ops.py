"""check_ops: per-equation precision report against a float64 shadow of the whole program.

For every equation of ``fn``'s jaxpr we compute, inside ONE compiled XLA program:
  * the working value (the op in its own dtype, on the working inputs),
  * the local reference (the same op in float64 on the same working inputs),
  * the shadow (the op in float64 on the float64 shadow inputs),
and reduce the differences to a few numbers per equation. Local error alone cannot see
catastrophic cancellation (``(x + 1e8) - 1e8`` is exact on its inputs); the shadow can.
"""

import collections
import dataclasses
import json
import math
import re
import time

import jax
import jax.extend.core as jcore
import jax.extend.core.primitives as P
import jax.numpy as jnp
import numpy as np
from jax.extend import source_info_util

from jaxguard.precision._inputs import split, trace
from jaxguard.precision._shadow import (
    kernel_in_float64,
    apply_wide,
    bind,
    inner_jaxpr,
    is_key,
    is_opaque,
    products_in_float32,
    uses_keys_or_bits,
    widen,
)
from jaxguard.precision._tolerance import finfo, is_inexact, tolerance

# Ops that only move or select values: they add no error and are not reported.
LAYOUT = frozenset(
    {
        P.reshape_p,
        P.transpose_p,
        P.broadcast_in_dim_p,
        P.squeeze_p,
        P.slice_p,
        P.dynamic_slice_p,
        P.dynamic_update_slice_p,
        P.concatenate_p,
        P.pad_p,
        P.rev_p,
        P.copy_p,
        P.gather_p,
        P.scatter_p,
        P.select_n_p,
        P.device_put_p,
        P.sharding_constraint_p,
        P.neg_p,
        P.stop_gradient_p,
    }
)


def _moves_values(eqn) -> bool:
    """An op that adds no error: it moves or selects values (LAYOUT, `jnp.split`), or
    widens floats exactly (bfloat16 to float32)."""
    if eqn.primitive in LAYOUT or eqn.primitive.name == "split":
        return True
    if eqn.primitive is not P.convert_element_type_p:
        return False
    source, target = eqn.invars[0].aval.dtype, eqn.outvars[0].aval.dtype
    return is_inexact(source) and is_inexact(target) and jnp.promote_types(source, target) == target

# Control flow whose integer outputs (trip counters, indices) reveal a changed path.
CONTROL_FLOW = frozenset({P.cond_p, P.while_p, P.scan_p})

# An op that takes the error beyond tolerance while multiplying it by more than this fails.
AMPLIFICATION_LIMIT = 10.0

# `_float_stats`' local reference for an op whose working output is its own reference.
OWN_REFERENCE = "own reference"

_SUMMARY = re.compile(r"^(?P<file>.*?):(?P<line>\d+)(?::\d+)?(?: \((?P<func>.*)\))?$")
_TINY = float(np.finfo(np.float64).tiny)
# local: diff, ratio; shadow: diff, ratio; scale; count; the local and shadow ratios again in
# the program's common tolerance (see _common_tolerance); flips
_N_STATS = 9
UNRECORDED = -1  # origin of error from ops that were skipped or are not floats


def _source(eqn) -> tuple[str, str]:
    """("file:line", function) of the user code that produced ``eqn``."""
    summary = source_info_util.summarize(eqn.source_info)
    match = _SUMMARY.match(summary)
    if match is None:
        return summary, ""
    return f"{match['file']}:{match['line']}", match["func"] or ""


@dataclasses.dataclass
class Record:
    """One checked equation output.

    ``local_error`` compares the working value with the same op in float64 on the same
    inputs; ``accumulated_error`` with the float64 shadow of the whole program up to
    here. Both are normwise relative errors, ``max|working - reference| / max|float64|``.

    The verdicts use tolerance ratios, elementwise ``|working - reference| / (atol +
    rtol * |reference|)`` maximized over the tensor (above 1 is out of tolerance):
    ``tolerance_ratio`` against the shadow, ``local_tolerance_ratio`` against the local
    reference, both in the op's own tolerance. ``amplification`` is how much worse this op
    made the error it received: the smaller of its tolerance ratio over the largest among
    its inputs (elementwise, floored at one rounding) and its accumulated error over the
    largest among its inputs' (normwise). ``score`` ranks the error an op INTRODUCES: its
    local ratio or, when it amplifies more than tenfold, how much it raised the largest
    ratio among its inputs. Amplification and score measure ratios in ONE tolerance for the
    whole program (the loosest default among its dtypes), so an op that merely passes an
    error on, from bfloat16 into float32 or not, scores only its own rounding. ``flips``
    counts boolean/integer elements (comparisons, argmax, branch indices, loop counters)
    that differ from the float64 program; each counts as one unit of score.
    """

    index: int
    primitive: str
    source: str
    function: str
    dtype: str
    shape: tuple
    rtol: float
    atol: float
    local_error: float = 0.0
    accumulated_error: float = 0.0
    amplification: float = 1.0
    score: float = 0.0
    local_tolerance_ratio: float = 0.0  # max |working - local| / (atol + rtol*|local|); > 1 fails
    tolerance_ratio: float = 0.0  # the same against the float64 shadow
    mismatches: int = 0
    max_abs_error: float = 0.0
    flips: int = 0
    failed: bool = False

    def to_json(self) -> dict:
        """The record's fields, with inf and NaN as the strings "inf", "-inf", "nan" (strict JSON has no such numbers)."""
        return {key: _json_number(value) for key, value in dataclasses.asdict(self).items()}


def _json_number(value):
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


@dataclasses.dataclass
class _Site:
    """What we know about a record before running: filled at trace time."""

    eqn: object
    source: str
    function: str
    output: int
    inputs: tuple  # indices of the records whose errors flow into this one
    rtol: float
    atol: float


class OpsReport:
    """Result of check_ops: ``.records``, ``.worst(n)``, ``.first_failure``, ``.flips``, ``str()``."""

    def __init__(self, records, outputs, skipped, fn_name, unchecked=()):
        self.records = records
        self.outputs = outputs
        self.skipped = skipped
        self.fn_name = fn_name
        # Pallas kernels and host callbacks ("pallas_call at model.py:12"): run in their
        # working dtype, not compared with float64 (the float64 program resyncs after them)
        self.unchecked = tuple(dict.fromkeys(unchecked))
        self.input_shapes: list[str] = []  # "float32[64, 128]" per array argument (for the log)

    @property
    def failures(self):
        return [r for r in self.records if r.failed]

    @property
    def first_failure(self):
        return next((r for r in self.records if r.failed), None)

    @property
    def flips(self):
        """Records where a comparison, argmax or branch came out differently than in float64."""
        return [r for r in self.records if r.flips]

    @property
    def checked(self) -> int:
        return len(self.records)

    @property
    def passed(self) -> bool:
        """No op out of tolerance, and at least one op checked: nothing checked is no pass."""
        return self.checked > 0 and not self.failures

    def worst(self, n=10):
        """Records ranked by the error each op introduces (not the error it passes on)."""
        return sorted(self.records, key=lambda r: -r.score)[:n]

    def to_html(self, path=None) -> str:
        """The report as one HTML page (error per op along the program, plotted, then the
        ranked table); written to ``path`` when given."""
        from jaxguard.precision._html import ops_report_html

        page = ops_report_html(self)
        if path is not None:
            with open(path, "w", encoding="utf-8") as out:
                out.write(page)
        return page

    def __str__(self):
        verdict = "passed" if self.passed else ("FAILED" if self.failures else "NOTHING CHECKED")
        lines = [
            (
                f"check_ops({self.fn_name}): {verdict}: {len(self.records)} outputs checked, "
                f"{len(self.failures)} failed, {self.skipped} skipped"
            )
        ]
        header = f"{'score':>9} {'local':>9} {'accum':>9} {'amplif':>9} {'flips':>5}  {'op':<20} {'dtype[shape]':<22} source"
        lines.append(header)
        for r in self.worst(10):
            mark = "FAIL" if r.failed else ""
            shape = f"{r.dtype}{list(r.shape)}"
            lines.append(
                f"{r.score:9.3g} {r.local_error:9.2e} {r.accumulated_error:9.2e} {r.amplification:9.3g} "
                f"{r.flips:5d}  {r.primitive:<20} {shape:<22} {_shown_source(r)} {mark}".rstrip()
            )
        first = self.first_failure
        if first is not None:
            lines.append(f"first failure: {first.primitive} at {_shown_source(first)} ({_describe(first)})")
        if not self.records:
            lines.append("nothing was checked: not a pass" + (
                f" ({self.skipped} op output(s) skipped: larger than max_numel, empty, or past "
                f"max_checks per site)" if self.skipped else " (no floating-point operation)"))
        for r in self.flips:
            lines.append(f"branch/argmax flip: {r.primitive} at {r.source}: {r.flips} element(s) differ from float64")
        for where in self.unchecked:
            lines.append(f"not checked (ran in its working dtype; float64 resumes after it): {where}")
        return "\n".join(lines)

    __repr__ = __str__


def _shown_source(r) -> str:
    """`model.py:7`, or `model.py:7 (in _var)` for an op inside a library function."""
    return f"{r.source} ({r.function})" if r.function.startswith("in ") else r.source


def _describe(r) -> str:
    if r.flips:
        return f"{r.flips} element(s) differ from float64"
    beyond = f"{r.tolerance_ratio:.3g}x allowed" if np.isfinite(r.tolerance_ratio) else "overflow or NaN"
    return (
        f"{r.mismatches} element(s) off the float64 program beyond rtol={r.rtol:g}, atol={r.atol:g}; "
        f"max abs error {r.max_abs_error:.3g} ({beyond}); amplification {r.amplification:.3g}"
    )


def _reduce_all(maxima, sums=()):
    """Maxima of some same-shaped arrays and sums of others, in ONE pass (a variadic reduce).

    On XLA's CPU backend this costs about as much as a single max, while separate
    reductions, argmax, and anything under a cond each cost a pass or several, and an
    array read by two reductions is written out in full first; a large single sum is split
    into windows that are written out too (measured): they dominated the instrumented
    program before.
    """
    xs, n = (*maxima, *sums), len(maxima)
    return jax.lax.reduce(
        xs,
        tuple(np.zeros((), x.dtype) for x in xs),
        lambda a, b: tuple(jnp.maximum(p, q) if i < n else p + q for i, (p, q) in enumerate(zip(a, b))),
        tuple(range(xs[0].ndim)),
    )


def _differences(working, reference, rtol, atol, spread=None):
    """|working - reference| and its ratio to ``atol + rtol * (|reference| + spread)`` (above
    1 fails). ``spread`` is a reduction's own scale (see `_reduction_spread`): a sum's
    rounding error grows with what it adds up, not with its (possibly cancelled) result."""
    if np.dtype(working.dtype).itemsize < 4:
        # Widened through float32 (exactly): LLVM otherwise folds the NaN and equality
        # tests below back to 16-bit compares, done one element at a time on CPU (the
        # one-pass reduce of a bf16 record ran 2-3x slower, measured).
        working = working.astype(np.float32)
    w = working.astype(reference.dtype)
    both_nan = jnp.isnan(w) & jnp.isnan(reference)
    diff = jnp.where((w == reference) | both_nan, 0.0, jnp.abs(w - reference))
    scale = jnp.abs(reference) if spread is None else jnp.abs(reference) + spread
    # A NaN difference gives a NaN ratio, which counts as out of tolerance.
    return diff, jnp.where(diff == 0, 0.0, diff / (atol + rtol * scale))


def _reduction_spread(eqn, wide_inputs):
    """For a sum over K terms: sqrt(K) times the same reduction of the terms' magnitudes
    (`|a| @ |b|` for a matmul), in float64. A float32 dot product's error is about
    sqrt(K) * eps * sum|a_i b_i| (K eps in the worst case), so holding it to eps times its
    result fails correct matmuls whose outputs cancel (N(0,1) inputs, K = 256 and up). A
    Pallas kernel is bounded the same way, as a sum of products (a matmul, an accumulation
    over the grid): its run on the magnitudes may come out negative, hence the abs."""
    terms = _summed_terms(eqn)
    if terms <= 1 or not all(is_inexact(v.aval.dtype) for v in eqn.invars):
        return None
    magnitudes = apply_wide(eqn, [jnp.abs(x) for x in wide_inputs], working=True)[0]
    return float(np.sqrt(terms)) * jnp.abs(magnitudes)


def _summed_terms(eqn) -> int:
    """How many terms one output element of `eqn` adds up (1 for what is not a sum): the
    reductions whose rounding error grows with the number and size of what they add."""
    params = eqn.params
    if eqn.primitive.name == "pallas_call":
        return _kernel_terms(eqn)
    if eqn.primitive is P.dot_general_p:
        (contracting, _), _ = params["dimension_numbers"]  # lhs's contracting dimensions
        return int(np.prod([eqn.invars[0].aval.shape[d] for d in contracting]))
    if eqn.primitive is P.reduce_sum_p:
        return int(np.prod([eqn.invars[0].aval.shape[d] for d in params["axes"]]))
    if eqn.primitive is P.cumsum_p:
        return int(eqn.invars[0].aval.shape[params["axis"]])
    if eqn.primitive is P.conv_general_dilated_p:  # the kernel's window times its input features
        rhs = eqn.invars[1].aval.shape
        return int(np.prod(rhs)) // max(1, int(rhs[params["dimension_numbers"].rhs_spec[0]]))
    return 1


def _kernel_terms(eqn) -> int:
    """How many terms a Pallas kernel may add into one output element: the largest sum in
    its body (a `dot` or a reduction over a block, times the length of a scan around it)
    times the grid steps that revisit one output block (an accumulation over the grid)."""
    mapping = eqn.params["grid_mapping"]
    output = mapping.block_mappings[mapping.num_inputs]
    blocks = 1
    for size, block in zip(output.array_aval.shape, output.block_shape):
        block = getattr(block, "block_size", block)
        if isinstance(block, int):
            blocks *= -(-int(size) // block)
        elif block is not None:
            blocks *= int(size)  # a squeezed dimension: one block per index
    steps = int(np.prod([int(n) for n in mapping.grid])) if mapping.grid else 1
    return _largest_sum(eqn.params["jaxpr"]) * max(1, steps // blocks)


def _largest_sum(jaxpr, repeats: int = 1) -> int:
    largest = 1
    for inner in jaxpr.eqns:
        if inner.primitive in (P.dot_general_p, P.reduce_sum_p):
            largest = max(largest, _summed_terms(inner) * repeats)
        times = repeats * (int(inner.params["length"]) if inner.primitive is P.scan_p else 1)
        for body in jcore.jaxprs_in_params(inner.params):
            largest = max(largest, _largest_sum(body, times))
    return largest


def _float_stats(working, shadow, local, tol, common, spread=None):
    """[local max diff, local max ratio, shadow max diff, shadow max ratio, max finite
    |shadow|, count out of tolerance against the shadow, local max ratio and shadow max
    ratio in the common tolerance].

    Ratios are to the op's own tolerance ``tol`` (rtol, atol) and, when it differs, to the
    program's ``common`` one. ``local`` None means it equals the shadow (the op's inputs
    were exact); OWN_REFERENCE, that the working output is its own (no local error).
    """
    a_diff, a_ratio = _differences(working, shadow, *tol, spread)
    arrays = {"a_diff": a_diff, "a_ratio": a_ratio, "scale": jnp.where(jnp.isfinite(shadow), jnp.abs(shadow), 0.0)}
    compare_local = local is not None and local is not OWN_REFERENCE
    if compare_local:
        arrays["l_diff"], arrays["l_ratio"] = _differences(working, local, *tol, spread)
    if common != tol:
        arrays["a_common"] = _differences(working, shadow, *common, spread)[1]
        if compare_local:
            arrays["l_common"] = _differences(working, local, *common, spread)[1]
    # the count in int32: summed in float64, the one-pass reduce runs twice as slow (measured)
    *maxima, count = _reduce_all(arrays.values(), [(~(a_ratio <= 1)).astype(jnp.int32)])
    m = dict(zip(arrays, maxima))
    if local is OWN_REFERENCE:
        m["l_diff"] = m["l_ratio"] = m["l_common"] = jnp.zeros((), jnp.float64)
    m.setdefault("l_diff", m["a_diff"])
    m.setdefault("l_ratio", m["a_ratio"])
    m.setdefault("a_common", m["a_ratio"])
    m.setdefault("l_common", m["l_ratio"] if common == tol else m["a_common"])
    return [m["l_diff"], m["l_ratio"], m["a_diff"], m["a_ratio"], m["scale"], count.astype(jnp.float64), m["l_common"], m["a_common"]]


class _Instrumenter:
    """Evaluates a jaxpr three ways at trace time and collects per-record statistics."""

    def __init__(self, rtol, atol, common, max_checks, max_numel, include=None, exclude=frozenset()):
        self.rtol, self.atol = rtol, atol
        # primitives to check (None: all) and not to check, by name ("dot_general", "exp")
        self.include, self.exclude = include, exclude
        self.common = common
        self.max_checks, self.max_numel = max_checks, max_numel
        self.sites = []
        self.stats = []
        self.skipped = 0
        self.unchecked: list[str] = []  # kernels and callbacks, run in the working dtype
        self.kernel_errors: dict[int, str] = {}  # id of a Pallas call -> why its float64 rebuild failed
        # (the user's line, the library function) of the library call being evaluated: ops
        # inside a function JAX jits internally (jnp.var) carry no user frame of their own
        self.context: tuple[str, str] | None = None
        self.checks_per_site = collections.Counter()

    def child(self, probe: bool = False) -> "_Instrumenter":
        """An instrumenter for a loop body: it records into the same sites (so record
        indices are global) and keeps the body's statistics apart, to be carried across
        iterations. A `probe` (to count the body's records) records into copies."""
        child = _Instrumenter(self.rtol, self.atol, self.common, self.max_checks, self.max_numel, self.include, self.exclude)
        child.sites = list(self.sites) if probe else self.sites
        child.checks_per_site = collections.Counter(self.checks_per_site) if probe else self.checks_per_site
        child.unchecked = [] if probe else self.unchecked
        child.kernel_errors = self.kernel_errors
        child.context = self.context
        return child

    def body_stats(self):
        return jnp.stack(self.stats) if self.stats else jnp.zeros((0, _N_STATS), jnp.float64)

    def eval(self, jaxpr, consts, w_args, s_args, origins):
        wenv, senv, oenv = {}, {}, {}

        def read(env, v):
            if isinstance(v, jcore.Literal):
                value = np.asarray(v.val, dtype=v.aval.dtype)
                return widen(value) if env is senv else value
            return env[v]

        def origin(v):
            return () if isinstance(v, jcore.Literal) else oenv[v]

        for v, x in zip(jaxpr.constvars, consts):
            wenv[v], senv[v], oenv[v] = x, widen(x), ()
        for v, w, s, o in zip(jaxpr.invars, w_args, s_args, origins):
            wenv[v], senv[v], oenv[v] = w, s, o
        for eqn in jaxpr.eqns:
            win = [read(wenv, v) for v in eqn.invars]
            sin = [read(senv, v) for v in eqn.invars]
            oin = [origin(v) for v in eqn.invars]
            inner = inner_jaxpr(eqn)
            if eqn.primitive in (P.scan_p, P.while_p, P.cond_p):
                # the body's ops are checked where they are written, over every iteration
                loop = {P.scan_p: self._scan, P.while_p: self._while, P.cond_p: self._cond}[eqn.primitive]
                wout, sout, oout = loop(eqn, win, sin, oin)
            elif inner is not None:
                outer = self.context
                here, _ = _source(eqn)
                if here and eqn.params.get("name"):
                    self.context = (here, str(eqn.params["name"]))
                try:
                    wout, sout, oout = self.eval(inner[0], inner[1], win, sin, oin)
                finally:
                    self.context = outer
            elif (kernel := self._kernel_in_float64(eqn, sin)) is not None:
                # a Pallas kernel, checked as one op against a float64 run of itself
                wout = bind(eqn, win)
                sout = kernel
                oout = self.check(eqn, win, wout, sout, sin, _merged(oin))
            elif uses_keys_or_bits(eqn) or is_opaque(eqn):
                # Random and bit-level ops, kernels and callbacks: the shadow resyncs to the
                # working value (a kernel or callback is listed as not checked).
                wout = bind(eqn, win)
                sout = [widen(x) for x in wout]
                oout = [()] * len(wout)
                if is_opaque(eqn):
                    why = self.kernel_errors.get(id(eqn))
                    self.unchecked.append(f"{eqn.primitive.name} at {self._where(eqn)[0]}" + (
                        f" (its float64 rebuild failed: {why})" if why else ""))
            else:
                # The barrier keeps XLA from rewriting across ops: it simplifies
                # (x + 1e8) - 1e8 to x under jit, hiding what the program says.
                wout = jax.lax.optimization_barrier(bind(eqn, win))
                sout = apply_wide(eqn, sin)
                merged = _merged(oin)
                if _moves_values(eqn):
                    oout = [merged] * len(wout)
                else:
                    oout = self.check(eqn, win, wout, sout, sin, merged)
            for v, w, s, o in zip(eqn.outvars, wout, sout, oout):
                wenv[v], senv[v], oenv[v] = w, s, o
        return (
            [read(wenv, v) for v in jaxpr.outvars],
            [read(senv, v) for v in jaxpr.outvars],
            [origin(v) for v in jaxpr.outvars],
        )

    def _kernel_in_float64(self, eqn, sin):
        """A Pallas kernel's float64 run, or None (not a kernel, or one that cannot be
        rebuilt in float64: then it runs in its working dtype and is listed unchecked)."""
        try:
            return kernel_in_float64(eqn, sin)  # None for what is not a Pallas call
        except Exception as error:  # a kernel feature the float64 rebuild does not carry
            self.kernel_errors[id(eqn)] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            return None

    def check(self, eqn, win, wout, sout, sin, merged):
        """Record statistics for one equation; return the origins of its outputs.

        An origin is the tuple of record ids whose error reaches a value; () means the
        shadow equals the working value exactly, UNRECORDED marks error nobody reported.
        """
        lossy = tuple(sorted({*merged, UNRECORDED}))
        name = eqn.primitive.name
        if name in self.exclude or (self.include is not None and name not in self.include):
            return [lossy] * len(wout)  # not selected: computed both ways, not recorded
        site = (eqn.primitive, self._where(eqn)[0])
        self.checks_per_site[site] += 1
        if self.checks_per_site[site] > self.max_checks:
            self.skipped += len(wout)
            return [lossy] * len(wout)
        float_in_dtypes = [v.aval.dtype for v in eqn.invars if not is_key(v.aval) and is_inexact(v.aval.dtype)]
        float_in = bool(float_in_dtypes)
        # On exact inputs the local reference IS the shadow: save the second float64 op.
        local = sout if not merged else None
        origins = []
        for k, (v, w, s) in enumerate(zip(eqn.outvars, wout, sout)):
            aval = v.aval
            size = int(np.prod(aval.shape))
            if size == 0 or size > self.max_numel:
                self.skipped += 1
                origins.append(lossy)
                continue
            if is_inexact(aval.dtype):
                if local is None and products_in_float32(eqn):
                    local = [OWN_REFERENCE] * len(wout)  # saves a matmul per record
                elif local is None:
                    local = apply_wide(eqn, [widen(x) for x in win], working=True)
                # Like assert_close on mixed dtypes, the loosest of inputs and output: an
                # upcast from float16 must not be held to float32's tolerance.
                tol = tolerance(aval.dtype, *float_in_dtypes, rtol=_for_op(self.rtol, name), atol=_for_op(self.atol, name),
                                rounding_floor=True)
                spread = _reduction_spread(eqn, [widen(x) for x in win]) if len(eqn.outvars) == 1 else None
                vec = _float_stats(w, s, None if local is sout else local[k], tol, self.common, spread) + [0]
                origins.append((self._add(eqn, k, merged, *tol, vec),))
            else:
                if float_in or eqn.primitive in CONTROL_FLOW:
                    flips = jnp.sum(w != s)
                    self._add(eqn, k, merged, 0.0, 0.0, [0] * (_N_STATS - 1) + [flips])
                    origins.append(lossy)
                else:
                    origins.append(merged)
        if eqn.primitive is P.cond_p:
            # The branch index itself: did float64 take the other branch?
            self._add(eqn, -1, merged, 0.0, 0.0, [0] * (_N_STATS - 1) + [jnp.sum(win[0] != sin[0])])
        return origins

    def _scan(self, eqn, win, sin, oin):
        """Run the scan with an instrumented body: working and float64 values side by side,
        each body op's statistics returned per iteration and combined afterwards."""
        p = eqn.params
        body = p["jaxpr"]
        nc, nk = p["num_consts"], p["num_carry"]
        merged = _merged(oin)
        one_step = lambda xs: [*xs[:nc + nk], *(jax.ShapeDtypeStruct(x.shape[1:], x.dtype) for x in xs[nc + nk:])]  # noqa: E731
        origins, _ = self._body_origins(body, one_step(win), one_step(sin), merged, nc, nk)
        child = self.child()
        first = len(self.sites)
        body_origins = []

        def step(carry, x):
            child.stats = []
            wc, sc = carry
            wx, sx = x
            w_out, s_out, o_out = child.eval(body.jaxpr, body.consts, [*win[:nc], *wc, *wx], [*sin[:nc], *sc, *sx], origins)
            body_origins[:] = o_out
            return (w_out[:nk], s_out[:nk]), (w_out[nk:], s_out[nk:], child.body_stats())

        (w_carry, s_carry), (w_ys, s_ys, per_step) = jax.lax.scan(
            step, (win[nc:nc + nk], sin[nc:nc + nk]), (win[nc + nk:], sin[nc + nk:]),
            length=p["length"], reverse=p["reverse"])
        self.stats.extend(_over_iterations(per_step))
        return self._loop_outputs(eqn, [*w_carry, *w_ys], [*s_carry, *s_ys], merged, first, body_origins)

    def _while(self, eqn, win, sin, oin):
        """Run the while loop with an instrumented body; its statistics are carried (the
        trip count is not known) and the loop follows the working values' condition."""
        p = eqn.params
        cond, body = p["cond_jaxpr"], p["body_jaxpr"]
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        merged = _merged(oin)
        w_init, s_init = win[nc + nb:], sin[nc + nb:]
        body_w, body_s = win[nc:nc + nb], sin[nc:nc + nb]
        origins, count = self._body_origins(body, [*body_w, *w_init], [*body_s, *s_init], merged, nb, len(w_init))
        child = self.child()
        first = len(self.sites)
        body_origins = []

        def keep_going(carry):
            return jcore.jaxpr_as_fun(cond)(*win[:nc], *carry[0])[0]

        def step(carry):
            wc, sc, stats = carry
            child.stats = []
            w_out, s_out, o_out = child.eval(body.jaxpr, body.consts, [*body_w, *wc], [*body_s, *sc], origins)
            body_origins[:] = o_out
            return w_out, s_out, _over_iterations(jnp.stack([stats, child.body_stats()]))

        w_out, s_out, stats = jax.lax.while_loop(keep_going, step, (w_init, s_init, jnp.zeros((count, _N_STATS), jnp.float64)))
        self.stats.extend(stats)
        return self._loop_outputs(eqn, w_out, s_out, merged, first, body_origins)

    def _probe(self, body, win, sin, origins) -> tuple[int, list]:
        """Trace a body once with a probe (which records into copies): (how many records it
        makes, the origins of its outputs)."""
        probe = self.child(probe=True)
        found = []

        def traced(w, s):
            w_out, s_out, o_out = probe.eval(body.jaxpr, body.consts, w, s, origins)
            found[:] = o_out
            return w_out, s_out

        jax.eval_shape(traced, win, sin)
        return len(probe.stats), found

    def _body_origins(self, body, win, sin, merged, nconsts, ncarry) -> tuple[list, int]:
        """(origins of a loop body's inputs, how many records the body makes). An input's
        origins are what the loop received, marked lossy, and for the carry also the records
        that produce it in the body (last iteration's error comes back)."""
        lossy = _lossy(merged)
        count, found = self._probe(body, win, sin, [lossy] * len(win))
        origins = [lossy] * len(body.jaxpr.invars)
        for k in range(min(ncarry, len(found))):
            origins[nconsts + k] = tuple(sorted({*lossy, *found[k]}))
        return origins, count

    def _cond(self, eqn, win, sin, oin):
        """Run the branch the working index picks, instrumented; each branch's records have
        their own rows (zero when another branch ran). A float64 index that differs is a flip."""
        branches = eqn.params["branches"]
        merged = _merged(oin)
        operands_w, operands_s = win[1:], sin[1:]
        origins = [_lossy(merged)] * len(operands_w)
        counts = [self._probe(branch, operands_w, operands_s, origins)[0] for branch in branches]
        child = self.child()
        first = len(self.sites)
        total = sum(counts)
        body_origins = [()] * len(eqn.outvars)  # per output, over every branch

        def run(k):
            def branch_fn(w, s):
                child.stats = []
                w_out, s_out, o_out = child.eval(branches[k].jaxpr, branches[k].consts, w, s, origins)
                body_origins[:] = [tuple(sorted({*a, *b})) for a, b in zip(body_origins, o_out)]
                offset = sum(counts[:k])
                stats = jnp.zeros((total, _N_STATS), jnp.float64).at[offset:offset + counts[k]].set(child.body_stats())
                return w_out, s_out, stats
            return branch_fn

        w_out, s_out, stats = jax.lax.switch(win[0], [run(k) for k in range(len(branches))], operands_w, operands_s)
        self.stats.extend(stats)
        # the branch index itself: did float64 take the other branch?
        self._add(eqn, -1, merged, 0.0, 0.0, [0] * (_N_STATS - 1) + [jnp.sum(win[0] != sin[0])])
        return self._loop_outputs(eqn, w_out, s_out, merged, first, body_origins)

    def _loop_outputs(self, eqn, wout, sout, merged, first, body_origins):
        """The loop's outputs carry the error of the body's records; integer outputs (trip
        counters, indices) are compared with float64's for flips."""
        recorded = tuple(range(first, len(self.sites)))
        origins = []
        for k, (v, w, s) in enumerate(zip(eqn.outvars, wout, sout)):
            inner = body_origins[k] if k < len(body_origins) else ()
            origins.append(tuple(sorted({*merged, *inner, *recorded})) if recorded else merged)
            if not is_inexact(v.aval.dtype) and not is_key(v.aval):
                self._add(eqn, k, merged, 0.0, 0.0, [0] * (_N_STATS - 1) + [jnp.sum(w != s)])
        return list(wout), list(sout), origins

    def _where(self, eqn) -> tuple[str, str]:
        """(file:line, function) of an equation: its own user frame, or else the user's line
        that called the library function it belongs to, and that function ("in jnp.var")."""
        source, function = _source(eqn)
        if source or self.context is None:
            return source, function
        return self.context[0], f"in {self.context[1]}"

    def _add(self, eqn, output, inputs, rtol, atol, vec):
        self.sites.append(_Site(eqn, *self._where(eqn), output, inputs, rtol, atol))
        self.stats.append(jnp.stack([jnp.asarray(x, jnp.float64) for x in vec]))
        return len(self.sites) - 1


def _for_op(value, primitive: str):
    """A tolerance given per primitive (`rtol={"dot_general": 1e-4}`): this op's entry, else
    the value as given (a number, or a dict by dtype)."""
    if isinstance(value, dict) and primitive in value:
        return value[primitive]
    return value


def _merged(origins) -> tuple:
    """The records whose error reaches any of these values."""
    return tuple(sorted(set().union(*origins)))


def _lossy(origins: tuple) -> tuple:
    """Origins of a value inside a loop or branch body: a carry's working value may differ
    from float64 (from an earlier iteration), so each op there is compared with float64 on
    its own working inputs too, not assumed exact."""
    return tuple(sorted({*origins, UNRECORDED}))


def _over_iterations(per_step):
    """Statistics of one op over iterations (axis 0): the largest differences, ratios and
    scale; mismatched elements and flips summed."""
    summed = np.zeros(_N_STATS, bool)
    summed[[5, 8]] = True  # the count out of tolerance; flips
    return jnp.where(summed, jnp.sum(per_step, axis=0), jnp.max(per_step, axis=0, initial=0.0))


def _common_tolerance(closed, rtol, atol):
    """One tolerance for the whole program: the loosest default among its float dtypes.

    Scores and amplification are measured in it, so that error coming from a bfloat16
    op into a float32 one is not counted again in float32's far tighter units.
    """
    avals = [v.aval for v in closed.jaxpr.invars]
    todo = [closed.jaxpr]
    while todo:
        jaxpr = todo.pop()
        avals += [v.aval for eqn in jaxpr.eqns for v in eqn.outvars]
        todo += jcore.subjaxprs(jaxpr)
    floats = [a.dtype for a in avals if not is_key(a) and is_inexact(a.dtype)]
    return tolerance(*floats or [np.float32], rtol=rtol, atol=atol)


def _finite_or_inf(row):
    """Statistics as floats; a NaN difference (the working value went NaN, float64 did
    not) is an infinite error, and infinities stay infinite (not float64's max)."""
    row = np.asarray(row, np.float64)
    return np.where(np.isnan(row), np.inf, row).tolist()


def _ratio(num, den):
    """num / den where inf / inf (an infinite error passed on) counts as 1."""
    return 1.0 if num == den == np.inf else num / den


def _records_from_stats(sites, stats, common):
    records = []
    rows = [_finite_or_inf(row) for row in stats]
    # each record's tolerance ratio against the shadow, in common units, and its normwise
    # accumulated error: read before the records that use them, since a loop body's op
    # receives, through the carry, the error of ops written after it
    common_ratios = [row[7] for row in rows]
    accumulated = [row[2] / max(row[4], _TINY) if row[2] else 0.0 for row in rows]
    for i, (site, row) in enumerate(zip(sites, rows)):
        eqn = site.eqn
        aval = eqn.invars[0].aval if site.output < 0 else eqn.outvars[site.output].aval
        rec = Record(
            index=i,
            primitive=eqn.primitive.name,
            source=site.source,
            function=site.function,
            dtype=str(aval.dtype),
            shape=tuple(aval.shape),
            rtol=site.rtol,
            atol=site.atol,
        )
        l_diff, l_ratio, a_diff, a_ratio, scale, a_bad, l_common, a_common, flips = row
        rec.flips = int(flips)
        if not is_inexact(aval.dtype):
            rec.score = float(rec.flips)
            rec.failed = rec.flips > 0
            records.append(rec)
            continue
        rec.local_error = l_diff / max(scale, _TINY) if l_diff else 0.0
        rec.accumulated_error = a_diff / max(scale, _TINY) if a_diff else 0.0
        rec.local_tolerance_ratio, rec.tolerance_ratio, rec.mismatches = l_ratio, a_ratio, int(a_bad)
        rec.max_abs_error = a_diff
        # Blame is measured in one unit for the whole program: an exact float32 sum of
        # bfloat16 values neither amplifies nor adds error. An op amplifies when it makes
        # the error larger both elementwise (in the common tolerance) and normwise (relative
        # to the tensor's size): a sum with outputs near zero, or x - max(x) in a softmax,
        # has a large elementwise relative error there, but no more error than came in.
        inputs = [j for j in site.inputs if j != UNRECORDED and j != i]
        ratio_in = max((common_ratios[j] for j in inputs), default=0.0)
        error_in = max((accumulated[j] for j in inputs), default=0.0)
        eps = float(finfo(aval.dtype).eps)  # one rounding: the least error "in"
        rec.amplification = min(
            _ratio(a_common, max(ratio_in, eps / max(common[0], _TINY))),
            _ratio(rec.accumulated_error, max(error_in, eps / 2)),
        )
        # The error it introduces: its own rounding, or what its amplification added.
        added = a_common - ratio_in if rec.amplification > AMPLIFICATION_LIMIT else 0.0
        rec.score = max(l_common, added)
        # Fail an op for its own rounding beyond tolerance, or for pushing the program's
        # error beyond tolerance by amplifying what came in more than tenfold; a
        # well-conditioned op (x**3 triples relative error) passing an error on is not it.
        rec.failed = l_ratio > 1 or (a_ratio > 1 and rec.amplification > AMPLIFICATION_LIMIT)
        records.append(rec)
    return records


# Compiled instrumented programs, keyed by function and input types (bounded, oldest evicted).
_CACHE: "collections.OrderedDict" = collections.OrderedDict()
_CACHE_SIZE = 32


def _compile(inputs, rtol, atol, max_checks, max_numel, include=None, exclude=frozenset()):
    closed, out_shape = trace("check_ops", inputs.fn, inputs.arrays, inputs.scalars)
    inst = _Instrumenter(rtol, atol, _common_tolerance(closed, rtol, atol), max_checks, max_numel, include, exclude)

    def run(consts, xs):
        outs, _, _ = inst.eval(closed.jaxpr, consts, xs, [widen(x) for x in xs], [()] * len(xs))
        stats = jnp.stack(inst.stats) if inst.stats else jnp.zeros((0, _N_STATS), jnp.float64)
        return outs, stats

    with jax.enable_x64(True):
        compiled = jax.jit(run).lower(closed.consts, inputs.arrays).compile()
    return compiled, closed.consts, inst, jax.tree_util.tree_structure(out_shape)


def _cache_key(fn, leaves, *settings):
    avals = tuple((x.shape, str(x.dtype), getattr(x, "weak_type", False)) for x in leaves)
    # tolerances by dtype ({jnp.bfloat16: 1e-2}) as sorted pairs
    settings = tuple(tuple(sorted((str(k), v) for k, v in s.items())) if isinstance(s, dict) else s for s in settings)
    key = (fn, avals, settings)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _run(inputs, rtol, atol, max_checks, max_numel, include=None, exclude=frozenset()):
    key = _cache_key(inputs.fn, inputs.arrays, rtol, atol, max_checks, max_numel, include, exclude)
    entry = _CACHE.get(key) if key is not None else None
    if entry is None:
        entry = _compile(inputs, rtol, atol, max_checks, max_numel, include, exclude)
        if key is not None:
            _CACHE[key] = entry
            if len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    compiled, consts, inst, out_tree = entry
    with jax.enable_x64(True):
        outs, stats = compiled(consts, inputs.arrays)
    records = _records_from_stats(inst.sites, np.asarray(stats), inst.common)
    report = OpsReport(records, jax.tree_util.tree_unflatten(out_tree, outs), inst.skipped, inputs.fn.__name__, inst.unchecked)
    report.input_shapes = [f"{x.dtype}{list(x.shape)}" for x in inputs.arrays]
    return report


class _Log:
    """Appends failures as JSON lines; with log_once, each (primitive, source) site once."""

    def __init__(self, path, log_once):
        self.path, self.log_once = path, log_once
        self.logged = set()

    def write(self, report):
        if self.path is None:
            return
        lines = []
        for rec in report.failures:
            site = (rec.primitive, rec.source)
            if self.log_once and site in self.logged:
                continue
            self.logged.add(site)
            entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "checked_function": report.fn_name,
                     "input_shapes": report.input_shapes, **rec.to_json()}
            lines.append(json.dumps(entry, allow_nan=False) + "\n")
        if lines:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.writelines(lines)


def check_ops(
    fn, *args, static_argnums=(), rtol=None, atol=None, max_checks=10, log_once=True, path=None, max_numel=1 << 20,
    include=None, exclude=(), _log=None,
):
    """Check every equation of ``fn(*args)`` against float64; return an OpsReport.

    Arguments at ``static_argnums`` are held fixed (as ``jax.jit``'s static arguments); the
    others must be arrays, numbers or pytrees of them.

    Options follow FlagGems' precision checker: ``rtol``/``atol`` override the per-dtype
    defaults (pass both or neither); at most ``max_checks`` equations per (primitive,
    source line) site are checked, later ones are skipped; outputs with more than
    ``max_numel`` elements are skipped; failures are appended as JSON lines to ``path``
    (with the input shapes), each site once when ``log_once``; ``include`` (only these
    primitives, by name: ``["dot_general", "exp"]``, FlagGems' ``only_enable``) and
    ``exclude`` choose the ops recorded (the others still run both ways). The instrumented
    program is compiled once per function and input types and cached.
    """
    if (rtol is None) != (atol is None):
        raise ValueError("check_ops: pass both rtol and atol, or neither")
    include = None if include is None else frozenset(include)
    report = _run(split("check_ops", fn, args, static_argnums), rtol, atol, max_checks, max_numel, include, frozenset(exclude))
    (_log or _Log(path, log_once)).write(report)
    return report


__all__ = ["OpsReport", "Record", "check_ops"]
