// RUN: rm -f %t.so
// RUN: not gdn-compile %s --emit=shared -o %t.so 2>&1 | FileCheck %s
// RUN: not test -e %t.so
// RUN: not test -e %t.so.partial
// Without out-parameters (every other stage) the module compiles.
// RUN: gdn-compile %s --emit=obj -o %t.o

// A failure late in the pipeline is reported at its op, then as a failed
// stage; no output is left. Here a public function with dynamically shaped
// results is called inside the module, which the out-parameter convention
// of --emit=shared cannot express (docs/c-abi.md).

// CHECK: {{.*}}error-lowering.mlir:[[@LINE+9]]:12: error: cannot create out param for dynamically shaped result
// CHECK: error: lowering failed in stage 'linalg-to-llvm'

func.func @prefill(%q: tensor<?x?x1x8xf32>, %k: tensor<?x?x1x8xf32>, %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>
}

func.func @final_state(%q: tensor<?x?x1x8xf32>, %k: tensor<?x?x1x8xf32>, %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> tensor<?x2x8x16xf32> {
  %o, %s = func.call @prefill(%q, %k, %v, %g, %beta) : (tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %s : tensor<?x2x8x16xf32>
}
