// RUN: gdn-compile %s --emit=obj -o %t.o
// RUN: /usr/lib/llvm-22/bin/llvm-nm %t.o | FileCheck %s
// RUN: /usr/lib/llvm-22/bin/llvm-nm %t.o | FileCheck %s --check-prefix=NO-CIFACE
// RUN: /usr/lib/llvm-22/bin/llvm-readobj --file-headers %t.o | FileCheck %s --check-prefix=HEADER

// --emit=obj writes a relocatable object for the host: the public functions
// are defined (without C interface wrappers, which only --emit=shared adds),
// and libomp and the C runner utilities are left for the link.

// CHECK-DAG: {{^}}{{[0-9a-f]+}} T decode{{$}}
// CHECK-DAG: {{^}}{{[0-9a-f]+}} T prefill{{$}}
// CHECK-DAG: U __kmpc_fork_call
// NO-CIFACE-NOT: _mlir_ciface

// HEADER: Type: Relocatable

func.func @prefill(%q: tensor<?x?x1x8xf32>, %k: tensor<?x?x1x8xf32>, %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>
}

func.func @decode(%q: tensor<?x1x8xf32>, %k: tensor<?x1x8xf32>, %v: tensor<?x2x16xf32>, %g: tensor<?x2xf32>, %beta: tensor<?x2xf32>, %state: tensor<?x2x8x16xf32>) -> (tensor<?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule_step %q, %k, %v, %g, %beta, %state : (tensor<?x1x8xf32>, tensor<?x1x8xf32>, tensor<?x2x16xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x8x16xf32>) -> (tensor<?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x2x16xf32>, tensor<?x2x8x16xf32>
}
