// RUN: gdn-opt %s -split-input-file -convert-gdn-to-gpu -verify-diagnostics
// RUN: not gdn-opt %s -split-input-file -convert-gdn-to-recurrence 2>&1 | FileCheck %s --check-prefix=REFERENCE

// The CUDA lowering takes packed sequences, pools and checkpoints as
// operands of the chunked scan (chunked-scan-serving.mlir,
// chunked-scan-checkpoints.mlir): where the op cannot run as the scan, or
// its checkpoints fall inside chunks, it says so instead of running them
// as dense batches. The reference recurrence wants them unpacked first.

// REFERENCE: run gdn-unpack-sequences before the recurrence

func.func @packed(%q: tensor<1x?x2x16xbf16>, %v: tensor<1x?x4x16xbf16>, %g: tensor<1x?x4xf32>, %cu: tensor<?xi32>) -> tensor<1x?x4x16xbf16> {
  // expected-error @+1 {{with cu_seqlens, state_indices or checkpoint_every runs on CUDA as the chunked scan, which needs bf16 or f16 q, k and v, K a multiple of 16 and a state tile that fits a multiprocessor (gdn-choose-scan-strategy gave it none); compile it with --target=cpu}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g cu_seqlens(%cu) : (tensor<1x?x2x16xbf16>, tensor<1x?x2x16xbf16>, tensor<1x?x4x16xbf16>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<?xi32>) -> (tensor<1x?x4x16xbf16>, tensor<?x4x16x16xf32>)
  return %o : tensor<1x?x4x16xbf16>
}

// -----

func.func @checkpoints(%q: tensor<?x?x2x16xf32>, %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4xf32>) -> tensor<?x?x4x8xf32> {
  // expected-error @+1 {{with cu_seqlens, state_indices or checkpoint_every runs on CUDA as the chunked scan, which needs bf16 or f16 q, k and v}}
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g {checkpoint_every = 64 : i64} : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>, tensor<?x?x4x16x8xf32>)
  return %o : tensor<?x?x4x8xf32>
}

// -----

func.func @checkpoints_inside_chunks(%q: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x8xbf16>, %g: tensor<?x?x4xf32>) -> tensor<?x?x4x8xbf16> {
  // expected-error @+1 {{with checkpoint_every = 96 has no CUDA lowering: the chunked scan has the state at chunk boundaries, so on CUDA checkpoints come every multiple of 64 tokens; compile it with --target=cpu}}
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g {checkpoint_every = 96 : i64} : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x8xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x8xbf16>, tensor<?x4x16x8xf32>, tensor<?x?x4x16x8xf32>)
  return %o : tensor<?x?x4x8xbf16>
}
