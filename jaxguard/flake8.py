"""The flake8 entry point: a thin adapter over the lint engine.

flake8 does the selecting (`--select JG`, opt-in rules are in its default ignore list)
and prints `col + 1`, so the plugin runs every rule and yields 0-based columns: the same
lines and columns as `jaxguard check`. Fixes are CLI-only.
"""

from __future__ import annotations

from pathlib import Path

from jaxguard import __version__
from jaxguard.lint.engine import LintSettings, lint_source
from jaxguard.lint.registry import all_rules


def _settings() -> LintSettings:
    from jaxguard.config import ConfigError, find_pyproject, load_config

    try:
        config = load_config(find_pyproject(Path.cwd()))
    except ConfigError:
        config = None
    return LintSettings(
        frozenset(all_rules()),
        tuple(config.traced_decorators) if config else (),
        config.x64 if config else False,
    )


class JaxGuardChecker:
    name = "jaxguard"
    version = __version__
    _settings: LintSettings | None = None

    def __init__(self, tree, filename: str, lines: list[str]) -> None:
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, option_manager) -> None:
        off = [code for code, rule in all_rules().items() if not rule.default_on]
        option_manager.extend_default_ignore(off)

    def run(self):
        if JaxGuardChecker._settings is None:
            JaxGuardChecker._settings = _settings()
        source = "".join(self.lines)
        for d in lint_source(source, self.filename, JaxGuardChecker._settings).diagnostics:
            yield d.line, d.column - 1, f"{d.code} {d.message}", type(self)
