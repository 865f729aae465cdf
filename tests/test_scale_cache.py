"""The result cache, `jaxguard clean`, the process pool and concurrent --fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


from jaxguard.cli import main
from jaxguard.lint.cache import Cache, cache_key
from jaxguard.lint.engine import LintSettings
from jaxguard.lint.files import check_file
from jaxguard.lint.parallel import Task, run
from jaxguard.lint.registry import all_rules

BUGGY = "import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1.0\n"
ALL = LintSettings(frozenset(all_rules()))


def test_cache_hit_gives_the_same_diagnostics(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(BUGGY)
    cache = Cache(tmp_path / "cache")
    first = check_file(str(path), ALL, cache=cache)
    second = check_file(str(path), ALL, cache=cache)
    assert not first.cached and second.cached
    assert first.diagnostics == second.diagnostics and second.diagnostics[0].fix is not None
    assert (tmp_path / "cache" / "CACHEDIR.TAG").exists() and (tmp_path / "cache" / ".gitignore").exists()


def test_key_depends_on_content_settings_and_path():
    base = cache_key("a.py", BUGGY, ALL)
    assert base == cache_key("a.py", BUGGY, ALL)
    assert base != cache_key("a.py", BUGGY + "\n", ALL)
    assert base != cache_key("b.py", BUGGY, ALL)
    assert base != cache_key("a.py", BUGGY, LintSettings(frozenset({"JG301"})))
    assert base != cache_key("a.py", BUGGY, LintSettings(ALL.enabled, ("mylib.traced",)))


def test_corrupt_entry_is_a_miss(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(BUGGY)
    cache = Cache(tmp_path / "cache")
    check_file(str(path), ALL, cache=cache)
    for entry in (tmp_path / "cache").rglob("*.json"):
        entry.write_text("{garbage")
    again = check_file(str(path), ALL, cache=cache)
    assert not again.cached and [d.code for d in again.diagnostics] == ["JG301"]


def test_cli_cache_no_cache_and_clean(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BUGGY)
    assert main(["check", "a.py"]) == 1
    first = capsys.readouterr().out
    assert (tmp_path / ".jaxguard_cache").is_dir()
    assert main(["check", "a.py"]) == 1 and capsys.readouterr().out == first
    # A config change is a different key: the ignored rule does not come back from the cache.
    assert main(["check", "--ignore", "JG301", "a.py"]) == 0
    capsys.readouterr()
    assert main(["clean"]) == 0 and "Removed cache" in capsys.readouterr().out
    assert not (tmp_path / ".jaxguard_cache").exists()
    assert main(["check", "--no-cache", "a.py"]) == 1
    assert not (tmp_path / ".jaxguard_cache").exists()
    assert main(["clean"]) == 0 and "No cache" in capsys.readouterr().out


def test_clean_refuses_a_directory_that_is_not_a_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "precious").mkdir()
    assert main(["clean", "--cache-dir", "precious"]) == 2
    assert (tmp_path / "precious").exists()


def test_fix_uses_the_cache_only_when_nothing_is_fixable(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BUGGY)
    assert main(["check", "a.py"]) == 1  # fills the cache with a fixable finding
    assert main(["check", "--fix", "a.py"]) == 0
    assert "x = x.at[0].set(1.0)" in (tmp_path / "a.py").read_text()


def _tree(root: Path, count: int) -> None:
    for i in range(count):
        (root / f"m{i}.py").write_text(BUGGY if i % 2 else "import numpy as np\nv = np.zeros(2)\nv[0] = 1\n")
    (root / "bad.py").write_text("def f(:\n")


def test_pool_gives_the_same_results_as_one_process(tmp_path):
    _tree(tmp_path, 12)
    tasks = [Task(str(p), ALL) for p in sorted(tmp_path.glob("*.py"))]
    serial = sorted(((r.path, r.error, tuple(map(repr, r.diagnostics))) for r in run(tasks, jobs=1)))
    pooled = sorted(((r.path, r.error, tuple(map(repr, r.diagnostics))) for r in run(tasks, jobs=2)))
    assert serial == pooled and len(serial) == 13


def test_pool_cli_output_is_sorted_and_stable(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _tree(tmp_path, 12)
    assert main(["check", "--no-cache", "-j", "2", "."]) == 2
    two = capsys.readouterr().out
    assert main(["check", "--no-cache", "-j", "1", "."]) == 2
    assert capsys.readouterr().out == two


def test_concurrent_fix_runs_agree(tmp_path):
    for i in range(20):
        (tmp_path / f"m{i}.py").write_text(BUGGY + f"y{i} = jnp.ones(2)\ny{i}[1] = 2.0\n")
    command = [sys.executable, "-m", "jaxguard", "check", "--no-cache", "--fix", "-q", "-j", "1", "."]
    processes = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [p.communicate() for p in processes]
    assert all("Traceback" not in out + err for out, err in outputs)
    assert all(p.returncode == 0 for p in processes), outputs
    for i in range(20):
        text = (tmp_path / f"m{i}.py").read_text()
        assert text == BUGGY.replace("x[0] = 1.0", "x = x.at[0].set(1.0)") + f"y{i} = jnp.ones(2)\ny{i} = y{i}.at[1].set(2.0)\n"
    assert not list(tmp_path.glob(".jaxguard-*.tmp"))


def test_fix_rereads_a_file_changed_underneath(tmp_path, monkeypatch):
    from jaxguard.lint import files

    path = tmp_path / "a.py"
    path.write_text(BUGGY)
    real = files.fix_text
    calls = []

    def racing_fix_text(source, *args, **kwargs):
        if not calls:  # another process fixes the file while we work on the old text
            path.write_text(BUGGY.replace("x[0] = 1.0", "x = x.at[0].set(1.0)"))
        calls.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(files, "fix_text", racing_fix_text)
    result = check_file(str(path), ALL, fix=True)
    assert not result.error and len(calls) == 2
    assert path.read_text() == BUGGY.replace("x[0] = 1.0", "x = x.at[0].set(1.0)")
