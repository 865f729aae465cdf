"""Output formats: text, concise, json, github, sarif; --statistics."""

from __future__ import annotations

import json

import pytest

from jaxguard.cli import main

BUGGY = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx[0] = 1.0\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "buggy.py").write_text(BUGGY)
    (tmp_path / "ok.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv):
    code = main(["check", "--no-cache", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_text_and_concise(project, capsys):
    code, out, _ = run(capsys, "buggy.py")
    assert code == 1 and out.startswith("buggy.py:4:1: JG301 ")
    code, out, _ = run(capsys, "--output-format", "concise", "buggy.py")
    assert code == 1 and out.startswith("buggy.py:4:1: JG301 [*] ")
    assert "Found 1 error." in out


def test_json(project, capsys):
    code, out, _ = run(capsys, "--output-format", "json", ".")
    data = json.loads(out)
    assert code == 1 and [d["code"] for d in data] == ["JG301"]
    assert data[0]["path"] == "buggy.py" and data[0]["fixable"] is True


def test_github_annotations(project, capsys):
    code, out, _ = run(capsys, "--output-format", "github", "buggy.py")
    assert code == 1
    (line,) = out.splitlines()
    assert line.startswith("::error title=jaxguard (JG301),file=buggy.py,line=4,col=1,endLine=4,endColumn=")
    assert "::buggy.py:4:1: JG301 " in line


def test_github_escapes_newlines_and_percent():
    from jaxguard.lint.diagnostic import Diagnostic
    from jaxguard.lint.report import format_github

    line = format_github(Diagnostic("JG001", "syntax-error", "50% bad\nsecond", 1, 2, 1, 3, path="a,b:c.py"))
    assert "\n" not in line and "50%25 bad%0Asecond" in line and "file=a%2Cb%3Ac.py" in line


SARIF_REQUIRED = {
    "type": "object",
    "required": ["version", "runs", "$schema"],
    "properties": {
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "rules"],
                                "properties": {
                                    "rules": {
                                        "type": "array",
                                        "items": {"type": "object", "required": ["id", "shortDescription"]},
                                    }
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "message", "locations"],
                            "properties": {
                                "message": {"type": "object", "required": ["text"]},
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation", "region"],
                                                "properties": {
                                                    "region": {
                                                        "type": "object",
                                                        "required": ["startLine", "startColumn"],
                                                        "properties": {
                                                            "startLine": {"type": "integer", "minimum": 1},
                                                            "startColumn": {"type": "integer", "minimum": 1},
                                                        },
                                                    }
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def test_sarif(project, capsys):
    code, out, _ = run(capsys, "--output-format", "sarif", ".")
    log = json.loads(out)
    try:
        import jsonschema
    except ImportError:  # pragma: no cover
        pass
    else:
        jsonschema.validate(log, SARIF_REQUIRED)
    run_ = log["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert "JG301" in ids and "JG001" in ids and len(ids) == len(set(ids))
    jg301 = rules[ids.index("JG301")]
    assert jg301["help"]["markdown"].startswith("# JG301") and jg301["properties"]["fix"] == "autofix"
    # every rule's short description is a plain one-line summary, not a message template
    for rule in rules:
        short = rule["shortDescription"]["text"]
        assert short and "{" not in short and "\n" not in short and len(short) <= 110, (rule["id"], short)
    assert jg301["shortDescription"]["text"].startswith("In-place assignment to an immutable JAX array")
    (result,) = run_["results"]
    assert result["ruleId"] == "JG301" and run_["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "JG301"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "buggy.py"
    assert location["region"]["startLine"] == 4
    # The fix, as SARIF replacements, rebuilds what --fix writes.
    (change,) = result["fixes"][0]["artifactChanges"]
    text = BUGGY
    for replacement in sorted(change["replacements"], key=lambda r: -r["deletedRegion"]["charOffset"]):
        start = replacement["deletedRegion"]["charOffset"]
        text = text[:start] + replacement["insertedContent"]["text"] + text[start + replacement["deletedRegion"]["charLength"] :]
    assert main(["check", "--no-cache", "--fix", "-q", "buggy.py"]) == 0
    capsys.readouterr()
    assert (project / "buggy.py").read_text() == text


def test_sarif_clean_run_has_no_results(project, capsys):
    code, out, _ = run(capsys, "--output-format", "sarif", "ok.py")
    assert code == 0 and json.loads(out)["runs"][0]["results"] == []


def test_statistics(project, capsys):
    (project / "more.py").write_text(BUGGY + "y = jnp.ones(2)\ny[1] = 0.0\n")
    code, out, _ = run(capsys, "--statistics", ".")
    assert code == 1 and out.splitlines()[0] == "3\tJG301\t[*] in-place-update"
    code, out, _ = run(capsys, "--statistics", "--output-format", "json", ".")
    assert json.loads(out) == [{"code": "JG301", "name": "in-place-update", "count": 3, "fixable": True}]


def test_a_message_quoting_code_written_over_lines_is_one_line():
    # the consumer of a key written over four lines (fattorib/transformer's pjit of model.init)
    from tests.helpers import lint

    source = """
        import jax
        import functools
        from jax.experimental.pjit import pjit
        def setup(model, rng, x, spec):
            params = pjit(
                functools.partial(model.init, train=False),
                in_axis_resources=(None, None),
                out_axis_resources=(spec),
            )(rng, x)
            return params, jax.random.normal(rng)
    """
    messages = [d.message for d in lint(source) if d.code == "JG601"]
    assert messages and all("\n" not in m for m in messages)
    assert "pjit( functools.partial(model.init, train=False)" in messages[0]
