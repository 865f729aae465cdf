"""A module's summary: what the other modules of its project need to know about it.

Read from CPython's own `ast` (the guard compiles every file with CPython anyway, and its
tree costs a fraction of libcst's), so the summaries of a whole project cost little next to
linting it. A summary is plain JSON data, cached by content (see `jaxguard.lint.project`).

For the module: its imports (relative ones resolved against its package), whether its
import enables x64, the transformations it applies to names (`jax.jit(f)`, `@jax.grad`,
`lax.scan(body, ...)`), the static dataclass fields of its classes. For each module-level
function and method (`f`, `Cls.m`): its parameters, what it calls (by qualified name), how
it uses each parameter that may be a PRNG key (draws from it, ignores it, passes it on),
and whether its result is a static Python value (a count, a shape, a flag).
"""

from __future__ import annotations

import ast
import collections
import traceback
import warnings

from jaxguard.lint.jaxapi import (
    ABSTRACT_METHODS,
    ARRAY_METHODS,
    CUSTOM_DERIVATIVES,
    FUNCTION_APPLYING_BUILTINS,
    FUNCTION_APPLYING_PREFIXES,
    GRAD_TRANSFORMS,
    KEY_ANNOTATION,
    KEY_APPLYING,
    KEY_LOOKING,
    KEY_NEUTRAL_PREFIXES,
    LAX_BODIES,
    MEMOIZERS,
    METADATA_CALLS,
    NAMES_X64,
    NOT_CONSUMING,
    SHAPE_ATTRIBUTES,
    TELLING_CALLS,
    TRACING_TRANSFORMS,
    is_host_callback,
    is_reordering,
    names_abstract_trace,
)

VERSION = 21  # of the summary format (part of its cache key)

# Key use kinds: a parameter is drawn from, ignored, passed on (resolved by the index), or
# used in a way the summary cannot follow (stored, returned, given to unknown code); or only
# handed to a Haiku-style `apply(params, key, ...)`, which draws from it only if the model
# has stochastic layers (MAYBE: never paired with another use, as in the module's own flow).
DRAWS, IGNORES, UNKNOWN, MAYBE = "draws", "ignores", "unknown", "maybe"
# the entry of a passed-on list that stands for such an `apply` beside the calls
MAYBE_PASS = ["<apply>", None]
# the mark of a passed-on entry that carries a key split from the parameter
# (`[callee, where, SPLIT_PASS]`): a split is a draw unless the index shows its keys ignored
SPLIT_PASS = "split"

# Calls whose result is a Python value whatever they are given.
_STATIC_CALLS = METADATA_CALLS | frozenset(
    {"builtins.len", "builtins.isinstance", "builtins.hasattr", "builtins.callable", "builtins.issubclass",
     "builtins.int", "builtins.bool", "builtins.str", "builtins.type", "builtins.id", "math.prod", "numpy.prod"}
)
_STATIC_ATTRS = frozenset({"shape", "ndim", "dtype", "size", "itemsize", "weak_type"})
_STATIC_ANNOTATIONS = frozenset({"int", "bool", "str", "Shape", "DType", "dtype"})
_X64_VALUES = (True, 1, "1", "true", "True")


def empty_summary() -> dict:
    return {
        "imports": {}, "star_imports": [], "x64": False, "tells_x64": False, "x64_then_imports": [], "x64_then_imports_at_top": [], "imports_submodules": False, "lazy_imports": [], "x64_on_demand": False, "marks": [], "functions": {}, "static_fields": {},
        "fields": [], "aliases": {}, "unaliased": [], "module_calls": [], "module_method_calls": [],
        "constant_collections": [],
    }


def summarise(source: str, module: str, is_package: bool) -> dict:
    """The summary of one module's text (an empty one if CPython cannot parse it)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return empty_summary()
    try:
        return _Summariser(module, is_package).run(tree)
    except RecursionError:
        return empty_summary()
    except Exception as error:  # a bug of ours: the index knows nothing of this module, the run goes on
        where = traceback.extract_tb(error.__traceback__)[-1]
        summary = empty_summary()
        summary["error"] = f"{type(error).__name__}: {error} (at {where.name}:{where.lineno})".splitlines()[0]
        return summary


def _imports_submodules(calls, qualify) -> bool:
    """A package `__init__` that imports every module below it (`for info in
    pkgutil.walk_packages(__path__): importlib.import_module(info.name)`)."""
    names = {qualify(call.func) for call in calls}
    return "importlib.import_module" in names and bool(names & {"pkgutil.walk_packages", "pkgutil.iter_modules"})


def _checks_x64(node: ast.AST) -> bool:
    """`if not jax.config.read("jax_enable_x64"): raise ...` (or a warning, or a test of
    `jax.config.jax_enable_x64` read another way, or a message that names the flag: `if not
    _is_x64_enabled(): raise ValueError("gram() requires jax_enable_x64=True.")`): the module
    refuses to run without x64, or tells the user that it needs it. Either way its 64-bit
    requests are not silently 32-bit."""
    if not isinstance(node, ast.If):
        return False
    # the setting read by any means: `jax.config.read("jax_enable_x64")`, its attribute,
    # `getattr(jax.config, "jax_enable_x64", False)`, the `JAX_ENABLE_X64` variable
    reads = any(
        (isinstance(inner, ast.Constant) and isinstance(inner.value, str) and inner.value.lower() == "jax_enable_x64")
        or (isinstance(inner, ast.Attribute) and inner.attr in ("jax_enable_x64", "x64_enabled"))
        for inner in ast.walk(node.test)
    )
    tellings = [
        inner for statement in node.body for inner in ast.walk(statement)
        if isinstance(inner, ast.Raise)
        or (isinstance(inner, ast.Call) and isinstance(inner.func, (ast.Attribute, ast.Name))
            and (inner.func.attr if isinstance(inner.func, ast.Attribute) else inner.func.id) in TELLING_CALLS)
    ]
    return bool(tellings) and (reads or any(_names_x64(telling) for telling in tellings))


def _names_x64(node: ast.AST) -> bool:
    """A string of `node` names the x64 flag or x64 mode ("requires jax_enable_x64=True")."""
    return any(
        isinstance(inner, ast.Constant) and isinstance(inner.value, str) and NAMES_X64.search(inner.value) is not None
        for inner in ast.walk(node)
    )


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


class _Summariser:
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.imports: dict[str, str] = {}
        self.star_imports: list[str] = []  # `from m import *`: m's names are this module's too
        self.local_defs: set[str] = set()
        self.classes: dict[str, set[str]] = {}
        # per class, its objects' attributes every assignment binds to a call of one named
        # maker (`self.act = Sigmoid()`): `self.act(x)` runs `Sigmoid.__call__`
        self.attribute_makers: dict[str, dict[str, str]] = {}
        self.summary = empty_summary()

    # names -------------------------------------------------------------------------
    def _absolute(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = self.package.split(".") if self.package else []
        if node.level > 1:
            parts = parts[: len(parts) - (node.level - 1)]
        return ".".join([*parts, *([node.module] if node.module else [])])

    def _read_imports(self, body, into: dict[str, str]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        into[alias.asname] = alias.name
                    else:
                        into[alias.name.split(".")[0]] = alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(node)
                for alias in node.names:
                    if alias.name != "*":
                        into[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
                    elif into is self.imports and base and base not in self.star_imports:
                        self.star_imports.append(base)
            elif isinstance(node, (ast.If, ast.Try)) or type(node).__name__ == "TryStar":
                for block in _blocks(node):
                    self._read_imports(block, into)

    def qualify(self, node: ast.AST, local: dict[str, str] | None = None, cls: str | None = None, self_name: str | None = None) -> str | None:
        """The qualified name an expression names, as the module sees it."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if cls is not None and self_name is not None and head == self_name and rest and "." not in rest:
            return f"{self.module}.{cls}.{rest}"
        if local is not None and head in local:
            target = local[head]
        elif head in self.imports:
            target = self.imports[head]
        elif head in self.local_defs or head in self.classes:
            target = f"{self.module}.{head}"
        elif head in _BUILTINS:
            target = f"builtins.{head}"
        else:
            return None
        return f"{target}.{rest}" if rest else target

    def call_target(self, func: ast.AST, local, cls, self_name, objects: dict[str, str]) -> str | None:
        """What a call of `func` runs, by qualified name: `qualify`'s answer, or the method an
        object runs when a call of a named maker makes it (`self.act(x)` with `self.act =
        Sigmoid()` everywhere: `pkg.flows.Sigmoid().__call__`; `opt = Adam(); opt.init(p)`:
        `pkg.opt.Adam().init`; the `()` says the method is bound to an object). `objects`:
        the function's local objects and their makers."""
        receiver, method = (func, "__call__") if isinstance(func, ast.Name) else (None, "")
        if isinstance(func, ast.Attribute):
            receiver, method = func.value, func.attr
            if isinstance(receiver, ast.Name) and receiver.id == self_name and func.attr in self.attribute_makers.get(cls, {}):
                receiver, method = func, "__call__"
        maker = None
        if isinstance(receiver, ast.Name):
            maker = objects.get(receiver.id)
        elif isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == self_name:
            maker = self.attribute_makers.get(cls, {}).get(receiver.attr)
        return f"{maker}().{method}" if maker is not None else self.qualify(func, local, cls, self_name)

    def _objects(self, flat: _Flat, assigned, params, local) -> dict[str, str]:
        """A function's local names bound only by calls of one named maker (`opt = Adam()`),
        and that maker's qualified name."""
        stores: dict[str, int] = {}
        for name in flat.names:
            if isinstance(name.ctx, ast.Store):
                stores[name.id] = stores.get(name.id, 0) + 1
        objects = {}
        for name, values in assigned.items():
            maker = self._one_maker(values, stores.get(name, 0), local) if name not in params else None
            if maker is not None:
                objects[name] = maker
        return objects

    def _attribute_makers(self, node: ast.ClassDef) -> dict[str, str]:
        """The attributes of a class's objects that every assignment (in its methods, or its
        body) binds to a call of one named maker, and that maker's qualified name."""
        values: dict[str, list] = {}  # the values of plain assignments (`self.attr = value`)
        stores: dict[str, int] = {}  # every binding, plain or not (`+=`, unpacking, `for`)
        for item in node.body:
            if isinstance(item, (ast.Assign, ast.AnnAssign)):
                for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                    if isinstance(target, ast.Name):
                        values.setdefault(target.id, []).append(item.value)
                        stores[target.id] = stores.get(target.id, 0) + 1
            elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and (receiver := _first_param(item)):
                # `self.rep: Representation` alone declares a type, it binds nothing
                declared = {id(n.target) for n in ast.walk(item) if isinstance(n, ast.AnnAssign) and n.value is None}
                for inner in ast.walk(item):
                    if (
                        isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store) and isinstance(inner.value, ast.Name)
                        and inner.value.id == receiver and id(inner) not in declared
                    ):
                        stores[inner.attr] = stores.get(inner.attr, 0) + 1
                    elif isinstance(inner, ast.AnnAssign) and inner.value is None:
                        continue
                    elif isinstance(inner, (ast.Assign, ast.AnnAssign)):
                        for target in inner.targets if isinstance(inner, ast.Assign) else [inner.target]:
                            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == receiver:
                                values.setdefault(target.attr, []).append(inner.value)
        makers = {}
        for attr, made in values.items():
            maker = self._one_maker(made, stores[attr]) if attr not in self.classes.get(node.name, ()) else None
            if maker is not None:
                makers[attr] = maker
        return makers

    def _one_maker(self, values: list, bindings: int, local=None) -> str | None:
        """The qualified name of the one maker whose calls are all the `bindings` of a name
        (`Sigmoid()` each time), or None."""
        makers = {_dotted(v.func) if isinstance(v, ast.Call) else None for v in values}
        if not values or len(values) != bindings or len(makers) != 1 or None in makers:
            return None
        return self.qualify(values[0].func, local)

    # the module ----------------------------------------------------------------------
    def run(self, tree: ast.Module) -> dict:
        self._read_imports(tree.body, self.imports)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.local_defs.add(node.name)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = {
                    item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                }
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.attribute_makers[node.name] = self._attribute_makers(node)
        summary = self.summary
        summary["imports"] = dict(self.imports)
        summary["star_imports"] = list(self.star_imports)
        functions = [(node, owner, _Flat(node)) for node, owner in _named_functions(tree)]
        as_script = _module_code(tree.body, main=True)
        at_import_code = _module_code(tree.body, main=False)
        module_code = _Flat(tree, roots=as_script)  # what runs as a script
        at_import = module_code if len(at_import_code) == len(as_script) else _Flat(tree, roots=at_import_code)
        # per function, the lines where it switches x64 on (read by three judgements below)
        enabling = {node: [n.lineno for n in [*flat.calls, *flat.assignments] if self._enables_x64(n)] for node, _, flat in functions}
        x64_helpers = {node.name for node, owner, _ in functions if owner == node.name and enabling[node]}
        enabled_at_import = [inner.lineno for inner in [*module_code.calls, *module_code.assignments] if self._enables_x64(inner)]
        for inner in [*at_import.calls, *at_import.assignments]:
            if self._enables_x64(inner):
                summary["x64"] = True
        # a helper that enables x64, called or registered (a config callback) at import
        if any(name.id in x64_helpers for name in at_import.names):
            summary["x64"] = True
        # a module that refuses to import without x64 (`if not config.read("jax_enable_x64"):
        # raise`) runs with it, as does whatever imports it; one that warns has told the user
        if any(_checks_x64(node) for node in tree.body):
            summary["x64"] = True
        # a docstring that tells users to enable x64 ("float64 is opt-in: call
        # jax.config.update('jax_enable_x64', True)"): its package's modules rely on them
        summary["tells_x64"] = NAMES_X64.search(ast.get_docstring(tree) or "") is not None
        summary["x64_then_imports"] = sorted({
            target for node, _, _ in functions if enabling[node] for target in self._imported_after(node, min(enabling[node]))
        })
        # a script or notebook that enables x64 at its top, then imports the package it runs
        summary["x64_then_imports_at_top"] = sorted(set(self._imported_after(tree, min(enabled_at_import)))) if enabled_at_import else []
        summary["imports_submodules"] = _imports_submodules(at_import.calls, self.qualify)
        summary["lazy_imports"] = sorted({target for _, _, flat in functions for target in self._local_imports(flat).values()})
        # a function that switches x64 on when called (`enable_accuracy_mode()`, a context
        # manager the package traces under): its package runs code under x64 on demand
        summary["x64_on_demand"] = any(enabling.values())
        for node in at_import_code:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self._alias(node.targets[0].id, node.value)
        # how many times each name is bound at import
        bindings = collections.Counter(
            target.id for node in at_import_code if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(target, ast.Name)
        )
        # names bound at import to something that is not an alias (`jit = lambda f: f` in the
        # numpy branch of `if use_jax: from jax import jit`): what they stand for is not known
        summary["unaliased"] = sorted(name for name in bindings if name not in summary["aliases"])
        # names bound once at import to a collection of literals (`DATASETS = ["a", "b"]`): a
        # loop over one, imported elsewhere, is a sweep over constant configurations
        summary["constant_collections"] = sorted(
            node.targets[0].id for node in at_import_code
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and bindings[node.targets[0].id] == 1 and _literal_collection(node.value)
        )
        fields: set[str] = set()  # every annotated class field: a static field's name may be reused
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                summary["static_fields"][node.name] = sorted(self._static_fields(node))
                fields.update(
                    item.target.id for item in node.body if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                )
        for node, owner, flat in functions:
            self._function(owner, node, owner.split(".")[0] if "." in owner else None, flat)
        self._marks(functions, module_code)
        summary["fields"] = sorted(fields)
        # what the module's own code calls when it runs (a script, a notebook's cells)
        summary["module_calls"] = sorted({
            target for node in module_code.own_calls if (target := self.qualify(node.func)) is not None
        })
        summary["module_method_calls"] = sorted({
            node.func.attr for node in module_code.own_calls if isinstance(node.func, ast.Attribute)
        })
        return summary

    def _alias(self, name: str, value: ast.AST) -> None:
        """`f = g`, `f = jax.jit(g)`, `f = partial(g, ...)`: calling `f` calls `g`."""
        while isinstance(value, ast.Call) and value.args:
            func = self.qualify(value.func)
            if func in TRACING_TRANSFORMS or func == "functools.partial" or func in GRAD_TRANSFORMS:
                value = value.args[0]
            else:
                return
        target = self.qualify(value)
        if target is not None:
            self.summary["aliases"][name] = target

    def _imported_after(self, function: ast.AST, enabled_at: int) -> list[str]:
        """Modules an entry point imports after it enables x64 at line `enabled_at` (`main()`
        in a CLI: enable, then `from .commands import run`): their code runs with x64."""
        later = [node for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno > enabled_at]
        found: dict[str, str] = {}
        self._read_imports(later, found)
        return list(found.values())

    def _enables_x64(self, node: ast.AST) -> bool:
        """`jax.config.update("jax_enable_x64", True)`, `config.update(...)`, the environment
        variable, or `jax.config.jax_enable_x64 = True`."""
        if isinstance(node, ast.Call):
            func = _dotted(node.func) or ""
            args = node.args
            if func.endswith("config.update") and len(args) == 2 and _constant(args[0]) == "jax_enable_x64":
                # a literal True, or a value the package computes (a flag that defaults to on)
                return _constant(args[1]) in _X64_VALUES or not isinstance(args[1], ast.Constant)
            if func.endswith("environ.setdefault") and args and _constant(args[0]) == "JAX_ENABLE_X64":
                return len(args) > 1 and _constant(args[1]) in _X64_VALUES
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Subscript) and (_dotted(target.value) or "").endswith("environ"):
                return _constant(target.slice) == "JAX_ENABLE_X64" and _constant(node.value) in _X64_VALUES
            if isinstance(target, ast.Attribute) and target.attr == "jax_enable_x64":
                return _constant(node.value) in _X64_VALUES
        return False

    def _static_fields(self, node: ast.ClassDef) -> set[str]:
        """Fields a pytree dataclass keeps out of its leaves: `flax.struct.field(pytree_node=False)`,
        `eqx.field(static=True)`, `field(metadata={"static": True})`, `Static[...]` annotations,
        and `register_dataclass(meta_fields=[...])` as a decorator."""
        found: set[str] = set()
        for item in node.body:
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            annotation = item.annotation
            if isinstance(annotation, ast.Subscript) and (_dotted(annotation.value) or "").rsplit(".", 1)[-1] == "Static":
                found.add(item.target.id)
            value = item.value
            if isinstance(value, ast.Call) and (_dotted(value.func) or "").rsplit(".", 1)[-1] in ("field", "static_field"):
                if (_dotted(value.func) or "").endswith("static_field"):
                    found.add(item.target.id)
                for kw in value.keywords:
                    if (kw.arg == "pytree_node" and _constant(kw.value) is False) or (kw.arg == "static" and _constant(kw.value) is True):
                        found.add(item.target.id)
                    if kw.arg == "metadata" and isinstance(kw.value, ast.Dict):
                        for k, v in zip(kw.value.keys, kw.value.values):
                            if k is not None and _constant(k) == "static" and _constant(v) is True:
                                found.add(item.target.id)
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call):
                for kw in decorator.keywords:
                    if kw.arg == "meta_fields" and isinstance(kw.value, (ast.List, ast.Tuple)):
                        found.update(c for c in map(_constant, kw.value.elts) if isinstance(c, str))
        return found

    # transformations -----------------------------------------------------------------
    def _marks(self, functions, module_code: _Flat) -> None:
        """Every transformation this module applies to a function, wherever it is written:
        [transform, target qualified name, static argnums, static argnames, positional
        arguments bound by a `partial`]."""
        marks = self.summary["marks"]
        scopes = [(module_code, None, {}, None)]
        for node, owner, flat in functions:
            cls = owner.split(".")[0] if "." in owner else None
            scopes.append((flat, cls, self._local_imports(flat), _first_param(node) if cls else None))
        for flat, cls, local, self_name in scopes:
            for call in flat.own_calls:
                for transform, target, spec in self._transform_targets(call, local, cls, self_name):
                    marks.append([transform, target, *spec])
        for node, owner, _ in functions:
            for decorator in node.decorator_list:
                found = self._transform_of(decorator)
                if found is not None:
                    marks.append([found[0], f"{self.module}.{owner}", *_static_spec(found[1]), 0])

    def _local_imports(self, flat: _Flat) -> dict[str, str]:
        if flat.imports is None:
            flat.imports = {}
            self._read_imports([n for n in flat.nodes if isinstance(n, (ast.Import, ast.ImportFrom))], flat.imports)
        return flat.imports

    def _transform_of(self, node: ast.AST) -> tuple[str, ast.Call | None] | None:
        """`jax.jit`, `jax.jit(static_argnums=...)`, `partial(jax.jit, ...)` as a decorator."""
        name = self.qualify(node)
        if name in TRACING_TRANSFORMS or name in GRAD_TRANSFORMS or _custom(name):
            return name, None
        if isinstance(node, ast.Call):
            inner = self.qualify(node.func)
            if inner == "functools.partial" and node.args:
                found = self._transform_of(node.args[0])
                return (found[0], node) if found else None
            if (inner in TRACING_TRANSFORMS or inner in GRAD_TRANSFORMS or _custom(inner)) and not node.args:
                return inner, node
        return None

    def _transform_targets(self, call: ast.Call, local, cls, self_name):
        name = self.qualify(call.func, local, cls, self_name)
        if name in LAX_BODIES:
            for index, keyword in LAX_BODIES[name]:
                value = call.args[index] if index < len(call.args) else _keyword(call, keyword)
                bodies = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
                for body in bodies:
                    if body is not None:
                        target, positional, keywords = self._bound_target(body, local, cls, self_name)
                        if target is not None:
                            yield name, target, [[], keywords, positional]
            return
        if not call.args:
            return
        transform = None
        if name in TRACING_TRANSFORMS or name in GRAD_TRANSFORMS or _custom(name):
            transform, spec_call = name, call
        elif isinstance(call.func, ast.Call):
            found = self._transform_of(call.func)
            if found is not None:
                transform, spec_call = found
        if transform is None:
            return
        target, positional, keywords = self._bound_target(call.args[0], local, cls, self_name)
        if target is not None:
            nums, names = _static_spec(spec_call)
            yield transform, target, [nums, names + keywords, positional]

    def _function_target(self, node, local, cls, self_name) -> str | None:
        return self._bound_target(node, local, cls, self_name)[0]

    def _bound_target(self, node, local, cls, self_name) -> tuple[str | None, int, list[str]]:
        """(the function `node` names, positional arguments and keywords a `partial` binds:
        concrete values, not traced)."""
        positional, keywords = 0, []
        while isinstance(node, ast.Call) and node.args:
            inner = self.qualify(node.func, local, cls, self_name)
            if inner == "functools.partial":
                positional += len(node.args) - 1
                keywords += [kw.arg for kw in node.keywords if kw.arg]
            elif inner not in TRACING_TRANSFORMS and inner not in GRAD_TRANSFORMS:
                return None, 0, []
            node = node.args[0]
        return self.qualify(node, local, cls, self_name), positional, keywords

    # functions -----------------------------------------------------------------------
    @staticmethod
    def _host_callback_calls(flat: _Flat, targets: dict[int, str | None]) -> set[int]:
        """The calls inside lambdas and nested functions this function only hands to a host
        callback (`solve = lambda a: scipy_solve(a)`, `jax.pure_callback(solve, ...)`): they
        run on the host with concrete values, not when the function runs (ids of the calls).
        `targets`: each call's qualified target."""
        handed = [call.args[0] for call in flat.calls if call.args and is_host_callback(targets[id(call)] or "")]
        if not handed:
            return set()
        called = {call.func.id for call in flat.calls if isinstance(call.func, ast.Name)}
        names = {arg.id for arg in handed if isinstance(arg, ast.Name)} - called  # also run in the trace
        bodies = [arg for arg in handed if isinstance(arg, ast.Lambda)]
        for node in flat.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
                bodies.append(node)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
                if any(isinstance(t, ast.Name) and t.id in names for t in node.targets):
                    bodies.append(node.value)
        return {id(inner) for body in bodies for inner in ast.walk(body) if isinstance(inner, ast.Call)}

    def _function(self, qualname: str, node, cls: str | None, flat: _Flat) -> None:
        local = self._local_imports(flat)
        params = [a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)]
        decorators = [_dotted(d if not isinstance(d, ast.Call) else d.func) or "" for d in node.decorator_list]
        is_method = cls is not None and "staticmethod" not in decorators
        self_name = params[0] if is_method and params else None
        calls: set[str] = set()
        method_calls: set[str] = set()
        assigned = _assigned_values(flat)  # read by the objects and both result summaries
        objects = self._objects(flat, assigned, params, local)
        targets = {id(inner): self.call_target(inner.func, local, cls, self_name, objects) for inner in flat.calls}
        on_host = self._host_callback_calls(flat, targets)
        for inner in flat.calls:
            if id(inner) in on_host:
                continue
            target = targets[id(inner)]
            if target is not None:
                calls.add(target)
                if is_host_callback(target):
                    continue  # a host callback runs later, on concrete values: not in the trace
                if target.startswith(FUNCTION_APPLYING_PREFIXES) or target in FUNCTION_APPLYING_BUILTINS:
                    for arg in inner.args:  # functions handed to tree_map and the like run too
                        passed = self._function_target(arg, local, cls, self_name)
                        if passed is not None:
                            calls.add(passed)
            elif isinstance(inner.func, ast.Attribute):
                method_calls.add(inner.func.attr)
        info = {
            "params": params,
            "method": is_method,
            "memoized": any(self.qualify(d.func if isinstance(d, ast.Call) else d) in MEMOIZERS for d in node.decorator_list),
            "classmethod": "classmethod" in decorators,  # called on the class, `cls` is bound
            "calls": sorted(calls),
            # what its decorators name (`@with_float64`): each wraps every call of it
            "decorators": sorted({
                target for d in node.decorator_list if (target := self.qualify(d.func if isinstance(d, ast.Call) else d)) is not None
            }),
            "method_calls": sorted(method_calls),
            "keys": {},
            # a `**kwargs` it never reads: a keyword it has no parameter for goes nowhere
            "swallows": node.args.kwarg is not None and not any(n.id == node.args.kwarg.arg for n in flat.names),
            "static": _StaticResult(self, node, flat, local, cls, self_name, assigned).result(),
            "array": _ArrayResult(self, params, flat, local, cls, self_name, assigned).result(),
            "returns": _returned_params(flat, params),
            # it turns x64 on, or refuses (or warns) to run without it: its callers' 64-bit
            # requests are not silently 32-bit
            "x64_guard": (
                any(self._enables_x64(n) or _scoped_x64(n) for n in [*flat.calls, *flat.assignments])
                or any(_checks_x64(n) for n in flat.nodes)
            ),
        }
        loads: dict[str, list[ast.Name]] = {}
        for inner in flat.names:
            if isinstance(inner.ctx, ast.Load):
                loads.setdefault(inner.id, []).append(inner)
        info["shape_templates"] = _shape_templates(params, loads, flat.parents, assigned)
        not_keys = _annotated_not_keys(node)
        for param in params:
            if param in not_keys:
                continue  # `rng: Variable`: the author declared a type no key has
            # any parameter may receive a key from a caller; only what is not IGNORES is kept
            uses = _KeyUses(self, param, loads, flat, local, cls, self_name, objects)
            verdict = uses.verdict()
            if verdict != IGNORES:
                info["keys"][param] = verdict
            if uses.only_reorders():
                info.setdefault("reorders", []).append(param)
        self.summary["functions"][qualname] = info


class _KeyUses:
    """How a function uses parameter `param`, if it is a key: draws (a sampler takes it, or
    a split whose keys may be drawn from), ignores (never read, or rebound by `fold_in`
    before any other use), passes it on ([callee, position or keyword], judged by the index)
    or unknown. With `split_from`, the same for the keys the last of those splits bound to
    `split_keys`."""

    def __init__(
        self, summariser: _Summariser, param: str, all_loads: dict[str, list[ast.Name]], flat: _Flat, local, cls, self_name, objects,
        split_from: tuple[ast.Call, ...] | None = None, split_keys: set[str] | None = None,
    ) -> None:
        self.s, self.param = summariser, param
        self.local, self.cls, self.self_name, self.objects = local, cls, self_name, objects
        self.all_loads, self.flat = all_loads, flat
        parents = self.parents = flat.parents
        self.draws = False
        self.reorders = True  # every draw so far only reorders (`permutation(key, n)`)
        self.unknown = False
        self.maybe = False
        self.passes: list[list] = []
        # the keys a split handed out (not a parameter): the splits followed so far
        self.split_from = split_from
        self.names = {param} if split_keys is None else split_keys  # the names whose reads are followed
        if split_from is None:
            loads = sorted(all_loads.get(param, []), key=lambda n: (n.lineno, n.col_offset))
            if loads and self._rederived_first(loads[0], parents):
                return  # `key = fold_in(key, step)` first: the caller's key is not drawn here
        else:
            loads = self._loads_after(split_from[-1], split_keys)
        if any(_stored_attribute(name, parents) for name in loads):
            return  # `rng._state = ...`: a generator object that keeps its own state, not a key
        for name in loads:
            self._use(name, parents)

    def only_reorders(self) -> bool:
        """It draws from the key only to reorder, and hands it nowhere else."""
        return self.draws and self.reorders and not (self.unknown or self.passes or self.maybe)

    def verdict(self):
        if self.draws:
            return DRAWS
        if self.unknown:
            return UNKNOWN
        if self.passes:
            return [*self.passes, MAYBE_PASS] if self.maybe else self.passes
        return MAYBE if self.maybe else IGNORES

    def _split(self, call: ast.Call) -> None:
        """`sub, key = split(key)`: a draw when a key it hands out may be drawn from. Keys
        read nowhere draw nothing; keys handed only to project functions are judged by the
        index (`ensrf_step(..., subkeys[t])`, which never reads its key: nothing is drawn)."""
        if self.split_from is not None and call in self.split_from:
            return  # a split of these keys already being followed (a loop): nothing new
        targets = self._bound_by(call)
        if targets is not None:
            keys = _KeyUses(
                self.s, self.param, self.all_loads, self.flat, self.local, self.cls, self.self_name, self.objects,
                split_from=(*(self.split_from or ()), call), split_keys=set(targets) - self.names,
            )
            if not (keys.draws or keys.unknown or keys.maybe):
                self.passes += [[*entry[:2], SPLIT_PASS] for entry in keys.passes]
                return
        self.draws, self.reorders = True, False

    def _bound_by(self, call: ast.Call) -> list[str] | None:
        """The names `call`'s result is bound to: none for a statement of its own, those of
        `a, *b = call`; None when it goes anywhere else (an attribute, a container, an
        argument, a return)."""
        statement = self.parents.get(id(call))
        if isinstance(statement, ast.Expr):
            return []
        return _bound_names(statement) if isinstance(statement, ast.Assign) and statement.value is call else None

    def _loads_after(self, call: ast.Call, names: set[str]) -> list[ast.Name]:
        """The reads of `names` that may see what `call` bound to them: later, anywhere in a
        loop around it (the next pass) or in a nested function or lambda (called who knows
        when); a read before it is of the value it had."""
        inside = {id(node) for node in ast.walk(call)}
        anytime = [(start, end) for start, end, loop in self.flat.spans() if not loop or start <= call.lineno <= (end or 0)]
        end = (call.end_lineno or call.lineno, call.end_col_offset or 0)
        return sorted((
            load for name in names for load in self.all_loads.get(name, [])
            if id(load) not in inside and ((load.lineno, load.col_offset) > end or any(a <= load.lineno <= (b or a) for a, b in anytime))
        ), key=lambda n: (n.lineno, n.col_offset))

    def _keys_kept(self, call: ast.Call) -> None:
        """Split keys given to array or builtin code: `subkeys = jnp.array(subkeys)` keeps
        them under that name (its reads are followed), a statement of its own (a print)
        drops them; any other result may hold them."""
        names = self._bound_by(call)
        if names is None:
            self.unknown = True
            return
        names = set(names) - self.names
        self.names |= names
        for load in self._loads_after(call, names):
            self._use(load, self.parents)

    def _rederived_first(self, name: ast.Name, parents) -> bool:
        call = parents.get(id(name))
        statement = parents.get(id(call)) if call is not None else None
        return (
            isinstance(call, ast.Call)
            and self.s.qualify(call.func, self.local) == "jax.random.fold_in"
            and isinstance(statement, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == self.param for t in statement.targets)
        )

    def _use(self, name: ast.Name, parents) -> None:
        parent = parents.get(id(name))
        if self.split_from is not None:
            while isinstance(parent, ast.Subscript) and parent.value is name:
                name, parent = parent, parents.get(id(parent))  # `subkeys[t]`: one of the keys
        if isinstance(parent, ast.keyword) and parent.arg is None:
            self.unknown = True  # `f(**options)`: which parameters get its items is not known
            return
        if isinstance(parent, ast.keyword):
            call, keyword, position = parents.get(id(parent)), parent.arg, None
        elif isinstance(parent, ast.Call) and name in parent.args:
            call, keyword, position = parent, None, parent.args.index(name)
        elif isinstance(parent, (ast.Compare, ast.Attribute)) or (
            isinstance(parent, ast.Call) and parent.func is name
        ):
            return  # `key is None`, `key.shape`: looking is not drawing
        else:
            self.unknown = True  # returned, stored, put in a container: followed no further
            return
        if not isinstance(call, ast.Call):
            self.unknown = True
            return
        target = self.s.call_target(call.func, self.local, self.cls, self.self_name, self.objects)
        if (target is not None and names_abstract_trace(target)) or (
            isinstance(call.func, ast.Attribute) and call.func.attr in ABSTRACT_METHODS
        ):
            return  # `jax.eval_shape(init, key)`, `jax.jit(init).eval_shape(key)`: shapes only, nothing drawn
        if target is not None and target.startswith("jax.random."):
            if target == "jax.random.split" and (position == 0 or keyword == "key"):
                self._split(call)
            elif (position == 0 or keyword == "key") and target not in NOT_CONSUMING:
                self.draws = True
                without_replacement = any(
                    kw.arg == "replace" and isinstance(kw.value, ast.Constant) and kw.value.value is False for kw in call.keywords
                )
                self.reorders = self.reorders and is_reordering(target, without_replacement)
            return
        if target in KEY_APPLYING:
            self.unknown = True  # `jax.tree.map(lambda k: normal(k), keys)`: the function applied may draw
            return
        tail = target.rsplit(".", 1)[-1] if target else (call.func.attr if isinstance(call.func, ast.Attribute) else "")
        if (target or "").startswith(KEY_NEUTRAL_PREFIXES) or KEY_LOOKING.match(tail):
            if self.split_from is not None:
                self._keys_kept(call)
            return
        if isinstance(call.func, ast.Attribute) and call.func.attr == "apply" and position == 1:
            self.maybe = True  # `net.apply(params, key, x)`: Haiku's signature
            return
        if target is None and isinstance(call.func, ast.Call) and not any(isinstance(a, ast.Starred) for a in call.args):
            # `jax.value_and_grad(loss)(params, key, batch)`: the transformed function gets the key
            wrapped, bound, _ = self.s._bound_target(call.func, self.local, self.cls, self.self_name)
            if wrapped is not None:
                self.passes.append([wrapped, position + bound if keyword is None else keyword])
                return
        if target is None or any(isinstance(a, ast.Starred) for a in call.args):
            self.unknown = True
            return
        self.passes.append([target, position if keyword is None else keyword])


def _bound_names(statement: ast.Assign) -> list[str] | None:
    """The names an assignment binds (`key, *subkeys = ...`); None when it stores into an
    attribute or a container."""
    names = []
    for target in statement.targets:
        for element in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
            if isinstance(element, ast.Starred):
                element = element.value
            if not isinstance(element, ast.Name):
                return None
            names.append(element.id)
    return names


def _annotated_not_keys(node: ast.AST) -> set[str]:
    """Parameters annotated with a type no PRNG key has (the facts' `annotated_not_a_key`)."""
    arguments = node.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return {a.arg for a in every if a.annotation is not None and KEY_ANNOTATION.search(ast.unparse(a.annotation)) is None}


def _shape_templates(params: list[str], loads: dict[str, list[ast.Name]], parents, assigned) -> list[str]:
    """Parameters read, and only for their form: as `.shape`/`.dtype`/`.ndim`/`.size`, or as
    the example input of a model's `init` (`net.init(key, x)` runs the model on `x` only to
    learn its shapes), never rebound (the facts' `_read_only_for_shape`, across modules):
    numbers drawn for them correlate with nothing."""
    return [
        param for param in params
        if param in loads and param not in assigned and all(_read_for_shape(name, parents) for name in loads[param])
    ]


def _read_for_shape(name: ast.Name, parents) -> bool:
    parent = parents.get(id(name))
    if isinstance(parent, ast.Attribute):
        return parent.attr in SHAPE_ATTRIBUTES
    return (
        isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "init"
        and any(arg is name for arg in parent.args[1:])
    )


def _stored_attribute(name: ast.Name, parents) -> bool:
    """`name.attr = ...`: a key is an immutable array; what takes attribute stores is an object."""
    parent = parents.get(id(name))
    return isinstance(parent, ast.Attribute) and isinstance(parent.ctx, ast.Store)


def _assigned_values(flat: _Flat) -> dict[str, list[ast.AST]]:
    """Each local name's assigned values (an augmented assignment counts as its own node)."""
    assigned: dict[str, list[ast.AST]] = {}
    for node in flat.assignments:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            assigned.setdefault(node.target.id, []).append(node.value if node.value is not None else node)
    return assigned


class _ArrayResult:
    """Does the function compute its result from its arguments by array operations only (JAX
    and NumPy functions, array methods, arithmetic, indexing)? Then a caller's traced
    arguments give a traced result (`jnp.sum(model.masses > 0)`); a result made by anything
    else (`model.dofs()`, an unknown library) is unknown to the caller."""

    def __init__(self, summariser: _Summariser, params: list[str], flat: _Flat, local, cls, self_name, assigned) -> None:
        self.s, self.local, self.cls, self.self_name = summariser, local, cls, self_name
        self.flat = flat
        self.params = set(params)
        self.assigned = assigned

    def result(self) -> bool:
        returns = self.flat.own_returns
        if not returns or self.flat.generator:
            return False
        return all(node.value is not None and self._array(node.value, 0) for node in returns)

    def _array(self, node, depth: int) -> bool:
        if depth > 6:
            return False
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            if node.id in self.params:
                return True
            values = self.assigned.get(node.id)
            return bool(values) and all(self._array(v, depth + 1) for v in values)
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self._array(e, depth + 1) for e in node.elts)
        if isinstance(node, ast.BinOp):
            return self._array(node.left, depth + 1) and self._array(node.right, depth + 1)
        if isinstance(node, ast.UnaryOp):
            return self._array(node.operand, depth + 1)
        if isinstance(node, ast.Compare):
            return self._array(node.left, depth + 1) and all(self._array(c, depth + 1) for c in node.comparators)
        if isinstance(node, ast.IfExp):
            return self._array(node.body, depth + 1) and self._array(node.orelse, depth + 1)
        if isinstance(node, ast.Subscript):
            return self._array(node.value, depth + 1)
        if isinstance(node, ast.Attribute):
            return node.attr not in _STATIC_ATTRS and self._array(node.value, depth + 1)
        if isinstance(node, ast.Call):
            name = self.s.qualify(node.func, self.local, self.cls, self.self_name)
            if name is not None and name.startswith(("jax.", "numpy.")):
                return name not in _STATIC_CALLS
            func = node.func
            return isinstance(func, ast.Attribute) and func.attr in ARRAY_METHODS and self._array(func.value, depth + 1)
        return False


class _StaticResult:
    """Is the function's result a static Python value? True when its return annotation says
    so (`-> int`, `-> bool`, `-> tuple[int, ...]`), or when every `return` gives a count,
    shape, dtype, flag or literal, or the result of a project function the index finds
    static ([True] / [False] / ["calls", names...]: decided by the index)."""

    def __init__(self, summariser: _Summariser, function, flat: _Flat, local, cls, self_name, assigned) -> None:
        self.s, self.function, self.local, self.cls, self.self_name = summariser, function, local, cls, self_name
        self.flat = flat
        self.needs: set[str] = set()
        self.assigned = assigned

    def result(self):
        if _static_annotation(self.function.returns):
            return True
        returns = self.flat.own_returns
        if not returns or self.flat.generator:
            return False
        for node in returns:
            if node.value is None or not self._static(node.value, 0):
                return False
        return ["calls", *sorted(self.needs)] if self.needs else True

    def _static(self, node, depth: int) -> bool:
        if depth > 6:
            return False
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self._static(e, depth + 1) for e in node.elts)
        if isinstance(node, ast.BoolOp):
            return all(self._static(v, depth + 1) for v in node.values)
        if isinstance(node, ast.UnaryOp):
            return self._static(node.operand, depth + 1)
        if isinstance(node, ast.BinOp):
            return self._static(node.left, depth + 1) and self._static(node.right, depth + 1)
        if isinstance(node, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                return True
            return self._static(node.left, depth + 1) and all(self._static(c, depth + 1) for c in node.comparators)
        if isinstance(node, ast.IfExp):
            return self._static(node.body, depth + 1) and self._static(node.orelse, depth + 1)
        if isinstance(node, ast.Attribute):
            if node.attr in _STATIC_ATTRS or node.attr.endswith(("_shape", "_ndim", "_dim", "_dims", "_dtype")):
                return True
            if self.cls and isinstance(node.value, ast.Name) and node.value.id == self.self_name:
                return node.attr in self.s.summary["static_fields"].get(self.cls, ())
            return False
        if isinstance(node, ast.Subscript):
            return self._static(node.value, depth + 1) and self._static(node.slice, depth + 1)
        if isinstance(node, ast.Slice):
            return all(p is None or self._static(p, depth + 1) for p in (node.lower, node.upper, node.step))
        if isinstance(node, ast.Name):
            values = self.assigned.get(node.id)
            return bool(values) and all(self._static(v, depth + 1) for v in values)
        if isinstance(node, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
            return self._static(node.elt, depth + 1)  # `tuple(len(x) for x in xs)`
        if isinstance(node, ast.Call):
            name = self.s.qualify(node.func, self.local, self.cls, self.self_name)
            if name in _STATIC_CALLS:
                return True
            if name in ("builtins.tuple", "builtins.sum", "builtins.max", "builtins.min", "builtins.all", "builtins.any"):
                return all(self._static(a, depth + 1) for a in node.args)
            if name is not None and not name.startswith(("jax.", "numpy.", "builtins.")):
                self.needs.add(name)  # a project function: the index decides
                return True
            return False
        return False


def _returned_params(flat: _Flat, params: list[str]) -> list[list]:
    """[position, parameter] for each parameter the function returns as it came in: the
    whole result (position -1) or an element of a returned tuple (`return x, key`). With the
    parameter's key verdict, the index knows a helper that hands back a key it drew from."""
    rebound = {name.id for name in flat.names if isinstance(name.ctx, ast.Store)}
    as_given = set(params) - rebound  # `key, sub = split(key); return x, key` returns a new key
    found = []
    for node in flat.own_returns:
        value = node.value
        if isinstance(value, ast.Name) and value.id in as_given:
            found.append([-1, value.id])
        elif isinstance(value, ast.Tuple):
            found.extend([i, e.id] for i, e in enumerate(value.elts) if isinstance(e, ast.Name) and e.id in as_given)
    return found


def _static_annotation(node) -> bool:
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return False
    name = (_dotted(node.value if isinstance(node, ast.Subscript) else node) or "").rsplit(".", 1)[-1]
    if isinstance(node, ast.Subscript):
        if name in ("tuple", "Tuple", "Sequence", "list", "List"):
            inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            return all(_static_annotation(e) or isinstance(e, ast.Constant) and e.value is Ellipsis for e in inner)
        return False
    return name in _STATIC_ANNOTATIONS


def _static_spec(call: ast.Call | None) -> list:
    """[static argnums, static argnames] of a transformation call (literal values only)."""
    if call is None:
        return [[], []]
    nums, names = [], []
    for kw in call.keywords:
        if kw.arg in ("static_argnums", "static_broadcasted_argnums"):
            value = _constant_seq(kw.value)
            nums = [v for v in value if isinstance(v, int)]
        elif kw.arg == "static_argnames":
            value = _constant_seq(kw.value)
            names = [v for v in value if isinstance(v, str)]
    return [nums, names]


def _scoped_x64(node: ast.AST) -> bool:
    """`jax.enable_x64()` (`jax.experimental.enable_x64()`): x64 on for what runs inside it
    (a decorator that wraps each call of the function it decorates: phasespace's `with_float64`)."""
    return (
        isinstance(node, ast.Call) and (_dotted(node.func) or "").rpartition(".")[2] == "enable_x64"
        and (not node.args or _constant(node.args[0]) is True)
    )


def _literal_collection(node) -> bool:
    """A list, tuple or set of literals (nested ones too), or a dict with literal keys."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(isinstance(e, ast.Constant) or _literal_collection(e) for e in node.elts)
    return isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) for k in node.keys)


def _constant_seq(node) -> list:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):  # `static_argnums={0}`: any iterable
        return [_constant(e) for e in node.elts]
    return [_constant(node)]


def _constant(node):
    return node.value if isinstance(node, ast.Constant) else None


def _keyword(call: ast.Call, name: str):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _custom(name: str | None) -> bool:
    return name is not None and (name in CUSTOM_DERIVATIVES or name.rsplit(".", 1)[-1] in ("custom_vjp", "custom_jvp"))


def _named_functions(tree: ast.Module):
    """(node, name) of the module's functions (`f`) and its classes' methods (`Cls.m`)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, node.name
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield item, f"{node.name}.{item.name}"


def _first_param(function) -> str | None:
    args = [*function.args.posonlyargs, *function.args.args]
    return args[0].arg if args else None


def _blocks(node):
    yield node.body
    for handler in getattr(node, "handlers", ()):
        yield handler.body
    yield getattr(node, "orelse", [])
    yield getattr(node, "finalbody", [])


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    return isinstance(test, ast.Compare) and _dotted(test.left) == "__name__"


_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})
_ASSIGNMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign)


class _Flat:
    """One walk over a function (or the module's own code), sorted into what the summary
    reads: walking a tree in Python costs more than parsing it, so it is walked once.
    `own_*`: outside functions and classes nested in it."""

    def __init__(self, root: ast.AST, roots: list[ast.AST] | None = None) -> None:
        self.nodes: list[ast.AST] = []
        self.parents: dict[int, ast.AST] = {}
        self.calls: list[ast.Call] = []
        self.own_calls: list[ast.Call] = []
        self.names: list[ast.Name] = []
        self.assignments: list[ast.AST] = []
        self.own_returns: list[ast.Return] = []
        self.generator = False
        self.imports: dict[str, str] | None = None
        self._spans: list[tuple[int, int | None, bool]] | None = None
        stack = [(child, True) for child in (_children(root) if roots is None else roots)]
        parents = self.parents
        for child, _ in stack:
            parents[id(child)] = root
        while stack:
            node, own = stack.pop()
            self.nodes.append(node)
            kind = type(node)
            if kind is ast.Name:
                self.names.append(node)
                continue
            if kind is ast.Call:
                self.calls.append(node)
                if own:
                    self.own_calls.append(node)
            elif kind in _ASSIGNMENTS:
                self.assignments.append(node)
            elif own and kind is ast.Return:
                self.own_returns.append(node)
            elif own and kind in (ast.Yield, ast.YieldFrom):
                self.generator = True
            inner = own and kind not in _SCOPES
            for child in _children(node):
                if type(child) in _WITH_PARENT:  # what the key analysis looks up from
                    parents[id(child)] = node
                stack.append((child, inner))


    def spans(self) -> list[tuple[int, int | None, bool]]:
        """(first line, last line, is a loop) of the loops and nested functions and lambdas
        (code that may run again, or later); once per walk."""
        if self._spans is None:
            self._spans = [
                (node.lineno, node.end_lineno, isinstance(node, (ast.For, ast.AsyncFor, ast.While))) for node in self.nodes
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.For, ast.AsyncFor, ast.While))
            ]
        return self._spans


_WITH_PARENT = frozenset({ast.Name, ast.Call, ast.keyword, ast.Subscript})
_CONTEXTS = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)


def _children(node: ast.AST) -> list[ast.AST]:
    """ast.iter_child_nodes without the context and operator leaves (nothing to read there)."""
    found = []
    for name in _FIELDS.get(type(node)) or _fields(type(node)):
        value = getattr(node, name, None)
        if value.__class__ is list:
            for item in value:
                if isinstance(item, ast.AST) and not isinstance(item, _CONTEXTS):
                    found.append(item)
        elif isinstance(value, ast.AST) and not isinstance(value, _CONTEXTS):
            found.append(value)
    return found


# Per node type, the fields that can hold nodes (not identifiers, constants or operators).
_LEAF_FIELDS = frozenset({"ctx", "op", "name", "id", "arg", "attr", "value_str", "kind", "type_comment", "asname", "module", "level", "lineno", "col_offset", "n", "s", "is_async", "conversion"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    names = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)
    _FIELDS[kind] = names
    return names


def _module_code(body, main: bool) -> list[ast.AST]:
    """The module's statements (with `main`: also its `if __name__ == "__main__":` block),
    not its function or class bodies."""
    found = []
    for node in body:
        if isinstance(node, ast.If) and _is_main_guard(node):
            if main:
                found.extend(_module_code(node.body, main))
        elif isinstance(node, (ast.If, ast.Try)) or type(node).__name__ == "TryStar":
            for block in _blocks(node):
                found.extend(_module_code(block, main))
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node)
    return found


_BUILTINS = frozenset(dir(__import__("builtins")))
