"""Compiles the CUDA kernel configurations of the GPU check into a folder
with a manifest (see scripts/build-gpu-artifacts.sh)."""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from gdn import inputs
from gdn import compiled_serving as serving
from gdn.compiled import module_source

# (H, Hv, K, V) of the CPU test matrix plus the large K = V = 128 models.
HEADS = [(1, 1, 16, 16), (4, 4, 64, 64), (2, 4, 64, 128), (4, 4, 128, 128),
         (16, 16, 128, 128), (32, 32, 128, 128), (16, 32, 128, 128),
         (2, 8, 128, 128),
         # Head dims that are no power of two (OLMo Hybrid's 96 and 192) and
         # the widest, 256: value tiles of 32 (96, 256) and 64 (192).
         (2, 4, 96, 96), (2, 2, 192, 192), (1, 2, 256, 256)]
ELEMENT_TYPES = ["f32", "bf16"]
# Timed only (bf16): the head split of issue tables with four value heads
# per key head.
TIMING_HEADS = [(16, 64, 128, 128)]
# f16 q, k, v (the chunked scan on mma.sync's f16 form).
F16_HEADS = [(2, 4, 64, 128), (16, 32, 128, 128)]
# Variants of the decode timing configuration: threads per state column.
KEY_SPLIT_VARIANTS = [1, 4]
# The bf16 prefill timing configurations again with the token recurrence
# instead of the chunked tensor-core scan, timed side by side.
# Chunked-scan variants timed beside the default: (suffix, options).
SCAN_VARIANTS = [("vt64", ["--cuda-multiprocessors=1"]),
                 ("vt32", ["--cuda-value-tile=32", "--cuda-multiprocessors=1"]),
                 ("w8", ["--cuda-scan-warps=8"])]
RECURRENT_VARIANTS = [(16, 16, 128, 128), (32, 32, 128, 128),
                      (16, 32, 128, 128)]
# The configurations whose timing shapes split sequences into segments
# (context parallelism), again with one segment, timed side by side.
ONE_SEGMENT_VARIANTS = [(16, 16, 128, 128), (2, 8, 128, 128)]
# Executables (--emit=exe) whose @main prefills constant inputs and prints
# o and the final state: (name, B, T, H, Hv, K, V, element type). T = 100
# ends inside the second chunk; K != V and two value heads per key head.
EXECUTABLES = [("exe_bf16", 2, 100, 2, 4, 64, 128, "bf16"),
               ("exe_f32", 1, 37, 1, 2, 16, 32, "f32")]
EXECUTABLE_MANIFEST = "executables.json"
# Decode from a pool of states: ((H, Hv, K, V), element type).
POOL_HEADS = [((2, 4, 64, 128), "f32"), ((16, 32, 128, 128), "bf16")]
POOL_MANIFEST = "pool_manifest.json"
# The chunked scan over packed sequences and pools of states: (H, Hv, K, V)
# and element type, each in the three forms (packed, pooled, both).
SERVING_PREFILL_HEADS = [((2, 4, 64, 128), "bf16"), ((2, 4, 64, 128), "f16"),
                         ((16, 32, 128, 128), "bf16")]
SERVING_PREFILL_FORMS = {"packed": dict(packed=True),
                         "pooled": dict(pooled=True),
                         "packed_pooled": dict(packed=True, pooled=True)}
# Raw gates (g and beta computed in the kernels from a, b, A_log and
# dt_bias): prefill, packed prefill and decode; f32 runs the recurrence.
GATED_HEADS = [((2, 4, 64, 128), "bf16"), ((2, 4, 64, 128), "f32"),
               ((16, 32, 128, 128), "bf16")]
GATED_FORMS = {"gated": dict(gated=True),
               "packed_gated": dict(packed=True, gated=True),
               "step_gated": dict(step=True, gated=True)}
# bf16 state storage: a prefill and a decode step from a pool, with the
# states (or the pool) in bf16.
BF16_STATE_FORMS = {"bf16_state": dict(),
                    "step_pooled_bf16_state": dict(step=True, pooled=True)}
# Prefix-cache checkpoints (dense every 64 tokens; packed from a pool every
# 128) and speculative verify (from states, and from a pool's slots), named
# as gdn.cuda looks them up.
CHECKPOINT_VERIFY_HEADS = [((2, 4, 64, 128), "bf16"),
                           ((16, 32, 128, 128), "bf16")]
CHECKPOINT_VERIFY_FORMS = {
    "checkpoints_64": dict(checkpoint_every=64),
    "packed_pooled_checkpoints_128": dict(packed=True, pooled=True,
                                          checkpoint_every=128),
    "verify": dict(verify=True),
    "verify_pooled": dict(verify=True, pooled=True)}
SERVING_MANIFEST = "serving_manifest.json"


def round_to_bf16(x):
    """float32 values rounded to the nearest bf16 (ties to even)."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(
        np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32)


def dense(array):
    """An MLIR dense literal with every float32 value written exactly."""
    flat = [repr(x) for x in array.astype(np.float64).ravel().tolist()]

    def nest(start, dims):
        if not dims:
            return flat[start]
        step = int(np.prod(dims[1:], dtype=np.int64))
        return "[" + ", ".join(nest(start + i * step, dims[1:])
                               for i in range(dims[0])) + "]"
    return nest(0, list(array.shape))


def executable_source(data, et, scale):
    """The module of the shared libraries (module_source) with a @main that
    calls @gdn_delta_rule on `data` and prints o, then the final state."""
    b, t, h, k = data["q"].shape
    hv, v = data["v"].shape[2:]
    library = module_source(h, hv, k, v, et, "f32", scale).rstrip()
    assert library.endswith("}"), "module_source ends its module"

    def ttype(dims, element):
        return "tensor<" + "x".join(map(str, dims)) + f"x{element}>"
    names = ("q", "k", "v", "g", "beta", "initial_state")
    static, dynamic = {}, {}
    for n in names:
        element = et if n in ("q", "k", "v") else "f32"
        dims = list(data[n].shape)
        static[n] = ttype(dims, element)
        # The functions' dynamic dimensions: B (and T for token operands).
        leading = 1 if n == "initial_state" else 2
        dynamic[n] = ttype(["?"] * leading + dims[leading:], element)
    o_type, s_type = dynamic["v"], dynamic["initial_state"]
    in_types = ", ".join(dynamic[n] for n in names)
    print_o = "BF16" if et == "bf16" else "F32"
    lines = [library[:-1],
             f"  func.func private @printMemref{print_o}(memref<*x{et}>) "
             "attributes {llvm.emit_c_interface}"]
    if print_o != "F32":
        lines.append("  func.func private @printMemrefF32(memref<*xf32>) "
                     "attributes {llvm.emit_c_interface}")
    lines.append("  func.func @main() {")
    for n in names:
        lines += [f"    %{n}_static = arith.constant dense<{dense(data[n])}> "
                  f": {static[n]}",
                  f"    %{n} = tensor.cast %{n}_static : {static[n]} to "
                  f"{dynamic[n]}"]
    operands = ", ".join(f"%{n}" for n in names)
    for result, rtype, element, printer in (("o", o_type, et, print_o),
                                            ("s", s_type, "f32", "F32")):
        memref = rtype.replace("tensor", "memref")
        if result == "o":
            lines.append(f"    %o, %s = func.call @gdn_delta_rule({operands}) "
                         f": ({in_types}) -> ({o_type}, {s_type})")
        lines += [f"    %{result}m = bufferization.to_buffer %{result} "
                  f"read_only : {rtype} to {memref}",
                  f"    %{result}u = memref.cast %{result}m : {memref} to "
                  f"memref<*x{element}>",
                  f"    func.call @printMemref{printer}(%{result}u) : "
                  f"(memref<*x{element}>) -> ()"]
    lines += ["    return", "  }", "}"]
    return "\n".join(lines) + "\n"


def build_executable(compiler, out, name, b, t, h, hv, k, v, et):
    """Compiles a CUDA executable over seeded inputs; writes the inputs it
    holds (as float32) beside it for the check."""
    data = inputs.delta_rule_inputs(11, b, t, h, hv, k, v, "design",
                                    initial_state=True)
    if et == "bf16":
        for n in ("q", "k", "v"):
            data[n] = round_to_bf16(data[n])
    scale = float(np.float32(k ** -0.5))
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(executable_source(data, et, scale))
    try:
        command = [compiler, f.name, "--target=cuda", "--emit=exe", "-o",
                   os.path.join(out, name)]
        result = subprocess.run(command, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if result.returncode != 0:
        sys.exit(f"compiling {name} failed:\n{result.stderr}")
    np.savez(os.path.join(out, f"{name}.npz"), scale=scale, **data)
    print(f"built {name}")
    return {"executable": name, "inputs": f"{name}.npz",
            "element_type": et}


def config_name(h, hv, k, v, et):
    return f"h{h}_hv{hv}_k{k}_v{v}_{et}"


def compile_config(compiler, out, name, config, extra=(), source=None):
    """Compiles one configuration; returns its manifest entry."""
    if source is None:
        source = module_source(config["heads"], config["value_heads"],
                               config["key_dim"], config["value_dim"],
                               config["element_type"],
                               config["beta_element_type"], config["scale"])
    library = f"{name}.so"
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(source)
    try:
        command = [compiler, f.name, "--target=cuda", "--emit=shared",
                   *extra, "-o", os.path.join(out, library)]
        result = subprocess.run(command, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if result.returncode != 0:
        sys.exit(f"compiling {name} failed:\n{result.stderr}")
    print(f"built {library}")
    return {"library": library, "config": config}


def compile_into_manifest(args, jobs, manifest_name):
    """Compiles jobs (name, config, extra options[, source]) args.jobs at a
    time and writes their manifest {name: entry} into args.out."""
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        entries = list(pool.map(
            lambda job: compile_config(args.compiler, args.out, *job), jobs))
    with open(os.path.join(args.out, manifest_name), "w") as f:
        json.dump({job[0]: entry for job, entry in zip(jobs, entries)}, f,
                  indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--compiler", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="compilations run at once (default: the cores)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # (name, config, extra options) of every library, in manifest order.
    jobs = []

    def config_of(h, hv, k, v, et):
        return dict(heads=h, value_heads=hv, key_dim=k, value_dim=v,
                    element_type=et, beta_element_type="f32",
                    scale=k ** -0.5)
    # The check's kernels split long sequences of small batches into
    # segments as the strategy chooses (gdn-compile's default, said
    # explicitly so that the check keeps testing them).
    segments = ["--cuda-context-segments=0"]
    for (h, hv, k, v) in HEADS:
        for et in ELEMENT_TYPES:
            jobs.append((config_name(h, hv, k, v, et),
                         config_of(h, hv, k, v, et), segments))
    for (h, hv, k, v) in TIMING_HEADS:
        jobs.append((config_name(h, hv, k, v, "bf16"),
                     config_of(h, hv, k, v, "bf16"), segments))
    for (h, hv, k, v) in F16_HEADS:
        jobs.append((config_name(h, hv, k, v, "f16"),
                     config_of(h, hv, k, v, "f16"), segments))
    for splits in KEY_SPLIT_VARIANTS:
        jobs.append((f"{config_name(16, 32, 128, 128, 'bf16')}_ks{splits}",
                     config_of(16, 32, 128, 128, "bf16"),
                     [f"--cuda-key-splits={splits}"]))
    for (h, hv, k, v) in RECURRENT_VARIANTS:
        jobs.append((f"{config_name(h, hv, k, v, 'bf16')}_recurrent",
                     config_of(h, hv, k, v, "bf16"),
                     ["--cuda-chunked-prefill=false"]))
    # Tiling variants of the chunked scan: (value tile, warps).
    for suffix, options in SCAN_VARIANTS:
        for (h, hv, k, v) in RECURRENT_VARIANTS:
            jobs.append((f"{config_name(h, hv, k, v, 'bf16')}_{suffix}",
                         config_of(h, hv, k, v, "bf16"), options))
    for (h, hv, k, v) in ONE_SEGMENT_VARIANTS:
        for segments in (1, 4):
            jobs.append((f"{config_name(h, hv, k, v, 'bf16')}_cp{segments}",
                         config_of(h, hv, k, v, "bf16"),
                         [f"--cuda-context-segments={segments}"]))
    compile_into_manifest(args, jobs, "manifest.json")
    # The decode step from a pool of states (gdn_serving with
    # state_indices and write_indices), for scripts/gpu_pool_check.py.
    pool_jobs = []
    for (h, hv, k, v), et in POOL_HEADS:
        config = config_of(h, hv, k, v, et)
        pool_jobs.append((f"{config_name(h, hv, k, v, et)}_pool", config,
                          [], serving.module_source(
                              serving.Form(step=True, pooled=True), h, hv,
                              k, v, et, "f32", "f32", config["scale"])))
    compile_into_manifest(args, pool_jobs, POOL_MANIFEST)
    # Prefill over packed sequences and pools (gdn_serving with
    # cu_seqlens, state_indices and write_indices), for
    # scripts/gpu_serving_check.py.
    serving_jobs = []
    forms = [(heads, et, SERVING_PREFILL_FORMS)
             for heads, et in SERVING_PREFILL_HEADS]
    forms += [(heads, et, {name: form for name, form in GATED_FORMS.items()
                           if et != "f32" or name != "packed_gated"})
              for heads, et in GATED_HEADS]
    forms += [(heads, et, BF16_STATE_FORMS)
              for heads, et in SERVING_PREFILL_HEADS if et == "bf16"]
    forms += [(heads, et, CHECKPOINT_VERIFY_FORMS)
              for heads, et in CHECKPOINT_VERIFY_HEADS]
    for (h, hv, k, v), et, named_forms in forms:
        config = config_of(h, hv, k, v, et)
        for form_name, form in named_forms.items():
            config_form = dict(config, form=form_name)
            source = serving.module_source(
                serving.Form(**form), h, hv, k, v, et, "f32", "f32",
                config["scale"])
            if form_name.endswith("bf16_state"):
                source = source.replace(f"tensor<?x{hv}x{k}x{v}xf32>",
                                        f"tensor<?x{hv}x{k}x{v}xbf16>")
            serving_jobs.append((
                f"{config_name(h, hv, k, v, et)}_{form_name}", config_form,
                [], source))
    compile_into_manifest(args, serving_jobs, SERVING_MANIFEST)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        built = list(pool.map(
            lambda spec: build_executable(args.compiler, args.out, *spec),
            EXECUTABLES))
    executables = {spec[0]: entry for spec, entry in zip(EXECUTABLES, built)}
    with open(os.path.join(args.out, EXECUTABLE_MANIFEST), "w") as f:
        json.dump(executables, f, indent=1)


if __name__ == "__main__":
    main()
