"""Never a traceback: every bad input is one line and a documented exit code, and every
other file is still checked. An internal error in one rule names the rule and the file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jaxguard.cli import main
from jaxguard.lint.engine import LintSettings, lint_source
from jaxguard.lint.registry import REGISTRY, Rule, all_rules

BUGGY = "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n"


def run(capsys, *argv):
    code = main(["check", "--no-cache", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _only_good_findings(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("good.py:")]


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.py").write_text(BUGGY)
    return tmp_path


CASES = {
    "syntax.py": (b"def f(:\n    pass\n", "JG001"),
    "binary.py": (b"\x00\x01\x02", "JG002"),
    "latin.py": (b"x = '\xe9'\n", "JG002"),
    "empty.py": (b"", None),
    "deep_parens.py": (b"x = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n", "JG001"),
    "deep_elif.py": (b"if a:\n    pass\n" + b"elif a:\n    pass\n" * 20000, "JG001"),
    "long_chain.py": (b"x = 1" + b" + 1" * 20000 + b"\n", "JG001"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_file_is_one_line_and_the_rest_is_checked(project, capsys, name):
    content, code = CASES[name]
    (project / name).write_bytes(content)
    exit_code, out, err = run(capsys, ".")
    assert "Traceback" not in out + err
    mine = [line for line in out.splitlines() if line.startswith(name)]
    if code is None:
        assert mine == [] and exit_code == 1
    else:
        assert len(mine) == 1 and f": {code} " in mine[0], out
        assert exit_code == 2
    assert len(_only_good_findings(out)) == 1


def test_fifty_thousand_lines(project, capsys):
    body = "".join(f"value_{i} = numpy.float32({i})\n" for i in range(50_000))
    (project / "big.py").write_text("import numpy\n" + body)
    exit_code, out, _ = run(capsys, "big.py")
    assert exit_code == 0 and out == "All checks passed!\n"


@pytest.mark.skipif(not os.environ.get("JAXGUARD_SLOW_TESTS"), reason="minutes under load; JAXGUARD_SLOW_TESTS=1")
def test_fifty_thousand_lines_of_jax(project, capsys):
    body = "".join(f"value_{i} = {i}\n" for i in range(50_000))
    (project / "big.py").write_text("import jax.numpy as jnp\n" + body + "arr = jnp.zeros(2)\narr[0] = 1.0\n")
    exit_code, out, _ = run(capsys, "big.py")
    assert exit_code == 1 and out.startswith("big.py:50003:1: JG301")


def test_symlink_loop_and_missing_path(project, capsys):
    os.symlink("loop_b.py", project / "loop_a.py")
    os.symlink("loop_a.py", project / "loop_b.py")
    exit_code, out, err = run(capsys, ".", "loop_a.py", "nope.py")
    assert exit_code == 2 and "Traceback" not in out + err
    assert any(line.startswith("loop_a.py:1:1: JG002") and "symbolic links" in line for line in out.splitlines())
    assert "nope.py:1:1: JG002 no such file or directory" in out
    assert len(_only_good_findings(out)) == 1


def test_directory_symlink_loop_is_not_followed(project, capsys):
    (project / "pkg").mkdir()
    os.symlink("..", project / "pkg" / "up")
    exit_code, out, _ = run(capsys, ".")
    assert exit_code == 1 and len(_only_good_findings(out)) == 1


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root reads any file")
def test_unreadable_file(project, capsys):
    path = project / "secret.py"
    path.write_text("x = 1\n")
    path.chmod(0)
    try:
        exit_code, out, _ = run(capsys, ".")
    finally:
        path.chmod(0o644)
    assert exit_code == 2 and any(line.startswith("secret.py:1:1: JG002 cannot read") for line in out.splitlines())


def test_unreadable_file_via_read_error(project, capsys, monkeypatch):
    """Root can read a chmod 000 file: simulate EACCES instead."""
    import builtins

    real_open = builtins.open

    def fake_open(file, *args, **kwargs):
        if str(file).endswith("secret.py"):
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    (project / "secret.py").write_text("x = 1\n")
    monkeypatch.setattr(builtins, "open", fake_open)
    exit_code, out, _ = run(capsys, "-j", "1", ".")
    assert exit_code == 2
    assert "secret.py:1:1: JG002 cannot read: Permission denied" in out
    assert len(_only_good_findings(out)) == 1


class _Exploding(Rule):
    code = "JG099"
    name = "exploding-test-rule"
    message = "never"
    what = why = example = use_instead = ""

    def visit_Call(self, node):
        raise ZeroDivisionError("boom")


@pytest.fixture
def exploding_rule():
    REGISTRY["JG099"] = _Exploding
    yield
    del REGISTRY["JG099"]


def test_internal_error_names_rule_and_file_and_others_still_report(exploding_rule):
    settings = LintSettings(frozenset(all_rules()))
    diagnostics = lint_source(BUGGY, "mod.py", settings).diagnostics
    codes = [d.code for d in diagnostics]
    assert "JG003" in codes and "JG301" in codes
    (crash,) = [d for d in diagnostics if d.code == "JG003"]
    assert "JG099" in crash.message and "exploding-test-rule" in crash.message and crash.path == "mod.py"


def test_internal_error_in_cli_run_continues(project, capsys, exploding_rule):
    (project / "other.py").write_text(BUGGY)
    exit_code, out, err = run(capsys, "-j", "1", "--select", "ALL", ".")
    assert exit_code == 2 and "Traceback" not in out + err
    crashes = [line for line in out.splitlines() if " JG003 " in line]
    assert sorted(line.split(":")[0] for line in crashes) == ["good.py", "other.py"]
    assert all("JG099" in line for line in crashes)
    assert len([line for line in out.splitlines() if " JG301 " in line]) == 2


def test_a_bug_summarising_one_module_is_reported_there_and_the_run_goes_on(project, capsys, monkeypatch):
    # the project index summarises every module first; a bug of ours there must not stop the
    # run: that module is unknown to the others, and its own check says so
    from jaxguard.lint import summary

    real_run = summary._Summariser.run

    def run_or_fail(self, tree):
        if self.module == "other":
            raise ZeroDivisionError("boom")
        return real_run(self, tree)

    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (project / "other.py").write_text(BUGGY)
    monkeypatch.setattr(summary._Summariser, "run", run_or_fail)
    exit_code, out, err = run(capsys, "-j", "1", ".")
    assert exit_code == 2 and "Traceback" not in out + err
    (crash,) = [line for line in out.splitlines() if " JG003 " in line]
    assert crash.startswith("other.py:1:1: JG003 internal error summarising this module") and "ZeroDivisionError: boom" in crash
    assert sorted(line.split(":")[0] for line in out.splitlines() if " JG301 " in line) == ["good.py", "other.py"]


def test_stdin(project, capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BUGGY.encode())))
    exit_code, out, _ = run(capsys, "-", "--stdin-filename", "src/mod.py")
    assert exit_code == 1 and out.startswith("src/mod.py:3:1: JG301")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BUGGY.encode())))
    exit_code, out, err = run(capsys, "-", "--fix", "--stdin-filename", "src/mod.py")
    assert exit_code == 0 and out == "import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)\n"
    assert "1 fixed" in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\x00\x01")))
    exit_code, out, _ = run(capsys, "-")
    assert exit_code == 2 and out.startswith("-:1:1: JG002 binary file")


def test_stdin_cannot_mix_with_paths(project, capsys):
    exit_code, _, err = run(capsys, "-", "good.py")
    assert exit_code == 2 and "stdin" in err


def test_subprocess_has_no_traceback_on_interrupted_pipe(project):
    # `jaxguard check | head -1`: a closed pipe is not a crash.
    for i in range(30):
        (project / f"m{i}.py").write_text(BUGGY)
    command = f"{sys.executable} -m jaxguard check --no-cache . | head -1"
    result = subprocess.run(command, shell=True, cwd=project, capture_output=True, text=True)
    assert "Traceback" not in result.stderr
