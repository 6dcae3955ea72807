// RUN: gdn-opt %s -split-input-file -gdn-absorb-mla-decode | FileCheck %s --check-prefix=MARK
// RUN: gdn-opt %s -split-input-file -gdn-absorb-mla-decode -gdn-decompose-layers | FileCheck %s
// RUN: gdn-opt %s -split-input-file -gdn-absorb-mla-decode=key-split=4 | FileCheck %s --check-prefix=SPLITMARK
// RUN: gdn-opt %s -split-input-file -gdn-absorb-mla-decode=key-split=4 -gdn-decompose-layers | FileCheck %s --check-prefix=SPLIT
// RUN: not gdn-opt %s -split-input-file -gdn-absorb-mla-decode=key-split=2000 2>&1 | FileCheck %s --check-prefix=BADSPLIT

// With key-split, the cached op carries the grouping too; the prefill op
// nothing.
// SPLITMARK-LABEL: func.func @cached
// SPLITMARK: gdn.mla {{.+}} cache({{.+}}) {absorbed, key_split = 4 : i64,
// SPLITMARK-LABEL: func.func @prefill
// SPLITMARK-NOT: key_split
// BADSPLIT: gdn-absorb-mla-decode: key-split must be 0 (off) or 1..1024, got 2000

// The softmax's maximum and sum in G groups of 4 keys: over each group of
// the scores, over the groups, then over the keys left; the exponentials
// between them, the division after. The groups interleave: the first
// G x 4 scores as [B, n, T, 4, G], group g the keys g, g + G, g + 2G and
// g + 3G (loops (b, n, t, g, i) read [b, n, t, i, g]), so that the
// threads of neighbouring groups read neighbouring keys.
// SPLIT: #[[$INTERLEAVED:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4, d3)>
// SPLIT-LABEL: func.func @cached
// The groups are counted once, for the softmax and the latents.
// SPLIT: %[[GROUPS:.+]] = arith.divui %{{.+}}, %c4
// SPLIT: %[[WHOLE:.+]] = arith.muli %[[GROUPS]], %c4
// SPLIT: tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] output_shape [%{{.+}}, 2, %{{.+}}, 4, %[[GROUPS]]] : tensor<?x2x?x?xf32> into tensor<?x2x?x4x?xf32>
// SPLIT: linalg.generic {indexing_maps = [#[[$INTERLEAVED]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%{{.+}} : tensor<?x2x?x4x?xf32>) outs(%{{.+}} : tensor<?x2x?x?xf32>)
// SPLIT: arith.maximumf
// SPLIT: linalg.generic {{.+}} ins(%{{.+}} : tensor<?x2x?x?xf32>) outs(%{{.+}} : tensor<?x2x?xf32>)
// SPLIT: linalg.generic {{.+}} ins(%{{.+}} : tensor<?x2x?x?xf32>) outs(%{{.+}} : tensor<?x2x?xf32>)
// SPLIT: math.exp
// SPLIT: tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] {{.+}} into tensor<?x2x?x4x?xf32>
// SPLIT: linalg.generic {indexing_maps = [#[[$INTERLEAVED]], #{{.+}}], {{.+}} ins(%{{.+}} : tensor<?x2x?x4x?xf32>)
// SPLIT: arith.addf
// SPLIT: arith.divf
// The attended latents in groups of 4 keys: the keys of whole groups
// (S / 4 of them, times 4) as [B, G, 4, r] and the probabilities as
// [B, n, T, G, 4]; a partial sum per group with a latent channel innermost
// among the parallel loops, stored [B, T, n, r, G]; their sum over the
// groups; then the keys from G * 4 on, added to it.
// SPLIT: tensor.extract_slice %{{.+}}[0, 0, 0, 0] [%{{.+}}, 2, %{{.+}}, %[[WHOLE]]]
// SPLIT: tensor.expand_shape %{{.+}} {{\[}}[0], [1], [2], [3, 4]] output_shape [%{{.+}}, 2, %{{.+}}, %[[GROUPS]], 4] : tensor<?x2x?x?xf32> into tensor<?x2x?x?x4xf32>
// SPLIT: tensor.expand_shape %{{.+}} {{\[}}[0], [1, 2], [3]] output_shape [%{{.+}}, %[[GROUPS]], 4, 16] : tensor<?x?x16xf32> into tensor<?x?x4x16xf32>
// SPLIT: linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<?x2x?x?x4xf32>, tensor<?x?x4x16xf32>) outs(%{{.+}} : tensor<?x?x2x16x?xf32>)
// SPLIT: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%{{.+}} : tensor<?x?x2x16x?xf32>) outs(%{{.+}} : tensor<?x?x2x16xf32>)
// SPLIT: tensor.extract_slice %{{.+}}[0, 0, 0, %[[WHOLE]]]
// SPLIT: tensor.extract_slice %{{.+}}[0, %[[WHOLE]], 0]
// SPLIT: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<?x2x?x?xf32>, tensor<?x?x16xf32>) outs(%{{.+}} : tensor<?x?x2x16xf32>)
// SPLIT-LABEL: func.func @prefill
// SPLIT-NOT: arith.divui

// Only the op that continues a cache is marked.
// MARK-LABEL: func.func @cached
// MARK: gdn.mla {{.+}} cache({{.+}}) {absorbed,
// MARK-LABEL: func.func @prefill
// MARK-NOT: absorbed

// The absorbed form: kv_b_proj [2 * (8 + 12), 16] split per head into its
// key part [2, 8, 16] and value part [2, 12, 16]; no projection of the
// latents through kv_b_proj (three contractions: q_proj, kv_a and o_proj),
// the queries taken into the latent space instead, the causal softmax over
// the scores against the latents.
// CHECK-LABEL: func.func @cached
// CHECK-SAME: %[[KVB:[^:]+]]: tensor<40x16xbf16>
// CHECK-COUNT-2: linalg.contract
// CHECK: tensor.expand_shape %[[KVB]] {{\[}}[0, 1], [2]] output_shape [2, 20, 16] : tensor<40x16xbf16> into tensor<2x20x16xbf16>
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0] [2, 8, 16] [1, 1, 1]
// CHECK: tensor.expand_shape %[[KVB]]
// CHECK: tensor.extract_slice %{{.+}}[0, 8, 0] [2, 12, 16] [1, 1, 1]
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<?x?x2x8xf32>, tensor<2x8x16xbf16>)
// CHECK: arith.extf
// CHECK: arith.cmpi ule
// CHECK: math.exp
// CHECK: linalg.generic {{.+}} ins(%{{.+}}, %{{.+}} : tensor<?x?x2x16xf32>, tensor<2x12x16xbf16>)
// CHECK: linalg.contract
// CHECK-NOT: linalg.contract
// CHECK: return
func.func @cached(%x: tensor<?x?x32xf32>, %latent: tensor<?x?x16xf32>, %k_rope: tensor<?x?x8xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %kvb: tensor<40x16xbf16>, %w4: tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %kvb, %w4) cache(%latent, %k_rope) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xbf16>, tensor<32x24xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %y, %l, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}

// -----

// Without a cache the expanded form stays: four contractions, kv_b_proj's
// among them.
// CHECK-LABEL: func.func @prefill
// CHECK-COUNT-4: linalg.contract
// CHECK-NOT: tensor.expand_shape %{{.+}} {{\[}}[0, 1], [2]]
func.func @prefill(%x: tensor<?x?x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %y, %l, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}
