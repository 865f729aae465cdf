"""Two `jax.distributed` processes on this machine (gloo collectives on the CPU): the guard
runs a correct sharded step in both, raises a NaN made on one process in both at the
user's line, and leaves no process waiting in a collective."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("multiprocess_worker.py")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_both(mode: str) -> list[str]:
    port = str(_free_port())
    processes = [subprocess.Popen([sys.executable, str(WORKER), str(i), port, mode],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for i in (0, 1)]
    outputs = []
    for process in processes:
        try:
            out, _ = process.communicate(timeout=240)  # a hang in a collective fails here
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            pytest.fail(f"a process hung ({mode})")
        outputs.append(out)
    return outputs


def test_a_correct_sharded_step_runs_guarded_in_both_processes():
    for i, out in enumerate(_run_both("clean")):
        assert f"process {i}: ok 1.3863" in out, out
        assert f"process {i}: shut down" in out, out


def test_a_nan_made_on_one_process_is_raised_in_both_at_the_users_line():
    for i, out in enumerate(_run_both("poison")):
        line = next(n for n, text in enumerate(WORKER.read_text().splitlines(), 1) if "# the-log-line" in text)
        assert f"process {i}: NaNError " in out, out
        assert f"multiprocess_worker.py:{line}: NaN produced by `log`" in out, out
        assert f"process {i}: shut down" in out, out
