// Outputs that are not regular files are written in place and never
// replaced: a character device stays a device (`-o /dev/null` as root used
// to be replaced by the linked file), and a write error on it is an error.
// A directory, or a path in a missing directory, is refused before any
// work; a symbolic link stays a link to the file it names.
// RUN: gdn-compile %s --emit=shared -o /dev/null
// RUN: test -c /dev/null
// RUN: gdn-compile %s --emit=exe -o /dev/null
// RUN: test -c /dev/null
// RUN: gdn-compile %s --emit=obj -o /dev/null
// RUN: gdn-compile %s --emit=mlir -o /dev/null
// RUN: test -c /dev/null
// RUN: not gdn-compile %s --emit=shared -o /dev/full 2>&1 | FileCheck %s --check-prefix=FULL
// RUN: not gdn-compile %s --emit=mlir -o /dev/full 2>&1 | FileCheck %s --check-prefix=FULL
// RUN: test -c /dev/full
// FULL: cannot write output '/dev/full': No space left on device

// RUN: rm -rf %t && mkdir -p %t/dir
// RUN: not gdn-compile %s --emit=shared -o %t/dir 2>&1 | FileCheck %s --check-prefix=DIR
// DIR: gdn-compile: error: cannot write output '{{.*}}dir': it is a directory
// RUN: not gdn-compile %s --emit=mlir -o %t/missing/out.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: gdn-compile: error: cannot write output '{{.*}}out.mlir': the directory '{{.*}}missing' does not exist
// RUN: echo old > %t/target.so && ln -s target.so %t/link.so
// RUN: gdn-compile %s --emit=shared -o %t/link.so
// RUN: test -L %t/link.so
// RUN: llvm-nm -D --defined-only %t/target.so | FileCheck %s --check-prefix=LINK
// LINK: T _mlir_ciface_identity
// Nothing but the outputs is left in the directory (no temporary files).
// RUN: ls %t | FileCheck %s --check-prefix=LS --implicit-check-not=partial
// LS: dir
// LS-NEXT: link.so
// LS-NEXT: target.so

func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

func.func @main() {
  return
}
