// RUN: gdn-opt %s -split-input-file -gdn-absorb-mla-decode -gdn-block-attention | FileCheck %s --check-prefix=MARK
// RUN: gdn-opt %s -split-input-file -gdn-block-attention=block-size=0 | FileCheck %s --check-prefix=OFF
// RUN: gdn-opt %s -split-input-file -gdn-absorb-mla-decode -gdn-block-attention=block-size=32 -gdn-decompose-layers | FileCheck %s
// RUN: not gdn-opt %s -split-input-file -gdn-block-attention=block-size=2048 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: gdn-opt %s -split-input-file -gdn-absorb-mla-decode -gdn-block-attention=block-size=32 -gdn-decompose-layers=keep-tensor-core-attention | FileCheck %s --check-prefix=KEEP
// RUN: gdn-opt %s -split-input-file -gdn-block-attention=tensor-core-only | FileCheck %s --check-prefix=GPU

// BAD: gdn-block-attention: block-size must be 0 (off) or 1..1024, but got 2048

// Both ops are marked; the one that continues a cache is also absorbed.
// MARK-LABEL: func.func @prefill
// MARK: gdn.mla {{.+}}attention_block = 64 : i64
// MARK-LABEL: func.func @cached
// MARK: gdn.mla {{.+}} {absorbed, attention_block = 64 : i64
// OFF-NOT: attention_block

// Blocked: one task per (sequence, head, block of 32 queries), a loop over
// the key blocks up to the block's last position, the scores of one block
// pair [rows, columns] only, the running maximum, exp, the rescaled sum
// and output, and the division at the end; no linalg.softmax and no
// [B, n, T, S] scores.
// CHECK-LABEL: func.func @prefill
// CHECK-NOT: tensor<?x2x?x?xf32>
// CHECK: scf.forall (%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}}, 2, %{{.+}}) shared_outs
// CHECK: arith.minui
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK: } -> tensor<?x?xf32>
// CHECK: arith.cmpi ule
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: scf.yield
// CHECK: arith.divf
// CHECK: tensor.parallel_insert_slice
// CHECK-NOT: linalg.softmax
// CHECK: return
func.func @prefill(%x: tensor<?x?x32xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %y, %l, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}

// -----

// Absorbed and blocked: the form is chosen per call, the absorbed one for
// fewer than 32 new tokens (its queries through kv_b_proj's key part), the
// blocked one otherwise, without control flow: each form takes all of the
// queries or none (and the blocked one all of the keys or none), and the
// two results are concatenated along the tokens.
// CHECK-LABEL: func.func @cached
// CHECK-NOT: scf.if
// CHECK: %[[FEW:.+]] = arith.cmpi ult, %[[T:.+]], %c32
// CHECK: %[[FEWT:.+]] = arith.select %[[FEW]], %[[T]], %c0
// CHECK: %[[MANYT:.+]] = arith.subi %[[T]], %[[FEWT]]
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0, 0] [%{{.+}}, %[[FEWT]], 2, 8] [1, 1, 1, 1]
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0, 0] [%{{.+}}, %[[MANYT]], 2, 8] [1, 1, 1, 1]
// CHECK: scf.forall
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, 0, 0, 0] [%{{.+}}, %{{.+}}, 2, 12]
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[0, %{{.+}}, 0, 0] [%{{.+}}, %{{.+}}, 2, 12]
// CHECK: return

// The fused attention kept for the GPU, in the prompt's (no cache) and the
// cached call's blocked form.
// KEEP-LABEL: func.func @prefill
// KEEP: gdn.causal_attention %{{.+}}, %{{.+}}, %{{.+}} {block = 32 : i64, scale = 2.500000e-01 : f32} : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x12xf32>) -> tensor<?x?x2x12xf32>
// KEEP-NOT: scf.forall
// KEEP-LABEL: func.func @cached
// KEEP: gdn.causal_attention
// KEEP-NOT: scf.forall
// KEEP: return

// tensor-core-only marks the MLA ops whose heads fit the kernel (here 16
// query/key and 12 value elements) and no gated attention.
// GPU-LABEL: func.func @prefill
// GPU: gdn.mla {{.+}}attention_block = 64 : i64
// GPU-LABEL: func.func @cached
// GPU: gdn.mla {{.+}}attention_block = 64 : i64
func.func @cached(%x: tensor<?x?x32xf32>, %latent: tensor<?x?x16xf32>, %k_rope: tensor<?x?x8xf32>, %w0: tensor<32x32xf32>, %w1: tensor<24x32xf32>, %w2: tensor<16xf32>, %w3: tensor<40x16xf32>, %w4: tensor<32x24xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) {
  %y, %l, %k = gdn.mla %x weights(%w0, %w1, %w2, %w3, %w4) cache(%latent, %k_rope) {num_heads = 2 : i64, q_lora_rank = 0 : i64, kv_lora_rank = 16 : i64, qk_nope_head_dim = 8 : i64, qk_rope_head_dim = 8 : i64, v_head_dim = 12 : i64, rope_theta = 10000.0 : f32} : (tensor<?x?x32xf32>, tensor<32x32xf32>, tensor<24x32xf32>, tensor<16xf32>, tensor<40x16xf32>, tensor<32x24xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %y, %l, %k : tensor<?x?x32xf32>, tensor<?x?x16xf32>, tensor<?x?x8xf32>
}
