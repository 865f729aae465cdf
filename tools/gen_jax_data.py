"""Regenerate jaxguard/data/*.json from the installed JAX (run on a JAX upgrade).

- jnp_list_args.json: for each jax.numpy function, the positional argument indexes at
  which a Python list raises TypeError (JG501), found by calling the function.
- jax_config_options.json: the names of JAX's configuration options (`jax.config.values`),
  the other attributes of `jax.config`, and the `JAX_...` environment variables JAX reads
  (one per option, plus the string literals `"JAX_..."` in JAX's own sources) (JG904).
"""

from __future__ import annotations

import inspect
import json
import pathlib
import re
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


def jax_config_options() -> dict[str, list[str]]:
    options = sorted(jax.config.values)
    attributes = sorted(a for a in dir(jax.config) if not a.startswith("__") and a not in jax.config.values)
    env_vars = {name.upper() for name in options}
    roots = [pathlib.Path(jax.__file__).resolve().parent]
    try:
        import jaxlib

        roots.append(pathlib.Path(jaxlib.__file__).resolve().parent)
    except ImportError:
        pass
    literal = re.compile(r"""["'](JAX_[A-Z0-9_]+)["']""")
    for root in roots:
        for path in root.rglob("*.py"):
            env_vars.update(literal.findall(path.read_text(encoding="utf-8", errors="ignore")))
    return {"options": options, "attributes": attributes, "env_vars": sorted(env_vars)}


def main() -> None:
    DATA.mkdir(exist_ok=True)
    payload = {"jax_version": jax.__version__, "functions": jnp_list_args()}
    (DATA / "jnp_list_args.json").write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    print(f"{len(payload['functions'])} functions from jax {jax.__version__}")
    config = {"jax_version": jax.__version__, **jax_config_options()}
    (DATA / "jax_config_options.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    print(f"{len(config['options'])} config options, {len(config['env_vars'])} environment variables")


if __name__ == "__main__":
    main()
