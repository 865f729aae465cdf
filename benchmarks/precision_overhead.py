"""check_ops overhead against running the jitted function, on a small MLP.

Run: PYTHONPATH=. python benchmarks/precision_overhead.py
Prints first-call (trace + compile + run) and warm (median of repeated calls) times.
"""

import itertools
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxguard.precision import _ops, check_ops

BATCH, WIDTHS = 128, (256, 512, 512, 10)
REPEATS = 50


def init(seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in itertools.pairwise(WIDTHS):
        w = rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)
        params.append({"w": jnp.asarray(w, jnp.float32), "b": jnp.zeros(n_out, jnp.float32)})
    x = jnp.asarray(rng.standard_normal((BATCH, WIDTHS[0])), jnp.float32)
    return params, x


def mlp(params, x):
    for layer in params[:-1]:
        x = jax.nn.gelu(x @ layer["w"] + layer["b"])
    logits = x @ params[-1]["w"] + params[-1]["b"]
    return jax.nn.log_softmax(logits)


def timed(call, clock=time.perf_counter):
    start = clock()
    jax.block_until_ready(call())
    return clock() - start


def main():
    params, x = init()
    jitted = jax.jit(mlp)
    _ops._CACHE.clear()
    reports = []

    def check():
        reports.append(check_ops(mlp, params, x))
        return reports[-1].outputs

    jit_first = timed(lambda: jitted(params, x))
    ops_first = timed(check)
    # Interleave the warm calls so that load from other processes hits both alike.
    jit_warm, ops_warm, jit_cpu, ops_cpu = [], [], [], []
    for _ in range(REPEATS):
        jit_warm.append(timed(lambda: jitted(params, x)))
        ops_warm.append(timed(check))
        # CPU time of this process (all its threads): the work done, not the waiting
        # for a CPU, so it holds up when other jobs load the machine.
        jit_cpu.append(timed(lambda: jitted(params, x), time.process_time))
        ops_cpu.append(timed(check, time.process_time))

    report = reports[-1]
    n_eqns = len(jax.make_jaxpr(mlp)(params, x).jaxpr.eqns)
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, {os.cpu_count()} cpu(s), load average {os.getloadavg()[0]:.1f}")
    print(f"MLP {WIDTHS}, batch {BATCH}, float32: {n_eqns} top-level equations, {len(report.records)} records checked")
    print(f"{'':18} {'jit':>10} {'check_ops':>11} {'ratio':>7}")
    rows = [
        ("first call", jit_first, ops_first),
        ("warm (median)", statistics.median(jit_warm), statistics.median(ops_warm)),
        ("warm (best)", min(jit_warm), min(ops_warm)),
        ("warm (CPU time)", statistics.median(jit_cpu), statistics.median(ops_cpu)),
    ]
    for name, jit_t, ops_t in rows:
        print(f"{name:18} {jit_t * 1e3:8.2f}ms {ops_t * 1e3:9.2f}ms {ops_t / jit_t:6.1f}x")
    worst = report.worst(1)[0]
    print(f"report: {len(report.failures)} failure(s); worst op: {worst.primitive} at {worst.source}")


if __name__ == "__main__":
    main()
