"""Write rules/JGxxx.md from the rule classes (the single source of each rule's document)."""

from __future__ import annotations

from pathlib import Path

from jaxguard.lint.registry import all_rules

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


def main() -> None:
    RULES_DIR.mkdir(exist_ok=True)
    for code, rule in all_rules().items():
        (RULES_DIR / f"{code}.md").write_text(rule.document(), encoding="utf-8")
    print(f"wrote {len(all_rules())} rule documents to {RULES_DIR}")


if __name__ == "__main__":
    main()
