"""Run real test suites with and without `pytest --jaxguard` and list every difference.

    python benchmarks/real_suites.py --setup          # once: build the suites' venv
    python benchmarks/real_suites.py                  # every suite, plain and guarded
    python benchmarks/real_suites.py --suites chex -k assert_max_traces
    python benchmarks/real_suites.py --suites equinox --files test_jit.py

The guard must never break a correct program and must raise no false alarm: every test
whose outcome differs between the plain and the guarded run is listed, to be judged (a
real bug in the test, or a defect of jaxguard).

The suites are the tests shipped inside the wheels of chex 0.1.92, optax 0.2.8,
distrax 0.1.9, dm-haiku 0.0.17, rlax 0.1.9, jraph 0.0.6.dev0 and mctx 0.0.71, the `test/`
folder of numpyro 0.21.0's source distribution, and the `tests/` folder of equinox
0.13.8's repository (its source distribution has none: `--setup` clones the tag, or
`--equinox-tests PATH` names a checkout), run against jax 0.10.2 (the series jaxguard pins).
numpyro and equinox run from their own folder, so their pytest configuration applies
(both turn warnings into errors; equinox's adds jaxtyping's import hook).
They run in their own virtualenv (default: ./suites-venv, or --venv PATH), never in
jaxguard's development environment. `--setup` creates it from a fresh machine: it needs
only python3 and access to PyPI (and GitHub for equinox's tests); it installs the packages
above with their test dependencies (tfp-nightly, flax, scipy, scikit-learn, dm-tree, mock,
cloudpickle, dill, tensorflow-cpu for haiku's TF interop tests, jaxtyping, beartype) and
this checkout of jaxguard, editable, so the pytest plugin tested is the one in this work
tree.

Each run is one pytest process per suite and mode, under `nice`; results are read from
pytest's JUnit XML files, kept with the logs in --logs (default ./suites-logs). A full run
takes hours on 2 cores: use --suites, -k and --files while iterating. Run on demand, not in
CI.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tarfile
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ["jax==0.10.2", "jaxlib==0.10.2", "chex[test]==0.1.92", "optax[test]==0.2.8",
            "distrax[test]==0.1.9", "dm-haiku==0.0.17", "pytest", "cloudpickle", "dill",
            "tensorflow-cpu", "rlax==0.1.9", "jraph==0.0.6.dev0", "mctx==0.0.71",
            "numpyro==0.21.0", "equinox==0.13.8", "jaxtyping", "beartype", "pytest-xdist"]
# suite name -> where its tests are: a package directory inside site-packages, or a folder
# of sources fetched by --setup into the venv's `suites/` (its pytest configuration applies)
SUITES = {"chex": "chex", "optax": "optax", "distrax": "distrax", "haiku": "haiku",
          "rlax": "rlax", "jraph": "jraph", "mctx": "mctx",
          "numpyro": "sources:numpyro-0.21.0/test", "equinox": "sources:equinox/tests"}
SDISTS = ["numpyro==0.21.0"]
EQUINOX_GIT = ("https://github.com/patrick-kidger/equinox", "v0.13.8")
# The slow suites' subsets (relative to their test folder), unless --files says otherwise:
# the parts that exercise jit, keys, indexing and transformations (numpyro's inference and
# distribution tests take hours on 2 cores).
SUBSETS = {
    "numpyro": ["test_handlers.py", "test_util.py", "test_compile.py", "test_transforms.py",
                "test_diagnostics.py", "test_nn.py", "test_optimizers.py"],
}


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def setup(venv: Path, equinox_tests: Path | None) -> None:
    if not _venv_python(venv).exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(_venv_python(venv)), "-m", "pip"]
    subprocess.run([*pip, "install", "-q", *PACKAGES, "-e", str(REPO)], check=True)
    sources = venv / "suites"
    sources.mkdir(exist_ok=True)
    for sdist in SDISTS:
        subprocess.run([*pip, "download", "-q", "--no-deps", "--no-binary", ":all:", "-d",
                        str(sources), sdist], check=True)
        name = sdist.replace("==", "-")
        with tarfile.open(sources / f"{name}.tar.gz") as archive:
            archive.extractall(sources, filter="data")
    target = sources / "equinox"
    if target.exists():
        return
    if equinox_tests is not None:  # a checkout of the tag: its tests and pytest configuration
        target.mkdir()
        shutil.copytree(equinox_tests / "tests", target / "tests")
        shutil.copy(equinox_tests / "pyproject.toml", target / "pyproject.toml")
    else:
        url, tag = EQUINOX_GIT
        subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", tag, url, str(target)],
                       check=True)
    # run the installed wheel, not the checkout's sources
    shutil.rmtree(target / "equinox", ignore_errors=True)


def _site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                         check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def _outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """{test id: (passed | failed | error | skipped, first line of the message)} from a
    JUnit XML file."""
    results = {}
    if not junit.exists():
        return results
    for case in ET.parse(junit).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = (child.get("message") or "").strip().split("\n")[0][:300]
                break
        results[test] = (outcome, message)
    return results


def _location(python: Path, suite: str) -> tuple[Path, str]:
    """(the folder pytest runs from, the tests' folder relative to it)."""
    where = SUITES[suite]
    if where.startswith("sources:"):
        root, tests = where.removeprefix("sources:").split("/", 1)
        return python.parent.parent / "suites" / root, tests
    # Run from site-packages: some tests open their data by a path relative to it.
    return _site_packages(python), where


def run_suite(python: Path, suite: str, guarded: bool, args, logs: Path) -> tuple[dict, float]:
    mode = "guarded" if guarded else "plain"
    site, tests = _location(python, suite)
    files = args.files or SUBSETS.get(suite)
    targets = [f"{tests}/{f}" for f in files] if files else [tests]
    junit = logs / f"{suite}-{mode}.xml"
    # `--verbose`, not `-v`: absl-based tests parse sys.argv, where `-v` is absl's
    # --verbosity and would swallow the next argument.
    cmd = ["nice", str(python), "-m", "pytest", "--verbose", "-p", "no:cacheprovider",
           f"--junitxml={junit}", "-o", "junit_family=xunit1", *targets]
    if args.k:
        cmd += ["-k", args.k]
    if guarded:
        cmd.append("--jaxguard")
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    start = time.perf_counter()
    with open(logs / f"{suite}-{mode}.log", "w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=site, env=env,
                       check=False)  # failing tests are results, not errors
    seconds = time.perf_counter() - start
    (logs / f"{suite}-{mode}.seconds").write_text(f"{seconds:.1f}\n")
    return _outcomes(junit), seconds


def _recorded(logs: Path, suite: str, mode: str) -> tuple[dict, float | None]:
    seconds = logs / f"{suite}-{mode}.seconds"
    return (_outcomes(logs / f"{suite}-{mode}.xml"),
            float(seconds.read_text()) if seconds.exists() else None)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=Path("suites-venv"))
    parser.add_argument("--logs", type=Path, default=Path("suites-logs"))
    parser.add_argument("--setup", action="store_true", help="create or update the venv, then exit")
    parser.add_argument("--equinox-tests", type=Path, default=None,
                        help="with --setup: a checkout of equinox v0.13.8 to take its tests from")
    parser.add_argument("--suites", nargs="+", choices=list(SUITES), default=list(SUITES))
    parser.add_argument("--files", nargs="+", default=None,
                        help="test files or directories relative to the suite's test folder")
    parser.add_argument("-k", default=None, help="pytest -k expression")
    parser.add_argument("--modes", nargs="*", choices=["plain", "guarded"],
                        default=["plain", "guarded"],
                        help="the modes to run (the others are read from the JUnit files "
                             "in --logs; `--modes` alone only compares)")
    args = parser.parse_args(argv)
    venv, logs = args.venv.resolve(), args.logs.resolve()
    if args.setup:
        setup(venv, args.equinox_tests)
        return 0
    python = _venv_python(venv)
    if not python.exists():
        print(f"real_suites: error: no venv at {venv}; run with --setup first", file=sys.stderr)
        return 2
    logs.mkdir(parents=True, exist_ok=True)

    total_diffs = 0
    for suite in args.suites:
        results, times = {}, {}
        for mode in ("plain", "guarded"):
            if mode in args.modes:
                results[mode], times[mode] = run_suite(python, suite, mode == "guarded",
                                                       args, logs)
            else:
                results[mode], times[mode] = _recorded(logs, suite, mode)
        plain, guarded = results["plain"], results["guarded"]
        absent = ("absent", "")
        diffs = sorted(t for t in plain.keys() | guarded.keys()
                       if plain.get(t, absent)[0] != guarded.get(t, absent)[0]
                       ) if plain and guarded else []
        total_diffs += len(diffs)
        counts = {mode: {o: [v[0] for v in r.values()].count(o)
                         for o in ("passed", "failed", "error", "skipped")}
                  for mode, r in results.items()}
        ratio = (f"{times['guarded'] / times['plain']:.2f}x"
                 if times["plain"] and times["guarded"] else "n/a")
        wall = ", ".join(f"{m} {times[m]:.0f} s" for m in ("plain", "guarded") if times[m])
        print(f"\n== {suite}: {len(plain)} tests; plain {counts['plain']}; "
              f"guarded {counts['guarded']}")
        print(f"   wall time: {wall or 'not run'}; guarded/plain {ratio}")
        if not (plain and guarded):
            print("   no comparison: a mode has no results yet")
            continue
        print(f"   {len(diffs)} test(s) whose outcome differs:")
        for test in diffs:
            before, (after, message) = plain.get(test, absent)[0], guarded.get(test, absent)
            print(f"   {before:>8} -> {after:<8} {test}")
            if message:
                print(f"            {message}")
    return 1 if total_diffs else 0


if __name__ == "__main__":
    sys.exit(main())
