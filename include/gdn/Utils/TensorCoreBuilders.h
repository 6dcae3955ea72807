//===- TensorCoreBuilders.h - mma.sync for tensor cores ---------*- C++ -*-===//
//
// The one warp-level product that the chunked scan's kernels and the
// tensor-core projections share, and the workgroup memory they stage in.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_UTILS_TENSORCOREBUILDERS_H
#define GDN_UTILS_TENSORCOREBUILDERS_H

#include "mlir/IR/Builders.h"

namespace mlir::gdn {

/// acc (four f32 registers of the m16n8k16 accumulator layout) += A B on
/// one mma.sync m16n8k16 with `operand` (bf16 or f16) operands: `a` the
/// four A registers, `bFragment` the two B registers (PTX ISA fragment
/// layouts), each a 32-bit register of two elements.
void multiplyAccumulate(OpBuilder &b, Location loc, Type operand,
                        ArrayRef<Value> a, ArrayRef<Value> bFragment,
                        MutableArrayRef<Value> acc);
inline void multiplyAccumulateBf16(OpBuilder &b, Location loc,
                                   ArrayRef<Value> a, ArrayRef<Value> bFragment,
                                   MutableArrayRef<Value> acc) {
  multiplyAccumulate(b, loc, b.getBF16Type(), a, bFragment, acc);
}

/// The block's dynamic workgroup memory, as bytes to carve views from.
Value dynamicWorkgroupMemory(OpBuilder &b, Location loc);

/// ldmatrix of `count` 8 x 8 16-bit matrices of the workgroup-memory tile
/// `tile` (transposed with `transpose`), this lane giving the address
/// `indices` of its row: one 32-bit fragment register per matrix.
SmallVector<Value> loadMatrixFragments(OpBuilder &b, Location loc, Value tile,
                                       ValueRange indices, int64_t count,
                                       bool transpose);

} // namespace mlir::gdn

#endif // GDN_UTILS_TENSORCOREBUILDERS_H
