"""`[tool.jaxguard]` in pyproject.toml, merged with command-line options.

Keys: select, ignore, extend-select, per-file-ignores, exclude, extend-exclude,
traced-decorators, x64, test-files. An unknown key or code is an error naming the closest valid one.
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from jaxguard.lint.discover import TEST_FILES, glob_spec, is_test_file
from jaxguard.lint.settings import LintSettings
from jaxguard.lint.registry import SelectionError, quiet_in_tests, resolve_selection

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KNOWN_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "traced-decorators",
    "x64",
    "test-files",
)


class ConfigError(Exception):
    """A configuration problem: reported as one line, exit code 2."""


@dataclass
class Config:
    path: Path | None = None  # the pyproject.toml it came from
    root: Path = field(default_factory=Path.cwd)  # relative globs are anchored here
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=list)
    traced_decorators: list[str] = field(default_factory=list)
    x64: bool = False
    test_files: list[str] = field(default_factory=lambda: list(TEST_FILES))
    _known_settings: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def settings_for(self, path: str) -> LintSettings:
        """The effective settings for one file (per-file ignores applied)."""
        matched: tuple[str, ...] = ()
        if self.per_file_ignores:
            relative = self._relative(path)
            matched = tuple(
                pattern
                for pattern in self.per_file_ignores
                if glob_spec([pattern]).match_file(relative)
            )
        return self._settings(matched, self.is_test(path))

    def is_test(self, path: str) -> bool:
        """A test file by the `test-files` patterns, relative to the config's folder."""
        return is_test_file(self._relative(path), tuple(self.test_files))

    def _settings(self, matched: tuple[str, ...], test: bool = False) -> LintSettings:
        """The settings with the per-file ignores of `matched` patterns (each selection resolved once)."""
        ignore = self.ignore + [code for pattern in matched for code in self.per_file_ignores[pattern]]
        key = (tuple(self.select or ()), self.select is None, tuple(ignore), tuple(self.extend_select), test)
        resolved = self._known_settings.get(key)
        if resolved is None:
            known = frozenset(resolve_selection(self.select, ignore, self.extend_select, self._where()))
            if test:
                known = quiet_in_tests(known, self.select, self.extend_select)
            quiet = known - quiet_in_tests(known, self.select, self.extend_select)  # empty in a test file
            resolved = self._known_settings[key] = (known, quiet)
        known, quiet = resolved
        return LintSettings(known, tuple(self.traced_decorators), self.x64, quiet)

    def _relative(self, path: str) -> str:
        try:
            return PurePosixPath(Path(path).resolve().relative_to(self.root.resolve())).as_posix()
        except ValueError:
            return Path(path).as_posix()

    def _where(self) -> str:
        return str(self.path) if self.path else "--select/--ignore"

    def validate(self) -> None:
        """Raise ConfigError on unknown codes or invalid globs, before any file is read."""
        try:
            resolve_selection(self.select, self.ignore, self.extend_select, self._where())
            for pattern, codes in self.per_file_ignores.items():
                resolve_selection(None, codes, [], f"{self._where()} per-file-ignores[{pattern!r}]")
        except SelectionError as error:
            raise ConfigError(str(error)) from None
        for key, patterns in (
            ("exclude", self.exclude), ("per-file-ignores", list(self.per_file_ignores)), ("test-files", self.test_files)
        ):
            for pattern in patterns:
                try:
                    glob_spec([pattern])
                except ValueError as error:
                    raise ConfigError(f"invalid {key} glob {pattern!r}: {error}") from None


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.jaxguard] table, from `start` upward."""
    start = start.resolve()
    for directory in (start, *start.parents) if start.is_dir() else start.parents:
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
                data = tomllib.loads(text)
            except (OSError, UnicodeDecodeError):
                continue
            except tomllib.TOMLDecodeError:
                if "tool.jaxguard" in text:
                    return candidate  # ours but broken: load_config reports the TOML error
                continue
            if "jaxguard" in _table(data, "tool") or _misspelled_table(data):
                return candidate  # a misspelled table is reported by load_config
    return None


def _misspelled_table(data: dict) -> str | None:
    """`[tool.jaxgaurd]` (and no [tool.jaxguard]): the name of the table meant for jaxguard."""
    tool = _table(data, "tool")
    if "jaxguard" in tool:
        return None
    close = difflib.get_close_matches("jaxguard", [str(key) for key in tool], n=1, cutoff=0.8)
    return close[0] if close else None


def _table(data: dict, key: str) -> dict:
    """data[key] if it is a table; {} if missing or, like `tool = 5`, not a table."""
    value = data.get(key, {})
    return value if isinstance(value, dict) else {}


def _string_list(value, key: str, where: Path) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"{where}: [tool.jaxguard] {key} must be a list of strings")


def load_config(path: Path | None) -> Config:
    """Read [tool.jaxguard] from `path` (None: defaults)."""
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    misspelled = _misspelled_table(data)
    if misspelled is not None:
        raise ConfigError(f"{path}: unknown table [tool.{misspelled}] (did you mean [tool.jaxguard]?)")
    table = _table(data, "tool").get("jaxguard", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.jaxguard] must be a table")
    config = Config(path=path, root=path.parent)
    for key, value in table.items():
        if key not in KNOWN_KEYS:
            close = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{path}: unknown key '{key}' in [tool.jaxguard]{hint}")
        if key == "select":
            config.select = _string_list(value, key, path)
        elif key == "ignore":
            config.ignore = _string_list(value, key, path)
        elif key == "extend-select":
            config.extend_select = _string_list(value, key, path)
        elif key in ("exclude", "extend-exclude"):
            config.exclude += _string_list(value, key, path)
        elif key == "traced-decorators":
            config.traced_decorators = _string_list(value, key, path)
        elif key == "test-files":
            config.test_files = _string_list(value, key, path)
        elif key == "x64":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: [tool.jaxguard] x64 must be true or false")
            config.x64 = value
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [tool.jaxguard] per-file-ignores must be a table of glob = [codes]")
            config.per_file_ignores = {glob: _string_list(codes, f"per-file-ignores.{glob}", path) for glob, codes in value.items()}
    config.validate()
    return config
