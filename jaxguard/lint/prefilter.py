"""Cheap checks before libcst: a text prefilter and a CPython-parser guard.

1. Guard. libcst's native parser recurses without a limit and crashes the process (a
   segfault, not an exception) on pathologically nested code, and takes minutes on some
   long chains. CPython's own parser rejects such code in milliseconds, so a file is only
   given to libcst after `compile(...)` accepted it, or failed with an
   ordinary syntax error (libcst then reports it as JG001, as without the guard).

2. Prefilter. Almost every rule needs something from JAX: a traced function (a JAX /
   equinox / flax transform, or a configured traced decorator), a `jax.numpy` array, a PRNG
   key, a JAX config call. A file whose text mentions none of those names
   (case-insensitively, anywhere, comments included) cannot produce their findings. The
   rules that can fire without JAX have their own trigger words (JG801 compares against
   `math.nan` / `np.nan`: "nan"; JG302 any `.at[`). A file is skipped only if every enabled rule is known here
   (JAX_ONLY or RULE_TRIGGERS) and none of their words appears: a rule added later and not
   listed here switches the prefilter off rather than lose findings. That this changes no
   finding is tested over every rule's examples and the test snippets
   (tests/test_scale_prefilter.py). A file whose functions another module of the project
   traces or differentiates is always checked: it need not mention JAX itself.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

from jaxguard.lint.diagnostic import Diagnostic
from jaxguard.lint.registry import SYNTAX_ERROR

# Names whose absence from a file's text means no rule can fire (besides configured
# traced decorators). "jax" covers jaxlib, jax_enable_x64, JAX_ENABLE_X64, flax's imports.
BASE_TRIGGERS = ("jax", "jnp", "lax", "equinox", "eqx", "flax", "nnx")


@lru_cache(maxsize=64)
def _trigger_pattern(traced_decorators: tuple[str, ...]) -> re.Pattern:
    words = set(BASE_TRIGGERS)
    try:
        from jaxguard.lint import facts

        for table in ("TRACING_TRANSFORMS", "LAX_BODIES", "GRAD_TRANSFORMS"):
            for name in getattr(facts, table, ()):
                words.add(name.split(".", 1)[0])
    except Exception:  # pragma: no cover - facts is always importable
        pass
    for decorator in traced_decorators:
        words.add(decorator.rsplit(".", 1)[-1])
    return re.compile("|".join(sorted(map(re.escape, words))), re.IGNORECASE)


# Rules that need one of BASE_TRIGGERS (or a configured traced decorator) in the text.
JAX_ONLY = frozenset(
    """JG101 JG102 JG103 JG104 JG105 JG106 JG107 JG108 JG109 JG110 JG111 JG112 JG201 JG301 JG303
    JG401 JG501 JG502 JG601 JG602 JG603 JG604 JG701 JG802 JG803 JG804 JG901 JG902 JG903
    JG904 JG905 JG906""".split()
)
# Rules that can fire in a file that never mentions JAX, and a regular expression
# (case-insensitive) their findings need: JG801 compares against a NaN constant, JG302
# flags any bare `x.at[i].set(v)` statement.
RULE_TRIGGERS: dict[str, str] = {"JG801": r"nan", "JG302": r"\.\s*at\s*\["}


def needs_libcst(source: str, settings) -> bool:
    """False only if no enabled rule can fire on `source` (see the module docstring)."""
    if mentions_jax(source, tuple(settings.traced_decorators)):
        return True
    project = getattr(settings, "project", None)
    if project is not None and (project.roots or project.reached or project.differentiated):
        return True  # another module traces or differentiates functions of this one
    for code in settings.enabled:
        if code in JAX_ONLY:
            continue
        trigger = RULE_TRIGGERS.get(code)
        if trigger is None:
            return True  # a rule this module does not know about
        if re.search(trigger, source, re.IGNORECASE):
            return True
    return False


def mentions_jax(source: str, traced_decorators: tuple[str, ...] = ()) -> bool:
    return _trigger_pattern(tuple(traced_decorators)).search(source) is not None


def python_guard(source: str, path: str) -> tuple[bool, Diagnostic | None]:
    """(CPython compiled it, a JG001 for code too deep or complex to give to libcst).

    A full compile to bytecode, not just to an `ast` tree: it rejects the same deep code
    and is faster (building the tree's Python objects costs more than compiling). It also
    rejects a few things only the compiler sees (`return` outside a function): those files
    simply go to libcst, like any file CPython rejects.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. are not ours to print
            compile(source, path, "exec", dont_inherit=True)
    except (RecursionError, MemoryError):
        return False, too_complex(path, 1, 1)
    except SyntaxError as error:
        text = str(error.msg or "")
        if "too many nested" in text or "too complex" in text or "nested too deeply" in text:
            return False, too_complex(path, error.lineno or 1, error.offset or 1, text)
        return False, None
    except (ValueError, OverflowError):  # null bytes, absurd literals
        return False, None
    return True, None


def too_complex(path: str, line: int, column: int, reason: str = "nested too deeply") -> Diagnostic:
    code, name = SYNTAX_ERROR
    return Diagnostic(code, name, f"cannot parse: {reason} (Python itself cannot compile it)", line, column, line, column, path=path)
