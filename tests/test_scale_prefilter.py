"""The text prefilter and the CPython guard change no finding.

Every rule's documented and extra examples, every example program, and every string
literal in the test suite that looks like code is linted with and without the prefilter;
the findings must be identical. A new rule that can fire on code that never mentions JAX
fails here (then extend jaxguard/lint/prefilter.py's triggers).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from jaxguard.lint.engine import LintSettings
from jaxguard.lint.files import lint_text
from jaxguard.lint.prefilter import mentions_jax, python_guard
from jaxguard.lint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
ALL = LintSettings(frozenset(all_rules()))
WITH_DECORATOR = LintSettings(frozenset(all_rules()), ("mylib.traced",))


def _clean(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


def _snippets() -> list[tuple[str, str]]:
    found: dict[str, str] = {}
    for code, rule in all_rules().items():
        for attribute in ("example", "use_instead"):
            found.setdefault(_clean(getattr(rule, attribute)), f"{code}.{attribute}")
        for attribute in ("invalid", "valid"):
            for i, text in enumerate(getattr(rule, attribute)):
                found.setdefault(_clean(text), f"{code}.{attribute}[{i}]")
    for path in sorted((ROOT / "examples").glob("*.py")):
        found.setdefault(path.read_text(encoding="utf-8"), path.name)
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value:
                text = _clean(node.value)
                if len(text) < 20000:
                    found.setdefault(text, f"{path.name}:{node.lineno}")
    return [(name, text) for text, name in found.items()]


SNIPPETS = _snippets()


def _same(text: str, settings: LintSettings) -> None:
    with_filter = lint_text(text, "snippet.py", settings, prefilter=True)
    without = lint_text(text, "snippet.py", settings, prefilter=False)
    assert with_filter == without


def test_there_are_many_snippets():
    assert len(SNIPPETS) > 100


@pytest.mark.parametrize("name,text", SNIPPETS, ids=[name for name, _ in SNIPPETS])
def test_prefilter_changes_no_finding(name, text):
    _same(text, ALL)


@pytest.mark.parametrize("name,text", [s for s in SNIPPETS if "jax" not in s[1].lower()][:200])
def test_prefilter_changes_no_finding_with_traced_decorator(name, text):
    _same(text, WITH_DECORATOR)


def test_snippets_without_jax_are_really_skipped():
    assert not mentions_jax("import numpy as np\nx = np.zeros(3)\nx[0] = 1\n")
    assert mentions_jax("import jax.numpy as jnp\n")
    assert mentions_jax("import os\nos.environ['JAX_ENABLE_X64'] = '1'\n")
    assert mentions_jax("import equinox as eqx\n")
    assert not mentions_jax("from mylib import traced\n")
    assert mentions_jax("from mylib import traced\n", ("mylib.traced",))


def test_traced_decorator_without_jax_still_checked():
    source = _clean(
        """
        from mylib import traced

        @traced
        def f(x):
            print(x)
            return x
        """
    )
    with_filter = lint_text(source, "a.py", WITH_DECORATOR, prefilter=True)
    assert with_filter == lint_text(source, "a.py", WITH_DECORATOR, prefilter=False)


def test_syntax_errors_are_the_same_without_jax():
    source = "def f(:\n    pass\n"
    diagnostics, error = lint_text(source, "a.py", ALL, prefilter=True)
    assert error and [d.code for d in diagnostics] == ["JG001"]
    assert (diagnostics, error) == lint_text(source, "a.py", ALL, prefilter=False)


def test_guard_rejects_what_would_crash_libcst():
    parsed, diagnostic = python_guard("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n", "deep.py")
    assert not parsed and diagnostic is not None and diagnostic.code == "JG001"
    parsed, diagnostic = python_guard("if a: pass\n" + "elif a: pass\n" * 50000, "elif.py")
    assert not parsed and diagnostic is not None
    assert python_guard("x = 1\n", "ok.py") == (True, None)
    assert python_guard("def f(:\n", "bad.py") == (False, None)


def test_guard_is_silent_and_lets_compiler_only_errors_through(recwarn, capsys):
    # the guard compiles to bytecode: warnings stay quiet, and an error only the compiler
    # sees sends the file to libcst like any syntax error (no finding is lost)
    assert python_guard("import re\npattern = '\\d+'\nif pattern is 1:\n    pass\n", "w.py") == (True, None)
    assert len(recwarn) == 0 and capsys.readouterr() == ("", "")
    assert python_guard("return 1\n", "r.py") == (False, None)
    source = "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1\nreturn x\n"
    assert [d.code for d in lint_text(source, "r.py", ALL)[0]] == ["JG301"]


def test_unknown_rules_switch_the_prefilter_off():
    from jaxguard.lint.prefilter import needs_libcst

    plain = "import numpy as np\nx = np.zeros(3)\n"
    assert not needs_libcst(plain, ALL)
    assert needs_libcst(plain, LintSettings(frozenset({"JG999"})))
    assert needs_libcst("import math\nok = x == math.nan\n", ALL)
    assert needs_libcst("x.at[0].set(1.0)\n", ALL)
