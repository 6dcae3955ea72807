// gdn-choose-scan-strategy records every decision of the chunked scan on
// the op; convert-gdn-to-gpu reads it and nothing else.
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy=context-segments=1 | FileCheck %s
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy='scan-warps=8 multiprocessors=16 value-tile=128 context-segments=1' | FileCheck %s --check-prefix=OPTIONS
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy=context-segments=0 -convert-gdn-to-gpu | FileCheck %s --check-prefix=LOWERED
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy | FileCheck %s --check-prefix=AUTO
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy=f32-min-tokens=64 | FileCheck %s --check-prefix=F32
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy=f32-min-tokens=64 -convert-gdn-to-gpu | FileCheck %s --check-prefix=F32LOWERED
// RUN: not gdn-opt %s -split-input-file -gdn-choose-scan-strategy=f32-min-tokens=-1 2>&1 | FileCheck %s --check-prefix=F32BAD
// F32BAD: f32-min-tokens must be >= 0 (0: none), but got -1
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy=context-segments=4 | FileCheck %s --check-prefix=SEG4
// RUN: not gdn-opt %s -split-input-file -gdn-choose-scan-strategy=context-segments=3 2>&1 | FileCheck %s --check-prefix=SEGBAD
// SEGBAD: context-segments must be 0 (chosen from the shapes) or a power of two in [1, 64], but got 3

// K = V = 128: the default tile of 64 with a narrow one of 32 for batches
// that leave more than 1/8 of 132 multiprocessors idle; one segment by
// default. Chosen from the shapes (context-segments=0): one batch entry
// gives 4 heads x 4 tiles of 32 = 16 blocks; the cost model ties 8 and 16
// segments (a partial pass of 2 and 4 waves, an output pass of 1 and 2)
// and takes the fewer.
// CHECK-LABEL: func.func @k128
// CHECK: gdn.delta_rule {{.*}}strategy = #gdn.scan_strategy<chunk = 64, value_tile = 64, narrow_value_tile = 32, narrow_below_blocks = 115, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>
// AUTO-LABEL: func.func @k128
// AUTO: context_segments = 8>
// OPTIONS-LABEL: func.func @k128
// OPTIONS: strategy = #gdn.scan_strategy<chunk = 64, value_tile = 128, narrow_value_tile = 64, narrow_below_blocks = 14, warps = 8,
// LOWERED-LABEL: func.func @k128
// LOWERED: gdn.chunked_scan = {chunk = 64 : i64, copy_warps = 0 : i64, kernel = "wy"
// LOWERED: gdn.chunked_scan = {chunk = 64 : i64, copy_warps = 2 : i64, kernel = "state", mma = "m16n8k16.bf16", value_tile = 64 : i64, warps = 4 : i64}
// LOWERED: gdn.chunked_scan = {chunk = 64 : i64, copy_warps = 2 : i64, kernel = "state", mma = "m16n8k16.bf16", value_tile = 32 : i64, warps = 4 : i64}
func.func @k128(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %b: tensor<?x?x4xf32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>)
  return %o, %s : tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>
}

// -----

// K = V = 256 (f16): the state tile of 64 columns does not fit workgroup
// memory beside the chunk's operands; 32 does, and nothing narrower runs.
// CHECK-LABEL: func.func @k256
// CHECK: strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0,
func.func @k256(%q: tensor<?x?x1x256xf16>, %k: tensor<?x?x1x256xf16>, %v: tensor<?x?x1x256xf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) -> (tensor<?x?x1x256xf16>, tensor<?x1x256x256xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<?x?x1x256xf16>, tensor<?x?x1x256xf16>, tensor<?x?x1x256xf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x256xf16>, tensor<?x1x256x256xf32>)
  return %o, %s : tensor<?x?x1x256xf16>, tensor<?x1x256x256xf32>
}

// -----

// V = 48: the whole value dimension in one tile; half of it would be 24,
// below the narrowest tile worth its extra traffic.
// CHECK-LABEL: func.func @v48
// CHECK: strategy = #gdn.scan_strategy<chunk = 64, value_tile = 48, narrow_value_tile = 0,
func.func @v48(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x48xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) -> (tensor<?x?x1x48xbf16>, tensor<?x1x64x48xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x48xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x48xbf16>, tensor<?x1x64x48xf32>)
  return %o, %s : tensor<?x?x1x48xbf16>, tensor<?x1x64x48xf32>
}

// -----

// Head dims that the default tile of 64 does not divide are chunked with
// its largest halving that does: 32 for V = 96 (with no narrower tile),
// 64 for V = 192; 16 segments for K = 96 (4 heads x 3 tiles = 12 blocks).
// CHECK-LABEL: func.func @k96
// CHECK: strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0,
// AUTO-LABEL: func.func @k96
// AUTO: context_segments = 16>
// LOWERED-LABEL: func.func @k96
// LOWERED: kernel = "wy"
// LOWERED: kernel = "state", mma = "m16n8k16.bf16", value_tile = 32
func.func @k96(%q: tensor<?x?x2x96xbf16>, %k: tensor<?x?x2x96xbf16>, %v: tensor<?x?x4x96xbf16>, %g: tensor<?x?x4xf32>, %b: tensor<?x?x4xf32>) -> (tensor<?x?x4x96xbf16>, tensor<?x4x96x96xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x4x96xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x96xbf16>, tensor<?x4x96x96xf32>)
  return %o, %s : tensor<?x?x4x96xbf16>, tensor<?x4x96x96xf32>
}

// -----

// CHECK-LABEL: func.func @k192
// CHECK: strategy = #gdn.scan_strategy<chunk = 64, value_tile = 64, narrow_value_tile = 32,
func.func @k192(%q: tensor<?x?x2x192xbf16>, %k: tensor<?x?x2x192xbf16>, %v: tensor<?x?x2x192xbf16>, %g: tensor<?x?x2xf32>, %b: tensor<?x?x2xf32>) -> (tensor<?x?x2x192xbf16>, tensor<?x2x192x192xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x192xbf16>, tensor<?x2x192x192xf32>)
  return %o, %s : tensor<?x?x2x192xbf16>, tensor<?x2x192x192xf32>
}

// -----

// f32 inputs and K = 24 get no strategy: they keep the recurrence.
// CHECK-LABEL: func.func @recurrences
// CHECK-NOT: strategy
// LOWERED-LABEL: func.func @recurrences
// LOWERED-NOT: gdn.chunked_scan
// With f32-min-tokens, the f32 op (T dynamic) gets a strategy whose
// recurrence_below sends calls of fewer than 64 tokens to the f32
// recurrence; both are launched, each kernel returning at once where the
// other one runs.
// F32-LABEL: func.func @recurrences
// F32: gdn.delta_rule {{.*}}context_segments = 1, recurrence_below = 64>} : (tensor<?x?x1x16xf32>
// F32-NOT: strategy
// F32: return
// F32LOWERED-LABEL: func.func @recurrences
// F32LOWERED: %[[FEW:.+]] = arith.cmpi ult, %{{.+}}, %c64
// F32LOWERED: gpu.launch
// F32LOWERED-NEXT: scf.if %[[FEW]]
// F32LOWERED: %[[RUNS:.+]] = arith.cmpi uge, %{{.+}}, %c64
// F32LOWERED: gpu.launch
// F32LOWERED-NEXT: scf.if %[[RUNS]]
// F32LOWERED: kernel = "wy"
// F32LOWERED: gpu.launch
// F32LOWERED-NEXT: scf.if %[[RUNS]]
// F32LOWERED: kernel = "state"
// F32LOWERED-NOT: gdn.chunked_scan
// F32LOWERED: return
func.func @recurrences(%q: tensor<?x?x1x16xf32>, %k: tensor<?x?x1x16xf32>, %v: tensor<?x?x1x16xf32>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>,
                       %q2: tensor<?x?x1x24xbf16>, %k2: tensor<?x?x1x24xbf16>, %v2: tensor<?x?x1x16xbf16>) -> (tensor<?x?x1x16xf32>, tensor<?x?x1x16xbf16>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x16xf32>, tensor<?x1x16x16xf32>)
  %o2, %s2 = gdn.delta_rule %q2, %k2, %v2, %g, %b : (tensor<?x?x1x24xbf16>, tensor<?x?x1x24xbf16>, tensor<?x?x1x16xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x16xbf16>, tensor<?x1x24x16xf32>)
  return %o, %o2 : tensor<?x?x1x16xf32>, tensor<?x?x1x16xbf16>
}

// -----

// A strategy in the input overrides the choice: kept, and lowered as it
// says (8 warps, tile 32, no narrow launch).
// CHECK-LABEL: func.func @given
// CHECK: strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 8,
// LOWERED-LABEL: func.func @given
// LOWERED: kernel = "state", mma = "m16n8k16.bf16", value_tile = 32 : i64, warps = 8 : i64}
// LOWERED-NOT: kernel = "state"
func.func @given(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) -> tensor<?x?x1x64xbf16> {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 8, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return %o : tensor<?x?x1x64xbf16>
}

// -----

// The head split of an 8-way tensor-parallel Qwen3.5 (2 key heads, 8 value
// heads): 8 x 4 tiles of 32 = 32 blocks per batch entry. The cost model
// ties 4, 8 and 16 segments (0.565 of the whole walk each) and takes 4
// (measured faster than 8 on the H200). An option asks for 4.
// AUTO-LABEL: func.func @tensor_parallel_split
// AUTO: context_segments = 4>
// SEG4-LABEL: func.func @tensor_parallel_split
// SEG4: context_segments = 4>
// Lowered: segments run where B x 32 blocks < 115 and T >= 4 x 4 chunks of
// 64; segments of ceil(ceil(T / 4) / 64) x 64 tokens. The whole-sequence
// launches then get no block rows, the segments' launches B (the first
// segment's partial state), 2 B (the middle ones' [L | P], 4 tiles of
// transition past the 4 of V), B (combine, a thread per key) and 4 B
// (outputs).
// LOWERED-LABEL: func.func @tensor_parallel_split
// LOWERED: kernel = "wy"
// LOWERED: %[[BLOCKS:.+]] = arith.muli %[[B:.+]], %c32
// LOWERED: %[[IDLE:.+]] = arith.cmpi ult, %[[BLOCKS]], %c115
// LOWERED: %[[LONG:.+]] = arith.cmpi uge, %[[T:.+]], %c1024
// LOWERED: %[[SEGMENTED:.+]] = arith.andi %[[IDLE]], %[[LONG]]
// LOWERED: %[[WHOLE:.+]] = arith.select %[[SEGMENTED]], %c0{{.*}}, %[[B]]
// LOWERED: %[[PER:.+]] = arith.ceildivui %[[T]], %c4
// LOWERED: %[[CHUNKS:.+]] = arith.ceildivui %[[PER]], %c64
// LOWERED: memref.alloc({{.+}}) : memref<?x8x128x256xf32>
// LOWERED: memref.alloc({{.+}}) : memref<?x8x128x128xf32>
// LOWERED: gpu.launch blocks({{.+}}) in (%{{.+}} = %c16{{.*}}, %{{.+}} = %[[WHOLE]],
// LOWERED: kernel = "state"
// LOWERED: gpu.launch blocks({{.+}}) in (%{{.+}} = %c32{{.*}}, %{{.+}} = %[[WHOLE]],
// LOWERED: kernel = "state"
// LOWERED: %[[FIRST:.+]] = arith.select %[[SEGMENTED]], %[[B]], %c0
// LOWERED: gpu.launch blocks({{.+}}) in (%{{.+}} = %c32{{.*}}, %{{.+}} = %[[FIRST]],
// LOWERED: kernel = "segment_partials", mma = "m16n8k16.bf16", value_tile = 32
// LOWERED: %[[MIDDLE:.+]] = arith.muli %[[B]], %c2
// LOWERED: %[[MIDDLEROWS:.+]] = arith.select %[[SEGMENTED]], %[[MIDDLE]], %c0
// LOWERED: gpu.launch blocks({{.+}}) in (%{{.+}} = %c64{{.*}}, %{{.+}} = %[[MIDDLEROWS]],
// LOWERED: arith.cmpi uge, %{{.+}}, %c128
// LOWERED: kernel = "segment_partials", mma = "m16n8k16.bf16", value_tile = 32
// LOWERED: gpu.launch blocks({{.+}}) in (%{{.+}} = %c128{{.*}}, %{{.+}} = %{{.+}}, %{{.+}} = %c1{{.*}}) threads({{.+}}) in (%{{.+}} = %c128
// LOWERED: llvm.intr.fma
// LOWERED: kernel = "segment_combine"
// LOWERED: %[[ALL:.+]] = arith.muli %[[B]], %c4
// LOWERED: %[[ALLROWS:.+]] = arith.select %[[SEGMENTED]], %[[ALL]], %c0
// LOWERED: gpu.launch blocks({{.+}}) in (%{{.+}} = %c32{{.*}}, %{{.+}} = %[[ALLROWS]],
// LOWERED: kernel = "segment_outputs"
// LOWERED-NOT: gpu.launch
// LOWERED: return
func.func @tensor_parallel_split(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x8x128xbf16>, %g: tensor<?x?x8xf32>, %b: tensor<?x?x8xf32>) -> tensor<?x?x8x128xbf16> {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
  return %o : tensor<?x?x8x128xbf16>
}

// -----

// 32 value heads fill the multiprocessors at B = 1 (128 blocks >= 115):
// one segment. A pool of states keeps one segment too.
// LOWERED-LABEL: func.func @enough_heads
// AUTO-LABEL: func.func @enough_heads
// AUTO: context_segments = 1>
// AUTO: context_segments = 1>
func.func @enough_heads(%q: tensor<?x?x16x128xbf16>, %k: tensor<?x?x16x128xbf16>, %v: tensor<?x?x32x128xbf16>, %g: tensor<?x?x32xf32>, %b: tensor<?x?x32xf32>,
                        %q2: tensor<?x?x2x128xbf16>, %v2: tensor<?x?x8x128xbf16>, %g2: tensor<?x?x8xf32>, %pool: tensor<?x8x128x128xf32>, %slots: tensor<?xi32>) -> (tensor<?x?x32x128xbf16>, tensor<?x?x8x128xbf16>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b : (tensor<?x?x16x128xbf16>, tensor<?x?x16x128xbf16>, tensor<?x?x32x128xbf16>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<?x?x32x128xbf16>, tensor<?x32x128x128xf32>)
  %o2, %s2 = gdn.delta_rule %q2, %q2, %v2, %g2, %g2 initial_state(%pool) state_indices(%slots) : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>, tensor<?xi32>) -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
  return %o, %o2 : tensor<?x?x32x128xbf16>, tensor<?x?x8x128xbf16>
}
