"""torch.autograd.gradcheck on the cases of grad_check_comparison.py, in float32: the
column a PyTorch user would compare jaxguard's check_grads with.

Run in an environment with torch (jaxguard does not need it):
    python -m venv /tmp/torch-venv && /tmp/torch-venv/bin/pip install torch numpy
    /tmp/torch-venv/bin/python benchmarks/torch_gradcheck_anchor.py
Each case is the same function, gradient and input distribution as in
grad_check_comparison.py (the data are drawn anew: verdicts, not digits, are compared).
gradcheck runs three ways per case on float32 inputs: with its defaults (eps=1e-6, atol=1e-5,
rtol=1e-3), and with eps=1e-3, a step float32 can resolve; its fast mode (one random
projection, like jaxguard's directions) is the third column; the fourth runs its defaults on
the same inputs in float64, as its documentation asks (a different question: is the
gradient right in float64, not in the dtype the model runs in). The 1e6-element case is left
out: gradcheck's slow mode evaluates the function twice per element.
"""

import itertools
import math
import time
import warnings

import numpy as np
import torch

RNG = np.random.default_rng(0)
DTYPE = torch.float32  # what the cases are built in; float64 for the last column


def f32(x):
    """A differentiated input (in DTYPE)."""
    return torch.tensor(np.asarray(x, np.float64), dtype=DTYPE, requires_grad=True)


def mlp_case():
    widths = (16, 32, 32, 1)
    layers = [
        (torch.tensor(RNG.standard_normal((a, b)) / math.sqrt(a), dtype=DTYPE),
         torch.tensor(RNG.standard_normal(b) * 0.1, dtype=DTYPE))
        for a, b in itertools.pairwise(widths)
    ]
    x = torch.tensor(RNG.standard_normal((64, 16)), dtype=DTYPE)
    y = torch.tensor(RNG.standard_normal((64, 1)), dtype=DTYPE)
    first_w = f32(layers[0][0].numpy())

    def loss(w0):
        h = torch.tanh(x @ w0 + layers[0][1])
        for w, b in layers[1:-1]:
            h = torch.tanh(h @ w + b)
        w, b = layers[-1]
        return torch.mean((h @ w + b - y) ** 2)

    return loss, first_w


def cross_entropy_case():
    labels = torch.tensor(RNG.integers(0, 10, 32))
    return (lambda logits: torch.nn.functional.cross_entropy(logits, labels)), f32(RNG.standard_normal((32, 10)) * 3)


def mse_case():
    target = torch.tensor(RNG.standard_normal((140, 120)), dtype=DTYPE)
    return (lambda x: torch.sum(((x + 1) / 2 - target) ** 2)), f32(RNG.standard_normal((140, 120)))


def sin_with_backward(scale=1.0, element=None, factor=1.0):
    """sin whose custom backward pass is cos(x) * scale, and * factor at one element."""

    class Sin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return torch.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            grad = torch.cos(x) * g * scale
            if element is not None:
                grad = grad.clone()
                grad[element] *= factor
            return grad

    return lambda x: torch.sum(Sin.apply(x))


def x2000():
    return f32(RNG.standard_normal(2000))


CASES = [
    ("tanh MLP (16-32-32-1, batch 64; first layer's weights)", True, mlp_case),
    ("logsumexp of 1,000 values (scale 10)", True, lambda: (lambda x: torch.logsumexp(x, 0), f32(RNG.standard_normal(1000) * 10))),
    ("softmax cross-entropy (32 x 10 logits)", True, cross_entropy_case),
    ("seed-002 MSE, sum over 140 x 120", True, mse_case),
    ("custom sin, backward off by 1.01", False, lambda: (sin_with_backward(scale=1.01), x2000())),
    ("custom sin, backward off by 1.0005", False, lambda: (sin_with_backward(scale=1.0005), x2000())),
    ("custom sin, backward sign flipped", False, lambda: (sin_with_backward(scale=-1.0), x2000())),
    ("custom sin, wrong (x2) at 1 element of 2,000", False, lambda: (sin_with_backward(element=1234, factor=2.0), x2000())),
    ("sum(relu(x)) at kinks (x has exact zeros)", True, lambda: (lambda x: torch.sum(torch.relu(x)), f32([-1.0, 0.0, 2.0, 0.0, 0.5, 0.0]))),
    ("sum(x**8) at x = 10", True, lambda: (lambda x: torch.sum(x**8), f32([10.0]))),
    ("naive variance mean(x**2) - mean(x)**2, x = 100 + N(0,1), 1,000", True,
     lambda: (lambda x: torch.mean(x**2) - torch.mean(x) ** 2, f32(100 + RNG.standard_normal(1000)))),
    ("sum(x**3) at [1, 0, 1, 0]", True, lambda: (lambda x: torch.sum(x**3), f32([1.0, 0.0, 1.0, 0.0]))),
    ("custom sin, backward right (the control)", True, lambda: (sin_with_backward(), x2000())),
]


def in_float64(make):
    """The case built again with float64 inputs and constants."""
    global DTYPE
    DTYPE = torch.float64
    try:
        return make()
    finally:
        DTYPE = torch.float32


def verdict(fn, x, **options) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "not a double precision" input: that is the point here
        ok = torch.autograd.gradcheck(fn, (x,), raise_exception=False, **options)
    return "pass" if ok else "fail"


def main():
    print(f"torch {torch.__version__}, float32 inputs")
    print("| function | gradient | gradcheck defaults | gradcheck eps=1e-3 | gradcheck fast_mode | gradcheck, float64 inputs | seconds |")
    print("|---|---|---|---|---|---|---|")
    right_calls = 0
    for name, right, make in CASES:
        fn, x = make()
        start = time.perf_counter()
        results = [verdict(fn, x), verdict(fn, x, eps=1e-3), verdict(fn, x, eps=1e-3, fast_mode=True)]
        seconds = time.perf_counter() - start
        right_calls += sum((r == "pass") == right for r in results)
        double = verdict(*in_float64(make))
        shown = ["**wrong**" if not right else "right", *results, double]
        print(f"| `{name}` | " + " | ".join(shown) + f" | {seconds:.2f} |")
    print(f"float32 verdicts right: {right_calls} of {3 * len(CASES)}")


if __name__ == "__main__":
    main()
