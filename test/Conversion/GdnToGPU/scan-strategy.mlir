// gdn-choose-scan-strategy records every decision of the chunked scan on
// the op; convert-gdn-to-gpu reads it and nothing else.
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy | FileCheck %s
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy='scan-warps=8 multiprocessors=16 value-tile=128' | FileCheck %s --check-prefix=OPTIONS
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy -convert-gdn-to-gpu | FileCheck %s --check-prefix=LOWERED
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy=f32-min-tokens=64 | FileCheck %s --check-prefix=F32
// RUN: gdn-opt %s -split-input-file -gdn-choose-scan-strategy=f32-min-tokens=64 -convert-gdn-to-gpu | FileCheck %s --check-prefix=F32LOWERED
// RUN: not gdn-opt %s -split-input-file -gdn-choose-scan-strategy=f32-min-tokens=-1 2>&1 | FileCheck %s --check-prefix=F32BAD
// F32BAD: f32-min-tokens must be >= 0 (0: none), but got -1

// K = V = 128: the default tile of 64 with a narrow one of 32 for batches
// that leave more than 1/8 of 132 multiprocessors idle.
// CHECK-LABEL: func.func @k128
// CHECK: gdn.delta_rule {{.*}}strategy = #gdn.scan_strategy<chunk = 64, value_tile = 64, narrow_value_tile = 32, narrow_below_blocks = 115, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>
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
