"""Checks gdn.torch on the GPU machine: the custom ops and the fla-signature
functions against transformers' own PyTorch implementation of the gated
delta rule (modeling_qwen3_next.torch_chunk_gated_delta_rule) and, where
they can be imported, fla's own chunk_gated_delta_rule and
fused_recurrent_gated_delta_rule; then torch.compile and CUDA-graph
capture.

    python3 gpu_torch_check.py KERNEL_FOLDER

KERNEL_FOLDER holds the libraries of scripts/build_gpu_artifacts.py. Prints
one line per check and exits non-zero if any fails.
"""

import sys

import torch
import torch.nn.functional as F

import gdn.torch as gdn_torch

FAILURES = []


def check(name, ok, detail):
    print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
    if not ok:
        FAILURES.append(name)


def relative(actual, expected):
    actual, expected = actual.double(), expected.double()
    return float((actual - expected).norm() / expected.norm().clamp_min(1e-30))


def inputs(seed, batch, tokens, heads, value_heads, dim, dtype):
    gen = torch.Generator(device="cuda").manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device="cuda")
    q = randn(batch, tokens, heads, dim).to(dtype)
    k = randn(batch, tokens, heads, dim).to(dtype)
    v = randn(batch, tokens, value_heads, dim).to(dtype)
    g = F.logsigmoid(randn(batch, tokens, value_heads) + 2.0)
    beta = torch.sigmoid(randn(batch, tokens, value_heads))
    state = randn(batch, value_heads, dim, dim) * 0.1
    return q, k, v, g, beta, state


def repeat_heads(x, group):
    return x.repeat_interleave(group, dim=2) if group > 1 else x


def main():
    from transformers.models.qwen3_next import modeling_qwen3_next as hf
    count = gdn_torch.register(sys.argv[1])
    print(f"registered {count} configurations")
    try:
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla
        from fla.ops.gated_delta_rule import (
            fused_recurrent_gated_delta_rule as fla_recurrent)
    except Exception as error:     # noqa: BLE001 - any import failure
        fla = fla_recurrent = None
        print(f"fla not importable ({type(error).__name__}): compared with "
              f"transformers only")

    for heads, value_heads, tokens in ((16, 32, 300), (2, 8, 1000)):
        group = value_heads // heads
        q, k, v, g, beta, state = inputs(1, 2, tokens, heads, value_heads,
                                         128, torch.bfloat16)
        o, final = gdn_torch.chunk_gated_delta_rule(
            q, k, v, g, beta, initial_state=state, output_final_state=True,
            use_qk_l2norm_in_kernel=True)
        ro, rs = hf.torch_chunk_gated_delta_rule(
            repeat_heads(q, group).float(), repeat_heads(k, group).float(),
            v.float(), g, beta, initial_state=state,
            output_final_state=True, use_qk_l2norm_in_kernel=True)
        name = f"chunk H={heads} Hv={value_heads} T={tokens}"
        err_o, err_s = relative(o, ro), relative(final, rs)
        check(f"{name} vs transformers", err_o < 2e-2 and err_s < 2e-2,
              f"o {err_o:.2e}, state {err_s:.2e}")
        if fla is not None:
            fo, fs = fla(q, k, v, g, beta, initial_state=state,
                         output_final_state=True,
                         use_qk_l2norm_in_kernel=True)
            err_o, err_s = relative(o, fo), relative(final, fs)
            check(f"{name} vs fla", err_o < 2e-2 and err_s < 2e-2,
                  f"o {err_o:.2e}, state {err_s:.2e}")

    # Packed sequences: equal to one call per sequence.
    heads, value_heads = 16, 32
    lengths = [1, 63, 64, 65, 300]
    cu = torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(),
                      device="cuda", dtype=torch.int32)
    q, k, v, g, beta, _ = inputs(2, 1, sum(lengths), heads, value_heads, 128,
                                 torch.bfloat16)
    initial = inputs(3, len(lengths), 1, heads, value_heads, 128,
                     torch.bfloat16)[5]
    o, final = gdn_torch.chunk_gated_delta_rule(
        q, k, v, g, beta, initial_state=initial, output_final_state=True,
        cu_seqlens=cu, use_qk_l2norm_in_kernel=True)
    worst = 0.0
    for n in range(len(lengths)):
        part = slice(int(cu[n]), int(cu[n + 1]))
        ro, rs = hf.torch_chunk_gated_delta_rule(
            repeat_heads(q[:, part], 2).float(),
            repeat_heads(k[:, part], 2).float(), v[:, part].float(),
            g[:, part], beta[:, part], initial_state=initial[n:n + 1],
            output_final_state=True, use_qk_l2norm_in_kernel=True)
        worst = max(worst, relative(o[:, part], ro), relative(final[n], rs[0]))
    check("chunk with cu_seqlens (lengths 1, 63, 64, 65, 300)", worst < 2e-2,
          f"worst {worst:.2e}")
    # The packed call in a CUDA graph (no host synchronization inside),
    # replayed with other lengths written into the same offsets.
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        graph_o, graph_final = gdn_torch.chunk_gated_delta_rule(
            q, k, v, g, beta, initial_state=initial, output_final_state=True,
            cu_seqlens=cu, use_qk_l2norm_in_kernel=True)
    other = torch.tensor([0, 200, 201, 300, 430, 493], device="cuda",
                         dtype=torch.int32)
    cu.copy_(other)
    graph.replay()
    eager_o, eager_final = gdn_torch.chunk_gated_delta_rule(
        q, k, v, g, beta, initial_state=initial, output_final_state=True,
        cu_seqlens=cu, use_qk_l2norm_in_kernel=True)
    same = torch.equal(graph_o, eager_o) and torch.equal(graph_final,
                                                         eager_final)
    check("chunk with cu_seqlens captured in a CUDA graph, replayed with "
          "new lengths", same, f"replay equals the eager call: {same}")

    # Decode from a pool, with an empty entry, against transformers' chunked
    # form run entry by entry on one token (its token recurrence,
    # torch_recurrent_gated_delta_rule, gave 0.38 relative against its own
    # chunked form from these non-zero initial states, so it is not the
    # reference here) and fla's fused recurrence.
    q, k, v, g, beta, _ = inputs(4, 4, 1, heads, value_heads, 128,
                                 torch.bfloat16)
    pool = inputs(5, 9, 1, heads, value_heads, 128, torch.bfloat16)[5]
    before = pool.clone()
    slots = torch.tensor([7, -1, 0, 3], device="cuda", dtype=torch.int32)
    worst_fla = 0.0
    o, _ = gdn_torch.fused_recurrent_gated_delta_rule(
        q, k, v, g, beta, initial_state=pool, ssm_state_indices=slots,
        use_qk_l2norm_in_kernel=True)
    worst = 0.0
    for b, slot in enumerate(slots.tolist()):
        start = (before[slot:slot + 1] if slot >= 0 else
                 torch.zeros_like(before[:1]))
        ro, rs = hf.torch_chunk_gated_delta_rule(
            repeat_heads(q[b:b + 1], 2).float(),
            repeat_heads(k[b:b + 1], 2).float(), v[b:b + 1].float(),
            g[b:b + 1], beta[b:b + 1], initial_state=start,
            output_final_state=True, use_qk_l2norm_in_kernel=True)
        if fla_recurrent is not None:
            # fla's recurrence (g and beta by keyword: its newest
            # signature has gk and gv between them).
            fo, _ = fla_recurrent(repeat_heads(q[b:b + 1], 2),
                                  repeat_heads(k[b:b + 1], 2), v[b:b + 1],
                                  g=g[b:b + 1], beta=beta[b:b + 1],
                                  initial_state=start.clone(),
                                  output_final_state=True,
                                  use_qk_l2norm_in_kernel=True)
            worst_fla = max(worst_fla, relative(o[b:b + 1], fo))
        worst = max(worst, relative(o[b:b + 1], ro))
        if slot >= 0:
            worst = max(worst, relative(pool[slot], rs[0]))
    untouched = [s for s in range(9) if s not in (7, 0, 3)]
    same = bool(torch.equal(pool[untouched], before[untouched]))
    check("decode from a pool (slots 7, -1, 0, 3) vs transformers",
          worst < 2e-2 and same,
          f"worst {worst:.2e}; other slots untouched: {same}")
    if fla_recurrent is not None:
        check("decode from a pool vs fla's fused_recurrent", worst_fla < 2e-2,
              f"worst {worst_fla:.2e}")

    # torch.compile traces the custom ops (fake implementations).
    compiled = torch.compile(
        lambda *a: gdn_torch.chunk_gated_delta_rule(
            *a, output_final_state=True, use_qk_l2norm_in_kernel=True),
        fullgraph=True)
    q, k, v, g, beta, state = inputs(6, 2, 200, heads, value_heads, 128,
                                     torch.bfloat16)
    co, cs = compiled(q, k, v, g, beta, None, state)
    eo, es = gdn_torch.chunk_gated_delta_rule(
        q, k, v, g, beta, None, state, output_final_state=True,
        use_qk_l2norm_in_kernel=True)
    # Inductor fuses the l2 normalisation, so q and k may round
    # differently to bf16 than in eager mode.
    err_o, err_s = relative(co, eo), relative(cs, es)
    check("torch.compile(fullgraph=True)", err_o < 1e-2 and err_s < 1e-2,
          f"against eager: o {err_o:.2e}, state {err_s:.2e}")

    # A CUDA graph of the pool decode, replayed with new inputs.
    q, k, v, g, beta, _ = inputs(7, 4, 1, heads, value_heads, 128,
                                 torch.bfloat16)
    pool = inputs(8, 9, 1, heads, value_heads, 128, torch.bfloat16)[5]
    # An empty entry (-1) inside the graph: the pool kernel skips it.
    slots = torch.tensor([2, -1, 0, 8], device="cuda", dtype=torch.int32)
    static = [x.clone() for x in (q, k, v, g, beta)]
    reference_pool = pool.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):      # warm up outside the graph
        gdn_torch.fused_recurrent_gated_delta_rule(
            *static, initial_state=reference_pool.clone(),
            ssm_state_indices=slots, use_qk_l2norm_in_kernel=True)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        graph_o, _ = gdn_torch.fused_recurrent_gated_delta_rule(
            *static, initial_state=pool, ssm_state_indices=slots,
            use_qk_l2norm_in_kernel=True)
    pool.copy_(reference_pool)
    worst = 0.0
    for step in range(3):
        fresh = inputs(10 + step, 4, 1, heads, value_heads, 128,
                       torch.bfloat16)[:5]
        for target, x in zip(static, fresh):
            target.copy_(x)
        graph.replay()
        eager_o, _ = gdn_torch.fused_recurrent_gated_delta_rule(
            *fresh, initial_state=reference_pool, ssm_state_indices=slots,
            use_qk_l2norm_in_kernel=True)
        torch.cuda.synchronize()
        worst = max(worst, float((graph_o - eager_o).abs().max()),
                    float((pool - reference_pool).abs().max()))
    check("CUDA graph of the pool decode (slots 2, -1, 0, 8), 3 replays",
          worst == 0.0,
          f"largest difference from eager {worst:.2e}")

    print(f"{len(FAILURES)} failed")
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
