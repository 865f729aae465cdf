"""The flake8 entry point: a thin adapter over the lint engine.

flake8 does the selecting and prints `col + 1`, so the plugin yields 0-based columns: the
same lines and columns as `jaxguard check`. Opt-in rules run only when selected by their
exact code, as in the CLI: flake8 would let `--select JG` switch them on, so the plugin
decides that itself. Fixes are CLI-only.
"""

from __future__ import annotations

from pathlib import Path

from jaxguard._version import __version__
from jaxguard.lint.engine import LintSettings, lint_source
from jaxguard.lint.registry import all_rules


def _settings(selected: set[str]) -> LintSettings:
    from jaxguard.config import ConfigError, find_pyproject, load_config

    try:
        config = load_config(find_pyproject(Path.cwd()))
    except ConfigError:
        config = None
    enabled = {code for code, rule in all_rules().items() if rule.default_on or code in selected}
    return LintSettings(
        frozenset(enabled),
        tuple(config.traced_decorators) if config else (),
        config.x64 if config else False,
    )


class JaxGuardChecker:
    name = "jaxguard"
    version = __version__
    settings: LintSettings | None = None

    def __init__(self, tree, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def parse_options(cls, options) -> None:
        selected = {code.strip().upper() for code in [*(options.select or []), *(getattr(options, "extend_select", None) or [])]}
        cls.settings = _settings(selected)

    def run(self):
        if JaxGuardChecker.settings is None:
            JaxGuardChecker.settings = _settings(set())
        source = "".join(self.lines)
        for d in lint_source(source, self.filename, JaxGuardChecker.settings).diagnostics:
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
