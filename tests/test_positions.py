"""Positions from per-statement code generation equal libcst's whole-module positions."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ALL_RULES, clean

from jaxguard.lint import positions
from jaxguard.lint.engine import lint_source
from jaxguard.lint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent

TRICKY = [
    "import jax.numpy as jnp\r\nx = jnp.zeros(3)\r\n\r\n# note\r\nx[0] = 1.0\r\n",
    "import jax\nimport jax.numpy as jnp\n\n\n# a comment\n\n@jax.jit\n@some.other(1,\n    2)\nasync def f(x):\n    print(x)\n    return x\n",
    "import jax.numpy as jnp\nx = jnp.zeros(3); x[0] = 1.0; y = jnp.sum([1])\n",
    '"""Doc\n\nstring."""\nfrom __future__ import annotations\nimport jax\nclass A:\n    @jax.jit\n    def f(self, x):\n        print(x)\n        return x\n',
    "import jax.numpy as jnp\ns = '''\nx[0] = 1\n'''\nx = jnp.zeros(2)\nif True:\n    x[1] = 2.0  # noqa: JG999\n\x0c\nprint(jnp.sum([1, 2]))\n",
    "import jax\nfrom jax import jit\n\n@jit\ndef f(x):\n    print(\n        'x', x,\n    )\n    return x\n",
    # two-space and tab indentation (the module's default indent drives code generation)
    "import jax\nclass T:\n  def test(self):\n    key = jax.random.key(0)\n    a = jax.random.normal(key)\n    b = jax.random.normal(key)\n    return a + b\n",
    "import jax\nif True:\n\tkey = jax.random.key(0)\n\tif key is not None:\n\t\ta = jax.random.normal(key)\n\t\tb = jax.random.normal(key)\n\t\tprint(a, b)\n",
]


def _snippets():
    for code, rule in all_rules().items():
        for index, snippet in enumerate((rule.example, *rule.invalid)):
            yield pytest.param(clean(snippet), id=f"{code}-{index}")
    for path in sorted((ROOT / "examples").glob("*.py")):
        yield pytest.param(path.read_text(), id=path.name)
    for index, snippet in enumerate(TRICKY):
        yield pytest.param(snippet, id=f"tricky-{index}")


def _as_tuples(source):
    return [
        (d.code, d.line, d.column, d.end_line, d.end_column, d.noqa_lines, d.fix)
        for d in lint_source(source, "m.py", ALL_RULES).diagnostics
    ]


@pytest.mark.parametrize("source", list(_snippets()))
def test_same_positions_and_fixes_as_whole_module_code_generation(source, monkeypatch):
    fast = _as_tuples(source)
    monkeypatch.setattr(positions, "_first_lines", lambda module, text: None)  # forces the slow path
    assert fast == _as_tuples(source)


def test_only_the_statements_with_findings_are_generated(monkeypatch):
    source = "import jax.numpy as jnp\n" + "y = 1\n" * 200 + "x = jnp.zeros(3)\nx[0] = 1.0\n"
    generated = []
    full = positions._full
    monkeypatch.setattr(positions, "_full", lambda module: generated.append(len(module.body)) or full(module))
    assert [d.code for d in lint_source(source, "m.py", ALL_RULES).diagnostics] == ["JG301"]
    assert generated and max(generated) <= 2  # the statement with the finding (and the import's place)
