// RUN: rm -f %t.out
// RUN: not gdn-compile %s -o %t.out 2>&1 | FileCheck %s
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --emit=mlir -o %t.out 2>&1 | FileCheck %s
// RUN: not test -e %t.out

// A parse error names the file, line and column, and nothing is written.

// CHECK: {{.*}}error-parse.mlir:[[@LINE+3]]:25: error: expected ':'
// CHECK-NOT: error:
func.func @f(%x: f32) -> f32 {
  %y = arith.addf %x, %x f32
  return %y : f32
}
