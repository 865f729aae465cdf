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
        # cells counted as ruff counts them: the markdown cell is cell 1
        "nb.ipynb:cell 3:3:1: JG301 " + lines[0].split(" JG301 ", 1)[1],
        "nb.ipynb:cell 5:5:1: JG301 " + lines[1].split(" JG301 ", 1)[1],
    ]


def test_magics_are_not_syntax_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "nb.ipynb", [("code", "%load_ext autoreload\n!nvidia-smi\nimport jax\nx = %env\nprint?")])
    code, out = run(capsys, "nb.ipynb")
    assert code == 0, out


def test_a_cell_magic_under_colab_form_comments_is_not_python(tmp_path, monkeypatch, capsys):
    # ColabDesign, ithaca: `#@title install` then `%%bash`; the cell is shell, skipped whole
    monkeypatch.chdir(tmp_path)
    cells = [
        ("code", "#@title install\n%%bash\nif [ ! -d params ]; then\n  pip -q install colabdesign\nfi"),
        ("code", "#@markdown\n%%html\n<style>\n  p { font-size: 16px; }\n</style>"),
        ("code", "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0"),
    ]
    _notebook(tmp_path / "nb.ipynb", cells)
    code, out = run(capsys, "nb.ipynb")
    assert "JG001" not in out and "nb.ipynb:cell 3:3:1: JG301" in out


def test_a_line_going_on_with_an_open_statement_is_no_magic(tmp_path, monkeypatch, capsys):
    # AF2Rank: a %-format continued onto a line that starts with `%`; IPython reads a magic
    # only where a statement starts
    monkeypatch.chdir(tmp_path)
    source = (
        "def dump(z, out):\n    for k, c in enumerate(z):\n        out.write(\"ATOM %5d %8.3f\\n\"\n"
        "                  % (k + 1, c))\n%time dump([1.0], open('a', 'w'))\nnote = \"\"\"\n%d items\n\"\"\""
    )
    _notebook(tmp_path / "nb.ipynb", [("code", source)])
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
    assert code == 1 and "nb.ipynb:cell 3:3:1: JG301" in out


def test_cached_notebook_findings_keep_their_cells(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "nb.ipynb", CELLS)
    first = main(["check", "nb.ipynb"]), capsys.readouterr().out
    second = main(["check", "nb.ipynb"]), capsys.readouterr().out
    assert first == second and "cell 5:5:1" in first[1]


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


def _annotation_target(out: str, text: str) -> list[str]:
    """The notebook-file text each GitHub annotation of `out` points at (line, columns)."""
    import re

    lines = text.splitlines()
    found = []
    for match in re.finditer(r"line=(\d+),col=(\d+),endLine=(\d+),endColumn=(\d+)", out):
        line, col, end_line, end_col = map(int, match.groups())
        assert line == end_line
        found.append(lines[line - 1][col - 1 : end_col - 1])
    return found


def test_github_and_sarif_point_at_the_notebooks_json_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = _notebook(tmp_path / "nb.ipynb", CELLS)
    text = path.read_text()
    code, out = run(capsys, "--output-format", "github", "nb.ipynb")
    assert code == 1
    assert _annotation_target(out, text) == ["x[0]", "y[1]"]  # the subscripts the findings name
    code, out = run(capsys, "--output-format", "sarif", "nb.ipynb")
    location = json.loads(out)["runs"][0]["results"][0]["locations"][0]
    region = location["physicalLocation"]["region"]
    assert text.splitlines()[region["startLine"] - 1].strip().startswith('"x[0] = 1.0"')
    assert location["logicalLocations"] == [{"name": "cell 3", "kind": "module"}]
    assert location["properties"] == {"cell": 3, "cellLine": 3, "cellColumn": 1}


def test_a_source_written_as_one_string_maps_onto_that_string(tmp_path, monkeypatch, capsys):
    # hand-written or compact notebooks: "source" is one string; escapes shift the columns
    monkeypatch.chdir(tmp_path)
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": 'import jax.numpy as jnp\nx = jnp.zeros(3)  # "zeros"\tok\nx[0] = 1.0\n'}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "one.ipynb").write_text(json.dumps(notebook))
    code, out = run(capsys, "--output-format", "github", "one.ipynb")
    assert code == 1
    assert _annotation_target(out, (tmp_path / "one.ipynb").read_text()) == ["x[0]"]


def test_sarif_uri_outside_the_run_directory_is_absolute_without_a_base(tmp_path, monkeypatch, capsys):
    (tmp_path / "src").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "src" / "lib.py").write_text("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n")
    monkeypatch.chdir(tmp_path / "run")
    code, out = run(capsys, "--output-format", "sarif", str(tmp_path / "src" / "lib.py"))
    artifact = json.loads(out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact["uri"].startswith("file:///") and "uriBaseId" not in artifact


IPYTHON_LINES = (
    "!pip install \\\n    jax \\\n    optax\n"  # a shell line continued by backslashes
    "import jax.numpy as jnp\n"
    "pip install flax\n"  # automagics: IPython runs them without %
    "timeit -n 5 jnp.ones(3)\n"
    "cd ..\n"
    "time = 5\n"  # Python as written: an assignment, not the magic
    "x = jnp.zeros(time)\n"
    "x[0] = 1.0"
)


def test_ipython_continuations_and_automagics_parse_and_survive_a_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = _notebook(tmp_path / "nb.ipynb", [("code", IPYTHON_LINES)])
    code, out = run(capsys, "nb.ipynb")
    assert code == 1 and "JG001" not in out
    assert "nb.ipynb:cell 1:10:1: JG301" in out
    code, out = run(capsys, "--fix", "nb.ipynb")
    fixed = nbformat.read(str(path), as_version=4).cells[0].source
    assert fixed == IPYTHON_LINES.replace("x[0] = 1.0", "x = x.at[0].set(1.0)")


def test_a_name_that_is_python_is_not_taken_for_an_automagic(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "nb.ipynb", [("code", "import jax.numpy as jnp\ndef run(x):\n    return x\nrun (jnp.zeros(2))\nx = jnp.zeros(2)\nx[0] = 1")])
    code, out = run(capsys, "nb.ipynb")
    assert "cell 1:6:1: JG301" in out and "JG001" not in out


def test_findings_left_after_a_fix_point_into_the_fixed_notebook(tmp_path, monkeypatch, capsys):
    # the JG101 fix adds `import jax` to cell 2: the finding left in cell 3 must not shift
    monkeypatch.chdir(tmp_path)
    _notebook(tmp_path / "nb.ipynb", [
        ("markdown", "# t"),
        ("code", "from jax import jit\n@jit\ndef f(x):\n    print(x)\n    return x"),
        ("code", "import numpy as np\n@jit\ndef g(x):\n    return x + np.random.rand()"),
    ])
    code, after_fix = run(capsys, "--fix", "--output-format", "github", "nb.ipynb")
    assert "import jax" in (tmp_path / "nb.ipynb").read_text()
    code, fresh = run(capsys, "--output-format", "github", "nb.ipynb")
    assert after_fix.strip() == fresh.strip() and "cell 3:4:" in fresh


def test_a_magic_name_that_opens_a_multiline_statement_is_python(tmp_path, monkeypatch, capsys):
    # `config` and `history` are IPython magics, but assigned to they are Python, and the
    # line alone does not compile because the statement goes on below
    monkeypatch.chdir(tmp_path)
    source = "import jax.numpy as jnp\nconfig = dict(\n    lr=1e-3,\n)\nhistory = [\n    1]\nx = jnp.zeros(2)\nx[0] = 1"
    _notebook(tmp_path / "nb.ipynb", [("code", source)])
    code, out = run(capsys, "nb.ipynb")
    assert code == 1 and "JG001" not in out and "nb.ipynb:cell 1:8:1: JG301" in out


def test_a_cell_indented_as_a_whole_runs_as_ipython_runs_it(tmp_path, monkeypatch, capsys):
    # IPython removes the first line's indentation from every line of the cell; findings
    # keep the columns of the cell as written, and a fix there is not written back
    monkeypatch.chdir(tmp_path)
    path = _notebook(tmp_path / "nb.ipynb", [
        ("code", "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0"),
        ("code", " y = jnp.zeros(2)\n for i in range(2):\n   y[i] = 1.0\n"),
    ])
    code, out = run(capsys, "nb.ipynb")
    assert code == 1 and "JG001" not in out
    assert "nb.ipynb:cell 1:3:1: JG301" in out and "nb.ipynb:cell 2:3:4: JG301" in out
    code, out = run(capsys, "--fix", "nb.ipynb")
    cells = nbformat.read(str(path), as_version=4).cells
    assert cells[0].source == "import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)"
    assert cells[1].source == " y = jnp.zeros(2)\n for i in range(2):\n   y[i] = 1.0\n"
    assert "nb.ipynb:cell 2:3:4: JG301" in out


def run_cells(tmp_path, capsys, cells):
    """Write `cells` as nb.ipynb and check it: (exit code, output)."""
    _notebook(tmp_path / "nb.ipynb", cells)
    return run(capsys, "nb.ipynb")


def test_a_global_goes_stale_in_a_notebook_only_if_the_function_runs_after_it_changed(tmp_path, monkeypatch, capsys):
    # cells run in order: a jitted function called, then its global rebound in a later cell,
    # is stale only if a later cell calls it again
    monkeypatch.chdir(tmp_path)
    cells = [
        ("code", "import jax\nimport jax.numpy as jnp\nframes = jnp.zeros(3)"),
        ("code", "@jax.jit\ndef infer(q):\n    return frames * q\nout = infer(1.0)"),
        ("code", "frames = jnp.ones(3)"),
    ]
    code, out = run_cells(tmp_path, capsys, cells)
    assert code == 0 and "JG102" not in out
    code, out = run_cells(tmp_path, capsys, [*cells, ("code", "again = infer(2.0)")])
    assert "nb.ipynb:cell 2:3:12: JG102" in out
    # the same code as a script (outside any package, imported by no module) is a whole
    # program too; as a module another one imports, a later caller gets the stale value
    (tmp_path / "mod.py").write_text("\n".join(source for _, source in cells) + "\n")
    code, out = run(capsys, "mod.py")
    assert "JG102" not in out
    (tmp_path / "use.py").write_text("import mod\n")
    code, out = run(capsys, "mod.py", "use.py")
    assert "mod.py:6:12: JG102" in out


def test_a_later_cell_runs_the_function_only_through_code_that_reaches_it(tmp_path, monkeypatch, capsys):
    # after the rebinding, later cells call a library object's methods and a list's: neither
    # can run the notebook's function; an object of a notebook class whose method calls it
    # does; a library object handed the function may or may not call it (unknown: silent)
    monkeypatch.chdir(tmp_path)
    cells = [
        ("code", "import jax\nimport optax\nscale = 1.0\nopt = optax.sgd(0.1)\nlosses = []"),
        ("code", "@jax.jit\ndef step(x):\n    return x * scale\ny = step(1.0)"),
        ("code", "scale = 2.0\nstate = opt.init(y)\nlosses.append(y)"),
    ]
    code, out = run_cells(tmp_path, capsys, cells)
    assert code == 0 and "JG102" not in out
    runner = ("code", "class Runner:\n    def go(self):\n        return step(3.0)\nr = Runner()\nr.go()")
    code, out = run_cells(tmp_path, capsys, [*cells, runner])
    assert "nb.ipynb:cell 2:3:16: JG102" in out
    handed = ("code", "loop = optax.inject_hyperparams(step)\nloop.init(y)")
    code, out = run_cells(tmp_path, capsys, [*cells, handed])
    assert "JG102" not in out


def test_a_global_goes_stale_only_where_the_same_compiled_function_runs_before_and_after_a_change(tmp_path, monkeypatch, capsys):
    # stale needs proof: a run of the compiled code, a new value, a run of the same code
    monkeypatch.chdir(tmp_path)
    head = ("code", "import jax\nimport optax\nbase_lr = 0.1\nopt = optax.sgd(base_lr)\n"
            "@jax.jit\ndef step(x):\n    return opt.update(x, None)[0]\ndef plain(x):\n    return step(x)")
    cases = {
        # a loop that rebinds the global to a new value each pass, and runs the step
        "for lr in [0.1, 0.2]:\n    opt = optax.sgd(lr)\n    y = step(1.0)": True,
        # ... through a function of the notebook that calls it
        "for lr in [0.1, 0.2]:\n    opt = optax.sgd(lr)\n    y = plain(1.0)": True,
        # each pass binds an equal value: the same expression of names the loop does not change
        "for i in range(3):\n    opt = optax.sgd(base_lr)\n    y = step(1.0)": False,
        # the rebinding follows a `break`: it never happens
        "for i in range(3):\n    y = step(1.0)\n    if i:\n        break\n        opt = optax.sgd(i)": False,
        # the step is defined again in each pass: each pass traces a new function
        "for lr in [0.1, 0.2]:\n    @jax.jit\n    def step(x):\n        return opt.update(x, None)[0]\n"
        "    opt = optax.sgd(lr)\n    y = step(1.0)": False,
        # ... but an inner loop runs the same one again after a change
        "for lr in [0.1, 0.2]:\n    @jax.jit\n    def step(x):\n        return opt.update(x, None)[0]\n"
        "    for k in range(2):\n        opt = optax.sgd(lr * k)\n        y = step(1.0)": True,
    }
    for source, stale in cases.items():
        code, out = run_cells(tmp_path, capsys, [head, ("code", source)])
        assert ("JG102" in out) == stale, source
    # run, changed, then run again: stale; defined again before the second run, or the second
    # run eager (not compiled): it reads the new value
    ran = ("code", "y = step(1.0)\nopt = optax.adam(0.1)")
    code, out = run_cells(tmp_path, capsys, [head, ran, ("code", "z = step(2.0)")])
    assert "nb.ipynb:cell 1:7:12: JG102" in out
    again = ("code", "@jax.jit\ndef step(x):\n    return opt.update(x, None)[0]\nz = step(2.0)")
    code, out = run_cells(tmp_path, capsys, [head, ran, again])
    assert "JG102" not in out
    compiled = ("code", "def direct(x):\n    return opt.update(x, None)[0]\ng = jax.jit(direct)\ny = g(1.0)\nopt = optax.adam(0.1)")
    code, out = run_cells(tmp_path, capsys, [head, compiled, ("code", "w = direct(2.0)")])
    assert "JG102" not in out
    code, out = run_cells(tmp_path, capsys, [head, compiled, ("code", "w = g(2.0)")])
    assert "nb.ipynb:cell 2:2:12: JG102" in out


def test_a_key_is_paired_within_a_cell_and_after_a_split_across_cells(tmp_path, monkeypatch, capsys):
    # one demo per cell: a seed drawn from again in a later cell is shared on purpose; two
    # draws in one cell, or a key used after it was split, are reported
    monkeypatch.chdir(tmp_path)
    cells = [
        ("code", "import jax\nkey = jax.random.PRNGKey(0)\nx = jax.random.normal(key, (3,))"),
        ("markdown", "Another experiment, the same seed"),
        ("code", "y = jax.random.uniform(key, (3,))\nprint(x, y)"),
    ]
    code, out = run_cells(tmp_path, capsys, cells)
    assert code == 0 and "JG60" not in out
    code, out = run_cells(tmp_path, capsys, [*cells[:2], ("code", "y = jax.random.uniform(key, (3,))\nz = jax.random.normal(key, (3,))\nprint(y, z)")])
    assert [line.split(": ")[0:2] for line in out.splitlines() if "JG" in line] == [["nb.ipynb:cell 3:2:5", "JG601 PRNG key 'key' is used again"]]
    # (the split's keys drawn from: a split whose keys are only printed draws nothing)
    code, out = run_cells(tmp_path, capsys, [("code", "import jax\nkey = jax.random.PRNGKey(0)\nk1, k2 = jax.random.split(key)\nprint(jax.random.normal(k1), k2)"),
                                             ("code", "y = jax.random.uniform(key, (3,))\nprint(y)")])
    assert "nb.ipynb:cell 2:1:5: JG602" in out
    code, out = run_cells(tmp_path, capsys, [("code", "import jax\nkey = jax.random.PRNGKey(0)\nk1, k2 = jax.random.split(key)\nprint(k1, k2)"),
                                             ("code", "y = jax.random.uniform(key, (3,))\nprint(y)")])
    assert "JG602" not in out
    # drawn from, then split (learned_optimization's notebook): a later cell's use repeats
    # the split's keys, as after a split alone
    code, out = run_cells(tmp_path, capsys, [
        ("code", "import jax\nkey = jax.random.PRNGKey(0)\nw = jax.random.normal(key, (3,))\nkeys = jax.random.split(key, 4)\nprint(w, jax.random.normal(keys[0]))"),
        ("code", "k1, key = jax.random.split(key)\nprint(jax.random.normal(k1), key)"),
    ])
    assert "nb.ipynb:cell 1:4:8: JG601" in out and "nb.ipynb:cell 2:1:11: JG602" in out
    # the same code as a module is one program: the second draw is reported
    (tmp_path / "mod.py").write_text("\n".join(source for kind, source in cells if kind == "code") + "\n")
    code, out = run(capsys, "mod.py")
    assert "mod.py:4:5: JG601" in out


def test_dummy_numbers_at_a_notebooks_top_level_are_templates(tmp_path, monkeypatch, capsys):
    # a notebook is never imported: every reader of its top-level names is in its cells, so
    # dummy inputs read only by an init whose output is thrown away correlate with nothing
    monkeypatch.chdir(tmp_path)
    cells = [
        ("code", "import jax"),
        ("code", "rng = jax.random.PRNGKey(42)\nx_dummy = jax.random.normal(rng, (8, 3))\n_, params = vdm.init_with_output({'sample': rng, 'params': rng}, x_dummy)"),
    ]
    code, out = run_cells(tmp_path, capsys, cells)
    assert code == 0 and "JG601" not in out
    # a later cell reads the dummy numbers as data: the key that made them seeded the params
    code, out = run_cells(tmp_path, capsys, [*cells, ("code", "print(x_dummy.mean())")])
    assert "nb.ipynb:cell 2:3:60: JG601" in out
    # as a module another one imports, a caller may read the top-level name
    (tmp_path / "mod.py").write_text("\n".join(source for _, source in cells) + "\n")
    (tmp_path / "user.py").write_text("from mod import x_dummy\nprint(x_dummy)\n")
    code, out = run(capsys, "mod.py", "user.py")
    assert "mod.py:4:60: JG601" in out
