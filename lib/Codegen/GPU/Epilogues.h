//===- Epilogues.h - element-wise ops after a reduction ---------*- C++ -*-===//
//
// An element-wise op over a reduction's outputs (a projection's
// activation, the residual add after it, a gate's sigmoid) is a kernel of
// its own unless the thread that holds each total runs it: the warp
// reductions of gdn-gpu-map-parallel-loops and the tile kernels of
// gdn-gpu-tensor-core-projections both do, on the ops found here.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_CODEGEN_GPU_EPILOGUES_H
#define GDN_LIB_CODEGEN_GPU_EPILOGUES_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::gdn {

/// The next op after `op` in its block that may touch memory (sizes and
/// views of buffers, and allocations, are skipped).
Operation *nextMemoryOp(Operation *op);

/// The element-wise op `next`, right after `reduction`, if it maps over
/// the reduction's outputs with their values, so that the thread that
/// holds an output's total can run it: an all-parallel op over the
/// reduction's parallel loops, in order, that reads the output through
/// the identity and through no other view, and writes its own output
/// through the identity, not into a buffer the reduction reads (other
/// threads may still be reading it) and into one of its inputs only in
/// place, or in place over the output itself (reading it through its
/// output operand). Null otherwise.
linalg::LinalgOp epilogueOf(linalg::LinalgOp reduction, Operation *next);

/// The epilogue of `reduction` (epilogueOf): its next memory op, or a
/// later one where the reduction can run after the ops between (copies
/// and linalg ops that write nothing the reduction touches and read
/// nothing it writes: a cache slot copied before the projection's output
/// is). The reduction's kernel is then built at the epilogue's place.
linalg::LinalgOp findEpilogue(linalg::LinalgOp reduction);

} // namespace mlir::gdn

#endif // GDN_LIB_CODEGEN_GPU_EPILOGUES_H
