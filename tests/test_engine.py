"""The facts pass (names, traced functions) and the fixer, on real snippets."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from helpers import ALL_RULES, clean, codes, fix, lint

from jaxguard.lint.diagnostic import Edit, Fix
from jaxguard.lint.engine import _fixes_apply, lint_source
from jaxguard.lint.facts import ModuleFacts


def facts_of(source: str) -> ModuleFacts:
    return ModuleFacts.build(cst.parse_module(clean(source)))


def traced_names(source: str) -> dict[str, set[str]]:
    facts = facts_of(source)
    return {info.name: info.traced_params for info in facts.functions.values() if info.traced}


@pytest.mark.parametrize(
    "source,expected",
    [
        ("import jax.numpy as jnp\njnp.sum", "jax.numpy.sum"),
        ("from jax import numpy as np\nnp.sum", "jax.numpy.sum"),
        ("from jax import random as jr\njr.normal", "jax.random.normal"),
        ("import jax\nrng = jax.random\nrng.normal", "jax.random.normal"),
        ("import jax\nrng = jax.random\nr2 = rng\nr2.split", "jax.random.split"),
        ("from jax import jit\njit", "jax.jit"),
        ("import numpy as jnp\njnp.sum", "numpy.sum"),
        ("def jit(f):\n    return f\njit", None),
        ("print", "builtins.print"),
    ],
)
def test_qualified_names(source, expected):
    module = cst.parse_module(source + "\n")
    facts = ModuleFacts.build(module)
    last = module.body[-1].body[0].value
    assert facts.qualname(last, facts.module_scope) == expected


def test_traced_function_forms():
    traced = traced_names(
        """
        import functools
        import jax
        from jax import lax, jit

        @jax.jit
        def decorated(x, y):
            return helper(x)

        def helper(z):
            return nested_helper(z)

        def nested_helper(w):
            return w

        @functools.partial(jax.jit, static_argnums=(1,), static_argnames=("mode",))
        def partial_decorated(x, n, mode="a"):
            return x

        def called_form(a, b):
            return a

        fast = jax.jit(called_form, static_argnames="b")

        class Model:
            def __init__(self):
                self.step = jax.jit(self.update)

            def update(self, params, batch):
                return params

        def body(i, carry):
            return carry

        def run(n):
            return lax.fori_loop(0, n, body, 0)

        squared = jax.vmap(lambda v: v * v)

        def untouched(x):
            return x
        """
    )
    assert traced["decorated"] == {"x", "y"}
    assert traced["helper"] == set() and traced["nested_helper"] == set()  # reached by calls: params unknown
    assert traced["partial_decorated"] == {"x"}
    assert traced["called_form"] == {"a"}
    assert traced["update"] == {"params", "batch"}
    assert traced["body"] == {"i", "carry"}
    assert traced["<lambda>"] == {"v"}
    assert "untouched" not in traced and "run" not in traced and "__init__" not in traced


def test_transformations_of_transformations_and_class_functions():
    traced = traced_names(
        """
        import jax

        def loss(params, x):
            if x > 0:
                return params
            return -params

        step = jax.jit(jax.grad(loss))

        class Model:
            def __call__(self, x):
                return x

        apply = jax.jit(Model.__call__)
        batched = jax.jit(jax.vmap(lambda v: v + 1))
        """
    )
    assert traced["loss"] == {"params", "x"}
    assert traced["__call__"] == {"x"}
    assert traced["<lambda>"] == {"v"}
    assert "JG106" in codes("import jax\ndef loss(p, x):\n    if x > 0:\n        return p\n    return -p\nstep = jax.jit(jax.grad(loss))\n")


def test_a_jit_that_is_not_jax_is_not_jit():
    assert traced_names("from mylib import jit\n@jit\ndef f(x):\n    return x\n") == {}


def test_grad_alone_does_not_trace():
    facts = facts_of("import jax\ndef f(x):\n    return x\ng = jax.grad(f)\n")
    (info,) = facts.functions.values()
    assert not info.traced and info.differentiated


def test_configured_traced_decorator():
    module = cst.parse_module("from mylib import compiled\n@compiled\ndef f(x):\n    return x\n")
    facts = ModuleFacts.build(module, traced_decorators=("mylib.compiled",))
    assert [i.name for i in facts.functions.values() if i.traced] == ["f"]


def test_positions_are_one_based_with_end():
    (diagnostic,) = lint("import jax.numpy as jnp\nx = jnp.zeros(3)\nif True:\n    x[0] = 1.0\n")
    assert (diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column) == (4, 5, 4, 9)


def test_several_fixes_in_one_file_nested_blocks():
    source = """
    import jax
    import jax.numpy as jnp

    def f():
        x = jnp.zeros((2, 2))
        for i in range(2):
            if i:
                x[i, 0] += 1.0
                x[i, 1] = jnp.sum([i, i])
        x.at[0, 0].set(3.0)
        return x

    @jax.jit
    def g(y):
        print(f"y={y:.3f}", y)
        return y
    """
    safe = fix(source)
    assert "x = x.at[i, 0].add(1.0)" in safe and "    x.at[0, 0].set(3.0)\n" in safe  # JG302's fix is unsafe
    assert codes(safe) == ["JG302"] and fix(safe) == safe
    fixed = fix(source, unsafe=True)
    assert "x = x.at[i, 0].add(1.0)" in fixed
    assert "x = x.at[i, 1].set(jnp.sum(jnp.asarray([i, i])))" in fixed
    assert "x = x.at[0, 0].set(3.0)" in fixed
    assert 'jax.debug.print("y={:.3f} {}", y, y)' in fixed
    assert codes(fixed) == []
    assert fix(fixed, unsafe=True) == fixed


def test_print_fix_adds_import_when_jax_is_not_imported_as_a_module():
    fixed = fix('"""Doc."""\nfrom __future__ import annotations\nfrom jax import jit\n\n@jit\ndef f(x):\n    print(x)\n    return x\n')
    assert fixed.startswith('"""Doc."""\nfrom __future__ import annotations\nimport jax\nfrom jax import jit\n')
    assert "    jax.debug.print(\"{}\", x)\n" in fixed


def test_unsafe_fix_needs_unsafe_flag():
    source = "import jax\n@jax.jit\ndef f(x):\n    x[0] = 0.0\n    return x\n"
    (diagnostic,) = lint(source)
    assert diagnostic.fix is not None and not diagnostic.fix.safe
    assert fix(source) == clean(source)
    assert "x = x.at[0].set(0.0)" in fix(source, unsafe=True)


def test_a_fix_that_would_not_parse_is_dropped():
    source = "a = 1\nb = 2\n"
    good = Fix((Edit(0, 1, "c"),))
    bad = Fix((Edit(6, 7, "(("),))
    new_source, applied = _fixes_apply(source, [bad, good])
    assert new_source == "c = 1\nb = 2\n" and applied == 1
    assert _fixes_apply(source, [bad]) == (source, 0)


def test_internal_error_is_reported_not_raised(monkeypatch):
    from jaxguard.checks import updates

    def boom(self, node):
        raise RuntimeError("bug")

    monkeypatch.setattr(updates.InPlaceUpdate, "visit_Assign", boom)
    result = lint_source("x = 1\n", "m.py", ALL_RULES)
    assert [d.code for d in result.diagnostics] == ["JG003"]
    assert "RuntimeError: bug" in result.diagnostics[0].message


TRICKY_CORRECT = {
    "numpy mutated in place": "import numpy as np\na = np.zeros(3)\na[0] = 1\na += 1\na.sort()\n",
    "python list mutated": "xs = [1, 2]\nxs[0] = 3\nxs.append(4)\n",
    "static argument and shape in jit": (
        "import jax\nfrom functools import partial\n@partial(jax.jit, static_argnames=('n',))\n"
        "def f(x, n):\n    out = []\n    for i in range(n):\n        out.append(x * i)\n    return out\n"
    ),
    "split in a loop": "import jax\nkey = jax.random.key(0)\nfor _ in range(3):\n    key, sub = jax.random.split(key)\n    jax.random.normal(sub)\n",
    "split n keys each used once": "import jax\nkey = jax.random.key(0)\nk = jax.random.split(key, 3)\na = jax.random.normal(k[0])\nb = jax.random.normal(k[1])\nc = jax.random.normal(k[2])\n",
    "pytree of arrays to jit": "import jax, jax.numpy as jnp\n@jax.jit\ndef f(p):\n    return p\nf({'w': jnp.ones(2), 'b': jnp.zeros(2)})\nf([jnp.ones(2), jnp.ones(3)])\n",
    "debug print in jit": "import jax\n@jax.jit\ndef f(x):\n    jax.debug.print('x={x}', x=x)\n    return x\n",
    "fold_in in loops": "import jax\nkey = jax.random.key(0)\nfor step in range(3):\n    jax.random.normal(jax.random.fold_in(key, step))\n",
    "random and time outside jit": "import random, time\nimport numpy as np\nt = time.time()\nr = random.random()\nn = np.random.rand()\n",
    "refs": "import jax, jax.numpy as jnp\nr = jax.new_ref(jnp.zeros(3))\nr[0] = 1.0\nr[1] += 2.0\n",
    "flax-style method": (
        "import jax\nimport jax.numpy as jnp\n\nclass Dense:\n    def __init__(self, n):\n        self.n = n\n\n"
        "    def init(self, key):\n        k1, k2 = jax.random.split(key)\n        return {'w': jax.random.normal(k1, (self.n,)), 'b': jax.random.normal(k2, (self.n,))}\n"
    ),
    "optax-style closure": (
        "import jax\nimport jax.numpy as jnp\n\ndef scale(step_size):\n    def update_fn(updates, state):\n"
        "        updates = jax.tree_util.tree_map(lambda g: step_size * g, updates)\n        return updates, state\n    return update_fn\n"
    ),
}


@pytest.mark.parametrize("title", list(TRICKY_CORRECT))
def test_tricky_correct_code_is_silent(title):
    assert codes(TRICKY_CORRECT[title]) == [], title


# the lean walk ---------------------------------------------------------------------

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))
WATCHED = ("Name", "Call", "Attribute", "FunctionDef", "Lambda", "Assign", "For", "Subscript", "Comparison")


def _libcst_order(module: cst.Module) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []

    class Recorder(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if type(node).__name__ in WATCHED:
                seen.append(("enter", module.code_for_node(node)))
            return True

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if type(original_node).__name__ in WATCHED:
                seen.append(("leave", module.code_for_node(original_node)))

    module.visit(Recorder())
    return seen


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_walk_visits_what_libcst_visits(path):
    # walk() follows the fields' declaration order (a decorator comes after its function's
    # body), not libcst's source order; it must still visit the same nodes, nested alike
    from jaxguard.lint.walk import Visitor, walk

    module = cst.parse_module(path.read_text())
    seen: list[tuple[str, str]] = []

    def recorder(prefix):
        return lambda self, node: seen.append((prefix, module.code_for_node(node)))

    handlers = {f"visit_{name}": recorder("enter") for name in WATCHED}
    handlers.update({f"leave_{name}": recorder("leave") for name in WATCHED})
    walk(module, type("Dispatching", (Visitor,), handlers)())  # per-type tables
    dispatching = list(seen)
    seen.clear()
    walk(module, type("Generic", (cst.CSTVisitor,), handlers)())  # on_visit / on_leave
    assert seen == dispatching
    expected = _libcst_order(module)
    assert sorted(seen) == sorted(expected) and len(seen) > 100
    open_nodes: list[str] = []
    for event, code in seen:
        if event == "enter":
            open_nodes.append(code)
        else:
            assert open_nodes.pop() == code
    assert not open_nodes


def test_the_garbage_collector_is_paused_only_while_checking():
    import gc

    source = "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1\n"
    seen = []
    assert gc.isenabled()
    assert [d.code for d in lint_source(source, "a.py", ALL_RULES).diagnostics] == ["JG301"]
    assert gc.isenabled()
    gc.disable()
    try:
        lint_source(source, "a.py", ALL_RULES)
        seen.append(gc.isenabled())
    finally:
        gc.enable()
    assert seen == [False]  # a caller that turned it off keeps it off


def test_libcst_validates_hand_built_nodes_again_after_a_check():
    # the parse skips libcst's re-validation of the nodes its parser built, only meanwhile
    lint_source("import jax\nx = jax.numpy.zeros(3)\n", "a.py", ALL_RULES)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
    lint_source("def f(:\n", "bad.py", ALL_RULES)  # a parse error on the way
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def test_the_runtime_without_jax_says_what_to_install():
    import subprocess
    import sys

    # a process where importing jax fails, as in a lint-only install
    code = (
        "import sys\nsys.modules['jax'] = None\nimport jaxguard\n"
        "try:\n    jaxguard.enable()\nexcept ModuleNotFoundError as error:\n    print(error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "pip install 'jaxguard[runtime]'" in out and "runtime guards" in out


# Code generated for several backends picks its branch with a module constant
# (`JAX_MODE = True`): the NumPy branch never runs under JAX.
BACKEND_SWITCH = """
    import jax.numpy as np

    JAX_MODE = True

    def fill(values):
        out = np.zeros(3)
        if JAX_MODE:
            out = out.at[0].set(values[0])
        else:
            out[0] = values[0]
        return out

    def shifted(ids):
        shifted = np.roll(ids, 1)
        if not JAX_MODE:
            shifted[0] = -1
        return shifted

    def solve(a):
        if JAX_MODE:
            return np.linalg.inv(a)
        result = np.empty_like(a)
        result[0] = 1.0
        return result
"""


def test_branches_a_constant_flag_rules_out_are_not_checked():
    assert codes(BACKEND_SWITCH) == []


@pytest.mark.parametrize(
    "change",
    [
        ("JAX_MODE = True", "JAX_MODE = False"),  # the other branch runs now
        ("JAX_MODE = True", "JAX_MODE = read_flag()"),  # not a constant
        ("JAX_MODE = True\n", "JAX_MODE = True\n\ndef flip():\n    global JAX_MODE\n    JAX_MODE = False\n"),
    ],
)
def test_branches_that_may_run_are_checked(change):
    source = clean(BACKEND_SWITCH).replace(*change)
    assert "JG301" in codes(source)


def test_type_checking_blocks_are_not_checked():
    source = """
        from typing import TYPE_CHECKING
        import jax.numpy as jnp

        def f():
            x = jnp.zeros(3)
            if TYPE_CHECKING:
                x[0] = 1
            return x
    """
    assert codes(source) == []
    assert codes(source.replace("if TYPE_CHECKING:", "if x.size:")) == ["JG301"]


def test_a_parameter_default_runs_where_the_def_is_not_in_the_trace():
    # jaxtari: `def reset(self, key=PRNGKey(time.time_ns() % 2**32))` under jit; the default
    # is evaluated once, when the `def` runs, like a decorator
    source = """
    import time
    import jax

    @jax.jit
    def reset(x, seed=time.time_ns()):
        return x + seed
    """
    assert "JG105" not in codes(source)
    # the same call in the body runs at trace time
    assert "JG105" in codes(source.replace("return x + seed", "return x + time.time_ns()"))
