"""The pytest plugin: off by default, `--jaxguard`, the fixture and the marker."""

import importlib.metadata
import subprocess
import sys

pytest_plugins = ["pytester"]

TESTS = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit  # jitted at import: guarded only with --jaxguard
def module_level(x):
    return jnp.log(x)

def test_module_level():
    module_level(-1.)

@pytest.mark.jaxguard
def test_marker():
    jax.jit(jnp.log)(-1.)

@pytest.mark.jaxguard(infs=True)
def test_marker_options(jaxguard):
    with pytest.raises(jaxguard.InfError):
        jax.jit(lambda x: 1. / x)(0.)

def test_fixture(jaxguard):
    with pytest.raises(jaxguard.NaNError):
        jax.jit(jnp.log)(-1.)

def test_without_guards():
    jax.jit(jnp.log)(-1.)
"""


def _plugin_args():
    # Installed packages load the plugin through the pytest11 entry point; a source
    # checkout needs -p.
    names = {ep.name for ep in importlib.metadata.entry_points(group="pytest11")}
    return [] if "jaxguard" in names else ["-p", "jaxguard.runtime.pytest_plugin"]


def _run(pytester, *args):
    pytester.makepyfile(test_sample=TESTS)
    return pytester.runpytest_subprocess(*_plugin_args(), *args)


def test_off_unless_asked(pytester):
    result = _run(pytester)
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["E *.NaNError: test_sample.py:14: NaN produced by `log`*"])


def test_session_flag(pytester):
    result = _run(pytester, "--jaxguard")
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(["E *.NaNError: test_sample.py:7: NaN produced by `log`*",
                                 "E *.NaNError: test_sample.py:14: NaN produced by `log`*",
                                 "E *.NaNError: test_sample.py:26: NaN produced by `log`*"])


def test_plugin_loads_without_jax():
    # pytest imports the plugin in every run: it must not need (or import) jax.
    code = ("import sys; sys.modules['jax'] = None\n"
            "import jaxguard.runtime.pytest_plugin\n"
            "import jaxguard.runtime as runtime\n"
            "assert runtime.NaNError and sys.modules['jax'] is None")
    subprocess.run([sys.executable, "-c", code], check=True)
