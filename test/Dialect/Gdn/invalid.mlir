// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// Verifier diagnostics of gdn.delta_rule and gdn.delta_rule_step. Every
// function is valid except for the one property named in its name.

//===----------------------------------------------------------------------===//
// Ranks
//===----------------------------------------------------------------------===//

func.func @delta_rule_rank_q(
    %q: tensor<2x8x2xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x4x32xf32>,
    %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>, %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'q' must have rank 4 with shape [B, T, H, K], but got 'tensor<2x8x2xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_rank_k(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16x1xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'k' must have rank 4 with shape [B, T, H, K] = [2, 8, 2, 16], but got 'tensor<2x8x2x16x1xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16x1xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_rank_v(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x128xf32>,
    %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>, %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'v' must have rank 4 with shape [B, T, Hv, V] = [2, 8, ?, ?], but got 'tensor<2x8x128xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x128xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_rank_g(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4x1xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'g' must have rank 3 with shape [B, T, Hv] = [2, 8, 4], but got 'tensor<2x8x4x1xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4x1xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_rank_beta(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'beta' must have rank 3 with shape [B, T, Hv] = [2, 8, 4], but got 'tensor<2x8xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_rank_initial_state(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16xf32>) {
  // expected-error @+1 {{operand 'initial_state' must have rank 4 with shape [B, Hv, K, V] = [2, 4, 16, 32], but got 'tensor<2x4x16xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_rank_o(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'o' must have rank 4 with shape [B, T, Hv, V] = [2, 8, 4, 32], but got 'tensor<2x8x128xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x128xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_rank_final_state(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'final_state' must have rank 4 with shape [B, Hv, K, V] = [2, 4, 16, 32], but got 'tensor<4x16x32xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_rank_q(
    %q: tensor<2x32xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'q' must have rank 3 with shape [B, H, K], but got 'tensor<2x32xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x32xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_rank_k(
    %q: tensor<2x2x16xf32>, %k: tensor<2x1x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'k' must have rank 3 with shape [B, H, K] = [2, 2, 16], but got 'tensor<2x1x2x16xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x1x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_rank_v(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32x1xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'v' must have rank 3 with shape [B, Hv, V] = [2, ?, ?], but got 'tensor<2x4x32x1xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32x1xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_rank_g(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x8x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'g' must have rank 2 with shape [B, Hv] = [2, 4], but got 'tensor<2x8x4xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_rank_beta(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<8xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'beta' must have rank 2 with shape [B, Hv] = [2, 4], but got 'tensor<8xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<8xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_rank_state(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x512xf32>) {
  // expected-error @+1 {{operand 'state' must have rank 4 with shape [B, Hv, K, V] = [2, 4, 16, 32], but got 'tensor<2x4x512xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x512xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_rank_o(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'o' must have rank 3 with shape [B, Hv, V] = [2, 4, 32], but got 'tensor<2x128xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x128xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_rank_new_state(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'new_state' must have rank 4 with shape [B, Hv, K, V] = [2, 4, 16, 32], but got 'tensor<2x4x16x32x1xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32x1xf32>)
  return
}

// -----

// Rejected by the ODS operand constraint before the custom verifier runs.
func.func @delta_rule_unranked_q(
    %q: tensor<*xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x4x32xf32>,
    %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>, %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'q' must be a ranked tensor of shape [B, T, H, K], but got 'tensor<*xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<*xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// Mismatched dimensions between operands
//===----------------------------------------------------------------------===//

func.func @delta_rule_mismatched_b(
    %q: tensor<2x8x2x16xf32>, %k: tensor<3x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'k' must have shape [B, T, H, K] = [2, 8, 2, 16] (B = 2 from operand 'q'), but got 'tensor<3x8x2x16xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<3x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

// A dimension that is dynamic in 'q' is bound by the first operand that has it static.
func.func @delta_rule_mismatched_b_bound_by_k(
    %q: tensor<?x?x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<3x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'v' must have shape [B, T, Hv, V] = [2, 8, ?, ?] (B = 2 from operand 'k'), but got 'tensor<3x8x4x32xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<?x?x2x16xf32>, tensor<2x8x2x16xf32>, tensor<3x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_mismatched_b(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<3x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'v' must have shape [B, Hv, V] = [2, ?, ?] (B = 2 from operand 'q'), but got 'tensor<3x4x32xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<3x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_mismatched_t(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x9x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'v' must have shape [B, T, Hv, V] = [2, 8, ?, ?] (T = 8 from operand 'q'), but got 'tensor<2x9x4x32xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x9x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_mismatched_h(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x4x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'k' must have shape [B, T, H, K] = [2, 8, 2, 16] (H = 2 from operand 'q'), but got 'tensor<2x8x4x16xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_mismatched_h(
    %q: tensor<2x2x16xf32>, %k: tensor<2x1x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'k' must have shape [B, H, K] = [2, 2, 16] (H = 2 from operand 'q'), but got 'tensor<2x1x16xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x1x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_mismatched_k(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x32xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'k' must have shape [B, T, H, K] = [2, 8, 2, 16] (K = 16 from operand 'q'), but got 'tensor<2x8x2x32xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x32xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_mismatched_k(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x8xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'k' must have shape [B, H, K] = [2, 2, 16] (K = 16 from operand 'q'), but got 'tensor<2x2x8xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x8xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_g_shape(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x2xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'g' must have shape [B, T, Hv] = [2, 8, 4] (Hv = 4 from operand 'v'), but got 'tensor<2x8x2xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x2xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_g_shape(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x8xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'g' must have shape [B, Hv] = [2, 4] (Hv = 4 from operand 'v'), but got 'tensor<2x8xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x8xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_beta_shape(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x4x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'beta' must have shape [B, T, Hv] = [2, 8, 4] (T = 8 from operand 'q'), but got 'tensor<2x4x4xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x4x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_beta_shape(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<1x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'beta' must have shape [B, Hv] = [2, 4] (B = 2 from operand 'q'), but got 'tensor<1x4xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<1x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_initial_state_shape(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x64xf32>) {
  // expected-error @+1 {{operand 'initial_state' must have shape [B, Hv, K, V] = [2, 4, 16, 32] (V = 32 from operand 'v'), but got 'tensor<2x4x16x64xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x64xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_state_shape(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x32x32xf32>) {
  // expected-error @+1 {{operand 'state' must have shape [B, Hv, K, V] = [2, 4, 16, 32] (K = 16 from operand 'q'), but got 'tensor<2x4x32x32xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x32x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_o_shape_hv(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'o' must have shape [B, T, Hv, V] = [2, 8, 4, 32] (Hv = 4 from operand 'v'), but got 'tensor<2x8x2x32xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x2x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_o_shape_t(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'o' must have shape [B, T, Hv, V] = [2, 8, 4, 32] (T = 8 from operand 'q'), but got 'tensor<2x16x4x32xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x16x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_o_shape(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'o' must have shape [B, Hv, V] = [2, 4, 32] (V = 32 from operand 'v'), but got 'tensor<2x4x64xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x64xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_final_state_shape(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>) {
  // expected-error @+1 {{result 'final_state' must have shape [B, Hv, K, V] = [2, 4, 16, 32] (Hv = 4 from operand 'v'), but got 'tensor<2x8x16x32xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x8x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_new_state_shape(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'new_state' must have shape [B, Hv, K, V] = [2, 4, 16, 32] (B = 2 from operand 'q'), but got 'tensor<3x4x16x32xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<3x4x16x32xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// Dimensions that must be static
//===----------------------------------------------------------------------===//

func.func @delta_rule_dynamic_h(
    %q: tensor<2x8x?x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'q' must have a static H dimension (dimension 2 of [B, T, H, K] = [2, 8, ?, ?]), but got 'tensor<2x8x?x16xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x?x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_dynamic_h(
    %q: tensor<2x2x16xf32>, %k: tensor<2x?x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'k' must have a static H dimension (dimension 1 of [B, H, K] = [2, 2, 16]), but got 'tensor<2x?x16xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x?x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_dynamic_hv(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x?x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'v' must have a static Hv dimension (dimension 2 of [B, T, Hv, V] = [2, 8, ?, ?]), but got 'tensor<2x8x?x32xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x?x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_dynamic_hv_final_state(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'final_state' must have a static Hv dimension (dimension 1 of [B, Hv, K, V] = [2, 4, 16, 32]), but got 'tensor<2x?x16x32xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x?x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_dynamic_hv(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x?x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'v' must have a static Hv dimension (dimension 1 of [B, Hv, V] = [2, ?, ?]), but got 'tensor<2x?x32xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x?x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_dynamic_hv_g(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x?xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'g' must have a static Hv dimension (dimension 1 of [B, Hv] = [2, 4]), but got 'tensor<2x?xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x?xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_dynamic_k(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x?x32xf32>) {
  // expected-error @+1 {{operand 'initial_state' must have a static K dimension (dimension 2 of [B, Hv, K, V] = [2, 4, 16, 32]), but got 'tensor<2x4x?x32xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x?x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_dynamic_k(
    %q: tensor<2x2x?xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'q' must have a static K dimension (dimension 2 of [B, H, K] = [2, 2, ?]), but got 'tensor<2x2x?xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x?xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_dynamic_v(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xf32>, %v: tensor<2x8x4x?xf32>,
    %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>, %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'v' must have a static V dimension (dimension 3 of [B, T, Hv, V] = [2, 8, 4, ?]), but got 'tensor<2x8x4x?xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x4x?xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_dynamic_v(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'o' must have a static V dimension (dimension 2 of [B, Hv, V] = [2, 4, 32]), but got 'tensor<2x4x?xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x?xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

func.func @delta_rule_q_f64(
    %q: tensor<2x8x2x16xf64>, %k: tensor<2x8x2x16xf64>,
    %v: tensor<2x8x4x32xf64>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'q' must have element type f32, bf16 or f16, but got 'f64'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf64>, tensor<2x8x2x16xf64>, tensor<2x8x4x32xf64>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf64>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_q_i32(
    %q: tensor<2x2x16xi32>, %k: tensor<2x2x16xi32>, %v: tensor<2x4x32xi32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'q' must have element type f32, bf16 or f16, but got 'i32'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xi32>, tensor<2x2x16xi32>, tensor<2x4x32xi32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xi32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_k_type(
    %q: tensor<2x8x2x16xf32>, %k: tensor<2x8x2x16xbf16>,
    %v: tensor<2x8x4x32xf32>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'k' must have the element type of 'q' ('f32'), but got 'bf16'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xbf16>, tensor<2x8x4x32xf32>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_v_type(
    %q: tensor<2x8x2x16xbf16>, %k: tensor<2x8x2x16xbf16>,
    %v: tensor<2x8x4x32xf16>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'v' must have the element type of 'q' ('bf16'), but got 'f16'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x4x32xf16>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xbf16>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_k_type(
    %q: tensor<2x2x16xbf16>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xbf16>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'k' must have the element type of 'q' ('bf16'), but got 'f32'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xbf16>, tensor<2x2x16xf32>, tensor<2x4x32xbf16>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xbf16>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_v_type(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf16>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'v' must have the element type of 'q' ('f32'), but got 'f16'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf16>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_g_type(
    %q: tensor<2x8x2x16xbf16>, %k: tensor<2x8x2x16xbf16>,
    %v: tensor<2x8x4x32xbf16>, %g: tensor<2x8x4xbf16>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'g' (log of the forget gate) must have element type f32, but got 'bf16'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x4x32xbf16>,
         tensor<2x8x4xbf16>, tensor<2x8x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xbf16>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_g_type(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf16>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'g' (log of the forget gate) must have element type f32, but got 'f16'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf16>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_beta_type(
    %q: tensor<2x8x2x16xbf16>, %k: tensor<2x8x2x16xbf16>,
    %v: tensor<2x8x4x32xbf16>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf16>,
    %h0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'beta' must have element type f32 or the element type of 'v' ('bf16'), but got 'f16'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x4x32xbf16>,
         tensor<2x8x4xf32>, tensor<2x8x4xf16>, tensor<2x4x16x32xf32>)
      -> (tensor<2x8x4x32xbf16>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_beta_type(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xbf16>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{operand 'beta' must have element type f32 or the element type of 'v' ('f32'), but got 'bf16'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xbf16>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_initial_state_type(
    %q: tensor<2x8x2x16xbf16>, %k: tensor<2x8x2x16xbf16>,
    %v: tensor<2x8x4x32xbf16>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>,
    %h0: tensor<2x4x16x32xbf16>) {
  // expected-error @+1 {{result 'final_state' must have the element type of 'initial_state' ('bf16'), but got 'f32'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x4x32xbf16>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x16x32xbf16>)
      -> (tensor<2x8x4x32xbf16>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_state_type(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf16>) {
  // expected-error @+1 {{operand 'state' must have element type f32 or bf16, but got 'f16'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf16>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_o_type(
    %q: tensor<2x8x2x16xbf16>, %k: tensor<2x8x2x16xbf16>,
    %v: tensor<2x8x4x32xbf16>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>) {
  // expected-error @+1 {{result 'o' must have the element type of 'v' ('bf16'), but got 'f32'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x4x32xbf16>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>)
      -> (tensor<2x8x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_o_type(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'o' must have the element type of 'v' ('f32'), but got 'bf16'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xbf16>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_final_state_type(
    %q: tensor<2x8x2x16xbf16>, %k: tensor<2x8x2x16xbf16>,
    %v: tensor<2x8x4x32xbf16>, %g: tensor<2x8x4xf32>, %beta: tensor<2x8x4xf32>) {
  // expected-error @+1 {{result 'final_state' must have element type f32 or bf16, but got 'f16'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<2x8x2x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x4x32xbf16>,
         tensor<2x8x4xf32>, tensor<2x8x4xf32>)
      -> (tensor<2x8x4x32xbf16>, tensor<2x4x16x32xf16>)
  return
}

// -----

func.func @delta_rule_step_new_state_type(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{result 'new_state' must have the element type of 'state' ('f32'), but got 'f16'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf16>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// Head grouping and attributes
//===----------------------------------------------------------------------===//

func.func @delta_rule_hv_not_multiple_of_h(
    %q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>,
    %v: tensor<2x8x6x32xf32>, %g: tensor<2x8x6xf32>, %beta: tensor<2x8x6xf32>,
    %h0: tensor<2x6x16x32xf32>) {
  // expected-error @+1 {{value heads Hv = 6 must be a multiple of query/key heads H = 4}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta initial_state(%h0)
      : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x6x32xf32>,
         tensor<2x8x6xf32>, tensor<2x8x6xf32>, tensor<2x6x16x32xf32>)
      -> (tensor<2x8x6x32xf32>, tensor<2x6x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_hv_less_than_h(
    %q: tensor<2x3x16xf32>, %k: tensor<2x3x16xf32>, %v: tensor<2x2x32xf32>,
    %g: tensor<2x2xf32>, %beta: tensor<2x2xf32>, %s0: tensor<2x2x16x32xf32>) {
  // expected-error @+1 {{value heads Hv = 2 must be a multiple of query/key heads H = 3}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x3x16xf32>, tensor<2x3x16xf32>, tensor<2x2x32xf32>,
         tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2x16x32xf32>)
      -> (tensor<2x2x32xf32>, tensor<2x2x16x32xf32>)
  return
}

// -----

// Rejected by the ODS attribute constraint before the custom verifier runs.
func.func @delta_rule_step_scale_f64(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x32xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) {
  // expected-error @+1 {{attribute 'scale' failed to satisfy constraint: 32-bit float attribute}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0 {scale = 1.0 : f64}
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x32xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>)
      -> (tensor<2x4x32xf32>, tensor<2x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_zero_heads(
    %q: tensor<?x?x0x16xf32>, %k: tensor<?x?x0x16xf32>, %v: tensor<?x?x4x32xf32>,
    %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>) {
  // expected-error @+1 {{operand 'q' must have a positive H dimension (dimension 2 of [B, T, H, K]), but got 'tensor<?x?x0x16xf32>'}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<?x?x0x16xf32>, tensor<?x?x0x16xf32>, tensor<?x?x4x32xf32>,
         tensor<?x?x4xf32>, tensor<?x?x4xf32>)
      -> (tensor<?x?x4x32xf32>, tensor<?x4x16x32xf32>)
  return
}

// -----

func.func @delta_rule_step_zero_value_dim(
    %q: tensor<2x2x16xf32>, %k: tensor<2x2x16xf32>, %v: tensor<2x4x0xf32>,
    %g: tensor<2x4xf32>, %beta: tensor<2x4xf32>, %s0: tensor<2x4x16x0xf32>) {
  // expected-error @+1 {{operand 'v' must have a positive V dimension (dimension 2 of [B, Hv, V] = [2, 4, ?]), but got 'tensor<2x4x0xf32>'}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %s0
      : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x0xf32>,
         tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x0xf32>)
      -> (tensor<2x4x0xf32>, tensor<2x4x16x0xf32>)
  return
}

//===----------------------------------------------------------------------===//
// Bounds and attribute values (hostile input)
//===----------------------------------------------------------------------===//

// -----

func.func @delta_rule_static_empty_batch(
    %q: tensor<0x8x1x16xf32>, %k: tensor<0x8x1x16xf32>, %v: tensor<0x8x1x16xf32>,
    %g: tensor<0x8x1xf32>, %beta: tensor<0x8x1xf32>) {
  // expected-error @+1 {{the batch B must be positive when static, but got 0}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<0x8x1x16xf32>, tensor<0x8x1x16xf32>, tensor<0x8x1x16xf32>,
         tensor<0x8x1xf32>, tensor<0x8x1xf32>)
      -> (tensor<0x8x1x16xf32>, tensor<0x1x16x16xf32>)
  return
}

// -----

func.func @delta_rule_huge_key_dim(
    %q: tensor<?x?x1x1099511627776xf32>, %k: tensor<?x?x1x1099511627776xf32>,
    %v: tensor<?x?x1x16xf32>, %g: tensor<?x?x1xf32>, %beta: tensor<?x?x1xf32>) {
  // expected-error @+1 {{K = 1099511627776 exceeds the largest supported size 1024}}
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (tensor<?x?x1x1099511627776xf32>, tensor<?x?x1x1099511627776xf32>,
         tensor<?x?x1x16xf32>, tensor<?x?x1xf32>, tensor<?x?x1xf32>)
      -> (tensor<?x?x1x16xf32>, tensor<?x1x1099511627776x16xf32>)
  return
}

// -----

func.func @delta_rule_step_nan_scale(
    %q: tensor<?x1x16xf32>, %k: tensor<?x1x16xf32>, %v: tensor<?x1x16xf32>,
    %g: tensor<?x1xf32>, %beta: tensor<?x1xf32>, %h: tensor<?x1x16x16xf32>) {
  // expected-error @+1 {{attribute 'scale' must be finite, but got nan}}
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %h {scale = 0x7FC00000 : f32}
      : (tensor<?x1x16xf32>, tensor<?x1x16xf32>, tensor<?x1x16xf32>,
         tensor<?x1xf32>, tensor<?x1xf32>, tensor<?x1x16x16xf32>)
      -> (tensor<?x1x16xf32>, tensor<?x1x16x16xf32>)
  return
}
