// The verifier of #gdn.tensor_parallel.
// RUN: gdn-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{ranks must be >= 1, got 0}}
func.func @no_ranks() attributes {plan = #gdn.tensor_parallel<ranks = 0, split = replicated, local = 0, local_key_heads = 0, collective = none>} {
  return
}

// -----

// expected-error @+1 {{a replicated op exchanges nothing, but collective = all_reduce}}
func.func @replicated_reduce() attributes {plan = #gdn.tensor_parallel<ranks = 2, split = replicated, local = 0, local_key_heads = 0, collective = all_reduce>} {
  return
}

// -----

// expected-error @+1 {{local must be >= 1 for split = heads, got 0}}
func.func @no_heads() attributes {plan = #gdn.tensor_parallel<ranks = 2, split = heads, local = 0, local_key_heads = 0, collective = all_reduce>} {
  return
}

// -----

// expected-error @+1 {{split = vocabulary is followed by collective = all_gather, got all_reduce}}
func.func @vocabulary_reduce() attributes {plan = #gdn.tensor_parallel<ranks = 2, split = vocabulary, local = 128, local_key_heads = 0, collective = all_reduce>} {
  return
}

// -----

// expected-error @+1 {{split = mlp is followed by collective = all_reduce, got none}}
func.func @mlp_alone() attributes {plan = #gdn.tensor_parallel<ranks = 2, split = mlp, local = 64, local_key_heads = 0, collective = none>} {
  return
}

// -----

// expected-error @+1 {{local_key_heads must be >= 0, got -1}}
func.func @negative_key_heads() attributes {plan = #gdn.tensor_parallel<ranks = 2, split = heads, local = 2, local_key_heads = -1, collective = all_reduce>} {
  return
}
