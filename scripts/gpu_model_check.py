#!/usr/bin/env python3
"""Checks models compiled for CUDA (gdn-compile model.json --target=cuda)
against the float64 model reference, on the GPU machine.

Runs from the folder scripts/build-gpu-artifacts.sh wrote (models/ with
models.json, the gdn package); needs numpy and the CUDA driver, no MLIR.
For every model and both weight files (f32, bf16): the logits after a
prefill of B = 1..4 sequences of 1 to 300 tokens and after each of 16
decode steps (relative error, and the greedy tokens wherever the reference
has no near-tie), a prompt in two chunks against one prefill, the cache
bytes against gdn.model.cache_bytes, the refusal of bad inputs, and the
gdn-model executable's output; for the Hugging Face fixture checkpoints,
the logits against transformers' after the prefill and each greedy decode
step. Then prefill and decode times. Prints one
line per check and "N passed, M failed"; exits non-zero on any failure.

  python3 gpu_model_check.py
  python3 gpu_model_check.py --sanitize memcheck,racecheck,synccheck,initcheck
                             --sanitize-log DIR
"""

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from gdn import model as gmodel, safetensors  # noqa: E402
from gdn.compiled_model import CompiledModel  # noqa: E402

MODELS = os.path.join(HERE, "models")
# f32 weights: only the order of f32 sums differs from the reference.
TOLERANCE = {"f32": 1e-3, "bf16": 2e-2}
# (B, T) of the prefills; T is capped below max_context - 16.
SHAPES = [(1, 1), (1, 7), (2, 64), (3, 33), (4, 300), (1, 300)]
DECODE_STEPS = 16


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'PASS' if ok else 'FAIL'} {what}" +
              (f": {detail}" if detail else ""), flush=True)
        return ok


def relative_error(got, want):
    scale = max(float(np.abs(want).max()), 1e-30)
    return float(np.abs(got.astype(np.float64) - want).max()) / scale


def greedy_agrees(got, want, margin=1e-3):
    """Whether the argmax agrees wherever the reference's top two logits are
    further apart than `margin` (relative to the row's range)."""
    top2 = np.sort(want, axis=-1)[..., -2:]
    spread = np.maximum(want.max(-1) - want.min(-1), 1e-30)
    clear = (top2[..., 1] - top2[..., 0]) / spread > margin
    return bool(np.all((got.argmax(-1) == want.argmax(-1))[clear]))


def check_model(results, name, entry, dtype, timings):
    config_path = os.path.join(MODELS, entry["config"])
    weights_path = os.path.join(MODELS, entry["weights" if dtype == "f32"
                                              else "weights_bf16"])
    # The bf16 file runs on the library compiled from it (bf16 matrices on
    # the device).
    library = os.path.join(MODELS, entry["library" if dtype == "f32"
                                         else "library_bf16"])
    config = gmodel.load_config(config_path)
    weights = safetensors.load(weights_path)
    tol = TOLERANCE[dtype]
    compiled = CompiledModel(config_path, weights_path, library_path=library)
    label = f"{name} ({dtype} weights)"
    results.check("H200" in compiled.device or "NVIDIA" in compiled.device,
                  f"{label}: runs on the GPU", compiled.device)
    rng = np.random.default_rng(7)
    vocab, limit = config["vocab_size"], config["max_context"] - DECODE_STEPS
    for batch, tokens in SHAPES:
        tokens = min(tokens, limit)
        ids = rng.integers(0, vocab, size=(batch, tokens))
        reference = gmodel.ModelReference(config, weights)
        want = reference.prefill(ids)
        got = compiled.prefill(ids)
        error = relative_error(got, want)
        what = f"{label}: prefill B={batch} T={tokens}"
        results.check(error <= tol and greedy_agrees(got, want), what,
                      f"relative error {error:.2e}")
        # The same prompt again with the last position's logits alone (the
        # LM head of that row only): the last row of the reference's, and
        # the caches the decode steps below continue from.
        last = compiled.prefill(ids, last_only=True)
        error = relative_error(last, want[:, -1])
        results.check(error <= tol and greedy_agrees(last, want[:, -1]),
                      f"{what}: last logits only",
                      f"relative error {error:.2e}")
        worst, agree = 0.0, True
        for _ in range(DECODE_STEPS):
            step = want[:, -1].argmax(-1) if want.ndim == 3 else \
                want.argmax(-1)
            want = reference.decode(step)
            got = compiled.decode(step)
            worst = max(worst, relative_error(got, want))
            agree = agree and greedy_agrees(got, want)
        results.check(worst <= tol and agree,
                      f"{what}: {DECODE_STEPS} decode steps",
                      f"worst relative error {worst:.2e}")
        expected = gmodel.cache_bytes(config, tokens + DECODE_STEPS)
        cache = compiled.cache_nbytes()
        results.check(cache["gdn"] == expected["gdn"]["per_layer"] *
                      expected["gdn"]["layers"] and
                      cache["mla"] == expected["mla"]["per_layer"] *
                      expected["mla"]["layers"],
                      f"{what}: cache bytes", f"{cache} vs {expected}")
    # A prompt in two chunks equals one prefill: to f32's rounding, or
    # where a bf16 library runs the whole prompt's delta rules on bf16 q, k
    # and v (calls of 64 tokens or more) and the chunks' on f32, to bf16's.
    # Chunks of fewer than 64 tokens take MLA's absorbed form, longer ones
    # the fused attention kernel, which the second split runs over cached
    # keys (20 of them, then 70 new tokens).
    ids = rng.integers(0, vocab, size=(2, min(90, limit)))
    whole = compiled.prefill(ids)
    for split in (40, 20):
        if split >= ids.shape[1]:
            continue
        compiled.prefill(ids[:, :split])
        second = compiled.extend(ids[:, split:])
        error = relative_error(second, whole[:, split:].astype(np.float64))
        results.check(error <= (1e-4 if dtype == "f32" else tol),
                      f"{label}: prefill in two chunks ({split} + "
                      f"{ids.shape[1] - split})",
                      f"relative error {error:.2e}")
    # Bad inputs: the CPU build's errors.
    for what, call in [
            ("batch over the maximum",
             lambda: compiled.prefill(np.zeros((65537, 1), np.int64))),
            ("context over max_context",
             lambda: compiled.prefill(
                 np.zeros((1, config["max_context"] + 1), np.int64))),
            ("token id outside the vocabulary",
             lambda: compiled.prefill(np.full((1, 2), vocab, np.int64)))]:
        try:
            call()
            results.check(False, f"{label}: refuses {what}", "accepted")
        except ValueError as error:
            results.check(True, f"{label}: refuses {what}", str(error))
    check_decode_graphs(results, label, compiled,
                        CompiledModel(config_path, weights_path,
                                      library_path=library,
                                      decode_graphs=False),
                        rng, vocab, limit)
    # Timing (informative): prefill of the longest prompt and decode.
    tokens = min(300, limit)
    ids = rng.integers(0, vocab, size=(1, tokens))
    timings.append((label, tokens, *time_calls(compiled, ids)))


def check_decode_graphs(results, label, graphs, direct, rng, vocab, limit):
    """Decode steps replayed as CUDA graphs give the logits of the same
    steps launched from the host: per batch size, over a cache that grows
    past a power of two (temporaries sized by the context outgrow their
    graph nodes there), after a new prefill (the caches move), and across
    batch sizes (a graph each)."""
    before = graphs.decode_graph_counts
    worst = 0.0
    for batch, tokens in [(1, 7), (3, 250), (1, 250), (3, 40)]:
        tokens = min(tokens, limit - DECODE_STEPS)
        ids = rng.integers(0, vocab, size=(batch, tokens))
        graphs.prefill(ids, last_only=True)
        direct.prefill(ids, last_only=True)
        for _ in range(DECODE_STEPS):
            step = rng.integers(0, vocab, size=batch)
            got, want = graphs.decode(step), direct.decode(step)
            worst = max(worst, float(np.abs(got - want).max()) /
                        max(float(np.abs(want).max()), 1e-30))
    after = graphs.decode_graph_counts
    recorded, replayed, updated = (a - b for a, b in zip(after, before))
    # 64 steps: replays but for those that (re)record a graph (a batch size
    # seen first, a temporary outgrowing its node at a power of two of the
    # context, a grid that becomes non-empty); at least half replay.
    results.check(worst <= 1e-6 and replayed >= 2 * DECODE_STEPS,
                  f"{label}: decode as CUDA graphs equals host launches",
                  f"worst relative difference {worst:.1e}; {recorded} "
                  f"graphs recorded, {replayed} replays, {updated} kernel "
                  f"nodes updated")
    results.check(direct.decode_graph_counts == (0, 0, 0),
                  f"{label}: decode_graphs=False records no graph",
                  str(direct.decode_graph_counts))


def check_checkpoint(results, name, entry):
    """A Hugging Face checkpoint against transformers' own logits after the
    prefill and after each greedy decode step (scripts/make_hf_fixtures.py),
    and a prompt in two chunks."""
    folder = os.path.join(MODELS, entry["checkpoint"])
    expected = np.load(os.path.join(MODELS, entry["reference"]))
    compiled = CompiledModel(folder,
                             library_path=os.path.join(MODELS,
                                                       entry["library"]))
    tol = TOLERANCE["f32"]
    results.check("NVIDIA" in compiled.device, f"{name}: runs on the GPU",
                  compiled.device)
    for case in ("a", "b"):
        ids = expected[f"prompt_{case}"]
        got = compiled.prefill(ids)
        error = relative_error(got, expected[f"prefill_logits_{case}"])
        what = f"{name}: prefill B={ids.shape[0]} T={ids.shape[1]}"
        results.check(error <= tol, what, f"relative error {error:.2e}")
        worst, agree = 0.0, True
        for step, want in zip(expected[f"decode_ids_{case}"],
                              expected[f"decode_logits_{case}"]):
            last = got[:, -1] if got.ndim == 3 else got
            agree = agree and bool(np.all(last.argmax(-1) == step))
            got = compiled.decode(step)
            worst = max(worst, relative_error(got, want))
        results.check(worst <= tol and agree,
                      f"{what}: {len(expected[f'decode_ids_{case}'])} "
                      f"greedy decode steps against transformers",
                      f"worst relative error {worst:.2e}")
    ids = expected["prompt_a"]
    compiled.prefill(ids[:, :41])
    second = compiled.extend(ids[:, 41:])
    error = relative_error(second, expected["prefill_logits_a"][:, 41:])
    results.check(error <= tol, f"{name}: prefill in two chunks",
                  f"relative error {error:.2e}")


def check_executable(results, name, entry):
    executable = os.path.join(MODELS, entry["executable"])
    config = gmodel.load_config(os.path.join(MODELS, entry["config"]))
    weights = safetensors.load(os.path.join(MODELS, entry["weights"]))
    prompt = [1, 2, 3, 4, 5]
    command = [executable, "--ids=" + ",".join(map(str, prompt)), "-n", "6",
               "--weights=" + os.path.join(MODELS, entry["weights"])]
    run = subprocess.run(command, capture_output=True, text=True)
    ok = run.returncode == 0
    results.check(ok, f"{name}: gdn-model runs", run.stdout.strip()
                  .replace("\n", " | ") if ok else run.stderr.strip())
    if ok:
        reference = gmodel.ModelReference(config, weights)
        logits = reference.prefill(np.array([prompt]))[:, -1]
        tokens = []
        for _ in range(6):
            token = int(logits[0].argmax())
            tokens.append(token)
            logits = reference.decode(np.array([token]))
        line = [l for l in run.stdout.splitlines()
                if l.startswith("generated tokens:")]
        got = line[0].split(":", 1)[1].strip() if line else ""
        want = " ".join(map(str, tokens))
        results.check(got.replace(",", " ").split() == want.split(),
                      f"{name}: gdn-model greedy tokens",
                      f"got {got!r}, reference {want!r}")


def sanitize_case(case):
    """The calls the sanitizers watch (run in a child process, which loads
    the library after compute-sanitizer has attached: gdn-model loads its
    kernels before main, too early for it): a prefill of 2 sequences of 140
    tokens (past the 128 rows that the tensor-core kernels take as whole
    blocks, with keys that end inside a block; fewer where the model's
    context is shorter), an extension and three decode steps. `case` is a model's name, or
    "name:bf16" for its library compiled from bf16 weights (the bf16
    matrices' kernels) with those weights."""
    name, _, dtype = case.partition(":")
    with open(os.path.join(MODELS, "models.json")) as f:
        entry = json.load(f)[name]
    bf16 = dtype == "bf16"
    library = os.path.join(MODELS, entry["library_bf16" if bf16
                                         else "library"])
    tokens = 20
    if entry.get("checkpoint"):
        compiled = CompiledModel(os.path.join(MODELS, entry["checkpoint"]),
                                 library_path=library)
    else:
        config = gmodel.load_config(os.path.join(MODELS, entry["config"]))
        tokens = min(140, config["max_context"] - 8)
        weights = entry["weights_bf16" if bf16 else "weights"]
        compiled = CompiledModel(os.path.join(MODELS, entry["config"]),
                                 os.path.join(MODELS, weights),
                                 library_path=library)
    rng = np.random.default_rng(5)
    vocab = compiled.vocab_size
    compiled.prefill(rng.integers(0, vocab, size=(2, tokens)))
    compiled.extend(rng.integers(0, vocab, size=(2, 5)))
    for _ in range(3):
        compiled.decode(rng.integers(0, vocab, size=2))
    print("sanitize case done")


def sanitize(results, name, tools, log_dir):
    """Every tool on the model's library, and on its bf16 library where it
    has one."""
    with open(os.path.join(MODELS, "models.json")) as f:
        entry = json.load(f)[name]
    cases = [name] + ([f"{name}:bf16"] if "library_bf16" in entry else [])
    for case in cases:
        sanitize_one(results, case, tools, log_dir)


def sanitize_one(results, name, tools, log_dir):
    sanitizer = shutil.which("compute-sanitizer") or \
        "/usr/local/cuda/bin/compute-sanitizer"
    for tool in tools:
        log = os.path.join(log_dir, f"{name.replace(':', '-')}-{tool}.log")
        command = [sanitizer, "--tool", tool, "--error-exitcode", "17",
                   "--print-limit", "100", "--log-file", log]
        if tool == "racecheck":
            command += ["--racecheck-report", "all"]
        command += [sys.executable, os.path.abspath(__file__),
                    "--sanitize-case", name]
        run = subprocess.run(command, capture_output=True, text=True)
        with open(log) as f:
            text = f.read()
        summary = [l for l in text.splitlines() if "ERROR SUMMARY" in l or
                   "RACECHECK SUMMARY" in l]
        done = "sanitize case done" in run.stdout
        results.check(run.returncode == 0 and done, f"{name}: {tool}",
                      summary[-1].strip("= ") if summary else
                      (run.stdout + run.stderr).strip()[-300:])


def kernel_time(compiled, call):
    """(kernel ms, launches) of `call()`: the runtime's CUDA events around
    every launch (gdnCudaSetKernelTiming), which the library exports."""
    api = compiled._api
    api.gdnCudaSetKernelTiming.argtypes = [ctypes.c_int]
    api.gdnCudaTakeKernelMicroseconds.restype = ctypes.c_double
    api.gdnCudaTakeKernelMicroseconds.argtypes = [
        ctypes.POINTER(ctypes.c_int64)]
    launches = ctypes.c_int64()
    api.gdnCudaTakeKernelMicroseconds(ctypes.byref(launches))
    api.gdnCudaSetKernelTiming(1)
    call()
    micros = api.gdnCudaTakeKernelMicroseconds(ctypes.byref(launches))
    api.gdnCudaSetKernelTiming(0)
    return micros / 1e3, launches.value


def time_calls(compiled, ids):
    """(prefill ms, decode ms per step, then kernel_time of a prefill and
    of a decode step) for a prefill of `ids` [1, T] after a warm-up call,
    and the mean of 8 decode steps after it. The prefill's logits are those
    of the last position (what generation reads), as in gdn-model."""
    compiled.prefill(ids, last_only=True)
    start = time.perf_counter()
    compiled.prefill(ids, last_only=True)
    prefill = time.perf_counter() - start
    step = np.zeros(1, np.int64)
    compiled.decode(step)
    start = time.perf_counter()
    for _ in range(8):
        compiled.decode(step)
    decode = (time.perf_counter() - start) / 8
    kernels = kernel_time(compiled,
                          lambda: compiled.prefill(ids, last_only=True)) + \
        kernel_time(compiled, lambda: compiled.decode(step))
    return (prefill * 1e3, decode * 1e3, *kernels)


def time_model(name, entry, timings):
    """Prefill and decode times of a model too large for the reference;
    its bf16 weights are made here from the manifest's seed."""
    config_path = os.path.join(MODELS, entry["config"])
    weights_path = os.path.join(MODELS, entry["weights"])
    config = gmodel.load_config(config_path)
    if not os.path.exists(weights_path):
        safetensors.save(weights_path,
                         gmodel.init_weights(config, entry["seed"]), "bf16")
    compiled = CompiledModel(config_path, weights_path,
                             library_path=os.path.join(MODELS,
                                                       entry["library"]))
    rng = np.random.default_rng(3)
    for tokens in (512, 2048):
        ids = rng.integers(0, config["vocab_size"], size=(1, tokens))
        timings.append((f"{name} (bf16 weights)", tokens,
                        *time_calls(compiled, ids)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sanitize", default="",
                        help="compute-sanitizer tools to run gdn-model under "
                             "(comma-separated)")
    parser.add_argument("--sanitize-log", default=HERE,
                        help="folder of the sanitizer logs")
    parser.add_argument("--only", default="", help="one model by name")
    parser.add_argument("--sanitize-case", default="",
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        print("gpu_model_check.py: no CUDA driver found (libcuda.so.1 "
              "cannot be loaded): run it on a machine with an NVIDIA GPU",
              file=sys.stderr)
        return 2
    if args.sanitize_case:
        sanitize_case(args.sanitize_case)
        return 0
    with open(os.path.join(MODELS, "models.json")) as f:
        manifest = json.load(f)
    results, timings = Results(), []
    sanitize_tools = [t for t in args.sanitize.split(",") if t]
    for name, entry in manifest.items():
        if args.only and name != args.only:
            continue
        if entry.get("timed_only"):
            time_model(name, entry, timings)
            continue
        if entry.get("checkpoint"):
            check_checkpoint(results, name, entry)
            sanitize(results, name, sanitize_tools, args.sanitize_log)
            continue
        for dtype in ("f32", "bf16"):
            check_model(results, name, entry, dtype, timings)
        check_executable(results, name, entry)
        sanitize(results, name, sanitize_tools, args.sanitize_log)
    print("\n| model | prompt tokens | prefill ms | decode ms/token (B=1, "
          "after the prompt) | prefill kernels ms (launches) | decode "
          "kernels ms (launches) |")
    print("|---|---|---|---|---|---|")
    for label, tokens, prefill, decode, pk, pn, dk, dn in timings:
        print(f"| {label} | {tokens} | {prefill:.2f} | {decode:.2f} | "
              f"{pk:.2f} ({pn}) | {dk:.2f} ({dn}) |")
    print(f"\n{results.passed} passed, {results.failed} failed")
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
