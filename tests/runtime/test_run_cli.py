"""`jaxguard run script.py`: guards on before the script runs, flags mirror enable()."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from jaxguard import runtime
from jaxguard.runtime.cli import main

SCRIPT = textwrap.dedent("""\
    import sys
    import jax
    import jax.numpy as jnp

    @jax.jit  # decorated at import time: still guarded under `jaxguard run`
    def f(x):
        return jnp.log(x)

    print("args", sys.argv[1:])
    print(float(f(float(sys.argv[1]))))
""")


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def test_run_catches_the_bug_with_the_script_line(script, capsys):
    assert main([str(script), "-1"]) == 1
    err = capsys.readouterr().err
    assert "NaNError" in err and "train.py:7: NaN produced by `log`" in err
    assert not runtime.is_enabled()  # guards switched off again afterwards


def test_run_correct_script_passes_arguments(script, capsys):
    assert main([str(script), "1", "--flag"]) == 0
    out = capsys.readouterr().out
    assert "args ['1', '--flag']" in out and "0.0" in out


def test_flags_mirror_enable(script, capsys):
    assert main(["--no-nans", str(script), "-1"]) == 0
    assert "nan" in capsys.readouterr().out


def test_exit_code_of_the_script(tmp_path):
    path = tmp_path / "exits.py"
    path.write_text("import sys\nsys.exit(3)\n")
    assert main([str(path)]) == 3


def test_missing_script_is_a_one_line_error(capsys):
    assert main(["no_such_script.py"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "jaxguard run: error: no such script: no_such_script.py"


def test_module_mode(tmp_path, monkeypatch, capsys):
    (tmp_path / "trainmod.py").write_text("print('module ran')\n")
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "trainmod"]) == 0
    assert "module ran" in capsys.readouterr().out
    assert main(["-m", "no_such_module_here"]) == 2
    assert capsys.readouterr().err.strip() == \
        "jaxguard run: error: no such module: no_such_module_here"


def test_bad_flag_value(script, capsys):
    assert main(["--transfers", "sometimes", str(script)]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_launcher_frames_are_not_shown(tmp_path):
    # Run through the installed `jaxguard` console script, as a user would: the
    # "called from" chain ends in the user's script, not in the launcher.
    launcher = shutil.which("jaxguard", path=os.path.dirname(sys.executable))
    if launcher is None:
        pytest.skip("no jaxguard console script next to this python")
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent("""\
        import jax.numpy as jnp

        def loss(x):
            return jnp.log(x)

        print(float(loss(jnp.float32(-1.))))
    """))
    result = subprocess.run([launcher, "run", str(path)], capture_output=True, text=True,
                            cwd=tmp_path, check=False)
    assert result.returncode == 1
    assert "train.py:4: NaN produced by `jnp.log`" in result.stderr
    assert "called from train.py:6 (<module>)" in result.stderr
    assert "bin/jaxguard" not in result.stderr and "jaxguard/runtime" not in result.stderr
