"""Which files to check: directories recursively, minus excludes, hidden, virtualenv and
build folders, and what .gitignore files ignore. Files named explicitly are checked unless
an exclude pattern matches them."""

from __future__ import annotations

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


def _spec(patterns: list[str]) -> pathspec.PathSpec:
    return pathspec.PathSpec.from_lines("gitwildmatch", patterns)


def _gitignore_spec(lines: list[str]) -> pathspec.PathSpec:
    """A .gitignore's patterns; a line git cannot read either (a lone backslash) never matches."""
    try:
        return _spec(lines)
    except ValueError:
        valid = []
        for line in lines:
            try:
                _spec([line])
            except ValueError:
                continue
            valid.append(line)
        return _spec(valid)


def _is_virtualenv(directory: Path) -> bool:
    return (directory / "pyvenv.cfg").is_file()


def _relative(path: Path, root: Path) -> str:
    try:
        return Path(os.path.realpath(path)).relative_to(os.path.realpath(root)).as_posix()
    except ValueError:
        return path.as_posix()


def discover(paths: list[str], exclude: list[str], root: Path) -> Discovery:
    excluded = _spec(exclude)
    files: list[str] = []
    missing: list[str] = []
    seen: set[str] = set()

    def add(path: Path, display: str) -> None:
        key = os.path.realpath(path)
        if key not in seen and not excluded.match_file(_relative(path, root)):
            seen.add(key)
            files.append(display)

    for raw in paths:
        path = Path(raw)
        if path.is_file():
            add(path, raw)
        elif path.is_dir():
            for file in _walk(path, excluded, root):
                add(file, file.as_posix())
        else:
            missing.append(raw)
    return Discovery(files, missing)


def _walk(top: Path, excluded: pathspec.PathSpec, root: Path):
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
            return excluded.match_file(_relative(path, root) + ("/" if is_dir else ""))

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
