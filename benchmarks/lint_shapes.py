"""How long does `jaxguard check` take on one file of each shape that stresses a whole-module
judgement? A script, not a test: it prints seconds per file.

    python benchmarks/lint_shapes.py [--scale 1]

Each shape is generated at the given scale and linted alone, without the cache:
- script: a notebook-like script with hundreds of module-level calls, then globals rebound
  after them (JG102 asks, for every read, whether anything run at import reaches the reader);
- globals: a hundred globals set by functions from each other (the "set to new values"
  judgement follows the chain);
- prints: two hundred helpers that print, called from fifty jitted functions (JG101 asks
  which of a helper's parameters traced callers fill with traced values);
- draws: one function that splits its key and draws eight hundred times (the key rules ask,
  for every draw, whether its numbers are used or only its shape).
A file of a few thousand lines should take well under a second on each.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def script(scale: int) -> str:
    helpers, reads, calls = 60 * scale, 80 * scale, 600 * scale
    lines = ["import jax", ""]
    for i in range(helpers):
        lines.append(f"def h{i}(x):\n    return h{(i + 1) % helpers}(x) if x > 100 else x + {i}\n")
    lines.append("@jax.jit\ndef f(x):\n    return x + " + " + ".join(f"g{j}" for j in range(reads)) + "\n")
    lines += [f"g{j} = 0.0" for j in range(reads)]
    lines += [f"y{i} = h{i % helpers}({i})" for i in range(calls)]
    lines += [f"g{j} = 1.0" for j in range(reads)]
    return "\n".join(lines) + "\n"


def globals_(scale: int) -> str:
    count = 100 * scale
    lines = ["import jax", ""]
    for j in range(count):
        lines.append(
            f"G{j} = None\ndef set{j}(v):\n    global G{j}\n"
            f"    G{j} = jax.devices()[0].platform + str(G{(j + 1) % count})\n"
        )
    body = "".join(f"    x = x + (1 if G{j % count} else 0)\n" for j in range(3 * count))
    lines.append("@jax.jit\ndef f(x):\n" + body + "    return x\n")
    return "\n".join(lines) + "\n"


def prints(scale: int) -> str:
    helpers, jitted = 200 * scale, 50 * scale
    lines = ["import jax", ""]
    for j in range(helpers):
        lines.append(f"def h{j}(v, w):\n    print('h', v)\n    return v * 2\n")
    for k in range(jitted):
        body = "".join(f"    x = h{(k * 7 + j) % helpers}(x, {j})\n" for j in range(40))
        lines.append(f"@jax.jit\ndef f{k}(x):\n" + body + "    return x\n")
    return "\n".join(lines) + "\n"


def draws(scale: int) -> str:
    count = 800 * scale
    lines = ["import jax", "", "def sample(key):"]
    for i in range(count):
        lines += [f"    key, k{i} = jax.random.split(key)", f"    x{i} = jax.random.normal(k{i}, (3,))"]
    lines.append("    return " + " + ".join(f"x{i}" for i in range(0, count, 50)))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1)
    scale = parser.parse_args().scale
    with tempfile.TemporaryDirectory() as folder:
        for name, make in (("script", script), ("globals", globals_), ("prints", prints), ("draws", draws)):
            path = Path(folder) / f"{name}.py"
            text = make(scale)
            path.write_text(text)
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "jaxguard", "check", str(path), "--no-cache", "--output-format", "concise"],
                check=False, capture_output=True, text=True,  # findings exit 1: the time is what counts
            )
            seconds = time.perf_counter() - start
            print(f"{name:8} {text.count(chr(10)):6} lines  {seconds:6.2f} s (including ~0.4 s start-up)")


if __name__ == "__main__":
    main()
