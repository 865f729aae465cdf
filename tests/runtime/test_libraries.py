"""Alarms inside installed packages: a warning at the user's call by default
(`libraries="warn"`), an error with `libraries="raise"` or per package; the user's own code
always raises."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("jax")

FAKELIB = """
import jax
import jax.numpy as jnp

def init_model(key):
    a = jax.random.normal(key)
    b = jax.random.uniform(key)  # the library reuses the key it is given
    return a + b

@jax.jit
def read_past_end(x):
    return x[jnp.asarray(x.shape[0])]

RUNS = []

@jax.jit
def counted_read_past_end(x):
    jax.debug.callback(lambda: RUNS.append(1))  # counts the runs of the compiled program
    return x[jnp.asarray(x.shape[0])]

def eager_read_past_end(x):
    # op by op, as under an eager grad: checked on the host
    return jax.lax.dynamic_slice(x, (jnp.asarray(x.shape[0]),), (1,))
"""


def run(tmp_path, body: str) -> subprocess.CompletedProcess:
    package = tmp_path / "site-packages" / "fakelib"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(FAKELIB)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site-packages"), JAX_PLATFORMS="cpu")
    script = tmp_path / "user.py"
    script.write_text("import warnings\nimport jax, jax.numpy as jnp\nimport jaxguard\n" + textwrap.dedent(body))
    return subprocess.run([sys.executable, "-W", "always", str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def test_a_librarys_eager_out_of_bounds_read_is_a_warning_too(tmp_path):
    result = run(tmp_path, """
        jaxguard.enable()
        import fakelib
        fakelib.eager_read_past_end(jnp.arange(3.0))
        print("ran")
    """)
    assert "ran" in result.stdout, result.stderr[-1500:]
    (warning,) = [line for line in result.stderr.splitlines() if "LibraryGuardWarning" in line]
    assert "user.py:" in warning.split(": Library")[0] and "out of bounds" in warning
    assert "(Inside fakelib, not your code" in result.stderr


def test_a_librarys_alarm_is_a_warning_at_the_users_call(tmp_path):
    result = run(tmp_path, """
        jaxguard.enable()
        import fakelib
        fakelib.init_model(jax.random.key(0))
        fakelib.read_past_end(jnp.arange(3.0))
        print("ran")
    """)
    assert "ran" in result.stdout, result.stderr[-1500:]
    warnings = [line for line in result.stderr.splitlines() if "LibraryGuardWarning" in line]
    assert len(warnings) == 2 and all("user.py:" in line.split(": Library")[0] for line in warnings), result.stderr[-1500:]
    assert "Inside fakelib" in warnings[0] and "PRNG key reused" in warnings[0]
    assert "out of bounds" in warnings[1]


@pytest.mark.parametrize("libraries", ["'raise'", "{'fakelib': 'raise'}"])
def test_raise_makes_it_an_error(tmp_path, libraries):
    result = run(tmp_path, f"""
        jaxguard.enable(libraries={libraries})
        import fakelib
        try:
            fakelib.init_model(jax.random.key(0))
        except jaxguard.KeyReuseError:
            print("KeyReuseError")
    """)
    assert result.stdout.strip() == "KeyReuseError", result.stderr[-1500:]


def test_the_users_own_reuse_still_raises(tmp_path):
    result = run(tmp_path, """
        jaxguard.enable()
        key = jax.random.key(0)
        jax.random.normal(key)
        try:
            jax.random.uniform(key)
        except jaxguard.KeyReuseError:
            print("KeyReuseError")
    """)
    assert result.stdout.strip() == "KeyReuseError", result.stderr[-1500:]


def test_a_bad_value_is_refused():
    import jaxguard

    with pytest.raises(ValueError, match="libraries="):
        jaxguard.enable(libraries="ignore")


def test_a_recurring_library_read_is_located_once_not_on_every_call(tmp_path):
    result = run(tmp_path, """
        jaxguard.enable()
        import fakelib
        for _ in range(4):
            fakelib.read_past_end(jnp.arange(3.0))
        print("ran")
    """)
    assert "ran" in result.stdout, result.stderr[-1500:]
    assert result.stderr.count("re-running it with every operation checked") == 1, result.stderr[-2000:]
    assert "a check failed inside read_past_end()" in result.stderr
    assert "RecompileWarning" not in result.stderr


def test_the_program_that_keeps_a_library_reads_error_is_compiled_by_the_first_call(tmp_path):
    # the first call (already slow: it locates the read) compiles what later calls run, so
    # a timed second call (equinox's checkpointed-loop speed test) does not compile
    result = run(tmp_path, """
        jaxguard.enable()
        import fakelib
        fakelib.read_past_end(jnp.arange(3.0))
        twins = fakelib.read_past_end._twins
        compiled = {key: twin._cache_size() for key, twin in twins.items()}
        fakelib.read_past_end(jnp.arange(3.0))
        print("same", compiled == {key: twin._cache_size() for key, twin in twins.items()})
    """)
    assert "same True" in result.stdout, result.stdout + result.stderr[-1500:]


def test_a_recurring_library_read_costs_no_extra_run_after_the_first_call(tmp_path):
    # first call: the program, the locating re-run and the warm-up of the twin that keeps
    # the error; each later call (read late or at once): one run, and no second warning
    result = run(tmp_path, """
        jaxguard.enable()
        import fakelib
        for _ in range(30):
            fakelib.counted_read_past_end(jnp.arange(3.0))
        jaxguard.flush()
        jax.effects_barrier()
        print("runs", len(fakelib.RUNS))
    """)
    # (the locating program runs the body twice: as checked, and with what ops make zeroed)
    assert "runs 33" in result.stdout, result.stdout + result.stderr[-1500:]
    assert result.stderr.count("LibraryGuardWarning") == 1, result.stderr[-3000:]


def test_each_test_is_warned_about_a_librarys_alarm(tmp_path):
    package = tmp_path / "site-packages" / "fakelib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKELIB)
    (tmp_path / "test_uses_fakelib.py").write_text(textwrap.dedent("""
        import jax.numpy as jnp
        import pytest
        import jaxguard

        @pytest.mark.parametrize("n", [1, 2])
        def test_reads_past_end(n):
            import fakelib
            with pytest.warns(jaxguard.LibraryGuardWarning, match="out of bounds"):
                fakelib.read_past_end(jnp.arange(3.0))
    """))
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site-packages"), JAX_PLATFORMS="cpu")
    from test_pytest_plugin import _plugin_args

    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *_plugin_args(),
                             "--jaxguard", str(tmp_path / "test_uses_fakelib.py")],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert "2 passed" in result.stdout, result.stdout[-2000:] + result.stderr[-1500:]
