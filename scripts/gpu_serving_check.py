"""Checks and times the CUDA chunked scan over packed sequences and pools of
states on the GPU machine (gdn.delta_rule with cu_seqlens, state_indices
and write_indices, built by scripts/build_gpu_artifacts.py into
serving_manifest.json).

    python3 gpu_serving_check.py KERNEL_FOLDER [--no-timing] [--quick]

Correctness, against the float64 recurrence of gdn.reference run sequence
by sequence (the inputs as the kernel sees them):
- packed: lengths 0, 1, 63, 64, 65 and 1000 among others in one call, with
  rows before the first and after the last sequence (o must be zero
  there), each sequence from its own initial state;
- pooled: a batch reading shuffled, repeated, -1 and out-of-range slots and
  writing separate ones; the slots nobody writes stay bit for bit (on
  CUDA a slot that one sequence writes must not be read by another: the
  kernel updates the pool in place, docs/c-abi.md);
- packed and pooled together;
- a CUDA graph captured once and replayed with three sets of lengths
  written into the same offset buffer;
- raw gates (a, b, A_log, dt_bias of a Qwen-style layer) turned into g and
  beta inside the kernels: prefill, packed prefill and the decode step,
  against float64 gates (both branches of softplus included);
- bf16 state storage: a prefill and a decode step from a bf16 pool;
- checkpoints (prefix caching) equal to the prefills of the prefixes:
  dense every 64 tokens, packed from a pool every 128 (the rows after the
  last sequence's zero);
- speculative verify: every draft token's state equal to step-by-step
  decode, from states and from a pool's slots (the pool untouched).
Timing (CUDA events, medians, graph replay): 64 sequences of mixed lengths
summing to 32768 tokens beside 64 sequences of 512, in the same run, and
fla's chunk_gated_delta_rule with cu_seqlens on the same inputs where
flash-linear-attention's `fla` package is on PYTHONPATH.
--quick runs one small case per library (for compute-sanitizer).
"""

import ctypes
import json
import os
import sys

import numpy as np
import torch

from gdn import inputs, reference
from gdn.cuda import load_artifacts, tensor_descriptor

SYMBOL = "_mlir_ciface_gdn_serving"
TOLERANCE = {"bf16": 1e-2, "f16": 1e-2}
TORCH_TYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
FAILURES = []


def check(name, ok, detail):
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
    if not ok:
        FAILURES.append(name)


def load(folder, entry):
    library = ctypes.CDLL(os.path.join(folder, entry["library"]))
    function = getattr(library, SYMBOL)
    function.restype = None
    library.gdnCudaUseStream.argtypes = [ctypes.c_void_p]

    def call(*tensors):
        descriptors = [tensor_descriptor(t) for t in tensors]
        library.gdnCudaUseStream(
            ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        try:
            function(*[ctypes.c_void_p(ctypes.addressof(d))
                       for d in descriptors])
        finally:
            library.gdnCudaOwnStreams()
    return call


def upload(array, dtype=None):
    """A host array on the device by one copy (initcheck watches gdn's
    kernels only: it sees copies, not torch's conversion kernels)."""
    host = torch.from_numpy(np.ascontiguousarray(array))
    if dtype is not None:
        host = host.to(dtype)
    return host.cuda()


def token_inputs(config, batch, tokens, seed):
    """Device q, k, v, g, beta and the float64 values the kernel sees."""
    data = inputs.delta_rule_inputs(
        seed, batch, tokens, config["heads"], config["value_heads"],
        config["key_dim"], config["value_dim"], "design")
    dtype = TORCH_TYPES[config["element_type"]]
    device, seen = [], []
    for name in ("q", "k", "v", "g", "beta"):
        host = torch.from_numpy(np.ascontiguousarray(data[name]))
        if name in ("q", "k", "v"):
            host = host.to(dtype)
        device.append(host.cuda())
        seen.append(host.double().numpy())
    return device, seen


def random_states(config, count, seed):
    rng = np.random.default_rng(seed)
    shape = (count, config["value_heads"], config["key_dim"],
             config["value_dim"])
    return (0.1 * rng.standard_normal(shape)).astype(np.float32)


def sequence_reference(seen, start, end, state, scale):
    """o [end - start, Hv, V] and the final state of one packed sequence."""
    parts = [x[:, start:end] for x in seen]
    o, final = reference.delta_rule(*parts, state[None], scale)
    return o[0], final[0]


def compare(name, actual, expected, tolerance):
    ratio, worst = reference.relative_error(actual, expected)
    ok = bool(np.all(np.isfinite(actual))) and max(ratio, worst) <= tolerance
    return ok, f"ratio={ratio:.2e} max_rel={worst:.2e}"


def offsets_of(lengths, before):
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32) + before


def check_packed(call, config, pooled, lengths, before=5, after=3, seed=0):
    """One packed call (pooled: from and into a pool) against the
    reference, sequence by sequence."""
    et, scale = config["element_type"], config["scale"]
    hv, vd = config["value_heads"], config["value_dim"]
    count = len(lengths)
    cu = offsets_of(lengths, before)
    total = int(cu[-1]) + after
    device, seen = token_inputs(config, 1, total, seed)
    if pooled:
        # Reads see the pool as passed in only where no other sequence
        # writes the slot (docs/c-abi.md): each sequence writes its own
        # slot back, or one that nobody reads.
        slots = 2 * count + 4
        pool0 = random_states(config, slots, seed + 1)
        order = np.random.default_rng(seed + 2).permutation(slots)
        read, unread = order[:count].astype(np.int32), order[count:]
        read[0] = -1
        if count > 2:
            read[2] = read[1]            # one slot read twice
        readers = {r: list(read).count(r) for r in read}
        write = np.array([r if n % 2 == 0 and r >= 0 and readers[r] == 1
                          else unread[n] for n, r in enumerate(read)],
                         np.int32)
        write[-1] = slots + 7            # outside the pool: nothing written
        pool = upload(pool0)
        o = torch.empty(1, total, hv, vd, dtype=TORCH_TYPES[et],
                        device="cuda")
        call(*device, pool, upload(cu), upload(read), upload(write), o)
        starts = [pool0[r] if 0 <= r < slots else np.zeros_like(pool0[0])
                  for r in read]
    else:
        h0 = random_states(config, count, seed + 1)
        o = torch.empty(1, total, hv, vd, dtype=TORCH_TYPES[et],
                        device="cuda")
        final = torch.empty(count, *h0.shape[1:], device="cuda")
        call(*device, upload(h0), upload(cu), o, final)
        starts = list(h0)
    torch.cuda.synchronize()
    o_host = o.cpu().float().numpy()[0]
    expected_o = np.zeros(o_host.shape)
    expected_states = []
    for n in range(count):
        start, end = int(cu[n]), int(cu[n + 1])
        expected_o[start:end], state = sequence_reference(
            seen, start, end, starts[n], scale)
        expected_states.append(state)
    label = (f"{'packed pooled' if pooled else 'packed'} {et} "
             f"Hv={hv} N={count} total={total}")
    ok, detail = compare(label, o_host, expected_o, TOLERANCE[et])
    outside = np.concatenate([o_host[:before], o_host[total - after:]])
    zeros = bool(np.all(outside == 0))
    if pooled:
        expected_pool = pool0.astype(np.float64).copy()
        for n, w in enumerate(write):
            if 0 <= w < slots:
                expected_pool[w] = expected_states[n]
        pool_host = pool.cpu().numpy()
        state_ok, state_detail = compare(label, pool_host, expected_pool,
                                         TOLERANCE[et])
        untouched = [s for s in range(slots) if s not in write]
        same = bool(np.array_equal(pool_host[untouched], pool0[untouched]))
        check(label, ok and state_ok and zeros and same,
              f"o {detail}; pool {state_detail}; rows outside zero: {zeros};"
              f" unwritten slots untouched: {same}")
    else:
        state_ok, state_detail = compare(
            label, final.cpu().numpy(),
            np.array(expected_states).reshape(final.shape), TOLERANCE[et])
        check(label, ok and state_ok and zeros,
              f"o {detail}; states {state_detail}; rows outside zero: "
              f"{zeros}")


def check_pooled(call, config, batch=4, tokens=130, seed=10):
    """A batch of equal lengths from and into a pool."""
    et, scale = config["element_type"], config["scale"]
    hv, vd = config["value_heads"], config["value_dim"]
    slots = 9
    pool0 = random_states(config, slots, seed)
    read = np.array([3, 3, -1, 99][:batch], np.int32)
    write = np.array([5, 7, 1, -1][:batch], np.int32)
    device, seen = token_inputs(config, batch, tokens, seed + 1)
    pool = upload(pool0)
    o = torch.empty(batch, tokens, hv, vd, dtype=TORCH_TYPES[et],
                    device="cuda")
    call(*device, pool, upload(read), upload(write), o)
    torch.cuda.synchronize()
    expected_o = np.zeros(o.shape)
    expected_pool = pool0.astype(np.float64).copy()
    for b in range(batch):
        r, w = int(read[b]), int(write[b])
        start = pool0[r] if 0 <= r < slots else np.zeros_like(pool0[0])
        o_b, s_b = reference.delta_rule(*[x[b:b + 1] for x in seen],
                                        start[None], scale)
        expected_o[b] = o_b[0]
        if 0 <= w < slots:
            expected_pool[w] = s_b[0]
    label = f"pooled {et} Hv={hv} B={batch} T={tokens}"
    ok, detail = compare(label, o.cpu().float().numpy(), expected_o,
                         TOLERANCE[et])
    pool_host = pool.cpu().numpy()
    state_ok, state_detail = compare(label, pool_host, expected_pool,
                                     TOLERANCE[et])
    untouched = [s for s in range(slots) if s not in write]
    same = bool(np.array_equal(pool_host[untouched], pool0[untouched]))
    check(label, ok and state_ok and same,
          f"o {detail}; pool {state_detail}; unwritten slots untouched: "
          f"{same}")


def check_graph_replay(call, config, total=700, count=5, seed=20):
    """One capture, three sets of lengths in the same offset buffer."""
    et, scale = config["element_type"], config["scale"]
    hv, vd = config["value_heads"], config["value_dim"]
    device, seen = token_inputs(config, 1, total, seed)
    h0 = random_states(config, count, seed + 1)
    h0_device = upload(h0)
    cu = upload(np.zeros(count + 1, np.int32))
    o = torch.zeros(1, total, hv, vd, dtype=TORCH_TYPES[et], device="cuda")
    final = torch.empty(count, *h0.shape[1:], device="cuda")
    rng = np.random.default_rng(seed + 2)
    length_sets = [[total // count] * count]
    for _ in range(2):
        cuts = np.sort(rng.choice(np.arange(1, total), count - 1,
                                  replace=False))
        length_sets.append(np.diff(np.concatenate([[0], cuts, [total]])))
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        call(*device, h0_device, cu, o, final)   # warm-up: modules loaded
        stream.synchronize()
        with torch.cuda.graph(graph, stream=stream):
            call(*device, h0_device, cu, o, final)
    worst = []
    for lengths in length_sets:
        offsets = offsets_of(lengths, 0)
        cu.copy_(torch.from_numpy(offsets))
        graph.replay()
        torch.cuda.synchronize()
        o_host = o.cpu().float().numpy()[0]
        expected_o = np.zeros(o_host.shape)
        states = []
        for n in range(count):
            start, end = int(offsets[n]), int(offsets[n + 1])
            expected_o[start:end], state = sequence_reference(
                seen, start, end, h0[n], scale)
            states.append(state)
        ok_o, detail_o = compare("", o_host, expected_o, TOLERANCE[et])
        ok_s, detail_s = compare("", final.cpu().numpy(), np.stack(states),
                                 TOLERANCE[et])
        worst.append((ok_o and ok_s, f"{list(map(int, lengths))}: o "
                      f"{detail_o}, states {detail_s}"))
    check(f"graph replay {et} Hv={hv}, three length sets",
          all(ok for ok, _ in worst), "; ".join(d for _, d in worst))


def check_python_api(folder, name="h2_hv4_k64_v128_bf16"):
    """gdn.cuda's delta_rule with cu_seqlens and state_indices: numpy
    inputs (numpy results), and a pool updated in place."""
    kernels = load_artifacts(folder)[name]
    config = kernels.config
    lengths = [3, 0, 70, 64]
    cu = offsets_of(lengths, 0)
    total = int(cu[-1])
    data = inputs.delta_rule_inputs(
        40, 1, total, config["heads"], config["value_heads"],
        config["key_dim"], config["value_dim"], "design")
    seen = [torch.from_numpy(data[n]).to(TORCH_TYPES["bf16"]).double()
            .numpy() if n in "qkv" else data[n].astype(np.float64)
            for n in ("q", "k", "v", "g", "beta")]
    h0 = random_states(config, len(lengths), 41)
    o, final = kernels.delta_rule(*[data[n] for n in ("q", "k", "v", "g",
                                                      "beta")],
                                  initial_state=h0, cu_seqlens=cu)
    worst = 0.0
    for n in range(len(lengths)):
        ro, rs = sequence_reference(seen, cu[n], cu[n + 1], h0[n],
                                    config["scale"])
        worst = max(worst,
                    *reference.relative_error(o[0, cu[n]:cu[n + 1]], ro),
                    *reference.relative_error(final[n], rs))
    check("gdn.cuda delta_rule(cu_seqlens=...) from numpy", worst < 1e-2,
          f"worst {worst:.2e}")
    pool = upload(random_states(config, 6, 42))
    before = pool.cpu().numpy()
    device = [upload(data[n], TORCH_TYPES["bf16"] if n in "qkv" else None)
              for n in ("q", "k", "v", "g", "beta")]
    read = torch.tensor([5, -1, 2, 0], dtype=torch.int32, device="cuda")
    o, returned = kernels.delta_rule(*device, initial_state=pool,
                                     cu_seqlens=upload(cu),
                                     state_indices=read)
    torch.cuda.synchronize()
    worst = 0.0
    for n, slot in enumerate(read.tolist()):
        start = before[slot] if slot >= 0 else np.zeros_like(before[0])
        _, rs = sequence_reference(seen, cu[n], cu[n + 1], start,
                                   config["scale"])
        if slot >= 0:
            worst = max(worst, max(reference.relative_error(
                pool[slot].cpu().numpy(), rs)))
    same = returned.data_ptr() == pool.data_ptr()
    untouched = bool(np.array_equal(pool.cpu().numpy()[[1, 3, 4]],
                                    before[[1, 3, 4]]))
    check("gdn.cuda delta_rule(state_indices=...) on a pool in place",
          worst < 1e-2 and same and untouched,
          f"worst {worst:.2e}, the pool returned: {same}, other slots "
          f"untouched: {untouched}")
    try:
        kernels.delta_rule(*device, initial_state=pool, cu_seqlens=upload(
            cu), state_indices=read[:2])
        check("gdn.cuda refuses state_indices of the wrong length", False,
              "no error")
    except ValueError as error:
        check("gdn.cuda refuses state_indices of the wrong length", True,
              str(error))
    check_python_checkpoints_and_verify(kernels)
    check_python_raw_gates(kernels)


def check_python_raw_gates(kernels):
    """gdn.cuda's delta_rule and delta_rule_step with a_log and dt_bias
    (numpy in), against the float64 gates; the step also in place."""
    config = kernels.config
    names = ("q", "k", "v")
    worst = 0.0
    for tokens in (150, None):
        data = inputs.delta_rule_inputs(
            45, 2, tokens or 1, config["heads"], config["value_heads"],
            config["key_dim"], config["value_dim"], "design")
        if tokens is None:
            data = {n: x[:, 0] for n, x in data.items() if x is not None}
        a, b, a_log, dt_bias, g, beta = raw_gates(config, 2, tokens, 46)
        seen = [torch.from_numpy(np.ascontiguousarray(data[n]))
                .to(TORCH_TYPES["bf16"]).double().numpy() for n in names]
        h0 = random_states(config, 2, 47)
        if tokens is None:
            state = upload(h0)
            device = [upload(data[n], TORCH_TYPES["bf16"]) for n in names]
            o, new = kernels.delta_rule_step(
                *device, upload(a), upload(b), state, a_log=a_log,
                dt_bias=dt_bias, inplace=True)
            torch.cuda.synchronize()
            o, new = o.float().cpu().numpy(), new.cpu().numpy()
            ro, rs = reference.delta_rule_step(*seen, g, beta, h0,
                                               config["scale"])
            worst = max(worst, *reference.relative_error(
                state.cpu().numpy(), rs))
        else:
            o, new = kernels.delta_rule(*[data[n] for n in names], a, b,
                                        initial_state=h0, a_log=a_log,
                                        dt_bias=dt_bias)
            ro, rs = reference.delta_rule(*seen, g, beta, h0,
                                          config["scale"])
        worst = max(worst, *reference.relative_error(o, ro),
                    *reference.relative_error(new, rs))
    check("gdn.cuda delta_rule / delta_rule_step(a_log=, dt_bias=)",
          worst < 1e-2, f"worst {worst:.2e} (the step in place)")


def check_python_checkpoints_and_verify(kernels):
    """gdn.cuda's delta_rule(checkpoint_every=...) and delta_rule_verify
    from numpy, against the float64 recurrence."""
    config = kernels.config
    batch, tokens = 2, 150
    data = inputs.delta_rule_inputs(
        43, batch, tokens, config["heads"], config["value_heads"],
        config["key_dim"], config["value_dim"], "design")
    names = ("q", "k", "v", "g", "beta")
    seen = [torch.from_numpy(data[n]).to(TORCH_TYPES["bf16"]).double()
            .numpy() if n in "qkv" else data[n].astype(np.float64)
            for n in names]
    h0 = random_states(config, batch, 44)
    _, _, checkpoints = kernels.delta_rule(
        *[data[n] for n in names], initial_state=h0, checkpoint_every=64)
    expected = np.array([
        prefix_states([x[b:b + 1] for x in seen], 0, tokens, h0[b], 64,
                      config["scale"]) for b in range(batch)])
    worst = max(reference.relative_error(checkpoints, expected))
    check("gdn.cuda delta_rule(checkpoint_every=64) from numpy",
          checkpoints.shape == expected.shape and worst < 1e-2,
          f"shape {list(checkpoints.shape)}, worst {worst:.2e}")
    try:
        kernels.delta_rule(*[data[n] for n in names], initial_state=h0,
                           checkpoint_every=96)
        check("gdn.cuda refuses checkpoint_every inside a chunk", False,
              "no error")
    except ValueError as error:
        check("gdn.cuda refuses checkpoint_every inside a chunk", True,
              str(error))
    draft = 4
    o, states = kernels.delta_rule_verify(
        *[data[n][:, :draft] for n in names], h0)
    worst = 0.0
    for b in range(batch):
        state = h0[b][None].astype(np.float64)
        for t in range(draft):
            out, state = reference.delta_rule_step(
                *[x[b:b + 1, t] for x in seen], state, config["scale"])
            worst = max(worst, *reference.relative_error(o[b, t], out[0]),
                        *reference.relative_error(states[b, t], state[0]))
    check("gdn.cuda delta_rule_verify from numpy", worst < 1e-2,
          f"worst {worst:.2e}")


def raw_gates(config, batch, tokens, seed):
    """A Qwen-style layer's raw a, b [B, (T,) Hv] and A_log, dt_bias [Hv],
    and the float64 g and beta they give (softplus(x) = x above 20)."""
    rng = np.random.default_rng(seed)
    hv = config["value_heads"]
    lead = (batch,) if tokens is None else (batch, tokens)
    a = (2.0 * rng.standard_normal(lead + (hv,))).astype(np.float32)
    a.flat[:4] = [30.0, -30.0, 19.5, -100.0]      # both softplus branches
    b = (2.0 * rng.standard_normal(lead + (hv,))).astype(np.float32)
    a_log = np.log(rng.uniform(1, 16, hv)).astype(np.float32)
    dt_bias = (0.5 * rng.standard_normal(hv)).astype(np.float32)
    x = a.astype(np.float64) + dt_bias
    softplus = np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))
    g = -np.exp(a_log.astype(np.float64)) * softplus
    beta = 1.0 / (1.0 + np.exp(-b.astype(np.float64)))
    return a, b, a_log, dt_bias, g, beta


def check_gated(call, config, form, seed=50):
    """Raw gates computed in the kernels, against the float64 gates."""
    et, scale = config["element_type"], config["scale"]
    hv, kd, vd = config["value_heads"], config["key_dim"], config["value_dim"]
    dtype = {"f32": torch.float32, **TORCH_TYPES}[et]
    step = form == "step_gated"
    batch, tokens = (3, None) if step else (1 if "packed" in form else 2,
                                            150)
    data = inputs.delta_rule_inputs(seed, batch, tokens or 1,
                                    config["heads"], hv, kd, vd, "design")
    if step:
        data = {n: x[:, 0] for n, x in data.items() if x is not None}
    a, b, a_log, dt_bias, g, beta = raw_gates(config, batch, tokens, seed)
    qkv = [torch.from_numpy(np.ascontiguousarray(data[n])).to(dtype)
           for n in ("q", "k", "v")]
    seen = [x.double().numpy() for x in qkv] + [g, beta]
    device = [x.cuda() for x in qkv] + [upload(a), upload(b)]
    gates = [upload(a_log), upload(dt_bias)]
    o = torch.empty(*qkv[2].shape, dtype=dtype, device="cuda")
    if step:
        state0 = random_states(config, batch, seed + 1)
        new = torch.empty(state0.shape, device="cuda")
        call(*device, upload(state0), *gates, o, new)
        ro, rs = reference.delta_rule_step(*seen, state0, scale)
    elif form == "packed_gated":
        cu = offsets_of([0, 70, 1, 79], 0)
        h0 = random_states(config, 4, seed + 1)
        new = torch.empty(h0.shape, device="cuda")
        call(*device, upload(h0), upload(cu), *gates, o, new)
        ro, states = np.zeros(o.shape), []
        for n in range(4):
            ro[0, cu[n]:cu[n + 1]], state = sequence_reference(
                seen, cu[n], cu[n + 1], h0[n], scale)
            states.append(state)
        rs = np.stack(states)
    else:
        state0 = random_states(config, batch, seed + 1)
        new = torch.empty(state0.shape, device="cuda")
        call(*device, upload(state0), *gates, o, new)
        ro, rs = reference.delta_rule(*seen, state0, scale)
    torch.cuda.synchronize()
    tolerance = 2e-5 if et == "f32" else TOLERANCE[et]
    ok_o, detail_o = compare("", o.cpu().float().numpy(), ro, tolerance)
    ok_s, detail_s = compare("", new.cpu().numpy(), rs, tolerance)
    check(f"{form.replace('_', ' ')} {et} Hv={hv} (raw gates in the "
          f"kernel)", ok_o and ok_s, f"o {detail_o}; states {detail_s}")


def check_bf16_states(call, config, form, seed=60):
    """bf16 state storage: read widened, stored rounded (the reference
    starts from the rounded states; the final ones within bf16's
    rounding)."""
    et, scale = config["element_type"], config["scale"]
    hv = config["value_heads"]
    step = form.startswith("step")
    batch, tokens = 4, (None if step else 130)
    device, seen = token_inputs(config, batch, tokens or 1, seed)
    if step:
        device = [x[:, 0].contiguous() for x in device]
        seen = [x[:, 0] for x in seen]
    o = torch.empty_like(device[2])
    if step:
        slots = 7
        pool = upload(random_states(config, slots, seed + 1),
                      torch.bfloat16)
        before = pool.cpu().float().numpy()
        read = np.array([2, -1, 6, 0], np.int32)
        write = np.array([2, 5, 6, -1], np.int32)
        call(*device, pool, upload(read), upload(write), o)
        torch.cuda.synchronize()
        expected_o = np.zeros(o.shape)
        expected = before.astype(np.float64).copy()
        for b in range(batch):
            start = before[read[b]] if read[b] >= 0 else \
                np.zeros_like(before[0])
            ro, rs = reference.delta_rule_step(
                *[x[b:b + 1] for x in seen], start[None], scale)
            expected_o[b] = ro[0]
            if write[b] >= 0:
                expected[write[b]] = rs[0]
        actual = pool.cpu().float().numpy()
        untouched = bool(np.array_equal(actual[[1, 3, 4]],
                                        before[[1, 3, 4]]))
    else:
        h0 = upload(random_states(config, batch, seed + 1), torch.bfloat16)
        final = torch.empty_like(h0)
        call(*device, h0, o, final)
        torch.cuda.synchronize()
        expected_o, expected = reference.delta_rule(
            *seen, h0.cpu().double().numpy(), scale)
        actual, untouched = final.cpu().float().numpy(), True
    ok_o, detail_o = compare("", o.cpu().float().numpy(), expected_o,
                             TOLERANCE[et])
    ok_s, detail_s = compare("", actual, expected, TOLERANCE[et])
    check(f"{form.replace('_', ' ')} {et} Hv={hv}",
          ok_o and ok_s and untouched,
          f"o {detail_o}; states {detail_s}; other slots untouched: "
          f"{untouched}")


def prefix_states(seen, start, end, state, every, scale):
    """The float64 states after every `every` tokens of [start, end)."""
    return [sequence_reference(seen, start, start + (c + 1) * every, state,
                               scale)[1]
            for c in range((end - start) // every)]


def check_checkpoints(call, config, form, quick, seed=70):
    """Checkpoints against prefills of the prefixes: dense (B = 2 from
    their own states; T ends inside a chunk) or packed from a pool."""
    et, scale = config["element_type"], config["scale"]
    hv, kd, vd = config["value_heads"], config["key_dim"], config["value_dim"]
    every = int(form.rsplit("_", 1)[1])
    dtype = TORCH_TYPES[et]
    if form.startswith("packed"):
        lengths = [130, 0, 64, 300, 5] if quick else \
            [130, 0, 64, 300, 127, 128, 1000, 5]
        cu = offsets_of(lengths, 0)
        total = int(cu[-1]) + 70           # rows after the last sequence
        device, seen = token_inputs(config, 1, total, seed)
        slots = len(lengths) + 3
        pool0 = random_states(config, slots, seed + 1)
        read = np.array([(3 * n + 1) % slots for n in range(len(lengths))],
                        np.int32)
        read[1] = -1
        pool = upload(pool0)
        o = torch.empty(1, total, hv, vd, dtype=dtype, device="cuda")
        checkpoints = torch.full((total // every, hv, kd, vd), float("nan"),
                                 device="cuda")
        call(*device, pool, upload(cu), upload(read), upload(read), o,
             checkpoints)
        expected = []
        for n in range(len(lengths)):
            start = pool0[read[n]] if read[n] >= 0 else \
                np.zeros_like(pool0[0])
            expected += prefix_states(seen, int(cu[n]), int(cu[n + 1]),
                                      start, every, scale)
        rows = np.zeros((total // every, hv, kd, vd))
        rows[:len(expected)] = np.array(expected).reshape(
            (-1, hv, kd, vd))
        label = (f"packed pooled checkpoints every {every} {et} Hv={hv} "
                 f"({len(expected)} of {total // every} rows)")
    else:
        batch, tokens = 2, 200 if quick else 300
        device, seen = token_inputs(config, batch, tokens, seed)
        h0 = random_states(config, batch, seed + 1)
        o = torch.empty(batch, tokens, hv, vd, dtype=dtype, device="cuda")
        final = torch.empty(h0.shape, device="cuda")
        checkpoints = torch.full((batch, tokens // every, hv, kd, vd),
                                 float("nan"), device="cuda")
        call(*device, upload(h0), o, final, checkpoints)
        rows = np.array([
            prefix_states([x[b:b + 1] for x in seen], 0, tokens, h0[b],
                          every, scale) for b in range(batch)])
        label = (f"checkpoints every {every} {et} Hv={hv} B={batch} "
                 f"T={tokens}")
    torch.cuda.synchronize()
    ok, detail = compare(label, checkpoints.cpu().numpy(), rows,
                         TOLERANCE[et])
    check(label, ok, f"checkpoints {detail}")


def check_verify(call, config, form, quick, seed=80):
    """Every draft token's state against step-by-step decode; from a pool
    (shuffled, repeated and -1 slots) the pool stays bit for bit."""
    et, scale = config["element_type"], config["scale"]
    hv = config["value_heads"]
    batch, tokens = 3, 5 if quick else 16
    device, seen = token_inputs(config, batch, tokens, seed)
    o = torch.empty_like(device[2])
    states = torch.empty((batch, tokens, hv, config["key_dim"],
                          config["value_dim"]), device="cuda")
    pooled = form == "verify_pooled"
    if pooled:
        pool0 = random_states(config, 6, seed + 1)
        read = np.array([4, -1, 4], np.int32)
        pool = upload(pool0)
        call(*device, pool, upload(read), o, states)
        starts = [pool0[r] if r >= 0 else np.zeros_like(pool0[0])
                  for r in read]
    else:
        h0 = random_states(config, batch, seed + 1)
        call(*device, upload(h0), o, states)
        starts = list(h0)
    torch.cuda.synchronize()
    expected_o = np.zeros(o.shape)
    expected = np.zeros(states.shape)
    for b in range(batch):
        state = starts[b][None].astype(np.float64)
        for t in range(tokens):
            out, state = reference.delta_rule_step(
                *[x[b:b + 1, t] for x in seen], state, scale)
            expected_o[b, t], expected[b, t] = out[0], state[0]
    label = f"{form.replace('_', ' ')} {et} Hv={hv} B={batch} T={tokens}"
    ok_o, detail_o = compare("", o.cpu().float().numpy(), expected_o,
                             TOLERANCE[et])
    ok_s, detail_s = compare("", states.cpu().numpy(), expected,
                             TOLERANCE[et])
    same = not pooled or bool(np.array_equal(pool.cpu().numpy(), pool0))
    check(label, ok_o and ok_s and same,
          f"o {detail_o}; states {detail_s}; pool untouched: {same}")


def median_ms(run, repeats=30):
    start, end = torch.cuda.Event(True), torch.cuda.Event(True)
    times = []
    for _ in range(repeats):
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def fla_varlen():
    """fla's chunk_gated_delta_rule and prepare_chunk_indices, if
    flash-linear-attention's `fla` package can be imported."""
    try:
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule
        from fla.ops.utils.index import prepare_chunk_indices
    except Exception as error:  # noqa: BLE001 - any import failure
        print(f"fla not importable ({type(error).__name__}: {error}): "
              f"timed without it")
        return None
    return chunk_gated_delta_rule, prepare_chunk_indices


def time_fla(fla, device, h0, cu, config):
    """fla's varlen prefill on the same inputs (q and k repeated to Hv
    heads, which fla's GDN needs), its chunk table prepared before timing;
    graph replay if fla's call can be captured, else events around calls.
    Returns (milliseconds, how, o)."""
    chunk_gated_delta_rule, prepare_chunk_indices = fla
    q, k, v, g, beta = device
    group = config["value_heads"] // config["heads"]
    q, k = (x.repeat_interleave(group, dim=2).contiguous() for x in (q, k))
    cu64 = cu.long()
    indices = prepare_chunk_indices(cu64, 64)
    cu_cpu = cu64.cpu()

    def run():
        return chunk_gated_delta_rule(
            q, k, v, g, beta, scale=config["scale"], initial_state=h0,
            output_final_state=True, cu_seqlens=cu64, cu_seqlens_cpu=cu_cpu,
            chunk_indices=indices)
    o, _ = run()
    torch.cuda.synchronize()
    try:
        stream = torch.cuda.Stream()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            run()
            stream.synchronize()
            with torch.cuda.graph(graph, stream=stream):
                run()
        return median_ms(graph.replay), "graph", o
    except Exception as error:  # noqa: BLE001 - capture is optional
        print(f"fla's call could not be captured ({type(error).__name__}): "
              f"timed by events around calls")
        torch.cuda.synchronize()
        return median_ms(run), "events", o


def timing(call, config, count=64, total=32768, seed=30):
    """Mixed lengths against equal lengths, same total, graph replay;
    fla's varlen path on the same inputs where it can be imported."""
    hv, vd = config["value_heads"], config["value_dim"]
    et = config["element_type"]
    device, _ = token_inputs(config, 1, total, seed)
    h0 = upload(random_states(config, count, seed + 1))
    o = torch.empty(1, total, hv, vd, dtype=TORCH_TYPES[et], device="cuda")
    final = torch.empty(count, *h0.shape[1:], device="cuda")
    rng = np.random.default_rng(seed + 2)
    # Mixed: lengths from 1 to ~2k tokens (a long tail), summing to total.
    weights = rng.pareto(1.5, count) + 0.05
    mixed = np.maximum(1, np.floor(weights / weights.sum() * total))
    mixed[np.argmax(mixed)] += total - mixed.sum()
    rows = [("equal", [total // count] * count), ("mixed", mixed)]
    fla = fla_varlen()
    print(f"| {count} sequences, {total} tokens (Hv = {hv}, K = V = {vd}) "
          f"| gdn median | per token | fla median | gdn vs fla o |\n"
          f"|---|---|---|---|---|")
    for label, lengths in rows:
        cu = upload(offsets_of(np.asarray(lengths, np.int64), 0))
        stream = torch.cuda.Stream()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream):
            call(*device, h0, cu, o, final)
            stream.synchronize()
            with torch.cuda.graph(graph, stream=stream):
                call(*device, h0, cu, o, final)
        milliseconds = median_ms(graph.replay)
        longest = int(np.max(lengths))
        fla_cell = agreement = "-"
        if fla is not None:
            fla_ms, how, fla_o = time_fla(fla, device, h0, cu, config)
            fla_cell = f"{fla_ms:.3f} ms ({how})"
            graph.replay()
            torch.cuda.synchronize()
            difference = (o.double() - fla_o.double()).norm()
            agreement = f"{float(difference / fla_o.double().norm()):.1e}"
        print(f"| {label} (longest {longest}) | {milliseconds:.3f} ms | "
              f"{milliseconds * 1e6 / total:.1f} ns | {fla_cell} | "
              f"{agreement} |")


def main():
    folder = sys.argv[1]
    quick = "--quick" in sys.argv
    with open(os.path.join(folder, "serving_manifest.json")) as f:
        manifest = json.load(f)
    lengths = [0, 1, 63, 64, 65, 1000, 0, 17, 128, 200]
    for name, entry in manifest.items():
        config, form = entry["config"], entry["config"]["form"]
        call = load(folder, entry)
        if form == "packed":
            check_packed(call, config, False, [0, 1, 65, 3] if quick
                         else lengths)
            if not quick:
                check_packed(call, config, False, [130], before=0, after=0,
                             seed=1)
                check_packed(call, config, False, [], before=0, after=9,
                             seed=2)
                check_graph_replay(call, config)
        elif form == "pooled":
            check_pooled(call, config, tokens=70 if quick else 130)
        elif form in ("gated", "packed_gated", "step_gated"):
            check_gated(call, config, form)
        elif form.endswith("bf16_state"):
            check_bf16_states(call, config, form)
        elif "checkpoints" in form:
            check_checkpoints(call, config, form, quick)
        elif form.startswith("verify"):
            check_verify(call, config, form, quick)
        else:
            check_packed(call, config, True, [0, 65, 3, 1] if quick
                         else lengths)
    if not quick:
        check_python_api(folder)
    if "--no-timing" not in sys.argv and not quick:
        name, entry = next((n, e) for n, e in manifest.items()
                           if e["config"]["form"] == "packed" and
                           e["config"]["value_heads"] == 32)
        timing(load(folder, entry), entry["config"])
    print(f"{len(FAILURES)} failed")
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
