"""checking(): whole-program mode through a patched jax.jit."""

import json
import warnings

import jax
import jax.numpy as jnp
import pytest
from conftest import line_of

from jaxguard.precision import PrecisionWarning, _ops, checking


def test_checks_first_calls_and_logs_failures(tmp_path):
    log = tmp_path / "precision.log"
    original = jax.jit
    _ops._CACHE.clear()
    with checking(path=str(log), max_checks=2) as session:
        assert jax.jit is not original

        @jax.jit
        def step(x):
            return (x + 1e8) - 1e8  # PROGRAM_CANCEL

        outs = [step(jnp.ones(4) * (i + 0.5)) for i in range(5)]
    assert jax.jit is original
    # The program itself runs as usual (jitted: XLA folds the cancellation away).
    assert float(outs[3][0]) == 3.5
    assert len(session.reports) == 2  # only the first max_checks calls are checked
    assert len(_ops._CACHE) == 1  # and they share one compiled instrumented program
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(entries) == 1  # log_once: one line per site
    assert entries[0]["source"] == line_of("PROGRAM_CANCEL") and entries[0]["checked_function"] == "step"


def test_warns_without_path_and_handles_static_arguments():
    with checking() as session:

        @jax.jit(static_argnums=1)
        def scale(x, n):
            return (x + 1e8) - 1e8 * n

        with pytest.warns(PrecisionWarning, match="scale: sub at"):
            scale(jnp.ones(3), 1)
    assert session.reports


def test_clean_program_is_quiet_and_nested_calls_are_skipped():
    with checking() as session:

        @jax.jit
        def inner(x):
            return x * 2.0

        @jax.jit
        def outer(x):
            return inner(x) + 1.0  # inner sees tracers here: not checked separately

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert float(outer(jnp.ones(()))) == 3.0
    assert session.reports == []
    assert inner._checked_calls == 0 and outer._checked_calls == 1


def test_wrapped_function_keeps_jit_api():
    with checking():
        f = jax.jit(lambda x: x + 1.0)
        assert "add" in str(f.lower(jnp.ones(2)).as_text())


def test_checker_errors_never_break_the_program(monkeypatch):
    from jaxguard.precision import _checking

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(_checking, "check_ops", broken)
    with checking():
        f = jax.jit(lambda x: x * 3.0)
        with pytest.warns(PrecisionWarning, match="could not check"):
            assert float(f(jnp.ones(()))) == 3.0


def test_jitted_methods_still_bind():
    with checking() as session:

        class Model:
            @jax.jit(static_argnums=0)
            def __call__(self, x):
                return x * 2.0

            @jax.jit(static_argnums=0)
            def shifted(self, x):
                return (x + 1e8) - 1e8

        model = Model()
        assert float(model(jnp.ones(()))) == 2.0
        with pytest.warns(PrecisionWarning, match="sub at"):
            model.shifted(jnp.ones(3) * 0.5)
    assert len(session.reports) == 1


def test_enable_precision_enters_checking(tmp_path):
    runtime = pytest.importorskip("jaxguard.runtime")
    log = tmp_path / "precision.log"
    with warnings.catch_warnings():  # the runtime warns about functions jitted by earlier tests
        warnings.simplefilter("ignore", runtime.GuardCoverageWarning)
        runtime.enable(precision={"path": str(log)})
    try:

        @jax.jit
        def shifted(x):
            return (x + 1e4) - 1e4  # ENABLE_CANCEL

        shifted(jnp.linspace(0.1, 1.0, 8))
    finally:
        runtime.disable()
    entry = json.loads(log.read_text().splitlines()[0])
    assert entry["source"] == line_of("ENABLE_CANCEL")


def test_donated_arguments_are_checked_before_the_call():
    with checking() as session:
        step = jax.jit(lambda x: (x + 1e8) - 1e8, donate_argnums=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # CPU may decline the donation
            step(jnp.ones(4) * 0.5)
    assert len(session.reports) == 1 and session.reports[0].first_failure.primitive == "sub"
