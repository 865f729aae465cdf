"""A small MLP trained with plain JAX: the kind of script that hides several sharp bits."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

LEARNING_RATE = 1e-2
history = []


def init_params(key, sizes):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = jax.random.normal(key, (fan_in, fan_out)) / jnp.sqrt(fan_in)  # same key every layer
        b = jnp.zeros(fan_out)
        params.append((w, b))
    return params


def forward(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_fn(params, x, y):
    logits = forward(params, x)
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))


@functools.partial(jax.jit, static_argnames=("lr",))
def train_step(params, x, y, lr=LEARNING_RATE):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    print("loss:", loss)  # prints a tracer once, then never again
    history.append(loss)  # leaks a tracer out of the trace
    new_params = [(w - lr * gw, b - lr * gb) for (w, b), (gw, gb) in zip(params, grads)]
    return new_params, loss


def one_hot(labels, classes):
    out = jnp.zeros((len(labels), classes))
    for row, label in enumerate(labels):
        out[row, label] = 1.0  # JAX arrays are immutable
    return out


def main():
    key = jax.random.PRNGKey(0)
    params = init_params(key, [4, 32, 3])
    x = jax.random.normal(key, (64, 4))  # key already consumed by init_params
    labels = np.random.randint(0, 3, size=64)
    y = one_hot(labels, 3)
    for step in range(100):
        params, loss = train_step(params, x, y)
    print("final loss", loss, "mean weight", jnp.mean([jnp.mean(w) for w, _ in params]))


if __name__ == "__main__":
    main()
