"""The project index: findings that rest on what another module of the project does.

Each fact has a small package where it decides a finding, and a twin where it goes the other
way. Every front door (the CLI on the folder, on one file, on stdin; flake8; notebooks) sees
the same facts, and editing one module changes what another reports, with the cache on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def make(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def check(root: Path, *args: str, stdin: str | None = None) -> list[tuple[str, int, str]]:
    result = subprocess.run(
        [sys.executable, "-m", "jaxguard", "check", "--output-format", "json", *args],
        cwd=root, capture_output=True, text=True, input=stdin,
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return sorted((Path(d["path"]).as_posix(), d["line"], d["code"]) for d in json.loads(result.stdout))


def found(root: Path, *args: str) -> set[tuple[str, str]]:
    return {(path, code) for path, _, code in check(root, *args)}


RUNNER_KEYS = """
    import jax
    from pkg.rng_utils import split_key, finalize

    def reuse_after_helper(key):
        a = split_key(key)
        return a, jax.random.normal(key)

    def reuse_after_ignoring_helper(state, key):
        s = finalize(state, key)
        return s, jax.random.normal(key)
"""


def keys_package(tmp_path: Path, draws: bool = True) -> Path:
    body = "return jax.random.split(key)" if draws else "return key"
    return make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/rng_utils.py": f"""
            import jax

            def split_key(key):
                {body}

            def finalize(state, key):
                return state
        """,
        "pkg/runner.py": RUNNER_KEYS,
    })


def test_a_key_drawn_by_a_helper_in_another_module_is_consumed(tmp_path):
    root = keys_package(tmp_path)
    lines = check(root, "pkg")
    assert ("pkg/runner.py", 6, "JG601") in lines  # split_key drew from it
    assert not any(line == 10 for _, line, _ in lines)  # finalize never touches its key


def test_without_the_index_a_helper_that_ignores_the_key_is_a_possible_draw(tmp_path):
    # a possible draw beside a certain one is reported: the helper that ignores its key too
    root = keys_package(tmp_path)
    assert check(root, "pkg", "--no-project-index") == [("pkg/runner.py", 6, "JG601"), ("pkg/runner.py", 10, "JG601")]


def test_a_helper_whose_split_results_are_never_read_does_not_draw(tmp_path):
    # diffmah's `_t_peak` variants: `tpc_key, ran_key = split(ran_key)` and neither is used
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low.py": (
            "import jax\ndef dead(k, x):\n    sub, k = jax.random.split(k)\n    return x * 2\n"
            "def live(k, x):\n    sub, k = jax.random.split(k)\n    return x * jax.random.normal(sub)\n"
            # read only before the split (pcgrl-jax's reset_fn): the split is still dead
            "def late(k, x):\n    y = x * 2 if k is None else x\n    sub, k = jax.random.split(k)\n    return y\n"
            # read on the loop's next pass: drawn
            "def loop(k, xs):\n    out = []\n    for x in xs:\n        out.append(jax.random.normal(k))\n"
            "        k, sub = jax.random.split(k)\n    return out\n"
        ),
        "pkg/top.py": (
            "import jax\nfrom pkg.low import dead, live, late, loop\n"
            "def f(key, x):\n    y = dead(key, x)\n    return y, jax.random.uniform(key)\n"
            "def g(key, x):\n    y = live(key, x)\n    return y, jax.random.uniform(key)\n"
            "def h(key, x):\n    y = late(key, x)\n    return y, jax.random.uniform(key)\n"
            "def i(key, xs):\n    y = loop(key, xs)\n    return y, jax.random.uniform(key)\n"
        ),
    })
    lines = check(root, "pkg")
    assert ("pkg/top.py", 8, "JG601") in lines
    assert ("pkg/top.py", 14, "JG601") in lines
    assert not any(path == "pkg/top.py" and line in (5, 11) for path, line, _ in lines)


def test_a_helper_whose_split_keys_reach_no_draw_does_not_draw(tmp_path):
    # variational_filtering: `ensrf_steps` splits its key into per-step subkeys for a
    # deterministic `ensrf_step` that never reads its key; its stochastic twin draws from them
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/filters.py": (
            "import jax\nimport jax.numpy as jnp\nfrom jax import lax, random\n"
            "def ensrf_step(x, key):\n    return x * 0.5\n"
            "def enkf_step(x, key):\n    return x + random.normal(key, x.shape)\n"
            "def ensrf_steps(x, n, key):\n    key, *subkeys = random.split(key, num=n + 1)\n    subkeys = jnp.array(subkeys)\n"
            "    def inner(c, t):\n        return ensrf_step(c, subkeys[t]), None\n"
            "    return lax.scan(inner, x, jnp.arange(n))[0]\n"
            "def enkf_steps(x, n, key):\n    key, *subkeys = random.split(key, num=n + 1)\n    subkeys = jnp.array(subkeys)\n"
            "    def inner(c, t):\n        return enkf_step(c, subkeys[t]), None\n"
            "    return lax.scan(inner, x, jnp.arange(n))[0]\n"
            # split keys kept in a new container: followed no further, so a draw
            "def kept_steps(x, n, key):\n    subkeys = random.split(key, n)\n    held = {'keys': subkeys}\n    return x, held\n"
            # ... or handed back by a function that returns them as given (deepqmc's
            # `broadcast_to_devices`): they go on to whoever draws from them
            "from typing import TypeVar\nT = TypeVar('T')\ndef to_devices(tree: T) -> T:\n    return tree\n"
            "def device_keys(key):\n    keys = random.split(key, 2)\n    return to_devices(keys)\n"
            # ... or mapped over by a function, which draws from them (its result is not
            # the keys, whatever reads it)
            "def mapped_steps(x, n, key):\n    subkeys = random.split(key, n)\n"
            "    noise = jax.tree.map(lambda k: random.normal(k), subkeys)\n    return ensrf_step(x, noise)\n"
        ),
        "pkg/run.py": (
            "from jax import random\nfrom pkg.filters import device_keys, ensrf_steps, enkf_steps, kept_steps, mapped_steps\n"
            "def deterministic(x, key):\n    y = ensrf_steps(x, 3, key)\n    return y, random.normal(key, (3,))\n"
            "def stochastic(x, key):\n    y = enkf_steps(x, 3, key)\n    return y, random.normal(key, (3,))\n"
            "def kept(x, key):\n    y = kept_steps(x, 3, key)\n    return y, random.normal(key, (3,))\n"
            "def placed(key):\n    keys = device_keys(key)\n    return keys, random.normal(key, (3,))\n"
            "def mapped(x, key):\n    y = mapped_steps(x, 3, key)\n    return y, random.normal(key, (3,))\n"
        ),
    })
    lines = check(root, "pkg")
    assert ("pkg/run.py", 8, "JG601") in lines
    assert ("pkg/run.py", 11, "JG601") in lines
    assert ("pkg/run.py", 14, "JG601") in lines
    assert ("pkg/run.py", 17, "JG601") in lines
    assert not any(path == "pkg/run.py" and line == 5 for path, line, _ in lines)


def test_numbers_drawn_for_a_helper_that_reads_only_their_shape_are_a_template(tmp_path):
    # AdaptiveRNNWaveFunctions: a dummy input drawn from key1 goes only to a helper of another
    # module that hands it to a model's init; key1 drawn from again later is not a reuse
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": (
            "def setup(model, key, x):\n    return model.init(key, x)\n"
            "def sized(key, x):\n    return key, x.shape[0]\n"
            "def fit(model, key, x):\n    return model.apply(model.init(key, x), x)\n"
        ),
        "pkg/train.py": (
            "import jax\nfrom pkg.helpers import setup, sized, fit\n"
            "def a(model, key1, key2):\n    x = jax.random.randint(key1, (5, 10), 0, 2)\n"
            "    return setup(model, key2, x), jax.random.normal(key1, (3,))\n"
            "def b(model, key1, key2):\n    x = jax.random.normal(key1, (5,))\n"
            "    return sized(key2, x=x), jax.random.normal(key1, (3,))\n"
            # the helper also runs the model on x: its numbers are used
            "def c(model, key1, key2):\n    x = jax.random.normal(key1, (5,))\n"
            "    return fit(model, key2, x), jax.random.normal(key1, (3,))\n"
        ),
    })
    assert check(root, "pkg") == [("pkg/train.py", 11, "JG601")]


def test_modules_of_one_name_in_several_folders_are_each_their_folders_own(tmp_path):
    # neural-diffusion-processes: `from data import ...` in each experiment folder imports the
    # `data.py` beside it (exp_b's ignores the key); a script with none beside it (nor at the
    # project's root) imports one, not known which
    sample = "def sample(key, n):\n    return {}\n"
    run = "import jax\nfrom data import sample\ndef main(key):\n    return sample(key, 3), jax.random.uniform(key)\n"
    root = make(tmp_path, {
        "exp_a/data.py": "import jax\n" + sample.format("jax.random.normal(key, (n,))"),
        "exp_a/run.py": run,
        "exp_b/data.py": "import jax.numpy as jnp\n" + sample.format("jnp.zeros(n)"),
        "exp_b/run.py": run,
        "scripts/run_all.py": run,
    })
    # scripts/run_all.py's `sample` is not known: a possible draw, paired with the proven one
    assert check(root, ".") == [("exp_a/run.py", 4, "JG601"), ("scripts/run_all.py", 4, "JG601")]
    # one at the project's root is what a script elsewhere imports (run from the root)
    (root / "data.py").write_text("import jax.numpy as jnp\n" + sample.format("jnp.zeros(n)"))
    assert check(root, ".") == [("exp_a/run.py", 4, "JG601")]


def test_a_loop_over_a_constant_list_imported_from_another_module_is_a_sweep(tmp_path):
    sweep = (
        "import jax\nfrom configs import {}\n"
        "for name in {}:\n    f = jax.jit(lambda x: getattr(x, name)())\n    print(f(1.0))\n"
    )
    root = make(tmp_path, {
        "configs.py": "import os\nMETHODS = ['sum', 'max']\nPATHS = os.listdir('.')\n",
        "sweep.py": sweep.format("METHODS", "METHODS"),
        "walk.py": sweep.format("PATHS", "PATHS"),  # not a constant: each iteration could be the same
    })
    assert check(root, ".") == [("walk.py", 4, "JG109")]


def test_a_helper_of_another_module_that_only_reorders_with_the_key_reorders_paired_data_alike(tmp_path):
    # CrystalFormer's DPO: `shuffle(subkey, chosen)` and `shuffle(subkey, rejected)` must keep
    # the pairs aligned; one key on purpose
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils.py": (
            "import jax\nimport jax.numpy as jnp\ndef shuffle(key, data):\n"
            "    idx = jax.random.permutation(key, jnp.arange(len(data)))\n    return data[idx]\n"
            "def jitter(key, data):\n    return data + jax.random.normal(key, data.shape)\n"
            "def subset(key, data, n):\n    return jax.random.choice(key, data, (n,), replace=False)\n"
            "def resample(key, data, n):\n    return jax.random.choice(key, data, (n,))\n"
        ),
        "pkg/train.py": (
            "import jax\nfrom pkg.utils import shuffle, jitter, subset, resample\n"
            "def pairs(key, chosen, rejected):\n    return shuffle(key, chosen), shuffle(key, rejected)\n"
            "def noisy(key, a, b):\n    return jitter(key, a), jitter(key, b)\n"
            "def mixed(key, a):\n    return shuffle(key, a), jax.random.normal(key)\n"
            "def subsets(key, a, b):\n    return subset(key, a, 4), subset(key, b, 4)\n"
            "def resamples(key, a, b):\n    return resample(key, a, 4), resample(key, b, 4)\n"
        ),
    })
    assert check(root, "pkg") == [("pkg/train.py", 6, "JG601"), ("pkg/train.py", 8, "JG601"), ("pkg/train.py", 12, "JG601")]


def test_a_dict_of_arguments_spread_into_a_transformed_call_is_followed_no_further(tmp_path):
    # ithaca's saliency maps: `jax.grad(loss, (1, 2))(..., rng=rng, **loss_kwargs)`; the
    # summary of `loss_kwargs` (which parameters get its items is not known) crashed the run
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/saliency.py": (
            "import jax\ndef loss(x, rng, scale=1.0):\n    return (x * jax.random.normal(rng) * scale).sum()\n"
            "def saliency(x, rng, loss_kwargs=None):\n    return jax.grad(loss)(x, rng=rng, **loss_kwargs)\n"
        ),
        "pkg/run.py": (
            "import jax\nfrom pkg.saliency import saliency\n"
            "def f(key, x):\n    g = saliency(x, key, {'scale': 2.0})\n    return g, jax.random.uniform(key)\n"
        ),
    })
    assert ("pkg/run.py", 5, "JG601") in check(root, "pkg")


def test_a_key_inside_a_tuple_is_drawn_only_if_the_callee_opens_the_tuple(tmp_path):
    # hamon's resolve_entry_device(..., arrays=(state, key)) only asks whether any leaf is a tracer
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/device.py": (
            "import jax\ndef _has_tracer(trees):\n    return any(isinstance(l, jax.core.Tracer) for l in jax.tree.leaves(trees))\n"
            "def resolve(device, arrays=()):\n    return None if _has_tracer(arrays) else device\n"
            "def draw_pair(pair):\n    x, key = pair\n    return jax.random.normal(key, x.shape)\n"
        ),
        "pkg/run.py": (
            "import jax\nfrom pkg.device import resolve, draw_pair\n"
            "def looked_at(key, x, device):\n    dev = resolve(device, arrays=(x, key))\n"
            "    return jax.random.normal(key, (3,)), dev\n"
            "def drawn(key, x):\n    y = draw_pair((x, key))\n    return jax.random.normal(key, (3,)) + y\n"
        ),
    })
    lines = check(root, "pkg")
    assert ("pkg/run.py", 8, "JG601") in lines
    assert not any(path == "pkg/run.py" and line == 5 for path, line, _ in lines)


def test_a_key_passed_on_through_two_modules_is_followed(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low.py": "import jax\ndef draw(k):\n    return jax.random.normal(k)\ndef keep(k):\n    return 0\n",
        "pkg/mid.py": "from .low import draw, keep\ndef via(key):\n    return draw(key)\ndef idle(key):\n    return keep(key)\n",
        "pkg/top.py": (
            "import jax\nfrom pkg import mid\n"
            "def f(key):\n    x = mid.via(key)\n    return x, jax.random.uniform(key)\n"
            "def g(key):\n    x = mid.idle(key)\n    return x, jax.random.uniform(key)\n"
        ),
    })
    lines = check(root, "pkg")
    assert ("pkg/top.py", 5, "JG601") in lines
    assert not any(path == "pkg/top.py" and line == 8 for path, line, _ in lines)


X64_MODULE = "import jax.numpy as jnp\ndef f(n):\n    return jnp.zeros(n, jnp.float64)\n"


@pytest.mark.parametrize("where", [
    "init", "config-imported-by-init", "imported-module", "star-imported-by-init",
    "imports-a-module-requiring-x64", "init-warns-without-x64", "cli-enables-then-imports", "init-imports-every-submodule",
    "imports-a-module-that-imports-an-enabling-one-when-called", "init-warns-reading-the-flag-by-getattr",
    "a-library-module-enables-it",
])
def test_x64_enabled_at_import_elsewhere_in_the_package(tmp_path, where):
    enable = "import jax\njax.config.update('jax_enable_x64', True)\n"
    files = {"pkg/__init__.py": "", "pkg/ops.py": X64_MODULE}
    if where == "init":
        files["pkg/__init__.py"] = enable
    elif where == "config-imported-by-init":
        files["pkg/__init__.py"] = "from . import _config\n"
        files["pkg/_config.py"] = enable
    elif where == "star-imported-by-init":  # `from .sub import *` runs sub's import too
        files["pkg/__init__.py"] = "from pkg.sub import *\n"
        files["pkg/sub/__init__.py"] = "from pkg.sub.precision import *\n"
        files["pkg/sub/precision.py"] = "import jax\nif not jax.config.read('jax_enable_x64'):\n    " + enable.splitlines()[1] + "\n"
    elif where == "imports-a-module-requiring-x64":  # the import raises unless x64 is on
        files["pkg/time_utils.py"] = "from jax import config\nif not config.read('jax_enable_x64'):\n    raise RuntimeError('x64')\n"
        files["pkg/ops.py"] = "from pkg import time_utils\n" + X64_MODULE
    elif where == "init-warns-without-x64":  # the user is told at import: not silent
        files["pkg/__init__.py"] = (
            "import logging\nimport jax\nif jax.config.read('jax_enable_x64') is False:\n"
            "    logging.getLogger('pkg').warning('JAX is not using 64-bit precision')\n"
        )
    elif where == "init-warns-reading-the-flag-by-getattr":
        files["pkg/__init__.py"] = (
            "import warnings\nimport jax\nif not getattr(jax.config, 'jax_enable_x64', False):\n"
            "    warnings.warn('pkg requires 64-bit precision')\n"
        )
    elif where == "cli-enables-then-imports":  # the entry point turns x64 on, then loads the code
        files["pkg/cli.py"] = "def main():\n    import jax\n    jax.config.update('jax_enable_x64', True)\n    from pkg.ops import f\n    f(1.0)\n"
    elif where == "init-imports-every-submodule":  # families that register themselves on import
        files["pkg/__init__.py"] = (
            "import importlib\nimport pkgutil\nfor info in pkgutil.walk_packages(__path__, __name__ + '.'):\n"
            "    importlib.import_module(info.name)\n"
        )
        files["pkg/family.py"] = enable
    elif where == "imports-a-module-that-imports-an-enabling-one-when-called":  # a solver chosen at run time
        files["pkg/solvers.py"] = "def pick(name):\n    if name == 'gpu':\n        from pkg import gpu_solver\n        return gpu_solver\n"
        files["pkg/gpu_solver.py"] = "try:\n    " + enable.replace("\n", "\n    ").rstrip() + "\nexcept ImportError:\n    pass\n"
        files["pkg/ops.py"] = "from pkg import solvers\n" + X64_MODULE
    elif where == "a-library-module-enables-it":  # jaxon's batch_solve, which its optimizer imports
        files["pkg/batch_solve.py"] = enable
        files["pkg/optimizer.py"] = "from pkg import batch_solve\nfrom pkg.ops import f\n"
    else:
        files["pkg/setup.py"] = enable
        files["pkg/ops.py"] = "from pkg import setup\n" + X64_MODULE
    root = make(tmp_path, files)
    assert ("pkg/ops.py", "JG903") not in found(root, "pkg")
    assert ("pkg/ops.py", "JG903") in found(root, "pkg", "--no-project-index")


def test_a_package_that_warns_about_something_else_is_not_x64_aware(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "import warnings\nimport jax\nif not getattr(jax.config, 'jax_debug_nans', False):\n    warnings.warn('slow')\n",
        "pkg/ops.py": X64_MODULE,
    })
    assert ("pkg/ops.py", "JG903") in found(root, "pkg")


def test_x64_enabled_only_in_an_unrelated_module_does_not_count(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/ops.py": X64_MODULE,
        "scripts/run64.py": "import jax\njax.config.update('jax_enable_x64', True)\n",
    })
    assert ("pkg/ops.py", "JG903") in found(root, ".")


def test_x64_enabled_by_a_package_module_nothing_imports_does_not_count(tmp_path):
    # a workflow script shipped in the package: the library's own modules never load it
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/ops.py": X64_MODULE,
        "pkg/workflows/__init__.py": "",
        "pkg/workflows/run64.py": "import jax\njax.config.update('jax_enable_x64', True)\nfrom pkg.ops import f\n",
    })
    assert ("pkg/ops.py", "JG903") in found(root, ".")


def test_an_example_script_that_enables_x64_then_imports_the_package_runs_it_with_x64(tmp_path):
    # JAX-BO: every example enables x64 at its top, then imports jaxbo
    files = {
        "pkg/__init__.py": "",
        "pkg/ops.py": X64_MODULE,
        # (the package handed whole to a library: no call of `f` the callers rule could follow)
        "examples/fit.py": "from jax import config\nconfig.update('jax_enable_x64', True)\nimport pkg.ops as ops\nimport mylib\nmylib.fit(ops)\n",
    }
    (tmp_path / "a").mkdir()
    assert ("pkg/ops.py", "JG903") not in found(make(tmp_path / "a", files), ".")
    # imported before x64 is switched on (its import-time code runs with 32 bits), or by a
    # script that never switches it on: reported
    (tmp_path / "b").mkdir()
    files["examples/fit.py"] = "from pkg.ops import f\nfrom jax import config\nconfig.update('jax_enable_x64', True)\n"
    assert ("pkg/ops.py", "JG903") in found(make(tmp_path / "b", files), ".")


def test_a_function_called_only_where_x64_is_on_runs_with_it(tmp_path):
    # kalman-jax: `utils.input_admin` is called only by `sde_gp`, which enables x64 at import;
    # `g` is called from a module that does not
    files = {
        "pkg/__init__.py": "",
        "pkg/utils.py": X64_MODULE + "def g(n):\n    return jnp.ones(n, jnp.float64)\n",
        "pkg/model.py": "import jax\njax.config.update('jax_enable_x64', True)\nfrom pkg.utils import f\ndef fit(n):\n    return f(n)\n",
        "pkg/other.py": "from pkg.utils import g\ndef run(n):\n    return g(n)\n",
    }
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    lines = check(make(tmp_path / "a", files), "pkg")
    assert ("pkg/utils.py", 3, "JG903") not in lines
    assert ("pkg/utils.py", 5, "JG903") in lines
    # one caller where x64 is off is enough for it to be reported
    files["pkg/other.py"] = "from pkg.utils import f, g\ndef run(n):\n    return f(n), g(n)\n"
    assert ("pkg/utils.py", 3, "JG903") in check(make(tmp_path / "b", files), "pkg")
    # called only from tests that enable x64: how users call it is not known (jax-privacy's
    # dense.optimize)
    (tmp_path / "c").mkdir()
    files = {
        "pkg/__init__.py": "", "pkg/utils.py": X64_MODULE,
        "tests/test_utils.py": "import jax\njax.config.update('jax_enable_x64', True)\nfrom pkg.utils import f\ndef test_f():\n    assert f(2).dtype\n",
    }
    assert ("pkg/utils.py", 3, "JG903") in check(make(tmp_path / "c", files), ".")


def test_a_folder_without_init_inside_a_package_is_its_namespace_subpackage(tmp_path):
    # `pkg/utilities/dists.py` is `pkg.utilities.dists`: importing it runs pkg/__init__.py first
    files = {"pkg/__init__.py": "import jax\njax.config.update('jax_enable_x64', True)\n", "pkg/utilities/dists.py": X64_MODULE}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert ("pkg/utilities/dists.py", "JG903") not in found(make(tmp_path / "a", files), ".")
    # a folder without `__init__.py` outside any package is no part of it
    files = {"pkg/__init__.py": files["pkg/__init__.py"], "tools/dists.py": X64_MODULE}
    assert ("tools/dists.py", "JG903") in found(make(tmp_path / "b", files), ".")


def test_a_module_that_only_adapts_to_x64_does_not_count(tmp_path):
    # reading the flag to pick a dtype, without refusing or warning, proves nothing
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/notes.py": "from jax import config\nimport numpy as np\nDTYPE = np.float64\nif not config.read('jax_enable_x64'):\n    DTYPE = np.float32\n",
        "pkg/user.py": "from pkg import notes\n" + X64_MODULE,
    })
    assert ("pkg/user.py", "JG903") in found(root, "pkg")


def test_a_module_that_calls_a_project_x64_guard_is_aware(tmp_path):
    # contrax: `require_x64("lyap")` raises without x64, and the module's solvers call it
    guard = (
        "import jax\ndef require_x64(name):\n    if not jax.config.jax_enable_x64:\n"
        "        raise RuntimeError(name + ' needs jax_enable_x64')\n"
        "def describe(name):\n    return name\n"
    )
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/_precision.py": guard,
        "pkg/solve.py": "from pkg._precision import require_x64\n" + X64_MODULE + "def lyap(n):\n    require_x64('lyap')\n    return f(n)\n",
        # imports the guard's module but calls only another of its functions: not told
        "pkg/other.py": "from pkg._precision import describe\n" + X64_MODULE + "def name():\n    return describe('f')\n",
    })
    reported = found(root, "pkg")
    assert ("pkg/solve.py", "JG903") not in reported
    assert ("pkg/other.py", "JG903") in reported


def test_modules_a_program_imports_after_checking_x64_are_aware(tmp_path):
    # multiscale-closure: each script's main warns unless JAX_ENABLE_X64 is set
    # (`utils.check_environment_variables()`); the library modules it imports, directly or
    # not, are covered; a module no checking program imports is not
    root = make(tmp_path, {
        "utils.py": (
            "import logging\nimport os\ndef check_environment_variables():\n"
            "    if os.environ.get('JAX_ENABLE_X64') != 'True':\n"
            "        logging.warning('set JAX_ENABLE_X64=True')\n        return False\n    return True\n"
        ),
        "systems/__init__.py": "",
        "systems/diagnostics.py": X64_MODULE,
        "systems/spectra.py": "from systems.diagnostics import f\n" + X64_MODULE.replace("def f", "def g"),
        "loose.py": X64_MODULE,
        # a library function that checks covers itself only, not what its module imports
        "lib/__init__.py": "from lib import solve\n",
        "lib/helpers.py": X64_MODULE,
        "lib/solve.py": "import utils\nfrom lib import helpers\ndef lyap(n):\n    utils.check_environment_variables()\n    return n\n",
        "train.py": (
            "import utils\nfrom systems import spectra\ndef main():\n"
            "    if not utils.check_environment_variables():\n        raise SystemExit(1)\n    return spectra.g(3)\n"
        ),
    })
    reported = found(root, ".")
    assert ("systems/diagnostics.py", "JG903") not in reported
    assert ("systems/spectra.py", "JG903") not in reported
    assert ("loose.py", "JG903") in reported
    assert ("lib/helpers.py", "JG903") in reported


def test_a_package_that_tells_its_users_to_enable_x64_is_aware(tmp_path):
    # jaxht: the package docstring says float64 is opt-in and shows the config call; its
    # modules rely on the user. A package that says nothing of x64 is still told.
    root = make(tmp_path, {
        "told/__init__.py": '"""Spherical transforms.\n\nfloat64 is opt-in: call jax.config.update("jax_enable_x64", True)\nbefore creating arrays."""\n',
        "told/_nufft.py": X64_MODULE,
        "told/sub/__init__.py": "",
        "told/sub/ops.py": X64_MODULE,
        "silent/__init__.py": '"""Spherical transforms."""\n',
        "silent/_nufft.py": X64_MODULE,
        # omnibias: a `precision` module of the package says it; a test's docstring does not
        "byhelper/__init__.py": "from byhelper.precision import require_x64\n",
        "byhelper/precision.py": '"""This module does not flip the flag: enable it yourself,\njax.config.update("jax_enable_x64", True)."""\n',
        "byhelper/jet.py": X64_MODULE,
        "bytest/__init__.py": "",
        "bytest/ops.py": X64_MODULE,
        "bytest/tests/test_ops.py": '"""Run with jax_enable_x64 set."""\n',
    })
    reported = found(root, ".")
    assert ("told/_nufft.py", "JG903") not in reported
    assert ("told/sub/ops.py", "JG903") not in reported
    assert ("silent/_nufft.py", "JG903") in reported
    assert ("byhelper/jet.py", "JG903") not in reported
    assert ("bytest/ops.py", "JG903") in reported


def test_a_decorator_that_scopes_x64_around_each_call_makes_its_users_aware(tmp_path):
    # phasespace: `@with_float64` runs each call under `with jax.enable_x64():`; the helpers
    # only the decorated functions call run with x64 on too
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/precision.py": (
            "import functools\nimport jax\ndef with_float64(func):\n    @functools.wraps(func)\n"
            "    def wrapper(*args, **kwargs):\n        with jax.enable_x64():\n            return func(*args, **kwargs)\n"
            "    return wrapper\n"
        ),
        "pkg/kin.py": "import jax.numpy as jnp\ndef boost(x):\n    return jnp.asarray(x, jnp.float64) * 2\n",
        "pkg/core.py": (
            "import jax.numpy as jnp\nfrom pkg.precision import with_float64\nfrom pkg.kin import boost\n"
            "@with_float64\ndef generate(x):\n    return jnp.asarray(x, jnp.float64) + boost(x)\n"
        ),
        "pkg/other.py": X64_MODULE,
        # the decorator defined beside the function it wraps
        "pkg/kin2.py": "import jax.numpy as jnp\ndef boost2(x):\n    return jnp.asarray(x, jnp.float64) * 2\n",
        "pkg/core2.py": (
            "import functools\nimport jax\nfrom pkg.kin2 import boost2\ndef with_float64(func):\n"
            "    @functools.wraps(func)\n    def wrapper(*args, **kwargs):\n        with jax.enable_x64():\n"
            "            return func(*args, **kwargs)\n    return wrapper\n@with_float64\ndef generate2(x):\n    return boost2(x)\n"
        ),
    })
    assert sorted(found(root, "pkg")) == [("pkg/other.py", "JG903")]


@pytest.mark.parametrize("switch", [
    "def main():\n    import jax\n    jax.config.update('jax_enable_x64', True)\n",
    # the context manager a converter traces user code under
    "import contextlib\nimport jax\n@contextlib.contextmanager\ndef force_x64(on):\n"
    "    jax.config.update('jax_enable_x64', on)\n    yield\n",
])
def test_a_function_that_switches_x64_on_makes_its_package_x64_aware(tmp_path, switch):
    # whether x64 is on when the package's code runs is then not known: not reported
    root = make(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": X64_MODULE, "pkg/modes.py": switch})
    assert ("pkg/ops.py", "JG903") not in found(root, "pkg")
    # one that switches it off is no such sign
    root = make(tmp_path, {"pkg/modes.py": switch.replace("True", "False").replace("'jax_enable_x64', on", "'jax_enable_x64', False")})
    assert ("pkg/ops.py", "JG903") in found(root, "pkg")


def test_x64_enabled_by_one_test_module_holds_for_the_test_run(tmp_path):
    # pytest imports every test module before running any: one that enables x64 at import
    # turns it on for the others (scico's tests); the library's own modules are unaffected
    test_module = "import jax.numpy as jnp\ndef test_dtype():\n    assert jnp.zeros(2, jnp.float64).sum() == 0\n"
    files = {
        "pkg/__init__.py": "", "pkg/ops.py": X64_MODULE,
        "tests/test_a.py": "import jax\njax.config.update('jax_enable_x64', True)\ndef test_a():\n    pass\n",
        "tests/test_b.py": test_module,
    }
    root = make(tmp_path, files)
    assert found(root, ".", "--select", "JG903") == {("pkg/ops.py", "JG903")}
    del files["tests/test_a.py"]
    alone = tmp_path / "alone"
    alone.mkdir()
    assert ("tests/test_b.py", "JG903") in found(make(alone, files), ".", "--select", "JG903")


def static_package(tmp_path: Path, helper_body: str) -> Path:
    return make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/model.py": f"""
            import jax.numpy as jnp
            from flax import struct

            class Model(struct.PyTreeNode):
                links: tuple = struct.field(pytree_node=False)
                floating: bool = struct.field(pytree_node=False)
                masses: jnp.ndarray = None

            def number_of_links(model):
                {helper_body}
        """,
        "pkg/step.py": """
            import jax
            import jax.numpy as jnp
            from pkg.model import number_of_links

            @jax.jit
            def step(model, x):
                n = number_of_links(model)
                if model.floating:
                    x = x + 1
                return jnp.zeros(n) + x
        """,
    })


def test_static_results_and_static_fields_from_another_module_are_static(tmp_path):
    root = static_package(tmp_path, "return len(model.links)")
    assert check(root, "pkg", "--select", "ALL") == []


def test_a_helper_returning_an_array_stays_traced(tmp_path):
    root = static_package(tmp_path, "return jnp.sum(model.masses > 0)")
    assert ("pkg/step.py", "JG108") in found(root, "pkg", "--select", "ALL")


def test_a_helper_whose_result_comes_from_unknown_code_is_unknown(tmp_path):
    # `model.count_links()` is not an array operation: the helper's result is not proven traced
    root = static_package(tmp_path, "return model.count_links() + 1")
    assert ("pkg/step.py", "JG108") not in found(root, "pkg", "--select", "ALL")


def test_a_data_field_is_not_taken_for_static(tmp_path):
    root = static_package(tmp_path, "return len(model.links)")
    step = root / "pkg/step.py"
    step.write_text(step.read_text().replace("if model.floating:", "if model.masses:"))
    assert ("pkg/step.py", "JG106") in found(root, "pkg", "--select", "ALL")


JIT_ELSEWHERE = {
    "pkg/__init__.py": "",
    "pkg/net.py": "def apply_fn(params, x):\n    print(x)\n    return params * x\n",
    "pkg/runner.py": "import jax\nfrom .net import apply_fn\nupdate = jax.jit(apply_fn)\n",
}


def test_a_function_jitted_by_another_module_is_traced(tmp_path):
    root = make(tmp_path, JIT_ELSEWHERE)
    assert check(root, "pkg") == [("pkg/net.py", 2, "JG101")]


def test_a_function_reexported_by_a_star_import_is_resolved(tmp_path):
    files = {
        **JIT_ELSEWHERE,
        "pkg/__init__.py": "from pkg.net import *\n",
        "pkg/runner.py": "import jax\nimport pkg\nupdate = jax.jit(pkg.apply_fn)\n",
    }
    assert check(make(tmp_path, files), "pkg") == [("pkg/net.py", 2, "JG101")]


def test_a_function_nobody_jits_is_not_traced(tmp_path):
    root = make(tmp_path, {**JIT_ELSEWHERE, "pkg/runner.py": "from .net import apply_fn\nupdate = apply_fn\n"})
    assert check(root, "pkg") == []


def test_a_test_that_jits_a_library_function_does_not_make_it_traced(tmp_path):
    # a passing test shows the function works under jit; it is no evidence against it
    root = make(tmp_path, {**JIT_ELSEWHERE, "pkg/runner.py": "", "tests/test_net.py": "import jax\nfrom pkg.net import apply_fn\njax.jit(apply_fn)\n"})
    assert ("pkg/net.py", "JG101") not in found(root, ".")


def test_partial_arguments_of_a_transform_elsewhere_are_static(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/ops.py": "import jax.numpy as jnp\ndef pad(x, n):\n    return jnp.concatenate([x, jnp.zeros(n)])\n",
        "pkg/use.py": "import functools\nimport jax\nfrom pkg import ops\nf = jax.vmap(functools.partial(ops.pad, n=3))\n",
    })
    assert check(root, "pkg", "--select", "ALL") == []
    (root / "pkg/use.py").write_text("import jax\nfrom pkg import ops\nf = jax.vmap(ops.pad)\n")
    assert ("pkg/ops.py", "JG108") in found(root, "pkg", "--select", "ALL")


WHERE_LOSS = "import jax.numpy as jnp\ndef loss(x):\n    return jnp.where(x > 0, jnp.log(x), 0.0).sum()\n"


def test_a_where_is_reported_where_another_module_differentiates_it(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/losses.py": WHERE_LOSS,
        "pkg/train.py": "import jax\nfrom pkg.losses import loss\ndef step(x):\n    return jax.grad(loss)(x)\n",
    })
    assert found(root, "pkg", "--select", "JG802") == {("pkg/losses.py", "JG802")}


def test_a_where_nobody_differentiates_is_silent(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/losses.py": WHERE_LOSS,
        "pkg/train.py": "import jax\nfrom pkg.losses import loss\nstep = jax.jit(loss)\n",
    })
    assert ("pkg/losses.py", "JG802") not in found(root, "pkg", "--select", "JG802")


# --- front doors --------------------------------------------------------------------------


def test_one_file_on_the_command_line_sees_the_whole_project(tmp_path):
    root = keys_package(tmp_path)
    folder = [f for f in check(root, "pkg") if f[0] == "pkg/runner.py"]
    assert check(root, "pkg/runner.py") == folder
    assert check(root / "pkg", "runner.py") == [("runner.py", line, code) for _, line, code in folder]


def test_stdin_with_a_filename_sees_the_project_and_its_unsaved_text(tmp_path):
    root = keys_package(tmp_path)
    text = (root / "pkg/runner.py").read_text()
    assert check(root, "-", "--stdin-filename", "pkg/runner.py", stdin=text) == [("pkg/runner.py", 6, "JG601")]


@pytest.mark.skipif(not (BIN / "flake8").exists(), reason="flake8 is not installed")
def test_flake8_on_one_file_reports_what_the_cli_reports_on_the_folder(tmp_path):
    root = keys_package(tmp_path)
    result = subprocess.run(
        [str(BIN / "flake8"), "--select", "JG", "--format", "%(path)s:%(row)d:%(code)s", "pkg/runner.py"],
        cwd=root, capture_output=True, text=True,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.split() == ["pkg/runner.py:6:JG601"]


def test_a_notebook_in_the_project_uses_its_modules(tmp_path):
    root = keys_package(tmp_path)
    cell = "import jax\nfrom pkg.rng_utils import finalize, split_key\nkey = jax.random.key(0)\n"
    # (draws are paired within a cell)
    cells = [cell, "s = finalize(None, key)\ny = split_key(key)\nz = jax.random.normal(key)\nprint(s, y, z)\n"]
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in cells],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
    }
    (root / "explore.ipynb").write_text(json.dumps(notebook))
    result = subprocess.run([sys.executable, "-m", "jaxguard", "check", "explore.ipynb", "-q"], cwd=root, capture_output=True, text=True)
    # one reuse: the normal after split_key drew; finalize never touches its key
    assert result.stdout.split(":")[:3] == ["explore.ipynb", "cell 2", "3"], result.stdout
    assert result.stdout.count("JG601") == 1 and "consumed by split_key" in result.stdout


# --- never stale ------------------------------------------------------------------------------


def test_editing_one_module_changes_what_another_reports_with_the_cache_on(tmp_path):
    root = keys_package(tmp_path)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert ("pkg/runner.py", 6, "JG601") in check(root, "pkg", *cache)
    helper = root / "pkg/rng_utils.py"
    original = helper.read_text()
    helper.write_text(original.replace("return jax.random.split(key)", "return None"))
    assert ("pkg/runner.py", 6, "JG601") not in check(root, "pkg", *cache)
    assert ("pkg/runner.py", 6, "JG601") not in check(root, "pkg/runner.py", *cache)  # one file, same facts
    helper.write_text(original)
    assert ("pkg/runner.py", 6, "JG601") in check(root, "pkg/runner.py", *cache)
    assert (tmp_path / "cache" / "index").is_dir()


def test_a_key_handed_through_a_gradient_to_a_haiku_apply_in_another_module_is_a_maybe_draw(tmp_path):
    # learned_optimization's `common.update`: `jax.value_and_grad(loss)(params, key, batch)`,
    # and `loss` hands the key to `net.apply(params, key, x)`, which draws only if the model
    # has stochastic layers; the same flow in one module is never paired with another use
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/common.py": (
            "import jax\nimport haiku as hk\n"
            "def loss(params, key, batch):\n    return hk.transform(forward).apply(params, key, batch).sum()\n"
            "def update(params, key, batch):\n    return jax.value_and_grad(loss)(params, key, batch)\n"
            "def noisy(params, key, batch):\n    return jax.grad(lambda p: (p * jax.random.normal(key)).sum())(params)\n"
            "def noisy_update(params, key, batch):\n    return jax.value_and_grad(noisy)(params, key, batch)\n"
        ),
        "pkg/train.py": (
            "import jax\nfrom pkg import common\n"
            "def run(net, key, batch):\n    params = net.init(key, batch)\n    return common.update(params, key, batch)\n"
            "def run_noisy(net, key, batch):\n    params = net.init(key, batch)\n    return common.noisy_update(params, key, batch)\n"
        ),  # (its text never names jax.random: the draws are all the project's)
    })
    lines = check(root, "pkg")
    assert not any(path == "pkg/train.py" and line == 5 for path, line, _ in lines)
    assert ("pkg/train.py", 8, "JG601") in lines


def test_the_project_view_is_part_of_the_result_cache_key():
    from jaxguard.lint.cache import cache_key
    from jaxguard.lint.project import Callee, ProjectView
    from jaxguard.lint.settings import LintSettings

    alone = LintSettings(frozenset({"JG601"}))
    drawn = LintSettings(frozenset({"JG601"}), project=ProjectView(module="m", callees=(Callee("a.f", ("key",), False, (("key", "draws"),), False, False, ()),)))
    ignored = LintSettings(frozenset({"JG601"}), project=ProjectView(module="m", callees=(Callee("a.f", ("key",), False, (("key", "ignores"),), False, False, ()),)))
    keys = {cache_key("m.py", b"x", settings) for settings in (alone, drawn, ignored)}
    assert len(keys) == 3


def test_a_file_that_does_not_parse_leaves_the_rest_of_the_index_working(tmp_path):
    root = keys_package(tmp_path)
    (root / "pkg/broken.py").write_text("def f(:\n")
    (root / "pkg/binary.py").write_bytes(b"\x00\x01")
    lines = check_any(root, "pkg")
    assert ("pkg/runner.py", 6, "JG601") in lines


def check_any(root: Path, *args: str):
    result = subprocess.run([sys.executable, "-m", "jaxguard", "check", "--output-format", "json", *args], cwd=root, capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    return sorted((Path(d["path"]).as_posix(), d["line"], d["code"]) for d in json.loads(result.stdout))


def test_a_classmethod_of_another_module_binds_cls(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/dist.py": (
            "import jax\nclass Probabilities:\n    @classmethod\n    def from_random(cls, rng, n):\n"
            "        return cls(jax.random.normal(rng, (n,)))\n"
        ),
        "pkg/mix.py": (
            "import jax\nfrom pkg.dist import Probabilities\ndef make(key):\n"
            "    a = Probabilities.from_random(key, 3)\n    return a, jax.random.uniform(key)\n"
        ),
    })
    assert check(root, "pkg") == [("pkg/mix.py", 5, "JG601")]


def test_the_index_lives_in_the_tagged_cache_and_clean_deletes_it(tmp_path):
    root = keys_package(tmp_path)
    subprocess.run([sys.executable, "-m", "jaxguard", "check", "pkg", "--fix"], cwd=root, capture_output=True)
    cache = root / ".jaxguard_cache"
    assert (cache / "CACHEDIR.TAG").is_file() and (cache / ".gitignore").is_file()
    assert list((cache / "index").glob("*.json"))
    assert subprocess.run([sys.executable, "-m", "jaxguard", "clean"], cwd=root, capture_output=True).returncode == 0
    assert not cache.exists()


def test_a_users_folder_named_like_the_cache_is_not_written_into(tmp_path):
    root = keys_package(tmp_path)
    mine = root / ".jaxguard_cache"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert ("pkg/runner.py", 6, "JG601") in check(root, "pkg")
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_x64_enabled_by_a_config_callback_registered_at_import(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "from . import flags\n",
        "pkg/flags.py": (
            "import os\nfrom jax import config as jax_config\n\ndef _update_x64(val):\n"
            "    jax_config.update('jax_enable_x64', val)\n\n"
            "define('ENABLE_X64', default=os.environ.get('X', True), callback=_update_x64)\n"
        ),
        "pkg/ops.py": X64_MODULE,
    })
    assert ("pkg/ops.py", "JG903") not in found(root, "pkg")
    (root / "pkg/flags.py").write_text("from jax import config\nconfig.update('jax_enable_x64', False)\n")
    assert ("pkg/ops.py", "JG903") in found(root, "pkg")


def test_a_project_class_whose_constructor_draws_is_a_draw(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/acting.py": (
            "import jax\nclass Evaluator:\n    def __init__(self, env, key):\n        self.keys = jax.random.split(key, 4)\n"
            "class Holder:\n    def __init__(self, key):\n        self.key = None\n"
        ),
        "pkg/train.py": (
            "import jax\nfrom pkg.acting import Evaluator, Holder\n"
            "def run(env, eval_key):\n    keys = jax.random.split(eval_key)\n    ev = Evaluator(env, eval_key)\n    return keys, ev\n"
            "def keep(key):\n    h = Holder(key)\n    return h, jax.random.normal(key)\n"
        ),
    })
    assert check(root, "pkg") == [("pkg/train.py", 5, "JG602")]


def test_a_helper_that_returns_the_key_it_drew_from(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/sampling.py": (
            "import jax\ndef sample(key, shape):\n    x = jax.random.normal(key, shape)\n    return x, key\n"
            "def fresh(key, shape):\n    key, sub = jax.random.split(key)\n    return jax.random.normal(sub, shape), key\n"
        ),
        "pkg/train.py": (
            "import jax\nfrom pkg.sampling import fresh, sample\n"
            "def run(key):\n    x, key = sample(key, (3,))\n    k1, k2 = jax.random.split(key)\n    return x, k1, k2\n"
            "def ok(key):\n    x, key = fresh(key, (3,))\n    k1, k2 = jax.random.split(key)\n    return x, k1, k2\n"
        ),
    })
    assert check(root, "pkg") == [("pkg/train.py", 5, "JG601")]


def test_a_touched_file_is_not_summarised_again(tmp_path, monkeypatch):
    import os

    from jaxguard.lint import project

    root = keys_package(tmp_path)
    cache = str(tmp_path / "cache")
    files = [str(p) for p in sorted((root / "pkg").glob("*.py"))]
    project.build_index(files, cache, [], root)
    made = []
    real = project.summarise
    monkeypatch.setattr(project, "summarise", lambda *a: made.append(a[1]) or real(*a))
    helper = root / "pkg/rng_utils.py"
    os.utime(helper, ns=(1, 1))  # a new mtime, the same content
    ((index, _),) = project.build_index(files, cache, [], root)
    assert made == [] and "split_key" in index.summaries["pkg.rng_utils"]["functions"]
    helper.write_text(helper.read_text() + "\n# edited\n")
    project.build_index(files, cache, [], root)
    assert made == ["pkg.rng_utils"]


@pytest.mark.parametrize("generator_object", [True, False])
def test_a_generator_object_that_keeps_its_own_state_is_not_a_key(tmp_path, generator_object):
    # jax-galsim's deviates: `rng._state = ...` in the callee shows `rng` is an object that
    # advances itself, so handing it to two calls draws nothing twice
    body = "    rng._state = advance(rng)\n    return n\n" if generator_object else "    return n + advance(rng)\n"
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/photons.py": (
            "import jax\ndef advance(seed):\n    return jax.random.split(seed)[0]\n"
            "def count(n, rng):\n" + body + "def shoot(n, rng):\n" + body
        ),
        "pkg/draw.py": (
            "import jax\nfrom pkg.photons import count, shoot\n\ndef draw(n, rng, step):\n"
            "    rng = jax.random.fold_in(rng, step)\n    n = count(n, rng)\n    return shoot(n, rng)\n"
        ),
    })
    assert (("pkg/draw.py", "JG601") in found(root, "pkg")) is not generator_object


@pytest.mark.parametrize("base_case", ["fold", "draw"])
def test_a_recursive_builder_is_judged_by_what_its_chain_does(tmp_path, base_case):
    # penzai's `Linear.from_config` calls itself, then derives each parameter's key by
    # folding in its name: the chain never draws from the base key it is handed
    leaf = "jax.random.fold_in(rng, depth)" if base_case == "fold" else "jax.random.normal(rng)"
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/layers.py": (
            "import jax\ndef build(rng, depth):\n    if depth == 0:\n        return " + leaf + "\n"
            "    return build(rng, depth - 1)\n"
        ),
        "pkg/model.py": (
            "import jax\nfrom pkg.layers import build\ndef init(rng):\n"
            "    layer = build(rng, 2)\n    return layer, jax.random.normal(rng)\n"
        ),
    })
    assert (("pkg/model.py", "JG601") in found(root, "pkg")) is (base_case == "draw")


@pytest.mark.parametrize("annotation", ["Variable", "jax.Array"])
def test_a_parameter_annotated_with_a_type_no_key_has_is_not_a_key(tmp_path, annotation):
    # pymc's `find_default_update(clients, rng: Variable)`: a graph variable named rng
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/graph.py": f"import jax\ndef users(clients, rng: {annotation}):\n    return jax.random.normal(rng)\n",
        "pkg/update.py": (
            "import jax\nfrom pkg.graph import users\ndef update(clients, rng, step):\n"
            "    rng = jax.random.fold_in(rng, step)\n    return users(clients, rng), users(clients, rng)\n"
        ),
    })
    assert (("pkg/update.py", "JG601") in found(root, "pkg")) is (annotation == "jax.Array")


@pytest.mark.parametrize("traced_by", ["tests", "library"])
def test_what_a_test_traces_does_not_make_library_code_traced(tmp_path, traced_by):
    # pennylane's tests build a device inside a jitted function; the device's constructor,
    # which seeds numpy, is not traced by the library itself
    device = "import numpy as np\nclass Device:\n    def __init__(self):\n        self.seed = np.random.randint(0, 100)\n"
    user = "import jax\nfrom pkg.device import Device\n@jax.jit\ndef run(x):\n    Device()\n    return x\n"
    files = {"pkg/__init__.py": "", "pkg/device.py": device}
    files["tests/test_device.py" if traced_by == "tests" else "pkg/run.py"] = user
    root = make(tmp_path, files)
    assert (("pkg/device.py", "JG105") in found(root, ".")) is (traced_by == "library")


@pytest.mark.parametrize("memoized", [True, False])
def test_a_memoized_function_does_not_carry_tracing_into_what_it_calls(tmp_path, memoized):
    # a library built and registered once, behind lru_cache, reads its build settings
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/build.py": "import os\ndef build_lib():\n    return os.getenv('CUDA_ARCH', '80')\n",
        "pkg/register.py": ("import functools\n" if memoized else "")
        + "from pkg.build import build_lib\n" + ("@functools.lru_cache(maxsize=1)\n" if memoized else "")
        + "def register():\n    return build_lib()\n",
        "pkg/ops.py": "import jax\nfrom pkg.register import register\n@jax.jit\ndef attention(q):\n    register()\n    return q\n",
    })
    assert (("pkg/build.py", "JG105") in found(root, "pkg")) is not memoized


@pytest.mark.parametrize("array_type, reported", [("jnp.ndarray", True), ("np.ndarray", False)])
def test_a_project_alias_of_an_outside_name_is_that_name(tmp_path, array_type, reported):
    # jax-md: `Array = jnp.ndarray` and `f64 = jnp.float64` in util, `Array = util.Array` elsewhere
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/util.py": f"import numpy as np\nimport jax.numpy as jnp\nArray = {array_type}\nf64 = jnp.float64\n",
        "pkg/energy.py": (
            "import jax.numpy as jnp\nfrom pkg import util\nArray = util.Array\n"
            "def bonds(dist: Array):\n    return dist.astype(jnp.float64)\n"
            "def spacing(delta):\n    return util.f64(delta)\n"
        ),
    })
    lines = check(root, "pkg", "--select", "JG903")
    assert ("pkg/energy.py", 7, "JG903") in lines  # `util.f64(delta)` is `jnp.float64(delta)`
    assert (("pkg/energy.py", 5, "JG903") in lines) == reported  # a JAX array only if util says so
    assert not any(line == 7 for _, line, _ in check(root, "pkg", "--select", "JG903", "--no-project-index"))


def test_a_name_a_project_module_binds_two_ways_is_not_an_alias(tmp_path):
    # desc's backend: `if use_jax: from jax import jit` / `else: jit = lambda f: f`
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/backend.py": "import os\nif os.environ.get('BACKEND') != 'numpy':\n    from jax import jit\nelse:\n    jit = lambda f: f\n",
        "pkg/solve.py": "from pkg.backend import jit\ndef put(x, i):\n    return x\ndef run(x, modes):\n    for i in modes:\n        x = jit(put)(x, i)\n    return x\n",
        "pkg/solve_jax.py": "from jax import jit\ndef put(x, i):\n    return x\ndef run(x, modes):\n    for i in modes:\n        x = jit(put)(x, i)\n    return x\n",
    })
    lines = check(root, "pkg", "--select", "JG109")
    assert ("pkg/solve_jax.py", 6, "JG109") in lines
    assert not any(path == "pkg/solve.py" for path, _, _ in lines)


def test_a_helper_that_only_a_host_callback_runs_is_not_traced(tmp_path):
    # the solver runs on the host through pure_callback, on every call: its clock reads
    # are not frozen; the same helper called in the trace is
    make(tmp_path, {
        "solvers.py": """
            import time

            def host_solve(a):
                start = time.time()
                return a
        """,
        "model.py": """
            import jax
            from solvers import host_solve

            @jax.jit
            def solve(a):
                fun = lambda a: host_solve(a)
                return jax.pure_callback(fun, jax.ShapeDtypeStruct(a.shape, a.dtype), a)

            @jax.jit
            def solve_direct(a):
                return jax.pure_callback(host_solve, jax.ShapeDtypeStruct(a.shape, a.dtype), a)
        """,
    })
    assert ("solvers.py", "JG105") not in found(tmp_path)
    (tmp_path / "model.py").write_text((tmp_path / "model.py").read_text() + "\n@jax.jit\ndef traced(a):\n    return host_solve(a)\n")
    assert ("solvers.py", "JG105") in found(tmp_path)


def test_item_assignment_on_a_project_class_that_defines_setitem_is_its_own(tmp_path):
    # a double-double pytree whose __setitem__ updates through .at[].set: `g[0] = v` works
    make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/dd.py": """
            class DoubleDouble:
                def __init__(self, hi):
                    self.hi = hi

                def __setitem__(self, index, value):
                    self.hi = self.hi.at[index].set(value.hi)
        """,
        "pkg/step.py": """
            import jax
            from pkg.dd import DoubleDouble

            @jax.jit
            def refine(g: DoubleDouble, new):
                g[0] = new
                return g
        """,
    })
    assert ("pkg/step.py", "JG301") not in found(tmp_path)
    (tmp_path / "pkg/dd.py").write_text("class DoubleDouble:\n    def __init__(self, hi):\n        self.hi = hi\n")
    assert ("pkg/step.py", "JG301") in found(tmp_path)


def boundary_package(tmp_path: Path, after_tracing: str = "") -> Path:
    # jax-lab: a simulation's constructor asks each boundary condition to build its masks,
    # which configures it; a jitted method of the condition (static `self`) reads the result
    return make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/boundary.py": """
            from functools import partial
            import jax

            class Boundary:
                def __init__(self, indices):
                    self.indices = indices

                def create_masks(self, grid):
                    self.configure(grid)

                def configure(self, grid):
                    self.indices = [i for i in self.indices if i < grid]

                @partial(jax.jit, static_argnums=(0,))
                def apply(self, f):
                    return f[self.indices]
        """,
        "pkg/simulation.py": f"""
            class Simulation:
                def __init__(self, boundaries, grid):
                    self.boundaries = boundaries
                    self._create_boundary_data(grid)

                def _create_boundary_data(self, grid):
                    for bc in self.boundaries:
                        bc.create_masks(grid)

                def step(self, f, grid):
                    for bc in self.boundaries:
                        f = bc.apply(f)
                    {after_tracing}
                    return f
        """,
    })


def test_an_attribute_set_only_while_objects_are_built_is_not_stale(tmp_path):
    # every call of `create_masks` in the project is made by a constructor, or by a method
    # only a constructor calls: what it assigns is fixed before any trace
    assert ("pkg/boundary.py", "JG102") not in found(boundary_package(tmp_path))


def test_an_attribute_set_again_after_tracing_is_stale(tmp_path):
    root = boundary_package(tmp_path, after_tracing="bc.configure(grid)")
    assert ("pkg/boundary.py", "JG102") in found(root)


DEMO_MODULE = """
    import jax

    def draw(key):
        return jax.random.normal(key, (3,))

    if __name__ == "__main__":
        key = jax.random.PRNGKey(0)
        x = jax.random.normal(key, (3,))
        print(x + draw(key))
"""


@pytest.mark.parametrize("top", ["", "my-repo/"])
def test_modules_are_named_as_imported_below_a_repository_folder_with_an_init(tmp_path, top):
    # research repositories often keep an `__init__.py` beside their setup.py (or sit in a
    # folder named `my-repo`): `import nux.base` still names `nux/base.py`, so a module the
    # project imports is a library module and its `__main__` block a demo (keys reused on purpose)
    files = {
        f"{top}__init__.py": "",
        f"{top}setup.py": "",
        f"{top}nux/__init__.py": "",
        f"{top}nux/base.py": DEMO_MODULE,
        f"{top}nux/other.py": "from nux.base import draw\n",
    }
    root = make(tmp_path, files)
    assert (f"{top}nux/base.py", "JG601") not in found(root, ".")
    (root / top / "nux" / "other.py").write_text("import jax\n")
    assert (f"{top}nux/base.py", "JG601") in found(root, ".")


def test_a_call_on_an_object_of_a_project_class_is_judged_by_that_class_method(tmp_path):
    # NuX's flows keep layer objects (`self.sigmoid = Sigmoid()`) and hand them the key by
    # keyword; Sigmoid.__call__ swallows it in a `**kwargs` it never reads, Noise draws
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/acts.py": """
            import jax

            class Sigmoid:
                def __call__(self, x, inverse=False, **kwargs):
                    return jax.nn.sigmoid(x)

            class Noise:
                def __call__(self, x, rng_key=None, **kwargs):
                    return x + jax.random.normal(rng_key, x.shape)

                def sample(self, rng_key, shape):
                    return jax.random.normal(rng_key, shape)
        """,
        "pkg/flow.py": """
            import jax
            from pkg.acts import Noise, Sigmoid

            class Flow:
                def __init__(self):
                    self.sigmoid = Sigmoid()
                    self.noise = Noise()

                def swallowed(self, x, rng_key):
                    k1, k2 = jax.random.split(rng_key)
                    return self.sigmoid(x + jax.random.normal(k1, x.shape), rng_key=rng_key)

                def drawn_twice(self, x, rng_key):
                    return self.noise(x, rng_key=rng_key) + self.noise(x, rng_key=rng_key)

                def positional(self, rng_key):
                    return self.noise.sample(rng_key, (2,)) + self.noise.sample(rng_key, (2,))

            def local_object(x, rng_key):
                noise = Noise()
                return noise(x, rng_key) + jax.random.normal(rng_key, x.shape)
        """,
    })
    lines = {(line, code) for path, line, code in check(root, "pkg") if path == "pkg/flow.py"}
    assert lines == {(14, "JG601"), (17, "JG601"), (21, "JG601")}


def test_an_attribute_declared_with_a_type_then_made_is_judged_by_what_made_it(tmp_path):
    # pcgrl-jax: `self.rep: Representation` declares, `self.rep = PlayerRepresentation(...)`
    # makes; PlayerRepresentation.reset ignores its key, NoisyRepresentation.reset draws
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/reps.py": """
            import jax

            class Representation:
                def reset(self, tiles, rng):
                    return jax.random.normal(rng)

            class PlayerRepresentation(Representation):
                def reset(self, tiles, rng):
                    return tiles

            class NoisyRepresentation(Representation):
                def reset(self, tiles, rng):
                    return tiles + jax.random.normal(rng)
        """,
        "pkg/env.py": """
            import jax
            from pkg.reps import NoisyRepresentation, PlayerRepresentation, Representation

            class PlayEnv:
                def __init__(self):
                    self.rep: Representation
                    self.rep = PlayerRepresentation()

                def reset(self, tiles, rng):
                    state = self.rep.reset(tiles, rng)
                    return state, jax.random.uniform(rng)

            class NoisyEnv:
                def __init__(self):
                    self.rep: Representation
                    self.rep = NoisyRepresentation()

                def reset(self, tiles, rng):
                    state = self.rep.reset(tiles, rng)
                    return state, jax.random.uniform(rng)
        """,
    })
    lines = {(line, code) for path, line, code in check(root, "pkg") if path == "pkg/env.py"}
    assert lines == {(20, "JG601")}


def test_a_project_function_swallowing_a_key_in_unread_kwargs_ignores_it(tmp_path):
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low.py": """
            import jax

            def scale(x, **kwargs):
                return 2 * x

            def forward(x, **kwargs):
                return draw(x, **kwargs)

            def draw(x, rng_key=None):
                return x + jax.random.normal(rng_key, x.shape)
        """,
        "pkg/top.py": """
            import jax
            from pkg.low import forward, scale

            def ignored(x, rng_key):
                return scale(x, rng_key=rng_key) + jax.random.normal(rng_key, x.shape)

            def handed_on(x, rng_key):
                return forward(x, rng_key=rng_key) + jax.random.normal(rng_key, x.shape)
        """,
    })
    lines = {(line, code) for path, line, code in check(root, "pkg") if path == "pkg/top.py"}
    # `forward` reads its kwargs: where the key goes is not proven, a possible draw beside a certain one
    assert lines == {(8, "JG601")}


def test_a_key_before_a_starred_argument_still_binds_its_parameter(tmp_path):
    # jax-moseq's wrapper: `allo_dynamics.resample(seed, mask=..., **kwargs)` hands the key
    # to a function of another module that splits it; the `**kwargs` after it changes nothing
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low.py": "import jax\ndef resample(key, mask=None, **kwargs):\n    return jax.random.split(key)\n",
        "pkg/top.py": (
            "import jax\nimport somelib\nfrom pkg import low\n"
            "def wrapper(key, **kwargs):\n    return low.resample(key, mask=None, **kwargs)\n"
            "def step(key, opts):\n    a = wrapper(key, **opts)\n    return a, somelib.use(key)\n"
            "def unknown_position(key, args):\n    b = low.resample(*args, key)\n    return b, jax.random.normal(key)\n"
        ),
    })
    lines = {(line, code) for path, line, code in check(root, "pkg") if path == "pkg/top.py"}
    assert (8, "JG601") in lines  # the wrapper draws: a proven draw, paired with a possible one
    assert (11, "JG601") in lines  # a possible draw (position unknown) beside a proven one


def test_a_function_that_refuses_to_run_without_x64_by_its_message_covers_its_callees(tmp_path):
    # ozaki-jax: `if not _is_x64_enabled(): raise ValueError("gram() requires
    # jax_enable_x64=True.")`, the flag read by a helper of another module; the error's message
    # names the flag. The module, and a helper of another module that only it calls, are
    # covered; a refusal that does not name x64 tells the user nothing of it.
    root = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/flags.py": "import jax\ndef _is_x64_enabled():\n    return bool(jax.config.read('jax_enable_x64'))\n",
        "pkg/impl.py": X64_MODULE,
        "pkg/gram.py": (
            "from pkg.flags import _is_x64_enabled\nfrom pkg.impl import f\n" + X64_MODULE.replace("def f", "def own")
            + "def gram(n):\n    if not _is_x64_enabled():\n        raise ValueError('gram() requires jax_enable_x64=True.')\n"
            "    return f(n)\n"
        ),
        "pkg/other_impl.py": X64_MODULE,
        "pkg/other.py": (
            "from pkg.flags import _is_x64_enabled\nfrom pkg.other_impl import f\n"
            "def solve(n):\n    if not _is_x64_enabled():\n        raise ValueError('bad input')\n    return f(n)\n"
        ),
        # spharmgrid: each public op calls a check of another module that refuses to run
        # without x64, then the helper that calls into the flagged module
        "pkg/checks.py": (
            "import jax\ndef require_array(x):\n    if not jax.config.read('jax_enable_x64'):\n"
            "        raise RuntimeError('requires JAX x64 mode; set jax_enable_x64=True')\n    return x\n"
        ),
        "pkg/compat.py": X64_MODULE,
        "pkg/ops.py": (
            "from pkg.checks import require_array\nfrom pkg.compat import f\n"
            "def _forward_one(n):\n    return f(n)\n"
            "def forward(x, n):\n    require_array(x)\n    return _forward_one(n)\n"
        ),
        "pkg/api.py": "from pkg.ops import forward\nfrom pkg.vector_ops import divergence\n",  # a library module, not a program
        # ... or a check of its own that calls that one (`_require_vector` -> `_require_array`)
        "pkg/compat2.py": X64_MODULE,
        "pkg/vector_ops.py": (
            "from pkg.checks import require_array\nfrom pkg.compat2 import f\n"
            "def _require_vector(u, v):\n    require_array(u)\n    require_array(v)\n"
            "def divergence(u, v, n):\n    _require_vector(u, v)\n    return f(n)\n"
        ),
    })
    reported = found(root, "pkg")
    assert ("pkg/gram.py", "JG903") not in reported
    assert ("pkg/impl.py", "JG903") not in reported
    assert ("pkg/other_impl.py", "JG903") in reported
    assert ("pkg/compat.py", "JG903") not in reported
    assert ("pkg/compat2.py", "JG903") not in reported
