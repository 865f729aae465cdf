"""`jaxguard precision` entry: jaxguard.precision.cli.main(argv) -> int."""

import textwrap

import pytest

from jaxguard.precision.cli import main


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text(
        textwrap.dedent(
            """
            import jax.numpy as jnp

            def mlp(x, w):
                return jnp.tanh(x @ w)

            def shifted(x):
                return (x + 1e8) - 1e8

            def loss(x):
                return jnp.sum(jnp.sin(x) ** 2)

            def make_args():
                return (jnp.ones((4, 3)), jnp.ones((3, 2)) * 0.1)
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_ops_report_clean(project, capsys):
    assert main(["model:mlp", "--args", "model:make_args"]) == 0
    assert "check_ops(mlp)" in capsys.readouterr().out


def test_ops_report_with_failure_and_log(project, capsys):
    assert main(["model:shifted", "--shape", "8", "--path", "log.jsonl"]) == 1
    out = capsys.readouterr().out
    assert "first failure: sub at" in out and "model.py:8" in out
    assert (project / "log.jsonl").read_text().count("\n") == 1


def test_grads_and_divergence_modes(project, capsys):
    assert main(["model:loss", "--shape", "5,5", "--mode", "grads"]) == 0
    assert "probes passed" in capsys.readouterr().out
    # (x + 1e8) - 1e8 loses x op by op: beyond float32's tolerance, so the mode fails
    assert main(["model:shifted", "--shape", "4:float32", "--mode", "divergence"]) == 1
    assert "compilation" in capsys.readouterr().out
    assert main(["model:loss", "--shape", "4:float32", "--mode", "divergence"]) == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["model"], "expected module:function"),
        (["nosuchmodule:f", "--shape", "3"], "cannot import"),
        (["model:nope", "--shape", "3"], "has no attribute"),
        (["model:mlp"], "give the inputs"),
        (["model:mlp", "--shape", "4,x"], "bad --shape"),
        (["model:mlp", "--shape", "4,3", "--shape", "2,2"], "failed on these inputs"),
        (["model:mlp", "--args", "model:make_args", "--rtol", "1e-3"], "both --rtol and --atol"),
        (["model:mlp", "--mode", "nope"], "invalid choice"),
    ],
)
def test_bad_specs_exit_2_with_one_line(project, capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_bfloat16_shapes_and_nothing_checked(project, capsys):
    assert main(["model:loss", "--shape", "64,100:bfloat16"]) == 0
    assert "bfloat16[64, 100]" in capsys.readouterr().out
    assert main(["model:shifted", "--shape", "2097152"]) == 1  # 2**21 elements: every op skipped
    assert "nothing was checked: not a pass" in capsys.readouterr().out


def test_divergence_mode_fails_on_an_output_beyond_tolerance(project, capsys):
    assert main(["model:shifted", "--shape", "16", "--mode", "divergence"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: output(s) [0]" in out


def test_html_report_plots_every_checked_op_and_marks_failures(project, capsys):
    page = project / "report.html"
    assert main(["model:shifted", "--shape", "100", "--html", str(page)]) == 1
    text = page.read_text()
    summary = capsys.readouterr().out.splitlines()[0]
    assert "FAILED" in summary and summary in text
    # one point per checked op output, the failing one in red, named with its line
    assert text.count("<circle") == 2 and text.count('fill="#cc2222"') == 1
    assert "sub at " in text and "model.py:" in text and "<table>" in text
    assert main(["model:mlp", "--args", "model:make_args", "--html", str(project / "missing" / "r.html")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_the_verdict_comes_first(project, capsys):
    assert main(["model:mlp", "--args", "model:make_args"]) == 0
    assert capsys.readouterr().out.startswith("check_ops(mlp): passed:")
