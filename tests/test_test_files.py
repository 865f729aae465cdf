"""Tests reuse keys, count traces and probe dtypes on purpose: JG601-JG604, JG103, JG104 and
JG903 are off in test files unless selected by code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
REUSE = "import jax\n\ndef check(key):\n    a = jax.random.normal(key)\n    b = jax.random.normal(key)\n    return a, b\n"


def codes(root: Path, *args: str) -> dict[str, list[str]]:
    result = subprocess.run(
        [sys.executable, "-m", "jaxguard", "check", "--output-format", "json", *args], cwd=root, capture_output=True, text=True
    )
    assert result.returncode in (0, 1), result.stderr
    found: dict[str, list[str]] = {}
    for d in json.loads(result.stdout):
        found.setdefault(Path(d["path"]).as_posix(), []).append(d["code"])
    return found


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxguard]\n")
    for name in ("lib/sample.py", "tests/helpers.py", "lib/sample_test.py", "test_sample.py", "conftest.py"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(REUSE)
    return tmp_path


def test_key_reuse_is_reported_in_library_code_and_not_in_tests(project):
    assert codes(project, ".") == {"lib/sample.py": ["JG601"]}


def test_selecting_the_code_turns_it_on_in_tests(project):
    found = codes(project, ".", "--select", "JG601")
    assert sorted(found) == ["conftest.py", "lib/sample.py", "lib/sample_test.py", "test_sample.py", "tests/helpers.py"]


@pytest.mark.parametrize("selection", [["--select", "JG6"], ["--select", "ALL"], ["--extend-select", "JG"]])
def test_a_prefix_or_all_does_not(project, selection):
    assert codes(project, ".", *selection).get("test_sample.py", []) == []


def test_the_test_files_setting_replaces_the_patterns(project):
    (project / "pyproject.toml").write_text('[tool.jaxguard]\ntest-files = ["tests/"]\n')
    assert sorted(codes(project, ".")) == ["conftest.py", "lib/sample.py", "lib/sample_test.py", "test_sample.py"]
    (project / "pyproject.toml").write_text("[tool.jaxguard]\ntest-files = []\n")
    assert len(codes(project, ".")) == 5


def test_other_rules_still_run_in_tests(project):
    (project / "test_sample.py").write_text("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n")
    assert codes(project, ".")["test_sample.py"] == ["JG301"]


def test_the_rule_list_says_so():
    out = subprocess.run([sys.executable, "-m", "jaxguard", "rules"], capture_output=True, text=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("JG601"))
    assert line.split()[2] == "on" and "(off in test files)" in line


@pytest.mark.skipif(not (BIN / "flake8").exists(), reason="flake8 is not installed")
def test_flake8_agrees(project):
    def flake8(*select):
        result = subprocess.run([str(BIN / "flake8"), "--select", *select, "test_sample.py", "lib/sample.py"],
                                cwd=project, capture_output=True, text=True)
        return sorted(line.split(":")[0] for line in result.stdout.splitlines())

    assert flake8("JG") == ["lib/sample.py"]
    assert flake8("JG601") == ["lib/sample.py", "test_sample.py"]


TRACE_COUNTER = (
    "import jax\nimport jax.numpy as jnp\ncalls = {'n': 0}\ntraces = 0\n\n@jax.jit\ndef f(x):\n"
    "    global traces\n    traces += 1\n    calls['n'] += 1\n    return x.astype(jnp.float64)\n\n"
    "def check():\n    return f([1.0, 2.0])\n"
)


def test_trace_counters_dtype_probes_and_list_arguments_are_reported_in_library_code_and_not_in_tests(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxguard]\n")
    for name in ("lib/step.py", "tests/test_step.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(TRACE_COUNTER)
    assert codes(tmp_path, ".") == {"lib/step.py": ["JG103", "JG104", "JG903", "JG502"]}
    found = codes(tmp_path, ".", "--select", "JG103,JG104,JG502,JG903")
    assert found["tests/test_step.py"] == ["JG103", "JG104", "JG903", "JG502"]


SMOKE = (
    "import jax\n\ndef layer(key):\n    return jax.random.normal(key)\n\n"
    "def test_layer():\n    key = jax.random.key(0)\n    return jax.random.normal(key), jax.random.uniform(key)\n\n"
    "if __name__ == '__main__':\n    key = jax.random.key(0)\n    print(jax.random.normal(key), jax.random.uniform(key))\n"
)


@pytest.fixture
def smoke(tmp_path):
    # a library module with a `test_*` smoke function and a `__main__` demo (kinetix's
    # `test_ued`, alpa's `test_gpt_lm`), the same module as a script, and a module importing it
    (tmp_path / "pyproject.toml").write_text("[tool.jaxguard]\n")
    for name, text in {"pkg/__init__.py": "", "pkg/layers.py": SMOKE, "pkg/model.py": "from pkg.layers import layer\n",
                       "scripts/demo.py": SMOKE}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_test_function_in_other_files_is_quiet_as_tests_are(smoke):
    found = codes(smoke, ".")
    # the smoke function and the imported module's `__main__` demo are quiet (in the unseen
    # corpora such demos held 1 real bug in 38 judged findings); a script's `__main__` block,
    # which nothing imports, is its program and is checked
    assert "pkg/layers.py" not in found and found["scripts/demo.py"] == ["JG601"]


def test_a_main_block_is_checked_when_no_module_imports_its_module(smoke):
    (smoke / "pkg" / "model.py").write_text("import jax\n")
    found = codes(smoke, ".")
    assert found["pkg/layers.py"] == ["JG601"] and found["scripts/demo.py"] == ["JG601"]


def test_selecting_the_code_reports_test_code_too(smoke):
    found = codes(smoke, ".", "--select", "JG601")
    assert found["pkg/layers.py"] == ["JG601", "JG601"] and found["scripts/demo.py"] == ["JG601", "JG601"]


def test_a_function_named_as_a_test_is_a_smoke_test_however_it_is_named(smoke):
    # `def regular_test():` run from a `__main__` block: named by the `*_test` convention
    (smoke / "pkg" / "model.py").write_text("import jax\n")  # nothing imports layers: its main block is checked
    source = SMOKE.replace("def test_layer():", "def regular_test():")
    (smoke / "pkg" / "layers.py").write_text(source)
    found = codes(smoke, ".")
    assert found["pkg/layers.py"] == ["JG601"]  # the main block's; regular_test is quiet
    (smoke / "pkg" / "layers.py").write_text(source.replace("def regular_test():", "def regular():"))
    assert codes(smoke, ".")["pkg/layers.py"] == ["JG601", "JG601"]
