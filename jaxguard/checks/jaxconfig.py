"""JG901-JG906: JAX configuration, double precision, and precision-sensitive comparisons
(sharp bits: "Double (64bit) precision", "Debugging NaNs")."""

from __future__ import annotations

import difflib
import functools
import json
import math
import struct
from importlib import resources

import libcst as cst

from jaxguard.checks._common import (
    descendants,
    environ_key,
    is_true_literal,
    known_number,
    number,
    resolving_in,
    self_assignments,
)
from jaxguard.lint.engine import RemoveNode, ReplaceNode
from jaxguard.lint.facts import call_tail, keyword, literal_str, positional
from jaxguard.lint.jaxapi import NAMES_X64, TELLING_CALLS
from jaxguard.lint.registry import Rule, register


@functools.cache
def config_data() -> dict[str, frozenset[str]]:
    """JAX's option names, other `jax.config` attributes and `JAX_...` environment variables.

    Generated from the installed JAX by tools/gen_jax_data.py (the file records the version).
    """
    text = resources.files("jaxguard.data").joinpath("jax_config_options.json").read_text()
    data = json.loads(text)
    return {key: frozenset(data[key]) for key in ("options", "attributes", "env_vars")}


def _dotted_module(node: cst.ImportFrom) -> str:
    if node.relative or node.module is None:
        return ""
    return cst.Module([]).code_for_node(node.module)


_IMPORT_ERRORS = frozenset({"builtins.ImportError", "builtins.ModuleNotFoundError", "builtins.Exception", "builtins.BaseException"})
_CONFIG_ERRORS = frozenset({"builtins.AttributeError", "builtins.KeyError", "builtins.ValueError", "builtins.Exception", "builtins.BaseException"})


def _catches(ctx, statement: cst.Try, errors: frozenset[str]) -> bool:
    for handler in statement.handlers:
        if handler.type is None:
            return True
        names = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
        for name in names:
            value = name.value if isinstance(name, cst.Element) else name
            if ctx.qualname(value) in errors:
                return True
    return False


def _in_import_guard(ctx) -> bool:
    """Inside the body of `try: ... except ImportError/ModuleNotFoundError/Exception:`, or
    inside that handler: the fallback runs only where the first import failed (old jax)."""
    stack = ctx.statement_stack
    for index, statement in enumerate(stack[:-1]):
        if not isinstance(statement, cst.Try) or not _catches(ctx, statement, _IMPORT_ERRORS):
            continue
        inner = stack[index + 1]
        if inner in statement.body.body or any(inner in handler.body.body for handler in statement.handlers):
            return True
    return False


# ---------------------------------------------------------------------------------
# JG901


@register
class RemovedJaxConfigModule(Rule):
    code = "JG901"
    name = "removed-jax-config-module"
    summary = "from jax.config import config raises ModuleNotFoundError; use jax.config.update"
    message = "'{statement}' raises ModuleNotFoundError: jax.config is no longer a module; use jax.config.update(...) after 'import jax'"
    fix_kind = "autofix"
    removed_in = (0, 4, 25)
    what = "Flags `from jax.config import config` and `import jax.config` (as anything)."
    why = """
        `jax/config.py` was removed: `jax.config` is now only an attribute of the `jax`
        package (the configuration object), so importing it as a module raises
        `ModuleNotFoundError: No module named 'jax.config'`. Many tutorials, including the
        "Sharp Bits" page, still show the old import.
    """
    example = """
        import jax.numpy as jnp
        from jax.config import config

        config.update("jax_enable_x64", True)
        a64 = jnp.ones(3).astype(jnp.float64)
    """
    use_instead = """
        import jax.numpy as jnp
        import jax

        jax.config.update("jax_enable_x64", True)
        a64 = jnp.ones(3).astype(jnp.float64)
    """
    fix_safety = """
        `from jax.config import config [as name]` is replaced by `import jax` (or removed if
        `jax` is already imported before it) and every use of the name becomes `jax.config`:
        the same object the old import gave. When a use sits where `jax` means something else,
        or the import is not a plain top-level statement, the import is rewritten to the
        equivalent `from jax import config [as name]` instead. `import jax.config` becomes
        `import jax`. Imports inside `try: ... except ImportError:` are compatibility code and
        not flagged. `import jax.config as name` and other names imported from `jax.config`
        are reported without a fix.
    """
    invalid = (
        # a handler that is no import guard
        "try:\n    import yaml\nexcept ValueError:\n    from jax.config import config\n",
        "from jax.config import config as jax_config\njax_config.update('jax_debug_nans', True)\n",
        "import jax.config\njax.config.update('jax_enable_x64', True)\n",
        "import jax\ndef setup():\n    from jax.config import config\n    config.update('jax_platform_name', 'cpu')\n",
        "import jax.config as jc\n",
        "from jax.config import config\nif __name__ == '__main__':\n    config.config_with_absl()\n    config.parse_flags_with_absl()\n",
    )
    valid = (
        # the fallback of a guarded import: it runs only where the new spelling failed
        "try:\n    from jax import config\nexcept ImportError:\n    from jax.config import config\n",
        "import jax\njax.config.update('jax_enable_x64', True)\n",
        "from jax import config\nconfig.update('jax_enable_x64', True)\n",
        "try:\n    from jax.config import config\nexcept ImportError:\n    from jax import config\n",
        "from flax.config import config\nfrom .config import config as local_config\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.pending: list[tuple] = []  # (ImportFrom, alias, local, binding scope, statement)
        self.uses: list[tuple[cst.Name, object]] = []

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if _dotted_module(node) != "jax.config" or _in_import_guard(self.ctx):
            return
        statement = self.ctx.statement_stack[-1]
        text = f"from jax.config import {'*' if isinstance(node.names, cst.ImportStar) else ', '.join(self.ctx.code(a.name) for a in node.names)}"
        if (
            isinstance(node.names, cst.ImportStar)
            or len(node.names) != 1
            or cst.Module([]).code_for_node(node.names[0].name) != "config"
            or len(statement.body) != 1
        ):
            self.report(node, self.message.format(statement=text))
            return
        alias = node.names[0]
        local = alias.asname.name.value if alias.asname is not None else "config"  # type: ignore[union-attr]
        self.pending.append((node, alias, local, self.ctx.scope, statement, text))

    def visit_Import(self, node: cst.Import) -> None:
        if _in_import_guard(self.ctx):
            return
        for alias in node.names:
            name = cst.Module([]).code_for_node(alias.name)
            if name != "jax.config" and not name.startswith("jax.config."):
                continue
            fix = None
            if (
                name == "jax.config"
                and alias.asname is None
                and len(node.names) == 1
                and "jax.config.config" not in self.ctx.source
            ):
                statement = self.ctx.statement_stack[-1]
                if statement in self.ctx.module.body and len(statement.body) == 1 and self._jax_imported_before(statement):
                    fix = ([RemoveNode(statement)], True, "remove it: jax is already imported")
                else:
                    fix = ([ReplaceNode(node, "import jax")], True, "import jax instead")
            self.report(node, self.message.format(statement=f"import {name}"), fix)

    def visit_Name(self, node: cst.Name) -> None:
        if self.pending and node in self.ctx.facts.loads:
            self.uses.append((node, self.ctx.scope))

    def finish(self) -> None:
        for node, alias, local, scope, statement, text in self.pending:
            uses = [(n, s) for n, s in self.uses if n.value == local and s.lookup(local) is scope]
            self.report(node, self.message.format(statement=text), self._fix(node, alias, local, scope, statement, uses), statement)

    def _fix(self, node, alias, local, scope, statement, uses):
        facts = self.ctx.facts
        fallback = (
            [ReplaceNode(node, f"from jax import config{'' if local == 'config' else ' as ' + local}")],
            True,
            "import config from jax",
        )
        if scope.kind != "module" or statement not in facts.module.body:
            return fallback
        if len(scope.values.get(local, [])) or "jax" in scope.values:
            return fallback
        for _, use_scope in uses:
            owner = use_scope.lookup("jax")
            if owner is not None and (owner.imports.get("jax") != "jax" or "jax" in owner.values):
                return fallback
        steps: list = [ReplaceNode(n, "jax.config") for n, _ in uses]
        if self._jax_imported_before(statement):
            steps.append(RemoveNode(statement))
        else:
            steps.append(ReplaceNode(node, "import jax"))
        return steps, True, "use jax.config"

    def _jax_imported_before(self, statement) -> bool:
        for top in self.ctx.facts.module.body:
            if top is statement:
                return False
            if isinstance(top, cst.SimpleStatementLine):
                for small in top.body:
                    if isinstance(small, cst.Import):
                        for alias in small.names:
                            name = cst.Module([]).code_for_node(alias.name)
                            if alias.asname is None and name.split(".")[0] == "jax":
                                return True
        return False


# ---------------------------------------------------------------------------------
# x64 state shared by JG902, JG903, JG906

X64_DTYPE_NAMES = frozenset({"float64", "int64", "uint64", "complex128", "double", "cdouble", "longlong", "ulonglong", "complex_"})
X64_DTYPE_STRINGS = frozenset({"float64", "int64", "uint64", "complex128", "f8", "i8", "u8", "c16", "double", "<f8", "<i8"})
# 64-bit integer dtypes: without x64 they become int32, which changes a result only past 2**31
X64_INTEGER_DTYPES = frozenset({"int64", "uint64", "longlong", "ulonglong", "i8", "u8", "<i8"})
X64_AWARE_NAMES = frozenset({"enable_x64", "x64_enabled", "jax_enable_x64", "x64_context", "x64_enabled_context"})
# jax functions that do not create arrays (for "arrays were already created")
NOT_ARRAY_CALLS = frozenset(
    {
        "jax.numpy.dtype", "jax.numpy.finfo", "jax.numpy.iinfo", "jax.numpy.issubdtype",
        "jax.numpy.result_type", "jax.numpy.promote_types", "jax.numpy.isdtype", "jax.numpy.can_cast",
        "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.set_printoptions",
        "jax.numpy.printoptions",
    }
)
ARRAY_MODULES = ("jax.numpy.", "jax.random.", "jax.lax.", "jax.nn.", "jax.scipy.")


def _is_false_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value in ("False", "None")
    if isinstance(node, cst.Integer):
        return node.value == "0"
    text = literal_str(node)
    return text is not None and text.strip().lower() in ("0", "false", "no", "off", "")


def x64_setting(ctx, node: cst.CSTNode) -> cst.BaseExpression | None:
    """The value `node` sets x64 to (a config update, the environment variable); None if
    `node` does not set it."""
    if isinstance(node, cst.Call):
        qualified = ctx.qualname(node.func)
        args = positional(node)
        if qualified == "jax.config.update" and len(args) == 2 and literal_str(args[0]) == "jax_enable_x64":
            return args[1]
        if qualified in ("os.environ.setdefault", "os.putenv") and len(args) == 2 and literal_str(args[0]) == "JAX_ENABLE_X64":
            return args[1]
    if isinstance(node, cst.Assign):
        for target in node.targets:
            subscript = target.target
            if isinstance(subscript, cst.Subscript) and ctx.qualname(subscript.value) == "os.environ":
                if environ_key(subscript) == "JAX_ENABLE_X64":
                    return node.value
    return None


def module_x64_aware(ctx) -> bool:
    """x64 enabled somewhere in the module, or the module reads/handles the x64 flag, or
    importing it enables x64 (its package or a module it imports does: the project index)."""
    project = ctx.settings.project
    if ctx.settings.x64 or (project is not None and (project.x64 or project.x64_guards or project.x64_told)):
        return True
    cached = ctx.facts.derived.get("jaxguard.x64_aware")
    if cached is not None:
        return bool(cached)
    code = ctx.source
    aware = False
    if "x64" in code or "X64" in code or ").dtype" in code:  # (the last: a probe, `_probes_x64`)
        aware = _scan_x64(ctx)
    ctx.facts.derived["jaxguard.x64_aware"] = aware
    return aware


def _tells_to_enable_x64(text: str) -> bool:
    """A comment or docstring that names the x64 flag (`jax_enable_x64`, `JAX_ENABLE_X64`,
    `jax.experimental.enable_x64`) or x64 mode (`# for x64 enabled runs`): the module
    documents that it runs with x64 on."""
    return NAMES_X64.search(text) is not None


def _scan_x64(ctx) -> bool:
    facts = ctx.facts
    found = [False]

    class _Scan(cst.CSTVisitor):
        def __init__(self) -> None:
            self.scopes = []

        def on_visit(self, node: cst.CSTNode) -> bool:
            if found[0]:
                return False
            scope = facts.scopes.get(node)
            if scope is not None:
                self.scopes.append(scope)
            current = self.scopes[-1]
            if isinstance(node, cst.Call):
                qualified = facts.qualname(node.func, current)
                args = positional(node)
                if qualified == "jax.config.update" and args and literal_str(args[0]) == "jax_enable_x64":
                    if len(args) < 2 or not _is_false_literal(args[1]):
                        found[0] = True
                if qualified == "jax.config.read" and args and literal_str(args[0]) == "jax_enable_x64":
                    found[0] = True
                if qualified == "builtins.getattr" and len(args) >= 2 and literal_str(args[1]) == "jax_enable_x64":
                    found[0] = True  # `getattr(jax.config, "jax_enable_x64", False)`: the flag read
                for arg in node.args:
                    if arg.keyword is not None and arg.keyword.value == "jax_enable_x64":
                        found[0] = True
                if call_tail(node.func) in TELLING_CALLS and _message_names_x64(node):
                    found[0] = True  # `warnings.warn("enable x64 for full precision")`: the user is told
            elif isinstance(node, cst.Comparison) and _probes_x64(ctx, node, current):
                found[0] = True
            elif isinstance(node, cst.Raise) and _message_names_x64(node):
                found[0] = True  # `raise ValueError("gram() requires jax_enable_x64=True.")`: the user is told
            elif isinstance(node, cst.SimpleString):
                if literal_str(node) in ("JAX_ENABLE_X64",) or (node.quote in ('"""', "'''") and _tells_to_enable_x64(node.value)):
                    found[0] = True
            elif isinstance(node, cst.Comment) and _tells_to_enable_x64(node.value):
                found[0] = True  # "# Enable the jax flag jax_enable_x64 for this to work": the reader is told
            elif isinstance(node, cst.Attribute) and node.attr.value in X64_AWARE_NAMES:
                qualified = facts.qualname(node.value, current) or ""
                if not qualified.startswith("jax.config.config"):
                    found[0] = True
            elif isinstance(node, cst.Name) and node.value in X64_AWARE_NAMES:
                found[0] = True
            elif isinstance(node, cst.ImportAlias):
                name = cst.Module([]).code_for_node(node.name)
                if name.rsplit(".", 1)[-1] in X64_AWARE_NAMES:
                    found[0] = True
            return not found[0]

        def on_leave(self, original_node: cst.CSTNode) -> None:
            if original_node in facts.scopes and self.scopes:
                self.scopes.pop()

    facts.module.visit(_Scan())
    return found[0]


def _message_names_x64(node: cst.CSTNode) -> bool:
    """A string of `node` (a raise, a warning) names the x64 flag or x64 mode."""
    return any(
        isinstance(inner, (cst.SimpleString, cst.FormattedStringText))
        and _tells_to_enable_x64(inner.value)
        for inner in descendants(node)
    )


def _probes_x64(ctx, comparison: cst.Comparison, scope) -> bool:
    """`jnp.zeros(1, jnp.float64).dtype == jnp.float64`: a 64-bit request made to see what
    JAX gives, the check of whether x64 is on."""
    sides = [comparison.left, *(target.comparator for target in comparison.comparisons)]
    with resolving_in(ctx, scope):
        return any(
            isinstance(side, cst.Attribute) and side.attr.value == "dtype" and isinstance(side.value, cst.Call)
            and any(x64_dtype(ctx, arg.value) is not None for arg in side.value.args)
            for side in sides
        )


def x64_dtype(ctx, node: cst.BaseExpression, strings: bool = True) -> str | None:
    """The name of a 64-bit dtype that `node` spells (`jnp.float64`, `np.int64`, "float64")."""
    if isinstance(node, (cst.Name, cst.Attribute)):
        qualified = ctx.qualname(node) or ""
        module, _, name = qualified.rpartition(".")
        if module in ("jax.numpy", "numpy") and name in X64_DTYPE_NAMES:
            return ("jnp." if module == "jax.numpy" else "np.") + name
        if qualified in ("builtins.float", "builtins.int", "builtins.complex"):
            return None  # Python types are "the default" dtype: 32-bit without x64, not a request
        return None
    if strings:
        text = literal_str(node)
        if text is not None and text in X64_DTYPE_STRINGS:
            return repr(text)
    return None


# ---------------------------------------------------------------------------------
# JG902


@register
class X64EnabledTooLate(Rule):
    code = "JG902"
    name = "x64-enabled-too-late"
    summary = "jax_enable_x64 turned on after JAX arrays were created: those arrays stay 32-bit"
    message = "jax_enable_x64 is turned on {where}: arrays created before stay 32-bit; enable it at startup, before any JAX array exists"
    what = """
        Flags `jax.config.update("jax_enable_x64", True)` (or `os.environ["JAX_ENABLE_X64"]`)
        that runs after this module already created JAX arrays or called JAX functions at
        module level, and the same update inside a traced function, or inside a function after
        that function already used JAX. Repeating the update when x64 is already on is fine,
        and a switch to a variable (restoring a saved setting, a user's option) is not
        reported: it may be off.
    """
    why = """
        x64 mode is read when values are created and functions are traced: arrays made (and
        functions compiled) before the switch keep their 32-bit dtypes, and mixing them with
        new 64-bit values gives surprising promotions and recompilations. The "Sharp Bits"
        page stresses: set it at startup. Inside a jitted function the update runs once, at
        trace time, after the function's own inputs were already traced as 32-bit.
    """
    example = """
        import jax
        import jax.numpy as jnp

        weights = jnp.ones(3)
        jax.config.update("jax_enable_x64", True)
    """
    use_instead = """
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        weights = jnp.ones(3)
    """
    invalid = (
        # a decorator's argument is made at import, before main enables x64: it stays 32-bit
        "import jax\nimport jax.numpy as jnp\n@parameters(dict(x=jnp.zeros(3)))\ndef test_a(x):\n    pass\n"
        "if __name__ == '__main__':\n    jax.config.update('jax_enable_x64', True)\n",
        "import jax\nfrom jax import random\nkey = random.key(0)\nimport os\nos.environ['JAX_ENABLE_X64'] = 'True'\n",
        "import jax\n@jax.jit\ndef f(x):\n    jax.config.update('jax_enable_x64', True)\n    return x\n",
        "import jax\nimport jax.numpy as jnp\ndef run():\n    x = jnp.zeros(3)\n    jax.config.update('jax_enable_x64', True)\n    return x\n",
        "import jax\nimport jax.numpy as jnp\nclass Model:\n    table = jnp.arange(10)\njax.config.update('jax_enable_x64', True)\n",
        "import jax\nimport equinox as eqx\n@eqx.filter_jit\ndef f(x):\n    jax.config.update('jax_enable_x64', True)\n    return x\n",
    )
    valid = (
        # a lambda in a decorator runs when the test calls it, after main enabled x64
        "import jax\nimport jax.numpy as jnp\n@parameters(dict(f=lambda x: jnp.cos(x)))\ndef test_a(f):\n    pass\n"
        "if __name__ == '__main__':\n    jax.config.update('jax_enable_x64', True)\n",
        "import jax\njax.config.update('jax_enable_x64', True)\nimport jax.numpy as jnp\nx = jnp.ones(3)\n",
        "import jax\nimport jax.numpy as jnp\nprint(jnp.finfo(jnp.float32).eps)\njax.config.update('jax_enable_x64', True)\n",
        "import jax\nimport jax.numpy as jnp\njax.config.update('jax_enable_x64', True)\nx = jnp.ones(3)\njax.config.update('jax_enable_x64', True)\n",
        "import jax\ndef enable():\n    jax.config.update('jax_enable_x64', True)\nenable()\n",
        "import jax\nimport jax.numpy as jnp\nx = jnp.ones(3)\njax.config.update('jax_enable_x64', False)\n",
        # restoring the setting the function saved: on only if it was on before
        "import jax\nimport jax.numpy as jnp\ndef solve(a):\n    saved = jax.config.read('jax_enable_x64')\n"
        "    jax.config.update('jax_enable_x64', True)\n    x = jnp.linalg.eigh(a)\n"
        "    jax.config.update('jax_enable_x64', saved)\n    return x\n",
        "import jax\nfrom functools import partial\n@partial(jax.jit, static_argnums=0)\ndef f(n, x):\n    return x\n"
        "jax.config.update('jax_enable_x64', True)\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.module_used_jax = False
        self.enabled = ctx.settings.x64
        self.functions_used_jax: set = set()
        self.lambdas = 0  # lambda bodies being visited (`parameters(f=lambda x: jnp.cos(x))`)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.lambdas += 1

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.lambdas -= 1

    def _creates_arrays(self, node: cst.Call) -> bool:
        ctx = self.ctx
        qualified = ctx.qualname(node.func) or ""
        if qualified.startswith(ARRAY_MODULES) and qualified not in NOT_ARRAY_CALLS:
            module, _, name = qualified.rpartition(".")
            return not (module == "jax.numpy" and name[:1].isupper())  # classes: jnp.ndarray
        if qualified in ("jax.device_put", "jax.block_until_ready"):
            return True
        return ctx.facts.jitted_spec(node.func, ctx.scope) is not None

    def visit_Call(self, node: cst.Call) -> None:
        value = x64_setting(self.ctx, node)
        if value is None:
            if self._creates_arrays(node):
                function = self.ctx.function
                if function is not None:
                    self.functions_used_jax.add(function)
                elif not self.lambdas:
                    self.module_used_jax = True  # not in a lambda's body: that runs when called
            return
        self._update(node, value)

    def visit_Assign(self, node: cst.Assign) -> None:
        value = x64_setting(self.ctx, node)
        if value is not None:
            self._update(node, value)

    def _update(self, node: cst.CSTNode, value: cst.BaseExpression) -> None:
        """Only a switch to a literal true value is reported: a variable (restoring the
        setting a function saved, a user's option) may be off."""
        ctx = self.ctx
        function = ctx.function
        enabling = not _is_false_literal(value)
        if function is None:
            if is_true_literal(value) and self.module_used_jax and not self.enabled:
                self.report(node, self.message.format(where="after this module already created JAX arrays"))
            self.enabled = self.enabled or enabling
            return
        if not is_true_literal(value):
            return
        if function.traced:
            self.report(node, self.message.format(where=f"inside a traced function ('{function.name}')"))
        elif function in self.functions_used_jax and not self.enabled:
            self.report(node, self.message.format(where=f"in '{function.name}' after it already used JAX"))


# ---------------------------------------------------------------------------------
# JG903


def _is_integer_dtype(spelled: str) -> bool:
    """`jnp.int64`, `np.uint64`, 'i8': a 64-bit integer dtype as x64_dtype spells it."""
    return spelled.rpartition(".")[2].strip("'\"") in X64_INTEGER_DTYPES


def _says_values_pass_int32(statement: cst.CSTNode | None, dtype: str = "") -> bool:
    """The statement shows its integers need 64 bits: a literal beyond the range of the
    32-bit type JAX gives instead (int32; uint32 for `uint64`: `jnp.uint64(0xFFFFFFFF)` fits),
    or a comment on it naming overflow (`# Cast to int64 to avoid overflow`)."""
    if statement is None:
        return False
    lines = getattr(statement, "leading_lines", ())
    comments = [line.comment.value for line in lines if line.comment is not None]
    trailing = getattr(statement, "trailing_whitespace", None)
    if trailing is not None and trailing.comment is not None:
        comments.append(trailing.comment.value)
    if any("overflow" in comment.lower() for comment in comments):
        return True
    limit = 2**32 if "uint" in dtype else 2**31
    return any(isinstance(node, cst.Integer) and abs(number(node) or 0) >= limit for node in descendants(statement))


@register
class X64DtypeWithoutX64(Rule):
    code = "JG903"
    in_tests = False  # tests request 64-bit types on purpose, to probe what JAX gives
    name = "x64-dtype-without-x64"
    summary = "A 64-bit dtype requested from JAX in a module that never enables x64: it silently stays 32-bit"
    message = (
        "{dtype} requested from JAX, but neither this module nor any project module it imports enables x64: "
        "JAX silently uses the 32-bit type; "
        "call jax.config.update(\"jax_enable_x64\", True) at startup (or set x64 = true in [tool.jaxguard])"
    )
    fix_kind = "suggest"
    what = """
        Flags a 64-bit dtype (`float64`, `int64`, `uint64`, `complex128`) requested from JAX:
        `dtype=` of a JAX function, a dtype argument of `jnp.zeros/array/asarray/...` or
        `lax.convert_element_type`, `.astype(jnp.float64)` on a JAX array, `jnp.float64(x)`,
        in a module that never enables x64. A 64-bit integer type (`int64`, `uint64`) is
        flagged only where the code shows its values need the range: a literal beyond
        int32's, or a comment on the statement naming overflow; a step counter or an index
        cast to `int64` computes the same in int32 (judged on the tuning set: 7 of its 8
        64-bit integer requests were such casts; the eighth said "to avoid overflow").
        Not a number written in the code that the 32-bit type holds exactly
        (`jnp.asarray(0.0, jnp.float64)`, `jnp.float64(10)`): the value is the same. x64 counts as enabled by `jax.config.update(
        "jax_enable_x64", ...)`, the `JAX_ENABLE_X64` environment variable set in the module,
        `jax.enable_x64(...)` contexts, code that reads the flag or checks it (`jnp.zeros(1,
        jnp.float64).dtype == jnp.float64`), a comment or docstring that names the flag or
        the mode (`# Enable jax_enable_x64 for this to work`, `# for x64 enabled runs we
        cast`: the reader is told), an error or warning whose message names it (`raise
        ValueError("gram() requires jax_enable_x64=True.")`: the user is told), and `x64 =
        true` in config;
        and when importing the module enables it: its package's `__init__` or a project module
        it imports (directly or through others) turns x64 on at import, or refuses to import
        (or warns) without it; a module that calls a project function that turns x64 on, or
        refuses (or warns) to run without it (`require_x64("lyap")`), or decorates its functions
        with one that runs each call under `jax.enable_x64()` (`@with_float64`); an entry point that enables x64 and then imports the module;
        a module that a program calling such a guard imports, directly or not (each script's
        `main` checks `JAX_ENABLE_X64` and warns: the library modules it runs are covered);
        a module of a package one of whose modules (tests aside) has a docstring that tells
        its users to enable x64 ("float64 is opt-in: call `jax.config.update("jax_enable_x64",
        True)`", in its `__init__` or in a `precision` module it exports);
        a package `__init__` that imports all its submodules when one of them enables it;
        a package where a library module (one its other modules import: a solver) enables it
        at import, or a function switches it on, so whether it is on depends on what the user
        loaded first (a workflow script nothing imports does not count);
        and in a function whose every project caller runs with x64 on (a helper called only
        from modules that enable it, from functions that enable it or refuse to run without
        it, or call a function that refuses, directly or through others, or from functions
        such a decorator wraps).

        Off in test files unless selected by its code: tests request 64-bit types on purpose,
        to probe what JAX gives (`assertIn(str(y.dtype), ["float32", "float64"])`). Judged in
        test files on real code: 0 real, 3 deliberate, 0 false.
    """
    why = """
        Without x64 mode JAX canonicalizes 64-bit dtypes to 32-bit ones (with at most a
        warning): `random.uniform(key, (1000,), dtype=jnp.float64).dtype` is `float32`. Code
        that needs double precision silently computes in single precision.
    """
    example = """
        import jax.numpy as jnp
        from jax import random

        x = random.uniform(random.PRNGKey(0), (1000,), dtype=jnp.float64)
    """
    use_instead = """
        import jax
        import jax.numpy as jnp
        from jax import random

        jax.config.update("jax_enable_x64", True)
        x = random.uniform(random.PRNGKey(0), (1000,), dtype=jnp.float64)
    """
    invalid = (
        # ... a constant past uint32's range
        "import jax.numpy as jnp\ndef wide_mask():\n    return jnp.uint64(0x1FFFFFFFF)\n",
        # the old config module never ran, so x64 was never enabled
        "import jax.numpy as jnp\nfrom jax.config import config\nconfig.update('jax_enable_x64', True)\n"
        "a = jnp.array([1.0, 2.0]).astype(jnp.float32)\na64 = a.astype(jnp.float64)\n",
        "import jax.numpy as jnp\nimport numpy as np\ndef grid(n):\n    return jnp.zeros((n, n), np.float64)\n",
        "import jax.numpy as jnp\nfrom jax import lax\ndef f(x):\n    return lax.convert_element_type(x, jnp.complex128)\n",
        # a number float32 rounds
        "import jax.numpy as jnp\ndef step():\n    return jnp.asarray(0.1, dtype=jnp.float64)\n",
        # 64-bit integers the code says it needs: int32 overflows where the author relied on int64
        "import jax.numpy as jnp\ndef bigrams(ids, vocab_size):\n    # Cast to int64 to avoid overflow\n"
        "    ids = jnp.asarray(ids, dtype=jnp.int64)\n    return ids[:, :-1] + ids[:, 1:] * vocab_size\n",
        "import jax.numpy as jnp\ndef mix(h):\n    return jnp.asarray(h, jnp.uint64) * 0x9E3779B97F4A7C15\n",
        "import jax.numpy as jnp\nscale = jnp.float64(1e-3)\n",
        "import jax.numpy as jnp\nimport equinox as eqx\nclass Lin(eqx.Module):\n    w: jnp.ndarray\n"
        "    def __init__(self):\n        self.w = jnp.ones(3, dtype='float64')\n",
        # a refusal whose message says nothing of x64
        "import jax.numpy as jnp\nfrom .flags import ready\ndef gram(a):\n    if not ready():\n"
        "        raise ValueError('gram() is not ready')\n    return jnp.float64(a) @ jnp.float64(a).T\n",
    )
    valid = (
        # a mask uint32 holds: the 32-bit value JAX gives is the same number
        "import jax.numpy as jnp\ndef low_mask():\n    return jnp.uint64(0xFFFFFFFF)\n",
        "import numpy as np\nx = np.zeros(3, dtype=np.float64)\ny = x.astype(np.float64)\n",
        "import os\nos.environ['JAX_ENABLE_X64'] = '1'\nimport jax.numpy as jnp\nx = jnp.zeros(3, jnp.float64)\n",
        "import jax\nimport jax.numpy as jnp\ndef f(x):\n    with jax.enable_x64(True):\n        return jnp.asarray(x, dtype=jnp.float64)\n",
        "import jax\nimport jax.numpy as jnp\ndef f(x):\n    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32\n    return x.astype(dtype)\n",
        # the flag read with getattr, and a warning when it is off (jaxht's `_prepare`)
        "import warnings\nimport jax\nimport jax.numpy as jnp\ndef prepare(n):\n"
        "    if not getattr(jax.config, 'jax_enable_x64', True):\n        warnings.warn('enable x64')\n"
        "    return jnp.zeros(n, jnp.float64)\n",
        "import jax.numpy as jnp\nimport numpy as np\ndef host(x):\n    return np.asarray(x).astype(jnp.float64)\n",
        "import jax.numpy as jnp\nDTYPES = {jnp.float32: 'f', jnp.float64: 'd'}\n",
        # a step counter or an index cast: int32 holds it, nothing changes
        "import jax.numpy as jnp\ndef init():\n    return {'step': jnp.asarray(0, dtype=jnp.int64)}\n",
        "import jax.numpy as jnp\ndef lookup(table, x, dx):\n    i = (x / dx).astype(jnp.int64)\n    return table[i]\n",
        # a request made to see whether JAX keeps it: the check of the x64 flag
        "import jax.numpy as jnp\ndef double_enabled():\n    return jnp.zeros(1, jnp.float64).dtype == jnp.float64\n"
        "def grid(n):\n    return jnp.zeros((n, n), jnp.float64)\n",
        # the requirement documented where the dtype is chosen (distributed Shampoo)
        "import jax.numpy as jnp\n# Enable the jax flag jax_enable_x64 for this to work, otherwise it is float32.\n"
        "ROOT_DTYPE = jnp.float64\ndef root(m):\n    return m.astype(ROOT_DTYPE)\n",
        '"""Assumes double precision: call jax.config.update("jax_enable_x64", True) first."""\n'
        "import jax.numpy as jnp\nweights = jnp.array([1.0, 2.0], dtype=jnp.float64)\n",
        # a number the 32-bit type holds exactly: the same value either way (jax-md's zero seeds)
        "import jax.numpy as jnp\ndef energy(terms):\n    total = jnp.asarray(0.0, jnp.float64)\n"
        "    scale = jnp.float64(10)\n    return total + scale * terms\n",
        # a refusal to run whose message names the flag (ozaki-jax, the flag read by a helper)
        "import jax.numpy as jnp\nfrom .flags import _is_x64_enabled\ndef gram(a):\n    if not _is_x64_enabled():\n"
        "        raise ValueError('gram() requires jax_enable_x64=True.')\n    return jnp.float64(a) @ jnp.float64(a).T\n",
        # the mode named in words (arlbench's SAC, whose entry scripts switch it from config)
        "import jax.numpy as jnp\ndef dummy(action):\n    # for x64 enabled runs we have to explicitly cast the dummy action\n"
        "    return jnp.array(action, dtype=jnp.float64)\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.candidates: list[tuple[cst.CSTNode, str, cst.CSTNode | None]] = []

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.qualname(node.func) or ""
        found = None
        if qualified in NOT_ARRAY_CALLS or qualified.startswith(("jax.dtypes.", "jax.numpy.dtypes.")):
            return  # jnp.finfo(jnp.float64), jnp.issubdtype(t, jnp.float64): no value is created
        if qualified.startswith("jax."):
            module, _, name = qualified.rpartition(".")
            if module == "jax.numpy" and name in X64_DTYPE_NAMES:
                found = (node, f"jnp.{name}")
            else:
                value = keyword(node, "dtype")
                if value is None and qualified.startswith(("jax.numpy.", "jax.lax.", "jax.random.")):
                    for arg in positional(node)[1:]:
                        if x64_dtype(ctx, arg, strings=False) is not None:
                            value = arg
                            break
                dtype = x64_dtype(ctx, value) if value is not None else None
                if dtype is not None:
                    found = (value, dtype)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in ("astype", "view") and qualified == "":
            args = positional(node)
            value = args[0] if args else keyword(node, "dtype")
            dtype = x64_dtype(ctx, value) if value is not None else None
            if dtype is not None:
                receiver = ctx.kind_of(node.func.value)
                if receiver == "jax" or (receiver is None and dtype.startswith("jnp.") and self._unknown_receiver_ok(node.func.value)):
                    found = (value, dtype)
        if found is not None and _exact_literal_value(qualified, node):
            return  # `jnp.asarray(0.0, jnp.float64)`: the 32-bit value is the same number
        if found is not None and not self._dtype_dispatch() and not self._called_with_x64():
            statement = ctx.statement_stack[-1] if ctx.statement_stack else None
            if _is_integer_dtype(found[1]) and not _says_values_pass_int32(statement, found[1]):
                return  # counters, indices, casts: int32 holds them, nothing changes
            self.candidates.append((found[0], found[1], statement))

    def _called_with_x64(self) -> bool:
        """In a function (or nested in one) that every project caller runs with x64 on."""
        scope = self.ctx.scope
        while scope is not None:
            if scope.function is not None and scope.function.runs_with_x64:
                return True
            scope = scope.parent
        return False

    def _dtype_dispatch(self) -> bool:
        """Inside `if x.dtype == np.float64:` (or any branch on a dtype or the x64 flag)."""
        for statement in self.ctx.statement_stack:
            if isinstance(statement, cst.If):
                test = self.ctx.code(statement.test)
                if "dtype" in test or "64" in test:
                    return True
        return False

    def _unknown_receiver_ok(self, receiver: cst.BaseExpression) -> bool:
        """`x.astype(jnp.float64)` with x of unknown kind: only if x is not built by numpy."""
        if isinstance(receiver, cst.Call):
            qualified = self.ctx.qualname(receiver.func) or ""
            return not qualified.startswith("numpy.")
        return True

    def finish(self) -> None:
        if not self.candidates or module_x64_aware(self.ctx):
            return
        for node, dtype, statement in self.candidates:
            self.report(node, self.message.format(dtype=dtype), statement=statement)


# Calls that make one value of the dtype they are given from their first argument.
_VALUE_MAKERS = frozenset(
    {"jax.numpy.asarray", "jax.numpy.array", "jax.lax.convert_element_type"}
    | {f"jax.numpy.{name}" for name in X64_DTYPE_NAMES}
)


def _exact_literal_value(qualified: str, call: cst.Call) -> bool:
    """`jnp.float64(10)`, `jnp.asarray(0.0, dtype=jnp.float64)`: a number written in the
    code that the 32-bit type holds exactly, so JAX's 32-bit value is the same number."""
    args = positional(call)
    value = number(args[0]) if qualified in _VALUE_MAKERS and args else None
    if value is None:
        return False
    try:
        return struct.unpack("f", struct.pack("f", value))[0] == value
    except OverflowError:
        return False


# ---------------------------------------------------------------------------------
# JG904


def _closest(name: str, choices: frozenset[str]) -> str | None:
    found = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.75)
    return found[0] if found else None


@register
class UnknownConfigOption(Rule):
    code = "JG904"
    name = "unknown-config-option"
    summary = "A misspelled or unknown JAX configuration option or JAX_ environment variable"
    message = "{what} is not a JAX configuration option{hint}"
    fix_kind = "suggest"
    what = """
        Flags option names that the installed JAX does not have: the name passed to
        `jax.config.update(...)` / `jax.config.read(...)`, attribute access `jax.config.<name>`,
        and `JAX_...` environment variables set with `os.environ[...] = ...`,
        `os.environ.setdefault(...)` or `os.putenv(...)` that are close to a real one. The
        closest real name is suggested. The list of names is generated from `jax.config.values`
        of the installed JAX (see `jaxguard/data/jax_config_options.json`). Code written for
        several JAX versions is not flagged: behind `if "jax_x" in jax.config.values:`,
        `hasattr(jax.config, "jax_x")` or a version test, or in a `try:` that catches
        `AttributeError`.
    """
    why = """
        `jax.config.update` with a misspelled name raises `AttributeError: Unrecognized config
        option` only when that line runs, and a misspelled environment variable is silently
        ignored: `JAX_ENABEL_X64=1` leaves x64 off and the program quietly runs in 32-bit.
    """
    example = """
        import os
        import jax

        os.environ["JAX_DEBUG_NAN"] = "1"
        jax.config.update("jax_enabel_x64", True)
    """
    use_instead = """
        import os
        import jax

        os.environ["JAX_DEBUG_NANS"] = "1"
        jax.config.update("jax_enable_x64", True)
    """
    invalid = (
        "from jax import config\nconfig.update('jax_platform', 'cpu')\n",
        "import jax\nif jax.config.jax_enable_64:\n    pass\n",
        "import os\nos.environ.setdefault('JAX_PLATFORM', 'cpu')\n",
        "import jax\nclass Setup:\n    def apply(self):\n        jax.config.update('jax_default_matmul_precison', 'highest')\n",
    )
    valid = (
        "import jax\njax.config.update('jax_enable_x64', True)\njax.config.update('jax_platforms', 'cpu')\n",
        "import jax\nprint(jax.config.jax_enable_x64, jax.config.x64_enabled, jax.config.values)\n",
        "import os\nos.environ['JAX_PLATFORMS'] = 'cpu'\nos.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'\n"
        "os.environ['JAX_MY_APP_SETTING'] = '1'\n",
        "import jax\ndef set_option(name, value):\n    jax.config.update(name, value)\n",
        "import flax\nflax.config.update('flax_use_orbax_checkpointing', True)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        qualified = ctx.qualname(node.func)
        args = positional(node)
        if qualified in ("jax.config.update", "jax.config.read", "jax.config.config.update") and args:
            name = literal_str(args[0])
            if name is not None and name not in config_data()["options"]:
                self._report(args[0], repr(name), name, config_data()["options"])
        elif qualified in ("os.environ.setdefault", "os.putenv") and args:
            self._env(args[0])
        elif qualified == "os.environ.update" and len(args) == 1 and isinstance(args[0], cst.Dict):
            for element in args[0].elements:
                if isinstance(element, cst.DictElement):
                    self._env(element.key)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        ctx = self.ctx
        if ctx.qualname(node.value) != "jax.config":
            return
        name = node.attr.value
        data = config_data()
        if name.startswith("__") or name in data["options"] or name in data["attributes"]:
            return
        self._report(node.attr, f"jax.config.{name}", name, data["options"] | data["attributes"])

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            subscript = target.target
            if isinstance(subscript, cst.Subscript) and self.ctx.qualname(subscript.value) == "os.environ":
                if len(subscript.slice) == 1 and isinstance(subscript.slice[0].slice, cst.Index):
                    self._env(subscript.slice[0].slice.value)

    def _env(self, key: cst.BaseExpression) -> None:
        name = literal_str(key)
        if name is None or not name.startswith("JAX_"):
            return
        known = config_data()["env_vars"]
        if name in known:
            return
        close = _closest(name, known)
        if close is not None:  # JAX_-prefixed names of other tools are fine; misspellings are not
            self.report(key, self.message.format(what=f"environment variable {name}", hint=f" (JAX ignores it); did you mean {close}?"))

    def _version_guarded(self, name: str) -> bool:
        """Behind a check that the option exists (`if "jax_x" in jax.config.values:`,
        `hasattr(jax.config, "jax_x")`, a JAX version test) or in a `try:` that catches the
        error: code written for several JAX versions."""
        for index, statement in enumerate(self.ctx.statement_stack):
            if isinstance(statement, cst.If):
                for string in descendants(statement.test):
                    value = literal_str(string) if isinstance(string, cst.SimpleString) else None
                    if value is not None and (value == name or "version" in value):
                        return True
                if "version" in self.ctx.code(statement.test):
                    return True
            elif isinstance(statement, cst.Try) and index + 1 < len(self.ctx.statement_stack):
                if self.ctx.statement_stack[index + 1] in statement.body.body and _catches(self.ctx, statement, _CONFIG_ERRORS):
                    return True
        return False

    def _report(self, node: cst.CSTNode, what: str, name: str, choices: frozenset[str]) -> None:
        if self._version_guarded(name):
            return
        close = _closest(name, choices)
        hint = f"; did you mean {close!r}?" if close else ""
        self.report(node, self.message.format(what=what, hint=hint))


# ---------------------------------------------------------------------------------
# JG905

MATMUL_PRECISION_POSITION = {
    "jax.numpy.dot": None, "jax.numpy.matmul": None, "jax.numpy.einsum": None,
    "jax.numpy.tensordot": None, "jax.numpy.inner": None, "jax.numpy.vdot": None,
    "jax.numpy.linalg.matmul": None, "jax.numpy.linalg.tensordot": None, "jax.numpy.linalg.vecdot": None,
    "jax.lax.dot": 3, "jax.lax.dot_general": 3, "jax.lax.conv_general_dilated": 9,
    "jax.lax.conv": 4, "jax.lax.conv_with_general_padding": 6, "jax.lax.batch_matmul": 2,
}
COMPARISON_TAILS = frozenset(
    {
        "assert_allclose", "allclose", "assert_close", "assertAllClose", "assert_array_almost_equal",
        "assert_almost_equal", "assertArraysAllClose", "isclose",
    }
)


def _call_tail(node: cst.Call) -> str | None:
    func = node.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None


@register
class UnpinnedMatmulPrecision(Rule):
    code = "JG905"
    name = "unpinned-matmul-precision"
    summary = "A matmul without precision= compared with a reference: on TPU/GPU it runs in bf16/TF32"
    message = "{op} without precision= is compared against a reference in this function: on GPU/TPU it may run in TF32/bf16 and the comparison becomes flaky; pass precision=jax.lax.Precision.HIGHEST or use jax.default_matmul_precision('highest')"
    default_on = False
    fix_kind = "suggest"
    what = """
        Flags `jnp.dot/matmul/einsum/tensordot`, `lax.dot/dot_general/conv_general_dilated` and
        `@` on JAX arrays that pass no `precision=` and are not inside
        `with jax.default_matmul_precision(...)` (nor in a module that sets
        `jax_default_matmul_precision`), when the product reaches one side of a comparison
        with a reference in the same function or script (`assert_allclose`, `assert_close`,
        `assertAllClose`, `assert np.allclose(...)`), directly or through assignments.

        Not flagged: a product that reaches both sides (it only builds the shared input),
        comparisons whose tolerance already accepts bf16/TF32 rounding (`rtol` or `atol` of
        1e-2 or more, 2 decimals or fewer), comparisons that must fail (`assertFalse(...)`,
        `assert not`), `isclose` used as a value (`jnp.where(jnp.isclose(p, 0), ...)`), products
        of small integers (`jnp.arange`, `ones`, `eye`, integer literals, also set in `setUp`
        and scaled by powers of two), which are exact in bf16, and single-operand `einsum`s.

        Opt-in. Measured on 18 real JAX packages it was not tuned on: 7 findings, all real
        (0% false alarms; 15 findings, 8 false, before the exceptions above). On the 20-package
        tuning set 3 remain, 2 of them false (products of small integers that reach the
        matmul through a lambda's parameter).
    """
    why = """
        On TPUs (and on GPUs with TF32) JAX's default matmul precision multiplies float32
        inputs in bfloat16 or TF32: about 3 significant digits. A comparison with a float32 or
        float64 reference at float32 tolerances then passes on CPU and fails on accelerators.
    """
    example = """
        import jax
        import jax.numpy as jnp
        import numpy as np

        def test_projection():
            a = jax.random.normal(jax.random.key(0), (64, 64))
            b = jax.random.normal(jax.random.key(1), (64, 64))
            expected = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
            np.testing.assert_allclose(jnp.dot(a, b), expected, rtol=1e-5)
    """
    use_instead = """
        import jax
        import jax.numpy as jnp
        import numpy as np

        def test_projection():
            a = jax.random.normal(jax.random.key(0), (64, 64))
            b = jax.random.normal(jax.random.key(1), (64, 64))
            expected = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
            result = jnp.dot(a, b, precision=jax.lax.Precision.HIGHEST)
            np.testing.assert_allclose(result, expected, rtol=1e-5)
    """
    invalid = (
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\nx = jax.random.normal(jax.random.key(0), (4, 4))\n"
        "y = x @ x\nassert np.allclose(y, np.asarray(x) @ np.asarray(x))\n",
        "import jax.numpy as jnp\nimport torch\ndef check(a, b, ref):\n"
        "    out = jnp.einsum('ij,jk->ik', a, b)\n    torch.testing.assert_close(torch.from_numpy(out), ref)\n",
        "from jax import lax\nimport numpy as np\nclass T:\n    def test_conv(self):\n"
        "        x = np.random.randn(1, 1, 5, 5).astype(np.float32)\n        out = lax.conv_general_dilated(x, x, (1, 1), 'SAME')\n"
        "        self.assertAllClose(out, self.reference)\n",
        # notebook style: the product reaches the comparison through names
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\nw = jax.random.normal(jax.random.key(0), (8, 8))\n"
        "h = jnp.matmul(w, w)\nout = h.sum(axis=0)\nnp.testing.assert_allclose(out, np.load('expected.npy'), rtol=1e-6)\n",
        # float16 operands: reported with float16's own rounding as the reason
        "import jax.numpy as jnp\nimport numpy as np\ndef test_half(a, b):\n    x = a.astype(jnp.float16)\n"
        "    np.testing.assert_allclose(jnp.dot(x, b), np.dot(np.asarray(x), np.asarray(b)))\n",
    )
    valid = (
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\ndef t(x):\n"
        "    with jax.default_matmul_precision('highest'):\n        y = x @ x\n    np.testing.assert_allclose(y, 4.0)\n",
        "import jax.numpy as jnp\ndef f(a, b):\n    return jnp.dot(a, b)\n",
        "import numpy as np\ndef t():\n    x = np.ones((4, 4))\n    np.testing.assert_allclose(x @ x, 4.0)\n",
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\njax.config.update('jax_default_matmul_precision', 'highest')\n"
        "def t(x):\n    np.testing.assert_allclose(jnp.matmul(x, x), 4.0)\n",
        "from jax import lax\nimport jax.numpy as jnp\nimport numpy as np\ndef t(x, w, dn):\n"
        "    out = lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=dn, precision=lax.Precision.HIGHEST)\n"
        "    np.testing.assert_allclose(out, 0.0)\n",
        "from functools import partial\nimport jax.numpy as jnp\nimport numpy as np\nhdot = partial(jnp.dot, precision='highest')\n"
        "def t(a, b):\n    np.testing.assert_allclose(hdot(a, b), np.dot(a, b))\n",
        # library code: isclose as a zero guard inside jnp.where, not a comparison with a reference
        "import jax.numpy as jnp\ndef smooth(A, p, q):\n    r = jnp.where(jnp.isclose(p, 0.0), 0.0, q / p)\n    return A @ r\n",
        # a loose tolerance already accepts bf16/TF32 rounding
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\ndef test_identity(init):\n"
        "    m = jax.random.normal(jax.random.key(0), (62, 42))\n"
        "    np.testing.assert_allclose(m @ init((42, 20)), m[:, :20], rtol=1e-2)\n",
        "import jax.numpy as jnp\ndef test_rbpf(a, b, w, m):\n    assert jnp.allclose(jnp.einsum('ts,tsm->tm', w, m), b, atol=10.0)\n",
        # the product only builds the input both sides are computed from
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\ndef test_inverse(approx):\n"
        "    x = jax.random.normal(jax.random.key(0), (4, 4))\n    x = jnp.eye(4) * 0.001 + x @ x.T\n"
        "    np.testing.assert_array_almost_equal(approx(x), jnp.linalg.inv(x))\n",
        # integer-valued operands are exact in bf16
        "import jax.numpy as jnp\nimport numpy as np\ndef test_einsum(evaluate):\n"
        "    x = jnp.arange(10.).reshape((5, 2))\n    y = jnp.arange(6.).reshape((2, 3))\n"
        "    np.testing.assert_allclose(evaluate(x, y), jnp.einsum('ab,bc->ac', x, y))\n",
        # a single-operand einsum takes a diagonal: no products are summed
        "import jax.numpy as jnp\ndef test_diag(self, k, full):\n    self.assertAllClose(k, jnp.einsum('...iijj->...ij', full))\n",
        # a comparison that must fail
        "import jax.numpy as jnp\nimport numpy as np\ndef test_reap(self, reaped, a, b):\n"
        "    self.assertFalse(np.isclose(reaped, 2.0 * jnp.dot(a, b)).any())\n",
        # an integer matmul is exact: precision= does not apply
        "import jax.numpy as jnp\nimport numpy as np\ndef test_int(a, b):\n    x = a.astype(jnp.int32)\n"
        "    y = jnp.asarray(b, dtype=jnp.int32)\n    np.testing.assert_allclose(x @ y, np.asarray(x) @ np.asarray(y))\n",
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.pinned_depth = 0
        # per unit (function, or the module): matmuls, and comparisons with a reference
        self.candidates: dict[object, list] = {}
        self.compares: dict[object, list[tuple[tuple[cst.BaseExpression, ...], cst.CSTNode | None]]] = {}
        self.module_pinned = "default_matmul_precision" in ctx.source and (
            "jax_default_matmul_precision" in ctx.source
        )

    def _unit(self):
        function = self.ctx.function
        while function is not None and function.name == "<lambda>":
            function = self.ctx.facts.enclosing_function(function.parent)
        return function

    def visit_With(self, node: cst.With) -> None:
        if any(
            isinstance(item.item, cst.Call) and self.ctx.qualname(item.item.func) == "jax.default_matmul_precision"
            for item in node.items
        ):
            self.pinned_depth += 1

    def leave_With(self, original_node: cst.With) -> None:
        if any(
            isinstance(item.item, cst.Call) and self.ctx.qualname(item.item.func) == "jax.default_matmul_precision"
            for item in original_node.items
        ):
            self.pinned_depth -= 1

    def _candidate(self, node: cst.CSTNode, op: str, operands: list[cst.BaseExpression]) -> None:
        if self.pinned_depth or self.module_pinned:
            return
        if operands and all(self._exact(operand) for operand in operands):
            return  # small integers (arange, ones, eye, integer literals) multiply exactly in bf16
        dtypes = {self._visible_dtype(operand, 0) for operand in operands}
        if any(d and d.startswith(("int", "uint", "bool")) for d in dtypes):
            return  # an integer matmul is exact: precision= does not apply
        half = sorted(d for d in dtypes if d in ("float16", "bfloat16"))
        statement = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
        self.candidates.setdefault(self._unit(), []).append((node, op + (f"|{half[0]}" if half else ""), statement))

    def _visible_dtype(self, node: cst.BaseExpression, depth: int) -> str | None:
        """The dtype an operand visibly has: `dtype=jnp.int32`, `.astype(jnp.float16)`, or a
        name bound once to such a value; None when the code does not say."""
        if depth > 3:
            return None
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "astype" and node.args:
                return _dtype_name(self.ctx, node.args[0].value)
            given = keyword(node, "dtype")
            return _dtype_name(self.ctx, given) if given is not None else None
        if isinstance(node, cst.Name):
            owner = self.ctx.scope.lookup(node.value)
            values = owner.values.get(node.value, []) if owner is not None else []
            if len(values) == 1 and values[0] is not None and node.value not in owner.params:
                return self._visible_dtype(values[0], depth + 1)
        return None

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        tail = _call_tail(node)
        if tail in COMPARISON_TAILS:
            sides = self._compared(node, tail)
            if sides:
                statement = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
                self.compares.setdefault(self._unit(), []).append((sides, statement))
            return
        qualified = ctx.qualname(node.func)
        if qualified not in MATMUL_PRECISION_POSITION:
            return
        if keyword(node, "precision") is not None:
            return
        position = MATMUL_PRECISION_POSITION[qualified]
        args = positional(node)
        if position is not None and len(args) > position:
            return
        if qualified == "jax.numpy.einsum" and args and isinstance(args[0], cst.SimpleString):
            if len(args) < 3:
                return  # one operand: a trace, diagonal or transpose, no products to round
            operands = args[1:]
        else:
            operands = args[:2]
        self._candidate(node, qualified.replace("jax.numpy.", "jnp.").replace("jax.lax.", "lax."), operands)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.MatrixMultiply):
            if "jax" in (self.ctx.kind_of(node.left), self.ctx.kind_of(node.right)):
                self._candidate(node, "'@'", [node.left, node.right])

    # comparisons ---------------------------------------------------------------------
    def _compared(self, node: cst.Call, tail: str) -> tuple[cst.BaseExpression, ...]:
        """The two sides of a comparison with a reference at a tight tolerance, or ()."""
        if tail in ("isclose", "allclose") and not self._asserted():
            return ()  # `jnp.where(jnp.isclose(p, 0), ...)`: a value, not a check
        if self._negated():
            return ()  # `assertFalse(np.isclose(...))`: the values must differ
        if self._loose(node, tail):
            return ()
        return tuple(positional(node)[:2])

    def _asserted(self) -> bool:
        """The current statement checks its value: an `assert`, a test assertion method, an
        `if` that raises, or a bare expression (a notebook cell's output, a print)."""
        statement = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
        if isinstance(statement, cst.If):
            return True
        if isinstance(statement, cst.SimpleStatementLine):
            small = statement.body[0]
            if isinstance(small, cst.Assert):
                return True
            if isinstance(small, cst.Expr):
                value = small.value
                if not isinstance(value, cst.Call):
                    return True
                value_tail = _call_tail(value) or ""
                return value_tail.startswith("assert") or value_tail in ("print", "all", "any") or value_tail in COMPARISON_TAILS
        return False

    def _negated(self) -> bool:
        statement = self.ctx.statement_stack[-1] if self.ctx.statement_stack else None
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        small = statement.body[0]
        if isinstance(small, cst.Assert):
            return isinstance(small.test, cst.UnaryOperation) and isinstance(small.test.operator, cst.Not)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            return (_call_tail(small.value) or "") in ("assertFalse", "assertNotAlmostEqual", "assert_raises")
        return False

    def _loose(self, node: cst.Call, tail: str) -> bool:
        """A tolerance that already accepts bf16/TF32 rounding: rtol or atol of 1e-2 or more,
        fewer than 3 decimals or places."""
        ctx = self.ctx
        args = positional(node)
        for index, name in enumerate(("rtol", "atol")):
            value = keyword(node, name)
            if value is None and tail in ("assert_allclose", "allclose", "isclose") and len(args) > 2 + index:
                value = args[2 + index]
            number_value = known_number(ctx, value) if value is not None else None
            if number_value is not None and number_value >= 1e-2:
                return True
        for name in ("decimal", "places"):
            value = keyword(node, name)
            if value is None and name == "decimal" and tail.startswith("assert_") and "almost" in tail and len(args) > 2:
                value = args[2]
            number_value = known_number(ctx, value) if value is not None else None
            if number_value is not None and number_value <= 2:
                return True
        return False

    # operands --------------------------------------------------------------------------
    def _exact(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """Small integers in any float format: `jnp.arange(10.)`, `np.ones`, `jnp.eye`, integer
        literals, their reshapes and transposes, and names bound only to those."""
        ctx = self.ctx
        if depth > 4:
            return False
        if isinstance(node, cst.Call):
            func = node.func
            qualified = ctx.qualname(func) or ""
            module, _, name = qualified.rpartition(".")
            if module in ("jax.numpy", "numpy") and name in _EXACT_CONSTRUCTORS:
                return True
            if module in ("jax.numpy", "numpy") and name in ("array", "asarray") and positional(node):
                return _integer_literals(positional(node)[0])
            if isinstance(func, cst.Attribute) and func.attr.value in ("reshape", "astype", "transpose", "ravel", "flatten"):
                return self._exact(func.value, depth + 1)
            return False
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Multiply, cst.Divide)):
            # scaling by a power of two is exact in binary floating point
            scale = number(node.right) if isinstance(node.operator, cst.Divide) else (number(node.left) or number(node.right))
            other = node.left if isinstance(node.operator, cst.Divide) or number(node.left) is None else node.right
            return scale is not None and scale != 0 and math.log2(abs(scale)).is_integer() and self._exact(other, depth + 1)
        if isinstance(node, cst.Attribute):
            if node.attr.value in ("T", "mT"):
                return self._exact(node.value, depth + 1)
            if isinstance(node.value, cst.Name) and node.value.value == "self":
                values = self_assignments(ctx, ctx.function, node.attr.value)  # set in setUp
                if not values:
                    return False
                for value, scope in values:
                    with resolving_in(ctx, scope):
                        if value is None or not self._exact(value, depth + 1):
                            return False
                return True
            return False
        if isinstance(node, cst.Name):
            owner = ctx.scope.lookup(node.value)
            values = owner.values.get(node.value, []) if owner is not None else []
            if not values or any(v is None for v in values) or node.value in owner.params:
                return False
            with resolving_in(ctx, owner):
                return all(self._exact(v, depth + 1) for v in values)
        return False

    def finish(self) -> None:
        for unit, found in self.candidates.items():
            comparisons = self.compares.get(unit)
            if not comparisons:
                continue
            order, assignments = _unit_statements(unit.node if unit is not None else self.ctx.module)
            for node, op, statement in found:
                for sides, compare in comparisons:
                    tainted = _flows_from(statement, compare, order, assignments)
                    hit = [self._reaches(side, node, tainted) for side in sides]
                    # the product on one side only: on both, it is the shared input
                    if any(hit) and not (len(hit) > 1 and all(hit)):
                        name, _, half = op.partition("|")
                        message = self.message.format(op=name) if not half else (
                            f"{name} of {half} operands is compared against a reference in this function: "
                            f"its products round to {half} (about 3 significant digits) on every device, "
                            f"whatever precision= says; compare at {half} tolerances (rtol ~1e-2) or compute in float32")
                        self.report(node, message, statement=statement)
                        break

    def _reaches(self, side: cst.BaseExpression, matmul: cst.CSTNode, tainted: set[str]) -> bool:
        return any(n is matmul or (isinstance(n, cst.Name) and n.value in tainted) for n in descendants(side))


def _dtype_name(ctx, node: cst.BaseExpression) -> str | None:
    """`jnp.int32`, `np.float16`, `"bfloat16"` -> its name."""
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    name = ctx.qualname(node) or ""
    tail = name.rsplit(".", 1)[-1]
    return tail if name.startswith(("jax.numpy.", "numpy.", "ml_dtypes.")) else None


_EXACT_CONSTRUCTORS = frozenset({"arange", "ones", "zeros", "eye", "identity", "ones_like", "zeros_like", "tri"})


def _integer_literals(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.List, cst.Tuple)):
        return bool(node.elements) and all(_integer_literals(e.value) for e in node.elements)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _integer_literals(node.expression)
    value = number(node)
    return value is not None and value == int(value) and abs(value) <= 256


def _unit_statements(unit: cst.CSTNode):
    """The unit's statements in source order (not those of nested functions or classes), and
    its assignments: (position, names bound, names read)."""
    order: dict[cst.CSTNode, int] = {}
    assignments: list[tuple[int, set[str], set[str]]] = []

    class _Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node is not unit:
                return False
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                order[node] = len(order)
            targets: list[cst.BaseExpression] = []
            if isinstance(node, cst.Assign):
                targets, value = [t.target for t in node.targets], node.value
            elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and node.value is not None:
                targets, value = [node.target], node.value
            if targets:
                bound = {n.value for t in targets for n in descendants(t) if isinstance(n, cst.Name)}
                read = {n.value for n in descendants(value) if isinstance(n, cst.Name)}
                if isinstance(node, cst.AugAssign):
                    read |= bound
                assignments.append((len(order) - 1, bound, read))
            return True

    unit.visit(_Collect())
    return order, assignments


def _flows_from(statement, compare, order, assignments) -> set[str]:
    """Names that hold a value computed from the product (made in `statement`) when the
    comparison (in `compare`) runs: assignments in between, in source order."""
    start = order.get(statement, -1)
    end = order.get(compare, len(order))
    tainted: set[str] = set()
    for position, bound, read in assignments:
        if position == start:
            tainted |= bound
        elif start < position <= end:
            if read & tainted:
                tainted |= bound
            else:
                tainted -= bound  # rebound to a value computed without the product
    return tainted


# ---------------------------------------------------------------------------------
# JG906


def _literal_float(node: cst.BaseExpression) -> float | None:
    return number(node)


@register
class LowPrecisionFiniteDifference(Rule):
    code = "JG906"
    name = "low-precision-finite-difference"
    summary = "A float32 finite difference with a small step: round-off swamps the difference"
    message = "finite difference with step {eps} in float32: round-off (~1e-7 relative) swamps the difference; use jax.grad, jaxguard.precision.check_grads (which re-evaluates in float64), or enable x64"
    default_on = False
    fix_kind = "suggest"
    what = """
        Flags a forward or central difference `(f(x + eps) - f(x)) / eps`,
        `(f(x + eps) - f(x - eps)) / (2 * eps)`, the half-step form
        `(f(x + eps/2) - f(x - eps/2)) / eps`, a directional one `(f(x + eps * v) - f(x)) / eps`,
        and the same with the evaluations bound to names first (`(bumped - base) / eps`),
        whose step `eps` is a literal (or a name bound to one) below 1e-2, in a module that uses
        JAX and never enables x64. `jax.test_util.check_grads` itself differences in the
        working dtype (it fails such float32 checks too); `jaxguard.precision.check_grads`
        re-evaluates the function in float64 for its numerical side.
    """
    why = """
        In float32, `f(x + eps) - f(x)` has an absolute round-off error of about
        `1e-7 * |f(x)|`; divided by `eps = 1e-4` that is an error of about `1e-3 * |f(x)|` in
        the derivative, and with `eps = 1e-6` the estimate is mostly noise. Automatic
        differentiation is exact up to round-off; a finite-difference check needs float64
        (or a step near `sqrt(float32 eps) ~ 3e-4` and loose tolerances).
    """
    example = """
        import jax.numpy as jnp

        def derivative(f, x):
            eps = 1e-5
            return (f(x + eps) - f(x)) / eps
    """
    use_instead = """
        import jax

        def derivative(f, x):
            return jax.grad(f)(x)
    """
    invalid = (
        "import jax.numpy as jnp\ndef d(x):\n    return (jnp.sin(x + 1e-4) - jnp.sin(x)) / 1e-4\n",
        "import jax.numpy as jnp\nH = 1e-6\ndef central(f, x):\n    return (f(x + H) - f(x - H)) / (2 * H)\n",
        "import jax\nimport jax.numpy as jnp\nclass Check:\n    def slope(self, params):\n        h = 1e-3\n"
        "        return (self.loss(params + h) - self.loss(params)) / h\n",
        "import jax.numpy as jnp\ndef make_fd(f):\n    def fd(x):\n        return (f(x + 1e-4) - f(x)) / 1e-4\n    return fd\n",
        "import jax\ndef fd(f, x, eps=1e-4):\n    return (f(x + eps) - f(x)) / eps\n",
        # the seed's check written with named evaluations
        "import jax.numpy as jnp\ndef check(loss, w):\n    eps = 1e-4\n    base = loss(w)\n"
        "    bumped = loss(w + eps)\n    return (bumped - base) / eps\n",
        # half-step central difference, and a directional one
        "import jax\ndef d(f, x, h=1e-3):\n    return (f(x + h / 2) - f(x - h / 2)) / h\n",
        "import jax\ndef jvp_fd(f, x, v, eps=1e-4):\n    return (f(x + eps * v) - f(x)) / eps\n",
        # the seed's own grad check: one element bumped, the loss evaluated again
        "import jax\ndef grad_check(model, data, loss_fn, i, j, eps=1e-3):\n"
        "    loss_original = loss_fn(model(data))\n    data_copy = data.at[i, j].add(eps)\n"
        "    loss_ptb = loss_fn(model(data_copy))\n    return (loss_ptb - loss_original) / eps\n",
    )
    valid = (
        "import jax.numpy as jnp\ndef d(f, x):\n    return (f(x + 0.1) - f(x)) / 0.1\n",
        "import numpy as np\ndef d(f, x):\n    return (f(x + 1e-6) - f(x)) / 1e-6\n",
        "import jax\njax.config.update('jax_enable_x64', True)\ndef d(f, x):\n    return (f(x + 1e-6) - f(x)) / 1e-6\n",
        "import jax.numpy as jnp\ndef d(f, x):\n    return (f(x + 1e-6) - g(x)) / 1e-6\n",
        "import jax.numpy as jnp\ndef rate(a, b, dt):\n    return (a - b) / 1e-3\n",
        # names bound to calls of other functions, or more than once: not one function's difference
        "import jax.numpy as jnp\ndef d(f, g, x):\n    a = f(x + 1e-4)\n    b = g(x)\n    return (a - b) / 1e-4\n",
        # a directional step whose scale is not the divisor
        "import jax\ndef d(f, x, v):\n    return (f(x + 1e-4 * v) - f(x)) / 2.0\n",
    )

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, cst.Divide):
            return
        difference = node.left
        if not (isinstance(difference, cst.BinaryOperation) and isinstance(difference.operator, cst.Subtract)):
            return
        # the two evaluations, written inline or bound to names first (`bumped - base`)
        plus, other = self._evaluation(difference.left), self._evaluation(difference.right)
        if plus is None or other is None:
            return
        ctx = self.ctx
        if ctx.code(plus.func).strip() != ctx.code(other.func).strip():
            return
        if len(plus.args) != 1 or len(other.args) != 1:
            return
        shifted, base = plus.args[0].value, other.args[0].value
        if not (isinstance(shifted, cst.BinaryOperation) and isinstance(shifted.operator, cst.Add)):
            # the seed's check: one element bumped first (`data.at[i, j].add(eps)`), then the
            # same function on the bumped copy, divided by the same step
            eps = node.right if self._perturbed_by(shifted, _code(ctx, node.right), 0) else None
            self._report_step(node, eps)
            return
        x_code = _code(ctx, shifted.left)
        step = shifted.right
        divisor = _code(ctx, node.right)
        if _code(ctx, base) == x_code:
            eps = self._forward_step(step, divisor)
        elif (
            isinstance(base, cst.BinaryOperation)
            and isinstance(base.operator, cst.Subtract)
            and _code(ctx, base.left) == x_code
            and _code(ctx, base.right) == _code(ctx, step)
        ):
            eps = self._central_step(step, divisor)
        else:
            return
        self._report_step(node, eps)

    def _report_step(self, node: cst.BinaryOperation, eps: cst.BaseExpression | None) -> None:
        ctx = self.ctx
        value = self._step_value(eps) if eps is not None else None
        if value is None or not (0 < value < 1e-2):
            return
        if "jax" not in ctx.source or module_x64_aware(ctx):
            return
        outer = ctx.statement_stack[0] if ctx.statement_stack else None
        if outer is not None and "float64" in ctx.code(outer):
            return  # the function works in float64 itself
        self.report(node, self.message.format(eps=ctx.code(eps).strip()))

    def _evaluation(self, node: cst.BaseExpression) -> cst.Call | None:
        """`f(x + eps)`, or a name bound once in this scope to such a call."""
        if isinstance(node, cst.Call):
            return node
        if isinstance(node, cst.Name):
            owner = self.ctx.scope.lookup(node.value)
            values = owner.values.get(node.value, []) if owner is not None else []
            if len(values) == 1 and isinstance(values[0], cst.Call):
                return values[0]
        return None

    def _perturbed_by(self, node: cst.BaseExpression, step: str, depth: int) -> bool:
        """Is `node` the step added to something: `x.at[i].add(eps)`, `x + eps`, or a name
        bound once to such a value (`data_copy = data.at[i, j].add(eps)`)?"""
        if depth > 2:
            return False
        if isinstance(node, cst.Name):
            owner = self.ctx.scope.lookup(node.value)
            values = owner.values.get(node.value, []) if owner is not None else []
            return len(values) == 1 and values[0] is not None and self._perturbed_by(values[0], step, depth + 1)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "add":
            return any(_code(self.ctx, arg.value) == step for arg in node.args)
        if isinstance(node, cst.Call) and node.args:  # `model(data_copy)`: the bumped input inside
            return any(self._perturbed_by(arg.value, step, depth + 1) for arg in node.args)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            return _code(self.ctx, node.right) == step or _code(self.ctx, node.left) == step
        return False

    def _forward_step(self, step: cst.BaseExpression, divisor: str) -> cst.BaseExpression | None:
        """The step size of `(f(x + s) - f(x)) / d`: s itself, or `eps` of a directional
        `s = eps * v` (then d is eps)."""
        for candidate in _step_factors(step):
            if _code(self.ctx, candidate) == divisor:
                return candidate
        return None

    def _central_step(self, step: cst.BaseExpression, divisor: str) -> cst.BaseExpression | None:
        """The step size of `(f(x + s) - f(x - s)) / d`: d is 2s (or 2 eps for s = eps * v),
        or s is the half-step d / 2."""
        for candidate in _step_factors(step):
            code = _code(self.ctx, candidate)
            if divisor in (f"2*{code}", f"{code}*2", f"2.0*{code}", f"{code}*2.0"):
                return candidate
        if isinstance(step, cst.BinaryOperation) and isinstance(step.operator, cst.Divide):
            if _literal_float(step.right) == 2.0 and _code(self.ctx, step.left) == divisor:
                return step.left  # `(f(x + h/2) - f(x - h/2)) / h`
        if isinstance(step, cst.BinaryOperation) and isinstance(step.operator, cst.Multiply):
            for half, other in ((step.left, step.right), (step.right, step.left)):
                if _literal_float(half) == 0.5 and _code(self.ctx, other) == divisor:
                    return other
        return None

    def _step_value(self, step: cst.BaseExpression) -> float | None:
        value = _literal_float(step)
        if value is not None:
            return value
        if isinstance(step, cst.Name):
            owner = self.ctx.scope.lookup(step.value)
            values = owner.values.get(step.value, []) if owner is not None else []
            if len(values) == 1 and values[0] is not None:
                return _literal_float(values[0])
            function = owner.function if owner is not None else None
            if not values and function is not None and isinstance(function.node, cst.FunctionDef):
                parameters = function.node.params
                for param in (*parameters.posonly_params, *parameters.params, *parameters.kwonly_params):
                    if param.name.value == step.value and param.default is not None:
                        return _literal_float(param.default)  # `def fd(f, x, eps=1e-4)`
        return None



def _code(ctx, node: cst.BaseExpression) -> str:
    """An expression's code without spaces or outer parentheses, to compare forms."""
    return ctx.code(node).strip().strip("()").replace(" ", "")


def _step_factors(step: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The step, and for a product `eps * v` its factors (a directional step's scale)."""
    factors = [step]
    if isinstance(step, cst.BinaryOperation) and isinstance(step.operator, cst.Multiply):
        factors += [step.left, step.right]
    return factors
