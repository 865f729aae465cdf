"""Jupyter notebooks: checked cell by cell, magics masked, fixes written into the right cells."""

from __future__ import annotations

import json

import nbformat

from jaxguard.cli import main


def _notebook(path, cells, language="python"):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": language}
    for kind, source in cells:
        if kind == "code":
            cell = nbformat.v4.new_code_cell(source)
            cell.execution_count = 7
            cell.outputs = [nbformat.v4.new_output("stream", text="hello\n")]
            cell.metadata["tags"] = ["keep-me"]
        else:
            cell = nbformat.v4.new_markdown_cell(source)
        nb.cells.append(cell)
    nbformat.write(nb, str(path))
    return path


CELLS = [
    ("markdown", "# Title"),
    ("code", "%matplotlib inline\nimport jax.numpy as jnp\n!pip list"),
    ("code", "x = jnp.zeros(3)\nfiles = !ls\nx[0] = 1.0"),
    ("code", "%%bash\necho x[0] = 1"),
    ("code", "jnp.ones?\ny = jnp.ones(2)\nfor i in range(2):\n    %time y.sum()\ny[1] = 2.0"),
]


def run(capsys, *argv):
    code = main(["check", "--no-cache", *argv])
    return code, capsys.readouterr().out


def test_findings_per_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "nb.ipynb", CELLS)
    code, out = run(capsys, ".")
    lines = [line for line in out.splitlines() if "JG" in line]
    assert code == 1
    assert lines == [
        "nb.ipynb:cell 2:3:1: JG301 " + lines[0].split(" JG301 ", 1)[1],
        "nb.ipynb:cell 4:5:1: JG301 " + lines[1].split(" JG301 ", 1)[1],
    ]


def test_magics_are_not_syntax_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "nb.ipynb", [("code", "%load_ext autoreload\n!nvidia-smi\nimport jax\nx = %env\nprint?")])
    code, out = run(capsys, "nb.ipynb")
    assert code == 0, out


def test_fix_writes_the_right_cells_only(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = _notebook(tmp_path / "nb.ipynb", CELLS)
    before = json.loads(path.read_text())
    code, out = run(capsys, "--fix", "nb.ipynb")
    assert code == 0, out
    after = json.loads(path.read_text())
    assert after["metadata"] == before["metadata"]
    for old, new in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
    sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in after["cells"]]
    assert sources[0] == "# Title"
    assert sources[1] == "%matplotlib inline\nimport jax.numpy as jnp\n!pip list"
    assert sources[2] == "x = jnp.zeros(3)\nfiles = !ls\nx = x.at[0].set(1.0)"
    assert sources[3] == "%%bash\necho x[0] = 1"
    assert sources[4] == "jnp.ones?\ny = jnp.ones(2)\nfor i in range(2):\n    %time y.sum()\ny = y.at[1].set(2.0)"
    nbformat.validate(nbformat.read(str(path), as_version=4))
    # A second run changes nothing.
    text = path.read_text()
    assert run(capsys, "--fix", "nb.ipynb")[0] == 0
    assert path.read_text() == text


def test_clean_notebook_is_byte_identical_after_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = _notebook(tmp_path / "nb.ipynb", [("code", "import jax.numpy as jnp\nx = jnp.zeros(3)")])
    data = path.read_bytes()
    assert run(capsys, "--fix", "nb.ipynb")[0] == 0
    assert path.read_bytes() == data


def test_non_python_and_broken_notebooks(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "r.ipynb", [("code", "x[0] <- 1")], language="R")
    assert run(capsys, "r.ipynb")[0] == 0
    (tmp_path / "bad.ipynb").write_text("{not json")
    code, out = run(capsys, "bad.ipynb")
    assert code == 2 and out.startswith("bad.ipynb:1:1: JG002 not a valid notebook")
    assert "Traceback" not in out


def test_syntax_error_in_a_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "nb.ipynb", [("code", "import jax"), ("code", "def f(:\n    pass")])
    code, out = run(capsys, "nb.ipynb")
    assert code == 2 and out.startswith("nb.ipynb:cell 2:1:")


def test_notebook_on_stdin(tmp_path, monkeypatch, capsys):
    import io
    import sys

    monkeypatch.chdir(tmp_path)
    path = _notebook(tmp_path / "nb.ipynb", CELLS)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    code, out = run(capsys, "-", "--stdin-filename", "nb.ipynb")
    assert code == 1 and "nb.ipynb:cell 2:3:1: JG301" in out


def test_cached_notebook_findings_keep_their_cells(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "nb.ipynb", CELLS)
    first = main(["check", "nb.ipynb"]), capsys.readouterr().out
    second = main(["check", "nb.ipynb"]), capsys.readouterr().out
    assert first == second and "cell 4:5:1" in first[1]


def test_a_cells_last_expression_is_its_output_not_a_discarded_result(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _notebook(
        tmp_path / "nb.ipynb",
        [
            ("code", "import jax.numpy as jnp\nx = jnp.arange(3)\njnp.sort(x)"),  # displayed
            ("code", "jnp.sort(x)\ny = 1"),  # thrown away
            ("code", "x.at[0].set(5)\n"),  # displayed
        ],
    )
    code, out = run(capsys, "nb.ipynb")
    assert code == 1
    assert [line.split(": ")[0] for line in out.splitlines() if "JG302" in line] == ["nb.ipynb:cell 2:1:1"]
    # the same code in a .py file discards all three
    (tmp_path / "m.py").write_text("import jax.numpy as jnp\nx = jnp.arange(3)\njnp.sort(x)\njnp.sort(x)\ny = 1\nx.at[0].set(5)\n")
    code, out = run(capsys, "m.py")
    assert out.count("JG302") == 3
