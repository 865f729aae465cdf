"""Each call's check is read once the next guarded call is dispatched (one call late), so a
training loop keeps the device busy; the error says which call made it."""

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from runtime_helpers import assert_where, line_of

import jaxguard
from jaxguard.runtime import jitwrap


def run_loop(calls, bad_at):
    def step(x, scale):  # a new function each time: its calls are counted from one
        return jnp.log(x * scale)  # deferred-op-line

    f = jax.jit(step)
    x = jnp.ones(4)
    for i in range(calls):
        f(x, -1.0 if i == bad_at else 1.0)  # deferred-call-line


def test_a_loop_raises_one_call_late_naming_the_call_and_the_op(guards):
    with pytest.raises(jaxguard.NaNError) as info:
        run_loop(calls=30, bad_at=19)
    assert_where(info.value, line_of("# deferred-op-line"))
    message = str(info.value)
    assert "Call 20 of step(), made at" in message and line_of("# deferred-call-line") in message
    assert "one call late" in message and "deferred=False" in message


def test_the_first_calls_of_a_function_raise_at_their_own_call(guards):
    with pytest.raises(jaxguard.NaNError) as info:
        run_loop(calls=30, bad_at=jitwrap._SYNC_CALLS - 1)
    assert "one call late" not in str(info.value)


def test_a_loop_whose_last_call_fails_raises_when_the_guard_block_ends():
    with pytest.raises(jaxguard.NaNError, match="Call 30 of step"):
        with jaxguard.guard():
            run_loop(calls=30, bad_at=29)


def test_flush_reads_the_last_call_now(guards):
    run_loop(calls=30, bad_at=29)
    with pytest.raises(jaxguard.NaNError, match="Call 30 of step"):
        jaxguard.flush()
    jaxguard.flush()  # read once: nothing left


def test_deferred_false_reads_every_call_at_once():
    with jaxguard.guard(deferred=False):
        with pytest.raises(jaxguard.NaNError) as info:
            run_loop(calls=30, bad_at=19)
    assert "one call late" not in str(info.value)


def test_a_block_that_fails_for_its_own_reason_is_not_masked():
    with pytest.raises(ZeroDivisionError):
        with jaxguard.guard():
            run_loop(calls=30, bad_at=29)
            1 / 0
    jaxguard.flush()  # the dropped check does not come back later


def test_clean_loops_are_unaffected(guards):
    f = jax.jit(lambda x: x * 2 + 1)
    x = jnp.ones(3)
    for _ in range(50):
        x = f(x) / 2
    np.testing.assert_allclose(x, np.full(3, 26.0))  # x + 1/2 per step


def test_the_last_call_of_a_script_is_reported_at_exit(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import jaxguard
        jaxguard.enable()
        import jax, jax.numpy as jnp
        f = jax.jit(lambda x, s: jnp.log(x * s))
        for i in range(20):
            f(jnp.ones(2), -1.0 if i == 19 else 1.0)
        print("loop done")
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert "loop done" in done.stdout
    assert "jaxguard: the last guarded call failed its check: NaNError" in done.stderr
    assert "Call 20 of <lambda>()" in done.stderr and "train.py:7" in done.stderr
