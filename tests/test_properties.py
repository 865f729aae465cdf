"""Property-based: over generated programs the checker never raises, every fix parses and
compiles, keeps the file's line endings, a second --fix changes nothing, --fix leaves a file
without fixable findings byte-identical, and a safe fix does not change what a program
computes (programs are executed before and after the fix).

Generators: hypothesmith's grammar-based programs (any Python), JAX-flavoured programs
assembled from fragments that exercise the rules and their fixes (with CR, CRLF and mixed
line endings, and NUL and other control characters in strings), and executable programs
that define a `run(x, n)` to call. Example counts are modest to keep the suite fast;
JAXGUARD_FUZZ_EXAMPLES=N runs N examples of each property (the long measurement).
"""

from __future__ import annotations

import contextlib
import io
import os
import re

import libcst as cst
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from jaxguard.lint.engine import _compiles
from jaxguard.lint.files import check_file, fix_text, lint_text
from jaxguard.lint.registry import all_rules
from jaxguard.lint.settings import LintSettings

ALL = LintSettings(frozenset(all_rules()))
FUZZ_EXAMPLES = int(os.environ.get("JAXGUARD_FUZZ_EXAMPLES", "0"))


def budget(in_ci: int) -> settings:
    return settings(max_examples=FUZZ_EXAMPLES or in_ci, deadline=None, suppress_health_check=list(HealthCheck))


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
    # control characters in strings: escaped, and raw where Python allows them (not NUL,
    # CR or LF), and a raw CR in triple-quoted strings (a line break to Python and libcst)
    's = "a\\x00b\\x07\\x1b[0m\\u0000"\n',
    's = "raw \x0b\x0c\x1b\x7f\x01"\n',
    '"""doc\rstring"""\n',
    "t = '''first\rsecond'''\n",
]
FUNCTIONS = [
    "@jax.jit\ndef f(x):\n    print(x)\n    x[0] = 1.0\n    return x\n",
    "@functools.partial(jax.jit, static_argnums=(1,))\ndef g(x, n):\n    if n > 0:\n        return x\n    return -x\n",
    "def h(x):\n    global counter\n    counter += 1\n    return x * counter\nh = jax.jit(h)\n",
    "@jax.jit\ndef k(x):\n    if x > 0:\n        return x\n    return jnp.where(x > 0, x, 0.0)\n",
    "def body(i, c):\n    c[0] = i\n    return c\nout = lax.fori_loop(0, 3, body, jnp.zeros(2))\n",
    "@jax.jit\ndef m(x):\n    items = iter(range(3))\n    return x + next(items)\n",
    '@jax.jit\ndef p(x):\n    print("a\\x00b", x)\n    print(\'q"\\x1b\\t\', x, 1_0)\n    print(f"{x}\\x07 {{lit}}")\n    return x\n',
    '@jax.jit\ndef q(x):\n    """doc\rwith a CR"""\n    print("\x0c\x1b", x)\n    print(r"\\N{BULLET}", "\\N{BULLET}", x)\n    return x\n',
]
NEWLINES = ["\n", "\r\n", "\r", "mixed"]


def with_newlines(draw, source: str) -> str:
    """`source` with its LF line breaks in one style (LF, CRLF, CR), or a mix."""
    style = draw(st.sampled_from(NEWLINES))
    if style != "mixed":
        return source.replace("\n", style)
    lines = source.split("\n")
    ends = draw(st.lists(st.sampled_from(NEWLINES[:3]), min_size=len(lines) - 1, max_size=len(lines) - 1))
    return "".join(line + end for line, end in zip(lines, ends)) + lines[-1]


@st.composite
def jax_programs(draw):
    parts = draw(st.lists(st.sampled_from(HEADERS), min_size=1, max_size=4, unique=True))
    parts += draw(st.lists(st.sampled_from(STATEMENTS + FUNCTIONS), min_size=1, max_size=8))
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from(["# noqa\n", "x[2] = 0  # noqa: JG301\n", "z = (1,\n     2)\n"])))
    return with_newlines(draw, "".join(parts))


def _parses(source: str) -> bool:
    try:
        cst.parse_module(source)
        return True
    except Exception:
        return False


_BREAKS = re.compile(r"\r\n|\r|\n")


def _line_ending_styles(source: str) -> set[str]:
    return set(_BREAKS.findall(source))


def _check_properties(source: str) -> None:
    for prefilter in (True, False):
        diagnostics, _ = lint_text(source, "gen.py", ALL, prefilter)  # never raises
        assert all(d.path == "gen.py" for d in diagnostics)
    for unsafe in (False, True):
        fixed, applied, remaining, error = fix_text(source, "gen.py", ALL, unsafe=unsafe)
        if _parses(source):
            assert _parses(fixed)
        if _compiles(source):
            assert _compiles(fixed), fixed
        assert "\0" not in fixed or "\0" in source
        if len(_line_ending_styles(source)) == 1:  # a file in one style stays in it
            assert _line_ending_styles(fixed) == _line_ending_styles(source), repr(fixed)
        assert not any(d.code == "JG003" for d in remaining), remaining
        again, applied_again, _, _ = fix_text(fixed, "gen.py", ALL, unsafe=unsafe)
        assert again == fixed and applied_again == 0  # a second --fix changes nothing
        if applied == 0:
            assert fixed == source


@budget(40)
@given(jax_programs())
def test_jax_programs(source):
    _check_properties(source)


try:
    import hypothesmith
except ImportError:  # pragma: no cover
    hypothesmith = None
PYTHON_SOURCE = hypothesmith.from_grammar() if hypothesmith else st.none()  # built once: slow


@st.composite
def any_python(draw):
    return with_newlines(draw, draw(PYTHON_SOURCE))


@pytest.mark.skipif(hypothesmith is None, reason="hypothesmith is not installed")
@budget(25)
@given(any_python())
def test_any_python(source):
    _check_properties(source)


@budget(25)
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(source):
    lint_text(source, "gen.py", ALL)
    fix_text(source, "gen.py", ALL)


@budget(20)
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
        assert _parses(path.read_bytes().decode())
    fixed = path.read_bytes()
    again = check_file(str(path), ALL, fix=True)  # a second --fix on disk is a no-op
    assert again.fixed == 0 and path.read_bytes() == fixed


# Executed programs: a safe fix does not change what a program computes --------------------

# Fragments of the body of `run(x, n)`: x is a float32 array, n a small int (static under
# jit); `{v}` is the fragment's own variable, `{k}` a threshold for n. Some fragments raise
# for some n only (an in-place update, a list to jnp.sum): a fix must keep every other n.
RUN_FRAGMENTS = [
    "{v} = jnp.log(1 + x)\n",
    "{v} = jnp.exp(x) - 1\n",
    "{v} = jnp.log(1 - x)\n",
    "{v} = jnp.log(jnp.sum(jnp.exp(x)))\n",
    "print(x)\n{v} = x\n",
    "print('x is\\x00', x, 1_0)\n{v} = x * 2\n",
    "print(f'{{x}}\\x1b')\n{v} = x\n",
    "{v} = jnp.zeros(3)\nif n > {k}:\n    {v}[0] = 1.0\n",
    "{v} = jnp.ones(3)\nif n > {k}:\n    {v}[1:] += 2.0\n",
    "{v} = jnp.zeros(3)\n{v}.at[1].set(2.0)\n",
    "{v} = x != jnp.nan\n",
    "{v} = x == np.nan\n",
    "if n > {k}:\n    {v} = jnp.sum([1.0, 2.0])\nelse:\n    {v} = jnp.float32(n)\n",
    "{v} = jnp.where(x > 0, jnp.log(x), 0.0)\n",
    "G.at[0].set(7.0)\n{v} = G\n",
    "{v} = jnp.sort(x)\njnp.sort(x)\n",
]
INPUTS = [
    ("nan, inf, -inf, -1, 0.5, 1e-7, 3, -0.7", 0),
    ("nan, inf, -inf, -1, 0.5, 1e-7, 3, -0.7", 1),
    ("0.25, -0.5, 2, 1e-3, 0, -3, 1, 1e-30", 3),
]


@st.composite
def executable_programs(draw):
    fragments = draw(st.lists(st.sampled_from(RUN_FRAGMENTS), min_size=1, max_size=6))
    names = [f"v{i}" for i in range(len(fragments))]
    body = "".join(fragment.format(v=name, k=draw(st.integers(0, 2))) for name, fragment in zip(names, fragments))
    body = "".join("    " + line + "\n" for line in body.splitlines())
    header = "import functools\nimport jax\nimport jax.numpy as jnp\nimport numpy as np\nG = jnp.zeros(3)\n"
    if draw(st.booleans()):
        header += "@functools.partial(jax.jit, static_argnums=(1,))\n"
    source = header + "def run(x, n):\n" + body + f"    return ({', '.join(names)},)\n"
    return with_newlines(draw, source)


def _outcomes(source: str) -> list:
    """What run(x, n) returns for each input (as numpy arrays), or the exception it raised.
    What it prints is not compared: JG101's fix makes a print run at run time, by design."""
    import jax
    import numpy as np

    results = []
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, "gen.py", "exec"), namespace)
        for values, n in INPUTS:
            x = np.asarray([float(v) for v in values.split(",")], dtype=np.float32)
            try:
                results.append([np.asarray(value) for value in namespace["run"](x, n)])
            except Exception as error:
                results.append(error)
        jax.effects_barrier()  # jax.debug.print's output lands inside the redirect
    return results


def _same(before: list, after: list) -> bool:
    import numpy as np

    if len(before) != len(after):
        return False
    for a, b in zip(before, after):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype == bool:
            if not np.array_equal(a, b):
                return False
        elif not np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True):
            return False  # (JG803's rewrites compute the same formula with less rounding)
    return True


@budget(12)
@given(executable_programs())
def test_a_safe_fix_does_not_change_what_a_program_computes(source):
    fixed, applied, remaining, error = fix_text(source, "gen.py", ALL)
    assert not error, remaining
    assert fix_text(fixed, "gen.py", ALL)[:2] == (fixed, 0)
    event("executed before and after its safe fixes" if applied else "no safe fix to apply")
    if applied == 0:
        return
    for before, after in zip(_outcomes(source), _outcomes(fixed)):
        if isinstance(before, Exception):
            continue  # a fix may repair code that raised
        assert not isinstance(after, Exception), f"the fixed program raises {after!r}:\n{fixed}"
        assert _same(before, after), f"before: {before}\nafter: {after}\n{source}\n---\n{fixed}"
