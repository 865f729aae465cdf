"""One process of a two-process `jax.distributed` program (run by test_multiprocess.py):
a data-parallel step over 4 devices, 2 per process, guarded; `poison` puts a negative
number in process 1's shard, so `log` makes a NaN there only."""

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

jax.config.update("jax_cpu_collectives_implementation", "gloo")

import jaxguard  # noqa: E402

process, port, poison = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "poison"
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2,
                           process_id=process, initialization_timeout=60)
jaxguard.enable()

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

sharding = NamedSharding(jax.make_mesh((4,), ("data",)), P("data"))


@jax.jit
def step(w, x):
    y = jnp.log(x) * w  # the-log-line
    return jnp.mean(y), y


local = np.full((2, 3), 2.0, np.float32)
if poison and process == 1:
    local[0, 0] = -1.0
x = jax.make_array_from_process_local_data(sharding, local, (4, 3))
try:
    for _ in range(3):
        loss, _ = step(jnp.float32(2.0), x)
    print(f"process {process}: ok {float(loss):.4f}", flush=True)
except jaxguard.NaNError as error:
    print(f"process {process}: NaNError {error}", flush=True)
jax.distributed.shutdown()
print(f"process {process}: shut down", flush=True)
