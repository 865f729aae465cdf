"""JG801-JG804 and JG901-JG906 on the seed examples, their fixes, paths and settings."""

from __future__ import annotations

import json
from importlib import resources

import libcst as cst
import pytest
from helpers import ALL_RULES, clean, codes, fix, lint

from jaxguard.lint.engine import LintSettings, lint_source
from jaxguard.lint.registry import all_rules, resolve_selection

OURS = ("JG801", "JG802", "JG803", "JG804", "JG901", "JG902", "JG903", "JG904", "JG905", "JG906")


def ours(source: str, settings: LintSettings = ALL_RULES, path: str = "example.py") -> list[str]:
    return [d.code for d in lint(source, settings, path) if d.code in OURS or d.code in ("JG001", "JG003")]


# --- seed 001 ("JAX - The Sharp Bits"): NaNs and double precision -------------------------

SEED_DEBUG_NANS = """
from jax.config import config
config.update("jax_debug_nans", True)
"""

SEED_X64_DEFAULT = """
import jax.numpy as jnp
from jax import random
x = random.uniform(random.PRNGKey(0), (1000,), dtype=jnp.float64)
x.dtype
"""

SEED_X64_OLD_CONFIG = """
# again, this only works on startup!
from jax.config import config
config.update("jax_enable_x64", True)
"""

SEED_ABSL = """
from jax.config import config
config.config_with_absl()
"""

SEED_ABSL_MAIN = """
from jax.config import config
if __name__ == '__main__':
    # calls config.config_with_absl() *and* runs absl parsing
    config.parse_flags_with_absl()
"""


def test_seed_debug_nans_old_config_import():
    assert ours(SEED_DEBUG_NANS) == ["JG901", "JG804"]
    fixed = fix(SEED_DEBUG_NANS)
    assert fixed == 'import jax\njax.config.update("jax_debug_nans", True)\n'
    assert ours(fixed) == ["JG804"]  # still a debug flag in library code (opt-in rule)
    assert ours(fixed, path="tests/test_debug.py") == []


def test_seed_float64_without_x64():
    assert ours(SEED_X64_DEFAULT) == ["JG903"]
    enabled = "import jax\njax.config.update('jax_enable_x64', True)\n" + clean(SEED_X64_DEFAULT)
    assert ours(enabled) == []
    by_env = "import os\nos.environ['JAX_ENABLE_X64'] = 'True'\n" + clean(SEED_X64_DEFAULT)
    assert ours(by_env) == []


@pytest.mark.parametrize("snippet", [SEED_X64_OLD_CONFIG, SEED_ABSL, SEED_ABSL_MAIN])
def test_seed_old_config_module(snippet):
    assert ours(snippet) == ["JG901"]
    fixed = fix(snippet)
    assert "jax.config" in fixed and "from jax.config" not in fixed
    assert ours(fixed) == []
    assert fix(fixed) == fixed


def test_seed_x64_then_float64_with_fixed_config_is_silent():
    source = clean(SEED_X64_OLD_CONFIG) + clean(SEED_X64_DEFAULT)
    assert sorted(ours(source)) == ["JG901", "JG903"]  # the old import fails: x64 never turns on
    assert ours(fix(source)) == []


# --- seed 000 (precision notebook) --------------------------------------------------------

SEED_000_CELL_5 = """
import jax.numpy as jnp
from jax.config import config

config.update("jax_enable_x64", True)

a = jnp.array(
    [float("inf"), 0.0, 1, -0.0, float("nan"), -float("inf"), -1, -float("nan")]
).astype(jnp.float32)
b = jnp.sort(a)
print(a)  # [ inf   0.   1.  -0.  nan -inf  -1.  nan]
print(b)  # [-inf  -1.   0.  -0.   1.  inf  nan  nan]

a64 = a.astype(jnp.float64)
print(a64)  # [ inf   0.   1.   0.  nan -inf  -1.  nan]
"""

SEED_000_LAYER_NORM = """
import torch
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

input_np = np.random.randn(2, 16, 128).astype(np.float64)
gamma_np = np.ones((128,), dtype=np.float64)
beta_np = np.zeros((128,), dtype=np.float64)
eps = 1e-5

with jax.default_matmul_precision("highest"):

    def jax_layer_norm(x, g, b, epsilon):
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.var(x, axis=-1, keepdims=True, ddof=0)
        return (x - mean) / jnp.sqrt(var + epsilon) * g + b

    res_jax = jax_layer_norm(input_np, gamma_np, beta_np, eps)

res_jax_pt = torch.from_numpy(np.array(res_jax))
torch.testing.assert_close(res_jax_pt, res_jax_pt, rtol=None, atol=None)
"""

SEED_000_CONV = """
import torch
import jax
import jax.numpy as jnp
from jax import lax
import numpy as np

jax.config.update("jax_enable_x64", True)
x_np = np.random.randn(2, 3, 10, 10).astype(np.float64)
w_np = np.random.randn(4, 3, 3, 3).astype(np.float64)
out_torch = torch.nn.functional.conv2d(torch.from_numpy(x_np), torch.from_numpy(w_np), stride=1, padding=1)
dn = lax.conv_dimension_numbers(x_np.shape, w_np.shape, ("NCHW", "OIHW", "NCHW"))
out_jax = lax.conv_general_dilated(
    lhs=jnp.array(x_np),
    rhs=jnp.array(w_np),
    window_strides=(1, 1),
    padding=[(1, 1), (1, 1)],
    dimension_numbers=dn,
    precision=lax.Precision.HIGHEST,
)
out_jax_torch = torch.from_numpy(np.array(out_jax))
torch.testing.assert_close(out_jax_torch, out_torch)
"""

SEED_000_SILU = """
import torch
import jax
import jax.numpy as jnp
import numpy as np
import torch.nn.functional as F

x_np = np.random.randn(1024).astype(np.float64) * 10
res_pt = F.silu(torch.from_numpy(x_np)).numpy()
res_jax = jnp.array(x_np)
res_jax = res_jax * jax.nn.sigmoid(res_jax)
res_jax = np.array(res_jax)
torch.testing.assert_close(torch.from_numpy(res_pt), torch.from_numpy(res_jax))
"""


def test_seed_000_old_config_and_float64():
    found = lint(SEED_000_CELL_5)
    assert sorted(d.code for d in found if d.code in OURS) == ["JG901", "JG903"]
    jg903 = next(d for d in found if d.code == "JG903")
    assert jg903.line == 13 and "jnp.float64" in jg903.message
    fixed = fix(SEED_000_CELL_5)
    assert "import jax\n" in fixed and 'jax.config.update("jax_enable_x64", True)' in fixed
    assert ours(fixed) == []


@pytest.mark.parametrize("snippet", [SEED_000_LAYER_NORM, SEED_000_CONV, SEED_000_SILU])
def test_seed_000_correct_cells_are_silent(snippet):
    assert ours(snippet) == []


def test_seed_000_conv_without_precision_is_jg905():
    source = SEED_000_CONV.replace("    precision=lax.Precision.HIGHEST,\n", "")
    assert ours(source) == ["JG905"]


# --- JG801 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source,expected",
    [
        ("import numpy as np\ndef f(x):\n    return x == np.nan\n", "return np.isnan(x)"),
        ("import jax.numpy as jnp\ndef f(x):\n    return x != jnp.nan\n", "return ~jnp.isnan(x)"),
        (
            "import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return jax.numpy.where(np.nan == x + 1, 0.0, x)\n",
            "jax.numpy.where(jax.numpy.isnan(x + 1), 0.0, x)",
        ),
        (
            "import jax\nfrom numpy import nan\n@jax.jit\ndef f(x):\n    return x == nan\n",
            "return jax.numpy.isnan(x)",
        ),
    ],
)
def test_nan_equality_fix(source, expected):
    assert fix(source) == clean(source)  # unsafe: the result changes on NaN inputs
    fixed = fix(source, unsafe=True)
    assert expected in fixed
    assert "JG801" not in codes(fixed)


def test_nan_equality_python_nan_fix_is_unsafe():
    source = "import math\nimport jax.numpy as jnp\ndef f(x):\n    return x == math.nan\n"
    assert fix(source) == clean(source)
    assert "jnp.isnan(x)" in fix(source, unsafe=True)


def test_nan_equality_adds_import_only_when_needed():
    source = "import jax\nimport math\n@jax.jit\ndef f(x):\n    return x == math.nan\n"
    assert "return jax.numpy.isnan(x)" in fix(source, unsafe=True)
    source = "import math\nimport equinox as eqx\n@eqx.filter_jit\ndef f(x):\n    return x == math.nan\n"
    fixed = fix(source, unsafe=True)
    assert fixed.startswith("import jax.numpy as jnp\n") and "return jnp.isnan(x)" in fixed


def test_chained_nan_comparison_has_no_fix():
    source = "import jax.numpy as jnp\ndef f(x, y):\n    return x == jnp.nan == y\n"
    assert codes(source).count("JG801") == 1
    assert fix(source, unsafe=True) == clean(source)


# --- JG802 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.where(x >= 0, jnp.sqrt(x), 0.0)\n",
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.where(jnp.abs(x) < 1, jnp.arcsin(x), 0.0)\n",
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.where(x > 0, jnp.power(x, 1 / 3), 0.0)\n",
        "import jax.numpy as jnp\nfrom functools import partial\nimport jax\n@partial(jax.jit, static_argnums=1)\n"
        "def f(x, n):\n    return jnp.where(x != 0, jnp.divide(1.0, x), 0.0)\n",
    ],
)
def test_where_grad_nan_flagged(source):
    differentiated = source + "import jax as _jax\ngrad_f = _jax.grad(f)\n"
    assert ours(differentiated) == ["JG802"]
    assert ours(source) == []  # never differentiated anywhere: no gradient to be NaN


@pytest.mark.parametrize(
    "source",
    [
        # double where through names
        "import jax.numpy as jnp\ndef f(x):\n    safe = jnp.where(x > 0, x, 1.0)\n    return jnp.where(x > 0, jnp.sqrt(safe), 0.0)\n",
        # the operand is not what the condition tests
        "import jax.numpy as jnp\ndef f(x, y):\n    return jnp.where(x > 0, jnp.log(y), 0.0)\n",
        # division by a constant
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.where(x > 0, x / 2.0, 0.0)\n",
        # where with one argument (nonzero)
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.where(x > 0)\n",
        # integer power
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.where(x > 0, jnp.power(x, 3), 0.0)\n",
    ],
)
def test_where_grad_nan_silent(source):
    assert ours(source) == []


# --- JG803 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source,expected",
    [
        ("import jax.numpy as jnp\ny = jnp.log(1.0 + jnp.abs(z))\n", "y = jnp.log1p(jnp.abs(z))"),
        ("import jax.numpy as jnp\ny = jnp.log(1 - p * q)\n", "y = jnp.log1p(-(p * q))"),
        ("import jax.numpy as jnp\ny = jnp.exp(t) - 1.0\n", "y = jnp.expm1(t)"),
        ("import jax.numpy as jnp\ny = jnp.log(jnp.exp(a) + jnp.exp(b))\n", "y = jnp.logaddexp(a, b)"),
        (
            "import jax, jax.numpy as jnp\ny = jnp.log(jnp.exp(logits).sum(axis=1, keepdims=True))\n",
            "y = jax.nn.logsumexp(logits, axis=1, keepdims=True)",
        ),
        ("import jax.numpy as jnp\nimport jax.nn as nn\ny = jnp.log(1 + jnp.exp(m))\n", "y = nn.softplus(m)"),
        ("import jax\nfrom jax import lax\ny = lax.log(1 + v)\n", "y = lax.log1p(v)"),
        ("import jax.numpy as jnp\nimport jax\ny = jnp.log(jax.nn.sigmoid(s))\n", "y = jax.nn.log_sigmoid(s)"),
        ("import flax.linen as nn\nimport jax.numpy as jnp\ny = jnp.log(nn.softmax(s, axis=0))\n", "y = nn.log_softmax(s, axis=0)"),
        ("from jax.numpy import log\ny = log(1 + w)\n", "import jax.numpy as jnp\nfrom jax.numpy import log\ny = jnp.log1p(w)\n"),
        ("import jax.numpy as jnp\ny = jnp.log((1 + w))\n", "y = jnp.log1p(w)"),
    ],
)
def test_unstable_numerics_fix(source, expected):
    fixed = fix(source)
    assert expected in fixed, fixed
    assert "JG803" not in codes(fixed)
    assert fix(fixed) == fixed
    cst.parse_module(fixed)


def test_sigmoid_fix_is_unsafe():
    source = "import jax.numpy as jnp\ndef gate(z):\n    return 1 / (1 + jnp.exp(-z))\n"
    assert fix(source) == clean(source)
    fixed = fix(source, unsafe=True)
    assert fixed == "import jax\nimport jax.numpy as jnp\ndef gate(z):\n    return jax.nn.sigmoid(z)\n"


def test_sigmoid_fix_uses_existing_jax_alias_and_respects_shadowing():
    source = "import jax as J\nimport jax.numpy as jnp\ndef gate(z):\n    return jnp.exp(z) / (1 + jnp.exp(z))\n"
    assert "return J.nn.sigmoid(z)" in fix(source, unsafe=True)
    shadowed = "import jax.numpy as jnp\ndef gate(z, jax):\n    return 1 / (1 + jnp.exp(-z))\n"
    assert codes(shadowed).count("JG803") == 1
    assert fix(shadowed, unsafe=True) == clean(shadowed)  # `jax` is a parameter here: no fix


def test_numpy_only_inside_traced_code():
    host = "import numpy as np\ndef f(x):\n    return np.log(1 + x) + np.exp(x) - 1\n"
    assert ours(host) == []
    traced = "import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return np.log(1 + x)\n"
    assert "return np.log1p(x)" in fix(traced)


def test_sum_with_other_arguments_is_reported_without_fix():
    source = "import jax.numpy as jnp\ny = jnp.log(jnp.sum(jnp.exp(x), where=m))\n"
    assert ours(source) == ["JG803"]
    assert fix(source, unsafe=True) == clean(source)


# --- JG804 ----------------------------------------------------------------------------------

DEBUG = "import jax\njax.config.update('jax_debug_nans', True)\n"


@pytest.mark.parametrize(
    "path", ["tests/test_model.py", "pkg/tests/helpers.py", "model_test.py", "conftest.py", "test_x.py"]
)
def test_debug_flag_never_in_tests(path):
    assert ours(DEBUG, path=path) == []


@pytest.mark.parametrize("path", ["pkg/model.py", "train.py", "pkg/contest.py"])
def test_debug_flag_in_library(path):
    assert ours(DEBUG, path=path) == ["JG804"]


def test_opt_in_rules_are_not_on_by_default():
    enabled = resolve_selection(None, [], [])
    assert {"JG801", "JG901", "JG902", "JG903", "JG904"} <= enabled
    assert not {"JG802", "JG803", "JG804", "JG905", "JG906"} & enabled
    assert not {"JG802", "JG803", "JG804", "JG905", "JG906"} & resolve_selection(["JG8", "JG9"], [], [])
    assert {"JG802", "JG803"} <= resolve_selection(["JG802", "JG803"], [], [])


# --- JG901 ----------------------------------------------------------------------------------


def test_old_config_import_removed_when_jax_already_imported():
    source = "import jax\nfrom jax.config import config  # old\nconfig.update('jax_enable_x64', True)\nprint(config.jax_enable_x64)\n"
    assert fix(source) == "import jax\njax.config.update('jax_enable_x64', True)\nprint(jax.config.jax_enable_x64)\n"


def test_import_jax_config_module():
    assert fix("import jax.config\njax.config.update('a', 1)\n") == "import jax\njax.config.update('a', 1)\n"
    assert fix("import jax\nimport jax.config\njax.config.update('a', 1)\n") == "import jax\njax.config.update('a', 1)\n"


def test_old_config_import_alias_and_nested_uses():
    source = (
        "from jax.config import config as cfg\n"
        "def setup():\n    cfg.update('jax_enable_x64', True)\n"
        "class T:\n    def m(self):\n        return cfg.read('jax_enable_x64')\n"
    )
    fixed = fix(source)
    assert fixed.startswith("import jax\n")
    assert "jax.config.update('jax_enable_x64', True)" in fixed and "return jax.config.read" in fixed
    assert "cfg" not in fixed


def test_old_config_import_falls_back_to_from_jax_import():
    inner = "def setup():\n    from jax.config import config\n    config.update('jax_enable_x64', True)\n"
    assert "    from jax import config\n" in fix(inner)
    shadow = "from jax.config import config\ndef f(jax):\n    return config.read('jax_enable_x64')\n"
    assert fix(shadow).startswith("from jax import config\n")
    for source in (inner, shadow):
        assert "JG901" not in codes(fix(source))


def test_old_config_other_names_reported_without_fix():
    source = "from jax.config import config, flags\n"
    assert ours(source) == ["JG901"]
    assert fix(source, unsafe=True) == clean(source)


# --- JG902 / JG903 ----------------------------------------------------------------------------


def test_x64_too_late_after_jitted_call():
    source = (
        "import jax\n@jax.jit\ndef f(x):\n    return x\nf(1.0)\njax.config.update('jax_enable_x64', True)\n"
    )
    assert ours(source) == ["JG902"]


def test_x64_enabled_in_main_block_before_arrays():
    source = (
        "import jax\nimport jax.numpy as jnp\ndef run():\n    return jnp.zeros(3, dtype=jnp.float64)\n"
        "if __name__ == '__main__':\n    jax.config.update('jax_enable_x64', True)\n    run()\n"
    )
    assert ours(source) == []


def test_x64_setting_in_config_silences_jg903():
    settings = LintSettings(frozenset(all_rules()), x64=True)
    source = clean(SEED_X64_DEFAULT)
    assert "JG903" not in [d.code for d in lint_source(source, "example.py", settings).diagnostics]


@pytest.mark.parametrize(
    "source",
    [
        "import jax.numpy as jnp\nfrom jax import random\nk = random.key(0)\nz = random.normal(k, (3,), jnp.complex128)\n",
        # 64-bit integers with a value beyond int32's range, or the author's word that they overflow
        "import jax.numpy as jnp\ny = jnp.arange(4).astype('int64') * 10_000_000_000\n",
        "import jax.numpy as jnp\ndef ids(x):\n    return jnp.asarray(x, jnp.int64)  # int32 would overflow\n",
    ],
)
def test_x64_dtype_flagged(source):
    assert ours(source) == ["JG903"]


@pytest.mark.parametrize(
    "source",
    [
        "import jax.numpy as jnp\nx = jnp.zeros(3, dtype=jnp.float32)\n",
        "import jax\nimport jax.numpy as jnp\nfrom jax import dtypes\ndef f(x):\n"
        "    if dtypes.canonicalize_dtype(jnp.float64) == jnp.float64 and jax.config.x64_enabled:\n        return x\n",
        "import numpy as np\nimport jax.numpy as jnp\nref = np.asarray(jnp.ones(3), dtype=np.float64)\n",
        # 64-bit integers that int32 holds as well: an index cast, a step counter
        "import jax.numpy as jnp\ny = jnp.arange(4).astype('int64')\n",
        "import optax\nimport jax.numpy as jnp\ndef init(params):\n    return jnp.zeros([], dtype=jnp.int64)\n",
    ],
)
def test_x64_dtype_silent(source):
    assert ours(source) == []


# --- JG904 ----------------------------------------------------------------------------------


def test_config_options_data_matches_installed_jax():
    jax = pytest.importorskip("jax")
    data = json.loads(resources.files("jaxguard.data").joinpath("jax_config_options.json").read_text())
    assert data["jax_version"] == jax.__version__
    assert set(data["options"]) == set(jax.config.values)
    assert "JAX_ENABLE_X64" in data["env_vars"] and "JAX_PLATFORMS" in data["env_vars"]


def test_unknown_option_suggests_closest():
    found = lint("import jax\njax.config.update('jax_enabel_x64', True)\n")
    assert [d.code for d in found] == ["JG904"]
    assert "did you mean 'jax_enable_x64'" in found[0].message
    env = lint("import os\nos.environ['JAX_ENABLE_X46'] = '1'\n")
    assert [d.code for d in env] == ["JG904"] and "JAX_ENABLE_X64" in env[0].message
    attr = lint("import jax\nflag = jax.config.jax_debug_nan\n")
    assert [d.code for d in attr] == ["JG904"] and "'jax_debug_nans'" in attr[0].message


def test_os_environ_update_dict():
    assert ours("import os\nos.environ.update({'JAX_TRACEBACK_FILTERNG': 'off'})\n") == ["JG904"]


# --- JG905 / JG906 ----------------------------------------------------------------------------


def test_matmul_precision_only_with_a_reference_comparison():
    source = "import jax.numpy as jnp\nimport numpy as np\ndef t(a, b):\n    return jnp.matmul(a, b)\ndef check(a, b):\n    np.testing.assert_allclose(a, b)\n"
    assert ours(source) == []


def test_finite_difference_positional_step_and_x64():
    source = "import jax.numpy as jnp\ndef d(f, x):\n    return (f(x + 1e-5) - f(x)) / 1e-5\n"
    assert ours(source) == ["JG906"]
    settings = LintSettings(frozenset(all_rules()), x64=True)
    assert "JG906" not in [d.code for d in lint_source(clean(source), "example.py", settings).diagnostics]
    with_float64 = "import jax.numpy as jnp\ndef d(f, x):\n    x = x.astype(jnp.float64)\n    return (f(x + 1e-5) - f(x)) / 1e-5\n"
    assert "JG906" not in ours(with_float64)


def test_matmul_precision_message_fits_the_operands_dtype():
    source = ("import jax.numpy as jnp\nimport numpy as np\ndef test_half(a, b):\n    x = a.astype(jnp.float16)\n"
              "    np.testing.assert_allclose(jnp.dot(x, b), np.dot(np.asarray(x), np.asarray(b)))\n")
    (message,) = [d.message for d in lint_source(clean(source), "example.py", LintSettings(frozenset(all_rules()))).diagnostics if d.code == "JG905"]
    assert "float16 operands" in message and "TF32" not in message


def test_finite_difference_advice_names_a_check_that_works_in_float32():
    source = "import jax.numpy as jnp\ndef d(f, x):\n    return (f(x + 1e-5) - f(x)) / 1e-5\n"
    (message,) = [d.message for d in lint_source(clean(source), "example.py", LintSettings(frozenset(all_rules()))).diagnostics if d.code == "JG906"]
    assert "jaxguard.precision.check_grads" in message and "jax.test_util" not in message


def test_unstable_numerics_says_which_trouble_it_is():
    from tests.helpers import lint

    messages = {d.message.split(" ;")[0] for d in lint("import jax.numpy as jnp\ndef f(x):\n    return jnp.log(1 + x), jnp.log(jnp.sum(jnp.exp(x)))\n") if d.code == "JG803"}
    assert any(m.startswith("log(1 + x) loses precision near 0;") for m in messages)
    assert any(m.startswith("log(sum(exp(x))) loses precision or overflows;") for m in messages)
