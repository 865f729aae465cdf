"""Overhead of jaxguard's runtime guards, from one run (a script, not a test).

    python benchmarks/runtime_overhead.py [--rounds 5]

Measures, per configuration:
- mlp:    a jitted training step of an MLP with 3 dense 512-wide layers, batch 256
- gather: a jitted embedding-style step (gathers + scatter-add gradient)
- tiny:   a microsecond-scale jitted call (x + 1 on a scalar)
- eager ops, outside any jit, on a 1000-element vector: `x[perm]`, `x.at[3].set(1.)`,
  `jnp.log(x)`, `x * 2`

Configurations: no guards; `jaxguard.enable()` defaults (each call's check read one call
late); `enable(deferred=False)` (read before the call returns); `jax_debug_nans`;
`jax_debug_key_reuse`. Each round times the mean of many calls per (configuration,
workload); configurations are interleaved round by round so machine noise hits all of
them alike. The tables show wall time of the best round (least disturbed by other
processes), of the median round, and the median CPU time of this process (all threads),
which other processes disturb least; ratios are against "none" with the same statistic.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from jaxguard import runtime


def _mlp_step():
    def init(key):
        sizes = [512, 512, 512, 512]
        keys = jax.random.split(key, len(sizes) - 1)
        return [(jax.random.normal(k, (m, n)) / np.sqrt(m), jnp.zeros(n))
                for k, m, n in zip(keys, sizes[:-1], sizes[1:])]

    def loss(params, x, y):
        for w, b in params[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = params[-1]
        return jnp.mean((x @ w + b - y) ** 2)

    @jax.jit
    def step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads)

    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    params = init(keys[0])
    x = jax.random.normal(keys[1], (256, 512))
    y = jax.random.normal(keys[2], (256, 512))
    state = {"params": params}

    def run():
        state["params"] = step(state["params"], x, y)
        return state["params"]
    return run


def _gather_step():
    @jax.jit
    def step(table, ids, targets):
        def loss(table):
            emb = table[ids]                      # gather: (256, 32, 64)
            pooled = emb.mean(axis=1)
            return jnp.mean((pooled - targets) ** 2)
        grad = jax.grad(loss)(table)              # scatter-add into the table
        return table - 0.1 * grad

    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    table = jax.random.normal(keys[0], (20000, 64))
    ids = jax.random.randint(keys[1], (256, 32), 0, 20000)
    targets = jax.random.normal(keys[2], (256, 64))
    state = {"table": table}

    def run():
        state["table"] = step(state["table"], ids, targets)
        return state["table"]
    return run


def _tiny_call():
    f = jax.jit(lambda x: x + 1)
    x = jnp.float32(1.)
    return lambda: f(x)


def _eager(op):
    """An eager (un-jitted) op on a 1000-element float32 vector."""
    def make():
        x = jnp.arange(1., 1001.)
        perm = jnp.asarray(np.random.default_rng(0).permutation(1000))
        return {"getitem": lambda: x[perm], "at_set": lambda: x.at[3].set(1.),
                "log": lambda: jnp.log(x), "mul": lambda: x * 2.}[op]
    return make


WORKLOADS = {"mlp": (_mlp_step, 10), "gather": (_gather_step, 30), "tiny": (_tiny_call, 2000),
             "x[perm]": (_eager("getitem"), 200), ".at[i].set": (_eager("at_set"), 200),
             "jnp.log": (_eager("log"), 2000), "x * 2": (_eager("mul"), 2000)}


class _Config:
    def __init__(self, name, enter, leave):
        self.name, self.enter, self.leave = name, enter, leave


def _flag(name):
    return _Config(name, lambda: jax.config.update(name, True),
                   lambda: jax.config.update(name, False))


CONFIGS = [
    _Config("none", lambda: None, lambda: None),
    _Config("jaxguard", runtime.enable, runtime.disable),
    # each call's check read before it returns (the host waits for the device every call)
    _Config("deferred=False", lambda: runtime.enable(deferred=False), runtime.disable),
    _flag("jax_debug_nans"),
    _flag("jax_debug_key_reuse"),
]


def _time(run, calls: int) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) per call."""
    jax.block_until_ready(run())
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        out = run()
    jax.block_until_ready(out)
    return ((time.perf_counter() - start) / calls, (time.process_time() - start_cpu) / calls)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    # enable() warns that functions jitted under other configs are unguarded: expected.
    from jaxguard.runtime.errors import GuardCoverageWarning

    warnings.simplefilter("ignore", GuardCoverageWarning)

    # Build every (config, workload) once: functions must be jitted while their config
    # is active (enable() guards functions jitted after it).
    runners = {}
    for config in CONFIGS:
        config.enter()
        try:
            for name, (make, _) in WORKLOADS.items():
                run = make()
                jax.block_until_ready(run())  # compile
                runners[config.name, name] = run
        finally:
            config.leave()

    samples = {key: [] for key in runners}
    for _ in range(args.rounds):
        for config in CONFIGS:
            config.enter()
            try:
                for name, (_, calls) in WORKLOADS.items():
                    samples[config.name, name].append(_time(runners[config.name, name], calls))
            finally:
                config.leave()

    print(f"jaxguard runtime overhead: jax {jax.__version__} on {jax.default_backend()}, "
          f"{os.cpu_count()} cpus, python {platform.python_version()}, {args.rounds} rounds, "
          f"load average {os.getloadavg()[0]:.1f}")
    tables = (("wall time, best round", 0, min), ("wall time, median round", 0, statistics.median),
              ("CPU time of this process, median round", 1, statistics.median))
    for label, index, stat in tables:
        print(f"\n{label}:")
        print(f"{'workload':<11} " + " ".join(f"{c.name:>22}" for c in CONFIGS))
        for name in WORKLOADS:
            values = {c.name: stat([sample[index] for sample in samples[c.name, name]])
                      for c in CONFIGS}
            base = values["none"]
            unit, scale = ("ms", 1e3) if base > 1e-4 else ("us", 1e6)
            cells = [f"{values[c.name] * scale:8.3f} {unit} ({values[c.name] / base:5.2f}x)"
                     for c in CONFIGS]
            print(f"{name:<11} " + " ".join(f"{cell:>22}" for cell in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
