"""Re-evaluate a jaxpr in float64: the "shadow" of a computation.

Every floating value becomes float64 (complex becomes complex128), dtype parameters
such as ``convert_element_type(new_dtype=float32)`` or ``preferred_element_type`` are
widened too, so a function that casts to float32 inside is still computed in float64.
Nested jit / custom_jvp / custom_vjp / remat calls are inlined; scan, while and cond
bodies are re-traced in float64. All of this must run under ``jax.enable_x64(True)``.
"""

import jax
import jax.extend.core as jcore
import jax.extend.core.primitives as P
import numpy as np

from jaxguard.precision._tolerance import is_inexact

# Calls whose body we evaluate inline (forward values only; custom rules do not matter).
INLINE = frozenset({P.jit_p, P.closed_call_p, P.call_p, P.remat_p, P.custom_jvp_call_p, P.custom_vjp_call_p})

# Ops that look at bits, not values: they run in the working dtype.
BIT_OPS = frozenset(
    {
        P.bitcast_convert_type_p,
        P.nextafter_p,
        P.and_p,
        P.or_p,
        P.xor_p,
        P.not_p,
        P.shift_left_p,
        P.shift_right_logical_p,
        P.shift_right_arithmetic_p,
        P.population_count_p,
        P.clz_p,
    }
)


# Ops whose body the shadow cannot widen: a Pallas kernel (its Refs have the working dtype),
# a host callback (it returns what its declared shapes say). They run in the working dtype
# and their outputs are widened: the float64 program resyncs there, and check_ops lists
# them as not checked; except a Pallas kernel it can rebuild on float64 Refs (below).
OPAQUE = frozenset({"pallas_call", "pure_callback", "io_callback", "callback", "mosaic_gpu_call", "tpu_custom_call"})


def is_opaque(eqn) -> bool:
    return eqn.primitive.name in OPAQUE


def kernel_in_float64(eqn, ins):
    """A Pallas kernel run in float64: its own body, grid and blocks on float64 Refs, in
    interpret mode (how a kernel is checked against a float64 run of itself). None for
    what is not a Pallas call or uses what this cannot rebuild: scalar prefetch, scratch
    buffers, dynamic grid bounds, aliased outputs, a device mesh, PRNG keys."""
    if eqn.primitive.name != "pallas_call":
        return None
    params = eqn.params
    grid = params["grid_mapping"]
    kernel = params["jaxpr"]
    if (grid.num_index_operands or grid.num_scratch_operands or grid.num_dynamic_grid_bounds
            or params.get("input_output_aliases") or params.get("mesh") is not None or kernel.constvars
            or any(is_key(v.aval) for v in eqn.invars)):
        return None
    from jax.experimental import pallas as pl

    specs = [mapping.to_block_spec() for mapping in grid.block_mappings]

    def body(*refs):  # the kernel's equations on float64 Refs (a kernel returns nothing)
        eval_wide(kernel, (), refs)

    outs = pl.pallas_call(
        body,
        out_shape=[jax.ShapeDtypeStruct(v.aval.shape, wide_dtype(v.aval.dtype)) for v in eqn.outvars],
        grid=grid.grid, in_specs=specs[:grid.num_inputs], out_specs=specs[grid.num_inputs:], interpret=True,
    )(*ins)
    return list(outs)


# Products of 16-bit floats: float32 holds every product exactly and sums K of them with an
# error near sqrt(K) * 6e-8, far below the 16-bit tolerance such an op is judged by. These
# references are made in float32 (at HIGHEST precision: not TF32), which on CPU costs half
# a float64 matmul: the float64 matmuls were most of check_ops' time on bf16 programs.
_PRODUCTS = frozenset({P.dot_general_p, P.conv_general_dilated_p})
_HIGHEST = (jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST)


def _sixteen_bit_product(eqn) -> bool:
    if eqn.primitive not in _PRODUCTS:
        return False
    dtypes = [np.dtype(v.aval.dtype) for v in eqn.invars]
    return all(is_inexact(d) and not np.issubdtype(d, np.complexfloating) and d.itemsize <= 2 for d in dtypes)


def products_in_float32(eqn) -> bool:
    """A product of 16-bit floats with float32 (or wider) outputs, as a bf16 matmul with
    ``preferred_element_type=float32``: run on its working inputs it already computes what
    its float64 rebuild would (`_apply_in_float32`), so its output is its own reference."""
    return _sixteen_bit_product(eqn) and all(np.dtype(v.aval.dtype).itemsize >= 4 for v in eqn.outvars)


def _apply_in_float32(eqn, ins, working: bool):
    # The working values (`working`) are exact in their own 16-bit dtype: multiplied as
    # such and summed in float32 they give the same number as in float32, and on CPU a
    # bf16 matmul with float32 accumulation runs three times faster than a float32 one.
    dtypes = [v.aval.dtype for v in eqn.invars] if working else [np.float32] * len(ins)
    narrow = [jax.numpy.asarray(x).astype(dtype) for x, dtype in zip(ins, dtypes)]
    params = dict(eqn.params, preferred_element_type=np.dtype(np.float32), precision=_HIGHEST)
    return [widen(o) for o in bind(eqn, narrow, params)]


def wide_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return np.dtype(np.complex128)
    if is_inexact(dtype):
        return np.dtype(np.float64)
    return dtype


def is_key(aval) -> bool:
    dtype = getattr(aval, "dtype", None)
    return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.extended)


def widen(x):
    """A float value as float64; anything else unchanged."""
    if is_key(x):
        return x
    target = wide_dtype(x.dtype)
    return x if x.dtype == target else jax.numpy.asarray(x).astype(target)


def inner_jaxpr(eqn):
    """(jaxpr, consts) of an inlinable call, else None."""
    if eqn.primitive not in INLINE:
        return None
    body = eqn.params.get("jaxpr", eqn.params.get("call_jaxpr"))
    if isinstance(body, jcore.ClosedJaxpr):
        return body.jaxpr, body.consts
    return body, ()


def uses_keys_or_bits(eqn) -> bool:
    return eqn.primitive in BIT_OPS or any(is_key(v.aval) for v in (*eqn.invars, *eqn.outvars))


def widen_closed_jaxpr(closed):
    """Re-trace a (scan/while/cond) body so that it computes in float64."""
    avals = [
        jax.ShapeDtypeStruct(a.shape, wide_dtype(a.dtype), weak_type=getattr(a, "weak_type", False))
        if not is_key(a)
        else a
        for a in closed.in_avals
    ]
    return jax.make_jaxpr(lambda *xs: eval_wide(closed.jaxpr, closed.consts, xs))(*avals)


def widen_param(value):
    """A parameter for the float64 op: dtypes and (closed or open) jaxprs widened."""
    if isinstance(value, np.dtype):
        return wide_dtype(value)
    if isinstance(value, jcore.ClosedJaxpr):
        return widen_closed_jaxpr(value)
    if isinstance(value, jcore.Jaxpr) and not value.constvars:  # e.g. scatter's update_jaxpr
        return widen_closed_jaxpr(jcore.ClosedJaxpr(value, ())).jaxpr
    if isinstance(value, tuple) and any(isinstance(v, (jcore.ClosedJaxpr, jcore.Jaxpr)) for v in value):
        # cond's branches; linear_solve's jaxprs is a namedtuple that may hold None.
        widened = [widen_param(v) for v in value]
        return type(value)(*widened) if hasattr(value, "_fields") else tuple(widened)
    return value


def widen_params(params):
    return {name: widen_param(value) for name, value in params.items()}


def bind(eqn, ins, params=None):
    outs = eqn.primitive.bind(*ins, **(eqn.params if params is None else params))
    return list(outs) if eqn.primitive.multiple_results else [outs]


def _over_refs(eqn) -> bool:
    from jax.ref import AbstractRef

    return eqn.primitive in (P.cond_p, P.while_p, P.scan_p) and any(isinstance(v.aval, AbstractRef) for v in eqn.invars)


def _control_flow_over_refs(eqn, ins):
    """`pl.when`, a `fori_loop` in a Pallas kernel: control flow whose operands include
    Refs. Their bodies cannot be re-traced on array types; run them as the same control
    flow over float64 Refs, each body evaluated with its Refs closed over."""
    p = eqn.params
    if eqn.primitive is P.cond_p:
        index, *operands = ins
        branches = [lambda b=b: tuple(eval_wide(b.jaxpr, b.consts, operands)) for b in p["branches"]]
        return list(jax.lax.switch(index, branches))
    if eqn.primitive is P.while_p:
        nc, nb = p["cond_nconsts"], p["body_nconsts"]
        cond, body = p["cond_jaxpr"], p["body_jaxpr"]
        cond_consts, body_consts, init = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
        return list(jax.lax.while_loop(
            lambda carry: eval_wide(cond.jaxpr, cond.consts, [*cond_consts, *carry])[0],
            lambda carry: tuple(eval_wide(body.jaxpr, body.consts, [*body_consts, *carry])),
            tuple(init),
        ))
    nc, nk, body = p["num_consts"], p["num_carry"], p["jaxpr"]
    consts, carry, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]

    def step(carry, x):
        out = eval_wide(body.jaxpr, body.consts, [*consts, *carry, *x])
        return tuple(out[:nk]), tuple(out[nk:])

    carry, ys = jax.lax.scan(step, tuple(carry), tuple(xs), length=p["length"], reverse=p["reverse"])
    return [*carry, *ys]


def apply_wide(eqn, ins, working: bool = False):
    """One equation on float64 inputs, giving float64 outputs (a product of 16-bit floats is
    computed in float32, which is exact enough for it). `working`: the inputs are the
    program's working values, widened (exactly representable in the op's own dtypes)."""
    inner = inner_jaxpr(eqn)
    if inner is not None:
        return eval_wide(inner[0], inner[1], ins)
    try:
        kernel = kernel_in_float64(eqn, ins)
    except Exception:  # a kernel feature the float64 rebuild does not carry: run it as written
        kernel = None
    if kernel is not None:
        return kernel
    if uses_keys_or_bits(eqn) or is_opaque(eqn):
        # Bits of a float64 mean something else, and an opaque kernel or callback takes
        # only its declared dtypes: do this op in the working dtype.
        narrow = [x if is_key(v.aval) else jax.numpy.asarray(x).astype(v.aval.dtype) for v, x in zip(eqn.invars, ins)]
        return [widen(o) for o in bind(eqn, narrow)]
    if _over_refs(eqn):
        return _control_flow_over_refs(eqn, ins)
    if _sixteen_bit_product(eqn):
        return _apply_in_float32(eqn, ins, working)
    if eqn.primitive is P.reduce_precision_p:
        # It emulates a narrower format; the exact value is its input.
        return [ins[0]]
    return bind(eqn, ins, widen_params(eqn.params))


def read(env, v):
    if isinstance(v, jcore.Literal):
        # Literals may be Python scalars; give them the jaxpr's dtype before widening.
        return widen(np.asarray(v.val, dtype=v.aval.dtype))
    return env[v]


def eval_wide(jaxpr, consts, args):
    """Evaluate ``jaxpr`` with every float widened to float64."""
    env = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[v] = widen(x)
    for v, x in zip(jaxpr.invars, args):
        env[v] = widen(x)
    for eqn in jaxpr.eqns:
        outs = apply_wide(eqn, [read(env, v) for v in eqn.invars])
        for v, x in zip(eqn.outvars, outs):
            env[v] = x
    return [read(env, v) for v in jaxpr.outvars]
