"""check_ops overhead against running the jitted function: a float32 MLP, and a bfloat16
transformer block with float32 accumulation (mixed precision, as trained on accelerators).

Run: PYTHONPATH=. python benchmarks/precision_overhead.py [--model mlp|transformer|both]
Prints first-call (trace + compile + run) and warm (median of repeated calls) times.
"""

import argparse

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


# A pre-norm transformer block: bf16 weights and activations, f32 accumulation in the
# matmuls and the softmax/LayerNorm statistics.
SEQ, D_MODEL, HEADS, D_FF = 256, 512, 8, 2048


def init_transformer(seed=0):
    rng = np.random.default_rng(seed)

    def weight(n_in, n_out):
        return jnp.asarray(rng.standard_normal((n_in, n_out)) / np.sqrt(n_in), jnp.bfloat16)

    params = {
        "qkv": weight(D_MODEL, 3 * D_MODEL), "out": weight(D_MODEL, D_MODEL),
        "up": weight(D_MODEL, D_FF), "down": weight(D_FF, D_MODEL),
        "ln1": jnp.ones(D_MODEL, jnp.bfloat16), "ln2": jnp.ones(D_MODEL, jnp.bfloat16),
    }
    x = jnp.asarray(rng.standard_normal((SEQ, D_MODEL)), jnp.bfloat16)
    return params, x


def _layer_norm(x, scale):
    x32 = x.astype(jnp.float32)
    mean = x32.mean(-1, keepdims=True)
    var = ((x32 - mean) ** 2).mean(-1, keepdims=True)
    return ((x32 - mean) * jax.lax.rsqrt(var + 1e-5)).astype(jnp.bfloat16) * scale


def _matmul(a, b):
    return jnp.matmul(a, b, preferred_element_type=jnp.float32).astype(jnp.bfloat16)


def transformer(params, x):
    h = _layer_norm(x, params["ln1"])
    q, k, v = jnp.split(_matmul(h, params["qkv"]), 3, axis=-1)
    heads = lambda t: t.reshape(SEQ, HEADS, D_MODEL // HEADS).transpose(1, 0, 2)
    q, k, v = heads(q), heads(k), heads(v)
    scores = jnp.einsum("hqd,hkd->hqk", q, k, preferred_element_type=jnp.float32) / np.sqrt(D_MODEL // HEADS)
    weights = jax.nn.softmax(scores, axis=-1).astype(jnp.bfloat16)
    attended = jnp.einsum("hqk,hkd->hqd", weights, v, preferred_element_type=jnp.float32).astype(jnp.bfloat16)
    x = x + _matmul(attended.transpose(1, 0, 2).reshape(SEQ, D_MODEL), params["out"])
    h = _layer_norm(x, params["ln2"])
    return x + _matmul(jax.nn.gelu(_matmul(h, params["up"])), params["down"])


MODELS = {
    "mlp": (mlp, init, f"MLP {WIDTHS}, batch {BATCH}, float32"),
    "transformer": (transformer, init_transformer,
                    f"transformer block (seq {SEQ}, d_model {D_MODEL}, {HEADS} heads, d_ff {D_FF}), bfloat16 with float32 accumulation"),
}


def timed(call, clock=time.perf_counter):
    start = clock()
    jax.block_until_ready(call())
    return clock() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=[*MODELS, "both"], default="both")
    chosen = parser.parse_args().model
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, {os.cpu_count()} cpu(s), load average {os.getloadavg()[0]:.1f}")
    for name in MODELS if chosen == "both" else [chosen]:
        measure(*MODELS[name])


def measure(fn, make_inputs, title):
    params, x = make_inputs()
    jitted = jax.jit(fn)
    _ops._CACHE.clear()
    reports = []

    def check():
        reports.append(check_ops(fn, params, x))
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
    n_eqns = len(jax.make_jaxpr(fn)(params, x).jaxpr.eqns)
    print(f"\n{title}: {n_eqns} top-level equations, {len(report.records)} records checked")
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
