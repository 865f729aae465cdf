"""The JAX versions a project declares it runs on.

A project that pins an old JAX (`jax==0.2.19` in its setup.py, `jax<0.4` in its
requirements) runs where APIs removed later still exist: code using them is not broken
where it is meant to run. The declarations are read from the dependency files of the
nearest folder at or above a file that has any (setup.py, setup.cfg, pyproject.toml,
requirements*.txt, environment*.yml); every JAX requirement there must bound the version
from above, or the project may run on any JAX.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

Version = tuple[int, ...]

# a requirement on the `jax` distribution (not jaxlib, not jax-md): name, extras, specifiers
_REQUIREMENT = re.compile(r"^\s*jax\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:[<>=!~]|$)[^;#]*)?(?:[;#].*)?$", re.IGNORECASE)
_CLAUSE = re.compile(r"(===|==|<=|>=|~=|!=|<|>|=)\s*([0-9][0-9A-Za-z.*+!-]*)")
_FILES = ("setup.py", "setup.cfg", "pyproject.toml")
_PATTERNS = ("requirements*.txt", "environment*.yml", "environment*.yaml")


def runs_on_jax_before(path: str | None, removed_in: Version) -> bool:
    """Does the project of the file at `path` declare only JAX versions older than
    `removed_in`?"""
    bound = _bound_for(path)
    if bound is None:
        return False
    version, inclusive = bound
    return _less(version, removed_in) or (not inclusive and _pad(version) == _pad(removed_in))


def declared(path: str | None) -> str:
    """The JAX bound the file's project declares, as text (part of a result's cache key: a
    changed pin changes what the file reports)."""
    return repr(_bound_for(path))


def forget_declarations() -> None:
    """Read the dependency files again (the language server saw files change)."""
    _bound_for.cache_clear()
    _declared_bound.cache_clear()


@functools.lru_cache(maxsize=4096)
def _bound_for(path: str | None) -> tuple[Version, bool] | None:
    """The bound for the file at `path` (none for standard input): asked by each rule about
    a removed API and by the result cache, resolved once."""
    if not path or path == "-":
        return None
    try:
        return _declared_bound(Path(path).resolve().parent)
    except (OSError, RuntimeError):
        return None


@functools.lru_cache(maxsize=1024)
def _declared_bound(folder: Path) -> tuple[Version, bool] | None:
    """(highest version, whether it is allowed itself) that the nearest declaring folder's
    JAX requirements allow; None when one of them has no upper bound, or none names JAX."""
    while True:
        files = _dependency_files(folder)
        if files:
            specs = [spec for file in files for spec in _jax_specs(file)]
            if not specs:
                return None
            bounds = [_upper_bound(spec) for spec in specs]
            if any(b is None for b in bounds):
                return None
            return max(bounds, key=lambda b: (_pad(b[0]), b[1]))  # type: ignore[return-value]
        if folder.parent == folder:
            return None
        folder = folder.parent


def _dependency_files(folder: Path) -> list[Path]:
    try:
        found = [folder / name for name in _FILES if (folder / name).is_file()]
        for pattern in _PATTERNS:
            found.extend(sorted(p for p in folder.glob(pattern) if p.is_file()))
    except OSError:
        return []
    return found


def _jax_specs(file: Path) -> list[str]:
    """The specifier text of each JAX requirement the file declares ('' for a bare `jax`)."""
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    if file.name == "setup.py":
        candidates = _setup_strings(text)
    elif file.name == "pyproject.toml":
        return _pyproject_specs(text)
    else:
        # requirements lines, setup.cfg's indented install_requires, conda's `- jax=0.2.19`
        candidates = [line.strip().removeprefix("-").strip() for line in text.splitlines()]
    return [spec for spec in map(_spec, candidates) if spec is not None]


def _spec(text: str) -> str | None:
    """The specifiers of `text` if it is a requirement on JAX ('' for a bare `jax`), else None."""
    found = _REQUIREMENT.match(text)
    return (found.group("spec") or "").strip() if found is not None else None


def _setup_strings(text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def _pyproject_specs(text: str) -> list[str]:
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return []
    specs: list[str] = []

    def visit(value) -> None:
        if isinstance(value, str):
            spec = _spec(value)
            if spec is not None:
                specs.append(spec)
        elif isinstance(value, list):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key.lower() == "jax" and isinstance(item, (str, dict)):
                    # Poetry: `jax = "^0.2.19"` or `jax = {version = "~0.2"}`
                    version = item if isinstance(item, str) else str(item.get("version", ""))
                    specs.append(_poetry_spec(version))
                else:
                    visit(item)

    visit(data)
    return specs


def _poetry_spec(version: str) -> str:
    """Poetry's `^0.2.19` (below 0.3), `~0.2.19` (below 0.3) and exact `0.2.19`, as
    requirement specifiers; anything else is returned as written."""
    version = version.strip()
    if version[:1] in "^~" and version[1:2] != "=":
        parts = _parse(version[1:])
        if not parts:
            return ""
        if version[0] == "^":
            index = next((i for i, p in enumerate(parts) if p != 0), len(parts) - 1)
        else:
            index = min(1, len(parts) - 1) if len(parts) > 1 else 0
        ceiling = (*parts[:index], parts[index] + 1)
        return f"<{'.'.join(map(str, ceiling))}"
    if version and version[0].isdigit():
        return f"=={version}"
    return version


def _upper_bound(spec: str) -> tuple[Version, bool] | None:
    """(version, inclusive) the specifiers cap JAX at; None when they do not."""
    bounds: list[tuple[Version, bool]] = []
    for op, text in _CLAUSE.findall(spec):
        version = _parse(text)
        if not version:
            continue
        if op in ("==", "===", "=") and text.endswith("*"):
            bounds.append(((*version[:-1], version[-1] + 1), False))  # `==0.4.*`: below 0.5
        elif op in ("==", "===", "=", "<="):
            bounds.append((version, True))
        elif op == "<":
            bounds.append((version, False))
        elif op == "~=" and len(version) > 1:
            bounds.append(((*version[:-2], version[-2] + 1), False))  # `~=0.2.19`: below 0.3
    return min(bounds, key=lambda b: (_pad(b[0]), b[1])) if bounds else None


def _parse(text: str) -> Version:
    parts = []
    for piece in text.split("."):
        digits = re.match(r"\d+", piece)
        if digits is None:
            break
        parts.append(int(digits.group(0)))
        if digits.group(0) != piece:
            break  # `19rc1`: the release it precedes is not known, keep what is certain
    return tuple(parts)


def _pad(version: Version) -> Version:
    return (*version, *(0,) * (4 - len(version)))


def _less(a: Version, b: Version) -> bool:
    return _pad(a) < _pad(b)
