"""check_ops on real computations: cancellation, bf16 matmul, branch flips, nesting, options."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import line_of
from jax import lax

from jaxguard.precision import _ops, check_ops

RNG = np.random.default_rng(0)
X = jnp.asarray(RNG.standard_normal(100), jnp.float32)


def cancellation(x):
    y = x + 1e8  # SHIFT
    z = y - 1e8  # CANCEL
    return jnp.sin(z) * 2.0


def test_cancellation_is_ranked_worst_at_its_line():
    report = check_ops(cancellation, X)
    worst = report.worst(1)[0]
    assert worst.primitive == "sub"
    assert worst.source == line_of("CANCEL")
    # Zero local error: the subtraction is exact on its float32 inputs ...
    assert worst.local_error == 0.0
    # ... but the float64 shadow shows the whole result is lost, and this op amplified it.
    assert worst.accumulated_error > 0.1
    assert worst.amplification > 1e6
    assert worst.failed and report.first_failure is worst
    # Ops downstream carry the error but did not introduce it: not failures, ranked low.
    downstream = [r for r in report.records if r.primitive in ("sin", "mul")]
    assert downstream and all(not r.failed and r.accumulated_error > 0.1 for r in downstream)
    # (a score near the op's own gain: `* 2.0` doubles absolute errors).
    assert all(r.score < 3 for r in downstream) and worst.score > 1e4
    assert "sub" in str(report) and line_of("CANCEL") in str(report)


def test_record_attributes():
    report = check_ops(cancellation, X)
    rec = next(r for r in report.records if r.primitive == "add")
    assert (rec.dtype, rec.shape) == ("float32", (100,))
    assert 0 < rec.local_error < 1e-7  # one float32 rounding of values near 1e8
    assert rec.source == line_of("SHIFT")
    assert not rec.failed


def test_outputs_are_the_program_as_written():
    # XLA simplifies (x + 1e8) - 1e8 to x under jit; check_ops reports the ops as written.
    report = check_ops(cancellation, X)
    np.testing.assert_array_equal(report.outputs, np.zeros(100, np.float32))


def bf16_matmul(a, b):
    return a.astype(jnp.bfloat16) @ b.astype(jnp.bfloat16)  # BF16_MATMUL


def test_bf16_matmul_is_judged_with_bf16_tolerances():
    a = jnp.asarray(RNG.standard_normal((64, 256)), jnp.float32)
    b = jnp.asarray(RNG.standard_normal((256, 64)), jnp.float32)
    report = check_ops(bf16_matmul, a, b)
    dot = next(r for r in report.records if r.primitive == "dot_general")
    assert (dot.dtype, dot.rtol, dot.atol) == ("bfloat16", 1.6e-2, 1e-5)
    assert dot.source == line_of("BF16_MATMUL")
    # Outputs near zero are far from float64 relative to themselves (a 256-term sum with
    # mixed signs), but a sum is judged against what it adds up (sqrt(K) |a| @ |b|): the
    # bits were lost by rounding to bfloat16 (the casts, the product), each within bf16's
    # tolerance; the sum adds no error relative to its size: no failure.
    assert dot.tolerance_ratio < 1 and dot.local_tolerance_ratio < 1 and dot.amplification < 2
    assert report.passed and dot.accumulated_error < 1e-2
    casts = [r for r in report.records if r.primitive == "convert_element_type"]
    assert len(casts) == 2 and all(0.1 < r.score < 1 for r in casts)
    # The same matmul in float32 is about 1e4 times closer to float64, and passes float32's
    # tolerance as it is
    f32 = check_ops(lambda a, b: a @ b, a, b)
    assert f32.records[0].local_error < dot.local_error * 1e-3
    assert f32.passed


def test_a_product_of_16_bit_floats_has_a_float32_reference_as_good_as_float64():
    # The references of a bf16 (or f16) matmul are made in float32: every product is exact
    # there and the sum's rounding is far below the 16-bit tolerance. Here they agree with
    # float64 to float32 precision (a K-term float32 sum: about sqrt(K) float32 ulps, how
    # the CPU orders it decides the rest), and a matmul with float32 operands keeps float64.
    from jaxguard.precision import _shadow

    summed = 4096 ** 0.5 * np.finfo(np.float32).eps  # 7.6e-6, a thousandth of bf16's eps

    a = jnp.asarray(RNG.standard_normal((32, 4096)), jnp.bfloat16)
    b = jnp.asarray(RNG.standard_normal((4096, 16)), jnp.bfloat16)
    for lhs, rhs, wide in [(a, b, False), (a.astype(jnp.float16), b.astype(jnp.float16), False), (a.astype(jnp.float32), b, True)]:
        (eqn,) = jax.make_jaxpr(lambda x, y: jnp.matmul(x, y, preferred_element_type=jnp.float32))(lhs, rhs).jaxpr.eqns
        with jax.enable_x64(True):
            (got,) = _shadow.apply_wide(eqn, [_shadow.widen(lhs), _shadow.widen(rhs)])
            exact = np.asarray(lhs, np.float64) @ np.asarray(rhs, np.float64)
            assert got.dtype == jnp.float64
            error = np.max(np.abs(np.asarray(got) - exact)) / np.max(np.abs(exact))
            assert error < (1e-12 if wide else summed)
            assert wide or error > 0  # float32 really was used
            # the working values, multiplied in their own 16-bit dtype with float32 sums
            # (three times faster on CPU): as close to float64
            (fast,) = _shadow.apply_wide(eqn, [_shadow.widen(lhs), _shadow.widen(rhs)], working=True)
            assert np.max(np.abs(np.asarray(fast) - exact)) / np.max(np.abs(exact)) < (1e-12 if wide else summed)


def test_a_16_bit_matmul_summed_in_float32_is_its_own_local_reference():
    # bf16 operands with float32 sums already compute what the float32 reference would:
    # no local error, no second matmul; with bf16 outputs the output's rounding is measured.
    a = jnp.asarray(RNG.standard_normal((32, 512)), jnp.bfloat16)
    b = jnp.asarray(RNG.standard_normal((512, 16)), jnp.bfloat16)
    # (x * 3 rounds in bf16, so the matmul's inputs carry error and its local reference
    # is not the shadow)
    wide = check_ops(lambda x, y: jnp.matmul(x * 3, y, preferred_element_type=jnp.float32), a, b)
    narrow = check_ops(lambda x, y: jnp.matmul(x * 3, y), a, b)
    assert [r.primitive for r in wide.records] == [r.primitive for r in narrow.records] == ["mul", "dot_general"]
    assert wide.records[1].local_error == 0 and wide.records[1].accumulated_error > 1e-4 and wide.passed
    assert 1e-4 < narrow.records[1].local_error < 1e-2 and narrow.passed


def branchy(a, b):
    y = (a + b) - b
    return lax.cond(y > 0.5, lambda: 1.0, lambda: -1.0)  # BRANCH


def test_branch_flip_is_reported_with_its_line():
    report = check_ops(branchy, jnp.float32(1.0), jnp.float32(1e8))
    flips = report.flips
    assert {r.primitive for r in flips} == {"gt", "cond"}
    assert all(r.source == line_of("BRANCH") and r.failed for r in flips)
    assert f"branch/argmax flip: cond at {line_of('BRANCH')}" in str(report)
    # float32 takes the -1 branch where float64 takes +1.
    assert float(report.outputs) == -1.0


def test_argmax_change_is_reported():
    def pick(x):
        return jnp.argmax(x + 1e8)  # ARGMAX

    x = jnp.asarray([0.0, 3.0, 1.0, 2.0], jnp.float32)
    report = check_ops(pick, x)
    rec = next(r for r in report.records if r.primitive == "argmax")
    assert rec.flips == 1 and rec.failed and rec.source == line_of("ARGMAX")


def test_no_flip_when_float32_agrees():
    report = check_ops(lambda x: jnp.where(x > 0, x, 0.0), X)
    assert report.passed and not report.flips


@jax.custom_jvp
def softplus(x):
    return jnp.log1p(jnp.exp(x))  # CUSTOM_JVP


softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))


@jax.custom_vjp
def scaled(x):
    return x * 3.0  # CUSTOM_VJP


scaled.defvjp(lambda x: (scaled(x), None), lambda _, g: (3.0 * g,))


@jax.jit
def inner(x):
    return (x + 1e8) - 1e8  # NESTED_JIT


def nested(x):
    y = softplus(x) + scaled(x)
    y = y + jax.checkpoint(lambda v: jnp.tanh(v) * 2.0)(x)  # REMAT
    return inner(y)


def test_recurses_into_jit_custom_rules_and_remat():
    report = check_ops(nested, X)
    sources = {r.source for r in report.records}
    for marker in ("CUSTOM_JVP", "CUSTOM_VJP", "REMAT", "NESTED_JIT"):
        assert line_of(marker) in sources, marker
    worst = report.worst(1)[0]
    assert (worst.primitive, worst.source) == ("sub", line_of("NESTED_JIT"))


def test_scan_and_while_bodies_are_checked_at_their_own_lines():
    def loops(x):
        def step(c, _):
            return c * 1.0001 + 1e-4, None  # SCAN_BODY

        c, _ = lax.scan(step, x, None, length=200)
        n, _ = lax.while_loop(lambda s: s[1] < 1e3, lambda s: (s[0] + 1, s[1] * 1.1), (0, c[0] + 2.0))  # WHILE
        return c, n

    report = check_ops(loops, X)
    body = [r for r in report.records if r.source == line_of("SCAN_BODY")]
    assert sorted(r.primitive for r in body) == ["add", "mul"]
    # 200 float32 multiply-adds drift from float64, but within float32's tolerance
    assert all(0 < r.accumulated_error < 1e-4 for r in body) and report.passed
    assert {r.primitive for r in report.records if r.source == line_of("WHILE")} >= {"mul", "while"}


def test_a_cancellation_inside_a_loop_body_is_found_at_its_line():
    # under jit XLA rewrites (h + 1e4) - 1e4 to h; op by op each iteration loses bits
    def recurrent(h0, xs):
        def body(h, x):
            h = (h + 1e4) - 1e4  # LOOP_CANCEL
            return h * 0.5 + x, h

        return lax.scan(body, h0, xs)

    report = check_ops(recurrent, X[:16], jnp.asarray(RNG.standard_normal((20, 16)), jnp.float32))
    first = report.first_failure
    assert (first.primitive, first.source) == ("sub", line_of("LOOP_CANCEL"))
    # the ops after it pass the error on, around the loop, without being blamed
    assert [r.primitive for r in report.failures] == ["sub"]

    def with_while(h):
        return lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, (c[1] + 1e4) - 1e4 + h), (0, h))[1]  # WHILE_CANCEL

    assert check_ops(with_while, X[:16]).first_failure.source == line_of("WHILE_CANCEL")


def test_random_ops_are_skipped_and_bit_ops_resync():
    def noisy(key, x):
        u = jax.random.uniform(key, x.shape)  # uses bitcast_convert_type under the hood
        return x * u

    report = check_ops(noisy, jax.random.key(0), X)
    assert report.passed
    prims = {r.primitive for r in report.records}
    assert "random_bits" not in prims and "bitcast_convert_type" not in prims
    assert "mul" in prims


def test_layout_ops_are_not_reported():
    report = check_ops(lambda x: jnp.transpose(x.reshape(10, 10))[::2] * 2.0, X)
    assert {r.primitive for r in report.records} == {"mul"}


def test_max_numel_skips_large_outputs():
    report = check_ops(lambda x: jnp.sum(x * 2.0), X, max_numel=50)
    assert [r.primitive for r in report.records] == ["reduce_sum"]
    assert report.skipped == 1


def test_max_checks_limits_checks_per_site():
    def layers(x):
        for _ in range(5):
            x = jnp.tanh(x)  # same site every time
        return x

    report = check_ops(layers, X, max_checks=2)
    assert [r.primitive for r in report.records] == ["tanh", "tanh"]
    assert report.skipped == 3


def test_failures_are_logged_as_json_lines(tmp_path):
    log = tmp_path / "precision.log"
    check_ops(cancellation, X, path=str(log))
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(entries) == 1
    assert entries[0]["primitive"] == "sub" and entries[0]["source"] == line_of("CANCEL")
    assert entries[0]["checked_function"] == "cancellation" and entries[0]["failed"]


def test_log_once_per_site(tmp_path):
    log = tmp_path / "precision.log"

    def twice(x):
        return inner(x) + inner(x * 2.0)  # two calls, one site inside `inner`

    check_ops(twice, X, path=str(log))
    assert len(log.read_text().splitlines()) == 1
    log.unlink()
    check_ops(twice, X, path=str(log), log_once=False)
    assert len(log.read_text().splitlines()) == 2


def test_explicit_tolerances():
    loose = check_ops(cancellation, X, rtol=10.0, atol=10.0)
    assert loose.passed
    with pytest.raises(ValueError):
        check_ops(cancellation, X, rtol=1.0)


def test_pytree_inputs_and_outputs():
    params = {"w": jnp.ones((3, 4)), "b": jnp.zeros(4)}
    report = check_ops(lambda p, x: {"y": x @ p["w"] + p["b"]}, params, jnp.ones((2, 3)))
    assert report.passed
    np.testing.assert_allclose(report.outputs["y"], np.full((2, 4), 3.0))


def test_compiled_program_is_cached():
    _ops._CACHE.clear()
    check_ops(cancellation, X)
    check_ops(cancellation, X + 1)
    assert len(_ops._CACHE) == 1
    check_ops(cancellation, X[:10])
    assert len(_ops._CACHE) == 2


def test_nan_and_overflow_are_failures():
    report = check_ops(lambda x: x * 1e38 * 10.0, jnp.ones(3))
    assert any(r.failed and r.primitive == "mul" for r in report.records)


def test_16_bit_nans_and_overflow_are_judged_like_wider_ones():
    # bf16 working values are compared through float32: NaN on both sides is no error,
    # a bf16 overflow that float64 does not have is one.
    x = jnp.asarray([-1.0, 2.0, 4.0], jnp.bfloat16)
    both_nan = check_ops(lambda x: jnp.log(x) * 2.0, x)
    assert both_nan.passed and all(r.tolerance_ratio < 1 for r in both_nan.records)
    overflow = check_ops(lambda x: x * 1e38 * 10.0, jnp.ones(3, jnp.bfloat16)).first_failure
    assert overflow.primitive == "mul" and overflow.tolerance_ratio == np.inf


def test_infinite_errors_are_shown_as_inf():
    report = check_ops(lambda x: jnp.sqrt(x * 1e38 * 10.0), jnp.ones(3))
    overflow = report.first_failure
    assert overflow.primitive == "mul" and overflow.index == 1
    assert overflow.max_abs_error == overflow.tolerance_ratio == overflow.local_error == np.inf
    text = str(report)
    assert "e+308" not in text and "e+26" not in text
    assert text.splitlines()[2].split()[:4] == ["inf", "inf", "inf", "inf"]
    assert "max abs error inf (overflow or NaN)" in text
    # sqrt passes the infinite error on: not amplified, not blamed.
    root = next(r for r in report.records if r.primitive == "sqrt")
    assert root.tolerance_ratio == np.inf and root.amplification == 1.0
    assert root.score == 0.0 and not root.failed


def test_the_failure_log_is_strict_json_with_infinite_errors(tmp_path):
    log = tmp_path / "failures.jsonl"
    check_ops(lambda x: jnp.sqrt(x * 1e38 * 10.0), jnp.ones(3), path=str(log))
    text = log.read_text()
    assert "Infinity" not in text and "NaN" not in text
    entry = json.loads(text.splitlines()[0], parse_constant=lambda name: pytest.fail(f"non-JSON constant {name}"))
    assert entry["primitive"] == "mul" and entry["max_abs_error"] == "inf"


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: jax.nn.softmax(x),
        lambda x: jnp.sort(x, axis=1) + lax.top_k(x, 3)[0].sum(),
        lambda x: x.at[0, :4].add(1.0),  # scatter-add carries an update jaxpr
        lambda x: jnp.linalg.solve(x[:, :8] + 8 * jnp.eye(8), x[:, 8]),  # linear_solve's jaxpr tuple
        lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (2, 2), "VALID"),
        lambda x: jax.vmap(lambda r: jnp.dot(r, r))(x),
        lambda x: jax.grad(lambda y: jnp.sum(jnp.tanh(y) ** 2))(x),
        lambda x: (jnp.argsort(x, axis=1) * 2).astype(jnp.float32) + jax.scipy.special.erf(x),
    ],
    ids=["softmax", "sort_topk", "scatter", "solve", "pool", "vmap", "grad", "int_erf"],
)
def test_common_programs_run_clean(fn):
    x = jnp.asarray(RNG.standard_normal((8, 16)), jnp.float32)
    report = check_ops(fn, x)
    assert report.records and report.passed, str(report)


def test_an_exact_upcast_adds_no_record_and_passes_its_error_on():
    # float16 -> float32 is exact: it is not held to float32's tolerance, nor recorded;
    # the error of the float16 product reaches the float32 op after it.
    report = check_ops(lambda x: (x.astype(jnp.float16) * 3).astype(jnp.float32) + 1, X)
    assert [(r.primitive, r.dtype) for r in report.records] == [
        ("convert_element_type", "float16"), ("mul", "float16"), ("add", "float32")]
    add = report.records[-1]
    assert add.accumulated_error > 1e-4 and add.tolerance_ratio > 1 and not add.failed  # passed on, not blamed
    assert report.passed


def test_a_float16_op_with_float32_output_is_judged_with_the_looser_tolerance():
    report = check_ops(lambda x: x.astype(jnp.float16).astype(jnp.float32) * 3, X)
    assert (report.records[-1].primitive, report.records[-1].dtype) == ("mul", "float32")
    assert report.passed


def test_reduce_precision_is_where_precision_is_lost():
    report = check_ops(lambda x: lax.reduce_precision(x, 5, 10) * 2.0, X)
    assert report.first_failure.primitive == "reduce_precision"


# --- mixed precision: blame is measured in one unit for the whole program ---------------------

XB = jnp.asarray(RNG.standard_normal((4, 64)), jnp.bfloat16)


def bf16_exp_f32_sum(x):
    e = jnp.exp(x)  # BF16_EXP
    return jnp.sum(e.astype(jnp.float32), -1)  # F32_SUM


def test_exact_float32_sum_of_bf16_values_is_not_blamed():
    report = check_ops(bf16_exp_f32_sum, XB)
    by_op = {r.primitive: r for r in report.records}
    exp, total = by_op["exp"], by_op["reduce_sum"]
    # The bits are lost where exp rounds to bfloat16 ...
    assert report.worst(1)[0] is exp and exp.source == line_of("BF16_EXP")
    # ... the float32 sum carries that error (far outside float32's own tolerance) but
    # neither adds to it nor amplifies it.
    assert total.tolerance_ratio > 10 and total.source == line_of("F32_SUM")
    assert total.amplification < 1 and total.score < 1e-2 * exp.score
    assert report.passed, str(report)


def bf16_attention(x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv  # bfloat16 projections
    s = jnp.einsum("td,sd->ts", q, k, preferred_element_type=jnp.float32) / 8.0  # SCORES
    p = jax.nn.softmax(s, axis=-1)  # float32 softmax
    o = jnp.einsum("ts,sd->td", p.astype(jnp.bfloat16), v, preferred_element_type=jnp.float32)  # PV
    return o.astype(jnp.bfloat16)


def test_bf16_attention_block_blames_no_float32_op():
    x, wq, wk, wv = (jnp.asarray(RNG.standard_normal(shape) / 8, jnp.bfloat16) for shape in [(128, 64)] + [(64, 64)] * 3)
    report = check_ops(bf16_attention, x * 8, wq, wk, wv)
    assert report.passed, str(report)
    # The float32 accumulations (the two einsums, softmax's max, sum and divisions) add a
    # few float32 roundings, a small fraction of bf16's tolerance; the ops ranked above
    # them compute in bfloat16.
    f32 = [r for r in report.records if r.dtype == "float32"]
    assert {"dot_general", "reduce_max", "reduce_sum", "exp", "div"} <= {r.primitive for r in f32}
    assert all(r.score < 0.05 and r.amplification < 10 for r in f32), str(report)
    ranked = report.worst(len(report.records))
    assert {r.dtype for r in ranked[:4]} == {"bfloat16"}
    assert any(r.tolerance_ratio > 1 for r in f32)  # they do carry bf16-sized errors


def test_bf16_cancellation_feeding_a_float32_sum_is_blamed_at_the_subtraction():
    def f(x):
        y = (x + 256.0) - 256.0  # BF16_CANCEL
        return jnp.sum(y.astype(jnp.float32) ** 2)

    report = check_ops(f, XB)
    worst = report.worst(1)[0]
    assert (worst.primitive, worst.dtype, worst.source) == ("sub", "bfloat16", line_of("BF16_CANCEL"))
    assert report.first_failure is worst
    assert [r.primitive for r in report.failures] == ["sub"]


def test_static_argnums_and_bad_input():
    def window(x, n, how):
        return getattr(jnp, how)((x[:n] + 1e8) - 1e8)  # STATIC_WINDOW

    report = check_ops(window, X, 10, "sum", static_argnums=(1, 2))
    assert report.first_failure.primitive == "sub" and report.first_failure.source == line_of("STATIC_WINDOW")
    assert report.first_failure.shape == (10,)
    with pytest.raises(TypeError, match="^check_ops: fn must be callable, got NoneType None$"):
        check_ops(None, X)
    with pytest.raises(TypeError, match="^check_ops: fn returned a str \\('done'\\); it must return arrays$"):
        check_ops(lambda x: "done", X)
    with pytest.raises(TypeError, match="^check_ops: fn returned a dict_keys \\(dict_keys\\(\\[\\]\\)\\); it must return arrays$"):
        check_ops(lambda x: [x, {}.keys()], X)
    with pytest.raises(TypeError, match="^check_ops: argument \\[1\\]\\['mode'\\] is a str \\('fast'\\), not an array; pass static_argnums=\\(1,\\)"):
        check_ops(lambda x, cfg: x * 2.0, X, {"mode": "fast"})
    with pytest.raises(TypeError, match="^check_ops: fn cannot be traced with argument 1 \\(10\\) as an array .*static_argnums=\\(1,\\)$"):
        check_ops(lambda x, n: jnp.sum(x.reshape(n, -1), 0), X, 10)


def test_nothing_checked_is_not_a_pass():
    big = jnp.ones((2**21,), jnp.float32)
    report = check_ops(lambda x: x * 2.0, big)
    assert report.checked == 0 and report.skipped >= 1
    assert not report.passed
    assert "nothing was checked: not a pass" in str(report)
    assert check_ops(lambda x: x + 1, jnp.arange(3)).passed is False  # integers only: nothing to check
    assert check_ops(lambda x: x * 2.0, jnp.ones(3)).passed


def test_numpy_bfloat16_inputs_are_numbers():
    import ml_dtypes

    x = np.linspace(-2, 2, 16).astype(ml_dtypes.bfloat16)
    report = check_ops(lambda a: (a * 2).astype(jnp.float32), x)
    assert report.checked == 1 and report.passed  # the exact upcast adds no record


def test_a_tight_override_keeps_a_correct_bfloat16_cast_passing():
    x = jnp.asarray(np.random.default_rng(0).standard_normal(256), jnp.float32)
    cast = check_ops(lambda v: v.astype(jnp.bfloat16), x, rtol=1e-4, atol=1e-5)
    assert cast.passed, str(cast)
    # the override still holds float32 ops to it
    shifted = check_ops(lambda v: (v + 1e3) - 1e3, x, rtol=1e-4, atol=1e-5)
    assert not shifted.passed
    # by dtype: bfloat16 named, float32 at its default
    by_dtype = check_ops(lambda v: v.astype(jnp.bfloat16), x, rtol={jnp.bfloat16: 1e-2}, atol={jnp.bfloat16: 1e-3})
    assert by_dtype.passed


@pytest.mark.parametrize("terms", [256, 512, 1024, 4096])
def test_a_correct_float32_matmul_passes_whatever_it_sums(terms):
    # a K-term dot product's error grows like sqrt(K) * eps * |a| @ |b|, not with its result
    a = jnp.asarray(RNG.standard_normal((32, terms)), jnp.float32)
    b = jnp.asarray(RNG.standard_normal((terms, 32)), jnp.float32)
    assert check_ops(lambda a, b: a @ b, a, b).passed
    assert check_ops(lambda a: jnp.sum(a, axis=1), a).passed


def test_a_sum_does_not_excuse_the_cancellation_before_it():
    x = jnp.asarray(RNG.standard_normal(1000), jnp.float32)
    report = check_ops(lambda v: jnp.sum((v + 1e4) - 1e4), x)
    assert report.first_failure.primitive == "sub"


def _pallas_double(x):
    from jax.experimental import pallas as pl

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0 + 1.0

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)


def _callback_sin(x):
    y = jax.pure_callback(lambda v: np.sin(v), jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return y * 3.0  # CALLBACK_USE


def _pallas_cancel(x, shift):
    from jax.experimental import pallas as pl

    def kernel(x_ref, shift_ref, o_ref):
        o_ref[...] = (x_ref[...] + shift_ref[...]) - shift_ref[...]  # the shift swallows x's digits

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x, shift)  # KERNEL_CALL


def _pallas_matmul(a, b):
    # a blocked matmul accumulating over the grid's last axis: 512 terms per output
    from jax.experimental import pallas as pl

    def kernel(a_ref, b_ref, o_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += a_ref[...] @ b_ref[...]

    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((a.shape[0], b.shape[1]), a.dtype), grid=(2, 4),
        in_specs=[pl.BlockSpec((32, 128), lambda i, k: (i, k)), pl.BlockSpec((128, 64), lambda i, k: (k, 0))],
        out_specs=pl.BlockSpec((32, 64), lambda i, k: (i, 0)), interpret=True,
    )(a, b)


def _pallas_scratch(x):
    # scratch buffers are not rebuilt in float64: the kernel runs as written, unchecked
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def kernel(x_ref, o_ref, scratch):
        scratch[...] = x_ref[...] * 2.0
        o_ref[...] = scratch[...] + 1.0

    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          scratch_shapes=[pltpu.VMEM(x.shape, x.dtype)], interpret=True)(x)


def test_a_pallas_kernel_is_checked_as_one_op_against_a_float64_run_of_itself():
    from jaxguard.precision import divergence

    x = jnp.linspace(0.0, 1.0, 8, dtype=jnp.float32)
    double = check_ops(_pallas_double, x)
    assert double.passed and double.unchecked == ()
    assert [r.primitive for r in double.records] == ["pallas_call"]
    # the cancellation inside the kernel: caught, at the line that calls the kernel
    values, shift = jnp.asarray(RNG.standard_normal(64), jnp.float32), jnp.full(64, 1e4, jnp.float32)
    cancel = check_ops(_pallas_cancel, values, shift)
    assert not cancel.passed and cancel.first_failure.primitive == "pallas_call"
    assert cancel.first_failure.source == line_of("KERNEL_CALL")
    assert not divergence(_pallas_cancel, values, shift).passed
    # a correct float32 kernel summing 512 products per output passes: its tolerance grows
    # with what it sums, as a matmul's does
    a = jnp.asarray(RNG.standard_normal((64, 512)), jnp.float32)
    b = jnp.asarray(RNG.standard_normal((512, 64)), jnp.float32)
    product = check_ops(_pallas_matmul, a, b)
    assert product.passed, str(product)
    np.testing.assert_allclose(product.outputs, np.asarray(a, np.float64) @ np.asarray(b, np.float64), rtol=1e-4, atol=1e-4)


def test_callbacks_and_kernels_that_cannot_be_rebuilt_run_in_their_dtype_and_are_listed():
    from jaxguard.precision import divergence

    x = jnp.linspace(0.0, 1.0, 8, dtype=jnp.float32)
    scratch = check_ops(_pallas_scratch, x)
    assert [u.split(" at ")[0] for u in scratch.unchecked] == ["pallas_call"]
    assert "not checked (ran in its working dtype" in str(scratch)
    assert not scratch.passed  # nothing else was checked
    np.testing.assert_allclose(scratch.outputs, np.asarray(x) * 2 + 1, rtol=1e-6)
    called = check_ops(_callback_sin, x)
    assert [u.split(" at ")[0] for u in called.unchecked] == ["pure_callback"]
    assert called.passed and [r.primitive for r in called.records] == ["mul"]
    np.testing.assert_allclose(called.outputs, np.sin(np.asarray(x)) * 3.0, rtol=1e-6)
    assert divergence(_pallas_scratch, x).passed and divergence(_callback_sin, x).bitwise_equal


def test_ops_inside_library_functions_name_the_users_line_and_the_function():
    x = jnp.asarray(RNG.standard_normal(1000) + 1e4, jnp.float32)

    def spread(v):
        return jnp.var(v) + jnp.cumsum(v)[-1]  # LIBRARY_CALLS

    report = check_ops(spread, x)
    assert all(r.source == line_of("LIBRARY_CALLS") for r in report.records), [r.source for r in report.records]
    functions = {r.primitive: r.function for r in report.records}
    assert functions["cumsum"] == "in cumsum" and functions["square"] == "in _var"
    assert f"first failure: sub at {line_of('LIBRARY_CALLS')} (in _var)" in str(report)


def test_include_and_exclude_choose_the_primitives_recorded_and_the_log_has_input_shapes(tmp_path):
    def layer(x, w):
        return jnp.exp(jnp.tanh(x @ w) * 2.0)

    w = jnp.asarray(RNG.standard_normal((100, 8)), jnp.float32)
    only = check_ops(layer, X[None, :], w, include=["dot_general", "exp"])
    assert sorted({r.primitive for r in only.records}) == ["dot_general", "exp"]
    without = check_ops(layer, X[None, :], w, exclude=["tanh"])
    assert "tanh" not in {r.primitive for r in without.records} and "mul" in {r.primitive for r in without.records}
    log = tmp_path / "log.jsonl"
    check_ops(lambda v: (v + 1e8) - 1e8, X, path=str(log))
    entry = json.loads(log.read_text().splitlines()[0])
    assert entry["input_shapes"] == ["float32[100]"]


def test_tolerances_by_primitive():
    x = jnp.asarray(RNG.standard_normal(100), jnp.float32)
    assert not check_ops(lambda v: (v + 1e4) - 1e4, x).passed
    loose = check_ops(lambda v: (v + 1e4) - 1e4, x, rtol={"sub": 1.0}, atol={"sub": 1.0})
    sub = next(r for r in loose.records if r.primitive == "sub")
    add = next(r for r in loose.records if r.primitive == "add")
    assert loose.passed and (sub.rtol, sub.atol) == (1.0, 1.0)
    assert add.rtol == 1.3e-6  # the ops not named keep their defaults
