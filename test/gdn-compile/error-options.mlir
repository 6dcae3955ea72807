// RUN: rm -f %t.out
// RUN: not gdn-compile %s --emit=bogus -o %t.out 2>&1 | FileCheck %s --check-prefix=EMIT
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --emit=mlir-linalg --chunk-size=0 -o %t.out 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CHUNK
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --chunk-size=-16 -o %t.out 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --delta-rule-form=bogus -o %t.out 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not test -e %t.out
// RUN: not gdn-compile %s --target=cuda -o %t.out 2>&1 | FileCheck %s --check-prefix=CUDA
// RUN: not test -e %t.out
// RUN: not gdn-compile %s 2>&1 | FileCheck %s --check-prefix=NO-OUTPUT

// Invalid options fail before anything is written.

// EMIT: gdn-compile: for the --emit option: Cannot find option named 'bogus'!
// CHUNK: error: --chunk-size must be positive, but got 0{{$}}
// NEGATIVE: error: --chunk-size must be positive, but got -16{{$}}
// FORM: gdn-compile: for the --delta-rule-form option: Cannot find option named 'bogus'!
// CUDA: error: --target=cuda is not supported by this build of gdn-compile
// NO-OUTPUT: gdn-compile: for the -o option: must be specified at least once!

func.func @prefill(%q: tensor<?x?x1x8xf32>, %k: tensor<?x?x1x8xf32>, %v: tensor<?x?x2x16xf32>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>) {
  %o, %s = gdn.delta_rule %q, %k, %v, %g, %beta : (tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>)
  return %o, %s : tensor<?x?x2x16xf32>, tensor<?x2x8x16xf32>
}
