"""The project index: every module's summary, and what each file's check takes from the others.

A project is the folder tree up to the nearest `pyproject.toml`, `setup.cfg` or `.git`
(or, with none, the folder given). Each of its modules is summarised (`jaxguard.lint.summary`,
cached by content); the index resolves names across modules (relative imports, re-exports
through `__init__`, `f = jax.jit(g)` aliases) and derives:

- which functions some module traces (`jax.jit(f)` in another file, a decorator, a lax body)
  and what they call, and which some module differentiates (grad, vjp, ... and their callees);
- for each function parameter that may be a PRNG key: drawn from, ignored, or unknown,
  following keys passed on to other project functions;
- which functions return a static Python value (a count, a shape, a flag);
- which modules run with x64 enabled because importing them (or their packages) enables it;
- which names a module imports are collections of literals bound once (`DATASETS = [...]`).

Modules of one name in several folders (a `data.py` beside each experiment's scripts) are
kept apart: each module imports the one in its own folder, as Python does for a script.

A file's check reads only its `ProjectView`: the facts about its own functions and about
the project functions it calls. The view is part of the file's result-cache key, so editing
one module changes what the files that depend on it report, on the next run.

What the index cannot know: modules imported dynamically (`importlib`), code outside the
project (installed packages stay unknown), calls through objects whose class is not known.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import tempfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from jaxguard.lint.jaxapi import GRAD_TRANSFORMS
from jaxguard.lint.summary import (
    DRAWS,
    IGNORES,
    MAYBE,
    MAYBE_PASS,
    UNKNOWN,
    VERSION,
    empty_summary,
    summarise,
)

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", ".git")
INDEX_FILE = "project-index.json"


class Callee(NamedTuple):
    """A project function of another module that a file calls, as its view shows it."""

    name: str  # the qualified name the file calls it by
    params: tuple[str, ...]
    bound_first: bool  # the first parameter is bound: a classmethod's `cls`, a constructor's `self`
    keys: tuple  # ((parameter, DRAWS | IGNORES | UNKNOWN), ...)
    static: bool  # it returns a static Python value
    array: bool  # it returns an array computed from its arguments by array operations
    # ((position, parameter), ...): keys it draws from and hands back in its result
    # (position -1: the whole result)
    handed_back: tuple
    swallows: bool = False  # a `**kwargs` it never reads takes the keywords it has no parameter for
    shape_templates: tuple[str, ...] = ()  # parameters it reads only for their shape (summary)
    reorders: tuple[str, ...] = ()  # key parameters it draws from only to reorder (summary)

    def param_for(self, args, arg) -> str | None:
        """The parameter that `arg` (one of the call's `args`, libcst or otherwise: `.keyword`
        and `.star`) binds; None where that cannot be read (a `*args`, a position beyond)."""
        if arg.keyword is not None:
            return arg.keyword.value
        before = list(itertools.takewhile(lambda other: other is not arg, args))
        if any(other.star for other in before):
            return None  # its position is not known: a `*args` comes first
        index = sum(1 for other in before if other.keyword is None) + (1 if self.bound_first else 0)
        return self.params[index] if index < len(self.params) else None


# Methods that run while an object is being built, before any jitted method can be called.
CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__new__", "setup"})


@dataclass(frozen=True)
class ProjectView:
    """What one file's check takes from its project (hashable: part of the cache key)."""

    module: str = ""
    package: str = ""  # for relative imports
    x64: bool = False  # importing this module enables x64 (here, in its packages or imports)
    # this module's functions traced by another module: (name, transform, argnums, argnames)
    roots: tuple = ()
    # this module's functions traced as callees of traced code elsewhere: (name, transform)
    reached: tuple = ()
    differentiated: tuple = ()  # this module's functions some module differentiates
    callees: tuple[Callee, ...] = ()  # project functions of other modules this one calls
    static_methods: tuple = ()  # method names whose every project definition is static
    static_attributes: tuple = ()  # field names every project class keeps static (for traced code)
    # names this module imports that a project module binds to something outside the project
    # (`Array = jnp.ndarray` in `pkg.util`): ("pkg.util.Array", "jax.numpy.ndarray")
    aliases: tuple = ()
    # project classes that define `__setitem__` (`pkg.dd.DoubleDouble`): `x[i] = v` on one is its own
    settable_classes: tuple = ()
    # this module's functions that run with x64 on: every project caller of theirs does
    x64_functions: tuple = ()
    # methods of this module's classes that every (non-test) project caller calls while an
    # object is being built: in a constructor, or in a method only constructors call
    construction_methods: tuple = ()
    # methods of this module's classes that some project code calls after construction
    called_after_construction: tuple = ()
    # jaxguard failed to summarise this module (a bug of ours): what went wrong
    summary_error: str = ""
    # project functions of other modules this one calls that turn x64 on, or refuse (or warn)
    # to run without it (`require_x64("care")`): the module's 64-bit requests are not silent
    x64_guards: tuple = ()
    # the module's package (or a package above it) tells its users, in its `__init__`
    # docstring, to enable x64: its modules rely on them
    x64_told: bool = False
    # another project module imports this one: it is a library module, and its
    # `if __name__ == "__main__":` block a self-test run by hand
    imported: bool = False
    # names this module imports that another project module binds once to a collection of
    # literals (`from configs import DATASETS`): a loop over one is a sweep over constants
    constant_collections: tuple = ()

    @cached_property
    def _callees(self) -> dict[str, Callee]:
        return {entry.name: entry for entry in self.callees}

    @cached_property
    def _aliases(self) -> dict[str, str]:
        return dict(self.aliases)

    def external(self, qualified: str) -> str:
        """What a project alias names outside the project, else `qualified` itself."""
        if not self.aliases:
            return qualified
        return self._aliases.get(self.absolute(qualified), qualified)

    def absolute(self, qualified: str) -> str:
        """`..utils.f` as the per-module facts record a relative import -> `pkg.utils.f`."""
        if not qualified.startswith("."):
            return qualified
        stripped = qualified.lstrip(".")
        level = len(qualified) - len(stripped)
        parts = self.package.split(".") if self.package else []
        parts = parts[: max(0, len(parts) - (level - 1))]
        return ".".join([*parts, stripped]) if stripped else ".".join(parts)

    def callee(self, qualified: str | None) -> Callee | None:
        if not qualified or not self.callees:
            return None
        return self._callees.get(self.absolute(qualified))

    def key_verdict(self, qualified: str | None, param: str) -> str | None:
        """DRAWS / IGNORES / UNKNOWN / MAYBE for a project function's parameter, None if not known."""
        entry = self.callee(qualified)
        if entry is None:
            return None
        if param not in entry.params and entry.swallows:
            return IGNORES
        return dict(entry.keys).get(param)

    def constant_collection(self, qualified: str | None) -> bool:
        return bool(qualified) and self.absolute(qualified) in self.constant_collections

    def returns_static(self, qualified: str | None) -> bool:
        entry = self.callee(qualified)
        return entry is not None and entry.static

    def returns_array(self, qualified: str | None) -> bool:
        entry = self.callee(qualified)
        return entry is not None and entry.array


def is_test_file(path: str, root: Path | None = None) -> bool:
    """A test module (`test_*.py`, `*_test.py`, `conftest.py`, under `tests/`...)."""
    from jaxguard.lint.discover import is_test_file as matches

    relative = Path(path)
    if root is not None:
        try:
            relative = relative.relative_to(root)
        except ValueError:
            pass
    return matches(relative.as_posix().lstrip("/"))


def find_root(path: Path) -> Path | None:
    """The nearest folder at or above `path` that holds a project marker."""
    try:
        return _root_of_folder((path if path.is_dir() else path.parent).resolve())
    except (OSError, RuntimeError):  # a symlink loop: the file is reported unreadable anyway
        return None


@functools.lru_cache(maxsize=4096)
def _root_of_folder(folder: Path) -> Path | None:
    if _project_root(folder):
        return folder
    return None if folder.parent == folder else _root_of_folder(folder.parent)


def module_name(path: Path) -> tuple[str, bool]:
    """(dotted module name, is a package) from the `__init__.py` files above the file."""
    try:
        path = path.resolve()
    except (OSError, RuntimeError):
        return path.name.split(".")[0], False
    is_package = path.name == "__init__.py"
    parts = [] if is_package else [path.name.split(".")[0]]
    folder = path.parent
    test = is_test_file(path.name)
    # a folder whose name is no identifier (`my-repo/`) cannot be imported as a package, and
    # the project's root (`pyproject.toml`, `setup.cfg`, `.git`) holds its packages: neither
    # is part of a module's name, even with an `__init__.py` (`import nux` from `NuX/`)
    while folder != folder.parent and folder.name.isidentifier() and not _project_root(folder) and (
        (folder / "__init__.py").exists() or (not test and _namespace_in_package(folder))
    ):
        parts.insert(0, folder.name)
        folder = folder.parent
    if is_package and not parts:
        parts = [path.parent.name]
    return ".".join(parts), is_package


def _project_root(folder: Path) -> bool:
    return any((folder / marker).exists() for marker in ROOT_MARKERS)


def _namespace_in_package(folder: Path, depth: int = 3) -> bool:
    """A folder without `__init__.py` inside a regular package (`pkg/utilities/` under
    `pkg/__init__.py`): Python imports it as the namespace package `pkg.utilities`. A test
    folder is not one: pytest imports the tests in it by their own names."""
    if not folder.name.isidentifier() or folder.name in ("tests", "test"):
        return False
    parent = folder.parent
    if (parent / "__init__.py").exists():
        return True
    return depth > 1 and parent != parent.parent and _namespace_in_package(parent, depth - 1)


class ProjectIndex:
    def __init__(self, modules: dict[str, tuple[str, bool, dict]], root: Path | None = None) -> None:
        """`modules`: path -> (module name, is package, summary); `root`: the project's folder."""
        self.root = root
        self.modules = modules  # as given (`with_module` rebuilds from them)
        modules, self._renames = _separate_namesakes(modules, str(root) if root is not None else "")
        self.paths = {path: (name, package) for path, (name, package, _) in modules.items()}
        self.summaries: dict[str, dict] = {}
        self.test_modules: set[str] = set()
        for path, (name, _, summary) in sorted(modules.items()):
            self.summaries.setdefault(name, summary)
            if is_test_file(path, root):
                self.test_modules.add(name)
        self._resolved: dict[str, tuple[str, str] | None] = {}
        self._verdicts: dict[tuple[str, str, str], str] = {}
        self._open: dict[tuple[str, str, str], int] = {}  # key verdicts being worked out: their depth
        self._static: dict[tuple[str, str], bool] = {}
        self._derive()

    # names ---------------------------------------------------------------------------
    def resolve(self, qualified: str, depth: int = 0) -> tuple[str, str] | None:
        """(module, function) a qualified name refers to inside the project, or None
        (`pkg.m.Cls().f`, a method called on an object of the class, is `Cls.f`)."""
        qualified = qualified.replace("().", ".")
        if qualified in self._resolved:
            return self._resolved[qualified]
        self._resolved[qualified] = None  # a cycle of re-exports resolves to nothing
        found = self._resolve(qualified, depth)
        self._resolved[qualified] = found
        return found

    def _resolve(self, qualified: str, depth: int) -> tuple[str, str] | None:
        if depth > 10:
            return None
        parts = qualified.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            summary = self.summaries.get(module)
            if summary is None:
                continue
            rest = parts[cut:]
            name = ".".join(rest)
            if name in summary["functions"]:
                return module, name
            if name in summary["static_fields"] and f"{name}.__init__" in summary["functions"]:
                return module, f"{name}.__init__"  # a class: calling it runs its __init__
            head, tail = rest[0], rest[1:]
            for table in (summary["aliases"], summary["imports"]):
                if head in table and table[head] != qualified:
                    return self.resolve(".".join([table[head], *tail]), depth + 1)
            for star in summary["star_imports"]:  # `from m import *` re-exports m's names
                found = self.resolve(f"{star}.{name}", depth + 1)
                if found is not None:
                    return found
            return None
        return None

    def external_alias(self, qualified: str, depth: int = 0) -> str | None:
        """`pkg.util.Array` where `pkg/util.py` says `Array = jnp.ndarray` (or imports it):
        the name outside the project it stands for; None if it is not such an alias."""
        module = self.module_of(qualified)
        if module is None or module == qualified or depth > 10:
            return None
        head, *tail = qualified[len(module) + 1:].split(".")
        summary = self.summaries[module]
        if head in summary.get("unaliased", ()) or head in summary["functions"] or head in summary["static_fields"]:
            return None  # also bound to something else: which one a caller gets is not known
        for table in (summary["aliases"], summary["imports"]):
            target = table.get(head)
            if target is not None and target != qualified:
                target = ".".join([target, *tail])
                return target if self.module_of(target) is None else self.external_alias(target, depth + 1)
        return None

    def _aliases_for(self, summary: dict) -> tuple:
        """The project aliases of outside names that a module's imports reach (its view's
        `aliases`): the names it imports, and the aliases of the project modules it imports."""
        found = {}
        for imported in summary["imports"].values():
            module = self.summaries.get(imported)
            names = [f"{imported}.{name}" for name in module["aliases"]] if module is not None else [imported]
            for name in names:
                target = self.external_alias(name)
                if target is not None:
                    found[name] = target
        return tuple(sorted(found.items()))

    def _constant_collection(self, qualified: str) -> bool:
        """`pkg.configs.DATASETS` is bound once, at import, to a collection of literals."""
        module = self.module_of(qualified)
        if module is None or module == qualified:
            return False
        return qualified[len(module) + 1:] in self.summaries[module].get("constant_collections", ())

    def module_of(self, qualified: str) -> str | None:
        parts = qualified.split(".")
        for cut in range(len(parts), 0, -1):
            module = ".".join(parts[:cut])
            if module in self.summaries:
                return module
        return None

    # derived facts ---------------------------------------------------------------------
    def _derive(self) -> None:
        self.roots: dict[tuple[str, str], list] = {}  # traced by a transformation: [(transform, nums, names, by module)]
        grad_roots: set[tuple[str, str]] = set()
        for module, summary in self.summaries.items():
            from_tests = self.is_test_module(module)
            for transform, target, nums, names, bound in summary["marks"]:
                found = self.resolve(target)
                if found is None:
                    continue
                if transform in GRAD_TRANSFORMS:
                    grad_roots.add(found)  # a test that differentiates a function shows users do
                elif not transform.rsplit(".", 1)[-1].startswith("custom_") and (not from_tests or found[0] == module):
                    # A test jitting a library function shows it works under jit: no evidence
                    # for findings in the library.
                    params = self._function(found)["params"]
                    static = (*names, *params[:bound])
                    self.roots.setdefault(found, []).append((transform, tuple(nums), static, module))
        self.traced: dict[tuple[str, str], str] = {}
        work = [(place, marks[0][0]) for place, marks in self.roots.items()]
        while work:
            place, transform = work.pop()
            if place in self.traced:
                continue
            self.traced[place] = transform
            # what a test traces reaches the library only as the test uses it: no evidence
            # for findings in the library (a test building a device inside jit)
            from_tests = self.is_test_module(place[0])
            work.extend(
                (callee, transform) for callee in self._callees(place)
                if (not from_tests or self.is_test_module(callee[0])) and not self._function(callee).get("memoized")
            )
        self.differentiated: set[tuple[str, str]] = set()
        work2 = list(grad_roots)
        while work2:
            place = work2.pop()
            if place in self.differentiated:
                continue
            self.differentiated.add(place)
            work2.extend(self._callees(place))
        self._x64 = self._x64_modules()

    def is_test_module(self, module: str) -> bool:
        return module in self.test_modules

    @cached_property
    def _method_callers(self) -> tuple[frozenset[str], frozenset[str]]:
        """(method names every call of which in the project's code, tests aside, is made by a
        constructor or by a method only constructors call: `LBMBase.__init__` ->
        `_create_boundary_data` -> `bc.configure()`, what they assign is set while building;
        the names some other code calls). Callers are known by name only: a caller of the
        same name as a constructor counts as one."""
        callers: dict[str, set[str]] = {}
        for module, summary in self.summaries.items():
            if self.is_test_module(module):
                continue
            for name, info in summary["functions"].items():
                caller = name.rsplit(".", 1)[-1]
                for called in (*(t.rsplit(".", 1)[-1] for t in info["calls"]), *info["method_calls"]):
                    callers.setdefault(called, set()).add(caller)
            for called in (*(t.rsplit(".", 1)[-1] for t in summary["module_calls"]), *summary.get("module_method_calls", ())):
                callers.setdefault(called, set()).add("<module>")
        building = set(CONSTRUCTORS)
        grew = True
        while grew:
            grew = False
            for method, by in callers.items():
                if method not in building and by <= building:
                    building.add(method)
                    grew = True
        return frozenset(building - CONSTRUCTORS), frozenset(callers) - building

    @staticmethod
    def _methods_among(summary: dict, names: frozenset[str]) -> tuple[str, ...]:
        """The names of the module's methods that are among `names`."""
        return tuple(sorted({
            name.rsplit(".", 1)[-1] for name, info in summary["functions"].items()
            if info["method"] and name.rsplit(".", 1)[-1] in names
        }))

    @cached_property
    def _imported_modules(self) -> set[str]:
        """The modules that another project module imports (at its top, in a function or with `*`)."""
        return set().union(*self._imports.values())

    @cached_property
    def _imports(self) -> dict[str, set[str]]:
        """Module -> the other project modules it imports (at its top, in a function or with `*`)."""
        found: dict[str, set[str]] = {}
        for module, summary in self.summaries.items():
            for target in (*summary["imports"].values(), *summary["star_imports"], *summary["lazy_imports"]):
                imported = self.module_of(target)
                if imported is not None and imported != module:
                    found.setdefault(module, set()).add(imported)
        return found

    @cached_property
    def _x64_told(self) -> list[str]:
        """The top-level packages one of whose modules (tests aside) has a docstring that
        tells its users to enable x64 (omnibias's `precision` module: "This module
        deliberately does not flip the flag for you"): its modules rely on them."""
        packages = {module.partition(".")[0] for module in self.summaries if "." in module}
        return sorted({
            top for module, summary in self.summaries.items()
            if summary.get("tells_x64") and not self.is_test_module(module) and (top := module.partition(".")[0]) in packages
        })

    @cached_property
    def _guarded_by(self) -> dict[str, str]:
        """Module -> an x64 guard (a project function that refuses, or warns, to run without
        x64) that a program importing it calls: a program that checks x64 at run time covers
        what it imports, directly or not (`utils.check_environment_variables()` in each
        script's main, the library modules it imports). A program is a module no other
        imports (a library function that checks covers only itself)."""
        imports = self._imports
        guarded: dict[str, str] = {}
        for module in sorted(self.summaries):
            summary = self.summaries[module]
            if self.is_test_module(module) or module in self._imported_modules:
                continue
            calls = [*summary.get("module_calls", []), *(n for info in summary["functions"].values() for n in info["calls"])]
            guard = next((name for name in calls if self._x64_guard_of_another_module(name, module)), None)
            work = sorted(imports.get(module, ())) if guard is not None else []
            while work:
                imported = work.pop()
                if imported not in guarded:
                    guarded[imported] = guard
                    work.extend(imports.get(imported, ()))
        return guarded

    @cached_property
    def _callers(self) -> dict[tuple[str, str], set[tuple[str, str | None]]]:
        """Project function -> the places outside tests that call it: (module, function), or
        (module, None) for module-level code. (A test calls a library function as its users
        might, under its own settings: no evidence of how the library runs it.)"""
        callers: dict[tuple[str, str], set[tuple[str, str | None]]] = {}
        for module, summary in self.summaries.items():
            if self.is_test_module(module):
                continue
            places = [(name, info["calls"]) for name, info in summary["functions"].items()]
            for name, calls in [*places, (None, summary.get("module_calls", []))]:
                for call in calls:
                    target = self.resolve(call)
                    if target is not None and target != (module, name):
                        callers.setdefault(target, set()).add((module, name))
        return callers

    def _x64_guard_of_another_module(self, name: str, module: str) -> bool:
        """`name`, called in `module`, is a project function of another module that turns x64
        on or refuses (or warns) to run without it."""
        target = self.resolve(name)
        return target is not None and target[0] != module and self._is_x64_guard(target)

    def _is_x64_guard(self, place: tuple[str, str] | None) -> bool:
        return place is not None and place in self._x64_refusing

    @cached_property
    def _x64_refusing(self) -> set[tuple[str, str]]:
        """Project functions that turn x64 on or refuse (or warn) to run without it, and the
        functions that call one, directly or through others (`divergence` calling
        `_require_vector`, which calls `_require_array`, which raises without x64)."""
        work = [
            (module, name) for module, summary in self.summaries.items()
            for name, info in summary["functions"].items() if info.get("x64_guard")
        ]
        found: set[tuple[str, str]] = set()
        while work:
            place = work.pop()
            if place not in found:
                found.add(place)
                work.extend(c for c in self._callers.get(place, ()) if c[1] is not None)  # type: ignore[misc]
        return found

    def _x64_decorated(self, place: tuple[str, str]) -> bool:
        """A decorator of the function turns x64 on around each call (`@with_float64`), or
        refuses to run without it."""
        return any(self._is_x64_guard(self.resolve(name)) for name in self._function(place).get("decorators", ()))

    @cached_property
    def _x64_functions(self) -> dict[str, set[str]]:
        """module -> its functions that run with x64 on though their module does not enable
        it: called in the project, and only from modules that enable it, from functions that
        enable it or refuse to run without it (ozaki-jax's `gram`, whose helpers of other
        modules run after its check), or from such functions (kalman-jax's
        `utils.input_admin`, called only by `sde_gp`, which enables x64)."""
        verdicts: dict[tuple[str, str], bool] = {}

        def runs_with_x64(place: tuple[str, str | None], seen: frozenset) -> bool:
            if self.x64_source(place[0]) is not None:
                return True
            # a guard, or a function that calls one (`_require_array(x)` at the top of each op)
            if place[1] is not None and (self._is_x64_guard(place) or self._x64_decorated(place)):  # type: ignore[arg-type]
                return True
            if place[1] is None or place in seen:
                return False
            if place not in verdicts:
                callers = self._callers.get(place, ())  # type: ignore[arg-type]
                verdicts[place] = bool(callers) and all(runs_with_x64(c, seen | {place}) for c in callers)
            return verdicts[place]

        found: dict[str, set[str]] = {}
        for place in self._callers:
            if self.x64_source(place[0]) is None and runs_with_x64(place, frozenset()):
                found.setdefault(place[0], set()).add(place[1])
        return found

    @cached_property
    def static_attributes(self) -> frozenset[str]:
        """Field names that every project class declaring them keeps static (pytree metadata)."""
        static, other = set(), set()
        for summary in self.summaries.values():
            declared = {name for names in summary["static_fields"].values() for name in names}
            static |= declared
            other |= set(summary["fields"]) - declared
        return frozenset(static - other)

    @cached_property
    def _by_module(self) -> dict[str, dict[str, set[str]]]:
        """module -> {"traced" | "roots" | "differentiated": its function names} (for views)."""
        found: dict[str, dict[str, set[str]]] = {}
        for kind, places in (("traced", self.traced), ("roots", self.roots), ("differentiated", self.differentiated)):
            for module, name in places:
                found.setdefault(module, {}).setdefault(kind, set()).add(name)
        return found

    @cached_property
    def _static_attribute_list(self) -> tuple[str, ...]:
        return tuple(sorted(self.static_attributes))

    @cached_property
    def _settable_classes(self) -> tuple[str, ...]:
        return tuple(sorted(
            f"{module}.{name.removesuffix('.__setitem__')}"
            for module, summary in self.summaries.items() for name in summary["functions"]
            if name.endswith(".__setitem__") and name.count(".") == 1
        ))

    def _function(self, place: tuple[str, str]) -> dict:
        return self.summaries[place[0]]["functions"][place[1]]

    def _callees(self, place: tuple[str, str]) -> list[tuple[str, str]]:
        found = []
        for name in self._function(place)["calls"]:
            target = self.resolve(name)
            if target is not None:
                found.append(target)
        return found

    def _x64_modules(self) -> dict[str, str]:
        """Module -> the module whose import enables x64 for it: itself, a package it is in,
        or a module it imports (transitively)."""
        importers: dict[str, set[str]] = {}
        for module, summary in self.summaries.items():
            # an import inside a function counts: once it has run, x64 is on (a solver
            # interface that enables it, imported when that solver is chosen)
            for target in [*summary["imports"].values(), *summary["star_imports"], *summary["lazy_imports"]]:
                imported = self.module_of(target)
                while imported:  # importing a.b.c runs a/__init__, a/b/__init__ too
                    if imported in self.summaries and imported != module:
                        importers.setdefault(imported, set()).add(module)
                    imported = imported.rpartition(".")[0]
        for package, summary in self.summaries.items():
            if summary["imports_submodules"]:
                for module in self.summaries:
                    if module.startswith(package + "."):
                        importers.setdefault(module, set()).add(package)
        on: dict[str, str] = {}
        work = [(module, module) for module, summary in self.summaries.items() if summary["x64"]]
        # a package with a function that switches x64 on (an accuracy mode, a context manager
        # it traces under), or a library module (one the package's other modules import) that
        # switches it on when imported (its solver): whether x64 is on when its other code
        # runs depends on what the user called or imported first, which is not known. (An
        # entry point that enables it, imported by no module, covers what it imports.)
        on_demand: dict[str, str] = {}
        for module in sorted(self.summaries):
            summary = self.summaries[module]
            library = summary["x64"] and module in self._imported_modules
            if (summary["x64_on_demand"] or library) and not self.is_test_module(module):
                on_demand.setdefault(module.partition(".")[0], module)
        work += [(module, on_demand[root]) for module in self.summaries if (root := module.partition(".")[0]) in on_demand]
        # an entry point that enables x64 and then imports modules: they run with it
        work += [
            (imported, module) for module, summary in self.summaries.items()
            for target in summary["x64_then_imports"] if (imported := self.module_of(target)) in self.summaries
        ]
        # ... also at its top, when it is a program outside the package it imports (a
        # repository's example script or notebook; a workflow module shipped inside the
        # package is one way among others its users may run it, and a test says nothing of
        # how users call the code)
        work += [
            (imported, module) for module, summary in self.summaries.items()
            if module not in self._imported_modules and not self.is_test_module(module)
            for target in summary.get("x64_then_imports_at_top", ())
            if (imported := self.module_of(target)) in self.summaries and imported.partition(".")[0] != module.partition(".")[0]
        ]
        while work:
            module, source = work.pop()
            if module in on:
                continue
            on[module] = source
            work.extend((importer, source) for importer in importers.get(module, ()))
        return on

    def x64_source(self, module: str) -> str | None:
        name = module
        while name:
            if name in self._x64:
                return self._x64[name]
            name = name.rpartition(".")[0]
        if self.is_test_module(module):
            # pytest imports every test module (and conftest) of a run before it runs one:
            # x64 enabled by one at import is on for all of them
            return next((m for m in sorted(self.test_modules) if self.summaries[m]["x64"]), None)
        return None

    def key_verdict(self, place: tuple[str, str], param: str) -> str:
        return self._key_verdict((*place, param))[0]

    def _key_verdict(self, slot: tuple[str, str, str]) -> tuple[str, int]:
        """The verdict, and the depth of the lowest open call it leaned on. A chain that
        comes back to an open call (`Linear.from_config` calling itself) adds no draw of its
        own: what the rest of the chain does decides. A verdict that leaned on an open call
        is kept only once that call is settled."""
        if slot in self._verdicts:
            return self._verdicts[slot], len(self._open)
        if slot in self._open:
            return IGNORES, self._open[slot]
        depth = self._open[slot] = len(self._open)
        function = self._function(slot[:2])
        raw = function["keys"].get(slot[2], IGNORES if slot[2] in function["params"] else UNKNOWN)
        verdict, lowest = (raw, depth) if isinstance(raw, str) else self._passed_on(raw, depth)
        del self._open[slot]
        if lowest >= depth:
            self._verdicts[slot] = verdict
        return verdict, lowest

    def _passed_on(self, passes: list, depth: int) -> tuple[str, int]:
        verdicts, lowest = set(), depth
        for callee, where, *split in passes:
            if [callee, where] == MAYBE_PASS:
                verdicts.add(MAYBE)
                continue
            verdict, leaned = self._passed_to(callee, where, depth, bool(split))
            lowest = min(lowest, leaned)
            # keys split from the parameter: the split is a draw unless they are shown ignored
            verdicts.add(DRAWS if split and verdict != IGNORES else verdict)
        for verdict in (DRAWS, UNKNOWN, MAYBE):
            if verdict in verdicts:
                return verdict, lowest
        return IGNORES, lowest

    def _passed_to(self, callee: str, where: int | str, depth: int, split: bool = False) -> tuple[str, int]:
        """How the project function `callee` uses the key given at `where` (a position or a
        keyword), and the depth of the lowest open call that verdict leaned on. With `split`
        (keys split from the caller's key), keys it returns as given go on out of sight."""
        target = self.resolve(callee)
        if target is None:
            return UNKNOWN, depth
        params = self._function(target)["params"]
        if isinstance(where, int):
            if where >= len(params):
                return UNKNOWN, depth
            where = params[where]
        elif where not in params:
            if self._function(target).get("swallows"):
                return IGNORES, depth  # into a `**kwargs` the callee never reads
            return UNKNOWN, depth
        if split and any(param == where for _, param in self._function(target)["returns"]):
            return UNKNOWN, depth  # `return pytree`: handed back to whoever holds the keys next
        return self._key_verdict((*target, where))

    def returns_static(self, place: tuple[str, str]) -> bool:
        if place in self._static:
            return self._static[place]
        self._static[place] = False
        raw = self._function(place)["static"]
        result = raw if isinstance(raw, bool) else all(
            (target := self.resolve(name)) is not None and self.returns_static(target) for name in raw[1:]
        )
        self._static[place] = result
        return result

    @cached_property
    def _methods(self) -> dict[str, list[tuple[str, str]]]:
        found: dict[str, list[tuple[str, str]]] = {}
        for module, summary in self.summaries.items():
            for name, info in summary["functions"].items():
                if info["method"]:
                    found.setdefault(name.rsplit(".", 1)[1], []).append((module, name))
        return found

    def static_method(self, name: str) -> bool:
        """Every project method of that name returns a static value (and there is one)."""
        places = self._methods.get(name)
        return bool(places) and not name.startswith("__") and all(self.returns_static(p) for p in places)

    def with_module(self, path: str, module: str, is_package: bool, summary: dict) -> ProjectIndex:
        """The same project with one module's text replaced (its facts flow to the others)."""
        modules = dict(self.modules)
        modules[os.path.abspath(path)] = (module, is_package, summary)
        return ProjectIndex(modules, self.root)

    # views -------------------------------------------------------------------------------
    def view(self, path: str, summary: dict | None = None) -> ProjectView:
        """The view of the file at `path` (`summary`: its text's, when it differs from disk)."""
        key = os.path.abspath(path)
        module, is_package = self.paths.get(key) or module_name(Path(path))
        renames = self._renames.get(key, {})
        if summary is None:
            summary = self.summaries.get(module) if key in self.paths else None
        else:
            summary = _renamed(summary, renames)
        summary = summary or empty_summary()
        # what this file's own facts call things: `data.f`, not the index's `data@1.f`
        as_named = functools.partial(_renamed, names={held: name for name, held in renames.items()})
        package = as_named(module if is_package else module.rpartition(".")[0])
        places = self._by_module.get(module, {})
        own = places.get("traced", set())
        roots = []
        for name in sorted(places.get("roots", ())):
            roots.extend((name, t, nums, names) for t, nums, names, by in self.roots[(module, name)] if by != module)
        rooted = places.get("roots", set())
        reached = tuple(sorted((name, self.traced[(module, name)]) for name in own - rooted))
        differentiated = tuple(sorted(places.get("differentiated", ())))
        callees, guards = [], []
        seen = set()
        methods = set()
        called = [[*info["calls"], *info.get("decorators", ())] for info in summary["functions"].values()]
        called.append(summary.get("module_calls", []))
        for info in summary["functions"].values():
            methods.update(info["method_calls"])
        for names in called:
            for name in names:
                if name in seen:
                    continue
                seen.add(name)
                target = self.resolve(name)
                if target is None or target[0] == module:
                    continue
                callee = self._function(target)
                if callee.get("x64_guard"):
                    guards.append(name)
                verdicts = tuple((p, self.key_verdict(target, p)) for p in callee["params"])
                bound = (
                    callee["classmethod"] or (target[1].endswith(".__init__") and not name.endswith(".__init__"))
                    or ("()." in name and callee["method"])  # called on an object: `self` is bound
                )
                handed_back = tuple(sorted({
                    (position, param) for position, param in callee.get("returns", ())
                    if self.key_verdict(target, param) == DRAWS
                }))
                callees.append(Callee(
                    as_named(name), tuple(callee["params"]), bound, verdicts, self.returns_static(target),
                    bool(callee.get("array")), handed_back, bool(callee.get("swallows")),
                    tuple(callee.get("shape_templates", ())), tuple(callee.get("reorders", ())),
                ))
        if module in self._guarded_by:
            guards.append(self._guarded_by[module])  # a program that imports it checks x64
        source = self.x64_source(module)
        building, called_later = self._method_callers
        return ProjectView(
            module=as_named(module),
            package=package,
            x64=source is not None,
            roots=tuple(roots),
            reached=reached,
            differentiated=differentiated,
            callees=tuple(sorted(callees)),
            static_methods=tuple(sorted(m for m in methods if self.static_method(m))),
            static_attributes=self._static_attribute_list,
            aliases=as_named(self._aliases_for(summary)),
            settable_classes=self._settable_classes,
            x64_functions=tuple(sorted(self._x64_functions.get(module, ()))),
            imported=module in self._imported_modules,
            constant_collections=tuple(sorted(
                as_named(name) for name in set(summary["imports"].values()) if self._constant_collection(name)
            )),
            x64_guards=tuple(sorted(as_named(guards))),
            x64_told=any(module == told or module.startswith(told + ".") for told in self._x64_told),
            construction_methods=self._methods_among(summary, building),
            called_after_construction=self._methods_among(summary, called_later),
            summary_error=summary.get("error", ""),
        )


def _separate_namesakes(modules: dict[str, tuple[str, bool, dict]], root: str) -> tuple[dict, dict[str, dict[str, str]]]:
    """Top-level modules of one name in several folders (a `data.py` beside each experiment's
    scripts) are different modules: each folder's gets its own name in the index (`data@0`,
    `data@1`, and `data@0.sub` below a package), and each module's summary names the one
    Python imports for it, from its own folder (a script's folder comes first on sys.path),
    else from the project's `root` (where the project is run or installed from). A module
    with neither imports one of them, not known which: `data@?`, which resolves to nothing.
    Returns the modules so renamed, and path -> {name: its name in the index} for the
    modules that refer to such names."""
    folders: dict[str, dict[str, str]] = {}  # head -> {search folder: name in the index}
    searched = {}
    for path, (name, is_package, _) in sorted(modules.items()):
        depth = name.count(".") + (1 if is_package else 0)
        folder = str(Path(path).parents[depth]) if depth < len(Path(path).parents) else ""
        searched[path] = folder
        holders = folders.setdefault(name.partition(".")[0], {})
        holders.setdefault(folder, "")
    namesakes = {head: holders for head, holders in folders.items() if len(holders) > 1}
    if not namesakes:
        return modules, {}
    for head, holders in namesakes.items():
        for number, folder in enumerate(sorted(holders)):
            holders[folder] = f"{head}@{number}"
    renamed, renames = {}, {}
    for path, (name, is_package, summary) in modules.items():
        names = {head: holders.get(searched[path]) or holders.get(root, f"{head}@?") for head, holders in namesakes.items()}
        renames[path] = names
        renamed[path] = (_renamed(name, names, whole=True), is_package, _renamed(summary, names))
    return renamed, renames


# Summary fields that list whole module names (`import data`): a name alone is a module there.
_MODULE_FIELDS = frozenset({"imports", "star_imports", "lazy_imports", "x64_then_imports", "x64_then_imports_at_top"})


def _renamed(value, names: dict[str, str], whole: bool = False):
    """`value` (a summary, or any part of one) with the qualified names whose first part is
    in `names` renamed (`data.f` -> `data@1.f`); a bare name (a parameter called `data`) only
    where `whole` says it is a module."""
    if not names:
        return value
    if isinstance(value, str):
        head, dot, rest = value.partition(".")
        return names[head] + dot + rest if head in names and (dot or whole) else value
    if isinstance(value, dict):
        return {key: _renamed(item, names, whole or key in _MODULE_FIELDS) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_renamed(item, names, whole) for item in value)
    return value


# building ----------------------------------------------------------------------------------


def project_files(root: Path, exclude: list[str], config_root: Path) -> list[str]:
    from jaxguard.lint.discover import discover

    return [f for f in discover([str(root)], exclude, config_root).files if f.endswith((".py", ".pyi"))]


def source_of(path: str, data: bytes) -> str | None:
    from jaxguard.lint.files import decode_source

    if path.endswith(".ipynb"):
        from jaxguard.lint.notebook import notebook_source

        return notebook_source(data)
    try:
        return decode_source(data)[0]
    except ValueError:
        return None


class SummaryStore:
    """Summaries cached on disk in one file per project root: path -> [size, mtime, content
    hash, module, is package, summary]. A file whose size and mtime are unchanged is not
    read again; one whose content hash is unchanged is not summarised again."""

    def __init__(self, cache_dir: str | None, root: Path) -> None:
        self.file = None
        self.cache_dir = cache_dir
        self.entries: dict[str, list] = {}
        self.dirty = False
        if cache_dir is not None:
            digest = hashlib.blake2b(str(root).encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
            self.file = Path(cache_dir) / "index" / f"{digest}-{INDEX_FILE}"
            try:
                loaded = json.loads(self.file.read_text(encoding="utf-8"))
                if loaded.get("version") == _store_version():
                    self.entries = loaded["files"]
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                self.entries = {}

    def summaries(self, paths: list[str], jobs: int = 1) -> dict[str, tuple[str, bool, dict]]:
        """path -> (module, is package, summary) for each readable file; the stale ones are
        summarised (in `jobs` processes when there are many)."""
        found: dict[str, tuple[str, bool, dict]] = {}
        stale: list[str] = []
        for path in paths:
            key = os.path.abspath(path)
            try:
                info = os.stat(key)
            except OSError:
                continue
            entry = self.entries.get(key)
            if entry is not None and entry[0] == info.st_size and entry[1] == info.st_mtime_ns:
                found[key] = (entry[3], entry[4], entry[5])
            else:
                stale.append(key)
        ordered = sorted(stale, key=_size, reverse=True)
        previous = [self.entries.get(key) for key in ordered]
        if len(stale) >= MIN_FILES_FOR_POOL and jobs > 1:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=jobs) as pool:
                chunk = max(1, min(16, len(ordered) // (jobs * 8)))
                entries = list(pool.map(_summarised, ordered, previous, chunksize=chunk))
        else:
            entries = [_summarised(path, entry) for path, entry in zip(ordered, previous)]
        for key, entry in zip(ordered, entries):
            if entry is not None:
                self.entries[key] = entry
                self.dirty = True
                found[key] = (entry[3], entry[4], entry[5])
        return found

    def save(self, keep: set[str]) -> None:
        if self.file is None or not self.dirty:
            return
        from jaxguard.lint.cache import Cache

        entries = {k: v for k, v in self.entries.items() if k in keep}
        try:
            if not Cache(Path(self.cache_dir)).prepare():
                return  # a folder of that name that is not jaxguard's: left alone
            self.file.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.file.parent, prefix=".index-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"version": _store_version(), "files": entries}, handle)
            os.replace(temporary, self.file)
        except OSError:
            pass  # the index is rebuilt next time


# Below this many files to summarise, a pool costs more than it saves.
MIN_FILES_FOR_POOL = 32


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _summarised(path: str, previous: list | None = None) -> list | None:
    """A store entry for the file at `path`: [size, mtime, content hash, module, is package,
    summary]; None if it cannot be read. The summary of `previous` (its entry from the store)
    is kept when the content and module name are unchanged (a file only touched)."""
    from jaxguard.lint.files import read_bytes

    try:
        info = os.stat(path)
        data = read_bytes(path)
    except (OSError, ValueError):
        return None
    module, is_package = module_name(Path(path))
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    if previous is not None and previous[2] == digest and previous[3] == module:
        return [info.st_size, info.st_mtime_ns, digest, module, is_package, previous[5]]
    source = source_of(path, data)
    summary = summarise(source, module, is_package) if source is not None else empty_summary()
    return [info.st_size, info.st_mtime_ns, digest, module, is_package, summary]


def _store_version() -> str:
    from jaxguard.lint.cache import fingerprint

    return f"{VERSION}|{fingerprint()}"


def project_views(
    paths: list[str], cache_dir: str | None, exclude: list[str], config_root: Path, jobs: int = 1
) -> dict[str, ProjectView]:
    """path -> the view of each file, from the index of the project it belongs to."""
    views = {}
    for index, members in build_index(paths, cache_dir, exclude, config_root, jobs):
        for path in members:
            views[path] = index.view(path)
    return views


def build_index(
    paths: list[str], cache_dir: str | None, exclude: list[str], config_root: Path, jobs: int = 1
) -> list[tuple[ProjectIndex, list[str]]]:
    """The index of each project the paths belong to, with the paths in it."""
    by_root: dict[Path | None, list[str]] = {}
    for path in paths:
        root = find_root(Path(path))
        by_root.setdefault(root, []).append(path)
    indexes = []
    for root, members in by_root.items():
        files = set(os.path.abspath(p) for p in members)
        if root is not None:
            files.update(os.path.abspath(p) for p in project_files(root, exclude, config_root))
        folder = root or Path(os.path.commonpath(sorted(files)))
        if not folder.is_dir():
            folder = folder.parent
        store = SummaryStore(cache_dir, folder)
        modules = store.summaries(sorted(files), jobs)
        if len(modules) > 1:  # a file alone has no project facts worth keeping
            store.save(set(modules))
        indexes.append((ProjectIndex(modules, folder), members))
    return indexes


def view_for_text(
    path: str, data: bytes, cache_dir: str | None, exclude: list[str], config_root: Path,
    others: dict[str, bytes] | None = None,
) -> ProjectView:
    """The view of a file whose text is `data` (an editor's unsaved buffer, flake8's lines):
    the project's other modules as on disk, except those in `others` (other unsaved
    buffers, by path: the language server's open files), this one as given."""
    root = find_root(Path(path))
    memo = (root, cache_dir) if root is not None else None
    index = _INDEXES.get(memo) if memo is not None else None
    if index is None:
        ((index, _),) = build_index([path], cache_dir, exclude, config_root) if os.path.exists(path) else [(ProjectIndex({}), [path])]
        if memo is not None:
            _INDEXES[memo] = index
    for other, other_data in (others or {}).items():
        if other != path and root is not None and find_root(Path(other)) == root:
            index, _ = _with_text(index, other, other_data)
    index, summary = _with_text(index, path, data)
    return index.view(path, summary)


def _with_text(index: ProjectIndex, path: str, data: bytes) -> tuple[ProjectIndex, dict | None]:
    """The index with `path`'s module summarised from `data` (unsaved edits reach the rest)."""
    module, is_package = module_name(Path(path))
    source = source_of(path, data)
    summary = summarise(source, module, is_package) if source is not None else None
    known = index.modules.get(os.path.abspath(path))
    if summary is not None and (known is None or known[2] != summary):
        index = index.with_module(path, module, is_package, summary)
    return index, summary


def forget_indexes() -> None:
    """Drop the in-process indexes (files changed on disk): the next view rebuilds from the
    summary store, re-reading only the files whose size or mtime changed."""
    from jaxguard.lint.requirements import forget_declarations

    _INDEXES.clear()
    forget_declarations()  # a dependency file may have changed too


# One index per project and process: flake8 checks many files of one project in a process.
_INDEXES: dict = {}
