"""The settings one file is checked with (kept apart from the engine: reading them, keying the
cache by them and answering from the cache never imports libcst)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from jaxguard.lint.project import ProjectView


@dataclass(frozen=True)
class LintSettings:
    enabled: frozenset[str]
    traced_decorators: tuple[str, ...] = ()
    x64: bool = False
    # rules off in test files (and not selected by code), also off in the test functions
    # (`def test_*`) of other files
    quiet_in_test_code: frozenset[str] = frozenset()
    # what the rest of the project tells about this file (jaxguard.lint.project); None: the
    # file is checked alone
    project: ProjectView | None = None

    def with_project(self, view: ProjectView | None) -> LintSettings:
        """These settings with the project's view of the file (unchanged without one)."""
        return self if view is None else replace(self, project=view)
