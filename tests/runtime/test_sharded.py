"""Sharded programs on 8 simulated CPU devices, guarded: every jit option keeps its meaning.

Each case runs in a fresh process (the device count is fixed when jax starts)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("jax")

PRELUDE = """
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import jaxguard
mesh = jax.make_mesh((8,), ("x",))
replicated = NamedSharding(mesh, P())
split = NamedSharding(mesh, P("x"))
"""


def run(body: str) -> subprocess.CompletedProcess:
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu", "PATH": ""}
    source = PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, env=env, timeout=300)


def test_tuple_and_dict_out_shardings_keep_their_meaning():
    result = run("""
        jaxguard.enable()
        pair = jax.jit(lambda x: (x, x + 1), out_shardings=(replicated, split))
        a, b = pair(jnp.arange(8.0))
        assert a.sharding.spec == P() and b.sharding.spec == P("x"), (a.sharding, b.sharding)
        named = jax.jit(lambda x: {"w": x * 2, "b": x}, out_shardings={"w": split, "b": replicated})
        out = named(jnp.arange(8.0))
        assert out["w"].sharding.spec == P("x") and out["b"].sharding.spec == P()
        single = jax.jit(lambda x: (x, x), out_shardings=split)
        assert all(o.sharding.spec == P("x") for o in single(jnp.arange(8.0)))
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_a_nan_in_a_sharded_step_is_still_reported():
    result = run("""
        jaxguard.enable()
        step = jax.jit(lambda x: (jnp.log(x), x), in_shardings=split, out_shardings=(split, replicated))
        step(jnp.arange(1.0, 9.0))
        try:
            step(jnp.arange(8.0) - 1.0)
        except jaxguard.NaNError as error:
            print("NaNError")
    """)
    assert result.stdout.strip() == "NaNError", result.stderr[-2000:]
