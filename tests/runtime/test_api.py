"""enable / disable / guard: settings restored exactly, idempotent, thread-safe, clear
errors and warnings."""

import subprocess
import sys
import threading
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import api
from jax._src.array import ArrayImpl
from jax._src.random import core as random_core

import jaxguard
from jaxguard import runtime

FLAGS = ["jax_enable_x64", "jax_check_tracer_leaks", "jax_numpy_rank_promotion",
         "jax_transfer_guard_host_to_device", "jax_transfer_guard_device_to_device",
         "jax_transfer_guard_device_to_host", "jax_debug_nans", "jax_debug_key_reuse",
         "jax_check_static_indices"]
ALL_ON = dict(x64=True, infs=True, tracer_leaks=True, transfers="log", rank_promotion="raise")


def _snapshot():
    # The key guard hooks the key check every jax.random function runs first; the eager
    # checks, the array read and jax's post-call hook.
    return ({flag: getattr(jax.config, flag) for flag in FLAGS}, jax.jit,
            random_core._check_prng_key, jnp.take, ArrayImpl._value,
            api._post_hook_state.get_global())


def test_package_root_exports_the_runtime_names():
    for name in ["enable", "disable", "guard", "GuardError", "NaNError", "InfError",
                 "OutOfBoundsError", "KeyReuseError", "RecompileWarning"]:
        assert getattr(jaxguard, name) is getattr(runtime, name)
    assert issubclass(jaxguard.NaNError, jaxguard.GuardError)


def test_import_jaxguard_does_not_import_jax():
    code = "import sys, jaxguard; assert 'jax' not in sys.modules, 'jax imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_enable_disable_restores_every_setting():
    before = _snapshot()
    runtime.enable(**ALL_ON)
    try:
        assert jax.config.jax_enable_x64 and jax.config.jax_check_tracer_leaks
        assert jax.config.jax_numpy_rank_promotion == "raise"
        assert jax.config.jax_transfer_guard_host_to_device == "log"
        assert jax.jit is not before[1] and random_core._check_prng_key is not before[2]
        assert not jax.config.jax_debug_key_reuse  # never the 10x-per-call checker
        assert jnp.zeros(2).dtype == jnp.float64
    finally:
        runtime.disable()
    assert _snapshot() == before
    assert not runtime.is_enabled()


def test_guard_restores_and_nests():
    before = _snapshot()
    with jaxguard.guard(rank_promotion="warn"):
        assert jax.config.jax_numpy_rank_promotion == "warn"
        with jaxguard.guard(rank_promotion="raise", key_reuse=False):
            assert jax.config.jax_numpy_rank_promotion == "raise"
            assert random_core._check_prng_key is before[2]
        assert jax.config.jax_numpy_rank_promotion == "warn"
        assert random_core._check_prng_key is not before[2]
    assert _snapshot() == before


def test_guard_restores_after_an_error():
    before = _snapshot()
    with pytest.raises(jaxguard.NaNError), jaxguard.guard(x64=True):
        jax.jit(jnp.log)(-1.)
    assert _snapshot() == before


def test_enable_is_idempotent():
    before = _snapshot()
    try:
        runtime.enable()
        guarded_jit = jax.jit
        runtime.enable()
        assert jax.jit is guarded_jit
        runtime.enable(infs=True)  # other options: reconfigured, not stacked
        runtime.disable()
        runtime.disable()
    finally:
        runtime.disable()
    assert _snapshot() == before


def test_functions_jitted_under_guards_run_plain_after_disable():
    with jaxguard.guard():
        f = jax.jit(jnp.log)
    assert np.isnan(f(-1.))
    assert f.lower(1.).compile() is not None  # jit attributes still work


def test_enable_disable_from_many_threads():
    before = _snapshot()
    errors = []

    def worker():
        try:
            for _ in range(20):
                with jaxguard.guard():
                    pass
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert _snapshot() == before


def test_guards_work_in_another_thread():
    results = []

    def worker():
        try:
            jax.jit(jnp.log)(-1.)
        except jaxguard.NaNError as exc:
            results.append(exc)

    with jaxguard.guard():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert len(results) == 1


def test_enable_under_a_trace_warns_and_leaves_x64_alone():
    before = _snapshot()

    def f(x):
        with pytest.warns(jaxguard.GuardCoverageWarning, match="inside a jit/vmap/grad trace.*x64 was left"):
            runtime.enable(x64=True)
        return x * 2

    try:
        jax.make_jaxpr(f)(1.)
        assert not jax.config.jax_enable_x64
    finally:
        runtime.disable()
    assert _snapshot() == before


def test_enable_after_jitting_user_functions_warns():
    jitted_early = jax.jit(lambda x: x + 1)  # noqa: F841 - must be alive
    try:
        with pytest.warns(jaxguard.GuardCoverageWarning, match="already wrapped with jax.jit"):
            runtime.enable()
    finally:
        runtime.disable()


@pytest.mark.parametrize("options, message", [
    (dict(nans="yes"), "nans= must be True or False"),
    (dict(recompiles=-1), "recompiles= must be a positive int"),
    (dict(recompiles=2.5), "recompiles= must be a positive int"),
    (dict(transfers="sometimes"), "transfers= must be None or one of"),
    (dict(rank_promotion="loud"), "rank_promotion= must be None or one of"),
    (dict(x64="on"), "x64= must be None, True or False"),
    (dict(precision=3), "precision= must be None, True, False or a dict"),
])
def test_bad_options_give_one_line_errors(options, message):
    before = _snapshot()
    with pytest.raises(ValueError, match=message):
        runtime.enable(**options)
    assert _snapshot() == before


def test_unknown_guard_option():
    with pytest.raises(TypeError, match="unknown option"), jaxguard.guard(nan=True):
        pass


def test_precision_checking_is_entered_and_exited():
    precision = pytest.importorskip("jaxguard.precision")
    if not hasattr(precision, "checking"):
        pytest.skip("jaxguard.precision has no checking() yet")
    before = _snapshot()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with jaxguard.guard(precision={"max_checks": 1}):
            f = jax.jit(lambda x: jnp.log(x) * 2)
            assert float(f(jnp.float32(1.))) == 0.
            with pytest.raises(jaxguard.NaNError):
                f(jnp.float32(-1.))
    assert _snapshot() == before
