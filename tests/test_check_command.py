"""The `jaxguard` command as users run it: a subprocess on real files."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

BUGGY = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx[0] = 1.0\nprint(jnp.sum([1, 2]))\n"
CLEAN = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)\n"


def run(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jaxguard", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "buggy.py").write_text(BUGGY)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_findings_exit_1_text_format_sorted(project):
    result = run("check", ".", cwd=project)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "buggy.py:4:1: JG301 JAX arrays are immutable: 'x[0] = ...' raises TypeError; use x = x.at[...].set(...)"
    assert lines[1].startswith("buggy.py:5:15: JG501 ")
    assert "Found 2 errors." in result.stdout


def test_clean_exit_0(project):
    result = run("check", "clean.py", cwd=project)
    assert result.returncode == 0
    assert "All checks passed!" in result.stdout


def test_json_output_fields(project):
    result = run("check", "buggy.py", "--output-format", "json", cwd=project)
    assert result.returncode == 1
    records = json.loads(result.stdout)
    assert [r["code"] for r in records] == ["JG301", "JG501"]
    first = records[0]
    assert {k: first[k] for k in ("path", "line", "column", "end_line", "end_column", "name", "fixable")} == {
        "path": "buggy.py", "line": 4, "column": 1, "end_line": 4, "end_column": 5, "name": "in-place-update", "fixable": True,
    }
    assert "immutable" in first["message"]


def test_select_ignore_extend_select(project):
    assert run("check", "buggy.py", "--select", "JG5", "-q", cwd=project).stdout.count("JG") == 1
    assert run("check", "buggy.py", "--ignore", "JG301,JG501", cwd=project).returncode == 0
    only = run("check", "buggy.py", "--select", "JG1", "--extend-select", "JG301", "-q", cwd=project)
    assert [line.split()[1] for line in only.stdout.splitlines()] == ["JG301"]


def test_unknown_code_is_a_usage_error(project):
    result = run("check", "--select", "JG31", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("jaxguard: error: unknown rule code, name or prefix 'JG31'")
    assert "Traceback" not in result.stderr
    result = run("check", "--select", "JG3011", cwd=project)
    assert result.returncode == 2 and "did you mean JG301?" in result.stderr


def test_statistics(project):
    result = run("check", ".", "--statistics", cwd=project)
    assert result.returncode == 1
    assert "1\tJG301\t[*] in-place-update" in result.stdout


def test_exit_zero(project):
    assert run("check", ".", "--exit-zero", cwd=project).returncode == 0


def test_fix_writes_and_reports_remaining(project):
    (project / "mixed.py").write_text(BUGGY + "import jax\nk = jax.random.key(0)\na = jax.random.normal(k)\nb = jax.random.normal(k)\nprint(a, b)\n")
    result = run("check", "mixed.py", "--fix", cwd=project)
    assert result.returncode == 1  # JG601 has no fix and remains
    fixed = (project / "mixed.py").read_text()
    assert "x = x.at[0].set(1.0)" in fixed and "jnp.sum(jnp.asarray([1, 2]))" in fixed
    assert "(2 fixed, 1 remaining)" in result.stdout
    cst.parse_module(fixed)
    again = run("check", "mixed.py", "--fix", cwd=project)
    assert again.returncode == 1 and "1 remaining" in again.stdout
    assert (project / "mixed.py").read_text() == fixed


def test_fix_everything_exits_0(project):
    result = run("check", "buggy.py", "--fix", cwd=project)
    assert result.returncode == 0, result.stdout
    assert run("check", "buggy.py", cwd=project).returncode == 0


def test_diff_does_not_write(project):
    result = run("check", "buggy.py", "--diff", cwd=project)
    assert result.returncode == 1
    assert "-x[0] = 1.0\n" in result.stdout and "+x = x.at[0].set(1.0)\n" in result.stdout
    assert (project / "buggy.py").read_text() == BUGGY


def test_diff_of_a_file_without_a_final_newline_is_a_patch_git_applies(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    source = BUGGY.rstrip("\n")
    (tmp_path / "tail.py").write_text(source)
    result = run("check", "tail.py", "--diff", cwd=tmp_path)
    assert "\\ No newline at end of file\n" in result.stdout
    (tmp_path / "fix.patch").write_text(result.stdout)
    applied = subprocess.run(["git", "apply", "fix.patch"], cwd=tmp_path, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    (tmp_path / "fixed_in_place.py").write_text(source)
    run("check", "fixed_in_place.py", "--fix", cwd=tmp_path)
    assert (tmp_path / "tail.py").read_text() == (tmp_path / "fixed_in_place.py").read_text() != source
    assert not (tmp_path / "tail.py").read_text().endswith("\n")


def test_fix_keeps_newlines_encoding_and_mode(tmp_path):
    path = tmp_path / "crlf.py"
    path.write_bytes(("\ufeff# -*- coding: utf-8 -*-\r\n" + BUGGY.replace("\n", "\r\n") + "s = 'é'\r\n").encode("utf-8"))
    path.chmod(0o755)
    assert run("check", "crlf.py", "--fix", cwd=tmp_path).returncode == 0
    data = path.read_bytes()
    assert data.startswith("\ufeff".encode("utf-8"))
    assert b"x = x.at[0].set(1.0)\r\n" in data
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert "s = 'é'" in data.decode("utf-8-sig")
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert [p.name for p in tmp_path.iterdir()] == ["crlf.py"]  # no temporary left behind


def test_unparsable_file_is_a_diagnostic_and_others_are_still_checked(project):
    (project / "broken.py").write_text("def f(:\n    pass\n")
    result = run("check", ".", cwd=project)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr + result.stdout
    broken = [line for line in result.stdout.splitlines() if line.startswith("broken.py")]
    assert len(broken) == 1 and broken[0].startswith("broken.py:1:") and "JG001" in broken[0]
    assert any(line.startswith("buggy.py:4:1: JG301") for line in result.stdout.splitlines())


def test_fix_leaves_unparsable_file_alone(project):
    (project / "broken.py").write_text("x[0] = (\n")
    result = run("check", "broken.py", "--fix", cwd=project)
    assert result.returncode == 2
    assert (project / "broken.py").read_text() == "x[0] = (\n"


@pytest.mark.parametrize(
    "content,needle",
    [(b"\x00\x01\x02binary", "binary file"), (b"x = '\xff\xfe'\n", "not valid utf-8")],
)
def test_unreadable_files(tmp_path, content, needle):
    (tmp_path / "bad.py").write_bytes(content)
    result = run("check", "bad.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "bad.py:1:1: JG002" in result.stdout and needle in result.stdout
    assert "Traceback" not in result.stderr


def test_missing_path(tmp_path):
    result = run("check", "nope.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "nope.py:1:1: JG002 no such file or directory" in result.stdout


def test_empty_file_and_empty_directory(tmp_path):
    (tmp_path / "empty.py").write_text("")
    assert run("check", ".", cwd=tmp_path).returncode == 0


def test_discovery_skips_hidden_venv_gitignored_and_excluded(tmp_path):
    for folder in (".hidden", "venv_dir", "ignored_dir", "skipme", "pkg"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text(BUGGY)
    (tmp_path / "venv_dir" / "pyvenv.cfg").write_text("home = /usr\n")
    (tmp_path / ".gitignore").write_text("ignored_dir/\n")
    result = run("check", ".", "--exclude", "skipme", "-q", cwd=tmp_path)
    paths = {line.split(":")[0] for line in result.stdout.splitlines()}
    assert paths == {"pkg/m.py"}


def test_config_from_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.jaxguard]\nignore = ["JG501"]\nper-file-ignores = { "tests/*" = ["JG301"] }\nexclude = ["build_out"]\n'
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text(BUGGY)
    (tmp_path / "main.py").write_text(BUGGY)
    result = run("check", ".", "-q", cwd=tmp_path)
    assert [line.split(": ")[1].split()[0] for line in result.stdout.splitlines()] == ["JG301"]
    assert result.stdout.startswith("main.py:4:1")


def test_config_traced_decorators(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.jaxguard]\ntraced-decorators = ["mylib.compiled"]\n')
    (tmp_path / "m.py").write_text("from mylib import compiled\n@compiled\ndef f(x):\n    print(x)\n    return x\n")
    result = run("check", "m.py", "-q", cwd=tmp_path)
    assert "JG101" in result.stdout


@pytest.mark.parametrize(
    "toml,message",
    [
        ('[tool.jaxguard]\nselcet = ["JG3"]\n', "unknown key 'selcet' in [tool.jaxguard] (did you mean 'select'?)"),
        ('[tool.jaxguard]\nignore = ["JG3O1"]\n', "unknown rule code, name or prefix 'JG3O1'"),
        ('[tool.jaxguard]\nx64 = "yes"\n', "x64 must be true or false"),
        ("[tool.jaxguard\n", "invalid TOML"),
        ('[tool.jaxgaurd]\nselect = ["JG3"]\n', "unknown table [tool.jaxgaurd] (did you mean [tool.jaxguard]?)"),
        ('[tool.jax-guard]\nselect = ["JG3"]\n', "unknown table [tool.jax-guard] (did you mean [tool.jaxguard]?)"),
    ],
)
def test_bad_config_is_one_line_exit_2(tmp_path, toml, message):
    (tmp_path / "pyproject.toml").write_text(toml)
    (tmp_path / "m.py").write_text(CLEAN)
    result = run("check", "m.py", cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_other_tools_tables_are_not_taken_for_misspellings(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.jax]\nx = 1\n[tool.ruff]\nline-length = 99\n')
    (tmp_path / "m.py").write_text(CLEAN)
    assert run("check", "m.py", cwd=tmp_path).returncode == 0


def test_explicit_config_file(tmp_path):
    (tmp_path / "custom.toml").write_text('[tool.jaxguard]\nselect = ["JG5"]\n')
    (tmp_path / "m.py").write_text(BUGGY)
    result = run("check", "m.py", "--config", "custom.toml", "-q", cwd=tmp_path)
    assert [line.split()[1] for line in result.stdout.splitlines()] == ["JG501"]
    assert run("check", "m.py", "--config", "nope.toml", cwd=tmp_path).returncode == 2


def test_rule_and_rules_commands(tmp_path):
    doc = run("rule", "JG301", cwd=tmp_path)
    assert doc.returncode == 0
    assert doc.stdout.startswith("# JG301 `in-place-update`")
    assert run("rule", "in-place-update", cwd=tmp_path).stdout == doc.stdout
    unknown = run("rule", "JG3011", cwd=tmp_path)
    assert unknown.returncode == 2 and "did you mean JG301?" in unknown.stderr
    listing = run("rules", cwd=tmp_path).stdout.splitlines()
    assert any(line.startswith("JG301  in-place-update") and line.endswith("autofix") for line in listing)


def test_version(tmp_path):
    from jaxguard import __version__

    result = run("--version", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == f"jaxguard {__version__}"


def test_usage_error_exit_2(tmp_path):
    result = run("check", "--output-format", "xml", cwd=tmp_path)
    assert result.returncode == 2


def test_linting_never_imports_jax(tmp_path):
    (tmp_path / "m.py").write_text(BUGGY)
    code = (
        "import sys, jaxguard\n"
        "from jaxguard.cli import main\n"
        "status = main(['check', 'm.py', '-q'])\n"
        "assert 'jax' not in sys.modules and 'numpy' not in sys.modules, sorted(m for m in sys.modules if 'jax' in m)\n"
        "print(status)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "1"


def test_rule_names_are_accepted_wherever_codes_are(project):
    (project / "keys.py").write_text("import jax\nkey = jax.random.key(0)\na = jax.random.normal(key)\nb = jax.random.normal(key)\nprint(a, b)\n")
    by_name = run("check", "keys.py", "buggy.py", "--select", "prng-key-reuse", "--output-format", "concise", cwd=project)
    by_code = run("check", "keys.py", "buggy.py", "--select", "JG601", "--output-format", "concise", cwd=project)
    assert by_name.returncode == 1 and by_name.stdout == by_code.stdout and "JG601" in by_name.stdout
    ignored = run("check", "buggy.py", "--ignore", "in-place-update", "--output-format", "concise", cwd=project)
    assert "JG301" not in ignored.stdout
    typo = run("check", "buggy.py", "--select", "prng-key-reus", cwd=project)
    assert typo.returncode == 2
    assert typo.stderr.strip() == ("jaxguard: error: unknown rule code, name or prefix 'prng-key-reus' in "
                                   "--select/--ignore (did you mean prng-key-reuse?)")


def test_server_without_pygls_is_a_one_line_error(monkeypatch, capsys):
    import importlib.util

    from jaxguard.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pygls" else real(name, *a))
    assert main(["server"]) == 2
    assert capsys.readouterr().err.strip() == (
        "jaxguard: error: `jaxguard server` needs pygls 2: install jaxguard's server extra "
        "(from a checkout of jaxguard: pip install '.[server]')")
