"""Rule implementations, one module per family. jaxguard/data/rules.json names the module of
each rule (see jaxguard.lint.registry); tools/gen_rule_docs.py finds them here."""
