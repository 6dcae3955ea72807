#!/usr/bin/env python3
"""Makes the Hugging Face fixtures of test/fixtures/huggingface: tiny random
checkpoints of every supported model type, saved by transformers' own
save_pretrained, with transformers' logits for a prefill and a greedy cached
decode, and a Qwen-style byte-level BPE tokenizer trained with tokenizers,
with its encodings of test strings.

Runs where torch, transformers (5.x) and tokenizers are installed (the GPU
machine; everything here runs on its CPU, in float32):

    python3 scripts/make_hf_fixtures.py --out test/fixtures/huggingface

Deterministic for a given transformers and torch version (manifest.json
records both).
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

DECODE_STEPS = 12

# The pre-tokenizer regex of Qwen2 / Qwen3 tokenizer.json files.
QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
              r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# Strings whose reference encodings the tokenizer test compares.
TOKENIZER_CASES = [
    "", "Hello world", " Hello world", "hello  world", "hello  ", "  \n",
    "foo  \n  bar", "a\n\nb", "a\r\nb", "a.\n\nb", "x\n  ", "\t\tx",
    "I'M here, don't you've we'll they'd it's", "12345", "3.14 + 2.71 = 5.85",
    "$100 and 7 cats", "你好，世界", "日本語のテキスト", "한국어 문장입니다",
    "emoji: 😀🎉👍🏽 and 🇩🇪", "Ünïcödé çàfé naïve résumé", "e\u0301 and \u212b",
    "\u03d2\u0301\u03d2\u0308\u017f\u0307", "x\u0301y", "tabs\tand\u00a0nbsp",
    "<|endoftext|>", "hello  <|endoftext|>x", "<|im_start|>user\nhi<|im_end|>",
    "<|endoftext|", "def f(x):\n    return x**2  # comment\n",
    "   leading and trailing   ", "Mixed: ABC def 123 !!! ??? ...",
    "The quick brown fox jumps over the lazy dog.",
    "ــ Arabic: مرحبا بالعالم", "Ελληνικά и русский текст",
]


def corpus():
    """Training text: the project's docs plus lines in several scripts."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lines = []
    for folder in ("docs", "."):
        path = os.path.join(root, folder)
        for name in sorted(os.listdir(path)):
            if name.endswith(".md"):
                with open(os.path.join(path, name), encoding="utf-8") as f:
                    lines.extend(f.read().splitlines())
    lines += TOKENIZER_CASES * 3
    lines += ["你好世界，这是一个测试。", "こんにちは世界", "Привет, мир!",
              "Bonjour le monde, ça va ?", "1234567890 0987654321"] * 5
    return lines


def make_tokenizer(out):
    from tokenizers import (Regex, Tokenizer, decoders, models, normalizers,
                            pre_tokenizers, processors, trainers)
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated",
                             invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False,
                                 use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=500, min_frequency=2, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus(), trainer=trainer)
    tok.add_special_tokens(SPECIAL_TOKENS)
    path = os.path.join(out, "tokenizer.json")
    tok.save(path)
    cases = []
    for text in TOKENIZER_CASES:
        ids = tok.encode(text).ids
        cases.append({"text": text, "ids": ids,
                      "decoded": tok.decode(ids, skip_special_tokens=False)})
    with open(os.path.join(out, "tokenizer_cases.json"), "w",
              encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
    return path, tok.get_vocab_size(with_added_tokens=True)


def randomise(model, seed):
    """Weights large enough that the logits are far from uniform, and every
    1-D parameter (norms, dt_bias, A_log) away from its initial value, so
    that w and 1 + w cannot be mixed up unseen."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 1:
                p.add_(0.3 * torch.randn(p.shape, generator=generator))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=generator))
            else:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=generator)
                        / fan_in ** 0.5)


def references(model, vocab, seed):
    """transformers' logits: prefill, then greedy cached decode steps."""
    generator = torch.Generator().manual_seed(seed)
    cases = {}
    for case, (batch, tokens) in {"a": (2, 70), "b": (1, 3)}.items():
        ids = torch.randint(0, vocab, (batch, tokens), generator=generator)
        with torch.no_grad():
            out = model(input_ids=ids, use_cache=True)
            cache = out.past_key_values
            logits = out.logits.float()
            cases[f"prompt_{case}"] = ids.numpy()
            cases[f"prefill_logits_{case}"] = logits.numpy()
            step_ids, step_logits = [], []
            last = logits[:, -1]
            for _ in range(DECODE_STEPS):
                nxt = last.argmax(-1, keepdim=True)
                out = model(input_ids=nxt, past_key_values=cache,
                            use_cache=True)
                cache = out.past_key_values
                last = out.logits[:, -1].float()
                step_ids.append(nxt[:, 0].numpy())
                step_logits.append(last.numpy())
            cases[f"decode_ids_{case}"] = np.stack(step_ids)
            cases[f"decode_logits_{case}"] = np.stack(step_logits)
    return cases


def save(model, folder, tokenizer, seed, vocab, **save_options):
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True, **save_options)
    shutil.copy(tokenizer, os.path.join(folder, "tokenizer.json"))
    np.savez_compressed(os.path.join(folder, "reference.npz"),
                        **references(model, vocab, seed))


def add_mtp_shard(folder):
    """Hub checkpoints of Qwen3.5 carry a multi-token-prediction head
    (mtp.*) that transformers never loads; one more shard with such
    tensors, listed in the index."""
    from safetensors.torch import save_file
    shard = "model-mtp.safetensors"
    tensors = {"mtp.fc.weight": torch.zeros(8, 8),
               "mtp.norm.weight": torch.ones(8)}
    save_file(tensors, os.path.join(folder, shard), metadata={"format": "pt"})
    index_path = os.path.join(folder, "model.safetensors.index.json")
    with open(index_path) as f:
        index = json.load(f)
    for name in tensors:
        index["weight_map"][name] = shard
    with open(index_path, "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import transformers
    from transformers import (Qwen3_5Config, Qwen3_5ForCausalLM,
                              Qwen3_5ForConditionalGeneration,
                              Qwen3_5TextConfig, Qwen3NextConfig,
                              Qwen3NextForCausalLM)
    torch.manual_seed(0)
    os.makedirs(args.out, exist_ok=True)
    tokenizer, token_count = make_tokenizer(args.out)
    vocab = (token_count + 63) // 64 * 64
    common = dict(vocab_size=vocab, hidden_size=64, intermediate_size=96,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  linear_conv_kernel_dim=4, rms_norm_eps=1e-6,
                  max_position_embeddings=4096)

    text = Qwen3_5TextConfig(
        **common, num_hidden_layers=5,
        layer_types=["linear_attention", "full_attention", "linear_attention",
                     "linear_attention", "full_attention"],
        linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=8, linear_value_head_dim=12,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1e6,
                         "partial_rotary_factor": 0.5})
    model = Qwen3_5ForCausalLM(text).eval()
    randomise(model, 1)
    save(model, os.path.join(args.out, "qwen3_5_text"), tokenizer, 11, vocab)

    wrapper_text = dict(
        common, num_hidden_layers=4, linear_num_key_heads=2,
        linear_num_value_heads=2, linear_key_head_dim=16,
        linear_value_head_dim=16, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1e7,
                         "partial_rotary_factor": 0.25,
                         "mrope_section": [1, 1, 0],
                         "mrope_interleaved": True})
    wrapper = Qwen3_5Config(
        text_config=wrapper_text, tie_word_embeddings=True,
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64,
                           num_heads=2, out_hidden_size=64))
    model = Qwen3_5ForConditionalGeneration(wrapper).eval()
    randomise(model, 2)
    folder = os.path.join(args.out, "qwen3_5")
    save(model, folder, tokenizer, 12, vocab, max_shard_size="300KB")
    add_mtp_shard(folder)

    nxt = Qwen3NextConfig(
        **common, num_hidden_layers=4, num_experts=0,
        linear_num_key_heads=2, linear_num_value_heads=6,
        linear_key_head_dim=12, linear_value_head_dim=8,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                         "partial_rotary_factor": 0.25})
    model = Qwen3NextForCausalLM(nxt).eval()
    randomise(model, 3)
    save(model, os.path.join(args.out, "qwen3_next"), tokenizer, 13, vocab)

    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"transformers": transformers.__version__,
                   "torch": torch.__version__,
                   "made_by": "scripts/make_hf_fixtures.py",
                   "decode_steps": DECODE_STEPS}, f, indent=2)
    for root, _, files in sorted(os.walk(args.out)):
        for name in sorted(files):
            path = os.path.join(root, name)
            print(f"{os.path.getsize(path):>9}  {os.path.relpath(path, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
