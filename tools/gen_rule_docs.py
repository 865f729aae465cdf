"""Write rules/JGxxx.md and the rule catalog (jaxguard/data/rules.json) from the rule classes,
the single source of each rule's document and metadata."""

from __future__ import annotations

from pathlib import Path

from jaxguard.lint.registry import CATALOG, catalog_text, discover_rules

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


def main() -> None:
    rules = discover_rules()
    RULES_DIR.mkdir(exist_ok=True)
    for code, rule in rules.items():
        (RULES_DIR / f"{code}.md").write_text(rule.document(), encoding="utf-8")
    CATALOG.write_text(catalog_text(rules), encoding="utf-8")
    print(f"wrote {len(rules)} rule documents to {RULES_DIR} and the catalog {CATALOG}")


if __name__ == "__main__":
    main()
