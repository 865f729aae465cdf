"""Which files to check: directories recursively, minus excludes, hidden, virtualenv and
build folders, and what .gitignore files ignore. Files named explicitly are checked unless
an exclude pattern matches them."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import pathspec

# Folders never searched. Virtualenvs are recognized by their pyvenv.cfg, not by a name:
# `rl/env/` is often a package of the project.
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "build", "dist", "site-packages", "__pypackages__", ".jaxguard_cache"})
SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass
class Discovery:
    files: list[str]
    missing: list[str]


# Files recognised as tests (gitignore-style; the `test-files` setting replaces them): where
# keys are reused on purpose, and where a transformation shows only that code works.
TEST_FILES = ("test_*.py", "*_test.py", "*_tests.py", "conftest.py", "tests/", "test/", "testing/")


def is_test_file(relative: str, patterns: tuple[str, ...] | list[str] = TEST_FILES) -> bool:
    """`relative`: a path relative to the project (or config) root, with `/` separators."""
    return bool(patterns) and _test_spec(tuple(patterns)).match_file(relative)


@functools.lru_cache(maxsize=8)
def _test_spec(patterns: tuple[str, ...]) -> pathspec.PathSpec:
    return glob_spec(list(patterns))


def glob_spec(patterns: list[str]) -> pathspec.PathSpec:
    """Gitignore-style patterns, matched as git does (ValueError for a pattern git cannot read)."""
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _gitignore_spec(lines: list[str]) -> pathspec.PathSpec:
    """A .gitignore's patterns; a line git cannot read either (a lone backslash) never matches."""
    try:
        return glob_spec(lines)
    except ValueError:
        valid = []
        for line in lines:
            try:
                glob_spec([line])
            except ValueError:
                continue
            valid.append(line)
        return glob_spec(valid)


def _is_virtualenv(directory: Path) -> bool:
    return (directory / "pyvenv.cfg").is_file()


class _Excluded:
    """The exclude globs, matched against paths relative to the config's root."""

    def __init__(self, patterns: list[str], root: Path) -> None:
        self.spec = glob_spec(patterns) if patterns else None
        self.root = os.path.realpath(root)

    def __call__(self, path: Path, is_dir: bool = False) -> bool:
        if self.spec is None:
            return False
        try:
            relative = Path(os.path.realpath(path)).relative_to(self.root).as_posix()
        except ValueError:
            relative = path.as_posix()
        return self.spec.match_file(relative + ("/" if is_dir else ""))


def discover(paths: list[str], exclude: list[str], root: Path) -> Discovery:
    excluded = _Excluded(exclude, root)
    files: list[str] = []
    missing: list[str] = []
    seen: set[str] = set()

    def add(path: Path, display: str) -> None:
        key = os.path.realpath(path)
        if key not in seen and not excluded(path):
            seen.add(key)
            files.append(display)

    for raw in paths:
        path = Path(raw)
        if path.is_file():
            add(path, raw)
        elif path.is_dir():
            for file in _walk(path, excluded):
                add(file, file.as_posix())
        else:
            missing.append(raw)
    return Discovery(files, missing)


def _walk(top: Path, excluded: _Excluded):
    ignores: list[tuple[Path, pathspec.PathSpec]] = []
    for directory, dirnames, filenames in os.walk(top):  # does not follow symlinked dirs
        current = Path(directory)
        gitignore = current / ".gitignore"
        if gitignore.is_file():
            try:
                ignores.append((current, _gitignore_spec(gitignore.read_text(encoding="utf-8", errors="replace").splitlines())))
            except OSError:
                pass

        def ignored(path: Path, is_dir: bool) -> bool:
            for base, spec in ignores:
                try:
                    relative = path.relative_to(base).as_posix()
                except ValueError:
                    continue
                if spec.match_file(relative + ("/" if is_dir else "")):
                    return True
            return excluded(path, is_dir)

        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in SKIPPED_DIRS
            and not _is_virtualenv(current / d)
            and not ignored(current / d, True)
        )
        for name in sorted(filenames):
            path = current / name
            if name.endswith(SOURCE_SUFFIXES) and not ignored(path, False):
                yield path
