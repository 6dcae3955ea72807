"""The calls of one compiled CUDA model to profile with Nsight Compute: a
warm-up prefill, then the profiled prefill and, optionally, one decode
step, between cuProfilerStart and cuProfilerStop:

    ncu --profile-from-start off --metrics gpu__time_duration.sum --csv \\
        python3 gpu_profile_model.py models/nenya-124m --tokens 2048 --decode

A model folder without weights (a timed-only model of
scripts/build_gpu_models.py) gets bf16 weights from its manifest seed.
"""

import argparse
import ctypes
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from gdn import model as gmodel, safetensors  # noqa: E402
from gdn.compiled_model import CompiledModel  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="a model folder of models/")
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=1,
                        help="sequences of the prefill and the decode step")
    parser.add_argument("--decode", action="store_true",
                        help="one decode step after the profiled prefill")
    parser.add_argument("--decode-only", action="store_true",
                        help="profile the decode step alone (host launches, "
                        "so that each kernel is seen as itself)")
    args = parser.parse_args()
    config_path = os.path.join(args.folder, "model.json")
    config = gmodel.load_config(config_path)
    weights = os.path.join(args.folder, "model.safetensors")
    if not os.path.exists(weights):
        manifest = os.path.join(os.path.dirname(args.folder), "models.json")
        with open(manifest) as f:
            seed = json.load(f)[os.path.basename(args.folder)]["seed"]
        safetensors.save(weights, gmodel.init_weights(config, seed), "bf16")
    # Host launches: Nsight sees each kernel as launched, not as a node.
    compiled = CompiledModel(config_path, weights, library_path=os.path.join(
        args.folder, "compiled", "libgdn-model.so"), decode_graphs=False)
    ids = np.random.default_rng(3).integers(
        0, config["vocab_size"], size=(args.batch, args.tokens))
    step = np.zeros(args.batch, np.int64)
    compiled.prefill(ids, last_only=True)
    driver = ctypes.CDLL("libcuda.so.1")
    if args.decode_only:
        compiled.decode(step)
        driver.cuProfilerStart()
        compiled.decode(step)
        driver.cuProfilerStop()
        return
    driver.cuProfilerStart()
    compiled.prefill(ids, last_only=True)
    if args.decode:
        compiled.decode(step)
    driver.cuProfilerStop()


if __name__ == "__main__":
    main()
