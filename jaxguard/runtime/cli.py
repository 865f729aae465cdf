"""`jaxguard run script.py [args...]`: run a script with the runtime guards enabled.

The guards are switched on before the script (or any module it imports) runs, so every
`jax.jit` in user code is guarded and nothing in the code has to change.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import runpy
import sys
import traceback

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxguard run",
        description="Run a Python script with jaxguard's runtime guards enabled.")
    x64 = parser.add_mutually_exclusive_group()
    x64.add_argument("--x64", dest="x64", action="store_true", default=None,
                     help="switch jax_enable_x64 on before anything is traced")
    x64.add_argument("--no-x64", dest="x64", action="store_false",
                     help="switch jax_enable_x64 off")
    parser.add_argument("--no-nans", dest="nans", action="store_false",
                        help="do not check for NaNs")
    parser.add_argument("--infs", action="store_true", help="also check for infinities")
    parser.add_argument("--no-oob", dest="oob", action="store_false",
                        help="do not check indexing bounds")
    parser.add_argument("--no-key-reuse", dest="key_reuse", action="store_false",
                        help="do not check PRNG key reuse")
    parser.add_argument("--recompiles", type=int, default=3, metavar="N",
                        help="warn when one function is traced more than N times "
                             "(0 switches the guard off; default 3)")
    parser.add_argument("--tracer-leaks", action="store_true",
                        help="switch jax_check_tracer_leaks on")
    parser.add_argument("--transfers", default=None,
                        choices=["allow", "log", "disallow", "log_explicit",
                                 "disallow_explicit"],
                        help="transfer guard level for implicit host/device transfers")
    parser.add_argument("--rank-promotion", default=None, choices=["allow", "warn", "raise"],
                        help="jax_numpy_rank_promotion setting")
    parser.add_argument("-m", dest="module", action="store_true",
                        help="run TARGET as a module, like python -m")
    parser.add_argument("target", metavar="script.py", help="the script (or module) to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return parser


def _print_user_traceback(exc: BaseException) -> None:
    """The traceback python would print, without runpy's and jaxguard's own frames."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if not frame.filename.startswith((_RUNTIME_DIR, "<frozen"))]
    print("Traceback (most recent call last):", file=sys.stderr)
    print("".join(traceback.format_list(frames)), end="", file=sys.stderr)
    print("".join(traceback.format_exception_only(type(exc), exc)), end="", file=sys.stderr)


def _module_exists(name: str) -> bool:
    sys.path.insert(0, os.getcwd())  # as `python -m` would see it
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a missing parent package, or an empty name
        return False
    finally:
        sys.path.pop(0)


def main(argv: list[str]) -> int:
    """Entry point used by `jaxguard run`; returns the process exit code."""
    parser = _parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its one-line error or help
        return int(exc.code or 0)
    if ns.recompiles < 0:
        print("jaxguard run: error: --recompiles must be 0 or more", file=sys.stderr)
        return 2
    if not ns.module and not os.path.isfile(ns.target):
        print(f"jaxguard run: error: no such script: {ns.target}", file=sys.stderr)
        return 2
    if ns.module and not _module_exists(ns.target):
        print(f"jaxguard run: error: no such module: {ns.target}", file=sys.stderr)
        return 2

    try:
        from jaxguard import runtime
    except ImportError as exc:
        print(f"jaxguard run: error: the runtime guards need jax ({exc}); "
              f"install with `pip install jaxguard[runtime]`", file=sys.stderr)
        return 2
    runtime.enable(x64=ns.x64, nans=ns.nans, infs=ns.infs, oob=ns.oob,
                   key_reuse=ns.key_reuse, recompiles=ns.recompiles or None,
                   tracer_leaks=ns.tracer_leaks, transfers=ns.transfers,
                   rank_promotion=ns.rank_promotion)

    saved_argv, saved_path0 = sys.argv[:], sys.path[0]
    sys.argv = [ns.target, *ns.args]
    try:
        if ns.module:
            sys.path[0] = os.getcwd()
            runpy.run_module(ns.target, run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(ns.target))
            runpy.run_path(ns.target, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except Exception as exc:  # the script's own failure: show it like python would
        _print_user_traceback(exc)
        return 1
    finally:
        sys.argv, sys.path[0] = saved_argv, saved_path0
        runtime.disable()
    return 0
