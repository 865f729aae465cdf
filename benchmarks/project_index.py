"""What does the project index cost? One run, every figure (a script, not a test).

    python benchmarks/project_index.py                   # 10% sample of the speed corpus
    python benchmarks/project_index.py --max-files 0     # the whole corpus (long)

The corpus is lint_speed.py's (the installed sources of jax, flax, optax, equinox, numpyro),
copied under a folder with a pyproject.toml so it is one project. It prints:

1. cold: the libcst parse floor, `jaxguard check` with the index and with
   `--no-project-index`, the same number of processes, back to back in each round; the
   ratios to the floor (goal: with the index within 1.5x the floor);
2. the time to build the index alone (summaries, cold and from the index store);
3. peak memory (largest RSS of any process) of a cold run with the index (goal < 500 MB);
4. warm single-file checks in a 500-file project (the editor and pre-commit case): the CLI on
   one file with the result cache warm, with and without the index; flake8 on that file
   (which lints it every time) with the index store warm, against the CLI linting the file
   alone with no cache (goal: within 0.3 s).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lint_speed  # noqa: E402  (same folder: the corpus and the parse floor)

BIN = Path(sys.executable).parent


def run(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - start


def check(cwd: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "jaxguard", "check", "--exit-zero", "-q", *args]


def peak_rss_mb(command: list[str], cwd: Path) -> float:
    """The largest resident set of the command or any process it started (children are waited for)."""
    probe = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", probe, *command], cwd=cwd, capture_output=True, text=True).stdout
    return int(out.strip() or 0) / 1024


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-files", type=int, default=None, help="files per package (default: a 10%% sample; 0: all)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="jaxguard-index-bench-"))
    try:
        project = workdir / "corpus"
        project.mkdir()
        (project / "pyproject.toml").write_text("[project]\nname = 'corpus'\n")
        corpus = {}
        for name in lint_speed.PACKAGES:
            folder = lint_speed.package_dir(name)
            count = len(list(folder.rglob("*.py"))) if folder else 0
            limit = args.max_files if args.max_files is not None else max(1, count // 10)  # a 10% sample
            corpus.update(lint_speed.build_corpus([name], limit or None, project))
        files = [f for group in corpus.values() for f in group]
        lines = lint_speed.count_lines(files)
        print(f"corpus: {len(files)} files, {lines:,} lines; {args.jobs} jobs; load {os.getloadavg()[0]:.2f}")
        cold(project, files, args.jobs, args.repeat)
        index_alone(project, files, args.jobs)
        print(f"\npeak memory, cold run with the index: {peak_rss_mb(check(project, '--no-cache', '.'), project):.0f} MB (goal < 500 MB)")
        warm_single_file(workdir, args.jobs)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def cold(project: Path, files, jobs: int, repeat: int) -> None:
    print("\ncold, back to back in each round (seconds)")
    with_index, without, floors = [], [], []
    for round_ in range(1, repeat + 1):
        floor = lint_speed.libcst_floor(files, jobs)
        indexed = run(check(project, "--no-cache", "--jobs", str(jobs), "."), project)
        alone = run(check(project, "--no-cache", "--no-project-index", "--jobs", str(jobs), "."), project)
        floors.append(floor)
        with_index.append(indexed / floor)
        without.append(alone / floor)
        print(f"  [{round_}] floor {floor:6.2f}   with index {indexed:6.2f} ({indexed / floor:.2f}x)   without {alone:6.2f} ({alone / floor:.2f}x)")
    ratio = statistics.median(with_index)
    print(f"  median: with the index {ratio:.2f}x the parse floor (goal <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'}),"
          f" without {statistics.median(without):.2f}x")


def index_alone(project: Path, files, jobs: int) -> None:
    from jaxguard.lint.project import build_index

    paths = [str(f) for f in files]
    cache = project.parent / "index-cache"
    start = time.perf_counter()
    ((index, _),) = build_index(paths, str(cache), [], project, jobs)
    first = time.perf_counter() - start
    start = time.perf_counter()
    build_index(paths, str(cache), [], project, jobs)
    second = time.perf_counter() - start
    print(f"\nindex alone: {len(index.summaries)} modules; built cold in {first:.2f} s ({jobs} processes), from its store in {second:.2f} s")


def warm_single_file(workdir: Path, jobs: int) -> None:
    """A 500-file project (100 files of each package, whole packages so imports resolve);
    the file checked is the one that imports most."""
    project = workdir / "five-hundred"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'five-hundred'\n")
    lint_speed.build_corpus(lint_speed.PACKAGES, 100, project)
    for folder in {p.parent for p in project.rglob("*.py")}:  # packages, so imports resolve
        (folder / "__init__.py").touch()
    files = sorted(project.rglob("*.py"))
    target = max(files, key=lambda p: p.read_text(errors="replace").count("import "))
    relative = str(target.relative_to(project))
    print(f"\nwarm single file in a {len(files)}-file project ({relative}, {target.read_text(errors='replace').count(chr(10))} lines)")
    run(check(project, "."), project)  # fills the result cache and the index store
    run(check(project, "--no-project-index", "."), project)
    times = {}
    for label, extra in (("with the index", ()), ("without (--no-project-index)", ("--no-project-index",))):
        samples = [run(check(project, *extra, relative), project) for _ in range(5)]
        times[label] = statistics.median(samples)
        print(f"  CLI, result cache warm, {label:<30} {times[label]:.3f} s (median of 5)")
    alone = statistics.median(run(check(project, "--no-cache", "--no-project-index", relative), project) for _ in range(5))
    print(f"  CLI, file linted alone, no cache{'':<17} {alone:.3f} s")
    flake8 = BIN / "flake8"
    if flake8.exists():
        command = [str(flake8), "--select", "JG", relative]
        samples = [run(command, project) for _ in range(5)]
        print(f"  flake8 --select JG on the file (index store warm) {statistics.median(samples):.3f} s")
    extra = times["with the index"] - times["without (--no-project-index)"]
    print(f"  the index adds {extra:+.3f} s to a warm single-file check (goal: within 0.3 s)")


if __name__ == "__main__":
    sys.exit(main())
