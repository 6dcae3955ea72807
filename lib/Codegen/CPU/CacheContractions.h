//===- CacheContractions.h - generics over a cache's keys -------*- C++ -*-===//
//
// The recognizers that the key-block scores and key-part sums share: a
// bufferized five-loop generic of two f32 inputs and one f32 output, rows
// of unit stride, whose body adds the inputs' product to the output.
//
//===----------------------------------------------------------------------===//

#ifndef GDN_LIB_CODEGEN_CPU_CACHECONTRACTIONS_H
#define GDN_LIB_CODEGEN_CPU_CACHECONTRACTIONS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::gdn {

/// Whether the body of the two-input generic `op` is out + in0 * in1 (in
/// either order of each operation's operands).
inline bool isMultiplyAccumulate(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getNumArguments() != 3 || body.getOperations().size() != 3)
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add)
    return false;
  Value out = body.getArgument(2);
  if (add.getLhs() != out && add.getRhs() != out)
    return false;
  auto mul = (add.getLhs() == out ? add.getRhs() : add.getLhs())
                 .getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value a = body.getArgument(0), k = body.getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == k) ||
         (mul.getLhs() == k && mul.getRhs() == a);
}

/// Whether `op` is a bufferized generic of five loops, `reduction` the one
/// reduction, whose two inputs and output select the loops `first`,
/// `second` and `out` (in that order of their dimensions), every operand
/// f32 with rows of unit stride, and whose body is isMultiplyAccumulate.
inline bool isCacheContraction(linalg::GenericOp op, int64_t reduction,
                               ArrayRef<unsigned> first,
                               ArrayRef<unsigned> second,
                               ArrayRef<unsigned> out) {
  constexpr int64_t kLoops = 5;
  if (!op.hasPureBufferSemantics() || op.getNumLoops() != kLoops ||
      op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (int64_t dim = 0; dim < kLoops; ++dim)
    if ((iterators[dim] == utils::IteratorType::reduction) !=
        (dim == reduction))
      return false;
  auto map = [&](ArrayRef<unsigned> dims) {
    return AffineMap::getMultiDimMapWithTargets(kLoops, dims,
                                                op.getContext());
  };
  if (op.getIndexingMapsArray() !=
      SmallVector<AffineMap>{map(first), map(second), map(out)})
    return false;
  auto isF32Rows = [](Value value) {
    auto type = dyn_cast<MemRefType>(value.getType());
    return type && type.getElementType().isF32() &&
           type.isLastDimUnitStride();
  };
  return llvm::all_of(op->getOperands(), isF32Rows) &&
         isMultiplyAccumulate(op);
}

} // namespace mlir::gdn

#endif // GDN_LIB_CODEGEN_CPU_CACHECONTRACTIONS_H
