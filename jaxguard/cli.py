"""`jaxguard check | clean | rule | rules | run | precision`.

Exit codes of `check`: 0 clean, 1 findings remain, 2 usage or configuration error, or a
file that could not be checked (missing, unreadable, not text, does not parse, JG001-JG003);
every other file is still checked and reported. See docs/lint-at-scale.md.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import sys
from pathlib import Path

from jaxguard._version import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, as argparse does, without usage spam
        self.exit(EXIT_ERROR, f"jaxguard: error: {message}\n")


def _codes(values: list[str] | None) -> list[str]:
    return [c.strip() for value in values or [] for c in value.split(",") if c.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="jaxguard", description="Catch JAX's sharp bits.")
    parser.add_argument("--version", action="version", version=f"jaxguard {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = commands.add_parser("check", help="lint files and directories")
    check.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .); - reads stdin")
    check.add_argument("--select", action="append", help="codes or prefixes to enable (replaces the default set; ALL for every rule)")
    check.add_argument("--ignore", action="append", help="codes or prefixes to disable")
    check.add_argument("--extend-select", action="append", help="codes or prefixes to enable on top of the selection")
    check.add_argument("--exclude", action="append", help="glob patterns of paths to skip (added to the config's)")
    check.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    check.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes that may change behavior")
    check.add_argument("--diff", action="store_true", help="print the fixes as a diff instead of writing them")
    check.add_argument("--output-format", choices=("text", "concise", "json", "github", "sarif"), default="text")
    check.add_argument("--statistics", action="store_true", help="count findings per rule")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    check.add_argument("--config", metavar="FILE", help="pyproject.toml to read [tool.jaxguard] from")
    check.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    check.add_argument("--jobs", "-j", type=int, default=0, metavar="N", help="processes to use (default: all cores)")
    check.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    check.add_argument("--cache-dir", metavar="DIR", help="where the cache lives (default: .jaxguard_cache next to the config)")
    check.add_argument("--stdin-filename", metavar="PATH", help="the name of the file read from stdin (for config and messages)")
    check.add_argument(
        "--no-project-index", action="store_true", help="check each file alone, without what the project's other modules tell"
    )
    check.add_argument("--no-prefilter", action="store_true", help=argparse.SUPPRESS)  # for tests and benchmarks

    clean = commands.add_parser("clean", help="delete the result cache")
    clean.add_argument("--cache-dir", metavar="DIR", help="the cache to delete (default: .jaxguard_cache next to the config)")
    clean.add_argument("--config", metavar="FILE", help="pyproject.toml whose directory holds the cache")

    rule = commands.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", help="a rule code (JG301) or name (in-place-update)")
    commands.add_parser("rules", help="list every rule")
    commands.add_parser("server", help="run the language server (LSP over stdio; the server extra)")
    commands.add_parser("run", help="run a script with the runtime guards enabled", add_help=False)
    commands.add_parser("precision", help="precision report for a function", add_help=False)
    return parser


# What `jaxguard run` and `jaxguard precision` need beyond the linter: the `runtime` extra.
RUNTIME_MODULES = ("jax", "jaxlib", "numpy")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `run` and `precision` take the rest of the command line as they are.
    if argv and argv[0] in ("run", "precision"):
        missing = _missing_runtime()
        if missing:
            return _fail(
                f"`jaxguard {argv[0]}` needs {', '.join(missing)}: install jaxguard's runtime extra "
                "(from a checkout of jaxguard: pip install '.[runtime]')"
            )
        if argv[0] == "run":
            from jaxguard.runtime.cli import main as run_main

            return run_main(argv[1:])
        from jaxguard.precision.cli import main as precision_main

        return precision_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "clean":
            return _clean(args)
        if args.command == "rule":
            return _rule(args.code)
        if args.command == "rules":
            return _rules()
        if args.command == "server":
            return _server()
    except KeyboardInterrupt:
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_CLEAN
    except Exception as error:  # a bug of ours: one line and exit 2, never a traceback
        return _fail(f"internal error: {type(error).__name__}: {error}".splitlines()[0])
    parser.print_help()
    return EXIT_ERROR


def _server() -> int:
    import importlib.util

    if importlib.util.find_spec("pygls") is None or importlib.util.find_spec("lsprotocol") is None:
        return _fail("`jaxguard server` needs pygls 2: install jaxguard's server extra "
                     "(from a checkout of jaxguard: pip install '.[server]')")
    from jaxguard.server import main as server_main

    return server_main()


def _missing_runtime() -> list[str]:
    import importlib.util

    missing = []
    for name in RUNTIME_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def _fail(message: str) -> int:
    print(f"jaxguard: error: {message}", file=sys.stderr)
    return EXIT_ERROR


def _rule(key: str) -> int:
    from jaxguard.lint.registry import all_rules, rule_by_name_or_code

    rule = rule_by_name_or_code(key)
    if rule is None:
        known = list(all_rules()) + [r.name for r in all_rules().values()]
        close = difflib.get_close_matches(key.upper() if key[:2].lower() == "jg" else key, known, n=1)
        return _fail(f"unknown rule {key!r}" + (f" (did you mean {close[0]}?)" if close else ""))
    print(rule.document(), end="")
    return EXIT_CLEAN


def _rules() -> int:
    from jaxguard.lint.registry import catalog

    for code, rule in catalog().items():
        default = "on" if rule.default_on else "opt-in"
        where = "" if rule.in_tests or not rule.default_on else "  (off in test files)"
        print(f"{code}  {rule.name:<36} {default:<7} {rule.fix_kind}{where}")
    return EXIT_CLEAN


def _load_config(args: argparse.Namespace):
    from jaxguard.config import find_pyproject, load_config

    if args.config:
        config_path = Path(args.config)
    else:
        config_path = find_pyproject(Path.cwd())
        paths = [p for p in getattr(args, "paths", []) if p != "-"]
        if config_path is None and paths and Path(paths[0]).exists():
            config_path = find_pyproject(Path(paths[0]))
    return load_config(config_path)


def _cache_dir(args: argparse.Namespace, config) -> Path:
    from jaxguard.lint.cache import default_cache_dir

    return Path(args.cache_dir) if args.cache_dir else default_cache_dir(config.root)


def _clean(args: argparse.Namespace) -> int:
    from jaxguard.config import ConfigError
    from jaxguard.lint.cache import clean

    try:
        directory = _cache_dir(args, _load_config(args))
        removed = clean(directory)
    except ConfigError as error:
        return _fail(str(error))
    except (OSError, ValueError) as error:
        return _fail(f"cannot delete the cache: {error}")
    print(f"Removed cache at {directory}" if removed else f"No cache at {directory}")
    return EXIT_CLEAN


def _missing(raw: str):
    """The one-line diagnostic for a command-line path that is not a file or directory."""
    import os

    from jaxguard.lint.files import io_error

    if os.path.islink(raw):
        try:
            os.stat(raw)
        except OSError as error:
            return io_error(raw, f"cannot read: {error.strerror or error} (symlink)")
    if os.path.lexists(raw):
        return io_error(raw, "not a regular file or directory")
    return io_error(raw, "no such file or directory")


def _check(args: argparse.Namespace) -> int:
    from jaxguard.config import ConfigError
    from jaxguard.lint import report
    from jaxguard.lint.discover import discover
    from jaxguard.lint.parallel import Task, default_jobs, run
    from jaxguard.lint.project import project_views

    try:
        config = _load_config(args)
        if args.select is not None:
            config.select = _codes(args.select)
        config.ignore += _codes(args.ignore)
        config.extend_select += _codes(args.extend_select)
        config.exclude += _codes(args.exclude)
        config.validate()
    except ConfigError as error:
        return _fail(str(error))
    if args.jobs < 0:
        return _fail("--jobs must be 0 (all cores) or more")

    if "-" in args.paths:
        if args.paths != ["-"]:
            return _fail("'-' (stdin) cannot be combined with other paths")
        return _check_stdin(args, config)

    found = discover(args.paths, config.exclude, config.root)
    fix = args.fix or args.diff
    diagnostics = [_missing(path) for path in found.missing]
    error = bool(found.missing)
    fixed = 0
    unsafe_hidden = 0
    diffs: list[tuple[str, str]] = []
    cache_dir = None if args.no_cache else str(_cache_dir(args, config))
    jobs = args.jobs or default_jobs()
    views = {} if args.no_project_index else project_views(found.files, cache_dir, config.exclude, config.root, jobs)
    tasks = [
        Task(path, _settings_for(config, path).with_project(views.get(path)), fix, args.unsafe_fixes, not args.diff, not args.no_prefilter)
        for path in found.files
    ]
    for result in run(tasks, args.jobs, cache_dir):
        path = result.path
        diagnostics.extend(result.diagnostics)
        error = error or result.error
        fixed += result.fixed
        if not args.unsafe_fixes:
            unsafe_hidden += sum(1 for d in result.diagnostics if d.fix is not None and not d.fix.safe)
        if args.diff and result.fixed_source is not None and result.fixed_source != result.original:
            diffs.append((path, _diff(path, result.original, result.fixed_source)))
    diagnostics.sort(key=report.sort_key)
    diffs.sort()
    return _finish(args, diagnostics, error, fixed, unsafe_hidden, "".join(d for _, d in diffs))


def _settings_for(config, path: str):
    try:
        return config.settings_for(path)
    except (OSError, RuntimeError, ValueError):  # a symlink loop: the file is reported as unreadable
        return config.settings_for(".")


_NO_NEWLINE = "\\ No newline at end of file\n"


def _diff(path: str, original: str, fixed: str) -> str:
    """A unified diff that `patch` and `git apply` accept: a last line without a line break
    is followed by the "\\ No newline at end of file" marker, as diff(1) writes it."""
    lines = []
    for line in difflib.unified_diff(
        original.splitlines(keepends=True),
        fixed.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    ):
        lines.append(line)
        if not line.endswith("\n"):
            lines.append("\n" + _NO_NEWLINE)
    return "".join(lines)


def _check_stdin(args: argparse.Namespace, config) -> int:
    """`jaxguard check - --stdin-filename path`: what editors run on every keystroke.

    Findings go to stdout; with --fix the fixed text (or, if nothing was fixed, the text as
    it came, byte for byte) goes to stdout and the findings that remain to stderr; with
    --diff the diff goes to stdout.
    """
    from jaxguard.lint.files import check_data, check_size, io_error, size_limit

    name = args.stdin_filename or "-"
    settings = config.settings_for(name) if args.stdin_filename else config.settings_for("stdin.py")
    limit = size_limit(name)
    data = sys.stdin.buffer.read(limit + 1)
    if args.stdin_filename and not args.no_project_index:
        from jaxguard.lint.project import view_for_text

        cache_dir = None if args.no_cache else str(_cache_dir(args, config))
        settings = settings.with_project(view_for_text(name, data, cache_dir, config.exclude, config.root))
    fix = args.fix or args.diff
    try:
        check_size(len(data), limit)
    except ValueError as problem:
        if args.fix and not args.diff:
            return _fail(f"{name}: {problem}")  # nothing on stdout: an editor keeps its buffer
        return _finish(args, [io_error(name, str(problem))], True, 0, 0, "")
    outcome = check_data(data, name, settings, fix=fix, unsafe=args.unsafe_fixes, prefilter=not args.no_prefilter)
    diagnostics, error, fixed = outcome.diagnostics, outcome.error, outcome.fixed
    unsafe_hidden = 0 if args.unsafe_fixes else sum(1 for d in diagnostics if d.fix is not None and not d.fix.safe)
    if args.fix and not args.diff:
        sys.stdout.flush()
        sys.stdout.buffer.write(outcome.payload if outcome.payload is not None else data)
        sys.stdout.buffer.flush()
        with contextlib.redirect_stdout(sys.stderr):
            return _finish(args, diagnostics, error, fixed, unsafe_hidden, "")
    original, new = outcome.original, outcome.fixed_text
    diff = _diff(name, original, new) if args.diff and original is not None and new is not None and new != original else ""
    return _finish(args, diagnostics, error, fixed, unsafe_hidden, diff)


def _finish(args, diagnostics, error: bool, fixed: int, unsafe_hidden: int, diff: str) -> int:
    from jaxguard.lint import report

    if args.diff:
        sys.stdout.write(diff)
        if not args.quiet:
            print(f"Would fix {fixed} error{'s' if fixed != 1 else ''}.", file=sys.stderr)
        if error:
            return EXIT_ERROR
        return EXIT_FINDINGS if fixed and not args.exit_zero else EXIT_CLEAN

    if args.statistics and args.output_format in ("text", "concise"):
        if diagnostics:
            print(report.statistics(diagnostics))
    elif args.statistics and args.output_format == "json":
        print(report.statistics_json(diagnostics))
    else:
        rendered = report.render(diagnostics, args.output_format)
        if rendered:
            print(rendered)
    if not args.quiet and args.output_format in ("text", "concise"):
        print(report.summary(diagnostics, fixed, unsafe_hidden, args.fix))
    if error:
        return EXIT_ERROR
    if diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
