"""bench/torch_model.py, the PyTorch baseline of the GPU model benchmark,
in float64 on the CPU (where torch is installed) against the float64 model
reference: prefills of awkward lengths (partial and several chunks),
decode steps after them, q LoRA or not, so that the timings it gives are
of the same model."""

import os
import sys

import numpy as np
import pytest

from gdn import model, reference

from model_configs import hybrid_config

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "bench"))
import torch_model  # noqa: E402


@pytest.mark.parametrize("q_lora_rank,batch,tokens,chunk", [
    (0, 1, 1, 64), (0, 2, 37, 16), (4, 3, 70, 16), (4, 1, 64, 64)])
def test_matches_the_float64_reference(q_lora_rank, batch, tokens, chunk):
    config = model.load_config(hybrid_config(q_lora_rank=q_lora_rank))
    weights = model.init_weights(config, seed=tokens)
    expected = model.ModelReference(config, weights)
    actual = torch_model.TorchModel(config, weights, device="cpu",
                                    dtype=torch.float64, chunk_size=chunk)
    rng = np.random.default_rng(tokens)
    ids = rng.integers(0, config["vocab_size"], (batch, tokens))
    errors = [reference.relative_error(actual.prefill(ids).numpy(),
                                       expected.prefill(ids))]
    for _ in range(4):
        step = rng.integers(0, config["vocab_size"], batch)
        errors.append(reference.relative_error(actual.decode(step).numpy(),
                                               expected.decode(step)))
    assert max(max(e) for e in errors) < 1e-10, errors


def test_chunked_delta_rule_equals_the_recurrence():
    from gdn import inputs
    x = inputs.delta_rule_inputs(3, batch=2, tokens=45, heads=3,
                                 value_heads=3, key_dim=8, value_dim=6)
    operands = [torch.from_numpy(np.asarray(x[n], dtype=np.float64))
                for n in ("q", "k", "v", "g", "beta")]
    state = torch.zeros(2, 3, 8, 6, dtype=torch.float64)
    o, final = torch_model.chunked_delta_rule(*operands, state, chunk_size=16)
    o_ref, final_ref = reference.delta_rule(*[x[n] for n in
                                              ("q", "k", "v", "g", "beta")])
    assert max(reference.relative_error(o.numpy(), o_ref)) < 1e-12
    assert max(reference.relative_error(final.numpy(), final_ref)) < 1e-12
