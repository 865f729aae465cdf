"""Every rule, as a unit: its documented and extra examples are executable tests.

- the flagged example (and every `invalid` snippet) produces the rule's code;
- the "use instead" example (and every `valid` snippet) does not;
- for autofix rules, fixing the flagged example gives code that parses, is clean of the
  rule, and does not change on a second fix;
- rules/JGxxx.md is the rule's generated document, kept in sync.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from helpers import ALL_RULES, clean, codes, fix

from jaxguard.lint.registry import all_rules

RULES = all_rules()
RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


def _cases(attribute: str):
    for code, rule in RULES.items():
        snippets = getattr(rule, attribute)
        if isinstance(snippets, str):
            snippets = (snippets,)
        for index, snippet in enumerate(snippets):
            yield pytest.param(code, snippet, id=f"{code}-{attribute}-{index}")


@pytest.mark.parametrize("code,snippet", [*_cases("example"), *_cases("invalid")])
def test_flagged(code, snippet):
    assert code in codes(snippet), f"{code} not reported for:\n{clean(snippet)}"


@pytest.mark.parametrize("code,snippet", [*_cases("use_instead"), *_cases("valid")])
def test_silent(code, snippet):
    found = codes(snippet)
    assert code not in found, f"{code} wrongly reported for:\n{clean(snippet)}"
    assert not [c for c in found if c in ("JG001", "JG003")], found


AUTOFIX = [code for code, rule in RULES.items() if rule.fix_kind == "autofix"]


@pytest.mark.parametrize("code", AUTOFIX)
@pytest.mark.parametrize("attribute", ["example", "invalid"])
def test_autofix_round_trip(code, attribute):
    rule = RULES[code]
    snippets = (rule.example,) if attribute == "example" else rule.invalid
    for snippet in snippets:
        fixed = fix(snippet, unsafe=True)
        cst.parse_module(fixed)  # the result parses
        assert fix(fixed, unsafe=True) == fixed, "a second fix changed the code"
        if code in codes(fixed):
            # only a finding that has no fix may remain (e.g. an operator with no .at[] form)
            from jaxguard.lint.engine import lint_source

            remaining = [d for d in lint_source(fixed, "example.py", ALL_RULES).diagnostics if d.code == code]
            assert all(d.fix is None for d in remaining), remaining


@pytest.mark.parametrize("code", AUTOFIX)
def test_fix_of_documented_example_matches_use_instead(code):
    rule = RULES[code]
    assert code in codes(rule.example)
    assert fix(rule.example, unsafe=True) == clean(rule.use_instead)


@pytest.mark.parametrize("code", list(RULES))
def test_document_in_rules_dir_is_current(code):
    path = RULES_DIR / f"{code}.md"
    assert path.is_file(), f"missing {path}; run `python tools/gen_rule_docs.py`"
    assert path.read_text(encoding="utf-8") == RULES[code].document(), f"{path} is stale; run `python tools/gen_rule_docs.py`"


@pytest.mark.parametrize("code", list(RULES))
def test_document_sections(code):
    text = RULES[code].document()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in text
    if RULES[code].fix_kind == "autofix":
        assert "## Fix safety" in text


def test_rule_catalog_is_current():
    # selection and cached runs read the catalog instead of importing the rules
    from jaxguard.lint.registry import CATALOG, catalog_text, discover_rules

    assert CATALOG.read_text(encoding="utf-8") == catalog_text(discover_rules()), "run `python tools/gen_rule_docs.py`"
