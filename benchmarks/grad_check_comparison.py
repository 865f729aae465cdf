"""jaxguard's check_grads against jax.test_util.check_grads on 15 functions, with timings.

Run: PYTHONPATH=. python benchmarks/grad_check_comparison.py [--repeat 5]
For each function: whether its gradient is right, what each checker says (pass or fail,
with jaxguard's default probes=8, directions=2, seed=0), and jaxguard's wall time for the
first call (traces and compiles) and the median of later calls with the same function.
jax.test_util.check_grads runs with order=1, modes=("rev",) (custom_vjp has no forward
mode) and its float32 defaults (eps=1e-4 in the argument's dtype, tolerance 2e-3).
"""

import argparse
import functools
import itertools
import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.test_util import check_grads as jax_check_grads

from jaxguard.precision import check_grads

RNG = np.random.default_rng(0)


def f32(x):
    return jnp.asarray(x, jnp.float32)


def mlp_case():
    widths = (16, 32, 32, 1)
    params = [
        {"w": f32(RNG.standard_normal((a, b)) / np.sqrt(a)), "b": f32(RNG.standard_normal(b) * 0.1)}
        for a, b in itertools.pairwise(widths)
    ]
    x, y = f32(RNG.standard_normal((64, 16))), f32(RNG.standard_normal((64, 1)))

    def loss(params):
        h = x
        for layer in params[:-1]:
            h = jnp.tanh(h @ layer["w"] + layer["b"])
        return jnp.mean((h @ params[-1]["w"] + params[-1]["b"] - y) ** 2)

    return loss, (params,)


def cross_entropy_case():
    labels = jax.nn.one_hot(RNG.integers(0, 10, 32), 10)

    def loss(logits):
        return -jnp.mean(jnp.sum(labels * jax.nn.log_softmax(logits), axis=-1))

    return loss, (f32(RNG.standard_normal((32, 10)) * 3),)


def mse_case():
    # Seed 002: MSELoss(reduction="sum") of (x + 1) / 2 over 140 x 120 elements.
    target = f32(RNG.standard_normal((140, 120)))
    return (lambda x: jnp.sum(((x + 1) / 2 - target) ** 2)), (f32(RNG.standard_normal((140, 120))),)


def sin_with_backward(scale=1.0, element=None, factor=1.0):
    """sin whose custom backward pass is cos(x) * scale, and * factor at one element."""

    @jax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def bwd(x, g):
        grad = jnp.cos(x) * g * scale
        return (grad if element is None else grad.at[element].multiply(factor),)

    f.defvjp(lambda x: (jnp.sin(x), x), bwd)
    return lambda x: jnp.sum(f(x))


def dropout_case():
    key = jax.random.key(0)

    def loss(x, key):
        keep = jax.random.bernoulli(key, 0.8, x.shape)
        return jnp.sum(jnp.where(keep, jnp.tanh(x) / 0.8, 0.0) ** 2)

    return loss, (f32(RNG.standard_normal(500)), key)


def naive_variance(x):
    return jnp.mean(x**2) - jnp.mean(x) ** 2


X2000 = f32(RNG.standard_normal(2000))

CASES = [
    # name, gradient right?, make() -> (fn, args)
    ("tanh MLP (16-32-32-1, batch 64, params pytree)", True, mlp_case),
    ("logsumexp of 1,000 values (scale 10)", True, lambda: (jax.nn.logsumexp, (f32(RNG.standard_normal(1000) * 10),))),
    ("softmax cross-entropy (32 x 10 logits)", True, cross_entropy_case),
    ("seed-002 MSE, sum over 140 x 120", True, mse_case),
    ("sum(sin(x) * x), 1e6 elements", True, lambda: ((lambda x: jnp.sum(jnp.sin(x) * x)), (f32(RNG.standard_normal(1_000_000)),))),
    ("custom_vjp sin, backward off by 1.01", False, lambda: (sin_with_backward(scale=1.01), (X2000,))),
    ("custom_vjp sin, backward off by 1.0005", False, lambda: (sin_with_backward(scale=1.0005), (X2000,))),
    ("custom_vjp sin, backward sign flipped", False, lambda: (sin_with_backward(scale=-1.0), (X2000,))),
    ("custom_vjp sin, wrong (x2) at 1 element of 2,000", False, lambda: (sin_with_backward(element=1234, factor=2.0), (X2000,))),
    ("sum(relu(x)) at kinks (x has exact zeros)", True, lambda: ((lambda x: jnp.sum(jax.nn.relu(x))), (f32([-1.0, 0.0, 2.0, 0.0, 0.5, 0.0]),))),
    ("sum(x**8) at x = 10", True, lambda: ((lambda x: jnp.sum(x**8)), (f32([10.0]),))),
    ("naive variance mean(x**2) - mean(x)**2, x = 100 + N(0,1), 1,000", True, lambda: (naive_variance, (f32(100 + RNG.standard_normal(1000)),))),
    ("sum(x**3) at [1, 0, 1, 0]", True, lambda: ((lambda x: jnp.sum(x**3)), (f32([1.0, 0.0, 1.0, 0.0]),))),
    # Two more: the right custom_vjp the wrong ones are variants of, and a PRNG key argument.
    ("custom_vjp sin, backward right (the control)", True, lambda: (sin_with_backward(), (X2000,))),
    ("dropout loss with a PRNG key argument (not differentiated)", True, dropout_case),
]


def timed(call):
    """(result, wall seconds, CPU seconds of this process, all threads)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - start, time.process_time() - cpu


def jax_verdict(fn, args):
    # Both checkers differentiate the first argument; jax's gets the rest closed over.
    try:
        jax_check_grads(lambda x: fn(x, *args[1:]), args[:1], order=1, modes=("rev",))
    except AssertionError:
        return "fail"
    return "pass"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5, help="later calls timed per function")
    parser.add_argument("--verbose", action="store_true", help="print jaxguard's report for each function")
    options = parser.parse_args()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, {os.cpu_count()} cpu(s), load average {os.getloadavg()[0]:.1f}")
    print(f"{'':<64} {'':>8} {'':>8} {'':>5} {'first call':>17} {'later (median)':>17}")
    print(f"{'function':<64} {'gradient':>8} {'jaxguard':>8} {'jax':>5} {'wall':>8} {'CPU':>8} {'wall':>8} {'CPU':>8}")
    rows, firsts, laters = [], [], []
    for name, right, make in CASES:
        fn, args = make()
        check = functools.partial(check_grads, fn, *args)
        report, first, first_cpu = timed(check)
        again = [timed(check) for _ in range(options.repeat)]
        later, later_cpu = statistics.median(t[1] for t in again), statistics.median(t[2] for t in again)
        verdict = "pass" if report.passed else "fail"
        correct = verdict == ("pass" if right else "fail")
        rows.append(correct)
        firsts.append((first, first_cpu))
        laters.append((later, later_cpu))
        print(
            f"{name:<64} {'right' if right else 'WRONG':>8} {verdict:>8} {jax_verdict(fn, args):>5} "
            f"{first * 1e3:6.0f}ms {first_cpu * 1e3:6.0f}ms {later * 1e3:6.1f}ms {later_cpu * 1e3:6.1f}ms"
            f"{'' if correct else '  <- jaxguard is wrong here'}"
        )
        if options.verbose:
            print(report)
    print(
        f"jaxguard right on {sum(rows)}/{len(rows)}; slowest first call {max(t[0] for t in firsts) * 1e3:.0f} ms wall, "
        f"{max(t[1] for t in firsts) * 1e3:.0f} ms CPU (goal < 500); slowest later call "
        f"{max(t[0] for t in laters) * 1e3:.1f} ms wall, {max(t[1] for t in laters) * 1e3:.1f} ms CPU (goal < 100); "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
