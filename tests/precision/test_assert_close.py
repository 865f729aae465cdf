"""assert_close on real computations (the seed notebook's alignments) and its messages."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

from jaxguard.precision import assert_close, default_tolerance

RNG = np.random.default_rng(0)


# --- the notebook's alignments, against numpy float64 references -------------------------


def layer_norm_ref(x, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def jax_layer_norm(x, g, b, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * g + b


def conv2d_ref(x, w, padding):
    """NCHW x OIHW, stride 1: direct sum over the kernel window, in float64."""
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    out = np.zeros((n, o, h + 2 * padding - kh + 1, wd + 2 * padding - kw + 1))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + out.shape[2], j : j + out.shape[3]]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


def jax_conv2d(x, w, padding):
    dn = lax.conv_dimension_numbers(x.shape, w.shape, ("NCHW", "OIHW", "NCHW"))
    return lax.conv_general_dilated(
        x, w, (1, 1), [(padding, padding)] * 2, dimension_numbers=dn, precision=lax.Precision.HIGHEST
    )


def test_layer_norm_float64_aligns_with_float64_tolerances():
    x = RNG.standard_normal((2, 16, 128))
    with jax.enable_x64(True):
        out = jax_layer_norm(jnp.asarray(x), jnp.ones(128), jnp.zeros(128))
        assert out.dtype == jnp.float64
        assert_close(out, layer_norm_ref(x))


def test_layer_norm_float32_aligns_with_float32_tolerances():
    x = RNG.standard_normal((2, 16, 128))
    out = jax_layer_norm(jnp.asarray(x, jnp.float32), jnp.ones(128), jnp.zeros(128))
    assert_close(out, layer_norm_ref(x), check_dtype=False)  # float32 vs float64: the looser wins


def test_conv2d_highest_precision_aligns():
    x = RNG.standard_normal((2, 3, 10, 10))
    w = RNG.standard_normal((4, 3, 3, 3))
    with jax.enable_x64(True):
        assert_close(jax_conv2d(jnp.asarray(x), jnp.asarray(w), 1), conv2d_ref(x, w, 1))
    out32 = jax_conv2d(jnp.asarray(x, jnp.float32), jnp.asarray(w, jnp.float32), 1)
    assert_close(out32, conv2d_ref(x, w, 1), check_dtype=False)


def test_silu_aligns():
    x = RNG.standard_normal(1024) * 10
    ref = x / (1 + np.exp(-x))
    assert_close(jax.nn.silu(jnp.asarray(x, jnp.float32)), ref, check_dtype=False)
    with jax.enable_x64(True):
        xj = jnp.asarray(x)
        assert_close(xj * jax.nn.sigmoid(xj), ref)


def test_softmax_aligns():
    x = RNG.standard_normal((32, 100))
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    ref = e / e.sum(axis=-1, keepdims=True)
    assert_close(jax.nn.softmax(jnp.asarray(x, jnp.float32), axis=-1), ref, check_dtype=False)
    with jax.enable_x64(True):
        assert_close(jax.nn.softmax(jnp.asarray(x), axis=-1), ref)


def test_float32_result_fails_float64_tolerance():
    # The same float32 LayerNorm is NOT within float64's tolerances of the reference.
    x = RNG.standard_normal((2, 16, 128))
    out = np.asarray(jax_layer_norm(jnp.asarray(x, jnp.float32), 1.0, 0.0), np.float64)
    with pytest.raises(AssertionError, match="Mismatched elements"):
        assert_close(out, layer_norm_ref(x))


# --- tolerances ----------------------------------------------------------------------------


def test_default_tolerances_follow_torch():
    assert default_tolerance(jnp.bfloat16) == (1.6e-2, 1e-5)
    assert default_tolerance(np.float16) == (1e-3, 1e-5)
    assert default_tolerance(np.float32) == (1.3e-6, 1e-5)
    assert default_tolerance(np.float64) == (1e-7, 1e-7)
    assert default_tolerance(np.int32) == (0.0, 0.0)
    assert default_tolerance(np.bool_) == (0.0, 0.0)


def test_float8_tolerances_are_one_ulp_and_smallest_normal():
    assert default_tolerance(ml_dtypes.float8_e4m3fn) == (0.125, 2.0**-6)
    assert default_tolerance(ml_dtypes.float8_e5m2) == (0.25, 2.0**-14)


def test_float8_values_compare_with_their_tolerance():
    x = np.array([1.0, 2.0, 3.0], ml_dtypes.float8_e4m3fn)
    assert_close(x, np.array([1.1, 2.2, 3.3], ml_dtypes.float8_e4m3fn))  # rounds to within one ulp
    with pytest.raises(AssertionError):
        assert_close(x, np.array([1.5, 2.0, 3.0], ml_dtypes.float8_e4m3fn))


def test_mixed_dtypes_take_the_looser_tolerance():
    exact = np.linspace(1, 2, 50)
    bf = exact.astype(ml_dtypes.bfloat16)
    assert_close(bf, exact, check_dtype=False)  # bf16's rtol 1.6e-2 applies
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(bf, exact)


def test_integers_compare_exactly():
    big = np.array([2**62], np.int64)
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 1"):
        assert_close(big, big + 1)  # float64 would round both to the same value
    assert_close(np.arange(5), np.arange(5))
    assert_close(True, True)


def test_integer_differences_are_exact_beyond_2_53():
    # float64 cannot tell 2**62 from 2**62 + 1; the message must not say they differ by 0.
    with pytest.raises(AssertionError) as info:
        assert_close(np.array([2**62], np.int64), np.array([2**62 + 1], np.int64))
    assert "Tensor-likes are not equal!" in str(info.value)
    assert "Greatest absolute difference: 1 at index (0,)" in str(info.value)
    with pytest.raises(AssertionError, match="Greatest absolute difference: 9223372036854775808 at"):
        assert_close(np.array([2**62]), np.array([-(2**62)]))  # int64 subtraction would overflow
    with pytest.raises(AssertionError, match="Greatest absolute difference: 18446744073709551615 at"):
        assert_close(np.array([2**64 - 1], np.uint64), np.array([0], np.uint64))
    # ... and a tolerance is applied to the exact difference: 3 is more than 2.
    with pytest.raises(AssertionError, match="absolute difference: 3 at index \\(0,\\) \\(up to 2 allowed\\)"):
        assert_close(np.array([2**62]), np.array([2**62 + 3]), rtol=0, atol=2)


def test_explicit_tolerances_apply_to_integers():
    # torch.testing.assert_close honours rtol/atol for integer tensors (checked on torch 2.13).
    assert_close(np.array([1, 2]), np.array([1, 3]), rtol=0, atol=2)
    assert_close(np.array([100]), np.array([101]), rtol=0.02, atol=0)
    assert_close(np.array([True]), np.array([False]), rtol=0, atol=1)
    with pytest.raises(AssertionError, match="Greatest absolute difference: 1 at index \\(1,\\) \\(up to 0.5 allowed\\)"):
        assert_close(np.array([1, 2]), np.array([1, 3]), rtol=0, atol=0.5)
    with pytest.raises(AssertionError, match="Greatest absolute difference: 2 at"):
        assert_close(np.array([3], np.uint8), np.array([1], np.uint8), rtol=0, atol=1)  # no wrap-around
    with pytest.raises(AssertionError, match="Scalars are not equal!"):
        assert_close(1, 2)


def test_a_list_and_a_tuple_of_equal_leaves_are_equal():
    # torch compares sequences, whatever their type.
    assert_close([1.0, 2.0], (1.0, 2.0))
    assert_close({"w": [jnp.ones(2), jnp.zeros(3)]}, {"w": (np.ones(2, np.float32), np.zeros(3, np.float32))})
    with pytest.raises(AssertionError, match="pytree structures do not match"):
        assert_close([1.0, 2.0], (1.0, 2.0, 3.0))
    with pytest.raises(AssertionError, match="failure occurred for item \\[1\\]"):
        assert_close([1.0, 2.0], (1.0, 2.5))


def test_scalars_and_nan():
    assert_close(1.0, 1.0 + 1e-9)
    with pytest.raises(AssertionError, match="Scalars are not close"):
        assert_close(1.0, 1.001)
    with pytest.raises(AssertionError):
        assert_close(np.nan, np.nan)
    assert_close(np.nan, np.nan, equal_nan=True)
    assert_close(np.inf, np.inf)
    with pytest.raises(AssertionError):
        assert_close(np.inf, -np.inf)


def test_explicit_tolerances_must_come_in_pairs():
    assert_close(1.0, 1.1, rtol=0.2, atol=0.0)
    with pytest.raises(ValueError):
        assert_close(1.0, 1.1, rtol=0.2)


# --- messages ------------------------------------------------------------------------------


def test_message_reports_count_percent_worst_values_and_allowed():
    expected = np.zeros((4, 5), np.float32)
    actual = expected.copy()
    actual[1, 2] = 0.5  # worst absolute
    actual[3, 4] = 1e-4  # small, still beyond atol 1e-5
    with pytest.raises(AssertionError) as info:
        assert_close(jnp.asarray(actual), expected, msg="layer 3")
    text = str(info.value)
    assert text.startswith("layer 3")
    assert "Mismatched elements: 2 / 20 (10.0%)" in text
    assert "Greatest absolute difference: 0.5 at index (1, 2) (up to 1e-05 allowed)" in text
    assert "Greatest relative difference: inf at index (1, 2) (up to 1.3e-06 allowed)" in text


def test_message_names_the_failing_pytree_leaf():
    expected = {"layers": [{"w": np.ones(3)}, {"w": np.ones(3), "b": np.zeros(2)}]}
    actual = {"layers": [{"w": np.ones(3)}, {"w": np.ones(3), "b": np.array([0.0, 1.0])}]}
    with pytest.raises(AssertionError) as info:
        assert_close(actual, expected)
    assert "['layers'][1]['b']" in str(info.value)
    assert "at index (1,)" in str(info.value)


def test_structure_and_shape_mismatch_messages():
    with pytest.raises(AssertionError, match="pytree structures do not match"):
        assert_close({"a": 1.0}, {"b": 1.0})
    with pytest.raises(AssertionError, match="shape"):
        assert_close(np.ones(3), np.ones((3, 1)))


# --- torch: optional, never imported by us -------------------------------------------------


def test_importing_precision_does_not_import_torch():
    code = (
        "import sys, jaxguard; assert 'jax' not in sys.modules; "
        "import jaxguard.precision as p, numpy as np; p.assert_close(np.ones(2), np.ones(2)); "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_torch_tensors():
    torch = pytest.importorskip("torch")
    x = torch.linspace(0, 1, 10)
    assert_close(x, jnp.linspace(0, 1, 10))
    assert_close(x.to(torch.bfloat16), x.to(torch.bfloat16))
    with pytest.raises(AssertionError):
        assert_close(x, x + 1)


def test_tolerances_by_dtype_leave_the_other_dtypes_at_their_defaults():
    import ml_dtypes

    x = np.linspace(0.1, 1.0, 64).astype(np.float32)
    as_bf16 = x.astype(ml_dtypes.bfloat16)
    tight = {"float32": 1e-7, np.float64: 1e-12}
    # bfloat16 is not named: it keeps its default (a correct rounding passes)
    assert_close(as_bf16, as_bf16.astype(np.float32).astype(ml_dtypes.bfloat16), rtol=tight, atol=tight)
    assert_close({"w": as_bf16, "b": x}, {"w": as_bf16, "b": x + 1e-8}, rtol=tight, atol=tight, check_dtype=False)
    with pytest.raises(AssertionError, match="up to 1e-07 allowed"):
        assert_close(x, x * (1 + 1e-6), rtol=tight, atol=tight)
    with pytest.raises(ValueError, match="pass both rtol and atol"):
        assert_close(x, x, rtol=tight)


def test_keys_strings_and_callable_messages():
    key = jax.random.key(0)
    assert_close({"key": key, "name": "mlp"}, {"key": jax.random.key(0), "name": "mlp"})
    with pytest.raises(AssertionError, match="Tensor-likes are not equal|Scalars are not equal"):
        assert_close(key, jax.random.key(1))
    with pytest.raises(AssertionError, match="The values are not equal: 'mlp' != 'cnn'.\nThe failure occurred for item \\['name'\\]"):
        assert_close({"name": "mlp"}, {"name": "cnn"})
    with pytest.raises(AssertionError, match="^checked layer: Scalars are not close!"):
        assert_close(1.0, 2.0, msg=lambda generated: f"checked layer: {generated}")


def test_scalar_messages_say_expected_and_got():
    with pytest.raises(AssertionError) as info:
        assert_close(1.5, 1.0)
    assert str(info.value).splitlines()[:3] == ["Scalars are not close!", "", "Expected 1.0 but got 1.5."]
    assert "Absolute difference: 0.5 (up to 1e-07 allowed)" in str(info.value)  # Python floats are float64


def test_a_missing_key_in_a_deep_tree_is_named_briefly():
    expected = {"layers": [{"w": np.ones(2), "b": np.zeros(2)} for _ in range(48)]}
    actual = {"layers": [dict(layer) for layer in expected["layers"]]}
    del actual["layers"][47]["b"]
    with pytest.raises(AssertionError) as info:
        assert_close(actual, expected)
    text = str(info.value)
    assert text == "The pytree structures do not match: missing ['layers'][47]['b'] in actual."
    with pytest.raises(AssertionError, match="\\['layers'\\] has 47 items in actual, 48 expected."):
        assert_close({"layers": actual["layers"][:47]}, expected)
