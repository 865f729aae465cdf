"""The three front doors agree: the CLI, the flake8 plugin and the pre-commit hooks."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SNIPPETS = {
    "suppressed.py": "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0  # noqa: JG301\nx[1] = 2.0  # jaxguard: ignore[JG301]\nx[2] += 1\n",
    "multiline.py": "import jax.numpy as jnp\nprint(\n    jnp.sum(\n        [1, 2, 3],\n    )\n)\nprint(jnp.sum(\n    [4],  # noqa: JG501\n))\n",
    "methods.py": (
        "import functools\nimport jax\n\nclass Trainer:\n    def __init__(self):\n        self.step = jax.jit(self._step)\n\n"
        "    def _step(self, params, x):\n        print('tracing', x)\n        self.last = x\n        return params\n\n"
        "@functools.partial(jax.jit, static_argnames=('n',))\ndef f(x, n):\n    print(n)\n    return x\n"
    ),
}


def _flake8(paths: list[str], cwd: Path) -> list[str]:
    result = subprocess.run(
        [str(BIN / "flake8"), "--select", "JG", "--format", "%(path)s:%(row)d:%(col)d: %(code)s %(text)s", *paths],
        cwd=cwd, capture_output=True, text=True,
    )
    assert result.returncode in (0, 1), result.stderr
    return sorted(line for line in result.stdout.splitlines() if line)


def _cli(paths: list[str], cwd: Path) -> list[str]:
    result = subprocess.run([sys.executable, "-m", "jaxguard", "check", "--quiet", *paths], cwd=cwd, capture_output=True, text=True)
    assert result.returncode in (0, 1), result.stderr
    return sorted(result.stdout.splitlines())


def _normalize(lines: list[str]) -> list[str]:
    # flake8 strips the code from the text and prints "CODE text"; both print the same line
    return [line.replace("./", "", 1) for line in lines]


@pytest.mark.skipif(not (BIN / "flake8").exists(), reason="flake8 is not installed")
def test_flake8_prints_exactly_what_the_cli_prints(tmp_path):
    for name, source in SNIPPETS.items():
        (tmp_path / name).write_text(source)
    for example in (ROOT / "examples").glob("*.py"):
        shutil.copy(example, tmp_path / example.name)
    paths = sorted(p.name for p in tmp_path.glob("*.py"))
    cli = _cli(paths, tmp_path)
    flake8 = _flake8(paths, tmp_path)
    assert len(cli) >= 15  # enough lines for the comparison to mean something
    assert _normalize(flake8) == _normalize(cli)


OPT_IN = [code for code, rule in __import__("jaxguard.lint.registry", fromlist=["all_rules"]).all_rules().items() if not rule.default_on]


@pytest.mark.skipif(not (BIN / "flake8").exists(), reason="flake8 is not installed")
@pytest.mark.parametrize("code", OPT_IN)
def test_opt_in_rules_need_selecting_in_flake8_and_cli_alike(tmp_path, code):
    from helpers import clean

    from jaxguard.lint.registry import all_rules

    (tmp_path / "lib.py").write_text(clean(all_rules()[code].example))
    for select, expected in (("JG", False), (code, True)):
        flake8 = subprocess.run(
            [str(BIN / "flake8"), "--select", select, "lib.py"], cwd=tmp_path, capture_output=True, text=True
        ).stdout
        cli = subprocess.run(
            [sys.executable, "-m", "jaxguard", "check", "-q", "--select", select, "lib.py"], cwd=tmp_path, capture_output=True, text=True
        ).stdout
        assert (code in flake8) == expected and (code in cli) == expected, (select, flake8, cli)


@pytest.mark.skipif(not (BIN / "pre-commit").exists(), reason="pre-commit is not installed")
def test_pre_commit_try_repo(tmp_path):
    """Run both hooks for real from this checkout, in a fresh git repository."""
    repo = tmp_path / "user_repo"
    repo.mkdir()
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}

    def git(*args):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)

    def try_repo(hook: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(BIN / "pre-commit"), "try-repo", str(ROOT), hook, "--verbose"],
            cwd=repo, capture_output=True, text=True, env=env, timeout=600,
        )

    git("init", "-q")
    (repo / "README.txt").write_text("no python here\n")
    git("add", "README.txt")
    # no Python file staged: the hook is skipped, not crashed
    empty = try_repo("jaxguard")
    assert empty.returncode == 0, empty.stdout + empty.stderr
    assert "no files to check" in empty.stdout.lower()

    (repo / "train.py").write_text("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n")
    git("add", "train.py")
    found = try_repo("jaxguard")
    assert found.returncode == 1
    assert "train.py:3:1: JG301" in found.stdout

    fixed = try_repo("jaxguard-fix")
    assert fixed.returncode == 1  # pre-commit fails a hook that changed files
    assert (repo / "train.py").read_text() == "import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)\n"

    # notebooks are checked too (pre-commit's `jupyter` type)
    git("add", "train.py")
    git("commit", "-q", "-m", "fixed")
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                           "source": ["import jax.numpy as jnp\n", "x = jnp.zeros(3)\n", "x[0] = 1.0\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    import json

    (repo / "explore.ipynb").write_text(json.dumps(notebook, indent=1))
    git("add", "explore.ipynb")
    in_notebook = try_repo("jaxguard")
    assert in_notebook.returncode == 1, in_notebook.stdout
    assert "explore.ipynb:cell 1:3:1: JG301" in in_notebook.stdout
