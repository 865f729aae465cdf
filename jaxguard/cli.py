"""`jaxguard check | rule | rules | run | precision`.

Exit codes: 0 clean, 1 findings remain, 2 usage error, unreadable/unparsable file or
internal error.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from jaxguard import __version__

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
    check.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    check.add_argument("--select", action="append", help="codes or prefixes to enable (replaces the default set; ALL for every rule)")
    check.add_argument("--ignore", action="append", help="codes or prefixes to disable")
    check.add_argument("--extend-select", action="append", help="codes or prefixes to enable on top of the selection")
    check.add_argument("--exclude", action="append", help="glob patterns of paths to skip (added to the config's)")
    check.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    check.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes that may change behavior")
    check.add_argument("--diff", action="store_true", help="print the fixes as a diff instead of writing them")
    check.add_argument("--output-format", choices=("text", "json"), default="text")
    check.add_argument("--statistics", action="store_true", help="count findings per rule")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    check.add_argument("--config", metavar="FILE", help="pyproject.toml to read [tool.jaxguard] from")
    check.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")

    rule = commands.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", help="a rule code (JG301) or name (in-place-update)")
    commands.add_parser("rules", help="list every rule")
    commands.add_parser("run", help="run a script with the runtime guards enabled", add_help=False)
    commands.add_parser("precision", help="precision report for a function", add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `run` and `precision` take the rest of the command line as they are.
    if argv and argv[0] == "run":
        from jaxguard.runtime.cli import main as run_main

        return run_main(argv[1:])
    if argv and argv[0] == "precision":
        from jaxguard.precision.cli import main as precision_main

        return precision_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "rule":
            return _rule(args.code)
        if args.command == "rules":
            return _rules()
    except KeyboardInterrupt:
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_CLEAN
    parser.print_help()
    return EXIT_ERROR


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
    from jaxguard.lint.registry import all_rules

    for code, rule in all_rules().items():
        default = "on" if rule.default_on else "opt-in"
        print(f"{code}  {rule.name:<36} {default:<7} {rule.fix_kind}")
    return EXIT_CLEAN


def _check(args: argparse.Namespace) -> int:
    from jaxguard.config import ConfigError, find_pyproject, load_config
    from jaxguard.lint import report
    from jaxguard.lint.discover import discover
    from jaxguard.lint.files import check_file, io_error

    try:
        if args.config:
            config_path = Path(args.config)
        else:
            config_path = find_pyproject(Path.cwd())
            if config_path is None and args.paths and Path(args.paths[0]).exists():
                config_path = find_pyproject(Path(args.paths[0]))
        config = load_config(config_path)
        if args.select is not None:
            config.select = _codes(args.select)
        config.ignore += _codes(args.ignore)
        config.extend_select += _codes(args.extend_select)
        config.exclude += _codes(args.exclude)
        config.validate()
    except ConfigError as error:
        return _fail(str(error))

    found = discover(args.paths, config.exclude, config.root)
    fix = args.fix or args.diff
    diagnostics = [io_error(path, "no such file or directory") for path in found.missing]
    error = bool(found.missing)
    fixed = 0
    unsafe_hidden = 0
    diffs: list[str] = []
    for path in found.files:
        result = check_file(path, config.settings_for(path), fix=fix, unsafe=args.unsafe_fixes, write=not args.diff)
        diagnostics.extend(result.diagnostics)
        error = error or result.error
        fixed += result.fixed
        if not args.unsafe_fixes:
            unsafe_hidden += sum(1 for d in result.diagnostics if d.fix is not None and not d.fix.safe)
        if args.diff and result.fixed_source is not None and result.fixed_source != result.original:
            diffs.append(
                "".join(
                    difflib.unified_diff(
                        result.original.splitlines(keepends=True),
                        result.fixed_source.splitlines(keepends=True),
                        fromfile=f"a/{path}",
                        tofile=f"b/{path}",
                    )
                )
            )
    diagnostics.sort(key=lambda d: d.sort_key())

    if args.diff:
        sys.stdout.write("".join(diffs))
        if not args.quiet:
            print(f"Would fix {fixed} error{'s' if fixed != 1 else ''}.", file=sys.stderr)
        if error:
            return EXIT_ERROR
        return EXIT_FINDINGS if fixed and not args.exit_zero else EXIT_CLEAN

    if args.statistics and args.output_format == "text":
        if diagnostics:
            print(report.statistics(diagnostics))
    else:
        rendered = report.render(diagnostics, args.output_format)
        if rendered:
            print(rendered)
    if not args.quiet and args.output_format == "text":
        print(report.summary(diagnostics, fixed, unsafe_hidden, args.fix))
    if error:
        return EXIT_ERROR
    if diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
