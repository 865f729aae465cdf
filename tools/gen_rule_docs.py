"""Write rules/JGxxx.md and the rule catalog (jaxguard/data/rules.json) from the rule classes,
the single source of each rule's document and metadata."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import jaxguard.checks
from jaxguard.lint.registry import CATALOG, REGISTRY, catalog_text

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


def rule_classes() -> dict:
    """Every rule class of every family module in jaxguard/checks."""
    for module in pkgutil.iter_modules(jaxguard.checks.__path__, "jaxguard.checks."):
        importlib.import_module(module.name)
    return dict(sorted(REGISTRY.items()))


def main() -> None:
    rules = rule_classes()
    RULES_DIR.mkdir(exist_ok=True)
    for code, rule in rules.items():
        (RULES_DIR / f"{code}.md").write_text(rule.document(), encoding="utf-8")
    CATALOG.write_text(catalog_text(rules), encoding="utf-8")
    print(f"wrote {len(rules)} rule documents to {RULES_DIR} and the catalog {CATALOG}")


if __name__ == "__main__":
    main()
