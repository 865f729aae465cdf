"""Checking many files: a process pool (`--jobs`, default all cores) over files.check_file.

Files go out largest first in small chunks, so two cores stay busy until the end. Cache
hits are answered in the parent before any worker starts (a warm run starts no pool). A
worker that dies (e.g. a native crash in the parser) does not stop the run: the files of
its unfinished chunks are re-run one per process, and the one that kills its process is
reported as JG003 with its path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

from jaxguard.lint.files import FileResult, cached_result, check_file, read_bytes
from jaxguard.lint.registry import INTERNAL_ERROR
from jaxguard.lint.settings import LintSettings

# Below this many files to lint, a pool costs more than it saves.
MIN_FILES_FOR_POOL = 4


@dataclass(frozen=True)
class Task:
    path: str
    settings: LintSettings
    fix: bool = False
    unsafe: bool = False
    write: bool = True
    prefilter: bool = True


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


_worker_cache = None


def _init_worker(cache_dir: str | None) -> None:
    global _worker_cache
    if cache_dir is not None:
        from jaxguard.lint.cache import Cache

        _worker_cache = Cache(cache_dir)
    else:
        _worker_cache = None


def _run_task(task: Task, cache) -> FileResult:
    try:
        return check_file(task.path, task.settings, task.fix, task.unsafe, task.write, cache, task.prefilter)
    except Exception as error:  # check_file does not raise; belt and braces
        return _crashed(task.path, f"internal error: {type(error).__name__}: {error}".splitlines()[0])


def _run_chunk(tasks: list[Task]) -> list[FileResult]:
    return [_run_task(task, _worker_cache) for task in tasks]


def _crashed(path: str, message: str) -> FileResult:
    from jaxguard.lint.diagnostic import Diagnostic

    code, name = INTERNAL_ERROR
    return FileResult(path, [Diagnostic(code, name, message, 1, 1, 1, 1, path=path)], error=True)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def run(tasks: list[Task], jobs: int | None = None, cache_dir: str | None = None) -> Iterator[FileResult]:
    """Yield one FileResult per task (in no particular order)."""
    jobs = default_jobs() if not jobs or jobs < 1 else jobs
    cache = None
    if cache_dir is not None:
        from jaxguard.lint.cache import Cache

        cache = Cache(cache_dir)
    pending: list[Task] = []
    for task in tasks:
        # Answer cache hits here; only misses go to the workers.
        hit = _cached(task, cache) if cache is not None else None
        if hit is not None:
            yield hit
        else:
            pending.append(task)
    if jobs == 1 or len(pending) < MIN_FILES_FOR_POOL:
        for task in pending:
            yield _run_task(task, cache)
        return
    yield from _pooled(pending, jobs, cache_dir)


def _cached(task: Task, cache) -> FileResult | None:
    try:
        data = read_bytes(task.path)
    except ValueError:
        return None  # the worker reports it
    return cached_result(task.path, data, task.settings, task.fix, task.unsafe, cache)[0]


def _pooled(tasks: list[Task], jobs: int, cache_dir: str | None) -> Iterator[FileResult]:
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    ordered = sorted(tasks, key=lambda t: -_size(t.path))
    chunk = max(1, min(16, len(ordered) // (jobs * 8)))
    chunks = [ordered[i : i + chunk] for i in range(0, len(ordered), chunk)]
    unfinished: list[Task] = []
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(cache_dir,)) as pool:
        futures = {pool.submit(_run_chunk, c): c for c in chunks}
        for future in as_completed(futures):
            try:
                results = future.result()
            except BrokenProcessPool:
                unfinished.extend(futures[future])
                continue
            except Exception as error:  # pickling trouble and the like
                for task in futures[future]:
                    yield _crashed(task.path, f"internal error: {type(error).__name__}: {error}".splitlines()[0])
                continue
            yield from results
    for task in unfinished:
        yield _isolated(task, cache_dir)


def _isolated(task: Task, cache_dir: str | None) -> FileResult:
    """Re-run one file in a process of its own: if that process dies, blame the file."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=1, initializer=_init_worker, initargs=(cache_dir,)) as pool:
            return pool.submit(_run_chunk, [task]).result()[0]
    except BrokenProcessPool:
        return _crashed(task.path, "internal error: the checker's process crashed on this file (skipped)")
