"""Rules about APIs a JAX release removed stay silent where the project pins an older JAX.

Each case is a small project on disk: its dependency file, and a module using the removed
API. A pin below the removal is silent; its twin (a pin that reaches the removal, a lower
bound only, a bare `jax`, another file allowing newer JAX) is reported.
"""

from __future__ import annotations

import textwrap

import pytest

from jaxguard.lint.engine import lint_source
from jaxguard.lint.requirements import runs_on_jax_before
from tests.helpers import ALL_RULES

OLD_CONFIG = "from jax.config import config\nconfig.update('jax_enable_x64', True)\n"
OLD_INDEX_OPS = "import jax\nimport jax.numpy as jnp\nx = jax.ops.index_update(jnp.zeros(3), 0, 1.0)\n"


def project(tmp_path, files: dict[str, str], source: str = OLD_CONFIG) -> list[str]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    module = tmp_path / "pkg" / "run.py"
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(source)
    return [d.code for d in lint_source(source, str(module), ALL_RULES).diagnostics]


SETUP_PY = """
    from setuptools import setup
    setup(name="demo", description="jax tools", install_requires=["numpy", {jax!r}, "jaxlib"])
"""


@pytest.mark.parametrize("requirement", ["jax==0.2.19", "jax<0.4", "jax>=0.2,<=0.4.24", "jax~=0.3.1", "jax==0.3.*", "jax[cpu]==0.4.8"])
def test_setup_py_pinning_jax_below_the_removal_is_silent(tmp_path, requirement):
    assert "JG901" not in project(tmp_path, {"setup.py": SETUP_PY.format(jax=requirement)})


@pytest.mark.parametrize("requirement", ["jax", "jax>=0.2.19", "jax==0.4.25", "jax<0.5", "jax~=0.4", "jax==0.4.*"])
def test_setup_py_allowing_the_removal_is_reported(tmp_path, requirement):
    assert "JG901" in project(tmp_path, {"setup.py": SETUP_PY.format(jax=requirement)})


def test_no_dependency_file_is_reported(tmp_path):
    assert "JG901" in project(tmp_path, {})


def test_only_jaxlib_pinned_is_reported(tmp_path):
    assert "JG901" in project(tmp_path, {"requirements.txt": "jaxlib==0.1.69\nnumpy\n"})


def test_requirements_txt_pin_is_silent_and_a_comment_is_not_a_requirement(tmp_path):
    assert "JG901" not in project(tmp_path, {"requirements.txt": "# jax>=0.4 someday\njax==0.3.16  # pinned\nflax\n"})


def test_every_declaring_file_must_cap_jax(tmp_path):
    files = {"requirements.txt": "jax==0.2.19\n", "pyproject.toml": "[project]\nname = 'demo'\ndependencies = ['jax>=0.2']\n"}
    assert "JG901" in project(tmp_path, files)


def test_pyproject_dependencies_and_poetry_constraints(tmp_path):
    assert "JG901" not in project(tmp_path / "a", {"pyproject.toml": "[project]\nname = 'a'\ndependencies = ['jax<0.4.20']\n"})
    assert "JG901" not in project(tmp_path / "b", {"pyproject.toml": "[tool.poetry.dependencies]\njax = '~0.3.5'\n"})
    # Poetry's caret allows every 0.4.x, the removal among them
    assert "JG901" in project(tmp_path / "c", {"pyproject.toml": "[tool.poetry.dependencies]\njax = '^0.4.1'\n"})
    assert "JG901" not in project(tmp_path / "d", {"pyproject.toml": "[tool.poetry.dependencies]\njax = {version = '0.2.19'}\n"})


def test_conda_environment_pin(tmp_path):
    env = "name: demo\ndependencies:\n  - python=3.8\n  - jax=0.2.19\n  - pip:\n    - optax\n"
    assert "JG901" not in project(tmp_path, {"environment.yml": env})


def test_the_nearest_declaring_folder_decides(tmp_path):
    # a pinned subproject inside a repository whose root allows any JAX
    (tmp_path / "requirements.txt").write_text("jax\n")
    assert "JG901" not in project(tmp_path / "old", {"setup.py": SETUP_PY.format(jax="jax==0.2.19")})
    assert "JG901" in project(tmp_path / "new", {})


def test_index_ops_removed_in_0_3_2(tmp_path):
    assert "JG303" not in project(tmp_path / "a", {"requirements.txt": "jax==0.3.1\n"}, OLD_INDEX_OPS)
    assert "JG303" in project(tmp_path / "b", {"requirements.txt": "jax==0.3.2\n"}, OLD_INDEX_OPS)
    # the same pin keeps the jax.config module (removed in 0.4.25)
    assert "JG901" not in project(tmp_path / "b", {"requirements.txt": "jax==0.3.2\n"})


def test_bad_dependency_files_are_no_declaration(tmp_path):
    files = {"setup.py": "setup(install_requires=['jax==0.2'\n", "pyproject.toml": "[project\n"}
    assert "JG901" in project(tmp_path, files)


def test_no_path_is_no_declaration():
    assert not runs_on_jax_before("-", (0, 4, 25))
    assert not runs_on_jax_before(None, (0, 4, 25))


def test_a_changed_pin_reaches_cached_results(tmp_path):
    # the result cache is keyed by the declared JAX versions too: unpinning reports again
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\ndependencies = ['jax==0.3.16']\n")
    (tmp_path / "run.py").write_text(OLD_CONFIG)

    def codes() -> str:
        done = subprocess.run(
            [sys.executable, "-m", "jaxguard", "check", "run.py", "--output-format", "concise", "--cache-dir", str(tmp_path / "cache")],
            cwd=tmp_path, capture_output=True, text=True,
        )
        return done.stdout

    assert "JG901" not in codes()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\ndependencies = ['jax>=0.4']\n")
    assert "JG901" in codes()
