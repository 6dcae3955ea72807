"""Checks and times the CUDA decode step from a pool of states on the GPU
machine (gdn.delta_rule_step with state_indices and write_indices, built by
scripts/build_gpu_artifacts.py into pool_manifest.json).

    python3 gpu_pool_check.py KERNEL_FOLDER [--no-timing]

Correctness: against the float64 recurrence of gdn.reference, entry by
entry, with shuffled, repeated-read, -1 and out-of-range slots and separate
write slots; the slots nobody writes stay bit for bit. Timing (CUDA-graph
replay, and the medians of CUDA events around each host call): B = 256
entries reading and writing random slots of a pool of 4096, beside the
dense in-place step on a [256, ...] state of the same configuration and a
device copy of the same bytes, in the same run.
"""

import ctypes
import json
import os
import sys

import numpy as np
import torch

from gdn import reference
from gdn.cuda import load_artifacts, tensor_descriptor

SYMBOL = "_mlir_ciface_gdn_serving"
FAILURES = []


def check(name, ok, detail):
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
    if not ok:
        FAILURES.append(name)


def load(folder, name, entry):
    library = ctypes.CDLL(os.path.join(folder, entry["library"]))
    function = getattr(library, SYMBOL)
    function.restype = None
    function.argtypes = [ctypes.c_void_p] * 9
    library.gdnCudaUseStream.argtypes = [ctypes.c_void_p]

    def call(q, k, v, g, beta, pool, read, write, o):
        descriptors = [tensor_descriptor(t)
                       for t in (q, k, v, g, beta, pool, read, write, o)]
        library.gdnCudaUseStream(
            ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        function(*[ctypes.addressof(d) for d in descriptors])
    return call


def inputs(config, batch, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    h, hv = config["heads"], config["value_heads"]
    kd, vd = config["key_dim"], config["value_dim"]
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[
        config["element_type"]]

    def unit(x):
        return x / x.norm(dim=-1, keepdim=True)
    q = unit(torch.randn(batch, h, kd, generator=gen, device="cuda"))
    k = unit(torch.randn(batch, h, kd, generator=gen, device="cuda"))
    v = torch.randn(batch, hv, vd, generator=gen, device="cuda")
    g = torch.nn.functional.logsigmoid(
        torch.randn(batch, hv, generator=gen, device="cuda") + 2)
    beta = torch.sigmoid(torch.randn(batch, hv, generator=gen, device="cuda"))
    return q.to(dtype), k.to(dtype), v.to(dtype), g, beta


def correctness(call, config):
    hv, kd, vd = config["value_heads"], config["key_dim"], config["value_dim"]
    slots = 9
    gen = torch.Generator(device="cuda").manual_seed(3)
    pool = torch.randn(slots, hv, kd, vd, generator=gen, device="cuda") * 0.1
    before = pool.clone()
    # Slot 3 read twice, -1 and 99 (outside) read zeros and write nothing.
    read = torch.tensor([3, 3, -1, 0, 8, 99], dtype=torch.int32,
                        device="cuda")
    write = torch.tensor([5, 7, -1, 1, 2, 99], dtype=torch.int32,
                         device="cuda")
    q, k, v, g, beta = inputs(config, read.shape[0], 4)
    o = torch.empty_like(v)
    call(q, k, v, g, beta, pool, read, write, o)
    torch.cuda.synchronize()
    expected = before.double().cpu().numpy()
    worst = 0.0
    b64 = before.double().cpu().numpy()
    for b, (r, w) in enumerate(zip(read.tolist(), write.tolist())):
        start = b64[r] if 0 <= r < slots else np.zeros((hv, kd, vd))
        args = [x[b:b + 1].double().cpu().numpy() for x in (q, k, v, g, beta)]
        ro, rs = reference.delta_rule_step(*args, start[None],
                                           scale=config["scale"])
        worst = max(worst, reference.relative_error(
            o[b:b + 1].float().cpu().numpy(), ro)[1])
        if 0 <= w < slots:
            expected[w] = rs[0]
    state_error = reference.relative_error(pool.cpu().numpy(), expected)[1]
    untouched = [s for s in range(slots) if s not in (5, 7, 1, 2)]
    same = bool(torch.equal(pool[untouched], before[untouched]))
    tolerance = 2e-5 if config["element_type"] == "f32" else 2e-2
    check(f"pool decode {config['element_type']} H={config['heads']} "
          f"Hv={hv}", worst < tolerance and state_error < tolerance and same,
          f"o {worst:.2e}, pool {state_error:.2e}, other slots untouched: "
          f"{same}")


def check_python_api(call, kernels, config):
    """gdn.cuda's delta_rule_step(state_indices=, write_indices=) runs the
    same library: the same o and pool, bit for bit, and returns the
    pool."""
    hv, kd, vd = config["value_heads"], config["key_dim"], config["value_dim"]
    gen = torch.Generator(device="cuda").manual_seed(11)
    pool = torch.randn(6, hv, kd, vd, generator=gen, device="cuda") * 0.1
    raw_pool = pool.clone()
    read = torch.tensor([4, -1, 0], dtype=torch.int32, device="cuda")
    write = torch.tensor([1, 2, -1], dtype=torch.int32, device="cuda")
    q, k, v, g, beta = inputs(config, 3, 12)
    raw_o = torch.empty_like(v)
    call(q, k, v, g, beta, raw_pool, read, write, raw_o)
    o, returned = kernels.delta_rule_step(q, k, v, g, beta, pool,
                                          state_indices=read,
                                          write_indices=write)
    torch.cuda.synchronize()
    same = bool(torch.equal(o, raw_o) and torch.equal(pool, raw_pool))
    check(f"gdn.cuda delta_rule_step(state_indices=, write_indices=) "
          f"{config['element_type']}", same and returned is pool,
          f"equal to the library's call: {same}; the pool returned: "
          f"{returned is pool}")


def median_ms(run, repeats=50):
    start, end = torch.cuda.Event(True), torch.cuda.Event(True)
    times = []
    for _ in range(repeats):
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def graph_ms(run, repeats=50):
    """Milliseconds per call by CUDA-graph replay: no host call inside the
    timed interval, as an engine runs its decode step."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        run()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(True), torch.cuda.Event(True)
    start.record()
    for _ in range(repeats):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / repeats


def timing(call, dense, config, batch=256, slots=4096):
    hv, kd, vd = config["value_heads"], config["key_dim"], config["value_dim"]
    pool = torch.zeros(slots, hv, kd, vd, device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(5)
    chosen = torch.randperm(slots, generator=gen, device="cuda")[:batch]
    read = chosen.to(torch.int32).contiguous()
    q, k, v, g, beta = inputs(config, batch, 6)
    o = torch.empty_like(v)
    state = torch.zeros(batch, hv, kd, vd, device="cuda")
    state_bytes = state.numel() * 4
    source = torch.empty(2 * state.numel(), device="cuda")
    target = torch.empty_like(source)
    for _ in range(3):
        call(q, k, v, g, beta, pool, read, read, o)
        dense.delta_rule_step(q, k, v, g, beta, state, inplace=True)
    pool_call = lambda: call(q, k, v, g, beta, pool, read, read, o)
    dense_call = lambda: dense.delta_rule_step(
        q, k, v, g, beta, state, inplace=True)
    copy_call = lambda: target.copy_(source)
    # Captured, the copy becomes a memcpy node that the copy engines may
    # run, slower than the kernel the same call launches eagerly: the
    # faster of the two is the rate the device sustains.
    copy_graph_ms, copy_events_ms = graph_ms(copy_call), median_ms(copy_call)
    copy_ms = min(copy_graph_ms, copy_events_ms)
    # The state is read and written once: 2 x its bytes (a copy of
    # 2 x state bytes reads and writes 4 x; its rate is bytes moved / time).
    copy_rate = 2 * source.numel() * 4 / copy_ms / 1e6

    def row(what, graph, events):
        rate = 2 * state_bytes / graph / 1e6
        print(f"| B = {batch} | {what} | {graph:.4f} ms | {events:.4f} ms | "
              f"{rate:.0f} GB/s | {100 * rate / copy_rate:.0f}% |")
    row(f"pool of {slots} slots, random", graph_ms(pool_call),
        median_ms(pool_call))
    row("dense state, in place", graph_ms(dense_call), median_ms(dense_call))
    print(f"| copy | {4 * state_bytes / 2**20:.0f} MiB moved | "
          f"{copy_graph_ms:.4f} ms | {copy_events_ms:.4f} ms | "
          f"{copy_rate:.0f} GB/s (the faster) | 100% |")

def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "pool_manifest.json")) as f:
        manifest = json.load(f)
    kernels = load_artifacts(folder)
    for name, entry in manifest.items():
        call = load(folder, name, entry)
        correctness(call, entry["config"])
        check_python_api(call, kernels[name.removesuffix("_pool")],
                         entry["config"])
    if "--no-timing" in sys.argv:
        print(f"{len(FAILURES)} failed")
        sys.exit(1 if FAILURES else 0)
    name, entry = next((n, e) for n, e in manifest.items()
                       if e["config"]["element_type"] == "bf16")
    dense = kernels[name.removesuffix("_pool")]
    print("| batch | states | graph replay | events (median) | state bytes / "
          "graph time | of the copy rate |\n|---|---|---|---|---|---|")
    timing(load(folder, name, entry), dense, entry["config"])
    print(f"{len(FAILURES)} failed")
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
