"""Turning diagnostics into what users read: text, concise, JSON, GitHub annotations, SARIF,
statistics, a summary line.

A notebook finding's path is `nb.ipynb:cell N` and its line is the line in that cell, so the
text formats read `nb.ipynb:cell N:line:col`; GitHub and SARIF point at the .ipynb file and
name the cell in the message.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

from jaxguard.lint.diagnostic import Diagnostic

OUTPUT_FORMATS = ("text", "concise", "json", "github", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/jaxguard/jaxguard"

_CELL = re.compile(r"^(?P<file>.*\.ipynb):cell (?P<cell>\d+)$")


def split_cell(path: str) -> tuple[str, int | None]:
    """('nb.ipynb', 3) for 'nb.ipynb:cell 3'; (path, None) otherwise."""
    match = _CELL.match(path)
    if match is None:
        return path, None
    return match["file"], int(match["cell"])


def sort_key(diagnostic: Diagnostic):
    file, cell = split_cell(diagnostic.path)
    return (file, cell or 0, diagnostic.line, diagnostic.column, diagnostic.code)


def format_text(diagnostic: Diagnostic) -> str:
    return f"{diagnostic.path}:{diagnostic.line}:{diagnostic.column}: {diagnostic.code} {diagnostic.message}"


def format_concise(diagnostic: Diagnostic) -> str:
    mark = " [*]" if diagnostic.fix is not None and diagnostic.fix.safe else ""
    return f"{diagnostic.path}:{diagnostic.line}:{diagnostic.column}: {diagnostic.code}{mark} {diagnostic.message}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(diagnostic: Diagnostic) -> str:
    """A GitHub Actions workflow command: an annotation on the file and line."""
    file, cell = split_cell(diagnostic.path)
    where = f"cell {cell}:" if cell is not None else ""
    line, column, end_line, end_column = _in_file(diagnostic)
    properties = (
        f"title={_escape_property(f'jaxguard ({diagnostic.code})')},file={_escape_property(file)},"
        f"line={line},col={column},endLine={end_line},endColumn={end_column}"
    )
    message = f"{file}:{where}{diagnostic.line}:{diagnostic.column}: {diagnostic.code} {diagnostic.message}"
    return f"::error {properties}::{_escape_data(message)}"


def _in_file(diagnostic: Diagnostic) -> tuple[int, int, int, int]:
    """(line, column, end line, end column) in the file: for a notebook, in its JSON text."""
    if diagnostic.file_region is not None:
        return diagnostic.file_region
    return diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column


def render(diagnostics: list[Diagnostic], output_format: str) -> str:
    if output_format == "json":
        return json.dumps([d.to_json() for d in diagnostics], indent=2)
    if output_format == "sarif":
        return json.dumps(sarif(diagnostics), indent=2)
    if output_format == "github":
        return "\n".join(format_github(d) for d in diagnostics)
    if output_format == "concise":
        return "\n".join(format_concise(d) for d in diagnostics)
    return "\n".join(format_text(d) for d in diagnostics)


# SARIF -----------------------------------------------------------------------------


def _uri(path: str) -> str:
    """A relative path as a URI reference against %SRCROOT% (the current directory)."""
    try:
        relative = Path(os.path.relpath(os.path.abspath(path))).as_posix()
    except ValueError:  # another drive
        return Path(os.path.abspath(path)).as_uri()
    if relative.startswith("../"):
        return Path(os.path.abspath(path)).as_uri()
    from urllib.parse import quote

    return quote(relative)


def _rule_descriptors() -> list[dict]:
    from jaxguard.lint.registry import ENGINE_CODES, all_rules

    descriptors = [
        {
            "id": code,
            "name": name,
            "shortDescription": {"text": name.replace("-", " ")},
            "defaultConfiguration": {"level": "error"},
            "properties": {"fix": "none", "default": "on"},
        }
        for code, name in sorted(ENGINE_CODES.items())
    ]
    for code, rule in all_rules().items():
        try:
            document = rule.document()
        except Exception:  # a half-written rule must not break the report
            document = rule.message
        descriptors.append(
            {
                "id": code,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": " ".join(str(getattr(rule, "what", rule.message)).split())},
                "help": {"text": document, "markdown": document},
                "defaultConfiguration": {"level": "error" if rule.default_on else "warning"},
                "properties": {"fix": rule.fix_kind, "default": "on" if rule.default_on else "opt-in", "tags": ["jax"]},
            }
        )
    return descriptors


def _region(diagnostic: Diagnostic) -> dict:
    line, column, end_line, end_column = _in_file(diagnostic)
    return {
        "startLine": max(1, line),
        "startColumn": max(1, column),
        "endLine": max(1, end_line),
        "endColumn": max(1, end_column),
    }


def _artifact(uri: str) -> dict:
    """An artifactLocation: relative to %SRCROOT% (the current directory), or an absolute
    URI on its own (SARIF allows uriBaseId only beside a relative reference)."""
    return {"uri": uri} if uri.startswith("file:") else {"uri": uri, "uriBaseId": "%SRCROOT%"}


def sarif(diagnostics: list[Diagnostic]) -> dict:
    """A SARIF 2.1.0 log: one run, every rule's metadata, results with fixes."""
    from jaxguard._version import __version__

    rules = _rule_descriptors()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    results = []
    for diagnostic in diagnostics:
        file, cell = split_cell(diagnostic.path)
        uri = _uri(file)
        message = diagnostic.message if cell is None else f"cell {cell}: {diagnostic.message}"
        location = {"physicalLocation": {"artifactLocation": _artifact(uri), "region": _region(diagnostic)}}
        if cell is not None:
            # the cell, and the finding's place inside it (the region is in the .ipynb's JSON)
            location["logicalLocations"] = [{"name": f"cell {cell}", "kind": "module"}]
            location["properties"] = {"cell": cell, "cellLine": diagnostic.line, "cellColumn": diagnostic.column}
        result = {
            "ruleId": diagnostic.code,
            "level": "error",
            "message": {"text": message},
            "locations": [location],
        }
        if diagnostic.code in index:
            result["ruleIndex"] = index[diagnostic.code]
        fix = diagnostic.fix
        if fix is not None and fix.edits and cell is None:
            result["fixes"] = [
                {
                    "description": {"text": (fix.description or "apply jaxguard's fix") + ("" if fix.safe else " (unsafe)")},
                    "artifactChanges": [
                        {
                            "artifactLocation": _artifact(uri),
                            "replacements": [
                                {
                                    "deletedRegion": {"charOffset": edit.start, "charLength": edit.end - edit.start},
                                    "insertedContent": {"text": edit.text},
                                }
                                for edit in fix.edits
                            ],
                        }
                    ],
                }
            ]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "jaxguard",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


# statistics and summary ----------------------------------------------------------


def statistics(diagnostics: list[Diagnostic]) -> str:
    counts = Counter((d.code, d.name) for d in diagnostics)
    fixable = {d.code for d in diagnostics if d.fixable}
    width = max((len(str(n)) for n in counts.values()), default=1)
    lines = []
    for (code, name), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        mark = "[*]" if code in fixable else "   "
        lines.append(f"{count:>{width}}\t{code}\t{mark} {name}")
    return "\n".join(lines)


def statistics_json(diagnostics: list[Diagnostic]) -> str:
    counts = Counter((d.code, d.name) for d in diagnostics)
    fixable = {d.code for d in diagnostics if d.fixable}
    rows = [
        {"code": code, "name": name, "count": count, "fixable": code in fixable}
        for (code, name), count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
    return json.dumps(rows, indent=2)


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
