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
    # pytest-asyncio (installed for the language server's tests) warns at configure time in
    # projects that do not configure it, which `filterwarnings = error` makes fatal: not ours
    no_asyncio = ["-p", "no:asyncio"] if "asyncio" in names else []
    return no_asyncio + ([] if "jaxguard" in names else ["-p", "jaxguard.runtime.pytest_plugin"])


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


OOB_TEST = """
import jax.numpy as jnp

def gather(x, i):
    return x[i]

def test_oob():
    gather(jnp.arange(3.), jnp.array([5]))
"""


def test_failure_report_hides_jaxguards_frames(pytester):
    pytester.makepyfile(test_oob_sample=OOB_TEST)
    result = pytester.runpytest_subprocess(*_plugin_args(), "--jaxguard")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E *OutOfBoundsError: test_oob_sample.py:4: index 5 is out of bounds*"])
    assert "jaxguard/runtime" not in result.stdout.str()


RECOMPILE_TESTS = """
import jax
import jax.numpy as jnp
import pytest

@jax.jit
def module_level(x):
    return x * 2

def make_step(scale):
    return jax.jit(lambda x: x * scale)

@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_each_test_its_own_shape_and_factory(n):
    module_level(jnp.ones(n))
    make_step(2.)(jnp.ones(2))

def test_within_one_test_it_warns():
    with pytest.warns(UserWarning, match="traced and compiled 4 times"):
        for n in range(10, 14):  # shapes no earlier test compiled
            module_level(jnp.ones(n))
"""


def test_recompiles_are_counted_per_test(pytester):
    pytester.makepyfile(test_recompile_sample=RECOMPILE_TESTS)
    result = pytester.runpytest_subprocess(*_plugin_args(), "--jaxguard", "-W",
                                           "error::UserWarning")
    result.assert_outcomes(passed=6)


RECOMPILING_TEST = """
import jax
import jax.numpy as jnp

@jax.jit
def f(x):
    return x * 2

def test_many_shapes():
    for n in range(1, 8):  # a test that varies its inputs on purpose
        f(jnp.ones(n))
"""


def test_a_projects_filterwarnings_error_does_not_fail_tests_on_jaxguards_warnings(pytester):
    pytester.makepyfile(test_shapes=RECOMPILING_TEST)
    pytester.makeini("[pytest]\nfilterwarnings =\n    error\n")
    shown = pytester.runpytest_subprocess(*_plugin_args(), "--jaxguard")
    shown.assert_outcomes(passed=1, warnings=1)
    assert "RecompileWarning" in shown.stdout.str()
    strict = pytester.runpytest_subprocess(*_plugin_args(), "--jaxguard", "-W", "error::jaxguard.RecompileWarning")
    strict.assert_outcomes(failed=1)


CROWDED_TESTS = """
import jax
import jaxguard.runtime.pytest_plugin as plugin

plugin._MAPS_CHECKED_EVERY = 1
plugin._memory_maps_crowded = lambda: True  # as if near vm.max_map_count
traces = []

@jax.jit
def module_level(x):
    traces.append(1)
    return x * 2

def test_first():
    module_level(1.)

def test_second_after_the_caches_were_cleared():
    module_level(1.)
    assert len(traces) == 2
"""


def test_compiled_code_is_released_when_memory_maps_run_short(pytester):
    # Thousands of tests that keep their jitted functions reach the kernel's limit on
    # memory maps, where XLA's compiler crashes (distrax's suite under --jaxguard).
    pytester.makepyfile(test_crowded_sample=CROWDED_TESTS)
    result = pytester.runpytest_subprocess(*_plugin_args(), "--jaxguard")
    result.assert_outcomes(passed=2)


def test_memory_maps_are_counted_on_linux():
    from jaxguard.runtime.pytest_plugin import _memory_maps_crowded

    assert _memory_maps_crowded() is False  # a test process is far from the limit


def test_warnings_as_errors_and_a_conftest_that_jits_at_import(pytester):
    # numpyro's and equinox's configs turn warnings into errors; their conftests import
    # modules with module-level jax.jit before --jaxguard enables the guards
    pytester.makeini("[pytest]\nfilterwarnings =\n    error\n")
    pytester.makeconftest("import jax\n\n@jax.jit\ndef early(x):\n    return x\n")
    pytester.makepyfile(test_sample="import jax\nimport jax.numpy as jnp\n\ndef test_runs():\n    assert jax.jit(jnp.sin)(0.0) == 0.0\n")
    result = pytester.runpytest_subprocess(*_plugin_args(), "--jaxguard")
    result.assert_outcomes(passed=1)
    result.stderr.fnmatch_lines(["jaxguard: jaxguard.enable() was called after 1 function(s)*"])


def test_key_uses_do_not_carry_over_between_tests(pytester):
    pytester.makepyfile(test_keys="""
import jax
KEY = jax.random.key(0)

def test_first():
    jax.random.normal(KEY)

def test_second():
    jax.random.normal(KEY)

def test_reuse_within_one_test_is_still_caught():
    import pytest
    import jaxguard
    key = jax.random.key(1)
    jax.random.normal(key)
    with pytest.raises(jaxguard.KeyReuseError):
        jax.random.uniform(key)
""")
    result = pytester.runpytest_subprocess(*_plugin_args(), "--jaxguard")
    result.assert_outcomes(passed=3)


DEFERRED_TESTS = """
import jax
import jax.numpy as jnp

@jax.jit
def step(x, scale):
    return jnp.log(x * scale)

def test_last_step_makes_a_nan():
    for i in range(30):  # past the first calls, read at once: later ones are read one call late
        step(jnp.ones(2), -1.0 if i == 29 else 1.0)

def test_next_test_is_clean():
    for i in range(30):
        step(jnp.ones(2), 1.0)
"""


def test_a_check_read_late_fails_the_test_that_made_it(pytester):
    pytester.makepyfile(test_deferred_sample=DEFERRED_TESTS)
    result = pytester.runpytest_subprocess(*_plugin_args(), "--jaxguard")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["E *NaNError: test_deferred_sample.py:6: NaN*Call 30 of step()*",
                                 "FAILED test_deferred_sample.py::test_last_step_makes_a_nan*"])
    assert "pytest_plugin.py" not in result.stdout.str()
    assert "test_next_test_is_clean FAILED" not in result.stdout.str()
