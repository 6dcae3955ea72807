#!/usr/bin/env python3
"""gdn's compiled CUDA model beside the PyTorch baseline (bench/torch_model.py)
on the same weights, with the floors measured in the same run; run on the
GPU machine.

    # here: the model's folder (model.json, compiled/ from gdn-compile
    # --target=cuda; the bf16 weights are made there from the seed)
    /usr/bin/python3 scripts/build_gpu_models.py --compiler build/bin/gdn-compile \\
        --out out/bench --only nenya-124m
    # there, with gdn/ (python/gdn) and bench/ beside:
    python3 bench/bench_gpu_model.py out/bench/nenya-124m --seed 1

Prints one table: prefill ms and tokens/s per prompt length, decode ms per
token per batch size at one context, for gdn (gdn.CompiledModel, one call
of the C API per step) and for PyTorch (bf16 cuBLAS projections, chunked
GDN scan, SDPA prefill attention, absorbed MLA decode, the decode step
replayed as one CUDA graph), and the floors: prefill = the model's matmul
FLOPs over the bf16 matmul rate measured here; decode = (weight + state +
cache bytes) over the copy bandwidth measured here. Times are means after
warm-up calls, synchronized (CUDA events for PyTorch, wall time of the
synchronous C API for gdn).
"""

import argparse
import copy
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
for path in (os.path.join(HERE, "..", "python"), os.path.join(HERE, "..")):
    sys.path.insert(0, path)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from gdn import model as gmodel, safetensors  # noqa: E402
from gdn.compiled_model import CompiledModel  # noqa: E402
from torch_model import TorchModel  # noqa: E402


def cuda_ms(call, repeat):
    """Mean ms of `call()` over `repeat` runs after one warm-up, by CUDA
    events."""
    call()
    torch.cuda.synchronize()
    start, stop = (torch.cuda.Event(enable_timing=True) for _ in range(2))
    start.record()
    for _ in range(repeat):
        call()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) / repeat


def wall_ms(call, repeat):
    call()
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    return (time.perf_counter() - start) * 1e3 / repeat


def copy_bandwidth():
    """Bytes/s of a device-to-device copy of 2 GiB (read + write)."""
    source = torch.empty(1 << 29, dtype=torch.float32, device="cuda")
    target = torch.empty_like(source)
    ms = cuda_ms(lambda: target.copy_(source), 10)
    return 2 * source.numel() * 4 / (ms / 1e3)


def matmul_rate():
    """FLOP/s of a bf16 8192^3 matmul (cuBLAS)."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    ms = cuda_ms(lambda: a @ b, 10)
    return 2 * 8192 ** 3 / (ms / 1e3)


def matmul_parameters(config):
    """Parameters that multiply every token: the projections, the MLPs and
    the LM head (the embedding lookup is free)."""
    shapes = gmodel.weight_shapes(config)
    total = sum(int(np.prod(s)) for n, s in shapes.items() if len(s) == 2)
    if config["tie_embeddings"]:
        return total          # the embedding matrix is the LM head
    return total - int(np.prod(shapes["model.embed_tokens.weight"]))


def attention_flops(config, tokens):
    """Causal MLA attention of a prompt: scores and values, half the
    T x T square (projections are in matmul_parameters)."""
    mla = config["mla"]
    per_pair = 2 * mla["num_heads"] * (mla["qk_nope_head_dim"]
                                       + mla["qk_rope_head_dim"]
                                       + mla["v_head_dim"])
    layers = gmodel.layer_kinds(config).count("mla")
    return layers * per_pair * tokens * (tokens + 1) / 2


def weight_bytes(config):
    """bf16 matrices, f32 vectors (as both implementations hold them)."""
    shapes = gmodel.weight_shapes(config)
    return sum(int(np.prod(s)) * (2 if len(s) == 2 else 4)
               for s in shapes.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="the model's folder: model.json and "
                        "compiled/ (gdn-compile --target=cuda)")
    parser.add_argument("--seed", type=int, default=1,
                        help="weights seed (gdn.model.init_weights)")
    parser.add_argument("--prompts", default="2048,8192",
                        help="prefill lengths (default: %(default)s)")
    parser.add_argument("--batches", default="1,8",
                        help="decode batch sizes (default: %(default)s)")
    parser.add_argument("--context", type=int, default=2048,
                        help="decode context (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=16,
                        help="decode steps timed (default: %(default)s)")
    parser.add_argument("--decode-cases", default="",
                        help="decode cases as BATCH@CONTEXT, comma-separated "
                        "(1@2048,64@2048,1@32768); instead of --batches at "
                        "--context")
    parser.add_argument("--variant", action="append", default=[],
                        metavar="LABEL=DIR",
                        help="also time the prompts and the decode cases "
                        "with the library in DIR (the same model compiled "
                        "with other options), as rows labelled LABEL; "
                        "repeatable")
    args = parser.parse_args()
    variants = []
    for spec in args.variant:
        label, sep, folder = spec.partition("=")
        library = os.path.join(folder, "libgdn-model.so")
        if not sep or not label or not os.path.exists(library):
            parser.error(f"--variant: expected LABEL=DIR with "
                         f"DIR/libgdn-model.so, got {spec!r}")
        variants.append((label, library))

    config_path = os.path.join(args.folder, "model.json")
    config = gmodel.load_config(config_path)
    weights_path = os.path.join(args.folder, "model.safetensors")
    if not os.path.exists(weights_path):
        safetensors.save(weights_path,
                         gmodel.init_weights(config, args.seed), "bf16")
    # Both run the bf16 weights (the file's values, rounded once).
    stored = safetensors.load(weights_path)
    compiled = CompiledModel(config_path, weights_path, library_path=os.path.join(
        args.folder, "compiled", "libgdn-model.so"))
    # The same library with every decode kernel launched from the host: the
    # A/B of the decode graphs.
    direct = CompiledModel(config_path, weights_path,
                           library_path=os.path.join(args.folder, "compiled",
                                                     "libgdn-model.so"),
                           decode_graphs=False)
    bandwidth, rate = copy_bandwidth(), matmul_rate()
    print(f"device: {torch.cuda.get_device_name()}; copy bandwidth "
          f"{bandwidth / 1e9:.0f} GB/s; bf16 matmul {rate / 1e12:.0f} TFLOP/s")
    vocab = config["vocab_size"]
    rng = np.random.default_rng(0)
    rows = []
    agreement = []

    baseline = TorchModel(config, stored, device="cuda")
    # Each variant loads its weights once for all the prompts.
    prompt_variants = {label: CompiledModel(config_path, weights_path,
                                            library_path=library)
                       for label, library in variants}
    for tokens in (int(t) for t in args.prompts.split(",")):
        ids = rng.integers(0, vocab, size=(1, tokens))
        ids_t = torch.as_tensor(ids, device="cuda")
        # Both compute the last position's logits only (what generation
        # reads); gdn's wall time includes copying them to the host.
        gdn_ms = wall_ms(lambda: compiled.prefill(ids, last_only=True), 2)
        torch_ms = cuda_ms(lambda: baseline.prefill(ids_t, last_only=True),
                           2)
        # The two compute the same model: the last position's logits.
        ours = np.asarray(compiled.prefill(ids, last_only=True))[0]
        theirs = baseline.prefill(ids_t, last_only=True)[0, -1] \
            .double().cpu().numpy()
        agreement.append(np.linalg.norm(ours - theirs) /
                         np.linalg.norm(theirs))
        flops = 2 * matmul_parameters(config) * tokens + \
            attention_flops(config, tokens)
        floor_ms = flops / rate * 1e3
        rows.append((f"prefill T={tokens}", gdn_ms, torch_ms, floor_ms,
                     f"{tokens / gdn_ms * 1e3:.0f} / "
                     f"{tokens / torch_ms * 1e3:.0f} tokens/s"))
        for label, variant in prompt_variants.items():
            variant_ms = wall_ms(
                lambda: variant.prefill(ids, last_only=True), 2)
            rows.append((f"prefill T={tokens}, {label}", variant_ms,
                         torch_ms, floor_ms,
                         f"{tokens / variant_ms * 1e3:.0f} / "
                         f"{tokens / torch_ms * 1e3:.0f} tokens/s"))
    # Freed before the decode batches need the memory.
    del prompt_variants

    if args.decode_cases:
        cases = [tuple(int(x) for x in case.split("@"))
                 for case in args.decode_cases.split(",")]
    else:
        cases = [(int(b), args.context) for b in args.batches.split(",")]
    for batch, context in cases:
        prompt = rng.integers(0, vocab, size=(batch, context))
        step_ids = rng.integers(0, vocab, size=batch)
        compiled.prefill(prompt, last_only=True)
        gdn_ms = wall_ms(lambda: compiled.decode(step_ids), args.steps)
        direct.prefill(prompt, last_only=True)
        direct_ms = wall_ms(lambda: direct.decode(step_ids), args.steps)
        # The baseline's MLA cache is allocated for this context, as the
        # graph attends over the whole allocation.
        sized = copy.deepcopy(config)
        sized["max_context"] = context + 2 * args.steps + 8
        graph_model = TorchModel(sized, stored, device="cuda")
        graph_model.prefill(torch.as_tensor(prompt, device="cuda"),
                            last_only=True)
        step = graph_model.decode_graph()
        step_t = torch.as_tensor(step_ids, device="cuda")
        # The graph's first step against gdn's first step after the prompt.
        theirs = step(step_t).double().cpu().numpy()
        compiled.prefill(prompt, last_only=True)
        ours = np.asarray(compiled.decode(step_ids))
        agreement.append(np.linalg.norm(ours - theirs) /
                         np.linalg.norm(theirs))
        torch_ms = cuda_ms(lambda: step(step_t), args.steps)
        cache = gmodel.cache_bytes(config, context, batch)["total"]
        floor_ms = (weight_bytes(config) + cache) / bandwidth * 1e3
        rows.append((f"decode B={batch} at {context}", gdn_ms, torch_ms,
                     floor_ms, f"{batch / gdn_ms * 1e3:.0f} / "
                     f"{batch / torch_ms * 1e3:.0f} tokens/s"))
        rows.append((f"decode B={batch} at {context}, no graph", direct_ms,
                     torch_ms, floor_ms, f"{batch / direct_ms * 1e3:.0f} / "
                     f"{batch / torch_ms * 1e3:.0f} tokens/s"))
        for label, library in variants:
            variant = CompiledModel(config_path, weights_path,
                                    library_path=library)
            variant.prefill(prompt, last_only=True)
            variant_ms = wall_ms(lambda: variant.decode(step_ids), args.steps)
            rows.append((f"decode B={batch} at {context}, {label}",
                         variant_ms, torch_ms, floor_ms,
                         f"{batch / variant_ms * 1e3:.0f} / "
                         f"{batch / torch_ms * 1e3:.0f} tokens/s"))
            del variant
        del graph_model, step
        torch.cuda.empty_cache()

    print(f"\n{os.path.basename(os.path.normpath(args.folder))}: "
          f"{sum(int(np.prod(s)) for s in gmodel.weight_shapes(config).values()) / 1e6:.0f}M "
          f"parameters, weights {weight_bytes(config) / 1e6:.0f} MB")
    print("relative difference of the two's logits (last prefill position "
          "per prompt, then the first decode step per batch): "
          + ", ".join(f"{e:.1e}" for e in agreement))
    print("decode graphs (recorded, replays, kernel nodes updated): "
          f"{compiled.decode_graph_counts}")
    print("| case | gdn ms | PyTorch ms | floor ms | gdn / PyTorch | "
          "gdn / floor | tokens/s (gdn / PyTorch) |")
    print("|---|---|---|---|---|---|---|")
    for case, g, t, f, extra in rows:
        print(f"| {case} | {g:.2f} | {t:.2f} | {f:.3f} | {g / t:.2f}x | "
              f"{g / f:.1f}x | {extra} |")


if __name__ == "__main__":
    main()
