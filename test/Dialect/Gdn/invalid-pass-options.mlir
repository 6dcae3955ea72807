// Known defect, recorded here so that it is not lost: the diagnostics for an
// invalid option value of gdn-chunk-delta-rule and gdn-cpu-vectorize print
// the value as one raw byte instead of a number ("but got \x00" for 0,
// "but got \x08 and \x14" for 8 and 20). The pass options are
// Pass::Option<int64_t>, and `diag << option` converts them to `char`, the
// only viable Diagnostic::operator<< overload; `diag << option.getValue()`
// prints the number. When that is fixed this test passes unexpectedly:
// remove the XFAIL line then.
// XFAIL: *

// RUN: not gdn-opt %s -gdn-chunk-delta-rule=chunk-size=0 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CHUNK
// RUN: not gdn-opt %s -gdn-cpu-vectorize=matmul-tile-n=20 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TILE

// CHUNK: error: gdn-chunk-delta-rule: chunk-size must be positive, but got 0{{$}}
// TILE: error: gdn-cpu-vectorize: matmul-tile-m must be positive and matmul-tile-n a multiple of 16, but got 8 and 20{{$}}

func.func @f() {
  return
}
