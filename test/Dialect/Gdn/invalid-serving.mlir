// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// The serving operands of gdn.delta_rule and gdn.delta_rule_step: packed
// sequences (cu_seqlens) and pools of states (state_indices, write_indices).

func.func @packed_batch(%q: tensor<2x?x2x16xf32>, %v: tensor<2x?x4x8xf32>, %g: tensor<2x?x4xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{with 'cu_seqlens' the sequences are packed into one row: operand 'q' must have shape [1, total, H, K], but got 'tensor<2x?x2x16xf32>'}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g cu_seqlens(%cu) : (tensor<2x?x2x16xf32>, tensor<2x?x2x16xf32>, tensor<2x?x4x8xf32>, tensor<2x?x4xf32>, tensor<2x?x4xf32>, tensor<?xi32>) -> (tensor<2x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @offsets_type(%q: tensor<1x?x2x16xf32>, %v: tensor<1x?x4x8xf32>, %g: tensor<1x?x4xf32>, %cu: tensor<?xi64>) {
  // expected-error @+1 {{operand 'cu_seqlens' must have element type i32, but got 'i64'}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g cu_seqlens(%cu) : (tensor<1x?x2x16xf32>, tensor<1x?x2x16xf32>, tensor<1x?x4x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<?xi64>) -> (tensor<1x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @offsets_count(%q: tensor<1x?x2x16xf32>, %v: tensor<1x?x4x8xf32>, %g: tensor<1x?x4xf32>, %h: tensor<3x4x16x8xf32>, %cu: tensor<3xi32>) {
  // expected-error @+1 {{operand 'cu_seqlens' must have N + 1 = 4 offsets (N = 3 sequences from the states), but got 'tensor<3xi32>'}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g initial_state(%h) cu_seqlens(%cu) : (tensor<1x?x2x16xf32>, tensor<1x?x2x16xf32>, tensor<1x?x4x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<3x4x16x8xf32>, tensor<3xi32>) -> (tensor<1x?x4x8xf32>, tensor<3x4x16x8xf32>)
  return
}

// -----

func.func @offsets_rank(%q: tensor<1x?x2x16xf32>, %v: tensor<1x?x4x8xf32>, %g: tensor<1x?x4xf32>, %cu: tensor<?x2xi32>) {
  // expected-error @+1 {{operand 'cu_seqlens' must have rank 1 with shape [N + 1], but got 'tensor<?x2xi32>'}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g cu_seqlens(%cu) : (tensor<1x?x2x16xf32>, tensor<1x?x2x16xf32>, tensor<1x?x4x8xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<?x2xi32>) -> (tensor<1x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @pool_without_states(%q: tensor<?x?x2x16xf32>, %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{operand 'state_indices' needs 'initial_state', the pool of states [S, Hv, K, V]}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g state_indices(%i) : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?xi32>) -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @write_without_read(%q: tensor<?x?x2x16xf32>, %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4xf32>, %h: tensor<?x4x16x8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{operand 'write_indices' needs 'state_indices' (the slots the sequences read)}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g initial_state(%h) write_indices(%i) : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x8xf32>, tensor<?xi32>) -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @pool_result(%q: tensor<3x?x2x16xf32>, %v: tensor<3x?x4x8xf32>, %g: tensor<3x?x4xf32>, %h: tensor<10x4x16x8xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{result 'final_state' must have shape [S, Hv, K, V] = [10, 4, 16, 8] (S = 10 from operand 'initial_state'), but got 'tensor<3x4x16x8xf32>'}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g initial_state(%h) state_indices(%i) : (tensor<3x?x2x16xf32>, tensor<3x?x2x16xf32>, tensor<3x?x4x8xf32>, tensor<3x?x4xf32>, tensor<3x?x4xf32>, tensor<10x4x16x8xf32>, tensor<3xi32>) -> (tensor<3x?x4x8xf32>, tensor<3x4x16x8xf32>)
  return
}

// -----

func.func @indices_per_sequence(%q: tensor<3x?x2x16xf32>, %v: tensor<3x?x4x8xf32>, %g: tensor<3x?x4xf32>, %h: tensor<10x4x16x8xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{operand 'state_indices' must have shape [B] = [3] (B = 3 from operand 'q'), but got 'tensor<4xi32>'}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g initial_state(%h) state_indices(%i) : (tensor<3x?x2x16xf32>, tensor<3x?x2x16xf32>, tensor<3x?x4x8xf32>, tensor<3x?x4xf32>, tensor<3x?x4xf32>, tensor<10x4x16x8xf32>, tensor<4xi32>) -> (tensor<3x?x4x8xf32>, tensor<10x4x16x8xf32>)
  return
}

// -----

func.func @step_indices_type(%q: tensor<?x2x16xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %h: tensor<?x4x16x8xf32>, %i: tensor<?xindex>) {
  // expected-error @+1 {{operand 'state_indices' must have element type i32, but got 'index'}}
  %o, %s = gdn.delta_rule_step %q, %q, %v, %g, %g, %h state_indices(%i) : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x16x8xf32>, tensor<?xindex>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @strategy(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>, %g: tensor<?x?x4xf32>) {
  // expected-error @+1 {{strategy: checkpoint_every must be a multiple of the chunk (64), got 32 (the scan has the state at chunk boundaries only)}}
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g {checkpoint_every = 32 : i64, strategy = #gdn.scan_strategy<chunk = 64, value_tile = 64, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1>} : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>, tensor<?x?x4x64x64xf32>)
  return
}

// -----

func.func @strategy_recurrence(%q: tensor<1x?x2x64xf32>, %v: tensor<1x?x4x64xf32>, %g: tensor<1x?x4xf32>, %cu: tensor<?xi32>) {
  // expected-error @+1 {{strategy: recurrence_below must be 0 with cu_seqlens, state_indices or checkpoints (the recurrence kernel takes none of them)}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g cu_seqlens(%cu) {strategy = #gdn.scan_strategy<chunk = 64, value_tile = 64, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1, recurrence_below = 64>} : (tensor<1x?x2x64xf32>, tensor<1x?x2x64xf32>, tensor<1x?x4x64xf32>, tensor<1x?x4xf32>, tensor<1x?x4xf32>, tensor<?xi32>) -> (tensor<1x?x4x64xf32>, tensor<?x4x64x64xf32>)
  return
}

// -----

func.func @strategy_recurrence_checkpoints(%q: tensor<?x?x2x64xf32>, %v: tensor<?x?x4x64xf32>, %g: tensor<?x?x4xf32>) {
  // expected-error @+1 {{strategy: recurrence_below must be 0 with cu_seqlens, state_indices or checkpoints}}
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g {checkpoint_every = 64 : i64, strategy = #gdn.scan_strategy<chunk = 64, value_tile = 64, narrow_value_tile = 0, narrow_below_blocks = 0, warps = 4, copy_warps = 2, mma = mma_sync, staging = cp_async, stages = 2, state = registers, context_segments = 1, recurrence_below = 64>} : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x64xf32>, tensor<?x4x64x64xf32>, tensor<?x?x4x64x64xf32>)
  return
}

// -----

func.func @gates_shape(%q: tensor<?x?x2x16xf32>, %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4xf32>, %a: tensor<2xf32>) {
  // expected-error @+1 {{operand 'a_log' must have shape [Hv] = [4] (Hv = 4 from operand 'v'), but got 'tensor<2xf32>'}}
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g gates(%a, %a) : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @gates_type(%q: tensor<?x2x16xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xbf16>, %h: tensor<?x4x16x8xf32>, %a: tensor<4xbf16>) {
  // expected-error @+1 {{operand 'a_log' must have element type f32, but got 'bf16'}}
  %o, %s = gdn.delta_rule_step %q, %q, %v, %g, %g, %h gates(%a, %a) : (tensor<?x2x16xbf16>, tensor<?x2x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<?x4x16x8xf32>, tensor<4xbf16>, tensor<4xbf16>) -> (tensor<?x4x8xbf16>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @raw_gate_type(%q: tensor<?x2x16xbf16>, %v: tensor<?x4x8xbf16>, %g: tensor<?x4xf16>, %h: tensor<?x4x16x8xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{operand 'g' (the raw gate a) must have element type f32 or the element type of 'v', but got 'f16'}}
  %o, %s = gdn.delta_rule_step %q, %q, %v, %g, %g, %h gates(%a, %a) : (tensor<?x2x16xbf16>, tensor<?x2x16xbf16>, tensor<?x4x8xbf16>, tensor<?x4xf16>, tensor<?x4xf16>, tensor<?x4x16x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4x8xbf16>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @verify_tokens(%q: tensor<2x17x2x16xf32>, %v: tensor<2x17x4x8xf32>, %g: tensor<2x17x4xf32>, %s: tensor<2x4x16x8xf32>) {
  // expected-error @+1 {{verifies at most 16 draft tokens, but got T = 17}}
  %o, %st = gdn.delta_rule_verify %q, %q, %v, %g, %g, %s : (tensor<2x17x2x16xf32>, tensor<2x17x2x16xf32>, tensor<2x17x4x8xf32>, tensor<2x17x4xf32>, tensor<2x17x4xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x17x4x8xf32>, tensor<2x17x4x16x8xf32>)
  return
}

// -----

func.func @verify_states(%q: tensor<2x4x2x16xf32>, %v: tensor<2x4x4x8xf32>, %g: tensor<2x4x4xf32>, %s: tensor<2x4x16x8xf32>) {
  // expected-error @+1 {{result 'states' must have rank 5 with shape [B, T, Hv, K, V] = [2, 4, 4, 16, 8], but got 'tensor<2x4x16x8xf32>'}}
  %o, %st = gdn.delta_rule_verify %q, %q, %v, %g, %g, %s : (tensor<2x4x2x16xf32>, tensor<2x4x2x16xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x16x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x16x8xf32>)
  return
}

// -----

func.func @state_storage(%q: tensor<?x2x16xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %s: tensor<?x4x16x8xbf16>) {
  // expected-error @+1 {{result 'new_state' must have the element type of 'state' ('bf16'), but got 'f32'}}
  %o, %n = gdn.delta_rule_step %q, %q, %v, %g, %g, %s : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x16x8xbf16>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf32>)
  return
}

// -----

func.func @state_f16(%q: tensor<?x2x16xf32>, %v: tensor<?x4x8xf32>, %g: tensor<?x4xf32>, %s: tensor<?x4x16x8xf16>) {
  // expected-error @+1 {{operand 'state' must have element type f32 or bf16, but got 'f16'}}
  %o, %n = gdn.delta_rule_step %q, %q, %v, %g, %g, %s : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?x4x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x16x8xf16>) -> (tensor<?x4x8xf32>, tensor<?x4x16x8xf16>)
  return
}

// -----

func.func @checkpoint_shape(%q: tensor<2x100x2x16xf32>, %v: tensor<2x100x4x8xf32>, %g: tensor<2x100x4xf32>) {
  // expected-error @+1 {{result 'checkpoints' must have shape [B, T / N, Hv, K, V] = [2, 3, 4, 16, 8], but got 'tensor<2x4x4x16x8xf32>'}}
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g {checkpoint_every = 32 : i64} : (tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x4x8xf32>, tensor<2x100x4xf32>, tensor<2x100x4xf32>) -> (tensor<2x100x4x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x4x16x8xf32>)
  return
}

// -----

func.func @checkpoint_attribute(%q: tensor<2x100x2x16xf32>, %v: tensor<2x100x4x8xf32>, %g: tensor<2x100x4xf32>) {
  // expected-error @+1 {{result 'checkpoints' needs the attribute 'checkpoint_every'}}
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g : (tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x4x8xf32>, tensor<2x100x4xf32>, tensor<2x100x4xf32>) -> (tensor<2x100x4x8xf32>, tensor<2x4x16x8xf32>, tensor<2x3x4x16x8xf32>)
  return
}

// -----

func.func @checkpoint_every(%q: tensor<2x100x2x16xf32>, %v: tensor<2x100x4x8xf32>, %g: tensor<2x100x4xf32>) {
  // expected-error @+1 {{attribute 'checkpoint_every' must be at least 1, but got 0}}
  %o, %s, %c = gdn.delta_rule %q, %q, %v, %g, %g {checkpoint_every = 0 : i64} : (tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x4x8xf32>, tensor<2x100x4xf32>, tensor<2x100x4xf32>) -> (tensor<2x100x4x8xf32>, tensor<2x4x16x8xf32>, tensor<2x3x4x16x8xf32>)
  return
}
