"""`jaxguard precision module:function ...`: a quick precision report from the command line.

Inputs come either from a factory (``--args module:make_args`` returning a tuple of
arguments) or from shapes (``--shape 128,64 --shape 64`` with ``--dtype``, or a
per-input ``--shape 128,64:bfloat16``), filled with seeded standard normal values.
Exit status: 0 clean, 1 precision failures found, 2 bad command line or spec.
"""

import argparse
import importlib
import os
import sys

USAGE_ERROR = 2


class _SpecError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, no usage dump
        raise _SpecError(message)


def _parser():
    p = _Parser(prog="jaxguard precision", description="Where does this JAX function lose precision?")
    p.add_argument("target", help="module:function to check (module importable from the current directory)")
    p.add_argument("--args", metavar="MODULE:FACTORY", help="callable returning the argument tuple")
    p.add_argument("--shape", action="append", default=[], metavar="D0,D1[:DTYPE]", help="one input's shape; repeat per input; '' for a scalar")
    p.add_argument("--dtype", default="float32", help="dtype of --shape inputs without their own (default float32)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mode", choices=("ops", "grads", "divergence"), default="ops")
    p.add_argument("--rtol", type=float)
    p.add_argument("--atol", type=float)
    p.add_argument("--path", help="append failures as JSON lines to this file (ops mode)")
    p.add_argument("--html", metavar="FILE", help="write the report as an HTML page with a plot of error per op (ops mode)")
    return p


def _resolve(spec: str):
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise _SpecError(f"expected module:function, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj = importlib.import_module(module_name)
    except ImportError as exc:
        raise _SpecError(f"cannot import {module_name!r}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise _SpecError(f"{module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise _SpecError(f"{spec} is not callable")
    return obj


def _inputs(options):
    import ml_dtypes
    import numpy as np

    if options.args:
        made = _resolve(options.args)()
        return tuple(made) if isinstance(made, (tuple, list)) else (made,)
    if not options.shape:
        raise _SpecError("give the inputs: --args module:factory or one --shape per argument")
    rng = np.random.default_rng(options.seed)
    arrays = []
    for spec in options.shape:
        dims, _, dtype_name = spec.partition(":")
        dtype_name = dtype_name or options.dtype
        try:
            shape = tuple(int(d) for d in dims.split(",") if d.strip())
            dtype = np.dtype(getattr(ml_dtypes, dtype_name, dtype_name))
        except (ValueError, TypeError):
            raise _SpecError(f"bad --shape {spec!r}: expected e.g. 128,64 or 128,64:bfloat16") from None
        arrays.append(rng.standard_normal(shape).astype(dtype))
    return tuple(arrays)


def main(argv: list[str]) -> int:
    try:
        options = _parser().parse_args(argv)
        fn = _resolve(options.target)
        args = _inputs(options)
        if (options.rtol is None) != (options.atol is None):
            raise _SpecError("pass both --rtol and --atol, or neither")
    except _SpecError as exc:
        print(f"jaxguard precision: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except SystemExit as exc:  # --help
        return exc.code or 0
    try:
        return _report(options, fn, args)
    except Exception as exc:  # noqa: BLE001 - the function does not run on these inputs: a spec problem
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"jaxguard precision: error: {options.target} failed on these inputs: {type(exc).__name__}: {first}", file=sys.stderr)
        return USAGE_ERROR


def _report(options, fn, args) -> int:
    from jaxguard import precision

    if options.mode == "ops":
        report = precision.check_ops(fn, *args, rtol=options.rtol, atol=options.atol, path=options.path)
        print(report)
        if options.html:
            try:
                report.to_html(options.html)
            except OSError as exc:
                print(f"jaxguard precision: error: cannot write {options.html}: {exc.strerror}", file=sys.stderr)
                return USAGE_ERROR
        return 0 if report.passed else 1  # nothing checked is no pass either
    if options.mode == "grads":
        grads = precision.check_grads(fn, *args, seed=options.seed, rtol=options.rtol, atol=options.atol)
        print(grads)
        return 0 if grads.passed else 1
    report = precision.divergence(fn, *args, rtol=options.rtol, atol=options.atol)
    print(report)
    return 0 if report.passed else 1
