//===- TensorCoreBuilders.h - mma.sync for tensor cores ---------*- C++ -*-===//
//
// The one warp-level product that the chunked scan's kernels and the
// tensor-core projections share.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UTILS_TENSORCOREBUILDERS_H
#define GDN_UTILS_TENSORCOREBUILDERS_H

#include "mlir/IR/Builders.h"

namespace mlir::gdn {

/// acc (four f32 registers of the m16n8k16 accumulator layout) += A B on
/// one mma.sync m16n8k16 with bf16 operands: `a` the four A registers,
/// `bFragment` the two B registers (PTX ISA fragment layouts).
void multiplyAccumulateBf16(OpBuilder &b, Location loc, ArrayRef<Value> a,
                            ArrayRef<Value> bFragment,
                            MutableArrayRef<Value> acc);

} // namespace mlir::gdn

#endif // GDN_UTILS_TENSORCOREBUILDERS_H
