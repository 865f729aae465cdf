"""Input that once hung the CLI, crashed it with a traceback or surprised its users: special
files, bad globs and config, deep but valid code, folders named env/, a lint-only install,
a cache that must not serve stale results, and a user's folder named like the cache."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ALL_RULES

from jaxguard.cli import main
from jaxguard.lint.files import check_file

BUGGY = "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n"


def run(capsys, *argv):
    code = main(["check", "--no-cache", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def jaxguard(*args, cwd, timeout=60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxguard", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "good.py").write_text(BUGGY)
    return tmp_path


# 8. `jaxguard clean` deletes only a cache jaxguard made ----------------------------------


def test_clean_refuses_a_folder_named_like_the_cache_without_its_tag(project, capsys):
    mine = project / ".jaxguard_cache"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    assert main(["clean"]) == 2
    assert "CACHEDIR.TAG" in capsys.readouterr().err
    assert (mine / "notes.txt").read_text() == "mine\n"
    assert main(["check", "good.py"]) == 1  # a run does not adopt it either ...
    capsys.readouterr()
    assert main(["clean"]) == 2 and (mine / "notes.txt").exists()


def test_clean_deletes_the_cache_a_run_made(project, capsys):
    assert main(["check", "good.py"]) == 1
    assert main(["clean"]) == 0 and not (project / ".jaxguard_cache").exists()


# 9. only regular files are read, and only up to a size limit ---------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_and_a_link_to_dev_zero_are_reported_not_read(project):
    os.mkfifo(project / "pipe.py")
    (project / "zero.py").symlink_to("/dev/zero")
    result = jaxguard("check", "--no-cache", ".", cwd=project, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "pipe.py:1:1: JG002 not a regular file" in result.stdout
    assert "zero.py:1:1: JG002 not a regular file" in result.stdout
    assert "good.py:3:1: JG301" in result.stdout


def test_a_file_over_the_size_limit_is_jg002(project, capsys, monkeypatch):
    from jaxguard.lint import files

    monkeypatch.setattr(files, "MAX_SOURCE_BYTES", 2**20)
    (project / "huge.py").write_text("x = 1\n" * 200_000)
    code, out, _ = run(capsys, "-j", "1", ".")
    assert code == 2
    assert "huge.py:1:1: JG002 file too large (1.1 MiB; jaxguard reads at most 1 MiB)" in out
    assert "good.py:3:1: JG301" in out


def test_stdin_over_the_size_limit_is_one_line(project, capsys, monkeypatch):
    from jaxguard.lint import files

    monkeypatch.setattr(files, "MAX_SOURCE_BYTES", 10)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BUGGY.encode())))
    code, out, _ = run(capsys, "-", "--stdin-filename", "m.py")
    assert code == 2 and out.startswith("m.py:1:1: JG002 file too large")


# 10. no traceback for bad globs, odd config and odd notebooks -------------------------


def test_a_gitignore_line_git_cannot_read_is_skipped(project, capsys):
    (project / ".gitignore").write_text("\\\nignored/\n")
    (project / "ignored").mkdir()
    (project / "ignored" / "m.py").write_text(BUGGY)
    code, out, err = run(capsys, ".")
    assert code == 1 and "Traceback" not in err
    assert [line.split(":")[0] for line in out.splitlines() if "JG301" in line] == ["good.py"]


@pytest.mark.parametrize("where", ["cli", "pyproject"])
def test_an_invalid_exclude_glob_is_a_one_line_usage_error(project, where):
    args = ["check", "--no-cache", "."]
    if where == "cli":
        args += ["--exclude", "\\"]
    else:
        (project / "pyproject.toml").write_text('[tool.jaxguard]\nexclude = ["\\\\"]\n')
    result = jaxguard(*args, cwd=project)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "jaxguard: error: invalid exclude glob '\\\\': Invalid git pattern: '\\\\'\n"


def test_an_invalid_per_file_ignores_glob_is_a_one_line_usage_error(project):
    (project / "pyproject.toml").write_text('[tool.jaxguard]\nper-file-ignores = { "a\\\\" = ["JG301"] }\n')
    result = jaxguard("check", "--no-cache", ".", cwd=project)
    assert result.returncode == 2 and result.stderr.startswith("jaxguard: error: invalid per-file-ignores glob")


def test_a_pyproject_whose_tool_is_not_a_table_is_no_config(project):
    (project / "pyproject.toml").write_text("tool = 5\n")
    result = jaxguard("check", "--no-cache", ".", cwd=project)
    assert result.returncode == 1 and "Traceback" not in result.stderr and "good.py:3:1: JG301" in result.stdout


def test_a_notebook_on_stdin_whose_kernelspec_is_a_string(project, capsys, monkeypatch):
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": BUGGY}],
        "metadata": {"kernelspec": "python3", "language_info": ["python"]},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(notebook).encode())))
    code, out, err = run(capsys, "-", "--stdin-filename", "nb.ipynb")
    assert code == 1 and "Traceback" not in err and out.startswith("nb.ipynb:cell 1:3:1: JG301")


# 11. valid code that is only deep is checked, or reported as too deep in one line --------


def test_a_thousand_term_sum_is_checked(project, capsys):
    (project / "deep.py").write_text(
        "import jax\n@jax.jit\ndef f(a):\n    print(a)\n    return " + " + ".join(["a"] * 1000) + "\n"
    )
    code, out, _ = run(capsys, "deep.py")
    assert code == 1 and out.splitlines()[0].startswith("deep.py:4:5: JG101 ")
    assert run(capsys, "--fix", "deep.py")[0] == 0
    assert "    jax.debug.print(\"{}\", a)\n" in (project / "deep.py").read_text()


def test_thousands_of_joined_strings_are_one_jg001_line(project, capsys):
    (project / "strings.py").write_text("import jax\nx = (" + " ".join(['"s"'] * 5000) + ")\n")
    code, out, _ = run(capsys, "strings.py")
    (line,) = [line for line in out.splitlines() if line.startswith("strings.py")]
    assert code == 2 and " JG001 cannot parse: valid Python, but too deeply nested or chained for libcst" in line


# 13. only real virtualenvs are skipped --------------------------------------------------


def test_folders_named_env_and_venv_are_checked_unless_they_are_virtualenvs(project, capsys):
    for folder in ("rl/env", "venv", "real_venv"):
        (project / folder).mkdir(parents=True)
        (project / folder / "m.py").write_text(BUGGY)
    (project / "real_venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    code, out, _ = run(capsys, ".")
    assert sorted(line.split(":")[0] for line in out.splitlines() if "JG301" in line) == ["good.py", "rl/env/m.py", "venv/m.py"]


# 14. a lint-only install says what to install for `run` and `precision` ----------------


@pytest.mark.parametrize("command", [["run", "train.py"], ["precision", "model:f", "--shape", "3"]])
def test_run_and_precision_without_jax_say_what_to_install(project, command):
    program = (
        "import sys\n"
        "sys.modules['jax'] = None  # as in an install without the runtime extra\n"
        "from jaxguard.cli import main\n"
        f"sys.exit(main({command!r}))\n"
    )
    (project / "train.py").write_text("print('ran')\n")
    result = subprocess.run([sys.executable, "-c", program], cwd=project, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        f"jaxguard: error: `jaxguard {command[0]}` needs jax: install jaxguard's runtime extra "
        "(from a checkout of jaxguard: pip install '.[runtime]')\n"
    )


# 15. the cache: stale data never served, and a warm run needs no parser ------------------


def test_the_cache_fingerprint_covers_package_data(tmp_path):
    import jaxguard

    copy = tmp_path / "site"
    source = Path(jaxguard.__file__).parent
    import shutil

    shutil.copytree(source, copy / "jaxguard", ignore=shutil.ignore_patterns("__pycache__"))
    probe = "from jaxguard.lint.cache import fingerprint; print(fingerprint())"
    env = {**os.environ, "PYTHONPATH": str(copy)}

    def fingerprint() -> str:
        return subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout

    before = fingerprint()
    data = copy / "jaxguard" / "data" / "jnp_list_args.json"
    data.write_text(data.read_text() + " ")
    assert fingerprint() != before


def test_a_warm_run_imports_no_parser_and_gives_the_same_output(project):
    for i in range(5):
        (project / f"m{i}.py").write_text(BUGGY)
    cold = jaxguard("check", ".", cwd=project)
    probe = textwrap.dedent(
        """
        import sys
        from jaxguard.cli import main
        code = main(["check", "."])
        sys.exit(99 if "libcst" in sys.modules else code)  # 99: a fully cached run imported libcst
        """
    )
    warm = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, timeout=60)
    assert warm.returncode == cold.returncode == 1, warm.stderr
    assert warm.stdout == cold.stdout


def test_a_cached_result_is_not_served_for_another_file_content(tmp_path):
    from jaxguard.lint.cache import Cache

    path = tmp_path / "m.py"
    path.write_text(BUGGY)
    cache = Cache(tmp_path / "cache")
    assert [d.code for d in check_file(str(path), ALL_RULES, cache=cache).diagnostics] == ["JG301"]
    path.write_text(BUGGY.replace("x[0] = 1.0", "x = x.at[0].set(1.0)"))
    again = check_file(str(path), ALL_RULES, cache=cache)
    assert not again.cached and again.diagnostics == []
