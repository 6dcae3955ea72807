"""Small model descriptions shared by the model tests."""


def hybrid_config(q_lora_rank=0, conv_size=4, num_layers=5,
                  tie_embeddings=False):
    """A Nenya-pattern hybrid (GDN and MLA layers) small enough to compile
    and check against the float64 reference in seconds."""
    return {"vocab_size": 64, "d_model": 32, "num_layers": num_layers,
            "layer_pattern": "nenya",
            "gdn": {"num_heads": 2, "head_dim": 16, "conv_size": conv_size},
            "mla": {"num_heads": 2, "q_lora_rank": q_lora_rank,
                    "kv_lora_rank": 16, "qk_nope_head_dim": 8,
                    "qk_rope_head_dim": 8, "v_head_dim": 12,
                    "rope_theta": 10000.0},
            "mlp_hidden_size": 48, "norm_eps": 1e-6,
            "tie_embeddings": tie_embeddings, "max_context": 128,
            "tokenizer": "ids"}
