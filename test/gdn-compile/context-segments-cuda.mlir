// REQUIRES: cuda-toolkit
// The chunked scan's context parallelism through gdn-compile: by default
// the strategy splits the sequences of this 8-value-head shard into 4
// segments, and ptxas builds four kernels for sm_90a besides the WY and
// the whole-sequence state kernels (partial states for the first and the
// middle segments, the combine, the outputs); --cuda-context-segments=1
// leaves three (WY, the state kernel's wide and narrow tiles).
// RUN: rm -f %t.so
// RUN: gdn-compile %s --target=cuda --emit=shared -o %t.so
// RUN: test -s %t.so
// RUN: gdn-compile %s --target=cuda --cuda-binary-format=isa --emit=mlir-llvm -o - | FileCheck %s --check-prefix=PTX
// RUN: gdn-compile %s --target=cuda --cuda-context-segments=1 --cuda-binary-format=isa --emit=mlir-llvm -o - | FileCheck %s --check-prefix=ONE

// The combine kernel: a thread per key row, f32 FMAs (no libdevice call).
// PTX: gpu.binary @gdn_scan_segment_combine
// PTX-SAME: .maxntid 128, 1, 1
// PTX-SAME: fma.rn.f32
// PTX-NOT: __nv_fmaf
// PTX: gpu.binary @gdn_scan_segment_outputs
// PTX-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// ONE: gpu.binary @gdn_scan_state_0
// ONE-NOT: gpu.binary @gdn_scan_segment

func.func @prefill(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x8x128xbf16>, %g: tensor<?x?x8xf32>, %beta: tensor<?x?x8xf32>, %state: tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%state) : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
  return %o, %s : tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>
}
