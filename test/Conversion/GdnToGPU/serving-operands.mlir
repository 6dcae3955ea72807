// RUN: gdn-opt %s -split-input-file -convert-gdn-to-gpu -verify-diagnostics
// RUN: not gdn-opt %s -split-input-file -convert-gdn-to-recurrence 2>&1 | FileCheck %s --check-prefix=REFERENCE

// The CUDA lowering does not take checkpoints or draft tokens yet, and
// takes packed sequences, pools, raw gates and bf16 states as operands of
// its kernels (chunked-scan-serving.mlir, pool-decode.mlir): it says so,
// instead of running them as dense batches. The reference recurrence wants them unpacked first.

// REFERENCE: run gdn-unpack-sequences before the recurrence

func.func @packed(%q: tensor<1x?x2x16xbf16>, %v: tensor<1x?x4x16xbf16>, %g: tensor<1x?x4xf32>, %cu: tensor<?xi32>) -> tensor<1x?x4x16xbf16> {
  // expected-error @+1 {{with cu_seqlens or state_indices runs on CUDA as the chunked scan, which needs bf16 or f16 q, k and v, K a multiple of 16 and a state tile that fits a multiprocessor (gdn-choose-scan-strategy gave it none); compile it with --target=cpu}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g cu_seqlens(%cu) : (tensor<1x?x2x16xbf16>, tensor<1x?x2x16xbf16>, tensor<1x?x4x16xbf16>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<?xi32>) -> (tensor<1x?x4x16xbf16>, tensor<?x4x16x16xf32>)
  return %o : tensor<1x?x4x16xbf16>
}

// -----

func.func @verify(%q: tensor<?x?x2x16xf32>, %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4xf32>, %s: tensor<?x4x16x8xf32>) -> tensor<?x?x4x8xf32> {
  // expected-error @+1 {{with checkpoints or draft tokens to verify has no CUDA lowering yet; compile it with --target=cpu}}
  %o, %st = gdn.delta_rule_verify %q, %q, %v, %g, %g, %s : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x8xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x?x4x16x8xf32>)
  return %o : tensor<?x?x4x8xf32>
}

// -----

func.func @checkpoints(%q: tensor<?x?x2x16xf32>, %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4xf32>) -> tensor<?x?x4x8xf32> {
  // expected-error @+1 {{with checkpoints or draft tokens to verify has no CUDA lowering yet; compile it with --target=cpu}}
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g {checkpoint_every = 64 : i64} : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>, tensor<?x?x4x16x8xf32>)
  return %o : tensor<?x?x4x8xf32>
}
