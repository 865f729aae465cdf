"""Shared test helpers: lint a snippet, fix a snippet, with every rule enabled."""

from __future__ import annotations

import textwrap

from jaxguard.lint.engine import LintSettings, fix_source, lint_source
from jaxguard.lint.registry import all_rules

ALL_RULES = LintSettings(frozenset(all_rules()))


def clean(source: str) -> str:
    return textwrap.dedent(source).strip("\n") + "\n"


def lint(source: str, settings: LintSettings = ALL_RULES, path: str = "example.py"):
    return lint_source(clean(source), path, settings).diagnostics


def codes(source: str, settings: LintSettings = ALL_RULES) -> list[str]:
    return [d.code for d in lint(source, settings)]


def fix(source: str, settings: LintSettings = ALL_RULES, unsafe: bool = False) -> str:
    new_source, _, _ = fix_source(clean(source), "example.py", settings, unsafe=unsafe)
    return new_source
