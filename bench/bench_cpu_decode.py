#!/usr/bin/python3
"""CPU decode of a ~124M-parameter Nenya model against its bytes floor.

The model is the design document's size (d_model 768, 12 blocks in its
layer pattern, GDN heads of 128, a GPT-2-sized vocabulary with tied
embeddings; the configuration the GPU model check times), with random bf16
weights made here. gdn-compile builds it for this CPU; its gdn-model
prefills a prompt of random ids and decodes greedily. The floor of a
decode step is the bytes it must read, (weight bytes + state and cache
bytes), over the memory bandwidth measured in the same run: a copy of 512
MiB by one thread, and by as many threads as the model runs (the larger
of the two gives the floor). A copy's rate counts its reads and its
writes; the read floor takes the same bytes over the rate of sums that
only read, as the step does.

    OMP_NUM_THREADS=2 /usr/bin/python3 bench/bench_cpu_decode.py
    /usr/bin/python3 bench/bench_cpu_decode.py --context 2048 --steps 32
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from build_gpu_models import NENYA_124M  # noqa: E402
from gdn import cache, model, safetensors  # noqa: E402


def copy_bandwidth(threads):
    """Bytes per second (read + written) of 512 MiB copied by `threads`
    numpy copies side by side (numpy releases the GIL), best of 3."""
    size = (64 << 20) // threads
    pairs = [(np.ones(size, np.float64), np.empty(size, np.float64))
             for _ in range(threads)]
    best = 0.0
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for _ in range(3):
            start = time.perf_counter()
            list(pool.map(lambda p: np.copyto(p[1], p[0]), pairs))
            seconds = time.perf_counter() - start
            best = max(best, 2 * 8 * size * threads / seconds)
    return best


def read_bandwidth(threads):
    """Bytes per second read by `threads` numpy sums of 512 MiB of f32 side
    by side, best of 3: a stream that only reads, as a decode step's
    weights are read (a copy's rate counts its writes too, and this machine
    writes and reads at once faster than it only reads)."""
    size = (128 << 20) // threads
    arrays = [np.ones(size, np.float32) for _ in range(threads)]
    best = 0.0
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for _ in range(3):
            start = time.perf_counter()
            list(pool.map(np.sum, arrays))
            seconds = time.perf_counter() - start
            best = max(best, 4 * size * threads / seconds)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "out",
                                                      "nenya-124m-cpu"))
    parser.add_argument("--context", type=int, default=64,
                        help="prompt tokens before decoding (default: 64)")
    parser.add_argument("--steps", type=int, default=32,
                        help="decode steps timed (default: 32)")
    args = parser.parse_args()
    compiler = cache.find_compiler()
    os.makedirs(args.out, exist_ok=True)
    config_path = os.path.join(args.out, "model.json")
    weights_path = os.path.join(args.out, "model.safetensors")
    with open(config_path, "w") as f:
        json.dump(NENYA_124M, f, indent=1)
    if not os.path.exists(weights_path):
        safetensors.save(weights_path, model.init_weights(NENYA_124M, 1),
                         "bf16")
    compiled = os.path.join(args.out, "compiled")
    subprocess.run([compiler, config_path, "--weights", weights_path, "-o",
                    compiled, "--quiet"], check=True)
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
    ids = np.random.default_rng(1).integers(0, NENYA_124M["vocab_size"],
                                            args.context)
    run = subprocess.run(
        [os.path.join(compiled, "gdn-model"), "--quiet", "--no-stream",
         "--ids=" + ",".join(map(str, ids)), "-n", str(args.steps),
         "--ignore-eos", "--weights", weights_path],
        capture_output=True, text=True, check=True)
    decode_ms = float(re.search(r"\(([\d.]+) ms per step\)", run.stdout)[1])
    cache_bytes = int(re.search(r"cache: +(\d+) bytes", run.stdout)[1])
    weight_bytes = os.path.getsize(weights_path)
    one = copy_bandwidth(1)
    many = copy_bandwidth(threads) if threads > 1 else one
    bandwidth = max(one, many)
    floor_ms = (weight_bytes + cache_bytes) / bandwidth * 1e3
    read = max(read_bandwidth(1),
               read_bandwidth(threads) if threads > 1 else 0.0)
    read_floor_ms = (weight_bytes + cache_bytes) / read * 1e3
    print(run.stdout.strip())
    print(f"\n| model | threads | context | decode ms/token | weight + cache "
          "MB | copy GB/s (1 thread / all) | bytes floor ms | decode / floor "
          "| read GB/s | read floor ms | decode / read floor |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print(f"| nenya-124m (bf16) | {threads} | {args.context} | "
          f"{decode_ms:.2f} | {(weight_bytes + cache_bytes) / 1e6:.1f} | "
          f"{one / 1e9:.1f} / {many / 1e9:.1f} | {floor_ms:.2f} | "
          f"{decode_ms / floor_ms:.2f}x | {read / 1e9:.1f} | "
          f"{read_floor_ms:.2f} | {decode_ms / read_floor_ms:.2f}x |")


if __name__ == "__main__":
    main()
