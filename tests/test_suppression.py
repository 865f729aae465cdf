"""Suppression comments, in the engine and against real ruff."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import codes

BASE = "import jax.numpy as jnp\nx = jnp.zeros(3)\n"


@pytest.mark.parametrize(
    "line",
    [
        "x[0] = 1.0  # noqa: JG301",
        "x[0] = 1.0  # noqa",
        "x[0] = 1.0  # NOQA:JG301,JG501",
        "x[0] = 1.0  # jaxguard: ignore[JG301]",
        "x[0] = 1.0  # jaxguard: ignore",
        "x[0] = 1.0  # type: ignore  # noqa: JG301",
    ],
)
def test_line_suppression(line):
    assert "JG301" not in codes(BASE + line + "\n")


@pytest.mark.parametrize(
    "line",
    ["x[0] = 1.0  # noqa: JG302", "x[0] = 1.0  # jaxguard: ignore[JG501]", "x[0] = 1.0  # noqa:", "x[0] = 1.0  # not a noqa here? no"],
)
def test_other_codes_do_not_suppress(line):
    # `# noqa:` with nothing after it suppresses everything, as in flake8
    expected = line.endswith("# noqa:")
    assert ("JG301" not in codes(BASE + line + "\n")) == expected


def test_noqa_on_any_line_of_a_multiline_statement():
    source = BASE + "print(\n    jnp.sum(\n        [1, 2, 3],\n    )\n)  # noqa: JG501\n"
    assert codes(source) == []
    source = BASE + "print(  # noqa: JG501\n    jnp.sum(\n        [1, 2, 3],\n    )\n)\n"
    assert codes(source) == []
    source = BASE + "print(\n    jnp.sum(\n        [1, 2, 3],\n    )\n)\ny = 1  # noqa: JG501\n"
    assert codes(source) == ["JG501"]


def test_file_level_suppression():
    assert codes("# jaxguard: noqa\n" + BASE + "x[0] = 1.0\nprint(jnp.sum([1]))\n") == []
    assert codes("# jaxguard: noqa: JG301\n" + BASE + "x[0] = 1.0\nprint(jnp.sum([1]))\n") == ["JG501"]
    assert codes("# jaxguard: ignore-file\n" + BASE + "x[0] = 1.0\n") == []
    # only a comment of its own line counts, not one behind code
    assert codes(BASE + "x[0] = 1.0\ny = 2  # jaxguard: noqa\n") == ["JG301"]


def test_noqa_inside_a_string_is_not_a_comment():
    assert codes(BASE + "x[0] = 1.0; s = '# noqa'\n") == ["JG301"]


RUFF = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")


@pytest.mark.skipif(not Path(RUFF).exists(), reason="ruff is not installed")
class TestRuffKeepsOurComments:
    SOURCE = (
        "# jaxguard: noqa: JG302\n"
        "import jax.numpy as jnp\n\n"
        "x = jnp.zeros(3)\n"
        "x[0] = 1.0  # noqa: JG301\n"
        "x[1] = 2.0  # jaxguard: ignore[JG301]\n"
    )

    def ruff(self, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
        path = tmp_path / "m.py"
        path.write_text(self.SOURCE)
        return subprocess.run(
            [RUFF, "check", "--no-cache", "--isolated", "--select", "ERA001,RUF100", "--fix", *extra, str(path)],
            capture_output=True, text=True, cwd=tmp_path,
        )

    def test_with_external_nothing_is_flagged_or_deleted(self, tmp_path):
        result = self.ruff(tmp_path, "--config", 'lint.external = ["JG"]')
        assert result.returncode == 0, result.stdout + result.stderr
        assert (tmp_path / "m.py").read_text() == self.SOURCE
        assert codes(self.SOURCE) == []

    def test_without_external_the_jaxguard_forms_survive(self, tmp_path):
        self.ruff(tmp_path)
        after = (tmp_path / "m.py").read_text()
        # ruff's RUF100 deletes a `# noqa: JG301` it does not know; our own forms survive
        assert "# jaxguard: ignore[JG301]" in after
        assert "# jaxguard: noqa: JG302" in after
