"""How fast is a fully cached `jaxguard check`? (a script that prints figures, not a test)

    python benchmarks/warm_cache.py                  # 55,000 lines of jax's sources, 5 rounds
    python benchmarks/warm_cache.py --lines 20000 --repeat 3

The corpus is the first files (sorted by path) of the installed jax package that together
make `--lines` lines, copied into a temporary directory. Each round times, back to back:
a cold run (empty cache) and a warm run (every file answered from the cache), both with
the default number of processes, as a user runs them: `python -m jaxguard check DIR`. The
goal's ratio is the median of the rounds' warm / cold.

It also checks that a warm run does not import libcst (a fully cached run needs no parser)
and shows where a warm run's time goes: Python's own start-up, importing jaxguard's CLI,
and the rest. Byte-code caching is on for the timed runs (PYTHONDONTWRITEBYTECODE is
removed from their environment), as after `pip install`.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL = 0.05  # warm under 0.05x cold


def build_corpus(lines: int, target: Path) -> tuple[int, int]:
    spec = importlib.util.find_spec("jax")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("jax is not installed: pip install '.[dev]'")
    source = Path(list(spec.submodule_search_locations)[0])
    files = total = 0
    for path in sorted(source.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        files += 1
        total += path.read_bytes().count(b"\n")
        if total >= lines:
            break
    return files, total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: Path, env: dict) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, stdout)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if result.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}")
    return wall, _children_cpu() - cpu, result.stdout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=55_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    workdir = Path(tempfile.mkdtemp(prefix="jaxguard-warm-"))
    try:
        corpus, cache = workdir / "corpus", workdir / "cache"
        files, lines = build_corpus(args.lines, corpus)
        check = [sys.executable, "-m", "jaxguard", "check", "corpus", "--exit-zero", "-q", "--cache-dir", str(cache)]
        print(f"corpus: {files} files, {lines:,} lines of jax {_jax_version()}; python {sys.version.split()[0]}")
        print(f"        load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        timed(check, workdir, env)  # byte-compile jaxguard itself once, as an install does
        rounds = []
        for _ in range(max(1, args.repeat)):
            shutil.rmtree(cache, ignore_errors=True)
            cold = timed(check, workdir, env)
            warm = timed(check, workdir, env)
            if warm[2] != cold[2]:
                sys.exit("the warm run's findings differ from the cold run's")
            rounds.append((cold, warm))
        print()
        print(f"  {'round':<6} {'cold wall':>10} {'cold cpu':>10} {'warm wall':>10} {'warm cpu':>10} {'warm/cold':>10}")
        for index, (cold, warm) in enumerate(rounds, 1):
            print(f"  {index:<6} {cold[0]:9.3f}s {cold[1]:9.3f}s {warm[0]:9.3f}s {warm[1]:9.3f}s {warm[0] / cold[0]:9.3f}x")
        ratio = statistics.median(warm[0] / cold[0] for cold, warm in rounds)
        cold_wall = statistics.median(cold[0] for cold, _ in rounds)
        warm_wall = statistics.median(warm[0] for _, warm in rounds)
        verdict = "met" if ratio < GOAL else "NOT met"
        print(f"\n  median: cold {cold_wall:.3f} s, warm {warm_wall:.3f} s: warm is {ratio:.3f}x cold (goal < {GOAL}x: {verdict})")

        probe = (
            "import sys, time; start = time.perf_counter()\n"
            "from jaxguard.cli import main\n"
            "imported = time.perf_counter()\n"
            "main(sys.argv[1:])\n"
            "done = time.perf_counter()\n"
            "print(f'{imported - start:.4f} {done - imported:.4f} {\"libcst\" in sys.modules}', file=sys.stderr)\n"
        )
        result = subprocess.run([sys.executable, "-c", probe, *check[3:]], cwd=workdir, env=env, capture_output=True, text=True)
        imports, work, libcst = result.stderr.strip().splitlines()[-1].split()
        bare, _, _ = timed([sys.executable, "-c", "pass"], workdir, env)
        print(f"  a warm run: python start-up {bare:.3f} s, importing the CLI {float(imports):.3f} s, "
              f"the check {float(work):.3f} s; libcst imported: {libcst}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _jax_version() -> str:
    from importlib.metadata import version

    return version("jax")


if __name__ == "__main__":
    sys.exit(main())
