"""The flake8 entry point: a thin adapter over the lint engine.

flake8 does the selecting and prints `col + 1`, so the plugin yields 0-based columns: the
same lines and columns as `jaxguard check`. Opt-in rules run only when selected by their
exact code, as in the CLI: flake8 would let `--select JG` switch them on, so the plugin
decides that itself. Fixes are CLI-only.
"""

from __future__ import annotations

import functools
from pathlib import Path

from jaxguard._version import __version__
from jaxguard.lint.engine import LintSettings, lint_source
from jaxguard.lint.registry import all_rules


@functools.lru_cache(maxsize=1)
def _config():
    """The [tool.jaxguard] of the directory flake8 runs in (read once per process)."""
    from jaxguard.config import ConfigError, find_pyproject, load_config

    try:
        return load_config(find_pyproject(Path.cwd()))
    except ConfigError:
        return None


def _settings(selected: set[str]) -> LintSettings:
    config = _config()
    enabled = {code for code, rule in all_rules().items() if rule.default_on or code in selected}
    return LintSettings(
        frozenset(enabled),
        tuple(config.traced_decorators) if config else (),
        config.x64 if config else False,
    )


def _in_tests(settings: LintSettings, filename: str, selected: tuple[str, ...]) -> LintSettings:
    """In a test file, the rules that are off in tests stay on only if selected by code; in
    other files, they are off in test functions (`def test_*`)."""
    import dataclasses

    from jaxguard.config import Config
    from jaxguard.lint.registry import quiet_in_tests

    kept = quiet_in_tests(settings.enabled, list(selected), [])
    if not (_config() or Config()).is_test(filename):
        return dataclasses.replace(settings, quiet_in_test_code=settings.enabled - kept)
    return dataclasses.replace(settings, enabled=kept)


def _with_project(settings: LintSettings, filename: str, source: str) -> LintSettings:
    """The file's view of its project (what the CLI on the whole folder would use)."""
    import os

    from jaxguard.lint.cache import default_cache_dir
    from jaxguard.lint.project import view_for_text

    if filename in ("-", "stdin") or not os.path.exists(filename):
        return settings
    config = _config()
    root = config.root if config is not None else Path.cwd()
    exclude = config.exclude if config is not None else []
    try:
        view = view_for_text(filename, source.encode("utf-8", "surrogatepass"), str(default_cache_dir(root)), exclude, root)
    except Exception:  # the index is an aid: without it the file is checked alone
        return settings
    return settings.with_project(view)


class JaxGuardChecker:
    name = "jaxguard"
    version = __version__
    settings: LintSettings | None = None

    def __init__(self, tree, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    selected: tuple[str, ...] = ()

    @classmethod
    def parse_options(cls, options) -> None:
        selected = {code.strip().upper() for code in [*(options.select or []), *(getattr(options, "extend_select", None) or [])]}
        cls.settings = _settings(selected)
        cls.selected = tuple(sorted(selected))

    def run(self):
        if JaxGuardChecker.settings is None:
            JaxGuardChecker.settings = _settings(set())
        source = "".join(self.lines)
        settings = _with_project(_in_tests(JaxGuardChecker.settings, self.filename, JaxGuardChecker.selected), self.filename, source)
        for d in lint_source(source, self.filename, settings).diagnostics:
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
