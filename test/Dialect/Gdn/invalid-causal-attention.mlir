// RUN: gdn-opt %s -split-input-file -verify-diagnostics

func.func @heads(%q: tensor<1x8x3x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x8xf32>) -> tensor<1x8x3x8xf32> {
  // expected-error @+1 {{the query heads (n = 3) must be a multiple of the key heads (nk = 2)}}
  %o = gdn.causal_attention %q, %k, %v {scale = 0.25 : f32} : (tensor<1x8x3x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x8xf32>) -> tensor<1x8x3x8xf32>
  return %o : tensor<1x8x3x8xf32>
}

// -----

func.func @more_queries(%q: tensor<1x9x2x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x8xf32>) -> tensor<1x9x2x8xf32> {
  // expected-error @+1 {{the queries are the last T of the S positions, so T <= S, but got T = 9 and S = 8}}
  %o = gdn.causal_attention %q, %k, %v {scale = 0.25 : f32} : (tensor<1x9x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x8xf32>) -> tensor<1x9x2x8xf32>
  return %o : tensor<1x9x2x8xf32>
}

// -----

func.func @key_width(%q: tensor<1x8x2x16xf32>, %k: tensor<1x8x2x12xf32>, %v: tensor<1x8x2x8xf32>) -> tensor<1x8x2x8xf32> {
  // expected-error @+1 {{operand 'k'}}
  %o = gdn.causal_attention %q, %k, %v {scale = 0.25 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x12xf32>, tensor<1x8x2x8xf32>) -> tensor<1x8x2x8xf32>
  return %o : tensor<1x8x2x8xf32>
}

// -----

func.func @values(%q: tensor<1x8x2x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x7x2x8xf32>) -> tensor<1x8x2x8xf32> {
  // expected-error @+1 {{operand 'v'}}
  %o = gdn.causal_attention %q, %k, %v {scale = 0.25 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x7x2x8xf32>) -> tensor<1x8x2x8xf32>
  return %o : tensor<1x8x2x8xf32>
}

// -----

func.func @block(%q: tensor<1x8x2x16xf32>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x8xf32>) -> tensor<1x8x2x8xf32> {
  // expected-error @+1 {{block must be 1..1024, but got 0}}
  %o = gdn.causal_attention %q, %k, %v {scale = 0.25 : f32, block = 0} : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x8xf32>) -> tensor<1x8x2x8xf32>
  return %o : tensor<1x8x2x8xf32>
}

// -----

func.func @element(%q: tensor<1x8x2x16xbf16>, %k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x8xf32>) -> tensor<1x8x2x8xf32> {
  // expected-error @+1 {{'q'}}
  %o = gdn.causal_attention %q, %k, %v {scale = 0.25 : f32} : (tensor<1x8x2x16xbf16>, tensor<1x8x2x16xf32>, tensor<1x8x2x8xf32>) -> tensor<1x8x2x8xf32>
  return %o : tensor<1x8x2x8xf32>
}
