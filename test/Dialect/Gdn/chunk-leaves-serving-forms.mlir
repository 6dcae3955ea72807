// RUN: gdn-opt %s -split-input-file -gdn-chunk-delta-rule -gdn-parallelize-delta-rule-step | FileCheck %s

// The CPU's fast forms take only the dense ops: raw gates and bf16 states
// are left for gdn-unpack-sequences (which the CPU pipeline runs first),
// not chunked as if a and b were the gates.

// CHECK-LABEL: func.func @gated_prefill
// CHECK: gdn.delta_rule {{.*}} gates(
func.func @gated_prefill(%q: tensor<1x128x2x16xf32>, %v: tensor<1x128x4x16xf32>, %a: tensor<1x128x4xf32>, %alog: tensor<4xf32>) -> tensor<1x128x4x16xf32> {
  %o, %s = gdn.delta_rule %q, %q, %v, %a, %a gates(%alog, %alog) : (tensor<1x128x2x16xf32>, tensor<1x128x2x16xf32>, tensor<1x128x4x16xf32>, tensor<1x128x4xf32>, tensor<1x128x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x128x4x16xf32>, tensor<1x4x16x16xf32>)
  return %o : tensor<1x128x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @bf16_state_prefill
// CHECK: gdn.delta_rule {{.*}} -> (tensor<1x128x4x16xf32>, tensor<1x4x16x16xbf16>)
func.func @bf16_state_prefill(%q: tensor<1x128x2x16xf32>, %v: tensor<1x128x4x16xf32>, %g: tensor<1x128x4xf32>, %h: tensor<1x4x16x16xbf16>) -> tensor<1x4x16x16xbf16> {
  %o, %s = gdn.delta_rule %q, %q, %v, %g, %g initial_state(%h) : (tensor<1x128x2x16xf32>, tensor<1x128x2x16xf32>, tensor<1x128x4x16xf32>, tensor<1x128x4xf32>, tensor<1x128x4xf32>, tensor<1x4x16x16xbf16>) -> (tensor<1x128x4x16xf32>, tensor<1x4x16x16xbf16>)
  return %s : tensor<1x4x16x16xbf16>
}

// -----

// CHECK-LABEL: func.func @gated_step
// CHECK: gdn.delta_rule_step {{.*}} gates(
func.func @gated_step(%q: tensor<2x2x16xf32>, %v: tensor<2x4x16xf32>, %a: tensor<2x4xf32>, %s0: tensor<2x4x16x16xf32>, %alog: tensor<4xf32>) -> tensor<2x4x16xf32> {
  %o, %s = gdn.delta_rule_step %q, %q, %v, %a, %a, %s0 gates(%alog, %alog) : (tensor<2x2x16xf32>, tensor<2x2x16xf32>, tensor<2x4x16xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4x16x16xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x16x16xf32>)
  return %o : tensor<2x4x16xf32>
}
