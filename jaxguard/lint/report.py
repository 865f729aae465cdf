"""Turning diagnostics into what users read: text, JSON, statistics, a summary line."""

from __future__ import annotations

import json
from collections import Counter

from jaxguard.lint.diagnostic import Diagnostic

OUTPUT_FORMATS = ("text", "json")


def format_text(diagnostic: Diagnostic) -> str:
    return f"{diagnostic.path}:{diagnostic.line}:{diagnostic.column}: {diagnostic.code} {diagnostic.message}"


def render(diagnostics: list[Diagnostic], output_format: str) -> str:
    if output_format == "json":
        return json.dumps([d.to_json() for d in diagnostics], indent=2)
    return "\n".join(format_text(d) for d in diagnostics)


def statistics(diagnostics: list[Diagnostic]) -> str:
    counts = Counter((d.code, d.name) for d in diagnostics)
    fixable = {d.code for d in diagnostics if d.fixable}
    width = max((len(str(n)) for n in counts.values()), default=1)
    lines = []
    for (code, name), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        mark = "[*]" if code in fixable else "   "
        lines.append(f"{count:>{width}}\t{code}\t{mark} {name}")
    return "\n".join(lines)


def summary(diagnostics: list[Diagnostic], fixed: int, unsafe_hidden: int, fix_mode: bool) -> str:
    remaining = len(diagnostics)
    if remaining == 0 and fixed == 0:
        return "All checks passed!"
    noun = "error" if remaining == 1 else "errors"
    if fix_mode:
        text = f"Found {remaining + fixed} {('error' if remaining + fixed == 1 else 'errors')} ({fixed} fixed, {remaining} remaining)."
    else:
        text = f"Found {remaining} {noun}."
        fixable = sum(1 for d in diagnostics if d.fix is not None and d.fix.safe)
        if fixable:
            text += f"\n[*] {fixable} fixable with `jaxguard check --fix`."
    if unsafe_hidden:
        text += f"\n{unsafe_hidden} more fix{'es' if unsafe_hidden != 1 else ''} available with `--unsafe-fixes`."
    return text
