// RUN: gdn-opt %s -split-input-file -convert-gdn-to-gpu -verify-diagnostics

// convert-gdn-to-gpu refuses a strategy its kernels cannot be built for,
// instead of quietly lowering the op to the recurrence.

func.func @state_home_mismatch(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) -> tensor<?x?x1x64xbf16> {
  // expected-error @+1 {{'gdn.delta_rule' op strategy: state = shared does not match the kernel: the state product's tiles divide among the 4 warps at a value tile of 32 (state = registers)}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = shared, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return %o : tensor<?x?x1x64xbf16>
}

// -----

func.func @too_much_workgroup_memory(%q: tensor<?x?x1x256xf16>, %k: tensor<?x?x1x256xf16>, %v: tensor<?x?x1x256xf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) -> tensor<?x?x1x256xf16> {
  // expected-error @+1 {{'gdn.delta_rule' op strategy: with a value tile of 128 the scan's kernels need}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 128, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x256xf16>, tensor<?x?x1x256xf16>, tensor<?x?x1x256xf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x256xf16>, tensor<?x1x256x256xf32>)
  return %o : tensor<?x?x1x256xf16>
}
