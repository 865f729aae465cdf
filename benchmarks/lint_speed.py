"""How fast is `jaxguard check`? One run, one corpus, every figure (a script, not a test).

    python benchmarks/lint_speed.py                     # the whole corpus (long)
    python benchmarks/lint_speed.py --max-files 40      # at most 40 files per package
    python benchmarks/lint_speed.py --packages jax optax --jobs 2

The corpus is the installed sources of jax, flax, optax, equinox and numpyro (copied into a
temporary directory, so no config or .gitignore of the venv applies). Over the same files it
times: a bare libcst parse (the floor of a libcst-based design) in 1 and N processes, and
the parse the way jaxguard does it (garbage collector paused, no re-validation of the
parser's nodes: what is left above it is the analysis);
jaxguard cold (empty cache) in 1 and N processes; jaxguard warm (cached); flake8 plain and
`flake8 --select JG` (our plugin) with N jobs; ruff if installed. Then the same for the jax
package alone (jaxguard vs `flake8 --select JG` vs plain flake8). It prints seconds, lines
per second, and the ratios against the goals: cold within 1.5x the parse floor with the same
number of processes; warm under 0.1x cold.

"plain flake8" is `flake8 --select E,F,W,C90`. flake8 runs every installed plugin whatever
the selection, so with jaxguard installed the plain figure includes jaxguard's plugin too;
for a pure baseline run flake8 from a venv without jaxguard. Wall-clock figures on a busy
machine are noisy: each row also shows the CPU seconds it used (children included), and
each floor and its cold run are measured back to back in `--repeat` rounds (default 3):
a goal's ratio is the median over the rounds of cold / floor within a round.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

PACKAGES = ("jax", "flax", "optax", "equinox", "numpyro")
BIN = Path(sys.executable).parent


def package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def build_corpus(packages, max_files: int | None, target: Path) -> dict[str, list[Path]]:
    corpus: dict[str, list[Path]] = {}
    for name in packages:
        source = package_dir(name)
        if source is None:
            print(f"  (skipping {name}: not installed; pip install --no-deps {name})")
            continue
        files = sorted(p for p in source.rglob("*.py") if "__pycache__" not in p.parts)
        if max_files:
            step = max(1, len(files) // max_files)
            files = files[::step][:max_files]
        copied = []
        for file in files:
            destination = target / name / file.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, destination)
            copied.append(destination)
        corpus[name] = copied
    return corpus


def count_lines(files) -> int:
    total = 0
    for file in files:
        with open(file, "rb") as handle:
            total += handle.read().count(b"\n")
    return total


def _parse_chunk(paths: list[str], tuned: bool = False) -> int:
    """Parse each file with libcst; `tuned`: the way jaxguard parses (collector paused, no
    re-validation of parsed nodes), to show what the analysis itself costs."""
    import libcst

    parse = libcst.parse_module
    paused = contextlib.nullcontext
    if tuned:
        from jaxguard.lint.engine import _collector_paused, parse_module

        parse, paused = parse_module, _collector_paused
    parsed = 0
    for path in paths:
        try:
            with paused():
                parse(Path(path).read_text(encoding="utf-8"))
            parsed += 1
        except Exception:
            pass
    return parsed


def libcst_floor(files, jobs: int, tuned: bool = False) -> float:
    paths = sorted((str(f) for f in files), key=lambda p: -os.path.getsize(p))
    cpu = time.process_time() + _children_cpu()
    start = time.perf_counter()
    if jobs == 1:
        _parse_chunk(paths, tuned)
    else:
        chunks = [paths[i : i + 8] for i in range(0, len(paths), 8)]
        with ProcessPoolExecutor(jobs) as pool:
            list(pool.map(functools.partial(_parse_chunk, tuned=tuned), chunks))
    CPU["last"] = time.process_time() + _children_cpu() - cpu
    return time.perf_counter() - start


RATIOS: dict[str, list[float]] = {}  # goal -> cold / floor of each round


def _median(goal: str) -> float:
    return statistics.median(RATIOS[goal])


CPU: dict[str, float] = {}  # label -> CPU seconds of the last measurement (children included)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    cpu = _children_cpu()
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    CPU["last"] = _children_cpu() - cpu
    return time.perf_counter() - start, result


def jaxguard(paths, cwd: Path, jobs: int, cache_dir: Path | None, extra=()) -> tuple[float, subprocess.CompletedProcess]:
    command = [sys.executable, "-m", "jaxguard", "check", "--exit-zero", "-q", "--jobs", str(jobs), *extra]
    command += ["--no-cache"] if cache_dir is None else ["--cache-dir", str(cache_dir)]
    return timed(command + [str(p) for p in paths], cwd)


def flake8(paths, cwd: Path, jobs: int, select: str) -> tuple[float, subprocess.CompletedProcess]:
    command = [str(BIN / "flake8"), "--exit-zero", f"-j{jobs}", "--select", select, *map(str, paths)]
    return timed(command, cwd)


def row(label: str, seconds: float, lines: int, note: str = "") -> None:
    rate = lines / seconds if seconds > 0 else float("inf")
    cpu = CPU.pop("last", None)
    cpu_text = f"cpu {cpu:7.2f} s" if cpu is not None else " " * 13
    print(f"  {label:<44} {seconds:8.2f} s {rate:10,.0f} lines/s  {cpu_text}  {note}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=list(PACKAGES))
    parser.add_argument("--max-files", type=int, default=None, help="at most this many files per package")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for the parallel runs")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of back-to-back floor and cold runs")
    parser.add_argument("--skip-jax-alone", action="store_true")
    args = parser.parse_args(argv)
    jobs = max(1, args.jobs)

    workdir = Path(tempfile.mkdtemp(prefix="jaxguard-bench-"))
    try:
        corpus = build_corpus(args.packages, args.max_files, workdir / "corpus")
        files = [f for group in corpus.values() for f in group]
        lines = count_lines(files)
        roots = [workdir / "corpus" / name for name in corpus]
        print(f"corpus: {', '.join(f'{n} ({len(g)} files)' for n, g in corpus.items())}")
        print(f"        {len(files)} files, {lines:,} lines; {jobs} jobs; python {sys.version.split()[0]}")
        print(f"        load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        print()
        figures = measure(files, lines, roots, workdir, jobs, max(1, args.repeat))
        report_goals(figures, jobs)
        if not args.skip_jax_alone and "jax" in corpus:
            print()
            jax_files = corpus["jax"]
            jax_lines = count_lines(jax_files)
            print(f"jax alone: {len(jax_files)} files, {jax_lines:,} lines")
            cold, result = jaxguard([workdir / "corpus" / "jax"], workdir, jobs, None)
            row(f"jaxguard check (no cache, {jobs} jobs)", cold, jax_lines, _crashes(result))
            seconds, _ = flake8([workdir / "corpus" / "jax"], workdir, jobs, "JG")
            row(f"flake8 --select JG -j{jobs} (jaxguard plugin)", seconds, jax_lines, f"{seconds / cold:.2f}x jaxguard")
            seconds, _ = flake8([workdir / "corpus" / "jax"], workdir, jobs, "E,F,W,C90")
            row(f"flake8 plain -j{jobs}", seconds, jax_lines, f"{seconds / cold:.2f}x jaxguard")
            if shutil.which("ruff", path=str(BIN)) or shutil.which("ruff"):
                ruff = shutil.which("ruff", path=str(BIN)) or shutil.which("ruff")
                seconds, _ = timed([ruff, "check", "--no-cache", "--exit-zero", "--quiet", str(workdir / "corpus" / "jax")], workdir)
                row("ruff check (default rules, no cache)", seconds, jax_lines)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _crashes(result: subprocess.CompletedProcess) -> str:
    crashes = sum(1 for line in result.stdout.splitlines() if " JG003 " in line)
    return f"JG003: {crashes}" + ("" if result.returncode in (0, 1) else f" exit {result.returncode}")


def measure(files, lines, roots, workdir: Path, jobs: int, repeat: int) -> dict[str, float]:
    """Each floor and its cold run are measured back to back, `repeat` times; the goals use
    the median of the per-round ratios. On a shared machine the speed drifts by 20% from
    minute to minute, so a ratio of two runs minutes apart measures the drift as much as
    the tool. The rows' seconds elsewhere are the fastest round."""
    figures: dict[str, float] = {}
    print("whole corpus")
    cache = workdir / "cache"
    for round_ in range(1, repeat + 1):
        parse1 = libcst_floor(files, 1)
        cpu_parse1 = CPU["last"]
        row(f"libcst parse only, 1 process (floor) [{round_}]", parse1, lines)
        cold1, result = jaxguard(roots, workdir, 1, None)
        cpu_cold1 = CPU["last"]
        row(f"jaxguard cold, 1 process (--no-cache) [{round_}]", cold1, lines, f"{cold1 / parse1:.2f}x floor; {_crashes(result)}")
        tuned1 = libcst_floor(files, 1, tuned=True)
        row(f"libcst parse as jaxguard parses, 1 process [{round_}]", tuned1, lines, f"{tuned1 / parse1:.2f}x floor")
        RATIOS.setdefault("1", []).append(cold1 / parse1)
        RATIOS.setdefault("cpu1", []).append(cpu_cold1 / cpu_parse1)
        RATIOS.setdefault("tuned1", []).append(cold1 / tuned1)
        figures["cold1"] = min(cold1, figures.get("cold1", cold1))
        if round_ == repeat:  # the prefilter's effect, back to back with a cold run
            figures["prefiltered1"] = cold1
            figures["noprefilter1"], _ = jaxguard(roots, workdir, 1, None, ("--no-prefilter",))
            row(f"jaxguard cold, 1 process, no prefilter [{round_}]", figures["noprefilter1"], lines)
        if jobs > 1:
            parseN = libcst_floor(files, jobs)
            row(f"libcst parse only, {jobs} processes (floor) [{round_}]", parseN, lines)
            shutil.rmtree(cache, ignore_errors=True)
            coldN, result = jaxguard(roots, workdir, jobs, cache)
            row(f"jaxguard cold, {jobs} processes (filling the cache) [{round_}]", coldN, lines, f"{coldN / parseN:.2f}x floor; {_crashes(result)}")
            RATIOS.setdefault("N", []).append(coldN / parseN)
            figures["coldN"] = min(coldN, figures.get("coldN", coldN))
    if jobs == 1:
        figures["coldN"], _ = jaxguard(roots, workdir, jobs, cache)
    figures["warm"], _ = jaxguard(roots, workdir, jobs, cache)
    row("jaxguard warm (cached)", figures["warm"], lines)
    seconds, _ = flake8(roots, workdir, jobs, "E,F,W,C90")
    figures["flake8"] = seconds
    row(f"flake8 plain -j{jobs}", seconds, lines)
    seconds, _ = flake8(roots, workdir, jobs, "JG")
    figures["flake8jg"] = seconds
    row(f"flake8 --select JG -j{jobs} (jaxguard plugin)", seconds, lines)
    ruff = shutil.which("ruff", path=str(BIN)) or shutil.which("ruff")
    if ruff:
        seconds, _ = timed([ruff, "check", "--no-cache", "--exit-zero", "--quiet", *map(str, roots)], workdir)
        figures["ruff"] = seconds
        row("ruff check (default rules, no cache)", seconds, lines)
    return figures


def report_goals(figures: dict[str, float], jobs: int) -> None:
    print()
    print("goals")
    print("  (cold / floor: the median of the rounds' back-to-back ratios)")
    ratio1 = _median("1")
    print(f"  cold / parse floor, 1 process:  {ratio1:5.2f}x  (goal <= 1.5x: {'met' if ratio1 <= 1.5 else 'NOT met'})")
    print(f"    rounds: {', '.join(f'{r:.2f}' for r in RATIOS['1'])}")
    print(f"  same in CPU seconds (includes jaxguard's ~0.5 s start-up): {_median('cpu1'):5.2f}x")
    print(f"  cold / parse as jaxguard parses (collector paused, no re-validation), 1 process:"
          f" {_median('tuned1'):5.2f}x  (what the analysis, guard and CLI add)")
    if "N" in RATIOS:
        ratioN = _median("N")
        print(f"  cold / parse floor, {jobs} processes: {ratioN:5.2f}x  (goal <= 1.5x: {'met' if ratioN <= 1.5 else 'NOT met'})")
        print(f"    rounds: {', '.join(f'{r:.2f}' for r in RATIOS['N'])}")
        print(f"  pool speed-up, cold 1 -> {jobs} processes: {figures['cold1'] / figures['coldN']:.2f}x")
    warm = figures["warm"] / figures["coldN"]
    print(f"  warm / cold:                    {warm:5.3f}x  (goal < 0.1x: {'met' if warm < 0.1 else 'NOT met'})")
    print(f"  prefilter saves:                {1 - figures['prefiltered1'] / figures['noprefilter1']:.0%} of the 1-process cold time (last round)")
    print(f"  jaxguard cold ({jobs} jobs) / flake8 plain: {figures['coldN'] / figures['flake8']:.2f}x;"
          f" / flake8 --select JG: {figures['coldN'] / figures['flake8jg']:.2f}x")
    if "ruff" in figures:
        print(f"  jaxguard cold ({jobs} jobs) / ruff: {figures['coldN'] / figures['ruff']:.0f}x")


if __name__ == "__main__":
    sys.exit(main())
