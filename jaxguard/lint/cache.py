"""The result cache: `.jaxguard_cache/` next to the configuration (like `.ruff_cache`).

An entry is keyed by a hash of the file's text, its path, jaxguard's version (plus a
fingerprint of the installed jaxguard sources, so an editable install that changes a rule
does not serve stale results) and the effective LintSettings for that file. It stores the
diagnostics, fixes included, as JSON (never pickle: the cache directory lives in the
user's tree). Writes are atomic (temporary file + rename), so concurrent runs are safe; a
corrupt or unreadable entry is a miss. `jaxguard clean` deletes the directory;
`--no-cache` bypasses it; JAXGUARD_CACHE_DIR or `--cache-dir` moves it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import stat
import tempfile
from functools import lru_cache
from pathlib import Path

from jaxguard._version import __version__
from jaxguard.lint.diagnostic import Diagnostic, Edit, Fix

CACHE_DIR_NAME = ".jaxguard_cache"
FORMAT = 1
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n"  # https://bford.info/cachedir/


def default_cache_dir(root: Path) -> Path:
    override = os.environ.get("JAXGUARD_CACHE_DIR")
    return Path(override) if override else Path(root) / CACHE_DIR_NAME


# Parts of the package that cannot change a finding (the lint engine never imports them).
_NOT_LINT = ("runtime", "precision", "__pycache__")


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """jaxguard's version and the size/mtime of every file of its linter: the sources and
    the package data they read (jaxguard/data/*.json)."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.blake2b(f"{__version__}|{FORMAT}".encode(), digest_size=16)
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(package)
        if relative.parts[0] in _NOT_LINT or "__pycache__" in relative.parts:
            continue
        try:
            info = path.stat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            digest.update(f"{relative.as_posix()}|{info.st_size}|{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


@lru_cache(maxsize=64)
def _settings_text(settings) -> str:
    values = {}
    for item in dataclasses.fields(settings):
        value = getattr(settings, item.name)
        if isinstance(value, (set, frozenset)):
            value = sorted(value)
        values[item.name] = value
    return json.dumps(values, sort_keys=True, default=repr)


def cache_key(path: str, content: bytes | str, settings, mode: str = "lint") -> str:
    """The key of one file's result: its content (bytes as read), path, settings, mode,
    jaxguard, and the JAX versions its project's dependency files declare."""
    from jaxguard.lint.requirements import declared

    digest = hashlib.blake2b(digest_size=20)
    for part in (fingerprint(), mode, _settings_text(settings), os.path.abspath(path), declared(path)):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    digest.update(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _encode(diagnostic: Diagnostic) -> dict:
    return dataclasses.asdict(diagnostic)


def _decode(data: dict, path: str) -> Diagnostic:
    fix = data.pop("fix", None)
    if fix is not None:
        fix = Fix(tuple(Edit(**edit) for edit in fix["edits"]), fix["safe"], fix["description"])
    data["noqa_lines"] = tuple(data.get("noqa_lines", ()))
    if data.get("file_region") is not None:
        data["file_region"] = tuple(data["file_region"])
    stored = data.pop("path", "")
    # A notebook's findings carry their cell (`nb.ipynb:cell 3`); keep that part.
    if not (isinstance(stored, str) and stored.startswith(path + ":cell ")):
        stored = path
    return Diagnostic(**data, fix=fix, path=stored)


class Cache:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._usable: bool | None = None  # None: not looked at yet

    def _entry(self, key: str) -> Path:
        return self.directory / f"v{FORMAT}" / key[:2] / f"{key}.json"

    def get(self, key: str, path: str) -> list[Diagnostic] | None:
        try:
            with open(self._entry(key), encoding="utf-8") as handle:
                data = json.load(handle)
            return [_decode(item, path) for item in data["diagnostics"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, diagnostics: list[Diagnostic]) -> None:
        entry = self._entry(key)
        try:
            if not self.prepare():
                return
            entry.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=".tmp-", dir=entry.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump({"diagnostics": [_encode(d) for d in diagnostics]}, handle)
                os.replace(temporary, entry)
            except BaseException:
                if os.path.exists(temporary):
                    os.unlink(temporary)
                raise
        except (OSError, TypeError, ValueError):
            pass  # a cache that cannot be written is only slower

    def prepare(self) -> bool:
        """Make the directory a cache (tagged, git-ignored); False if it is someone else's: a
        folder of that name that holds files but no CACHEDIR.TAG is left alone."""
        if self._usable is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            tag = self.directory / "CACHEDIR.TAG"
            self._usable = tag.exists() or not any(self.directory.iterdir())
            if self._usable and not tag.exists():
                (self.directory / ".gitignore").write_text("# Automatically created by jaxguard.\n*\n", encoding="utf-8")
                tag.write_text(_TAG + "# jaxguard cache\n", encoding="utf-8")
        return self._usable


def clean(directory: Path) -> bool:
    """Delete the cache directory. True if there was one.

    Only a directory jaxguard made: it holds jaxguard's CACHEDIR.TAG. A user's own folder
    that happens to be called `.jaxguard_cache` is refused, whatever its name.
    """
    directory = Path(directory)
    if not directory.exists() and not directory.is_symlink():
        return False
    tag = directory / "CACHEDIR.TAG"
    try:
        ours = directory.is_dir() and not directory.is_symlink() and tag.is_file() and tag.read_text(encoding="utf-8").startswith(_TAG)
    except (OSError, UnicodeDecodeError):
        ours = False
    if not ours:
        raise ValueError(f"{directory} does not look like a jaxguard cache (no CACHEDIR.TAG); not deleting it")
    shutil.rmtree(directory)
    return True
