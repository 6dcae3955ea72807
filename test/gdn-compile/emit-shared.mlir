// RUN: gdn-compile %s --emit=shared -o %t.so
// RUN: /usr/lib/llvm-22/bin/llvm-nm -D --defined-only %t.so | FileCheck %s
// RUN: /usr/lib/llvm-22/bin/llvm-nm -D --defined-only %t.so | FileCheck %s --check-prefix=PRIVATE
// The dependencies are those of a normal build (a sanitized one adds its runtime).
// RUN: %if !sanitized %{ /usr/lib/llvm-22/bin/llvm-readelf --dynamic %t.so | FileCheck %s --check-prefix=DYNAMIC --implicit-check-not=libmlir --implicit-check-not=libLLVM %}
// --emit=shared is the default.
// RUN: gdn-compile %s -o %t.default.so
// RUN: /usr/lib/llvm-22/bin/llvm-nm -D --defined-only %t.default.so | FileCheck %s

// Every public function with a body is exported as _mlir_ciface_<name>
// (docs/c-abi.md); the library finds libomp through its RUNPATH and needs
// no MLIR or LLVM library (memrefCopy comes from runtime/CPU).

// CHECK-DAG: T _mlir_ciface_decode{{$}}
// CHECK-DAG: T _mlir_ciface_prefill{{$}}
// Nothing else is exported (docs/c-abi.md): no private function, no helper
// of MLIR's, no runtime function.
// PRIVATE-NOT: helper
// PRIVATE-NOT: memrefCopy

// DYNAMIC-DAG: (NEEDED) Shared library: [libomp.so{{.*}}]
// DYNAMIC-DAG: (RUNPATH) Library runpath: [/usr/lib/llvm-22/lib]

func.func @prefill(%q: tensor<?x?x1x8xf32>, %k: tensor<?x?x1x8xf32>, %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>
}

func.func @decode(%q: tensor<?x1x8xf32>, %k: tensor<?x1x8xf32>, %v: tensor<?x2x16xf32>, %g: tensor<?x2xf32>, %beta: tensor<?x2xf32>, %state: tensor<?x2x8x16xf32>) -> (tensor<?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x2x16xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x8x16xf32>) -> (tensor<?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x2x16xf32>, tensor<?x2x8x16xf32>
}

// Private: no C interface.
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
