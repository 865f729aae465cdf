"""The one registry of rules, shared by the CLI, the flake8 plugin and the pre-commit hook.

A rule is one self-contained class: its code, name, message, default, fix kind, its
document (What it does / Why is this bad / Example / Use instead / Fix safety) and the
code examples that tests run. `rules/JGxxx.md` is generated from the class.

The engine does not import the rule families: `jaxguard/data/rules.json` (written with the
documents by tools/gen_rule_docs.py, checked by a test) lists each rule's code, name,
default, fix kind and the module that defines it. Selecting rules, keying the cache and
answering from it read only that catalog; `all_rules()` imports the modules it names.
"""

from __future__ import annotations

import difflib
import importlib
import json
import re
import textwrap
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import libcst as cst

    from jaxguard.lint.engine import RuleContext

FIX_KINDS = ("autofix", "suggest", "none")

# Codes the engine itself reports; always on, never selectable away from a run's exit code.
SYNTAX_ERROR = ("JG001", "syntax-error")
IO_ERROR = ("JG002", "unreadable-file")
INTERNAL_ERROR = ("JG003", "internal-error")
ENGINE_CODES = {code: name for code, name in (SYNTAX_ERROR, IO_ERROR, INTERNAL_ERROR)}


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one plain line: what the rule finds (its document, SARIF shortDescription)
    message: ClassVar[str]
    default_on: ClassVar[bool] = True
    # False: off in test files (the `test-files` setting) unless selected by its exact code
    in_tests: ClassVar[bool] = True
    fix_kind: ClassVar[str] = "none"
    # the JAX release that removed the API the rule reports: silent in a project whose
    # dependency files declare only older JAX versions (see jaxguard.lint.requirements)
    removed_in: ClassVar[tuple[int, ...] | None] = None
    # documentation, in ruff's layout
    what: ClassVar[str]
    why: ClassVar[str]
    example: ClassVar[str]  # flagged code; must produce exactly this rule's code
    use_instead: ClassVar[str]  # the corrected code; must produce nothing
    fix_safety: ClassVar[str] = ""
    references: ClassVar[tuple[str, ...]] = ()
    # more examples for the tests: code that must be flagged / must stay silent
    invalid: ClassVar[tuple[str, ...]] = ()
    valid: ClassVar[tuple[str, ...]] = ()

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx

    def report(self, node: cst.CSTNode, message: str | None = None, fix=None, statement=None) -> None:
        """Report `node`. `fix` is (steps, safe, description); `statement` overrides the
        statement whose lines a `# noqa` may sit on (for rules that report from `finish`)."""
        self.ctx.report(self, node, message or self.message, fix, statement)

    def finish(self) -> None:
        """Called once after the traversal, for rules that work from whole-module facts."""

    @classmethod
    def document(cls) -> str:
        default = "on" if cls.default_on else "opt-in (select it explicitly)"
        if cls.default_on and not cls.in_tests:
            default += "; off in test files and test functions (`def test_*`, `def *_test`) unless selected by its code"
        lines = [
            f"# {cls.code} `{cls.name}`",
            "",
            f"{cls.summary}.",
            "",
            f"Default: {default}. Fix: {cls.fix_kind}.",
            "",
            "## What it does",
            "",
            _dedent(cls.what),
            "",
            "## Why is this bad?",
            "",
            _dedent(cls.why),
            "",
            "## Example",
            "",
            "```python",
            _dedent(cls.example),
            "```",
            "",
            "## Use instead",
            "",
            "```python",
            _dedent(cls.use_instead),
            "```",
        ]
        if cls.removed_in is not None:
            version = ".".join(map(str, cls.removed_in))
            lines += [
                "", "## Pinned projects", "",
                f"Not reported in a project whose dependency files (setup.py, setup.cfg, pyproject.toml,"
                f" requirements*.txt, environment*.yml: the nearest folder above the file that has any)"
                f" declare only JAX versions before {version}, where the API still exists.",
            ]
        if cls.fix_safety:
            lines += ["", "## Fix safety", "", _dedent(cls.fix_safety)]
        if cls.references:
            lines += ["", "## References", ""] + [f"- {ref}" for ref in cls.references]
        return "\n".join(lines) + "\n"


def _dedent(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


REGISTRY: dict[str, type[Rule]] = {}


def register(rule: type[Rule]) -> type[Rule]:
    assert re.fullmatch(r"JG\d{3}", rule.code), rule.code
    assert rule.code not in REGISTRY, f"duplicate rule code {rule.code}"
    assert rule.fix_kind in FIX_KINDS, rule.fix_kind
    summary = getattr(rule, "summary", "")
    assert summary and "\n" not in summary and "{" not in summary, f"{rule.code} needs a one-line summary"
    REGISTRY[rule.code] = rule
    return rule


CATALOG = Path(__file__).resolve().parent.parent / "data" / "rules.json"


@dataclass(frozen=True)
class RuleEntry:
    """What selection and listing need to know about a rule, without importing it."""

    code: str
    name: str
    default_on: bool
    fix_kind: str
    module: str
    in_tests: bool = True

    @classmethod
    def of(cls, rule: type[Rule]) -> RuleEntry:
        return cls(rule.code, rule.name, rule.default_on, rule.fix_kind, rule.__module__, rule.in_tests)


def catalog_text(rules: dict[str, type[Rule]]) -> str:
    """The catalog file's content for these rule classes."""
    entries = {code: asdict(RuleEntry.of(rule)) for code, rule in sorted(rules.items())}
    return json.dumps(entries, indent=1) + "\n"


@lru_cache(maxsize=1)
def _catalog_file() -> dict[str, RuleEntry]:
    with open(CATALOG, encoding="utf-8") as handle:
        return {code: RuleEntry(**entry) for code, entry in json.load(handle).items()}


def catalog() -> dict[str, RuleEntry]:
    """Every rule by code: the catalog, plus rule classes registered at run time."""
    entries = dict(_catalog_file())
    entries.update((code, RuleEntry.of(rule)) for code, rule in REGISTRY.items())
    return dict(sorted(entries.items()))


def discover_rules() -> dict[str, type[Rule]]:
    """Every rule class of every module in jaxguard/checks, found without the catalog: what
    the catalog must list (tools/gen_rule_docs.py writes it from this; a test compares)."""
    import pkgutil

    checks = importlib.import_module("jaxguard.checks")
    for module in pkgutil.iter_modules(checks.__path__, "jaxguard.checks."):
        importlib.import_module(module.name)
    return dict(sorted(REGISTRY.items()))


def all_rules() -> dict[str, type[Rule]]:
    """Every rule class (importing the families the catalog names registers them)."""
    for module in sorted({entry.module for entry in _catalog_file().values()}):
        importlib.import_module(module)
    return dict(sorted(REGISTRY.items()))


def rule_by_name_or_code(key: str) -> type[Rule] | None:
    rules = all_rules()
    if key.upper() in rules:
        return rules[key.upper()]
    for rule in rules.values():
        if rule.name == key:
            return rule
    return None


class SelectionError(ValueError):
    pass


def _code_named(selector: str) -> str | None:
    """The code of a rule or engine code given by name (`prng-key-reuse` -> JG601)."""
    name = selector.strip().lower()
    for code, entry in catalog().items():
        if entry.name == name:
            return code
    return next((code for code, known in ENGINE_CODES.items() if known == name), None)


def _check_selector(selector: str, where: str) -> str:
    """A selector as a code, prefix or ALL: a rule's name stands for its exact code."""
    named = _code_named(selector)
    if named is not None:
        return named
    given = selector.strip()
    selector = given.upper()
    if selector == "ALL":
        return selector
    codes = list(catalog()) + list(ENGINE_CODES)
    if re.fullmatch(r"JG\d{0,3}", selector) and any(c.startswith(selector) for c in codes):
        return selector
    names = [entry.name for entry in catalog().values()]
    close = difflib.get_close_matches(selector, codes, n=1) or difflib.get_close_matches(given.lower(), names, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise SelectionError(f"unknown rule code, name or prefix {given!r} in {where}{hint}")


def resolve_selection(
    select: list[str] | None,
    ignore: list[str],
    extend_select: list[str],
    where: str = "--select/--ignore",
) -> set[str]:
    """The set of enabled codes. Opt-in rules need their exact code or ALL, never a prefix."""
    rules = catalog()
    chosen = [_check_selector(s, where) for s in (select if select is not None else [])]
    extra = [_check_selector(s, where) for s in extend_select]
    ignored = [_check_selector(s, where) for s in ignore]

    def matches(code: str, selector: str) -> bool:
        if selector == "ALL":
            return True
        if selector == code:
            return True
        return code.startswith(selector) and rules[code].default_on

    base = chosen if select is not None else None
    enabled = set()
    for code, rule in rules.items():
        if base is None:
            on = rule.default_on
        else:
            on = any(matches(code, s) for s in base)
        on = on or any(matches(code, s) for s in extra)
        if on and not any(_ignores(code, s) for s in ignored):
            enabled.add(code)
    return enabled


def quiet_in_tests(enabled: frozenset[str], select: list[str] | None, extend_select: list[str]) -> frozenset[str]:
    """The codes enabled in a test file: rules that are off in tests (`in_tests = False`, the
    PRNG rules: tests reuse keys on purpose) stay on only where named by their exact code."""
    rules = catalog()
    named = {_code_named(s) or s.strip().upper() for s in [*(select or ()), *extend_select]}
    return frozenset(code for code in enabled if code not in rules or rules[code].in_tests or code in named)


def _ignores(code: str, selector: str) -> bool:
    return selector == "ALL" or code.startswith(selector)
