"""Property-based: over generated programs the checker never raises, every fix parses,
fixing is idempotent, and --fix leaves a file without fixable findings byte-identical.

Two generators: hypothesmith's grammar-based programs (any Python), and JAX-flavoured
programs assembled from fragments that exercise the rules and their fixes. Example counts
are modest to keep the suite fast.
"""

from __future__ import annotations

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxguard.lint.engine import LintSettings
from jaxguard.lint.files import check_file, fix_text, lint_text
from jaxguard.lint.registry import all_rules

ALL = LintSettings(frozenset(all_rules()))
PROFILE = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))

HEADERS = [
    "import jax\n",
    "import jax.numpy as jnp\n",
    "import numpy as np\n",
    "from jax import random\n",
    "import functools\n",
    "from jax import lax\n",
]
STATEMENTS = [
    "x = jnp.zeros(3)\n",
    "x[0] = 1.0\n",
    "x[1:] += 2\n",
    "x.at[0].set(5.0)\n",
    "y = np.zeros(3)\ny[0] = 1\n",
    "key = random.PRNGKey(0)\n",
    "a = random.normal(key, (2,))\nb = random.normal(key, (2,))\n",
    "k1, k2 = random.split(key)\n",
    "print(x)\n",
    "data = jnp.array([1, 2, 3])\n",
    "z = jnp.sum([1.0, 2.0])\n",
    "if x == jnp.nan:\n    pass\n",
    "counter = 0\n",
    "for i in range(3):\n    key = random.PRNGKey(0)\n",
    "jax.config.update('jax_enable_x64', True)\n",
    "w = jnp.log(1 + x)\n",
]
FUNCTIONS = [
    "@jax.jit\ndef f(x):\n    print(x)\n    x[0] = 1.0\n    return x\n",
    "@functools.partial(jax.jit, static_argnums=(1,))\ndef g(x, n):\n    if n > 0:\n        return x\n    return -x\n",
    "def h(x):\n    global counter\n    counter += 1\n    return x * counter\nh = jax.jit(h)\n",
    "@jax.jit\ndef k(x):\n    if x > 0:\n        return x\n    return jnp.where(x > 0, x, 0.0)\n",
    "def body(i, c):\n    c[0] = i\n    return c\nout = lax.fori_loop(0, 3, body, jnp.zeros(2))\n",
    "@jax.jit\ndef m(x):\n    items = iter(range(3))\n    return x + next(items)\n",
]


@st.composite
def jax_programs(draw):
    parts = draw(st.lists(st.sampled_from(HEADERS), min_size=1, max_size=4, unique=True))
    parts += draw(st.lists(st.sampled_from(STATEMENTS + FUNCTIONS), min_size=1, max_size=8))
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from(["# noqa\n", "x[2] = 0  # noqa: JG301\n", "z = (1,\n     2)\n"])))
    return "".join(parts)


def _parses(source: str) -> bool:
    try:
        cst.parse_module(source)
        return True
    except Exception:
        return False


def _check_properties(source: str) -> None:
    for prefilter in (True, False):
        diagnostics, _ = lint_text(source, "gen.py", ALL, prefilter)  # never raises
        assert all(d.path == "gen.py" for d in diagnostics)
    fixed, applied, remaining, error = fix_text(source, "gen.py", ALL, unsafe=True)
    if _parses(source):
        assert _parses(fixed)
    assert not any(d.code == "JG003" for d in remaining), remaining
    again, applied_again, _, _ = fix_text(fixed, "gen.py", ALL, unsafe=True)
    assert again == fixed and applied_again == 0
    if applied == 0:
        assert fixed == source


@PROFILE
@given(jax_programs())
def test_jax_programs(source):
    _check_properties(source)


try:
    import hypothesmith
except ImportError:  # pragma: no cover
    hypothesmith = None


@pytest.mark.skipif(hypothesmith is None, reason="hypothesmith is not installed")
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.builds(lambda code: code, hypothesmith.from_grammar() if hypothesmith else st.none()))
def test_any_python(source):
    _check_properties(source)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(source):
    lint_text(source, "gen.py", ALL)
    fix_text(source, "gen.py", ALL)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(jax_programs())
def test_fix_never_touches_a_file_without_fixable_findings(tmp_path_factory, source):
    path = tmp_path_factory.mktemp("prop") / "gen.py"
    path.write_bytes(source.encode())
    before = path.stat().st_mtime_ns
    diagnostics, _ = lint_text(source, str(path), ALL)
    result = check_file(str(path), ALL, fix=True)
    if not any(d.fix is not None and d.fix.edits and d.fix.safe for d in diagnostics):
        assert path.read_bytes() == source.encode() and path.stat().st_mtime_ns == before
        assert result.fixed == 0
    else:
        assert _parses(path.read_text())
