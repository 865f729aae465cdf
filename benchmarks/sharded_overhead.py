"""Overhead of jaxguard's runtime guards on a sharded training step (a script, not a test).

    python benchmarks/sharded_overhead.py [--rounds 7] [--devices 8]

A data-parallel MLP step (3 dense 512-wide layers, batch 256 split over the devices,
parameters replicated, `in_shardings`/`out_shardings` given) on simulated CPU devices
(`--xla_force_host_platform_device_count`), jitted plain and under `jaxguard.guard()`.
Each round times the mean of many calls of each, interleaved so that machine noise hits
both alike; prints the best and median round's wall time per call and the ratio, and the
load average (a busy machine inflates both). The goal the issue sets: 1.10x.

Each call is waited for before the next: with many collective programs queued at once on
simulated CPU devices, XLA's CPU runtime can stall in an all-reduce rendezvous and abort
("Expected 8 threads to join the rendezvous"), with or without jaxguard (seen with 50
queued calls on 2 cores). So this measures the step's latency, not asynchronous dispatch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--only", choices=["plain", "jaxguard"], default=None, help="time one of the two")
    args = parser.parse_args()
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.devices}"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    import jaxguard

    mesh = jax.make_mesh((args.devices,), ("data",))
    replicated, batched = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    sizes = [512, 512, 512, 512]
    keys = jax.random.split(jax.random.key(0), len(sizes) + 1)
    params = [(jax.random.normal(k, (m, n)) / np.sqrt(m), jnp.zeros(n))
              for k, m, n in zip(keys, sizes[:-1], sizes[1:])]
    params = jax.device_put(params, replicated)
    x = jax.device_put(jax.random.normal(keys[-2], (256, 512)), batched)
    y = jax.device_put(jax.random.normal(keys[-1], (256, 512)), batched)

    def loss(params, x, y):
        for w, b in params[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = params[-1]
        return jnp.mean((x @ w + b - y) ** 2)

    def step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads), loss(params, x, y)

    options = dict(in_shardings=(replicated, batched, batched), out_shardings=(replicated, replicated))
    plain = jax.jit(step, **options)
    with jaxguard.guard():
        guarded = jax.jit(step, **options)

    def per_call(fn, guard: bool) -> float:
        state = params
        if guard:
            with jaxguard.guard():
                state, value = fn(state, x, y)
                jax.block_until_ready(value)
                start = time.perf_counter()
                for _ in range(args.calls):
                    state, value = jax.block_until_ready(fn(state, x, y))
        else:
            state, value = fn(state, x, y)
            jax.block_until_ready(value)
            start = time.perf_counter()
            for _ in range(args.calls):
                state, value = jax.block_until_ready(fn(state, x, y))
        return (time.perf_counter() - start) / args.calls

    rounds = {"plain": [], "jaxguard": []}
    for _ in range(args.rounds):
        if args.only != "jaxguard":
            rounds["plain"].append(per_call(plain, False))
        if args.only != "plain":
            rounds["jaxguard"].append(per_call(guarded, True))
    if args.only:
        figures = rounds[args.only]
        print(f"{args.only}: best {min(figures) * 1e3:.2f} ms, median {statistics.median(figures) * 1e3:.2f} ms per call")
        return 0
    best = {k: min(v) for k, v in rounds.items()}
    median = {k: statistics.median(v) for k, v in rounds.items()}
    print(f"sharded MLP step on {args.devices} simulated CPU devices, {args.rounds} rounds of {args.calls} "
          f"calls, load average {os.getloadavg()[0]:.1f}")
    for label, figures in (("best round", best), ("median round", median)):
        print(f"  {label:<13} plain {figures['plain'] * 1e3:7.2f} ms   jaxguard {figures['jaxguard'] * 1e3:7.2f} ms"
              f"   {figures['jaxguard'] / figures['plain']:.2f}x (goal 1.10x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
