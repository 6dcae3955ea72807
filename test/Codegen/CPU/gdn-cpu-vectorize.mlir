// RUN: gdn-opt %s -split-input-file -gdn-cpu-vectorize | FileCheck %s
// RUN: gdn-opt %s -split-input-file -gdn-cpu-vectorize="matmul-tile-m=4 matmul-tile-n=16" \
// RUN:   | FileCheck %s --check-prefix=SMALL
// RUN: not gdn-opt %s -split-input-file -gdn-cpu-vectorize=matmul-tile-n=20 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-N
// RUN: not gdn-opt %s -split-input-file -gdn-cpu-vectorize=matmul-tile-m=0 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD-M

// BAD-N: error: gdn-cpu-vectorize: matmul-tile-m must be positive and matmul-tile-n a multiple of 16, but got 8 and 20{{$}}
// BAD-M: error: gdn-cpu-vectorize: matmul-tile-m must be positive and matmul-tile-n a multiple of 16, but got 0 and 32{{$}}

// A 16x32 by 32x32 matmul on the default 8 x 32 register tile: two row
// blocks, the accumulator tile loaded before and stored after the reduction
// loop, and in it one broadcast A element times a row-major B vector per
// accumulator row.

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<16x32xf32>, %[[B:[a-z0-9]+]]: memref<32x32xf32>, %[[C:[a-z0-9]+]]: memref<16x32xf32>)
// CHECK-NOT: linalg.matmul
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK: scf.for %[[I:.+]] = %[[C0]] to %[[C16]] step %[[C8]] {
// CHECK-COUNT-8: vector.load %[[C]][%{{.+}}, %[[C0]]] : memref<16x32xf32>, vector<32xf32>
// CHECK: %[[ACC:.+]] = scf.for %[[KK:.+]] = %[[C0]] to %[[C32]] step %[[C1]] iter_args(%[[TILE:.+]] = %{{.+}}) -> (vector<8x32xf32>)
// CHECK: %[[AE:.+]] = vector.load %[[A]][%[[I]], %[[KK]]] : memref<16x32xf32>, vector<1xf32>
// CHECK: %[[BROW:.+]] = vector.load %[[B]][%[[KK]], %[[C0]]] : memref<32x32xf32>, vector<32xf32>
// CHECK: %[[AS:.+]] = vector.extract %[[AE]][0] : f32 from vector<1xf32>
// CHECK: %[[ABC:.+]] = vector.broadcast %[[AS]] : f32 to vector<32xf32>
// CHECK: %[[ROW0:.+]] = vector.extract %[[TILE]][0] : vector<32xf32> from vector<8x32xf32>
// CHECK: vector.fma %[[ABC]], %[[BROW]], %[[ROW0]] : vector<32xf32>
// CHECK-COUNT-7: vector.fma %{{.+}}, %[[BROW]], %{{.+}} : vector<32xf32>
// CHECK-NOT: vector.fma
// CHECK: scf.yield %{{.+}} : vector<8x32xf32>
// CHECK: vector.extract %[[ACC]][0] : vector<32xf32> from vector<8x32xf32>
// CHECK-NEXT: vector.store %{{.+}}, %[[C]][%[[I]], %[[C0]]] : memref<16x32xf32>, vector<32xf32>
// CHECK-COUNT-7: vector.store
// CHECK-NOT: linalg.matmul
// CHECK: return

// The 4 x 16 tile: four row blocks, two column blocks (N outer).
// SMALL-LABEL: func.func @matmul
// SMALL-NOT: linalg.matmul
// SMALL-DAG: %[[C4:.+]] = arith.constant 4 : index
// SMALL-DAG: %[[C16:.+]] = arith.constant 16 : index
// SMALL-DAG: %[[C32:.+]] = arith.constant 32 : index
// SMALL: scf.for %{{.+}} = %{{.+}} to %[[C32]] step %[[C16]] {
// SMALL-NEXT: scf.for %{{.+}} = %{{.+}} to %[[C16]] step %[[C4]] {
// SMALL: scf.for {{.+}} -> (vector<4x16xf32>)
// SMALL-COUNT-4: vector.fma {{.+}} : vector<16xf32>
// SMALL-NOT: vector.fma
// SMALL: scf.yield %{{.+}} : vector<4x16xf32>
// SMALL-NOT: linalg.matmul
// SMALL: return
func.func @matmul(%a: memref<16x32xf32>, %b: memref<32x32xf32>, %c: memref<16x32xf32>) {
  linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x32xf32>) outs(%c : memref<16x32xf32>)
  return
}

// -----

// N = 64 is two register tiles wide: the N loop is outermost.

// CHECK-LABEL: func.func @wide
// CHECK-NOT: linalg.matmul
// CHECK-DAG: %[[C32:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %[[C64]] step %[[C32]] {
// CHECK-NEXT: scf.for %[[I:.+]] = %{{.+}} to %[[C16]] step %[[C8]] {
// CHECK: vector.load %{{.+}}[%[[I]], %[[J]]] : memref<16x64xf32>, vector<32xf32>
// CHECK-COUNT-8: vector.fma {{.+}} : vector<32xf32>
// CHECK: vector.store %{{.+}}, %{{.+}}[%[[I]], %[[J]]] : memref<16x64xf32>, vector<32xf32>
// CHECK-NOT: linalg.matmul
// CHECK: return
// SMALL-LABEL: func.func @wide
// SMALL-COUNT-4: vector.fma {{.+}} : vector<16xf32>
// SMALL-NOT: linalg.matmul
func.func @wide(%a: memref<16x8xf32>, %b: memref<8x64xf32>, %c: memref<16x64xf32>) {
  linalg.matmul ins(%a, %b : memref<16x8xf32>, memref<8x64xf32>) outs(%c : memref<16x64xf32>)
  return
}

// -----

// Sizes that do not divide the register tile (5 x 7) and dynamic sizes have
// no schedule: the matmuls stay for convert-linalg-to-loops. So does a
// matmul on tensors.

// CHECK-LABEL: func.func @odd
// CHECK-NOT: vector.
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : memref<5x3xf32>, memref<3x7xf32>) outs(%{{.+}} : memref<5x7xf32>)
// CHECK-NOT: vector.
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : memref<?x32xf32>, memref<32x32xf32>) outs(%{{.+}} : memref<?x32xf32>)
// CHECK-NOT: vector.
// CHECK: linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<16x32xf32>, tensor<32x32xf32>) outs(%{{.+}} : tensor<16x32xf32>)
// CHECK-NOT: vector.
// CHECK: return
// SMALL-LABEL: func.func @odd
// SMALL-NOT: vector.
// SMALL: return
func.func @odd(%a: memref<5x3xf32>, %b: memref<3x7xf32>, %c: memref<5x7xf32>, %d: memref<?x32xf32>, %e: memref<32x32xf32>, %f: memref<?x32xf32>, %t: tensor<16x32xf32>, %u: tensor<32x32xf32>, %v: tensor<16x32xf32>) -> tensor<16x32xf32> {
  linalg.matmul ins(%a, %b : memref<5x3xf32>, memref<3x7xf32>) outs(%c : memref<5x7xf32>)
  linalg.matmul ins(%d, %e : memref<?x32xf32>, memref<32x32xf32>) outs(%f : memref<?x32xf32>)
  %r = linalg.matmul ins(%t, %u : tensor<16x32xf32>, tensor<32x32xf32>) outs(%v : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %r : tensor<16x32xf32>
}

// -----

// A 16 x 8 by 8 x 16 matmul is narrower than the default 32 columns: it
// stays, but a 16-column tile takes it.

// CHECK-LABEL: func.func @narrow
// CHECK-NOT: vector.
// CHECK: linalg.matmul
// SMALL-LABEL: func.func @narrow
// SMALL-NOT: linalg.matmul
// SMALL: vector.fma
// SMALL-NOT: linalg.matmul
// SMALL: return
func.func @narrow(%a: memref<16x8xf32>, %b: memref<8x16xf32>, %c: memref<16x16xf32>) {
  linalg.matmul ins(%a, %b : memref<16x8xf32>, memref<8x16xf32>) outs(%c : memref<16x16xf32>)
  return
}

// -----

// vecmat: the widest accumulator (up to 128 lanes) that divides the output,
// whatever the matmul register tile.

// CHECK-LABEL: func.func @vecmat
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<16xf32>, %[[M:[a-z0-9]+]]: memref<16x32xf32>, %[[Y:[a-z0-9]+]]: memref<32xf32>)
// CHECK-NOT: linalg.vecmat
// CHECK: %[[INIT:.+]] = vector.load %[[Y]][%{{.+}}] : memref<32xf32>, vector<32xf32>
// CHECK: %[[SUM:.+]] = scf.for %{{.+}} iter_args(%[[ACC:.+]] = %[[INIT]]) -> (vector<32xf32>)
// CHECK: %[[ROW:.+]] = vector.load %[[M]][%{{.+}}, %{{.+}}] : memref<16x32xf32>, vector<32xf32>
// CHECK: %[[XB:.+]] = vector.broadcast %{{.+}} : f32 to vector<32xf32>
// CHECK: %[[NEXT:.+]] = vector.fma %[[ROW]], %[[XB]], %[[ACC]] : vector<32xf32>
// CHECK: scf.yield %[[NEXT]]
// CHECK: vector.store %[[SUM]], %[[Y]][%{{.+}}] : memref<32xf32>, vector<32xf32>
// SMALL-LABEL: func.func @vecmat
// SMALL: scf.for {{.+}} -> (vector<32xf32>)
func.func @vecmat(%x: memref<16xf32>, %m: memref<16x32xf32>, %y: memref<32xf32>) {
  linalg.vecmat ins(%x, %m : memref<16xf32>, memref<16x32xf32>) outs(%y : memref<32xf32>)
  return
}

// -----

// transpose: 16 x 16 blocks of 16-wide loads, shuffles and stores.

// CHECK-LABEL: func.func @transpose
// CHECK-NOT: linalg.transpose
// CHECK: scf.for
// CHECK-COUNT-16: vector.load {{.+}} : memref<32x16xf32>, vector<16xf32>
// CHECK: vector.shuffle
// CHECK: vector.store {{.+}} : memref<16x32xf32>, vector<16xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return
// SMALL-LABEL: func.func @transpose
// SMALL-NOT: linalg.transpose
func.func @transpose(%x: memref<32x16xf32>, %y: memref<16x32xf32>) {
  linalg.transpose ins(%x : memref<32x16xf32>) outs(%y : memref<16x32xf32>) permutation = [1, 0]
  return
}

// -----

// rows: a two-dimensional element-wise op one vector row at a time, with
// math.exp replaced by its polynomial approximation.

// CHECK-LABEL: func.func @rows
// CHECK-NOT: linalg.generic
// CHECK: scf.for %[[R:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: vector.load %{{.+}}[%[[R]], %{{.+}}] : memref<8x32xf32>, vector<32xf32>
// CHECK-NOT: math.exp
// CHECK: math.fma {{.+}} : vector<32xf32>
// CHECK-NOT: math.exp
// CHECK: vector.store %{{.+}}, %{{.+}}[%[[R]], %{{.+}}] : memref<8x32xf32>, vector<32xf32>
// SMALL-LABEL: func.func @rows
// SMALL-NOT: math.exp
func.func @rows(%x: memref<8x32xf32>, %y: memref<8x32xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<8x32xf32>) outs(%y : memref<8x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// whole: a one-dimensional element-wise op as one vector.

// CHECK-LABEL: func.func @whole
// CHECK-SAME: (%[[X:[a-z0-9]+]]: memref<64xf32>, %[[Y:[a-z0-9]+]]: memref<64xf32>)
// CHECK-NOT: linalg.generic
// CHECK-NOT: scf.for
// CHECK: %[[XV:.+]] = vector.load %[[X]][%{{.+}}] : memref<64xf32>, vector<64xf32>
// CHECK: %[[YV:.+]] = vector.load %[[Y]][%{{.+}}] : memref<64xf32>, vector<64xf32>
// CHECK: %[[SUM:.+]] = arith.addf %[[XV]], %[[YV]] : vector<64xf32>
// CHECK: vector.store %[[SUM]], %[[Y]][%{{.+}}] : memref<64xf32>, vector<64xf32>
// SMALL-LABEL: func.func @whole
// SMALL-NOT: linalg.generic
func.func @whole(%x: memref<64xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : memref<64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Rows wider than 4096 elements go in pieces of 512; a generic that reads
// its input transposed (a bf16 weight widened as it is transposed) takes the
// 16 x 16 transpose blocks instead of rows (a row would gather a column).
// RUN: gdn-opt %s -split-input-file -gdn-cpu-vectorize=annotate-only=true | FileCheck %s --check-prefix=WIDE
// WIDE-LABEL: func.func @wide_and_transposed
// WIDE: linalg.generic {{.*}}gdn.cpu_schedule = "row-pieces"
// WIDE: linalg.generic {{.*}}gdn.cpu_schedule = "transpose"
// WIDE: linalg.generic {{.*}}gdn.cpu_schedule = "rows"
// CHECK-LABEL: func.func @wide_and_transposed
// CHECK-NOT: linalg.generic
// CHECK-NOT: vector<8192xf32>
// CHECK: vector<512xf32>
// CHECK-NOT: vector<8192xf32>
func.func @wide_and_transposed(%x: memref<2x8192xf32>, %y: memref<2x8192xf32>,
                               %w: memref<64x32xbf16>, %t: memref<32x64xf32>,
                               %a: memref<4x4096xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<2x8192xf32>) outs(%y : memref<2x8192xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (j, i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%w : memref<64x32xbf16>) outs(%t : memref<32x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%a : memref<4x4096xf32>) {
  ^bb0(%out: f32):
    %d = arith.addf %out, %out : f32
    linalg.yield %d : f32
  }
  return
}

// -----

// annotate-only records the schedule and transforms nothing.
// RUN: gdn-opt %s -split-input-file -gdn-cpu-vectorize=annotate-only=true | FileCheck %s --check-prefix=ANNOTATE
// ANNOTATE-LABEL: func.func @annotate
// ANNOTATE: linalg.matmul {gdn.cpu_schedule = "matmul"}
// ANNOTATE-NOT: vector.
func.func @annotate(%a: memref<16x32xf32>, %b: memref<32x32xf32>, %c: memref<16x32xf32>) {
  linalg.matmul ins(%a, %b : memref<16x32xf32>, memref<32x32xf32>) outs(%c : memref<16x32xf32>)
  return
}

// -----

// Attention over a cache of dynamic length (the absorbed MLA decode): the
// scores are dot products along a static latent of 256 (the reduction
// innermost), the attended latents running sums of latent rows over the
// keys (the reduction just outside the latent). The scores go 16 keys at a
// time: each 16 x 16 tile of latents transposed in registers, one FMA per
// head and channel into a vector of 16 keys' scores per head; the keys past
// the last whole block take the heads inside each key, on loops. The
// attended latents of 12 heads of 256 would not fit in registers together:
// a task per (batch, token, head) and a loop over the keys, the running sum
// kept in registers across them. A weight read along a strided dimension
// keeps its loops.
// RUN: gdn-opt %s -split-input-file -gdn-cpu-vectorize=annotate-only=true | FileCheck %s --check-prefix=INNER
// INNER-LABEL: func.func @attention_over_keys
// INNER: linalg.generic {{.*}}gdn.cpu_schedule = "key-blocks5"
// INNER: linalg.generic {{.*}}gdn.cpu_schedule = "innermost5"
// INNER: linalg.generic
// INNER-NOT: gdn.cpu_schedule
// INNER-SAME: iterator_types
// SMALL-LABEL: func.func @attention_over_keys
// CHECK-LABEL: func.func @attention_over_keys
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: memref<?x?x12x256xf32>, %[[LAT:[a-z0-9]+]]: memref<?x?x256xf32>, %[[S:[a-z0-9]+]]: memref<?x12x?x?xf32>, %[[P:[a-z0-9]+]]: memref<?x12x?x?xf32>, %[[A:[a-z0-9]+]]: memref<?x?x12x256xf32>
// CHECK: %[[BLOCKS:.+]] = arith.divui %{{.+}}, %c16
// CHECK: scf.forall (%[[B:.+]], %[[T:.+]], %[[BLOCK:.+]]) in (%{{.+}}, %{{.+}}, %[[BLOCKS]]) {
// CHECK-COUNT-12: vector.load %[[S]]{{.+}} : memref<?x12x?x?xf32>, vector<16xf32>
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-16: vector.load %[[LAT]]{{.+}} : memref<?x?x256xf32>, vector<16xf32>
// CHECK: vector.shuffle
// CHECK: vector.fma {{.+}} : vector<16xf32>
// CHECK-NOT: vector.reduction
// CHECK: scf.yield
// CHECK-COUNT-12: vector.store {{.+}}, %[[S]]{{.+}} : memref<?x12x?x?xf32>, vector<16xf32>
// CHECK-NOT: scf.forall
// CHECK: scf.for %[[KEY:.+]] = %{{.+}} to %{{.+}} step
// CHECK: vector.load %[[LAT]]{{.+}} : memref<?x?x256xf32>, vector<256xf32>
// CHECK: scf.for %[[N:.+]] = %{{.+}} to %{{.+}} step
// CHECK: vector.reduction <add>, {{.+}} : vector<256xf32> into f32
// CHECK: scf.forall (%[[B2:.+]], %[[T2:.+]], %[[N2:.+]]) in (%{{.+}}, %{{.+}}, 12) {
// CHECK: %[[INIT:.+]] = vector.load %[[A]][%[[B2]], %[[T2]], %[[N2]], %{{.+}}] : memref<?x?x12x256xf32>, vector<256xf32>
// CHECK: %[[SUM:.+]] = scf.for {{.+}} iter_args(%[[SOFAR:.+]] = %[[INIT]]) -> (vector<256xf32>) {
// CHECK: vector.load %[[LAT]]{{.+}} : memref<?x?x256xf32>, vector<256xf32>
// CHECK: arith.addf %[[SOFAR]], %{{.+}} : vector<256xf32>
// CHECK: vector.store %[[SUM]], %[[A]][%[[B2]], %[[T2]], %[[N2]], %{{.+}}] : memref<?x?x12x256xf32>, vector<256xf32>
// CHECK: linalg.generic
func.func @attention_over_keys(%q: memref<?x?x12x256xf32>, %lat: memref<?x?x256xf32>,
                               %s: memref<?x12x?x?xf32>, %p: memref<?x12x?x?xf32>,
                               %a: memref<?x?x12x256xf32>, %w: memref<12x64x256xf32>,
                               %x: memref<?x?x12x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, n, t, s, r) -> (b, t, n, r)>, affine_map<(b, n, t, s, r) -> (b, s, r)>, affine_map<(b, n, t, s, r) -> (b, n, t, s)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %lat : memref<?x?x12x256xf32>, memref<?x?x256xf32>) outs(%s : memref<?x12x?x?xf32>) {
  ^bb0(%in: f32, %k: f32, %out: f32):
    %m = arith.mulf %in, %k : f32
    %d = arith.addf %out, %m : f32
    linalg.yield %d : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, t, n, s, r) -> (b, n, t, s)>, affine_map<(b, t, n, s, r) -> (b, s, r)>, affine_map<(b, t, n, s, r) -> (b, t, n, r)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%p, %lat : memref<?x12x?x?xf32>, memref<?x?x256xf32>) outs(%a : memref<?x?x12x256xf32>) {
  ^bb0(%in: f32, %k: f32, %out: f32):
    %m = arith.mulf %in, %k : f32
    %d = arith.addf %out, %m : f32
    linalg.yield %d : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, t, n, r, d) -> (b, t, n, d)>, affine_map<(b, t, n, r, d) -> (n, d, r)>, affine_map<(b, t, n, r, d) -> (b, t, n, r)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x?x12x64xf32>, memref<12x64x256xf32>) outs(%a : memref<?x?x12x256xf32>) {
  ^bb0(%in: f32, %k: f32, %out: f32):
    %m = arith.mulf %in, %k : f32
    %d = arith.addf %out, %m : f32
    linalg.yield %d : f32
  }
  return
}

// -----

// A sum of squares over a static width per token: no static loop to give
// tasks, so the leading loops stay scf.for (a decode step's norm would be
// a parallel region of one tiny task), the width one vector.
// RUN: gdn-opt %s -split-input-file -gdn-cpu-vectorize=annotate-only=true | FileCheck %s --check-prefix=INNER
// INNER-LABEL: func.func @norm_per_token
// INNER: linalg.generic {{.*}}gdn.cpu_schedule = "innermost-loops3"
// SMALL-LABEL: func.func @norm_per_token
// CHECK-LABEL: func.func @norm_per_token
// CHECK-NOT: scf.forall
// CHECK: scf.for
// CHECK: scf.for
// CHECK: vector.load {{.+}} : memref<?x?x256xf32>, vector<256xf32>
// CHECK: vector.reduction <add>, {{.+}} : vector<256xf32> into f32
// CHECK-NOT: linalg.generic
func.func @norm_per_token(%x: memref<?x?x256xf32>, %s: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, t, d) -> (b, t, d)>, affine_map<(b, t, d) -> (b, t)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : memref<?x?x256xf32>) outs(%s : memref<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    %d = arith.addf %out, %m : f32
    linalg.yield %d : f32
  }
  return
}

// -----

// Generics the innermost schedules leave to loops: a maximum written as a
// compare and select (no combiner the vector reductions know), and an
// output without the token loop (tasks over tokens would race on it).
// RUN: gdn-opt %s -split-input-file -gdn-cpu-vectorize=annotate-only=true | FileCheck %s --check-prefix=INNER
// INNER-LABEL: func.func @not_innermost
// INNER-NOT: gdn.cpu_schedule
// SMALL-LABEL: func.func @not_innermost
// CHECK-LABEL: func.func @not_innermost
// CHECK-COUNT-2: linalg.generic
func.func @not_innermost(%x: memref<?x?x256xf32>, %m: memref<?x?xf32>, %s: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, t, d) -> (b, t, d)>, affine_map<(b, t, d) -> (b, t)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : memref<?x?x256xf32>) outs(%m : memref<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %gt = arith.cmpf ogt, %in, %out : f32
    %r = arith.select %gt, %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, t, d) -> (b, t, d)>, affine_map<(b, t, d) -> (b)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : memref<?x?x256xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  }
  return
}

// -----

// The causal softmax over the keys of a cache (dynamic, innermost): the
// mask and scale, the row maximum, the exponentials and the division each
// take the keys in pieces of 16 lanes, a task per (batch, head, token); the
// last partial piece is peeled off and stays a generic on loops. A row
// without a static loop of tasks (one head) takes its pieces in loops.
// RUN: gdn-opt %s -split-input-file -gdn-cpu-vectorize=annotate-only=true | FileCheck %s --check-prefix=PIECES
// PIECES-LABEL: func.func @softmax_over_keys
// PIECES-COUNT-4: linalg.generic {{.*}}gdn.cpu_schedule = "pieces4"
// PIECES: linalg.generic {{.*}}gdn.cpu_schedule = "pieces-loops2"
// INNER-LABEL: func.func @softmax_over_keys
// SMALL-LABEL: func.func @softmax_over_keys
// CHECK-LABEL: func.func @softmax_over_keys
// CHECK-SAME: (%[[S:[a-z0-9]+]]: memref<?x12x?x?xf32>, %[[M:[a-z0-9]+]]: memref<?x12x?xf32>
// CHECK: %[[WHOLE:.+]] = affine.apply #{{.+}}()[%[[KEYS:.+]]]
// CHECK: scf.forall (%[[B:.+]], %[[N:.+]], %[[T:.+]]) in (%{{.+}}, 12, %{{.+}}) {
// CHECK: scf.for %[[KEY:.+]] = %{{.+}} to %[[WHOLE]] step %{{.+}} {
// CHECK: arith.select {{.+}} : vector<16xi1>, vector<16xf32>
// CHECK: vector.store {{.+}} %[[S]][%[[B]], %[[N]], %[[T]], %[[KEY]]] : memref<?x12x?x?xf32>, vector<16xf32>
// CHECK: scf.for %{{.+}} = %[[WHOLE]] to %[[KEYS]]
// CHECK: linalg.generic {{.+}} ins(%{{.+}} : memref<1x1x1x?xf32
// CHECK: scf.forall
// CHECK: vector.reduction <maxnumf>, {{.+}} : vector<16xf32> into f32
// CHECK: linalg.generic
// CHECK: scf.forall
// CHECK: arith.subf {{.+}} : vector<16xf32>
// CHECK: linalg.generic
// CHECK: scf.forall
// CHECK: arith.divf {{.+}} : vector<16xf32>
// CHECK: linalg.generic
// CHECK-NOT: scf.forall
// CHECK: scf.for
// CHECK: vector.reduction <add>, {{.+}} : vector<16xf32> into f32
// CHECK: linalg.generic
func.func @softmax_over_keys(%s: memref<?x12x?x?xf32>, %m: memref<?x12x?xf32>, %offset: index, %row: memref<?x?xf32>, %sum: memref<?xf32>) {
  %scale = arith.constant 0.125 : f32
  %lowest = arith.constant 0xFF800000 : f32
  linalg.generic {indexing_maps = [affine_map<(b, n, t, s) -> (b, n, t, s)>, affine_map<(b, n, t, s) -> (b, n, t, s)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : memref<?x12x?x?xf32>) outs(%s : memref<?x12x?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = linalg.index 2 : index
    %last = arith.addi %t, %offset : index
    %key = linalg.index 3 : index
    %causal = arith.cmpi ule, %key, %last : index
    %scaled = arith.mulf %in, %scale : f32
    %r = arith.select %causal, %scaled, %lowest : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, n, t, s) -> (b, n, t, s)>, affine_map<(b, n, t, s) -> (b, n, t)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%s : memref<?x12x?x?xf32>) outs(%m : memref<?x12x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maxnumf %in, %out : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, n, t, s) -> (b, n, t, s)>, affine_map<(b, n, t, s) -> (b, n, t)>, affine_map<(b, n, t, s) -> (b, n, t, s)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %m : memref<?x12x?x?xf32>, memref<?x12x?xf32>) outs(%s : memref<?x12x?x?xf32>) {
  ^bb0(%in: f32, %max: f32, %out: f32):
    %d = arith.subf %in, %max : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, n, t, s) -> (b, n, t, s)>, affine_map<(b, n, t, s) -> (b, n, t)>, affine_map<(b, n, t, s) -> (b, n, t, s)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %m : memref<?x12x?x?xf32>, memref<?x12x?xf32>) outs(%s : memref<?x12x?x?xf32>) {
  ^bb0(%in: f32, %total: f32, %out: f32):
    %r = arith.divf %in, %total : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(t, s) -> (t, s)>, affine_map<(t, s) -> (t)>], iterator_types = ["parallel", "reduction"]} ins(%row : memref<?x?xf32>) outs(%sum : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The absorbed attention's scores and attended latents, whose heads share
// the cached latents: each latent row is loaded once for every head. The
// scores go in blocks of 16 keys, the keys left over with the heads inside
// each key; the attended latents go in 4 parts of the keys, a task each
// carrying the four heads' sums (4 x 64 lanes) in registers across its
// keys, and the parts' sums are added into the output after.
// RUN: gdn-opt %s -split-input-file -gdn-cpu-vectorize=annotate-only=true | FileCheck %s --check-prefix=HEADS
// HEADS-LABEL: func.func @heads_share_latents
// HEADS: linalg.generic {{.*}}gdn.cpu_schedule = "key-blocks5"
// HEADS: linalg.generic {{.*}}gdn.cpu_schedule = "key-parts5"
// CHECK-LABEL: func.func @heads_share_latents
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: memref<?x?x4x64xf32>, %[[LAT:[a-z0-9]+]]: memref<?x?x64xf32>, %[[S:[a-z0-9]+]]: memref<?x4x?x?xf32>, %[[P:[a-z0-9]+]]: memref<?x4x?x?xf32>, %[[ACC:[a-z0-9]+]]: memref<?x?x4x64xf32>)
// CHECK: scf.forall (%[[B:.+]], %[[T:.+]], %[[BLOCK:.+]]) in
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-4: vector.load %[[Q]][%[[B]], %[[T]], %{{.+}}, %{{.+}}] : memref<?x?x4x64xf32>, vector<16xf32>
// CHECK: vector.fma
// CHECK-NOT: scf.forall
// CHECK: scf.for %[[KEY:.+]] = %{{.+}} to %{{.+}} step
// CHECK: %[[ROW:.+]] = vector.load %[[LAT]][%{{.+}}, %{{.+}}, %{{.+}}] : memref<?x?x64xf32>, vector<64xf32>
// CHECK: scf.for %[[HEAD:.+]] = %{{.+}} to %{{.+}} step
// CHECK: vector.load %[[Q]][%{{.+}}, %{{.+}}, %[[HEAD]], %{{.+}}]
// CHECK: arith.mulf %{{.+}}, %[[ROW]] : vector<64xf32>
// CHECK: vector.reduction <add>
// CHECK: %[[PARTS:.+]] = memref.alloc(%{{.+}}, %{{.+}}) : memref<4x?x?x4x64xf32>
// CHECK: scf.forall (%[[PART:.+]], %[[B2:.+]], %[[T2:.+]]) in (4, %{{.+}}, %{{.+}}) {
// CHECK: scf.for %[[KEY2:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[SUM0:.+]] = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>)
// CHECK: %[[ROW2:.+]] = vector.load %[[LAT]][%[[B2]], %[[KEY2]], %{{.+}}] : memref<?x?x64xf32>, vector<64xf32>
// CHECK-NOT: vector.load %[[LAT]]
// CHECK: vector.fma %{{.+}}, %[[ROW2]], %[[SUM0]] : vector<64xf32>
// CHECK: vector.store {{.+}}, %[[PARTS]][%[[PART]], %[[B2]], %[[T2]], %{{.+}}, %{{.+}}]
// CHECK: scf.for
// CHECK: scf.for
// CHECK: vector.load %[[ACC]]
// CHECK-COUNT-4: vector.load %[[PARTS]]
// CHECK: vector.store {{.+}}, %[[ACC]]
// CHECK: memref.dealloc %[[PARTS]]
// CHECK-NOT: linalg.generic
func.func @heads_share_latents(%q: memref<?x?x4x64xf32>, %lat: memref<?x?x64xf32>, %s: memref<?x4x?x?xf32>, %p: memref<?x4x?x?xf32>, %acc: memref<?x?x4x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, n, t, s, r) -> (b, t, n, r)>, affine_map<(b, n, t, s, r) -> (b, s, r)>, affine_map<(b, n, t, s, r) -> (b, n, t, s)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %lat : memref<?x?x4x64xf32>, memref<?x?x64xf32>) outs(%s : memref<?x4x?x?xf32>) {
  ^bb0(%a: f32, %l: f32, %o: f32):
    %m = arith.mulf %a, %l : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(b, t, n, s, r) -> (b, n, t, s)>, affine_map<(b, t, n, s, r) -> (b, s, r)>, affine_map<(b, t, n, s, r) -> (b, t, n, r)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel"]} ins(%p, %lat : memref<?x4x?x?xf32>, memref<?x?x64xf32>) outs(%acc : memref<?x?x4x64xf32>) {
  ^bb0(%a: f32, %l: f32, %o: f32):
    %m = arith.mulf %a, %l : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Scores of more heads than a block's registers hold (20 > 16) keep a task
// per key with every head inside it.
// RUN: gdn-opt %s -split-input-file -gdn-cpu-vectorize=annotate-only=true | FileCheck %s --check-prefix=MANY
// MANY-LABEL: func.func @many_heads
// MANY: linalg.generic {{.*}}gdn.cpu_schedule = "keys-outside-heads5"
func.func @many_heads(%q: memref<?x?x20x16xf32>, %rope: memref<?x?x16xf32>, %s: memref<?x20x?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, n, t, s, r) -> (b, t, n, r)>, affine_map<(b, n, t, s, r) -> (b, s, r)>, affine_map<(b, n, t, s, r) -> (b, n, t, s)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %rope : memref<?x?x20x16xf32>, memref<?x?x16xf32>) outs(%s : memref<?x20x?x?xf32>) {
  ^bb0(%a: f32, %l: f32, %o: f32):
    %m = arith.mulf %a, %l : f32
    %r = arith.addf %o, %m : f32
    linalg.yield %r : f32
  }
  return
}
