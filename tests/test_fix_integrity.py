"""`--fix` never damages a file: line breaks of every kind, control characters, fixes that
would change what a program computes, symlinks, CRLF, notebooks, fixes that cannot be
written, and a second `--fix` that changes nothing."""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest
from helpers import ALL_RULES, clean, fix, lint

from jaxguard.cli import main
from jaxguard.lint.diagnostic import Edit, Fix
from jaxguard.lint.engine import ReplaceNode, _fixes_apply, fix_source, lint_source
from jaxguard.lint.registry import REGISTRY, Rule
from jaxguard.lint.settings import LintSettings

JITTED_PRINT = "@jax.jit{nl}def f(x):{nl}    print(x){nl}    return x{nl}"


def run(capsys, *argv):
    code = main(["check", "--no-cache", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


# 1. line breaks: a lone CR is a line break for Python and libcst, and so for the fixer ------


def test_a_lone_cr_in_a_docstring_above_a_fix_does_not_move_the_fix():
    source = 'import jax\n"""doc\rstring"""\n' + JITTED_PRINT.format(nl="\n")
    fixed, applied, remaining = fix_source(source, "m.py", ALL_RULES)
    assert applied == 1 and remaining == []
    assert fixed == 'import jax\n"""doc\rstring"""\n@jax.jit\ndef f(x):\n    jax.debug.print("{}", x)\n    return x\n'


@pytest.mark.parametrize("newline", ["\r", "\r\n", "\n"])
def test_a_file_with_any_one_line_ending_is_checked_and_fixed_in_its_own(newline):
    source = "from jax import jit" + newline + JITTED_PRINT.replace("jax.jit", "jit").format(nl=newline)
    (finding,) = lint_source(source, "m.py", ALL_RULES).diagnostics
    assert (finding.code, finding.line, finding.column) == ("JG101", 4, 5)
    fixed, applied, _ = fix_source(source, "m.py", ALL_RULES)
    expected = ["import jax", "from jax import jit", "@jit", "def f(x):", '    jax.debug.print("{}", x)', "    return x", ""]
    assert applied == 1 and fixed == newline.join(expected)  # the added import too (item 5)


def test_mixed_line_endings_keep_each_line_its_own():
    source = "import jax\r\n@jax.jit\rdef f(x):\n    print(x)\r\n    return x\r"
    fixed, applied, _ = fix_source(source, "m.py", ALL_RULES)
    assert applied == 1
    assert fixed == 'import jax\r\n@jax.jit\rdef f(x):\n    jax.debug.print("{}", x)\r\n    return x\r'


def test_crlf_file_gets_a_crlf_import_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_bytes(b'"""doc"""\r\nfrom jax import jit\r\n@jit\r\ndef f(x):\r\n    print(x)\r\n    return x\r\n')
    assert run(capsys, "--fix", "m.py")[0] == 0
    data = (tmp_path / "m.py").read_bytes()
    assert data.startswith(b'"""doc"""\r\nimport jax\r\nfrom jax import jit\r\n')
    assert data.count(b"\n") == data.count(b"\r\n") == 7


# 2. control characters: replacement text comes from the source, and compile() has the last word


def test_print_fix_keeps_a_nul_escape_as_it_is_spelled(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text('import jax\n@jax.jit\ndef f(y):\n    print("a\\x00b", y)\n    return y\n')
    assert run(capsys, "--fix", "m.py")[0] == 0
    data = (tmp_path / "m.py").read_bytes()
    assert b"\0" not in data and b'jax.debug.print("a\\x00b {}", y)' in data
    compile(data, "m.py", "exec")


@pytest.mark.parametrize(
    "call,expected",
    [
        ("print('it\"s', y)", 'jax.debug.print("it\\"s {}", y)'),
        ('print(r"C:\\temp", y)', 'jax.debug.print("C:\\\\temp {}", y)'),
        ('print("\\N{BULLET}", y)', 'jax.debug.print("\\N{BULLET} {}", y)'),
        ('print(f"\\x1b[1m{y:.2f}\\x1b[0m")', 'jax.debug.print("\\x1b[1m{:.2f}\\x1b[0m", y)'),
        ('print(1_000, y)', 'jax.debug.print("1000 {}", y)'),
    ],
)
def test_print_fix_format_string_is_the_literal_as_spelled(call, expected):
    fixed = fix(f"import jax\n@jax.jit\ndef f(y):\n    {call}\n    return y\n")
    assert f"    {expected}\n" in fixed
    compile(fixed, "m.py", "exec")


@pytest.mark.parametrize("call", ['print("\\x7b", y)', 'print("{x}", y)'])
def test_print_fix_is_not_offered_where_the_format_string_would_print_other_text(call):
    # "\x7b" is a brace only once evaluated; jax.debug.print prints "{{x}} {}" unformatted
    # when the first brace is an escaped one
    source = f"import jax\n@jax.jit\ndef f(y):\n    {call}\n    return y\n"
    (finding,) = lint(source)
    assert finding.code == "JG101" and finding.fix is None


def test_a_fix_that_libcst_parses_but_python_cannot_compile_is_dropped():
    source = "x = 'a'\n"
    nul = Fix((Edit(6, 6, "\0"),))
    assert _fixes_apply(source, [nul]) == (source, 0)


# 3. a safe fix does not change what the program computes ------------------------------


def _run_module(source: str) -> dict:
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, "m.py", "exec"), namespace)
    return namespace


def test_discarded_update_of_a_global_in_a_function_gets_no_fix():
    source = clean(
        """
        import jax.numpy as jnp
        x = jnp.zeros(3)
        def f():
            x.at[0].set(1.0)
            return x
        result = f()
        """
    )
    (finding,) = lint(source)
    assert finding.code == "JG302" and finding.fix is None
    assert fix(source, unsafe=True) == source
    assert _run_module(source)["result"].tolist() == [0.0, 0.0, 0.0]


def test_in_place_update_of_a_global_in_a_function_gets_no_fix():
    source = "import jax.numpy as jnp\nx = jnp.zeros(3)\ndef f():\n    x[0] = 1.0\n    return x\n"
    (finding,) = lint(source)
    assert finding.code == "JG301" and finding.fix is None


def test_discarded_update_fix_is_unsafe_because_later_code_sees_the_update():
    source = "import jax.numpy as jnp\nx = jnp.zeros(3)\nx.at[0].set(1.0)\nresult = x.sum()\n"
    assert fix(source) == clean(source)
    fixed = fix(source, unsafe=True)
    assert "x = x.at[0].set(1.0)" in fixed
    assert float(_run_module(source)["result"]) == 0.0 and float(_run_module(fixed)["result"]) == 1.0


def test_nan_comparison_under_grad_is_fixed_with_jnp_and_only_as_unsafe():
    source = clean(
        """
        import jax
        import numpy as np
        def f(x):
            return jax.numpy.where(x != np.nan, x * x, 0.0)
        g = jax.grad(f)(3.0)
        """
    )
    assert fix(source) == source
    fixed = fix(source, unsafe=True)
    assert "jax.numpy.where(~jax.numpy.isnan(x), x * x, 0.0)" in fixed
    assert float(_run_module(fixed)["g"]) == 6.0  # np.isnan would raise on grad's tracer


# 4. a symlink: the target is fixed, the link stays -------------------------------------


def test_fixing_through_a_symlink_fixes_the_target_and_keeps_the_link(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "t.py"
    target.write_text("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n")
    target.chmod(0o640)
    (tmp_path / "link.py").symlink_to("real/t.py")
    code, out, _ = run(capsys, "--fix", "link.py")
    assert code == 0 and "1 fixed, 0 remaining" in out
    assert os.path.islink(tmp_path / "link.py") and os.readlink(tmp_path / "link.py") == "real/t.py"
    assert target.read_text().endswith("x = x.at[0].set(1.0)\n") and (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["t.py"]  # no temporary left


# 6. a notebook: only the changed cells' sources change --------------------------------


def _notebook_text(newline: str) -> str:
    lines = [
        "{",
        ' "cells": [',
        "  {",
        '   "cell_type": "markdown",',
        '   "metadata": {},',
        '   "source": [',
        '    "Caf\\u00e9 \\u2014 notes\\n",',
        '    "x[0] = 1"',
        "   ]",
        "  },",
        "  {",
        '   "cell_type": "code",',
        '   "execution_count": 1,',
        '   "metadata": {"tags": ["\\u00e9t\\u00e9"]},',
        '   "outputs": [],',
        '   "source": [',
        '    "import jax.numpy as jnp\\n",',
        '    "x = jnp.zeros(3)\\n",',
        '    "x[0] = 1.0"',
        "   ]",
        "  }",
        " ],",
        ' "metadata": {"kernelspec": {"language": "python", "name": "python3"}},',
        ' "nbformat": 4,',
        ' "nbformat_minor": 5',
        "}",
        "",
    ]
    return newline.join(lines)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_notebook_fix_changes_only_the_changed_cells_source(tmp_path, monkeypatch, capsys, newline):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "nb.ipynb"
    original = _notebook_text(newline)
    path.write_bytes(original.encode())
    code, out, _ = run(capsys, "--fix", "nb.ipynb")
    assert code == 0, out
    expected = original.replace('"x[0] = 1.0"', '"x = x.at[0].set(1.0)"')
    assert path.read_bytes() == expected.encode()  # escapes, CRLF and layout untouched


def test_notebook_with_a_byte_order_mark_keeps_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "nb.ipynb"
    path.write_bytes(b"\xef\xbb\xbf" + _notebook_text("\n").encode())
    assert run(capsys, "--fix", "nb.ipynb")[0] == 0
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf{") and b'"x = x.at[0].set(1.0)"' in data
    json.loads(data.decode("utf-8-sig"))


# 7. a fix that cannot be written: the findings are reported, only the fix is skipped ----


@contextlib.contextmanager
def rule_with_fix(code: str, node_type: str, text: str, replacement: str):
    """A test rule `code` that reports each `node_type` node spelled `text`, with a safe fix
    that writes `replacement`; yields every rule's settings with it on."""

    def visit(self, node):
        if node.value == text:
            self.report(node, fix=([ReplaceNode(node, replacement)], True, f"write {replacement}"))

    members = {"code": code, "name": f"test-rule-{code}", "message": f"{text} is flagged", "fix_kind": "autofix"}
    members.update({"what": "", "why": "", "example": "", "use_instead": "", f"visit_{node_type}": visit})
    REGISTRY[code] = type(f"TestRule{code}", (Rule,), members)
    try:
        yield LintSettings(ALL_RULES.enabled | {code})
    finally:
        del REGISTRY[code]


@pytest.fixture
def euro_rule():
    # a fix that needs a character a latin-1 file cannot hold
    with rule_with_fix("JG098", "SimpleString", "'9'", "'9 \u20ac'") as settings:
        yield settings


def test_a_fix_the_file_encoding_cannot_hold_is_skipped_and_its_finding_reported(tmp_path, euro_rule):
    from jaxguard.lint.files import check_file

    path = tmp_path / "m.py"
    source = "# -*- coding: latin-1 -*-\nimport jax.numpy as jnp\nprice = '9'  # caf\xe9\nx = jnp.zeros(3)\nx[0] = 1.0\n"
    path.write_bytes(source.encode("latin-1"))
    result = check_file(str(path), euro_rule, fix=True)
    assert [d.code for d in result.diagnostics] == ["JG098"] and not result.error
    assert result.fixed == 1  # the JG301 fix, which latin-1 can hold
    assert path.read_bytes() == source.replace("x[0] = 1.0", "x = x.at[0].set(1.0)").encode("latin-1")
    again = check_file(str(path), euro_rule, fix=True)
    assert again.fixed == 0 and [d.code for d in again.diagnostics] == ["JG098"]


def test_a_cell_holding_the_marker_text_skips_the_fixes_and_reports_the_findings(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    notebook = {
        "cells": [
            {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": "#@@jaxguard-cell-0@@\nimport jax.numpy as jnp"},
            {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": "x = jnp.zeros(3)\nx[0] = 1.0"},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook, indent=1))
    data = path.read_bytes()
    code, out, _ = run(capsys, "--fix", "nb.ipynb")
    assert code == 1 and "nb.ipynb:cell 2:2:1: JG301" in out and "JG002" not in out
    assert path.read_bytes() == data


def test_a_fix_that_cannot_be_written_reports_the_files_findings(tmp_path, monkeypatch):
    import tempfile

    from jaxguard.lint.files import check_file

    path = tmp_path / "m.py"
    source = "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\ny = jnp.sum([1, 2])\n"
    path.write_text(source)

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", no_space)
    result = check_file(str(path), ALL_RULES, fix=True)
    assert [d.code for d in result.diagnostics] == ["JG301", "JG501", "JG002"]
    assert "fix not written" in result.diagnostics[-1].message and result.fixed == 0
    assert path.read_text() == source


# 12. every fix that can be applied is applied in one run -------------------------------


def test_one_bad_fix_does_not_hold_the_others_back():
    with rule_with_fix("JG097", "Name", "broken", "((") as settings:  # a fix that never parses
        source = "import jax.numpy as jnp\nbroken = 1\n" + "".join(f"x{i} = jnp.zeros(3)\nx{i}[0] = 1.0\n" for i in range(12))
        fixed, applied, remaining = fix_source(source, "m.py", settings)
        assert applied == 12 and [d.code for d in remaining] == ["JG097"]
        assert fix_source(fixed, "m.py", settings) == (fixed, 0, remaining)


def test_fixes_apply_keeps_every_good_fix_around_a_bad_one():
    source = "a = 1\nb = 2\nc = 3\n"
    good_a, bad, good_c = Fix((Edit(0, 1, "x"),)), Fix((Edit(6, 7, "(("),)), Fix((Edit(12, 13, "z"),))
    assert _fixes_apply(source, [good_a, bad, good_c]) == ("x = 1\nb = 2\nz = 3\n", 2)


def test_second_fix_run_is_a_no_op_on_the_cli(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    body = "import jax\nimport jax.numpy as jnp\n" + "".join(
        f"x{i} = jnp.zeros(3)\nx{i}[0] = 1.0\n@jax.jit\ndef f{i}(y):\n    print('\\x00', y)\n    return y\n" for i in range(8)
    )
    (tmp_path / "m.py").write_text(body)
    code, out, _ = run(capsys, "--fix", "m.py")
    assert code == 0 and "16 fixed, 0 remaining" in out
    data = (tmp_path / "m.py").read_bytes()
    assert run(capsys, "--fix", "m.py")[0] == 0 and (tmp_path / "m.py").read_bytes() == data
