// A small gated delta-rule example: prefill four tokens for two value heads
// that share one query/key head, then decode a fifth token with
// gdn.delta_rule_step, and check that this equals a prefill over all five.
//
// Run it (scripts/main.sh does this):
//   gdn-opt examples/delta_rule.mlir --gdn-lower-to-cpu |
//     mlir-runner -e main -entry-point-result=void \
//       -shared-libs=/usr/lib/llvm-22/lib/libmlir_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so,/usr/lib/llvm-22/lib/libomp.so

!qk = tensor<1x?x1x4xf32>
!v = tensor<1x?x2x4xf32>
!gate = tensor<1x?x2xf32>
!state = tensor<1x2x4x4xf32>

func.func private @printMemrefF32(memref<*xf32>) attributes {llvm.emit_c_interface}

// Prefill: o [1, T, 2, 4] and the state after the last token.
func.func @prefill(%q: !qk, %k: !qk, %v: !v, %g: !gate, %beta: !gate)
    -> (!v, !state) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta
      : (!qk, !qk, !v, !gate, !gate) -> (!v, !state)
  return %o, %s : !v, !state
}

// Decode one token from a state.
func.func @decode(%q: tensor<1x1x4xf32>, %k: tensor<1x1x4xf32>,
                  %v: tensor<1x2x4xf32>, %g: tensor<1x2xf32>,
                  %beta: tensor<1x2xf32>, %state: !state)
    -> (tensor<1x2x4xf32>, !state) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state
      : (tensor<1x1x4xf32>, tensor<1x1x4xf32>, tensor<1x2x4xf32>,
         tensor<1x2xf32>, tensor<1x2xf32>, !state)
      -> (tensor<1x2x4xf32>, !state)
  return %o, %s : tensor<1x2x4xf32>, !state
}

func.func @print(%t: tensor<*xf32>) {
  %m = bufferization.to_buffer %t read_only : tensor<*xf32> to memref<*xf32>
  call @printMemrefF32(%m) : (memref<*xf32>) -> ()
  return
}

func.func @main() {
  // Five tokens of unit-length keys and queries.
  %q = arith.constant dense<[[[[1.0, 0.0, 0.0, 0.0]], [[0.0, 1.0, 0.0, 0.0]],
                               [[0.6, 0.8, 0.0, 0.0]], [[0.0, 0.0, 1.0, 0.0]],
                               [[0.0, 0.6, 0.0, 0.8]]]]> : tensor<1x5x1x4xf32>
  %k = arith.constant dense<[[[[0.0, 1.0, 0.0, 0.0]], [[1.0, 0.0, 0.0, 0.0]],
                               [[0.0, 0.0, 0.8, 0.6]], [[0.6, 0.0, 0.8, 0.0]],
                               [[0.0, 0.0, 0.0, 1.0]]]]> : tensor<1x5x1x4xf32>
  %v = arith.constant dense<[[[[1.0, 2.0, 3.0, 4.0], [0.5, -0.5, 0.5, -0.5]],
                              [[-1.0, 0.0, 1.0, 0.0], [2.0, 0.0, -2.0, 1.0]],
                              [[0.0, 1.0, 0.0, -1.0], [1.0, 1.0, 1.0, 1.0]],
                              [[3.0, -1.0, 0.5, 2.0], [0.0, -1.0, 0.0, 1.0]],
                              [[1.0, 1.0, -1.0, -1.0], [0.25, 0.5, 0.75, 1.0]]]]>
      : tensor<1x5x2x4xf32>
  // log of the forget gates: head 0 forgets slowly, head 1 quickly.
  %g = arith.constant dense<[[[-0.05, -1.0], [-0.05, -2.0], [0.0, -0.5],
                              [-0.1, -3.0], [-0.05, -1.0]]]> : tensor<1x5x2xf32>
  %beta = arith.constant dense<[[[0.9, 0.5], [0.8, 0.5], [0.7, 0.9],
                                 [0.6, 0.2], [0.5, 0.5]]]> : tensor<1x5x2xf32>

  // Prefill over all five tokens.
  %q5 = tensor.cast %q : tensor<1x5x1x4xf32> to !qk
  %k5 = tensor.cast %k : tensor<1x5x1x4xf32> to !qk
  %v5 = tensor.cast %v : tensor<1x5x2x4xf32> to !v
  %g5 = tensor.cast %g : tensor<1x5x2xf32> to !gate
  %b5 = tensor.cast %beta : tensor<1x5x2xf32> to !gate
  %o5, %s5 = call @prefill(%q5, %k5, %v5, %g5, %b5)
      : (!qk, !qk, !v, !gate, !gate) -> (!v, !state)

  // Prefill over four tokens, then one decode step.
  %q4s = tensor.extract_slice %q[0, 0, 0, 0] [1, 4, 1, 4] [1, 1, 1, 1]
      : tensor<1x5x1x4xf32> to tensor<1x4x1x4xf32>
  %k4s = tensor.extract_slice %k[0, 0, 0, 0] [1, 4, 1, 4] [1, 1, 1, 1]
      : tensor<1x5x1x4xf32> to tensor<1x4x1x4xf32>
  %v4s = tensor.extract_slice %v[0, 0, 0, 0] [1, 4, 2, 4] [1, 1, 1, 1]
      : tensor<1x5x2x4xf32> to tensor<1x4x2x4xf32>
  %g4s = tensor.extract_slice %g[0, 0, 0] [1, 4, 2] [1, 1, 1]
      : tensor<1x5x2xf32> to tensor<1x4x2xf32>
  %b4s = tensor.extract_slice %beta[0, 0, 0] [1, 4, 2] [1, 1, 1]
      : tensor<1x5x2xf32> to tensor<1x4x2xf32>
  %q4 = tensor.cast %q4s : tensor<1x4x1x4xf32> to !qk
  %k4 = tensor.cast %k4s : tensor<1x4x1x4xf32> to !qk
  %v4 = tensor.cast %v4s : tensor<1x4x2x4xf32> to !v
  %g4 = tensor.cast %g4s : tensor<1x4x2xf32> to !gate
  %b4 = tensor.cast %b4s : tensor<1x4x2xf32> to !gate
  %o4, %s4 = call @prefill(%q4, %k4, %v4, %g4, %b4)
      : (!qk, !qk, !v, !gate, !gate) -> (!v, !state)
  %qt = tensor.extract_slice %q[0, 4, 0, 0] [1, 1, 1, 4] [1, 1, 1, 1]
      : tensor<1x5x1x4xf32> to tensor<1x1x4xf32>
  %kt = tensor.extract_slice %k[0, 4, 0, 0] [1, 1, 1, 4] [1, 1, 1, 1]
      : tensor<1x5x1x4xf32> to tensor<1x1x4xf32>
  %vt = tensor.extract_slice %v[0, 4, 0, 0] [1, 1, 2, 4] [1, 1, 1, 1]
      : tensor<1x5x2x4xf32> to tensor<1x2x4xf32>
  %gt = tensor.extract_slice %g[0, 4, 0] [1, 1, 2] [1, 1, 1]
      : tensor<1x5x2xf32> to tensor<1x2xf32>
  %bt = tensor.extract_slice %beta[0, 4, 0] [1, 1, 2] [1, 1, 1]
      : tensor<1x5x2xf32> to tensor<1x2xf32>
  %ot, %st = call @decode(%qt, %kt, %vt, %gt, %bt, %s4)
      : (tensor<1x1x4xf32>, tensor<1x1x4xf32>, tensor<1x2x4xf32>,
         tensor<1x2xf32>, tensor<1x2xf32>, !state) -> (tensor<1x2x4xf32>, !state)

  // Outputs of the prefill over five tokens.
  %o5u = tensor.cast %o5 : !v to tensor<*xf32>
  call @print(%o5u) : (tensor<*xf32>) -> ()
  // Output of the decode step: equals token 4 of the prefill above.
  %otu = tensor.cast %ot : tensor<1x2x4xf32> to tensor<*xf32>
  call @print(%otu) : (tensor<*xf32>) -> ()
  // Largest difference between the two final states (expected: ~0).
  %zero = arith.constant dense<0.0> : tensor<f32>
  %diff = linalg.generic {
      indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>,
                       affine_map<(a, b, c, d) -> (a, b, c, d)>,
                       affine_map<(a, b, c, d) -> ()>],
      iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%s5, %st : !state, !state) outs(%zero : tensor<f32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %d = arith.subf %x, %y : f32
      %a = math.absf %d : f32
      %m = arith.maximumf %acc, %a : f32
      linalg.yield %m : f32
  } -> tensor<f32>
  %diffu = tensor.cast %diff : tensor<f32> to tensor<*xf32>
  call @print(%diffu) : (tensor<*xf32>) -> ()
  return
}
