// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// The verifier of #gdn.scan_strategy (what the scan's kernels implement)
// and of the gdn.delta_rule that carries one. Every function is valid
// except for the one property named in its name.

func.func @chunk_32(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{chunk must be 64 (the scan's kernels are built for chunks of 64 tokens), got 32}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 32, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @value_tile_12(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{value_tile must be a multiple of 8 in [8, 1024], got 12}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 12, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @narrow_not_below(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{narrow_value_tile must be 0 (none) or a multiple of 8 below value_tile (32), got 32}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 32, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @warps_6(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{warps must be 4 or 8, got 6}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 6, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @copy_warps_1(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{copy_warps must be 2 (the state kernel's staging warps), got 1}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 1, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @wgmma(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{mma = wgmma is not implemented by the scan's kernels (mma_sync)}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = wgmma, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @tma(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{staging = tma is not implemented by the scan's kernels (cp_async)}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = tma, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @stages_3(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{stages must be 2 (double buffering), got 3}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 3, state = registers, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @segments_3(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{context_segments must be a power of two in [1, 64], got 3}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 3>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @segments_128(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{context_segments must be a power of two in [1, 64], got 128}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 128>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

// The transitions are K more state columns, in whole value tiles.
func.func @segments_tile_not_dividing_keys(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x48xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{'gdn.delta_rule' op strategy: context_segments needs the value tile the segments use (48) to divide K = 64 (the transitions are K more state columns)}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 48, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 4>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x48xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x48xbf16>, tensor<?x1x64x48xf32>)
  return
}

// -----

// Segments need each sequence's own states: not with a pool.
func.func @segments_with_pool(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>, %pool: tensor<?x1x64x64xf32>, %slots: tensor<?xi32>) {
  // expected-error @+1 {{'gdn.delta_rule' op strategy: context_segments must be 1 with recurrence_below, cu_seqlens, state_indices or checkpoints}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b initial_state(%pool) state_indices(%slots) {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 2>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>, tensor<?x1x64x64xf32>, tensor<?xi32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @strategy_key_24(%q: tensor<?x?x1x24xbf16>, %k: tensor<?x?x1x24xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{'gdn.delta_rule' op strategy: the chunked scan needs K to be a multiple of 16, got 24}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 64, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x24xbf16>, tensor<?x?x1x24xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x24x64xf32>)
  return
}

// -----

func.func @strategy_tile_not_dividing(%q: tensor<?x?x1x64xbf16>, %k: tensor<?x?x1x64xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{'gdn.delta_rule' op strategy: value tile 24 does not divide V = 64}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 24, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x64x64xf32>)
  return
}

// -----

func.func @recurrence_below_negative(%q: tensor<?x?x1x64xf32>, %k: tensor<?x?x1x64xf32>, %v: tensor<?x?x1x64xf32>, %g: tensor<?x?x1xf32>, %b: tensor<?x?x1xf32>) {
  // expected-error @+1 {{recurrence_below must be >= 0 (0: never), got -1}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %b {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 32, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1, recurrence_below = -1>} : (tensor<?x?x1x64xf32>, tensor<?x?x1x64xf32>, tensor<?x?x1x64xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>) -> (tensor<?x?x1x64xf32>, tensor<?x1x64x64xf32>)
  return
}
