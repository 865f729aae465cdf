"""pytest plugin (entry point `pytest11`), off unless asked.

- `pytest --jaxguard`: guards on for the whole session (enabled before test modules are
  imported, so module-level `@jax.jit` functions are guarded too).
- `@pytest.mark.jaxguard(**enable_options)`: guards on for one test.
- the `jaxguard` fixture: guards on for one test; it returns `jaxguard.runtime`.

pytest loads this module in every run, so it must not import jax at import time.
"""

from __future__ import annotations

import sys
import warnings

import pytest

_SESSION_KEY = pytest.StashKey[bool]()
_TESTS_RUN = pytest.StashKey[int]()
_MAPS_CHECKED_EVERY = 100  # tests


def pytest_addoption(parser):
    group = parser.getgroup("jaxguard")
    group.addoption("--jaxguard", action="store_true", default=False,
                    help="enable jaxguard's runtime guards (NaN, out-of-bounds, key reuse, "
                         "recompiles) for the whole test session")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "jaxguard(**options): run this test with jaxguard's runtime guards "
                   "enabled; options are those of jaxguard.enable()")
    # jaxguard's warnings (a recompilation, an alarm inside an installed package, a part
    # left unchecked) are shown, not failed by a project's `filterwarnings = error`: the
    # guard must not break a passing suite. Later ini lines win; `-W error::...` still does.
    config.addinivalue_line("filterwarnings", "default::jaxguard.runtime.errors.GuardWarning")
    if config.getoption("jaxguard", default=False):
        runtime = _import_runtime("--jaxguard")
        # What enable() has to say (functions jitted before it, by a conftest's imports) is
        # a note for the session, not a warning: a project's `filterwarnings = error` would
        # turn it into an internal error that runs no test at all.
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            runtime.enable()
        for note in said:
            sys.stderr.write(f"jaxguard: {note.message}\n")
        config.stash[_SESSION_KEY] = True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Recompilations and key uses are counted per test: a jitted factory closure rebuilt by
    # every test, or a module-level function called with new shapes by each, is no problem.
    recompile = sys.modules.get("jaxguard.runtime.recompile")
    if recompile is not None:
        recompile.reset()
    # Key uses too: each test is a program of its own (a module-level KEY drawn from by two
    # tests is no reuse within either).
    keys = sys.modules.get("jaxguard.runtime.keys")
    if keys is not None:
        keys.reset()
    errors = sys.modules.get("jaxguard.runtime.errors")
    if errors is not None:
        errors.forget_library_warnings()  # said once per test, where `pytest.warns` looks
    jitwrap = sys.modules.get("jaxguard.runtime.jitwrap")
    if jitwrap is not None:
        jitwrap.take_unread()  # an unread check left by a test that failed: not this test's
        jitwrap.count_calls_anew()  # a test's first calls of each function raise where made
    if item.config.stash.get(_SESSION_KEY, False):
        run = item.config.stash[_TESTS_RUN] = item.config.stash.get(_TESTS_RUN, 0) + 1
        if run % _MAPS_CHECKED_EVERY == 0 and _memory_maps_crowded():
            # Every compiled program holds memory maps (guarded functions hold about twice
            # a plain jit's); a session of thousands of tests that keep their jitted
            # functions reaches the kernel's limit, where XLA's compiler crashes.
            sys.modules["jax"].clear_caches()


@pytest.hookimpl(trylast=True)
def pytest_runtest_call(item):
    # After a passing test body (a failing one stops the hook chain before this): the check
    # of its last guarded call, read one call late, fails this test rather than the next.
    __tracebackhide__ = True
    jitwrap = sys.modules.get("jaxguard.runtime.jitwrap")
    if jitwrap is not None:
        jitwrap.flush()


def _memory_maps_crowded() -> bool:
    """Linux: does this process use over half of its memory maps (vm.max_map_count)?"""
    try:
        with open("/proc/sys/vm/max_map_count") as limit_file:
            limit = int(limit_file.read())
        with open("/proc/self/maps", "rb") as maps:
            used = sum(1 for _ in maps)
    except (OSError, ValueError):
        return False
    return used > limit // 2


def pytest_unconfigure(config):
    if config.stash.get(_SESSION_KEY, False):
        _import_runtime("--jaxguard").disable()


def _import_runtime(what: str):
    try:
        from jaxguard import runtime
    except ImportError as exc:
        raise pytest.UsageError(f"{what} needs jax installed (pip install jaxguard[runtime]): "
                                f"{exc}") from None
    return runtime


def _guarded_test(request, what: str):
    runtime = _import_runtime(what)
    from jaxguard.runtime._api import guarded

    marker = request.node.get_closest_marker("jaxguard")
    options = dict(marker.kwargs) if marker is not None else {}
    return runtime, guarded(options, warn_late=False)


@pytest.fixture
def jaxguard(request):
    """Enable jaxguard's runtime guards for this test (options from a jaxguard marker)."""
    runtime, context = _guarded_test(request, "the jaxguard fixture")
    with context:
        yield runtime


@pytest.fixture(autouse=True)
def _jaxguard_marker(request):
    if request.node.get_closest_marker("jaxguard") is None \
            or "jaxguard" in request.fixturenames:
        yield
        return
    _, context = _guarded_test(request, "@pytest.mark.jaxguard")
    with context:
        yield
