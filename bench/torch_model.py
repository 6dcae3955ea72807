"""The PyTorch baseline of a gdn model description: the same model as
gdn.model.ModelReference (the design document's GDN block, MLA, SwiGLU and
RMSNorm with pre-norm residuals), written the way a PyTorch user would run
it fast, so that gdn's compiled models have something to be timed against.

    model = TorchModel(config, weights, device="cuda")   # bf16 weights
    logits = model.prefill(ids)        # ids [B, T] -> [B, T, vocab] (f32)
    step = model.decode_graph()        # CUDA graph of one decode step
    logits = step(next_ids)            # [B] -> [B, vocab]

How it computes:
- projections and the LM head in `dtype` (bf16 on the GPU: cuBLAS on
  tensor cores), norms, gates and the recurrence in float32;
- the GDN core in the chunkwise-parallel form (UT transform per chunk of
  64 tokens by a triangular solve, then a sequential scan over chunks of
  batched matmuls): reference.delta_rule_chunked's equations, batched over
  sequences and heads;
- MLA prefill through scaled_dot_product_attention (flash attention where
  PyTorch has it) on keys and values expanded from the latents; MLA decode
  in the absorbed form (queries through the key part of kv_b_proj, scores
  against the cached latents and RoPE keys, the value part after), the
  latent cache preallocated to max_context and written in place;
- decode as one CUDA graph per batch size (decode_graph): every buffer
  static, the position a device tensor, so a replay launches the whole step.

Float64 on the CPU (`device="cpu", dtype=torch.float64`) reproduces
ModelReference to rounding; python/tests/test_torch_baseline.py checks it.
"""

import math

import torch
import torch.nn.functional as F

NORMALIZE_EPS = 1e-12          # F.normalize's, as reference.l2_normalize
GDN_NORM_EPS = 1e-6            # the GDN block's per-head RMSNorm


def _rms_norm(x, weight, eps):
    """RMSNorm over the last axis, in the weight's (compute) dtype."""
    x = x.to(weight.dtype)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def _rope_angles(positions, dim, theta, dtype):
    """cos and sin [..., dim] of rotate-half RoPE at `positions`."""
    inv_freq = float(theta) ** (-torch.arange(0, dim, 2, device=positions.device,
                                              dtype=dtype) / dim)
    angles = positions.to(dtype)[..., None] * inv_freq
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def chunked_delta_rule(q, k, v, g, beta, state, chunk_size=64):
    """The gated delta rule over q, k [B, T, H, K], v [B, T, H, V], g, beta
    [B, T, H] from state [B, H, K, V], in the chunkwise-parallel form.
    Returns (o [B, T, H, V], final state); computes in the inputs' dtype
    (float32 or float64)."""
    batch, tokens, heads, key_dim = q.shape
    value_dim = v.shape[-1]
    pad = (-tokens) % chunk_size
    if pad:
        # Padding tokens neither decay (g = 0) nor write (beta = 0, k = 0).
        q, k, v = (F.pad(x, (0, 0, 0, 0, 0, pad)) for x in (q, k, v))
        g, beta = (F.pad(x, (0, 0, 0, pad)) for x in (g, beta))
    chunks = (tokens + pad) // chunk_size

    def split(x):  # [B, T, H, ...] -> [B, H, N, C, ...]
        x = x.reshape(batch, chunks, chunk_size, heads, *x.shape[3:])
        return x.transpose(1, 3).transpose(2, 3)

    q, k, v, g, beta = (split(x) for x in (q, k, v, g, beta))
    cum = g.cumsum(-1)                                     # [B, H, N, C]
    rows = torch.arange(chunk_size, device=q.device)
    causal = rows[:, None] >= rows[None, :]
    strict = rows[:, None] > rows[None, :]
    diff = cum[..., :, None] - cum[..., None, :]
    decay = torch.where(causal, diff, torch.zeros_like(diff)).exp() * causal
    a = beta[..., :, None] * (k @ k.transpose(-1, -2)) * decay * strict
    system = a + torch.eye(chunk_size, dtype=q.dtype, device=q.device)
    u = torch.linalg.solve_triangular(system, beta[..., None] * v,
                                      upper=False, unitriangular=True)
    w = torch.linalg.solve_triangular(
        system, (beta * cum.exp())[..., None] * k, upper=False,
        unitriangular=True)
    qk = (q @ k.transpose(-1, -2)) * decay
    q_decayed = cum.exp()[..., None] * q
    last = cum[..., -1:]                                   # [B, H, N, 1]
    k_decayed = (last - cum).exp()[..., None] * k
    o = torch.empty(batch, heads, chunks, chunk_size, value_dim,
                    dtype=q.dtype, device=q.device)
    for n in range(chunks):
        v_new = u[:, :, n] - w[:, :, n] @ state
        o[:, :, n] = q_decayed[:, :, n] @ state + qk[:, :, n] @ v_new
        state = (last[:, :, n, :, None].exp() * state
                 + k_decayed[:, :, n].transpose(-1, -2) @ v_new)
    o = o.transpose(2, 3).transpose(1, 3).reshape(
        batch, chunks * chunk_size, heads, value_dim)
    return o[:, :tokens], state


class TorchModel:
    """A model description and its weights (numpy arrays by name) in
    PyTorch; see the module's docstring."""

    def __init__(self, config, weights, device="cuda", dtype=torch.bfloat16,
                 chunk_size=64):
        from gdn import model as gdn_model
        self.config = gdn_model.load_config(config)
        self.kinds = gdn_model.layer_kinds(self.config)
        self.device = torch.device(device)
        self.dtype = dtype
        # Norms, gates and states: float32, or float64 for a float64 model.
        self.compute = torch.float64 if dtype == torch.float64 \
            else torch.float32
        self.chunk_size = chunk_size
        names = gdn_model.weight_shapes(self.config)

        def tensor(name, kind):
            return torch.as_tensor(weights[name]).to(self.device, kind)

        def matrix(name):
            return tensor(name, dtype)

        def vector(name):
            return tensor(name, self.compute)

        def parameter(name):
            # Matrices feed the projections; norms, biases, gates and the
            # conv kernels the float32 arithmetic.
            return matrix(name) if len(names[name]) == 2 else vector(name)

        self.embedding = matrix("model.embed_tokens.weight")
        self.head = self.embedding if self.config["tie_embeddings"] \
            else matrix("lm_head.weight")
        self.final_norm = vector("model.norm.weight")
        self.blocks = []
        for i, kind in enumerate(self.kinds):
            block = f"model.layers.{i}."
            prefix = gdn_model._mixer_prefix(i, kind)
            mixer = {name[len(prefix):]: parameter(name) for name in names
                     if name.startswith(prefix)}
            if kind == "mla":
                self._absorb(mixer)
            self.blocks.append({
                "kind": kind,
                "input_norm": vector(block + "input_layernorm.weight"),
                "post_norm": vector(block + "post_attention_layernorm.weight"),
                "gate_up": torch.cat([matrix(block + "mlp.gate_proj.weight"),
                                      matrix(block + "mlp.up_proj.weight")]),
                "down": matrix(block + "mlp.down_proj.weight"),
                "mixer": mixer,
            })
        self.caches = None
        self.batch = 0
        self.position = 0

    # -- layers ---------------------------------------------------------------

    def _absorb(self, p):
        """kv_b_proj split per head into its key and value parts, for the
        absorbed decode."""
        mla = self.config["mla"]
        n, nope, v_dim = (mla["num_heads"], mla["qk_nope_head_dim"],
                          mla["v_head_dim"])
        kv_b = p["kv_b_proj.weight"].reshape(n, nope + v_dim, -1)
        p["w_uk"] = kv_b[:, :nope].contiguous()       # [n, nope, rank]
        p["w_uv"] = kv_b[:, nope:].contiguous()       # [n, v, rank]

    def _mlp(self, h, block):
        gate, up = (h.to(self.dtype) @ block["gate_up"].T).chunk(2, dim=-1)
        return (F.silu(gate) * up) @ block["down"].T

    def _gdn(self, h, p, cache, prefill):
        gdn = self.config["gdn"]
        heads = gdn["num_heads"]
        x = h.to(self.dtype)
        mixed = []
        for proj, conv in (("W_query", "conv_q"), ("W_key", "conv_k"),
                           ("W_value", "conv_v")):
            u = (x @ p[proj + ".weight"].T).to(self.compute)   # [B, T, d]
            window = torch.cat([cache[conv], u], dim=1)
            weight = p[conv + ".weight"]                        # [d, 1, C]
            out = F.conv1d(window.transpose(1, 2), weight, p[conv + ".bias"],
                           groups=weight.shape[0]).transpose(1, 2)
            cache[conv].copy_(window[:, -(weight.shape[-1] - 1):])
            mixed.append(F.silu(out).unflatten(-1, (heads, -1)))
        q = F.normalize(mixed[0], dim=-1, eps=NORMALIZE_EPS)
        k = F.normalize(mixed[1], dim=-1, eps=NORMALIZE_EPS)
        v = _rms_norm(mixed[2], p["norm.weight"], GDN_NORM_EPS)
        g = -p["log_alpha"].exp() * F.softplus(
            (x @ p["alpha.weight"].T).to(self.compute) + p["alpha.bias"])
        beta = torch.sigmoid((x @ p["beta.weight"].T).to(self.compute)
                             + p["beta.bias"])
        gate = (x @ p["gate.weight"].T).to(self.compute) + p["gate.bias"]
        if prefill:
            o, cache["state"] = chunked_delta_rule(
                q, k, v, g, beta, cache["state"], self.chunk_size)
        else:
            state = cache["state"]
            q, k, v, g, beta = q[:, 0], k[:, 0], v[:, 0], g[:, 0], beta[:, 0]
            state.mul_(g.exp()[..., None, None])
            v_hat = torch.einsum("bhkv,bhk->bhv", state, k)
            state.add_(beta[..., None, None] * torch.einsum(
                "bhk,bhv->bhkv", k, v - v_hat))
            o = torch.einsum("bhkv,bhk->bhv", state, q)[:, None]
        o = _rms_norm(o, p["norm.weight"], GDN_NORM_EPS).flatten(-2)
        y = (o * F.silu(gate)).to(self.dtype) @ p["out_proj.weight"].T
        return y + p["out_proj.bias"].to(self.dtype)

    def _mla_inputs(self, h, p, positions):
        mla = self.config["mla"]
        eps = self.config["norm_eps"]
        n, nope, rope = (mla["num_heads"], mla["qk_nope_head_dim"],
                         mla["qk_rope_head_dim"])
        rank = mla["kv_lora_rank"]
        x = h.to(self.dtype)
        if mla["q_lora_rank"] == 0:
            q = x @ p["q_proj.weight"].T
        else:
            q_a = _rms_norm(x @ p["q_a_proj.weight"].T,
                            p["q_a_layernorm.weight"], eps)
            q = q_a.to(self.dtype) @ p["q_b_proj.weight"].T
        q = q.unflatten(-1, (n, nope + rope)).to(self.compute)
        cos, sin = _rope_angles(positions, rope, mla["rope_theta"],
                                self.compute)                  # [T, rope]
        q_nope = q[..., :nope]
        q_rope = _rotate(q[..., nope:], cos[:, None], sin[:, None])
        kv_a = (x @ p["kv_a_proj_with_mqa.weight"].T).to(self.compute)
        latent = _rms_norm(kv_a[..., :rank], p["kv_a_layernorm.weight"], eps)
        k_rope = _rotate(kv_a[..., rank:], cos, sin)
        return q_nope, q_rope, latent, k_rope

    def _mla_prefill(self, h, p, cache, start):
        mla = self.config["mla"]
        n, nope, v_dim = (mla["num_heads"], mla["qk_nope_head_dim"],
                          mla["v_head_dim"])
        tokens = h.shape[1]
        positions = torch.arange(start, start + tokens, device=self.device)
        q_nope, q_rope, latent, k_rope = self._mla_inputs(h, p, positions)
        cache["latent"][:, start:start + tokens] = latent
        cache["k_rope"][:, start:start + tokens] = k_rope
        keys = start + tokens
        all_latent = cache["latent"][:, :keys]
        kv = (all_latent.to(self.dtype) @ p["kv_b_proj.weight"].T).unflatten(
            -1, (n, nope + v_dim))
        k_rope_all = cache["k_rope"][:, :keys, None].expand(-1, -1, n, -1)
        key = torch.cat([kv[..., :nope].to(self.compute), k_rope_all], -1)
        query = torch.cat([q_nope, q_rope], -1)
        value = kv[..., nope:]
        attention_dtype = self.dtype if self.dtype != torch.float64 \
            else torch.float64
        query, key, value = (t.transpose(1, 2).to(attention_dtype)
                             for t in (query, key, value))
        out = self._attention(query, key, value, start)
        y = out.transpose(1, 2).flatten(-2).to(self.dtype)
        return y @ p["o_proj.weight"].T

    @staticmethod
    def _attention(query, key, value, start):
        """Causal attention of the new queries after `start` cached keys."""
        tokens, keys = query.shape[-2], key.shape[-2]
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if sdpa is not None and start == 0:
            return sdpa(query, key, value, is_causal=True)
        visible = (torch.arange(keys, device=query.device)[None, :]
                   <= start + torch.arange(tokens, device=query.device)[:, None])
        if sdpa is not None:
            return sdpa(query, key, value, attn_mask=visible)
        scores = query @ key.transpose(-1, -2) / math.sqrt(query.shape[-1])
        scores = scores.masked_fill(~visible, float("-inf"))
        return scores.softmax(-1) @ value

    def _mla_decode(self, h, p, cache, position):
        """The absorbed decode over the whole preallocated cache, positions
        after `position` (a device tensor) masked."""
        mla = self.config["mla"]
        nope, rope = mla["qk_nope_head_dim"], mla["qk_rope_head_dim"]
        q_nope, q_rope, latent, k_rope = self._mla_inputs(
            h, p, position.reshape(1))
        index = position.reshape(1)
        cache["latent"].index_copy_(1, index, latent)
        cache["k_rope"].index_copy_(1, index, k_rope)
        q_latent = torch.einsum("bnd,ndr->bnr", q_nope[:, 0],
                                p["w_uk"].to(self.compute))
        scores = (torch.einsum("bnr,bsr->bns", q_latent, cache["latent"])
                  + torch.einsum("bnd,bsd->bns", q_rope[:, 0],
                                 cache["k_rope"])) / math.sqrt(nope + rope)
        keys = torch.arange(cache["latent"].shape[1], device=self.device)
        scores = scores.masked_fill(keys > position, float("-inf"))
        out_latent = torch.einsum("bns,bsr->bnr", scores.softmax(-1),
                                  cache["latent"])
        out = torch.einsum("bnr,nvr->bnv", out_latent,
                           p["w_uv"].to(self.compute))
        return (out.flatten(-2).to(self.dtype) @ p["o_proj.weight"].T)[:, None]

    # -- the model ------------------------------------------------------------

    def _empty_caches(self, batch):
        caches = []
        context = self.config["max_context"]
        for kind in self.kinds:
            if kind == "gdn":
                gdn = self.config["gdn"]
                d_out = gdn["num_heads"] * gdn["head_dim"]
                conv = (batch, gdn["conv_size"] - 1, d_out)
                caches.append({
                    "state": torch.zeros(batch, gdn["num_heads"],
                                         gdn["head_dim"], gdn["head_dim"],
                                         dtype=self.compute,
                                         device=self.device),
                    **{c: torch.zeros(conv, dtype=self.compute,
                                      device=self.device)
                       for c in ("conv_q", "conv_k", "conv_v")}})
            else:
                mla = self.config["mla"]
                caches.append({
                    "latent": torch.zeros(batch, context, mla["kv_lora_rank"],
                                          dtype=self.compute,
                                          device=self.device),
                    "k_rope": torch.zeros(batch, context,
                                          mla["qk_rope_head_dim"],
                                          dtype=self.compute,
                                          device=self.device)})
        return caches

    def _forward(self, ids, prefill, position=None, last_only=False):
        eps = self.config["norm_eps"]
        x = self.embedding[ids]
        start = self.position
        for block, cache in zip(self.blocks, self.caches):
            h = _rms_norm(x, block["input_norm"], eps)
            p = block["mixer"]
            if block["kind"] == "gdn":
                x = x + self._gdn(h, p, cache, prefill)
            elif prefill:
                x = x + self._mla_prefill(h, p, cache, start)
            else:
                x = x + self._mla_decode(h, p, cache, position)
            h = _rms_norm(x, block["post_norm"], eps)
            x = x + self._mlp(h, block)
        if last_only:
            x = x[:, -1:]
        h = _rms_norm(x, self.final_norm, eps).to(self.dtype)
        return (h @ self.head.T).to(self.compute)

    @torch.no_grad()
    def prefill(self, ids, last_only=False):
        """Logits [B, T, vocab] of new sequences ids [B, T] (a LongTensor);
        with last_only, [B, 1, vocab] of each sequence's last position (the
        final norm and LM head of that row alone)."""
        ids = torch.as_tensor(ids, device=self.device)
        self.batch = ids.shape[0]
        self.caches = self._empty_caches(self.batch)
        self.position = 0
        logits = self._forward(ids, prefill=True, last_only=last_only)
        self.position = ids.shape[1]
        return logits

    @torch.no_grad()
    def decode(self, ids):
        """Logits [B, vocab] of the next token of each sequence, ids [B]."""
        ids = torch.as_tensor(ids, device=self.device)
        position = torch.tensor(self.position, device=self.device)
        logits = self._forward(ids[:, None], prefill=False,
                               position=position)[:, 0]
        self.position += 1
        return logits

    def decode_graph(self):
        """A callable ids [B] -> logits [B, vocab] that replays one CUDA
        graph of the decode step (captured here, after a prefill, for the
        batch of the caches); the position advances inside the graph. The
        logits tensor is the graph's own, overwritten by each replay; a
        prefill ends the graph's use."""
        ids = torch.zeros(self.batch, dtype=torch.long, device=self.device)
        position = torch.tensor(self.position, device=self.device)
        saved = [{name: t.clone() for name, t in c.items()}
                 for c in self.caches]
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(stream):
            for _ in range(2):  # warm up outside the graph
                self._forward(ids[:, None], prefill=False, position=position)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            logits = self._forward(ids[:, None], prefill=False,
                                   position=position)[:, 0]
            position.add_(1)
        # The warm-up ran the step (the capture only recorded it): the
        # sequences go back to where they were.
        for cache, copy in zip(self.caches, saved):
            for name, t in cache.items():
                t.copy_(copy[name])
        position.fill_(self.position)

        caches = self.caches
        context = self.config["max_context"]

        def step(next_ids):
            if self.caches is not caches:
                raise RuntimeError("decode_graph: the sequences it was "
                                   "captured for were replaced (a prefill)")
            if self.position >= context:
                raise ValueError(f"max_context: the caches hold {context} "
                                 "tokens")
            ids.copy_(torch.as_tensor(next_ids, device=self.device))
            graph.replay()
            self.position += 1
            return logits  # overwritten by the next replay

        # The graph reads and writes these by address: they must outlive it.
        step.buffers = (ids, position, logits, caches)
        return step
