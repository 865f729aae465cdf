"""Regenerate jaxguard/data/*.json from the installed JAX (run on a JAX upgrade).

- jnp_list_args.json: for each jax.numpy function, the positional argument indexes at
  which a Python list raises TypeError (JG501), found by calling the function.
"""

from __future__ import annotations

import inspect
import json
import pathlib
import warnings

import jax
import jax.numpy as jnp

DATA = pathlib.Path(__file__).resolve().parent.parent / "jaxguard" / "data"


def _rejects_list(func, position: int, arity: int) -> bool:
    args = [jnp.ones(3) for _ in range(arity)]
    args[position] = [1.0, 2.0, 3.0]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            func(*args)
    except TypeError as error:
        # check_arraylike's own message names the offending position
        return f"got <class 'list'> at position {position}" in str(error)
    except Exception:
        return False
    return False


def jnp_list_args() -> dict[str, list[int]]:
    table = {}
    for name in sorted(dir(jnp)):
        func = getattr(jnp, name)
        if name.startswith("_") or not callable(func) or inspect.isclass(func):
            continue
        positions = []
        for arity in (1, 2, 3):
            found = [p for p in range(arity) if _rejects_list(func, p, arity)]
            if found:
                positions = sorted(set(positions) | set(found))
        if positions:
            table[name] = positions
    return table


def main() -> None:
    DATA.mkdir(exist_ok=True)
    payload = {"jax_version": jax.__version__, "functions": jnp_list_args()}
    (DATA / "jnp_list_args.json").write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    print(f"{len(payload['functions'])} functions from jax {jax.__version__}")


if __name__ == "__main__":
    main()
